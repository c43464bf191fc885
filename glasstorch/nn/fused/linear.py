"""``nn.Linear`` as one node (``Addmm``), and its products as direct kernel calls.

``linear_forward`` and ``linear_backward`` run the products on views made from
the storage (``(*, in)`` rows as one matrix, the weight transposed by swapping
strides), so a layer costs one product and one add forward and three kernels
backward, with no view, transpose or reshape operations in between.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch._kernels import Strided, transposed
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.fused.common import as_matrix, rows_order
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class Addmm(Function):
    """``bias + input @ weight.T`` as one graph node, for a batch of rows.

    One node instead of three (a transpose view, a product and a broadcast add)
    means less bookkeeping per layer in forward and backward. PyTorch also
    records ``nn.Linear`` as ``AddmmBackward0`` (with a ``TBackward0`` node in
    front of the weight, which glasstorch folds into this one). The gradients:
    ``input: grad @ weight``, ``weight: grad.T @ input`` (contiguous, like the
    weight itself) and ``bias: grad`` summed over the rows.

    ``input`` may be ``(*, in)``: its rows are taken as one matrix, so the
    output is ``(*, out)`` (PyTorch records two view nodes around its addmm
    there; glasstorch folds them in too). The products run as direct kernel
    calls (:func:`linear_forward` and
    ``linear_backward``); the formulas below are what they compute, and what a
    recorded backward (``create_graph=True``) differentiates.
    """

    backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, bias, input, weight):
        ctx.save_for_backward(
            input if ctx.needs_input_grad[2] else None,
            weight if ctx.needs_input_grad[1] else None,
        )
        ctx.input_shape = input.shape
        # Optimization (the rows in memory order): a non-contiguous ``(*, in)``
        # input, such as a batch_first LSTM's output, is not copied into its
        # index order to be one matrix; the product runs on its rows as they
        # lie (``rows_order``), and only the output, no wider than the input,
        # is put back in index order (a contiguous output, as PyTorch's). The
        # backward reads the same rows for the weight's gradient and gives the
        # input's gradient in the input's own layout (time-major for the LSTM,
        # which then needs no copy of it either).
        ctx.order = rows_order(input) if weight.shape[0] <= weight.shape[1] else None
        if ctx.order is None:
            return linear_forward(input, weight, bias)
        last = input.dim() - 1
        ctx.input_rows = input.permute(*ctx.order, last)
        out = linear_forward(ctx.input_rows, weight, bias)
        return out.permute(*_inverse(ctx.order), last).contiguous()

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if not is_grad_enabled():  # nothing to record: the kernels directly
            if ctx.order is None:
                return linear_backward(grad, input, weight, ctx.input_shape, needs)
            last = grad.dim() - 1
            rows = ctx.input_rows
            grad_bias, grad_input, grad_weight = linear_backward(
                grad.permute(*ctx.order, last), rows, weight, rows.shape, needs
            )
            if grad_input is not None:
                grad_input = grad_input.permute(*_inverse(ctx.order), last)
            return grad_bias, grad_input, grad_weight
        rows = grad.reshape(-1, grad.shape[-1])
        grad_bias = rows.sum(0) if needs[0] else None
        grad_input = (rows @ weight).reshape(ctx.input_shape) if needs[1] else None
        grad_weight = rows.t() @ input.reshape(-1, input.shape[-1]) if needs[2] else None
        return grad_bias, grad_input, grad_weight


def _inverse(order: list[int]) -> list[int]:
    """The permutation that undoes ``order``."""
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return inverse


def _matrix_of(tensor: Tensor) -> Strided:
    """``(*, k)`` as an ``(R, k)`` kernel matrix: a 2-D tensor with its own strides."""
    if tensor.dim() == 2:
        return tensor._strided()
    return as_matrix(tensor, tensor.shape[-1])


def linear_forward(input: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``bias + input @ weight.T`` for ``input`` ``(*, in)``: one product, one add."""
    out = empty_tensor((*input.shape[:-1], weight.shape[0]), input.dtype, device=input.device)
    rows = as_matrix(out, weight.shape[0])
    kernels.matmul(rows, _matrix_of(input), transposed(weight._strided()))
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
        grad_bias = empty_tensor((width,), grad.dtype, device=grad.device)
        out = Strided(grad_bias._storage.buffer, (1, width), (width, 1), 0)
        kernels.reduce("sum", out, g, (0,))
    if needs[1]:
        grad_input = empty_tensor(input_shape, grad.dtype, device=grad.device)
        kernels.matmul(as_matrix(grad_input, input_shape[-1]), g, weight._strided())
    if needs[2]:
        grad_weight = empty_tensor((width, input.shape[-1]), grad.dtype, device=grad.device)
        kernels.matmul(grad_weight._strided(), transposed(g), _matrix_of(input))
    return grad_bias, grad_input, grad_weight
