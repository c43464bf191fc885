"""The attention softmax as one node: scale, optional causal mask and softmax in
one kernel forward (``attention_softmax``) and one backward (``softmax_backward``),
keeping only the softmax's output; the plain formula first builds a mask.
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.fused.common import as_matrix
from glasstorch.tensor import Tensor, empty_tensor


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
