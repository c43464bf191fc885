"""Transformer-block kernels of the fast tier: LayerNorm, GELU and the attention softmax.

Each contract method is one call into ``fast/csrc/transformer.c``.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, optional_view, refused, view


class TransformerKernels:
    """layer_norm, gelu, attention_softmax and their gradients."""

    def row_moments(self, mean: Strided, var: Strided, input: Strided) -> None:
        """Each row's mean and biased variance, PyTorch's way (``fast/csrc/moments.c``)."""
        if lib.gt_row_moments(view(mean), view(var), view(input)):
            raise refused("row_moments", mean, input)

    def layer_norm(
        self,
        out: Strided,
        mean: Strided,
        rstd: Strided,
        input: Strided,
        weight: Strided | None,
        bias: Strided | None,
        eps: float,
    ) -> None:
        """Normalize each row, keep its mean and ``1 / std``, then scale and shift."""
        if lib.gt_layer_norm(
            view(out), view(mean), view(rstd), view(input), optional_view(weight),
            optional_view(bias), float(eps),
        ):  # fmt: skip
            raise refused("layer_norm", out, input)

    def layer_norm_backward(
        self,
        grad_input: Strided | None,
        grad_weight: Strided | None,
        grad_bias: Strided | None,
        grad_output: Strided,
        input: Strided,
        mean: Strided,
        rstd: Strided,
        weight: Strided | None,
    ) -> None:
        """The gradients of :meth:`layer_norm` that are asked for."""
        if lib.gt_layer_norm_backward(
            optional_view(grad_input), optional_view(grad_weight), optional_view(grad_bias),
            view(grad_output), view(input), view(mean), view(rstd), optional_view(weight),
        ):  # fmt: skip
            raise refused("layer_norm_backward", grad_output, input)

    def gelu(self, out: Strided, input: Strided, approximate: bool) -> None:
        """``x * Phi(x)`` (or its tanh form), elementwise."""
        if lib.gt_gelu(view(out), view(input), int(bool(approximate))):
            raise refused("gelu", out, input)

    def gelu_backward(
        self, grad_input: Strided, grad_output: Strided, input: Strided, approximate: bool
    ) -> None:
        """``grad_output * gelu'(input)``, elementwise."""
        if lib.gt_gelu_backward(
            view(grad_input), view(grad_output), view(input), int(bool(approximate))
        ):
            raise refused("gelu_backward", grad_output, input)

    def attention_softmax(self, out: Strided, scores: Strided, scale: float, causal: bool) -> None:
        """Softmax of ``scale * scores`` over each row, the causal prefix only when asked."""
        if lib.gt_attention_softmax(view(out), view(scores), float(scale), int(bool(causal))):
            raise refused("attention_softmax", out, scores)

    def softmax_backward(
        self, grad_input: Strided, grad_output: Strided, output: Strided, scale: float
    ) -> None:
        """``scale * y * (g - sum(g * y))`` per row."""
        if lib.gt_softmax_backward(view(grad_input), view(grad_output), view(output), float(scale)):
            raise refused("softmax_backward", grad_output, output)
