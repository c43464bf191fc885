"""matmul on the device: ``fast/cuda/matmul.cu``'s shared-memory tiled kernel
(on a real GPU the cupy driver may use cuBLAS instead, see ``matmul_blas``)."""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._shape import numel

TILE = 16  # GT_TILE in matmul.cu


class LinalgKernels:
    """matmul and causal_matmul on the device."""

    def causal_matmul(self, out: Strided, a: Strided, b: Strided, triangle: str) -> None:
        """The contract's causal_matmul composed on the host from :meth:`matmul`: the
        whole product (its skipped terms are zeros of ``a``), then for ``"out"`` each
        row's part above the diagonal filled with zeros, one strided row-tail view
        per row. It skips no work: the CPU tier's C kernel is the fast one."""
        self.matmul(out, a, b)
        if triangle != "out":
            return
        m, n = out.shape[-2], out.shape[-1]
        row_stride, column_stride = out.strides[-2], out.strides[-1]
        batch_shape, batch_strides = out.shape[:-2], out.strides[:-2]
        for i in range(min(m, n - 1)):
            tail = Strided(
                out.buffer,
                (*batch_shape, n - i - 1),
                (*batch_strides, column_stride),
                out.offset + i * row_stride + (i + 1) * column_stride,
            )
            self.fill(tail, 0)

    def matmul(self, out: Strided, a: Strided, b: Strided) -> None:
        """Batched ``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]``."""
        m, n = out.shape[-2], out.shape[-1]
        k = a.shape[-1]
        batch_shape = out.shape[:-2]
        batch = numel(batch_shape)
        if m == 0 or n == 0 or batch == 0:
            return
        if k == 0:
            self.fill(out, 0)
            return
        blas = getattr(self.driver, "matmul_blas", None)
        if blas is not None and blas(self, out, a, b):
            return  # cuBLAS did it (cupy driver, float32/float64)
        meta = 0
        if batch_shape:
            nb = len(batch_shape)
            meta = self.meta(
                Strided(out.buffer, batch_shape, out.strides[:-2], out.offset),
                Strided(a.buffer, batch_shape, a.strides[:nb], a.offset),
                Strided(b.buffer, batch_shape, b.strides[:nb], b.offset),
            )
        grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, min(batch, 65535))
        self.launch_grid(
            "matmul.cu",
            f"matmul_{self.suffix(out)}",
            grid,
            (TILE, TILE),
            self.ptr(out),
            self.ptr(a),
            self.ptr(b),
            m,
            n,
            k,
            out.strides[-2],
            out.strides[-1],
            a.strides[-2],
            a.strides[-1],
            b.strides[-2],
            b.strides[-1],
            meta,
            len(batch_shape),
            batch,
        )
