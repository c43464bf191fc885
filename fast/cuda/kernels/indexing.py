"""Indexing kernels of the CUDA tier: gather, scatter, index_select, index_put, nonzero
(``fast/cuda/indexing.cu``).

Every index is checked on the device as it is read; the first bad one (by
position in the kernel's work) is written to a small device report, which the
mixin reads back (a device-to-host copy, so it waits for the device) to return
it as the contract says.

The kernels walk one operand directly over the *iteration shape* (out for the
gathers, src for the scatters) and address the other through the index; the
helpers here describe the three operands over that shape.
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import without_dim

#: Dtypes whose scatter_add uses the hardware's atomic add (the others use fibers).
_ATOMIC_ADD = frozenset({"i32", "i64", "f32", "f64"})

#: Threads that share nonzero's element range (each takes a contiguous chunk).
_NONZERO_WORKERS = 4096


def _at(values: tuple[int, ...], d: int) -> int:
    """``values[d]``, or 0 past the end (a 0-d operand facing a 1-D walk)."""
    return values[d] if d < len(values) else 0


def _operands(direct: Strided, indirect: Strided, index_strides: tuple[int, ...], dim: int):
    """The three views over the iteration shape (direct's, at least 1-D), and the
    indirect operand's stride and size along ``dim``."""
    shape = direct.shape or (1,)
    nd = len(shape)
    direct_view = direct._replace(shape=shape, strides=direct.strides or (0,))
    indirect_strides = tuple(0 if d == dim else _at(indirect.strides, d) for d in range(nd))
    indirect_view = indirect._replace(shape=shape, strides=indirect_strides)
    index_view = direct._replace(
        shape=shape, strides=tuple(_at(index_strides, d) for d in range(nd))
    )
    dim_stride = _at(indirect.strides, dim)
    limit = indirect.shape[dim] if dim < len(indirect.shape) else 1
    return direct_view, indirect_view, index_view, dim_stride, limit


def _select_strides(ndim: int, dim: int, index: Strided) -> tuple[int, ...]:
    """index_select's 1-D index as strides over the walk: it moves along ``dim`` only."""
    strides = [0] * max(ndim, 1)
    strides[dim] = index.strides[0] if index.shape else 0
    return tuple(strides)


class IndexingKernels:
    """gather, scatter, index_select, index_put and nonzero."""

    def _report(self) -> object:
        return self.scratch_int64(2)

    def _outcome(self, report) -> int | None:
        position, value = self.read_int64(report)
        return None if position == self.SENTINEL else value

    def _gather(self, out: Strided, a: Strided, dim: int, index: Strided, strides) -> int | None:
        n = numel(out.shape)
        if n == 0:
            return None
        direct, indirect, idx, dim_stride, limit = _operands(out, a, strides, dim)
        report = self._report()
        self.launch(
            "indexing.cu", f"gather_{self.suffix(out)}", n, self.ptr(out), self.ptr(a),
            self.ptr(index), self.meta(direct, indirect, idx), len(direct.shape), n, dim_stride,
            limit, report.ptr,
        )  # fmt: skip
        return self._outcome(report)

    def _scatter(self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool,
                 strides) -> int | None:  # fmt: skip
        n = numel(src.shape)
        if n == 0:
            return None
        direct, indirect, idx, dim_stride, limit = _operands(src, out, strides, dim)
        sfx = self.suffix(out)
        report = self._report()
        if accumulate and sfx in _ATOMIC_ADD:
            self.launch(
                "indexing.cu", f"scatter_add_atomic_{sfx}", n, self.ptr(out), self.ptr(src),
                self.ptr(index), self.meta(direct, indirect, idx), len(direct.shape), n,
                dim_stride, limit, report.ptr,
            )  # fmt: skip
        else:
            length = direct.shape[dim]
            fibers = n // length
            starts = [without_dim(v, dim) for v in (direct, indirect, idx)]
            ndim = len(starts[0].shape)
            meta = self.meta(*starts) if ndim else 0
            self.launch(
                "indexing.cu", f"scatter_fiber_{sfx}", fibers, self.ptr(out), self.ptr(src),
                self.ptr(index), meta, ndim, fibers, length, direct.strides[dim],
                idx.strides[dim], dim_stride, limit, int(bool(accumulate)), report.ptr,
            )  # fmt: skip
        return self._outcome(report)

    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """``out[..., j, ...] = a[..., index[..., j, ...], ...]`` along ``dim``."""
        return self._gather(out, a, dim, index, index.strides)

    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """``out[..., index[..., j, ...], ...] (+)= src[..., j, ...]``; the last write wins."""
        return self._scatter(out, dim, index, src, accumulate, index.strides)

    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """Slices of ``a`` along ``dim`` picked by the 1-D ``index``."""
        return self._gather(out, a, dim, index, _select_strides(len(out.shape), dim, index))

    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """``out[..., index[j], ...] (+)= src[..., j, ...]``; the last write wins."""
        strides = _select_strides(len(src.shape), dim, index)
        return self._scatter(out, dim, index, src, accumulate, strides)

    def nonzero(self, out: Strided, a: Strided) -> None:
        """The row-major coordinates of every non-zero element of ``a``.

        Three launches (count per chunk, prefix sum, write), so the rows come
        out in row-major order with no atomics.
        """
        n = numel(a.shape)
        if n == 0 or not a.shape or out.shape[0] == 0:
            return  # no rows, or rows of no coordinates (a 0-d ``a``)
        workers = min(n, _NONZERO_WORKERS)
        chunk = -(-n // workers)
        workers = -(-n // chunk)
        sfx = self.suffix(a)
        counts = self.scratch_int64(workers)
        ndim = len(a.shape)
        grid, block = -(-workers // 256), 256
        self.launch_grid(
            "indexing.cu", f"nonzero_count_{sfx}", grid, block, self.ptr(a), self.meta(a), ndim,
            n, chunk, counts.ptr, workers,
        )  # fmt: skip
        self.launch_grid("indexing.cu", "nonzero_scan", 1, 1, counts.ptr, workers)
        col_step = out.strides[1] if len(out.shape) > 1 else 0
        self.launch_grid(
            "indexing.cu", f"nonzero_write_{sfx}", grid, block, self.ptr(out), out.strides[0],
            col_step, self.ptr(a), self.meta(a), ndim, n, chunk, counts.ptr, workers,
        )  # fmt: skip
