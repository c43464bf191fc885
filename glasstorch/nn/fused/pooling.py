"""2-D max and average pooling as fused nodes: one kernel forward, one backward."""

from __future__ import annotations

from glasstorch import _dtype, _tier
from glasstorch.autograd.function import Function
from glasstorch.tensor import empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class MaxPool2dFunction(Function):
    """Max pooling through ``max_pool2d``; backward routes each gradient to its maximum."""

    backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, dilation, out_size):
        input = input.contiguous()
        shape = (*input.shape[:2], *out_size)
        out = empty_tensor(shape, input.dtype, device=input.device)
        indices = empty_tensor(shape, _dtype.int64, device=input.device)
        kernels.max_pool2d(
            out._strided(), indices._strided(), input._strided(), kernel, stride, padding,
            dilation,
        )  # fmt: skip
        ctx.save_for_backward(indices)
        ctx.input_shape = input.shape
        ctx.mark_non_differentiable(indices)
        return out, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        grad_input = empty_tensor(ctx.input_shape, grad.dtype, device=grad.device)
        kernels.max_pool2d_backward(
            grad_input._strided(), grad.contiguous()._strided(), indices._strided()
        )
        return grad_input, None, None, None, None, None


class AvgPool2dFunction(Function):
    """Average pooling through ``avg_pool2d`` and ``avg_pool2d_backward``."""

    backward_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, count_include_pad, divisor, out_size):
        input = input.contiguous()
        out = empty_tensor((*input.shape[:2], *out_size), input.dtype, device=input.device)
        ctx.params = (kernel, stride, padding, count_include_pad, divisor)
        kernels.avg_pool2d(out._strided(), input._strided(), *ctx.params)
        ctx.input_shape = input.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_input = empty_tensor(ctx.input_shape, grad.dtype, device=grad.device)
        kernels.avg_pool2d_backward(
            grad_input._strided(), grad.contiguous()._strided(), *ctx.params
        )
        return grad_input, None, None, None, None, None, None
