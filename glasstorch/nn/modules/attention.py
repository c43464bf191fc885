"""``MultiheadAttention``: attention run in several heads side by side.

The queries, keys and values are projected (one matrix each, or one stacked
``in_proj_weight``), split into ``num_heads`` heads of ``embed_dim //
num_heads`` features, attended in each head separately through
:func:`~glasstorch.nn.functional.scaled_dot_product_attention`'s arithmetic,
joined again and projected by ``out_proj``. The parameters have PyTorch's
names, shapes and initialisation.
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.linear import Linear
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.ops.pointwise import where
from glasstorch.tensor import Tensor

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under PyTorch's name for ``MultiheadAttention.out_proj``
    (so that the module prints as in PyTorch). It is an ordinary Linear layer."""


def canonical_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A mask as float scores to add: a bool mask becomes ``-inf`` where true, 0 elsewhere.

    (``MultiheadAttention``'s bool masks mark the positions to *leave out*, the
    opposite of ``scaled_dot_product_attention``'s.)
    """
    if mask is None:
        return None
    if mask.dtype is _dtype.bool_:
        return where(mask, -math.inf, 0.0).to(dtype)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _same_change(change, query: Tensor, key: Tensor, value: Tensor):
    """``change`` applied to each input, keeping which of them are the same tensor (so
    that self-attention is still recognised, and projected with one product)."""
    changed = {}
    for tensor in (query, key, value):
        if id(tensor) not in changed:
            changed[id(tensor)] = change(tensor)
    return changed[id(query)], changed[id(key)], changed[id(value)]


class MultiheadAttention(Module):
    """Multi-head attention: ``out_proj(concat(head_1, ..., head_h))`` with
    ``head_i = softmax(Q_i K_i^T / sqrt(d) + mask) V_i`` and ``d = embed_dim // num_heads``.

    Args:
        embed_dim: features of the queries (and of the output).
        num_heads: number of heads; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights, in training. Default: 0.
        bias: learn ``in_proj_bias`` and ``out_proj.bias``. Default: ``True``.
        add_bias_kv, add_zero_attn: must be ``False`` (not supported in glasstorch).
        kdim, vdim: features of the keys and values (default ``embed_dim``).
            When either differs, the projections are three separate parameters
            ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` instead of
            one ``in_proj_weight``.
        batch_first: inputs and output are ``(N, L, E)`` instead of ``(L, N, E)``.

    Forward arguments:
        query, key, value: the sequences (``key`` and ``value`` of equal length).
        key_padding_mask: ``(N, S)`` (``(S,)`` unbatched); bool ``True`` (or a
            float ``-inf``) leaves that key out for every query.
        need_weights: also return the attention weights. Default: ``True``.
        attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``; bool ``True``
            leaves a position out, a float mask is added to the scores.
        average_attn_weights: average the returned weights over the heads.
        is_causal: a hint that ``attn_mask`` is the causal mask; as in PyTorch,
            ``attn_mask`` must still be given.

    Shape:
        - query: ``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``.
        - key: ``(S, N, kdim)`` (or batch first, or ``(S, kdim)``); value likewise with ``vdim``.
        - output: ``(L, N, E)`` like query; weights ``(N, L, S)``, or
          ``(N, num_heads, L, S)`` without averaging (no ``N`` unbatched).

    A query whose every key is masked gets NaN weights and output when the
    weights are returned, and zeros from the attention when they are not, as in
    PyTorch.

    Example::

        >>> attention = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.randn(2, 5, 16)
        >>> out, weights = attention(x, x, x)
        >>> out.shape, weights.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 5, 5]))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError(
                "MultiheadAttention: add_bias_kv and add_zero_attn are not supported in glasstorch"
            )
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        make = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **make))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **make))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **make))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **make))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **make))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **make)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases (``out_proj.weight`` keeps Linear's init)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    # ----------------------------------------------------------------- forward
    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        batched = self._check_batched(query, key, value, key_padding_mask, attn_mask)
        if not batched:
            query, key, value = _same_change(lambda t: t.unsqueeze(1), query, key, value)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = _same_change(lambda t: t.transpose(0, 1), query, key, value)
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        output, weights = self._attend(
            query, key, value, key_padding_mask, attn_mask, need_weights, average_attn_weights
        )
        if not batched:
            output = output.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, weights

    def _check_batched(self, query, key, value, key_padding_mask, attn_mask) -> bool:
        """Whether the call is batched; PyTorch's shape checks for unbatched calls."""
        if query.dim() == 3:
            if key.dim() != 3 or value.dim() != 3:
                raise AssertionError(
                    "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                    f"{key.dim()}-D and {value.dim()}-D tensors respectively"
                )
            if key_padding_mask is not None and key_padding_mask.dim() != 2:
                raise AssertionError(
                    "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                    f"but found {key_padding_mask.dim()}-D tensor instead"
                )
            return True
        if query.dim() != 2:
            raise AssertionError(
                f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                "query tensor"
            )
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        return False

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The input projections; self-attention takes one product with the stacked weight."""
        e = self.embed_dim
        bias = self.in_proj_bias
        b_q, b_k, b_v = (
            (None, None, None) if bias is None else (bias[:e], bias[e : 2 * e], bias[2 * e :])
        )
        if not self._qkv_same_embed_dim:
            return (
                F.linear(query, self.q_proj_weight, b_q),
                F.linear(key, self.k_proj_weight, b_k),
                F.linear(value, self.v_proj_weight, b_v),
            )
        weight = self.in_proj_weight
        if query is key and key is value:
            rows = query.shape[0] * query.shape[1]
            packed = F.linear(query.reshape(rows, e), weight, bias)
            packed = packed.reshape(query.shape[0], query.shape[1], 3 * e)
            return packed[..., :e], packed[..., e : 2 * e], packed[..., 2 * e :]
        return (
            F.linear(query, weight[:e], b_q),
            F.linear(key, weight[e : 2 * e], b_k),
            F.linear(value, weight[2 * e :], b_v),
        )

    def _attend(self, query, key, value, key_padding_mask, attn_mask, need_weights, average):
        """The attention proper, on ``(L, N, E)`` inputs and float masks."""
        target_len, batch, embed_dim = query.shape
        source_len = key.shape[0]
        if embed_dim != self.embed_dim:
            raise AssertionError(
                f"was expecting embedding dimension of {self.embed_dim}, but got {embed_dim}"
            )
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        heads, head_dim = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        attn_mask = self._check_attn_mask(attn_mask, batch, target_len, source_len)
        # (L, N, E) -> (N * heads, L, head_dim): each head of each sample is one batch entry.
        q = q.reshape(target_len, batch * heads, head_dim).transpose(0, 1)
        k = k.reshape(source_len, batch * heads, head_dim).transpose(0, 1)
        v = v.reshape(source_len, batch * heads, head_dim).transpose(0, 1)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (batch, source_len):
                raise AssertionError(
                    f"expecting key_padding_mask shape of {(batch, source_len)}, but got "
                    f"{key_padding_mask.shape}"
                )
            padding = key_padding_mask.reshape(batch, 1, 1, source_len)
            padding = padding.expand(batch, heads, 1, source_len).reshape(
                batch * heads, 1, source_len
            )
            attn_mask = padding if attn_mask is None else attn_mask + padding
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(head_dim))).matmul(k.transpose(1, 2))
            if attn_mask is not None:
                scores = scores + attn_mask
            weights = scores.softmax(-1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, dropout_p, True)
            attended = weights.matmul(v)
        else:
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
            weights = None
        attended = attended.transpose(0, 1).reshape(target_len * batch, embed_dim)
        output = self.out_proj(attended).reshape(target_len, batch, embed_dim)
        if weights is not None:
            weights = weights.reshape(batch, heads, target_len, source_len)
            if average:
                weights = weights.mean(1)
        return output, weights

    def _check_attn_mask(self, attn_mask, batch, target_len, source_len):
        """An ``attn_mask`` of PyTorch's shapes, made 3-D."""
        if attn_mask is None:
            return None
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (target_len, source_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(target_len, source_len)}."
                )
            return attn_mask.unsqueeze(0)
        if attn_mask.dim() == 3:
            expected = (batch * self.num_heads, target_len, source_len)
            if tuple(attn_mask.shape) != expected:
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be {expected}."
                )
            return attn_mask
        raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    def extra_repr(self) -> str:
        return ""
