"""sort in the CUDA tier (``fast/cuda/sorting.cu``): a stable sort of each slice.

Slices of up to 1024 elements are sorted by one block each, in shared memory
(a bitonic network); longer ones by one thread each, a merge sort between
scratch rows in device memory. Both order (value, index) pairs totally, so
either gives the stable order, equal to the CPU tiers'.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import MAX_ROW_BLOCKS, slices_walk

#: The longest slice sorted in shared memory (GT_SORT_TILE in sorting.cu).
SORT_TILE = 1024


class SortingKernels:
    """sort."""

    def sort(
        self, values: Strided, indices: Strided, a: Strided, dim: int, descending: bool
    ) -> None:
        """Stable sort of each slice of ``a`` along ``dim``, NaN as the largest."""
        if not a.shape:  # a 0-d tensor is one slice of one element
            values, indices, a = (
                v._replace(shape=(1,), strides=(1,)) for v in (values, indices, a)
            )
            dim = 0
        n = a.shape[dim]
        slices = numel(a.shape) // n if n else 0
        if slices == 0:
            return
        sfx = self.suffix(a)
        meta, ndim = slices_walk(self, dim, values, indices, a)
        steps = (values.strides[dim], indices.strides[dim], a.strides[dim], int(bool(descending)))
        if n <= SORT_TILE:
            padded = 1
            while padded < n:
                padded *= 2
            threads = min(max(padded // 2, 32), 512)
            self.launch_grid(
                "sorting.cu", f"sort_bitonic_{sfx}", min(slices, MAX_ROW_BLOCKS), threads,
                self.ptr(values), self.ptr(indices), self.ptr(a), meta, ndim, slices, n, padded,
                *steps,
            )  # fmt: skip
        else:
            keys = self.driver.device_empty(2 * n * slices, a.buffer.dtype)
            positions = self.driver.device_empty(2 * n * slices, np.int64)
            self.launch(
                "sorting.cu", f"sort_merge_{sfx}", slices, self.ptr(values), self.ptr(indices),
                self.ptr(a), meta, ndim, slices, n, *steps, keys.ptr, positions.ptr,
            )  # fmt: skip
