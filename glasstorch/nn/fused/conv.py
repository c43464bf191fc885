"""2-D convolution, transposed convolution and ``unfold``/``fold`` as fused nodes.

Each node runs the ``conv2d`` (or im2col) kernel forward and its gradient
kernels backward. A recorded backward (``create_graph=True``) builds its graph
from nodes of this file instead (:func:`conv2d_grads_as_nodes`): the input's
gradient is a transposed convolution, the weight's a ``Conv2dWeightGrad`` node,
so a gradient of a gradient is again a convolution.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.functional._utils import _conv_output_size
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class Conv2dFunction(Function):
    """2-D convolution through the ``conv2d`` kernel and its two gradient kernels.

    Backward: the input gradient is ``conv2d_backward_input`` (a transposed
    convolution of the incoming gradient), the weight gradient
    ``conv2d_backward_weight``, the bias gradient the incoming gradient summed
    over every dimension but the channels.
    """

    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, stride, padding, dilation, groups):
        ctx.operands_copied = not (input.is_contiguous() and weight.is_contiguous())
        input, weight = input.contiguous(), weight.contiguous()
        n, _, h, w = input.shape
        out_h = _conv_output_size(h, weight.shape[2], stride[0], padding[0], dilation[0])
        out_w = _conv_output_size(w, weight.shape[3], stride[1], padding[1], dilation[1])
        out = empty_tensor((n, weight.shape[0], out_h, out_w), input.dtype, device=input.device)
        bias_view = None if bias is None else bias.contiguous()._strided()
        kernels.conv2d(
            out._strided(), input._strided(), weight._strided(), bias_view,
            stride, padding, dilation, groups,
        )  # fmt: skip
        ctx.save_for_backward(
            input if ctx.needs_input_grad[1] else None,
            weight if ctx.needs_input_grad[0] else None,
        )
        ctx.geometry = (stride, padding, dilation, groups)
        ctx.input_shape = input.shape
        ctx.weight_shape = weight.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        if is_grad_enabled():  # create_graph=True: gradients that can be differentiated again
            return conv2d_grads_as_nodes(ctx, grad, input, weight)
        grad = grad.contiguous()
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = empty_tensor(ctx.input_shape, grad.dtype, device=grad.device)
            kernels.conv2d_backward_input(
                grad_input._strided(), grad._strided(), weight._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[1]:
            grad_weight = empty_tensor(ctx.weight_shape, grad.dtype, device=grad.device)
            kernels.conv2d_backward_weight(
                grad_weight._strided(), grad._strided(), input._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[2]:
            grad_bias = grad.sum((0, 2, 3))
        return grad_input, grad_weight, grad_bias, None, None, None, None


class ConvTranspose2dFunction(Function):
    """Transposed convolution: the input gradient of a convolution, run forward.

    Forward is ``conv2d_backward_input`` (the weight ``(C_in, C_out / groups,
    KH, KW)`` plays the convolution's weight); its input gradient is a plain
    ``conv2d`` and its weight gradient ``conv2d_backward_weight`` with the
    roles of input and gradient swapped.
    """

    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, stride, padding, dilation, groups, output_shape):
        input, weight = input.contiguous(), weight.contiguous()
        out = empty_tensor(output_shape, input.dtype, device=input.device)
        geometry = (stride, padding, dilation, groups)
        kernels.conv2d_backward_input(
            out._strided(), input._strided(), weight._strided(), *geometry
        )
        if bias is not None:
            out = out + bias.reshape(1, -1, 1, 1)
        ctx.save_for_backward(input, weight)
        ctx.geometry = geometry
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        grad = grad.contiguous()
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = empty_tensor(input.shape, grad.dtype, device=grad.device)
            kernels.conv2d(
                grad_input._strided(), grad._strided(), weight._strided(), None, *ctx.geometry
            )
        if ctx.needs_input_grad[1]:
            grad_weight = empty_tensor(weight.shape, grad.dtype, device=grad.device)
            kernels.conv2d_backward_weight(
                grad_weight._strided(), input._strided(), grad._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[2]:
            grad_bias = grad.sum((0, 2, 3))
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


class UnfoldFunction(Function):
    """``F.unfold`` through ``im2col``; its gradient is ``col2im``."""

    backward_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, dilation, blocks):
        input = input.contiguous()
        n, c = input.shape[:2]
        out = empty_tensor((n, c * kernel[0] * kernel[1], blocks), input.dtype, device=input.device)
        ctx.params = (kernel, stride, padding, dilation)
        kernels.im2col(out._strided(), input._strided(), *ctx.params)
        ctx.input_shape = input.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_input = empty_tensor(ctx.input_shape, grad.dtype, device=grad.device)
        kernels.col2im(grad_input._strided(), grad.contiguous()._strided(), *ctx.params)
        return grad_input, None, None, None, None, None


class FoldFunction(Function):
    """``F.fold`` through ``col2im``; its gradient is ``im2col``."""

    backward_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, columns, output_shape, kernel, stride, padding, dilation):
        columns = columns.contiguous()
        out = empty_tensor(output_shape, columns.dtype, device=columns.device)
        ctx.params = (kernel, stride, padding, dilation)
        kernels.col2im(out._strided(), columns._strided(), *ctx.params)
        ctx.columns_shape = columns.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_columns = empty_tensor(ctx.columns_shape, grad.dtype, device=grad.device)
        kernels.im2col(grad_columns._strided(), grad.contiguous()._strided(), *ctx.params)
        return grad_columns, None, None, None, None, None


class Conv2dWeightGrad(Function):
    """``conv2d_backward_weight(dy, x)``: the weight gradient of ``conv2d``, as a node."""

    backward_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, input, geometry, weight_shape):
        grad, input = grad.contiguous(), input.contiguous()
        out = empty_tensor(weight_shape, grad.dtype, device=grad.device)
        kernels.conv2d_backward_weight(out._strided(), grad._strided(), input._strided(), *geometry)
        ctx.save_for_backward(grad, input)
        ctx.geometry = geometry
        return out

    @staticmethod
    def backward(ctx, upstream):
        grad, input = ctx.saved_tensors
        upstream = upstream.contiguous()
        d_grad = d_input = None
        if ctx.needs_input_grad[0]:  # <upstream, dw> = <dy, conv2d(x, upstream)>
            d_grad = empty_tensor(grad.shape, grad.dtype, device=grad.device)
            kernels.conv2d(
                d_grad._strided(), input._strided(), upstream._strided(), None, *ctx.geometry
            )
        if ctx.needs_input_grad[1]:  # ... whose gradient in x is a transposed convolution
            d_input = empty_tensor(input.shape, input.dtype, device=input.device)
            kernels.conv2d_backward_input(
                d_input._strided(), grad._strided(), upstream._strided(), *ctx.geometry
            )
        return d_grad, d_input, None, None


def conv2d_grads_as_nodes(ctx, grad: Tensor, input, weight) -> tuple:
    """:class:`Conv2dFunction`'s three gradients, each a graph node (for ``create_graph``).

    ``input`` and ``weight`` are the saved tensors (None where not needed).
    When the forward pass had to copy a non-contiguous operand, the saved copy
    is outside the graph and a second derivative through it would be lost:
    that is refused with an error, not dropped silently.
    """
    stride, padding, dilation, groups = ctx.geometry
    if ctx.operands_copied:
        raise RuntimeError(
            "conv2d: second derivatives (create_graph=True) need a contiguous input and "
            "weight; the saved copy of a non-contiguous one is outside the graph. Call "
            ".contiguous() on them before the convolution."
        )
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_input = ConvTranspose2dFunction.apply(
            grad, weight, None, stride, padding, dilation, groups, tuple(ctx.input_shape)
        )
    if ctx.needs_input_grad[1]:
        grad_weight = Conv2dWeightGrad.apply(grad, input, ctx.geometry, tuple(ctx.weight_shape))
    if ctx.needs_input_grad[2]:
        grad_bias = grad.sum((0, 2, 3))
    return grad_input, grad_weight, grad_bias, None, None, None, None
