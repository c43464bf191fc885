"""``scaled_dot_product_attention``: ``softmax(Q K^T / sqrt(d)) V`` with masks,
causal masking, dropout and grouped-query heads; its softmax runs as the fused
node :class:`glasstorch.nn.fused.attention.AttentionSoftmax` where it can, and
causal attention as the one node :class:`glasstorch.nn.fused.attention.CausalAttention`.
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch.nn.functional.dropout import dropout
from glasstorch.nn.fused.attention import AttentionSoftmax, CausalAttention
from glasstorch.nn.fused.common import fusable
from glasstorch.ops.creation import arange
from glasstorch.ops.pointwise import where
from glasstorch.ops.reduction import softmax as _softmax
from glasstorch.tensor import Tensor


def _check_attention_inputs(query: Tensor, key: Tensor, value: Tensor) -> None:
    """PyTorch's checks on ``scaled_dot_product_attention``'s inputs, with its wording."""
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead."
        )
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype.c_name} key.dtype: {key.dtype.c_name} and value.dtype: "
            f"{value.dtype.c_name} instead."
        )


def _causal_mask(rows: int, columns: int, device=None) -> Tensor:
    """``(rows, columns)`` bool on ``device``, true where column ``j <= i`` (the lower
    triangle, from the top-left corner): what a causal mask lets position ``i`` attend to."""
    return arange(rows, device=device).unsqueeze(1) >= arange(columns, device=device).unsqueeze(0)


def _repeat_heads(tensor: Tensor, heads: int) -> Tensor:
    """``tensor``'s heads (dimension -3) each repeated to make ``heads`` of them, for
    grouped-query attention (``enable_gqa``): head ``h`` reads group ``h // (heads / groups)``."""
    groups = tensor.shape[-3]
    if groups == heads:
        return tensor
    if heads % groups:
        raise RuntimeError(
            f"number of heads in key/value ({groups}) must divide the number of heads in "
            f"query ({heads})"
        )
    picks = arange(heads, device=tensor.device) // (heads // groups)
    return tensor.index_select(tensor.dim() - 3, picks)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention: ``softmax(query @ key^T * scale + mask) @ value``.

    Each query position takes a weighted average of the values; the weights
    come from how well the query matches each key, turned into a distribution
    by a softmax over the key positions.

    Args:
        query: ``(..., L, E)``.
        key: ``(..., S, E)``.
        value: ``(..., S, Ev)``.
        attn_mask: broadcastable to ``(..., L, S)``. A **bool** mask says where
            attention may go (``True``: take part); a **float** mask is added
            to the scores (``-inf`` removes a position).
        dropout_p: dropout probability on the attention weights (applied
            whenever it is above 0; pass 0 in evaluation).
        is_causal: position ``i`` attends only to positions ``j <= i`` (the
            mask is the lower triangle from the top-left corner). Cannot be
            combined with ``attn_mask``.
        scale: the factor on the scores; ``1 / sqrt(E)`` when omitted.
        enable_gqa: let ``key`` and ``value`` have fewer heads (dimension
            -3) than ``query``, each shared by a group of query heads.

    Shape:
        - output: ``(..., L, Ev)``.

    A query row whose every key position is masked gets zeros, as in PyTorch.

    Example::

        >>> q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
        >>> F.scaled_dot_product_attention(q, k, v).shape
        torch.Size([2, 4, 5, 8])
    """
    _check_attention_inputs(query, key, value)
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    if enable_gqa and query.dim() >= 3:
        key = _repeat_heads(key, query.shape[-3])
        value = _repeat_heads(value, query.shape[-3])
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if (
        is_causal
        and attn_mask is None
        and dropout_p == 0.0
        and query.dim() >= 3
        and fusable(query, key, value)
        and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
        and key.shape[-2] == value.shape[-2]
        and query.device == key.device == value.device
        and query.numel() > 0
        and key.numel() > 0
    ):
        # One fused node whose products skip what the causal mask makes zero.
        return CausalAttention.apply(query, key, value, scale)
    if attn_mask is None and fusable(query):
        # One fused node scales, masks (without a mask in memory) and softmaxes.
        scores = query.matmul(key.transpose(-2, -1))
        if scores.numel() > 0:
            weights = AttentionSoftmax.apply(scores, scale, is_causal)
            if dropout_p > 0.0:
                weights = dropout(weights, dropout_p, True)
            return weights.matmul(value)
    scores = (query * scale).matmul(key.transpose(-2, -1))
    rows, columns = scores.shape[-2], scores.shape[-1]
    if is_causal:
        weights = _softmax(
            scores.masked_fill(~_causal_mask(rows, columns, scores.device), -math.inf), -1
        )
    elif attn_mask is None:
        weights = _softmax(scores, -1)
    else:
        weights = _masked_attention_weights(scores, attn_mask)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _masked_attention_weights(scores: Tensor, attn_mask: Tensor) -> Tensor:
    """``softmax(scores + mask)`` over the last dimension, with zeros (not NaN) in the
    rows whose every position is masked out."""
    if attn_mask.dtype is _dtype.bool_:
        scores = scores.masked_fill(~attn_mask, -math.inf)
    else:
        scores = scores + attn_mask
    alive = (scores > -math.inf).any(-1, keepdim=True)
    if bool(alive.all()):
        return _softmax(scores, -1)
    # A row of -inf only would be 0/0: give it finite scores, then zero its weights.
    weights = _softmax(where(alive, scores, 0.0), -1)
    return where(alive, weights, 0.0)
