"""Transformer-block kernels of the CUDA tier (``fast/cuda/transformer.cu``).

LayerNorm, the attention softmax and softmax's gradient give each row one
block, sized to the row (:func:`row_threads`); GELU gives each element a
thread, and LayerNorm's weight and bias gradients each column a thread that
adds the rows in order. Every view is contiguous (the contract says so).
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import MAX_ROW_BLOCKS, row_threads


def _rows(view: Strided) -> tuple[int, int]:
    """``(R, N)`` of a contiguous view whose rows are its last dimension."""
    n = view.shape[-1] if view.shape else 1
    return (numel(view.shape) // n if n else 0), n


class TransformerKernels:
    """layer_norm, gelu, attention_softmax and their gradients."""

    def _row_launch(self, name: str, view: Strided, rows: int, n: int, *args) -> None:
        """A block per row (at most MAX_ROW_BLOCKS, block-stride beyond)."""
        self.launch_grid(
            "transformer.cu", f"{name}_{self.suffix(view)}", min(rows, MAX_ROW_BLOCKS),
            row_threads(n), *args,
        )  # fmt: skip

    def row_moments(self, mean: Strided, var: Strided, input: Strided) -> None:
        """PyTorch's row mean and variance (``transformer.cu``): a thread per row."""
        rows, n = _rows(input)
        if rows == 0:
            return
        self.launch(
            "transformer.cu", f"row_moments_{self.suffix(input)}", rows, self.ptr(mean),
            self.ptr(var), self.ptr(input), rows, n,
        )  # fmt: skip

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
        """Each row's statistics and normalized values: a block per row."""
        rows, n = _rows(input)
        if rows == 0 or n == 0:
            return
        self._row_launch(
            "layer_norm", input, rows, n, self.ptr(out), self.ptr(mean), self.ptr(rstd),
            self.ptr(input), self.ptr_or_null(weight), self.ptr_or_null(bias), rows, n, float(eps),
        )  # fmt: skip

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
        """grad_input a block per row; grad_weight and grad_bias a thread per column."""
        rows, n = _rows(input)
        if n == 0:
            return
        if grad_input is not None and rows:
            self._row_launch(
                "layer_norm_grad_input", input, rows, n, self.ptr(grad_input),
                self.ptr(grad_output), self.ptr(input), self.ptr(mean), self.ptr(rstd),
                self.ptr_or_null(weight), rows, n,
            )  # fmt: skip
        if grad_weight is not None or grad_bias is not None:
            self.launch(
                "transformer.cu", f"layer_norm_grad_params_{self.suffix(input)}", n,
                self.ptr_or_null(grad_weight), self.ptr_or_null(grad_bias), self.ptr(grad_output),
                self.ptr(input), self.ptr(mean), self.ptr(rstd), rows, n,
            )  # fmt: skip

    def gelu(self, out: Strided, input: Strided, approximate: bool) -> None:
        """``x * Phi(x)`` (or its tanh form): a thread per element."""
        self.launch(
            "transformer.cu", f"gelu_{self.suffix(input)}", numel(input.shape), self.ptr(out),
            self.ptr(input), numel(input.shape), int(bool(approximate)),
        )  # fmt: skip

    def gelu_backward(
        self, grad_input: Strided, grad_output: Strided, input: Strided, approximate: bool
    ) -> None:
        """``grad_output * gelu'(input)``: a thread per element."""
        self.launch(
            "transformer.cu", f"gelu_backward_{self.suffix(input)}", numel(input.shape),
            self.ptr(grad_input), self.ptr(grad_output), self.ptr(input), numel(input.shape),
            int(bool(approximate)),
        )  # fmt: skip

    def attention_softmax(self, out: Strided, scores: Strided, scale: float, causal: bool) -> None:
        """Softmax of ``scale * scores`` per row (the causal prefix only): a block per row."""
        batch, length, n = scores.shape
        rows = batch * length
        if rows == 0 or n == 0:
            return
        self._row_launch(
            "attention_softmax", scores, rows, n, self.ptr(out), self.ptr(scores), rows, length,
            n, float(scale), int(bool(causal)),
        )  # fmt: skip

    def softmax_backward(
        self, grad_input: Strided, grad_output: Strided, output: Strided, scale: float
    ) -> None:
        """``scale * y * (g - sum(g * y))`` per row: a block per row."""
        rows, n = _rows(output)
        if rows == 0 or n == 0:
            return
        self._row_launch(
            "softmax_backward", output, rows, n, self.ptr(grad_input), self.ptr(grad_output),
            self.ptr(output), rows, n, float(scale),
        )  # fmt: skip
