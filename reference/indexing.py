"""Indexing kernels: gather, scatter, index_select, index_put and nonzero.

All of them pair an output element with an input element through an index
tensor. Each kernel checks every index as it reads it: the index is read once
into a local, checked against the size of the dimension it addresses, and
only that local is used. A kernel that meets an index outside ``[0, size)``
stops and returns it (the frontend raises PyTorch's error); it never wraps a
negative index around, as a Python ``memoryview`` would.
"""

from __future__ import annotations

import functools

from glasstorch._kernels import Strided

from .strided import converter, index_to_position, memory, positions, row_major_indices


class BadIndex(Exception):
    """Raised inside a kernel to leave its loops with an out-of-range index."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


def _with(index: tuple[int, ...], dim: int, value: int) -> tuple[int, ...]:
    """``index`` with its entry at ``dim`` replaced by ``value``."""
    return index[:dim] + (value,) + index[dim + 1 :]


def _size_along(view: Strided, dim: int) -> int:
    """How many positions an index may pick along ``dim`` (a 0-d view has one)."""
    return view.shape[dim] if view.shape else 1


def _checked(value: int, size: int) -> int:
    """``value`` if it is a valid index for ``size`` positions; else leave the kernel."""
    if not 0 <= value < size:
        raise BadIndex(value)
    return value


def _returns_bad_index(kernel):
    """Turn a :class:`BadIndex` raised in ``kernel`` into its return value (None otherwise)."""

    @functools.wraps(kernel)  # keeps the name, docstring and signature
    def wrapper(*args):
        try:
            kernel(*args)
        except BadIndex as bad:
            return bad.index
        return None

    return wrapper


class IndexingKernels:
    """gather, scatter, index_select, index_put, nonzero."""

    @_returns_bad_index
    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        store = converter(out.buffer.dtype)
        out_mem, a_mem, idx_mem = memory(out), memory(a), memory(index)
        size = _size_along(a, dim)
        walk = zip(row_major_indices(out.shape), positions(out), positions(index))
        for i, p_out, p_idx in walk:
            source = _with(i, dim, _checked(idx_mem[p_idx], size))[: len(a.shape)]
            out_mem[p_out] = store(a_mem[index_to_position(source, a.strides, a.offset)])

    @_returns_bad_index
    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        store = converter(out.buffer.dtype)
        out_mem, src_mem, idx_mem = memory(out), memory(src), memory(index)
        size = _size_along(out, dim)
        walk = zip(row_major_indices(index.shape), positions(index), positions(src))
        for i, p_idx, p_src in walk:
            target_index = _with(i, dim, _checked(idx_mem[p_idx], size))[: len(out.shape)]
            target = index_to_position(target_index, out.strides, out.offset)
            value = src_mem[p_src]
            out_mem[target] = store(out_mem[target] + value if accumulate else value)

    @_returns_bad_index
    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        store = converter(out.buffer.dtype)
        out_mem, a_mem, idx_mem = memory(out), memory(a), memory(index)
        size = _size_along(a, dim)
        picks = [_checked(idx_mem[p], size) for p in positions(index)]  # each read once
        for i, p_out in zip(row_major_indices(out.shape), positions(out)):
            source = _with(i, dim, picks[i[dim]])
            out_mem[p_out] = store(a_mem[index_to_position(source, a.strides, a.offset)])

    @_returns_bad_index
    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        store = converter(out.buffer.dtype)
        out_mem, src_mem, idx_mem = memory(out), memory(src), memory(index)
        size = _size_along(out, dim)
        picks = [_checked(idx_mem[p], size) for p in positions(index)]  # each read once
        for i, p_src in zip(row_major_indices(src.shape), positions(src)):
            target = index_to_position(_with(i, dim, picks[i[dim]]), out.strides, out.offset)
            value = src_mem[p_src]
            out_mem[target] = store(out_mem[target] + value if accumulate else value)

    def nonzero(self, out: Strided, a: Strided) -> None:
        out_mem, a_mem = memory(out), memory(a)
        row = 0
        for i, p in zip(row_major_indices(a.shape), positions(a)):
            if a_mem[p]:
                for d, coordinate in enumerate(i):
                    out_mem[out.offset + row * out.strides[0] + d * out.strides[1]] = coordinate
                row += 1
