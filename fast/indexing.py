"""Indexing kernels of the fast tier: gather, scatter, index_select, index_put, nonzero.

Each method makes one call into ``fast/csrc/indexing.c``. The C loops check
every index as they read it (each is read once, into a local, and only that
local is used), so C reads and writes only inside the buffers even when
another thread writes the index tensor meanwhile. A bad index comes back
through an ``int64_t`` out-parameter and is returned, as the contract says.
Scatters stay deterministic on many threads: each thread owns whole fibers
along ``dim``, the only elements that can collide, and walks them in order.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import ffi, lib, refused, view


def _outcome(status: int, bad, kernel: str, *views: Strided) -> int | None:
    """The contract's result from a C status: None, or the out-of-range index."""
    if status == 0:
        return None
    if status == 1:
        return int(bad[0])
    raise refused(kernel, *views)


class IndexingKernels:
    """gather, scatter, index_select, index_put and nonzero, each one call into C."""

    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """``out[..., j, ...] = a[..., index[..., j, ...], ...]`` along ``dim``."""
        bad = ffi.new("int64_t *")
        status = lib.gt_gather(view(out), view(a), dim, view(index), bad)
        return _outcome(status, bad, "gather", out, a)

    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """``out[..., index[..., j, ...], ...] (+)= src[..., j, ...]``; the last write wins."""
        bad = ffi.new("int64_t *")
        status = lib.gt_scatter(view(out), dim, view(index), view(src), accumulate, bad)
        return _outcome(status, bad, "scatter", out, src)

    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """Slices of ``a`` along ``dim`` picked by the 1-D ``index``."""
        bad = ffi.new("int64_t *")
        status = lib.gt_index_select(view(out), view(a), dim, view(index), bad)
        return _outcome(status, bad, "index_select", out, a)

    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """``out[..., index[j], ...] (+)= src[..., j, ...]``; the last write wins."""
        bad = ffi.new("int64_t *")
        status = lib.gt_index_put(view(out), dim, view(index), view(src), accumulate, bad)
        return _outcome(status, bad, "index_put", out, src)

    def nonzero(self, out: Strided, a: Strided) -> None:
        """The row-major coordinates of every non-zero element of ``a``."""
        if lib.gt_nonzero(view(out), view(a)):
            raise refused("nonzero", a)
