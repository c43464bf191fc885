"""The Transformer encoder: ``TransformerEncoderLayer`` and ``TransformerEncoder``.

An encoder layer is self-attention followed by a small feed-forward network,
each wrapped in a residual connection and a layer norm (after the residual
sum by default, before the block with ``norm_first=True``). The encoder stacks
copies of one layer. Submodule and parameter names follow PyTorch, so a state
dict copies across.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from glasstorch.nn import functional as F
from glasstorch.nn.modules.attention import MultiheadAttention
from glasstorch.nn.modules.container import ModuleList
from glasstorch.nn.modules.dropout import Dropout
from glasstorch.nn.modules.linear import Linear
from glasstorch.nn.modules.module import Module
from glasstorch.nn.modules.normalization import LayerNorm
from glasstorch.ops.creation import arange, zeros
from glasstorch.ops.pointwise import where
from glasstorch.tensor import Tensor

__all__ = ["TransformerEncoder", "TransformerEncoderLayer", "generate_square_subsequent_mask"]


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """The causal mask for a sequence of ``sz``: ``-inf`` above the diagonal, 0 elsewhere.

    Position ``i`` may attend to positions ``j <= i``. (PyTorch offers it as
    ``nn.Transformer.generate_square_subsequent_mask``.)

    Example::

        >>> generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
    """
    future = arange(sz, device=device).unsqueeze(0) > arange(sz, device=device).unsqueeze(1)
    return where(future, float("-inf"), zeros((), dtype=dtype, device=device))


def _activation_function(activation: str | Callable) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each with a residual connection and a norm.

    With ``norm_first=False`` (post-norm, the original Transformer)::

        x = norm1(x + dropout1(self_attn(x, x, x)))
        x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))

    With ``norm_first=True`` (pre-norm, as in GPT-2) the norms move inside the
    residual branches: ``x = x + block(norm(x))``.

    Args:
        d_model: features per position.
        nhead: attention heads.
        dim_feedforward: hidden width of the feed-forward network. Default: 2048.
        dropout: dropout probability (attention weights, after the feed-forward
            activation, and on both residual branches). Default: 0.1.
        activation: ``"relu"``, ``"gelu"`` or a callable (a module is registered
            as the submodule ``activation``). Default: ``"relu"``.
        layer_norm_eps: the norms' ``eps``. Default: 1e-5.
        batch_first: input and output are ``(N, S, E)``. Default: ``False``.
        norm_first: pre-norm instead of post-norm. Default: ``False``.
        bias: biases in the linear layers, attention and norms. Default: ``True``.

    Forward arguments:
        src: the sequence.
        src_mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask (bool
            ``True`` leaves a position out; a float mask is added).
        src_key_padding_mask: ``(N, S)``; ``True`` marks padding.
        is_causal: a hint that ``src_mask`` is the causal mask.

    Shape:
        - src: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - output: the same.

    PyTorch runs an inference "fast path" in evaluation mode without autograd;
    it computes the same function, which glasstorch always computes the plain way.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(torch.randn(2, 10, 16)).shape
        torch.Size([2, 10, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **make
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **make)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **make)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation_relu_or_gelu = {"relu": 1, "gelu": 2}.get(activation, 0)
        self.activation = _activation_function(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal) -> Tensor:
        """Self-attention (without returning the weights), then dropout."""
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        """``linear2(dropout(activation(linear1(x))))``, then dropout."""
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of an encoder layer, and an optional final norm.

    Args:
        encoder_layer: the layer to copy (each copy has parameters of its own).
        num_layers: how many copies.
        norm: a module applied to the last layer's output (e.g. a LayerNorm).
        enable_nested_tensor, mask_check: accepted for compatibility; glasstorch
            has no nested tensors, so padded positions are computed like the others.

    Forward arguments:
        src, mask, src_key_padding_mask, is_causal: as for
        :class:`TransformerEncoderLayer` (``mask`` is its ``src_mask``).

    Shape:
        - src: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - output: the same.

    PyTorch, in evaluation mode without autograd and with a padding mask,
    may run the stack on nested tensors and return zeros at padded positions;
    glasstorch returns the values computed there.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=3)
        >>> encoder(torch.randn(10, 2, 16)).shape
        torch.Size([10, 2, 16])
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        output = src
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        if self.norm is not None:
            output = self.norm(output)
        return output
