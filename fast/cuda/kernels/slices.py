"""Slice kernels of the CUDA tier: softmax, arg_reduce and cumsum (``fast/cuda/slices.cu``).

Each works on the 1-D slices of a tensor along ``dim``. The kernel gets the
start of every slice from the view with ``dim`` left out (a ``meta`` walk) and
the stride along ``dim``. softmax and arg_reduce give each slice one block,
sized to the slice's length (:func:`row_threads`); cumsum gives each slice one
thread, which adds in order, as the CPU tiers do.
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import MAX_ROW_BLOCKS, row_threads, slices_walk


def _slices(view: Strided, dim: int) -> int:
    return numel(view.shape) // view.shape[dim] if view.shape[dim] else 0


class SliceKernels:
    """softmax, arg_reduce, cumsum."""

    def softmax(self, out: Strided, a: Strided, dim: int, log: bool) -> None:
        """Softmax (or log_softmax) of ``a`` along ``dim``: one block per slice."""
        n, slices = a.shape[dim], _slices(a, dim)
        if n == 0 or slices == 0:
            return
        meta, ndim = slices_walk(self, dim, out, a)
        self.launch_grid(
            "slices.cu", f"softmax_{self.suffix(a)}", min(slices, MAX_ROW_BLOCKS),
            row_threads(n), self.ptr(out), self.ptr(a), meta, ndim, slices, n,
            out.strides[dim], a.strides[dim], int(bool(log)),
        )  # fmt: skip

    def arg_reduce(self, op: str, values: Strided, indices: Strided, a: Strided, dim: int) -> None:
        """First maximum (``op="max"``) or minimum of ``a`` along ``dim``, NaN winning."""
        n, slices = a.shape[dim], _slices(a, dim)
        if n == 0 or slices == 0:
            return  # the frontend refuses empty reductions
        meta, ndim = slices_walk(self, dim, values, indices, a)
        self.launch_grid(
            "slices.cu", f"arg_reduce_{self.suffix(a)}", min(slices, MAX_ROW_BLOCKS),
            row_threads(n), self.ptr(values), self.ptr(indices), self.ptr(a), meta, ndim,
            slices, n, a.strides[dim], int(op == "max"),
        )  # fmt: skip

    def cumsum(self, out: Strided, a: Strided, dim: int) -> None:
        """Running sum of ``a`` along ``dim``: one thread per slice, adding in order."""
        n, slices = a.shape[dim] if a.shape else 1, _slices(a, dim) if a.shape else 1
        if n == 0 or slices == 0:
            return
        if not a.shape:  # a 0-d tensor is one slice of one element
            out, a, dim = _as_1d(out), _as_1d(a), 0
        meta, ndim = slices_walk(self, dim, out, a)
        self.launch(
            "slices.cu", f"cumsum_{self.suffix(a)}", slices, self.ptr(out), self.ptr(a), meta,
            ndim, slices, n, out.strides[dim], a.strides[dim],
        )  # fmt: skip


def _as_1d(view: Strided) -> Strided:
    return view._replace(shape=(1,), strides=(1,))
