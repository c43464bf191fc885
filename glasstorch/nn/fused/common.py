"""What the fused nodes share: the kernel views of their operands, and the
gradients of a plain formula, for a backward pass that is itself recorded.

A fused backward kernel computes numbers, not a graph. When the backward pass
is recorded (``create_graph=True``, for a gradient of a gradient), a node
evaluates its plain formula again with recording on and lets autograd
differentiate it (:func:`formula_gradients`); so double backward gives exactly
the formula's derivatives.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._kernels import Strided
from glasstorch.autograd import grad as autograd_grad
from glasstorch.autograd.grad_mode import enable_grad
from glasstorch.tensor import Tensor

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


def rows_order(tensor: Tensor) -> list[int] | None:
    """The leading dimensions of a non-contiguous ``(*, k)`` tensor in the order of
    its memory, when reading them so makes it contiguous (a transposed batch, such
    as a batch_first LSTM's output); None otherwise, and for a contiguous one.

    ``tensor.permute(*order, -1)`` is then contiguous: its rows are one matrix
    as they lie in memory, which fused nodes whose result does not depend on
    the order of the rows (a sum over them, or a product row by row) read
    without copying."""
    if tensor.is_contiguous() or tensor.dim() < 3 or tensor.stride(-1) != 1:
        return None
    order = sorted(range(tensor.dim() - 1), key=lambda d: -tensor.stride(d))
    if not tensor.permute(*order, tensor.dim() - 1).is_contiguous():
        return None
    return order


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


def formula_gradients(formula, inputs: list, wanted: list, grad: Tensor, create_graph: bool):
    """The gradients of ``formula(*inputs)`` against ``grad``, by autograd.

    One entry per input: the gradient for the positions in ``wanted``, None
    elsewhere. The formula is evaluated with recording on, so a node whose
    backward is a plain formula gets it differentiated for it (and, with
    ``create_graph``, recorded for a gradient of the gradient).
    """
    with enable_grad():
        output = formula(*inputs)
        grads = autograd_grad(output, [inputs[i] for i in wanted], grad, create_graph=create_graph)
    result = [None] * len(inputs)
    for i, g in zip(wanted, grads):
        result[i] = g
    return result
