"""Attention as fused nodes.

:class:`AttentionSoftmax`: the attention softmax as one node: scale, optional
causal mask and softmax in one kernel forward (``attention_softmax``) and one
backward (``softmax_backward``), keeping only the softmax's output; the plain
formula first builds a mask.

:class:`CausalAttention`: the whole of causal attention as one node, whose
products (``causal_matmul``) skip what the mask makes zero: the scores above
the diagonal, and the zero weights there.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch._kernels import Strided, transposed
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.fused.common import as_matrix
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class AttentionSoftmax(Function):
    """The attention weights ``softmax(scale * scores)`` over the last dimension,
    causal or not, as one node (PyTorch's ``SoftmaxBackward0``).

    ``scores`` is ``(..., L, S)``. With ``causal``, row ``i`` sees columns
    ``j <= i`` only; no mask is built.
    """

    backward_name = "SoftmaxBackward0"

    @staticmethod
    def forward(ctx, scores, scale, causal):
        length, keys = scores.shape[-2], scores.shape[-1]
        out = empty_tensor(scores.shape, scores.dtype, device=scores.device)
        kernels.attention_softmax(_as_blocks(out, length, keys), _as_blocks(scores, length, keys),
                                  scale, causal)  # fmt: skip
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the formula, differentiable in y and grad
            return y * (grad - (grad * y).sum(-1, keepdim=True)) * ctx.scale, None, None
        keys = y.shape[-1]
        grad_scores = empty_tensor(y.shape, y.dtype, device=y.device)
        kernels.softmax_backward(
            as_matrix(grad_scores, keys), as_matrix(grad, keys), as_matrix(y, keys), ctx.scale
        )
        return grad_scores, None, None


def _as_blocks(tensor: Tensor, length: int, keys: int) -> Strided:
    """The kernel view of a ``(..., L, S)`` tensor as a contiguous ``(B, L, S)`` one."""
    rows = as_matrix(tensor, keys)
    return Strided(
        rows.buffer, (rows.shape[0] // length, length, keys), (length * keys, keys, 1), rows.offset
    )


def _empty_laid_out_as(tensor: Tensor, shape: tuple[int, ...] | None = None) -> Tensor:
    """An uninitialised tensor of ``shape`` (``tensor``'s by default) whose dimensions
    lie in memory in the order of ``tensor``'s strides, without gaps.

    Optimization (gradients in their input's layout): the query, key and value of
    a transformer are usually views ``(B, H, L, E)`` of a ``(B, L, 3 * H * E)``
    projection; a gradient laid out ``(B, L, H, E)`` goes back through the
    transpose and view nodes without a copy, where a row-major ``(B, H, L, E)``
    one is copied by the view's backward. The output is laid out as the query
    (PyTorch's is too), so ``out.transpose(1, 2)`` is contiguous already.
    """
    shape, strides = tuple(shape or tensor.shape), tensor.stride()
    if any(stride == 0 and size > 1 for size, stride in zip(tensor.shape, strides)):
        order = list(range(len(shape)))  # a broadcast input: row-major
    else:
        order = sorted(range(len(shape)), key=lambda d: (-strides[d], d))  # outermost first
    dense = [0] * len(shape)
    step = 1
    for d in reversed(order):
        dense[d] = step
        step *= shape[d]
    return empty_tensor(shape, tensor.dtype, tuple(dense), device=tensor.device)


class CausalAttention(Function):
    """``softmax(scale * Q K^T, causal) V`` as one node (PyTorch's CPU flash-attention
    node name), for ``query`` ``(..., L, E)``, ``key`` ``(..., S, E)`` and ``value``
    ``(..., S, Ev)`` with the same leading dimensions.

    Forward is three kernels: the scores on and below the diagonal
    (``causal_matmul``, ``"out"``), the causal softmax (``attention_softmax``) and
    the weights times ``value`` (``causal_matmul``, ``"a"``: row ``i`` of the
    weights is zero past ``i``). Backward, from ``dO`` and the kept weights ``P``:
    ``dP = dO V^T`` (below the diagonal only), ``dV = P^T dO``, ``dS =
    softmax_backward(dP)``, ``dQ = dS K`` and ``dK = dS^T Q``, each product
    skipping the mask's zeros. With ``create_graph`` the backward is the same
    formulas written with tensor operations (the weights recomputed from the
    inputs, so that they are differentiable too).
    """

    backward_name = "ScaledDotProductFlashAttentionForCpuBackward0"

    @staticmethod
    def forward(ctx, query, key, value, scale):
        length, keys = query.shape[-2], key.shape[-2]
        batch, dtype, device = query.shape[:-2], query.dtype, query.device
        scores = empty_tensor((*batch, length, keys), dtype, device=device)
        kernels.causal_matmul(
            scores._strided(), query._strided(), transposed(key._strided()), "out"
        )
        weights = empty_tensor(scores.shape, dtype, device=device)
        kernels.attention_softmax(
            _as_blocks(weights, length, keys), _as_blocks(scores, length, keys), scale, True
        )
        out = _empty_laid_out_as(query, (*batch, length, value.shape[-1]))
        kernels.causal_matmul(out._strided(), weights._strided(), value._strided(), "a")
        ctx.save_for_backward(query, key, value, weights)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        query, key, value, weights = ctx.saved_tensors
        needs, scale = ctx.needs_input_grad, ctx.scale
        if is_grad_enabled():  # create_graph: the formulas, differentiable in every input
            w = AttentionSoftmax.apply(query.matmul(key.transpose(-2, -1)), scale, True)
            grad_w = grad.matmul(value.transpose(-2, -1))
            grad_s = w * (grad_w - (grad_w * w).sum(-1, keepdim=True)) * scale
            return (
                grad_s.matmul(key) if needs[0] else None,
                grad_s.transpose(-2, -1).matmul(query) if needs[1] else None,
                w.transpose(-2, -1).matmul(grad) if needs[2] else None,
                None,
            )
        dtype, device, g = grad.dtype, grad.device, grad._strided()
        grad_query = grad_key = grad_value = None
        if needs[2]:
            grad_value = _empty_laid_out_as(value)
            kernels.causal_matmul(
                grad_value._strided(), transposed(weights._strided()), g, "a_transposed"
            )
        if needs[0] or needs[1]:
            keys = weights.shape[-1]
            grad_weights = empty_tensor(weights.shape, dtype, device=device)
            kernels.causal_matmul(grad_weights._strided(), g, transposed(value._strided()), "out")
            grad_scores = empty_tensor(weights.shape, dtype, device=device)
            kernels.softmax_backward(
                as_matrix(grad_scores, keys),
                as_matrix(grad_weights, keys),
                as_matrix(weights, keys),
                scale,
            )
            if needs[0]:
                grad_query = _empty_laid_out_as(query)
                kernels.causal_matmul(
                    grad_query._strided(), grad_scores._strided(), key._strided(), "a"
                )
            if needs[1]:
                grad_key = _empty_laid_out_as(key)
                kernels.causal_matmul(
                    grad_key._strided(),
                    transposed(grad_scores._strided()),
                    query._strided(),
                    "a_transposed",
                )
        return grad_query, grad_key, grad_value, None
