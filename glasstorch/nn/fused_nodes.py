"""Fused graph nodes for a transformer's layers: LayerNorm, the attention softmax,
and the kernel-level forward and backward of ``nn.Linear``.

Written as formulas of tensor operations (``layer_norm`` in
:mod:`glasstorch.nn.functional` shows the meaning), a LayerNorm is nine kernel
calls forward and about twenty backward, each with a temporary the size of the
input, and a causal softmax first builds a mask. The idea here is **fusion**:
each node runs one kernel of the contract forward (``layer_norm``,
``attention_softmax``) and one backward (``layer_norm_backward``,
``softmax_backward``), and keeps only what that kernel needs (the row means
and reciprocal standard deviations, or the softmax's output).

``nn.Linear`` (the ``Addmm`` node of :mod:`glasstorch.nn.functional`) keeps its
plain formula there; :func:`linear_forward` and :func:`linear_backward` run
the same products as direct kernel calls on views made from the storage
(``(*, in)`` rows as one matrix, the weight transposed by swapping strides),
so a layer costs one product and one add forward and three kernels backward,
with no view, transpose or reshape operations in between.

A fused backward kernel computes numbers, not a graph. When the backward pass
itself is recorded (``create_graph=True``, for a gradient of a gradient), each
node instead evaluates its plain formula again with recording on and lets
autograd differentiate it, as :mod:`glasstorch.nn.loss_nodes` does; so double
backward gives exactly the formula's derivatives.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._kernels import Strided
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.loss_nodes import formula_gradients
from glasstorch.tensor import Tensor, empty_tensor

_FLOATS = (_dtype.float32, _dtype.float64)


def fusable(*tensors: Tensor | None) -> bool:
    """Whether the fused kernels take these operands: float32 or float64, one dtype
    (a missing operand, None, does not count)."""
    present = [t for t in tensors if t is not None]
    dtype = present[0].dtype
    return dtype in _FLOATS and all(t.dtype is dtype for t in present)


def as_matrix(tensor: Tensor, width: int) -> Strided:
    """The kernel view of ``tensor``'s elements as a row-major ``(R, width)`` matrix.

    Made directly from the storage, not through ``Tensor.view``: these nodes
    call kernels many times a step, and a view of the frontend is a whole
    (unrecorded) operation. A non-contiguous tensor is copied first.
    """
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    if width:
        rows = tensor.numel() // width
    else:  # (*, 0): the rows are the leading dimensions' product
        rows = 1
        for size in tensor._shape[:-1]:
            rows *= size
    return Strided(tensor._storage.buffer, (rows, width), (width, 1), tensor.storage_offset())


def _flat(tensor: Tensor | None) -> Strided | None:
    """The kernel view of a parameter as one contiguous row, or None."""
    if tensor is None:
        return None
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    return Strided(tensor._storage.buffer, (tensor.numel(),), (1,), tensor.storage_offset())


def _grads_of_formula(ctx, formula, tensors: tuple, grad: Tensor, first: int) -> list:
    """The gradients of ``formula(*tensors)`` against ``grad``, recorded in the graph.

    For ``create_graph``: the formula is evaluated again from the saved tensors
    (with their history) and differentiated by autograd. ``first`` is the
    position of ``tensors[0]`` among the node's inputs.
    """
    wanted = [i for i, t in enumerate(tensors) if t is not None and ctx.needs_input_grad[first + i]]
    return formula_gradients(formula, list(tensors), wanted, grad, create_graph=True)


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
        x = as_matrix(input, width)
        rows = x.shape[0]
        out = empty_tensor(input.shape, input.dtype)
        mean = empty_tensor((rows,), input.dtype)
        rstd = empty_tensor((rows,), input.dtype)
        kernels.layer_norm(
            as_matrix(out, width), mean._strided(), rstd._strided(), x, _flat(weight),
            _flat(bias), eps,
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
        kernels.layer_norm_backward(
            None if grad_input is None else as_matrix(grad_input, width), _flat(grad_weight),
            _flat(grad_bias), as_matrix(grad, width), as_matrix(input, width), mean._strided(),
            rstd._strided(), _flat(weight),
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
        grad_scores = empty_tensor(y.shape, y.dtype)
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


# ------------------------------------------------------------------- Linear
def _matrix_of(tensor: Tensor) -> Strided:
    """``(*, k)`` as an ``(R, k)`` kernel matrix: a 2-D tensor with its own strides."""
    if tensor.dim() == 2:
        return tensor._strided()
    return as_matrix(tensor, tensor.shape[-1])


def _transposed(view: Strided) -> Strided:
    """The transpose of a 2-D kernel view: the strides swapped, nothing copied."""
    return Strided(view.buffer, view.shape[::-1], view.strides[::-1], view.offset)


def linear_forward(input: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``bias + input @ weight.T`` for ``input`` ``(*, in)``: one product, one add."""
    out = empty_tensor((*input.shape[:-1], weight.shape[0]), input.dtype)
    rows = as_matrix(out, weight.shape[0])
    kernels.matmul(rows, _matrix_of(input), _transposed(weight._strided()))
    bias_rows = Strided(
        bias._storage.buffer, rows.shape, (0, bias.stride(0)), bias.storage_offset()
    )
    kernels.binary("add", rows, rows, bias_rows)
    return out


def linear_backward(
    grad: Tensor, input: Tensor | None, weight: Tensor | None, input_shape, needs
) -> tuple:
    """The gradients of :func:`linear_forward` for bias, input and weight (None where
    ``needs`` says no): ``grad`` summed over the rows, ``grad @ weight`` and
    ``grad.T @ input`` (contiguous, like the weight)."""
    g = _matrix_of(grad)
    width = g.shape[1]
    grad_bias = grad_input = grad_weight = None
    if needs[0]:
        grad_bias = empty_tensor((width,), grad.dtype)
        out = Strided(grad_bias._storage.buffer, (1, width), (width, 1), 0)
        kernels.reduce("sum", out, g, (0,))
    if needs[1]:
        grad_input = empty_tensor(input_shape, grad.dtype)
        kernels.matmul(as_matrix(grad_input, input_shape[-1]), g, weight._strided())
    if needs[2]:
        grad_weight = empty_tensor((width, input.shape[-1]), grad.dtype)
        kernels.matmul(grad_weight._strided(), _transposed(g), _matrix_of(input))
    return grad_bias, grad_input, grad_weight
