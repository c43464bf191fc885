"""Indexing kernels of the fast tier: gather, scatter, index_select, index_put, nonzero.

Each method makes one call into ``fast/csrc/indexing.c``. The frontend has
checked every index, so C reads and writes only inside the buffers. Scatters
stay deterministic on many threads: each thread owns whole fibers along
``dim``, the only elements that can collide, and walks them in order.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, refused, view


class IndexingKernels:
    """gather, scatter, index_select, index_put and nonzero, each one call into C."""

    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> None:
        """``out[..., j, ...] = a[..., index[..., j, ...], ...]`` along ``dim``."""
        if lib.gt_gather(view(out), view(a), dim, view(index)):
            raise refused("gather", out, a)

    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> None:
        """``out[..., index[..., j, ...], ...] (+)= src[..., j, ...]``; the last write wins."""
        if lib.gt_scatter(view(out), dim, view(index), view(src), accumulate):
            raise refused("scatter", out, src)

    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> None:
        """Slices of ``a`` along ``dim`` picked by the 1-D ``index``."""
        if lib.gt_index_select(view(out), view(a), dim, view(index)):
            raise refused("index_select", out, a)

    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> None:
        """``out[..., index[j], ...] (+)= src[..., j, ...]``; the last write wins."""
        if lib.gt_index_put(view(out), dim, view(index), view(src), accumulate):
            raise refused("index_put", out, src)

    def nonzero(self, out: Strided, a: Strided) -> None:
        """The row-major coordinates of every non-zero element of ``a``."""
        if lib.gt_nonzero(view(out), view(a)):
            raise refused("nonzero", a)
