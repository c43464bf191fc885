"""Reductions, arg-reductions, running sums and softmax.

Each kernel walks the *output* (the keepdim shape) and, for every output
element, gathers the 1-D or n-D slice of the input that reduces into it. The
slice is itself a strided view (see :func:`slice_view`), so the same
``positions`` walk serves every case.
"""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from .elementwise import _div, _exp, _fsum, _log
from .strided import converter, drop_dim, is_floating, memory, positions, row_major_indices


def slice_view(a: Strided, index: tuple[int, ...], dims: tuple[int, ...]) -> Strided:
    """The part of ``a`` that reduces into the output element at ``index``.

    ``index`` is an index of the keepdim-shaped output (0 along reduced dims).
    The slice keeps only the reduced ``dims``; every other dimension is fixed at
    ``index``, which moves the offset.
    """
    # -- solution: kernels/reduce
    offset = a.offset
    for d, i in enumerate(index):
        if d not in dims:
            offset += i * a.strides[d]
    return Strided(
        a.buffer,
        tuple(a.shape[d] for d in dims),
        tuple(a.strides[d] for d in dims),
        offset,
    )
    # -- end solution


def _max(values):
    best = values[0]
    for v in values:
        if v != v:
            return v  # NaN propagates
        if v > best:
            best = v
    return best


def _min(values):
    best = values[0]
    for v in values:
        if v != v:
            return v
        if v < best:
            best = v
    return best


def _sum(values, floating):
    # fsum adds exactly and rounds once: the most careful summation there is.
    return _fsum(values) if floating else sum(values)


class ReductionKernels:
    """reduce, arg_reduce, cumsum and softmax."""

    def reduce(self, op: str, out: Strided, a: Strided, dims: tuple[int, ...]) -> None:
        # -- solution: kernels/reduce
        floating = is_floating(a.buffer.dtype)
        reducers = {
            "sum": lambda values: _sum(values, floating),
            "prod": math.prod,
            "amax": _max,
            "amin": _min,
            "all": all,
            "any": any,
        }
        reducer, store = reducers[op], converter(out.buffer.dtype)
        out_mem, a_mem = memory(out), memory(a)
        for index, p_out in zip(row_major_indices(out.shape), positions(out)):
            part = slice_view(a, index, dims)
            out_mem[p_out] = store(reducer([a_mem[p] for p in positions(part)]))
        # -- end solution

    def arg_reduce(self, op: str, values: Strided, indices: Strided, a: Strided, dim: int) -> None:
        # -- solution: kernels/reduce
        better = (lambda x, y: x > y) if op == "max" else (lambda x, y: x < y)
        v_mem, i_mem, a_mem = memory(values), memory(indices), memory(a)
        store = converter(values.buffer.dtype)
        walk = zip(row_major_indices(values.shape), positions(values), positions(indices))
        for index, p_value, p_index in walk:
            part = [a_mem[p] for p in positions(slice_view(a, index, (dim,)))]
            best_at = 0
            for k, v in enumerate(part):
                if v != v:  # the first NaN wins
                    best_at = k
                    break
                if better(v, part[best_at]):
                    best_at = k
            v_mem[p_value] = store(part[best_at])
            i_mem[p_index] = best_at
        # -- end solution

    def cumsum(self, out: Strided, a: Strided, dim: int) -> None:
        # -- solution: kernels/softmax
        store = converter(out.buffer.dtype)
        out_mem, a_mem = memory(out), memory(a)
        size, a_stride, out_stride = a.shape[dim], a.strides[dim], out.strides[dim]
        # One running sum per 1-D slice along dim; drop_dim walks the slice starts.
        for start_a, start_out in zip(positions(drop_dim(a, dim)), positions(drop_dim(out, dim))):
            total = 0
            for k in range(size):
                total += a_mem[start_a + k * a_stride]
                out_mem[start_out + k * out_stride] = store(total)
        # -- end solution

    def softmax(self, out: Strided, a: Strided, dim: int, log: bool) -> None:
        # -- solution: kernels/softmax
        store = converter(out.buffer.dtype)
        out_mem, a_mem = memory(out), memory(a)
        size, a_stride, out_stride = a.shape[dim], a.strides[dim], out.strides[dim]
        for start_a, start_out in zip(positions(drop_dim(a, dim)), positions(drop_dim(out, dim))):
            row = [a_mem[start_a + k * a_stride] for k in range(size)]
            # Subtracting the maximum keeps every exponent <= 0: nothing overflows.
            shift = _max(row) if row else 0.0
            if not math.isfinite(shift):
                shift = 0.0 if shift != shift else shift
            exps = [_exp(x - shift) if x == x else x for x in row]
            total = _fsum(exps)
            for k in range(size):
                if log:
                    value = row[k] - shift - _log(total)
                else:
                    value = _div(exps[k], total)
                out_mem[start_out + k * out_stride] = store(value)
        # -- end solution
