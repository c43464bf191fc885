"""Sorting: sort, argsort, topk, msort, all through the contract's ``sort`` kernel.

The kernel sorts each 1-D slice along a dimension, stably. ``topk`` sorts
and keeps the first ``k`` of each slice. The gradient of a value that was
moved from position ``i`` to position ``j`` goes back to position ``i``: a
scatter of the incoming gradient through the indices.
"""

from __future__ import annotations

from collections import namedtuple

from glasstorch import _dtype
from glasstorch._shape import normalize_dim
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.ops.reduction import _ValuesIndices
from glasstorch.tensor import Tensor, empty_tensor

#: What ``sort`` and ``topk`` return: PyTorch's named tuples ``(values, indices)``.
sort_result = type(
    "sort", (_ValuesIndices, namedtuple("sort", ["values", "indices"])), {"__slots__": ()}
)
topk_result = type(
    "topk", (_ValuesIndices, namedtuple("topk", ["values", "indices"])), {"__slots__": ()}
)


def _sorted_raw(a: Tensor, dim: int, descending: bool) -> tuple[Tensor, Tensor]:
    """Values and indices of ``a`` sorted along ``dim`` (no autograd)."""
    values = empty_tensor(a._shape, a.dtype)
    indices = empty_tensor(a._shape, _dtype.int64)
    kernels.sort(values._strided(), indices._strided(), a._strided(), dim, descending)
    return values, indices


class Sort(Function):
    """Sort along ``dim`` and keep the first ``k`` of each slice (all of it for sort)."""

    backward_name = "SortBackward0"

    @staticmethod
    def forward(ctx, a, dim, descending, k):
        ctx.input_shape, ctx.dim = a.shape, dim
        values, indices = _sorted_raw(a, dim, descending)
        if k != a.shape[dim]:
            values, indices = values.narrow(dim, 0, k), indices.narrow(dim, 0, k)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        from glasstorch.ops.creation import zeros

        (indices,) = ctx.saved_tensors
        input_grad = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device)
        return input_grad.scatter(ctx.dim, indices, grad), None, None, None


class Topk(Sort):
    backward_name = "TopkBackward0"


def _as_1d(input: Tensor) -> tuple[Tensor, bool]:
    """A 0-d tensor sorts as one element: PyTorch treats it as shape ``(1,)``."""
    return (input.reshape(1), True) if input.dim() == 0 else (input, False)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Sort ``input`` along ``dim``; returns the named tuple ``(values, indices)``.

    The sort is always stable (equal elements keep their order), which is one
    of the orders PyTorch's ``stable=False`` may give, and the one it gives
    with ``stable=True``.

    Example:
        >>> torch.sort(torch.tensor([3, 1, 2])).indices
        tensor([1, 2, 0])
    """
    flat, was_scalar = _as_1d(input)
    dim = normalize_dim(dim, flat.dim())
    values, indices = Sort.apply(flat, dim, bool(descending), flat.shape[dim])
    if was_scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return sort_result(values, indices)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    return sort(input.detach(), dim, descending, stable).indices


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest, ``largest=False``) elements along ``dim``.

    Returns the named tuple ``(values, indices)``. The values always come in
    sorted order (PyTorch's ``sorted=False`` leaves the order unspecified).
    """
    flat, was_scalar = _as_1d(input)
    dim = normalize_dim(dim, flat.dim())
    if not 0 <= k <= flat.shape[dim]:
        raise RuntimeError("selected index k out of range")
    values, indices = Topk.apply(flat, dim, bool(largest), int(k))
    if was_scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return topk_result(values, indices)
