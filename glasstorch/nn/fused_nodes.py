"""Fused graph nodes for a transformer's layers: LayerNorm and the attention softmax.

Written as formulas of tensor operations (``layer_norm`` in
:mod:`glasstorch.nn.functional` shows the meaning), a LayerNorm is nine kernel
calls forward and about twenty backward, each with a temporary the size of the
input, and a causal softmax first builds a mask. The idea here is **fusion**:
each node runs one kernel of the contract forward (``layer_norm``,
``attention_softmax``) and one backward (``layer_norm_backward``,
``softmax_backward``), and keeps only what that kernel needs (the row means
and reciprocal standard deviations, or the softmax's output).

A fused backward kernel computes numbers, not a graph. When the backward pass
itself is recorded (``create_graph=True``, for a gradient of a gradient), each
node instead evaluates its plain formula again with recording on and lets
autograd differentiate it, as :mod:`glasstorch.nn.loss_nodes` does; so double
backward gives exactly the formula's derivatives.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._tier import kernels
from glasstorch.autograd import grad as autograd_grad
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import enable_grad, is_grad_enabled
from glasstorch.tensor import Tensor, empty_tensor

_FLOATS = (_dtype.float32, _dtype.float64)


def fusable(*tensors: Tensor | None) -> bool:
    """Whether the fused kernels take these operands: float32 or float64, one dtype
    (a missing operand, None, does not count)."""
    present = [t for t in tensors if t is not None]
    dtype = present[0].dtype
    return dtype in _FLOATS and all(t.dtype is dtype for t in present)


def _rows(tensor: Tensor, width: int) -> Tensor:
    """``tensor`` as a contiguous ``(R, width)`` matrix (a view when it is contiguous)."""
    return tensor.contiguous().view(-1, width)


def _flat(tensor: Tensor | None):
    """The kernel view of a parameter as one contiguous row, or None."""
    return None if tensor is None else tensor.contiguous().view(-1)._strided()


def _grads_of_formula(ctx, formula, tensors: tuple, grad: Tensor, first: int) -> list:
    """The gradients of ``formula(*tensors)`` against ``grad``, recorded in the graph.

    For ``create_graph``: the formula is evaluated again from the saved tensors
    (with their history) and differentiated by autograd. ``first`` is the
    position of ``tensors[0]`` among the node's inputs.
    """
    wanted = [
        i for i, t in enumerate(tensors) if t is not None and ctx.needs_input_grad[first + i]
    ]
    with enable_grad():
        output = formula(*tensors)
        grads = autograd_grad(output, [tensors[i] for i in wanted], grad, create_graph=True)
    result = [None] * len(tensors)
    for i, g in zip(wanted, grads):
        result[i] = g
    return result


class LayerNorm(Function):
    """``layer_norm`` over the last ``len(normalized_shape)`` dimensions as one node.

    ``apply(input, weight, bias, normalized_shape, eps, formula)``; ``formula``
    is the plain composition, ``formula(input, weight, bias)``, used for
    double backward.
    """

    backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, normalized_shape, eps, formula):
        width = 1
        for size in normalized_shape:
            width *= size
        x = _rows(input, width)
        rows = x.shape[0]
        out = empty_tensor(input.shape, input.dtype)
        mean = empty_tensor((rows,), input.dtype)
        rstd = empty_tensor((rows,), input.dtype)
        kernels.layer_norm(
            out.view(rows, width)._strided(), mean._strided(), rstd._strided(), x._strided(),
            _flat(weight), _flat(bias), eps,
        )  # fmt: skip
        ctx.save_for_backward(input, weight, bias, mean, rstd)
        ctx.width, ctx.formula = width, formula
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias, mean, rstd = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: differentiate the formula
            grads = _grads_of_formula(ctx, ctx.formula, (input, weight, bias), grad, 0)
            return (*grads, None, None, None)
        needs = ctx.needs_input_grad
        width = ctx.width
        grad_input = empty_tensor(input.shape, input.dtype) if needs[0] else None
        grad_weight = empty_tensor(weight.shape, weight.dtype) if needs[1] else None
        grad_bias = empty_tensor(bias.shape, bias.dtype) if needs[2] else None
        rows = mean.shape[0]
        kernels.layer_norm_backward(
            None if grad_input is None else grad_input.view(rows, width)._strided(),
            _flat(grad_weight), _flat(grad_bias), _rows(grad, width)._strided(),
            _rows(input, width)._strided(), mean._strided(), rstd._strided(), _flat(weight),
        )  # fmt: skip
        return grad_input, grad_weight, grad_bias, None, None, None


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
        out = empty_tensor(scores.shape, scores.dtype)
        kernels.attention_softmax(
            out.view(-1, length, keys)._strided(),
            scores.contiguous().view(-1, length, keys)._strided(),
            scale,
            causal,
        )
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the formula, differentiable in y and grad
            return y * (grad - (grad * y).sum(-1, keepdim=True)) * ctx.scale, None, None
        keys = y.shape[-1]
        grad_scores = empty_tensor(y.shape, y.dtype)
        kernels.softmax_backward(
            grad_scores.view(-1, keys)._strided(), _rows(grad, keys)._strided(),
            y.view(-1, keys)._strided(), ctx.scale,
        )  # fmt: skip
        return grad_scores, None, None
