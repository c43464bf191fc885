"""Sorting kernel of the fast tier: one call into ``fast/csrc/sorting.c``."""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, refused, view


class SortingKernels:
    """sort, a stable merge sort per slice in C."""

    def sort(
        self, values: Strided, indices: Strided, a: Strided, dim: int, descending: bool
    ) -> None:
        """Stable sort of each slice of ``a`` along ``dim``, NaN as the largest."""
        if lib.gt_sort(view(values), view(indices), view(a), dim, descending):
            raise refused("sort", values, a)
