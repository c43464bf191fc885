"""Second derivatives of ``conv2d``: its gradients as graph nodes (``create_graph=True``).

A convolution ``y = conv2d(x, w)`` is linear in ``x`` and in ``w``, so each
of its gradients is again one of three convolution-shaped operations:

- ``dx = conv2d_backward_input(dy, w)``, a transposed convolution of ``dy``
  (:class:`~glasstorch.nn._convolution.ConvTranspose2dFunction`, whose own
  backward is a ``conv2d`` and a ``conv2d_backward_weight``);
- ``dw = conv2d_backward_weight(dy, x)``, :class:`Conv2dWeightGrad` below,
  whose backward, for an incoming gradient ``G`` shaped like ``w``, is
  ``conv2d(x, G)`` for ``dy`` and ``conv2d_backward_input(dy, G)`` for ``x``
  (``<G, dw>`` is ``<dy, conv2d(x, G)>``, bilinear in ``dy`` and ``x``).

When the backward pass records a graph, :class:`Conv2dFunction` returns its
gradients through these nodes, so a gradient penalty or ``gradgradcheck``
differentiates them again. No new kernel is needed.
"""

from __future__ import annotations

from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.tensor import Tensor, empty_tensor


class Conv2dWeightGrad(Function):
    """``conv2d_backward_weight(dy, x)``: the weight gradient of ``conv2d``, as a node."""

    backward_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, input, geometry, weight_shape):
        grad, input = grad.contiguous(), input.contiguous()
        out = empty_tensor(weight_shape, grad.dtype)
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
            d_grad = empty_tensor(grad.shape, grad.dtype)
            kernels.conv2d(
                d_grad._strided(), input._strided(), upstream._strided(), None, *ctx.geometry
            )
        if ctx.needs_input_grad[1]:  # ... whose gradient in x is a transposed convolution
            d_input = empty_tensor(input.shape, input.dtype)
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
    from glasstorch.nn._convolution import ConvTranspose2dFunction

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
