"""Indexing kernels: gather, scatter, index_select, index_put and nonzero.

All of them pair an output element with an input element through an index
tensor. The frontend has checked every index, so none of them can step outside
its buffer.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from .strided import converter, index_to_position, memory, positions, row_major_indices


def _with(index: tuple[int, ...], dim: int, value: int) -> tuple[int, ...]:
    """``index`` with its entry at ``dim`` replaced by ``value``."""
    return index[:dim] + (value,) + index[dim + 1 :]


class IndexingKernels:
    """gather, scatter, index_select, index_put, nonzero."""

    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> None:
        store = converter(out.buffer.dtype)
        out_mem, a_mem, idx_mem = memory(out), memory(a), memory(index)
        walk = zip(row_major_indices(out.shape), positions(out), positions(index))
        for i, p_out, p_idx in walk:
            source = _with(i, dim, idx_mem[p_idx])
            out_mem[p_out] = store(a_mem[index_to_position(source, a.strides, a.offset)])

    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> None:
        store = converter(out.buffer.dtype)
        out_mem, src_mem, idx_mem = memory(out), memory(src), memory(index)
        walk = zip(row_major_indices(index.shape), positions(index), positions(src))
        for i, p_idx, p_src in walk:
            target = index_to_position(_with(i, dim, idx_mem[p_idx]), out.strides, out.offset)
            value = src_mem[p_src]
            out_mem[target] = store(out_mem[target] + value if accumulate else value)

    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> None:
        store = converter(out.buffer.dtype)
        out_mem, a_mem, idx_mem = memory(out), memory(a), memory(index)
        picks = [idx_mem[p] for p in positions(index)]
        for i, p_out in zip(row_major_indices(out.shape), positions(out)):
            source = _with(i, dim, picks[i[dim]])
            out_mem[p_out] = store(a_mem[index_to_position(source, a.strides, a.offset)])

    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> None:
        store = converter(out.buffer.dtype)
        out_mem, src_mem, idx_mem = memory(out), memory(src), memory(index)
        picks = [idx_mem[p] for p in positions(index)]
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
