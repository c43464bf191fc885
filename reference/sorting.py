"""Sorting kernel of the reference tier: a stable sort of each 1-D slice."""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from .strided import converter, drop_dim, memory, positions


def _sort_key(value):
    """Ascending order with NaN after every number: NaN sorts as the largest."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


class SortingKernels:
    """sort."""

    def sort(
        self, values: Strided, indices: Strided, a: Strided, dim: int, descending: bool
    ) -> None:
        store = converter(values.buffer.dtype)
        v_mem, i_mem, a_mem = memory(values), memory(indices), memory(a)
        size = a.shape[dim]
        starts = zip(
            positions(drop_dim(a, dim)),
            positions(drop_dim(values, dim)),
            positions(drop_dim(indices, dim)),
        )
        for start_a, start_v, start_i in starts:
            row = [a_mem[start_a + k * a.strides[dim]] for k in range(size)]
            # Python's sort is stable, and with reverse=True equal elements
            # still keep their original order, as PyTorch's stable sort does.
            order = sorted(range(size), key=lambda k: _sort_key(row[k]), reverse=descending)
            for j, k in enumerate(order):
                v_mem[start_v + j * values.strides[dim]] = store(row[k])
                i_mem[start_i + j * indices.strides[dim]] = k
