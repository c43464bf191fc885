"""Batched matrix multiplication: the textbook triple loop, once per batch entry."""

from __future__ import annotations

from glasstorch._kernels import Strided

from .elementwise import _fsum
from .strided import converter, index_to_position, is_floating, memory, row_major_indices


class LinalgKernels:
    """matmul and causal_matmul."""

    def matmul(self, out: Strided, a: Strided, b: Strided) -> None:
        # -- solution: kernels/matmul
        store = converter(out.buffer.dtype)
        floating = is_floating(out.buffer.dtype)
        out_mem, a_mem, b_mem = memory(out), memory(a), memory(b)
        m, n = out.shape[-2], out.shape[-1]
        k_size = a.shape[-1]
        a_row, a_col = a.strides[-2], a.strides[-1]
        b_row, b_col = b.strides[-2], b.strides[-1]
        o_row, o_col = out.strides[-2], out.strides[-1]
        for batch in row_major_indices(out.shape[:-2]):
            # Where this batch entry's three matrices start in their buffers.
            a0 = index_to_position(batch, a.strides[:-2], a.offset)
            b0 = index_to_position(batch, b.strides[:-2], b.offset)
            o0 = index_to_position(batch, out.strides[:-2], out.offset)
            for i in range(m):
                for j in range(n):
                    products = [
                        a_mem[a0 + i * a_row + k * a_col] * b_mem[b0 + k * b_row + j * b_col]
                        for k in range(k_size)
                    ]
                    total = _fsum(products) if floating else sum(products)
                    out_mem[o0 + i * o_row + j * o_col] = store(total)
        # -- end solution

    def causal_matmul(self, out: Strided, a: Strided, b: Strided, triangle: str) -> None:
        store = converter(out.buffer.dtype)
        out_mem, a_mem, b_mem = memory(out), memory(a), memory(b)
        m, n = out.shape[-2], out.shape[-1]
        k_size = a.shape[-1]
        a_row, a_col = a.strides[-2], a.strides[-1]
        b_row, b_col = b.strides[-2], b.strides[-1]
        o_row, o_col = out.strides[-2], out.strides[-1]
        for batch in row_major_indices(out.shape[:-2]):
            a0 = index_to_position(batch, a.strides[:-2], a.offset)
            b0 = index_to_position(batch, b.strides[:-2], b.offset)
            o0 = index_to_position(batch, out.strides[:-2], out.offset)
            for i in range(m):
                # The positions k whose a[i, k] the mask can leave non-zero.
                if triangle == "a":
                    ks = range(min(i + 1, k_size))
                elif triangle == "a_transposed":
                    ks = range(i, k_size)
                else:
                    ks = range(k_size)
                for j in range(n):
                    if triangle == "out" and j > i:
                        out_mem[o0 + i * o_row + j * o_col] = store(0.0)  # masked: not computed
                        continue
                    products = [
                        a_mem[a0 + i * a_row + k * a_col] * b_mem[b0 + k * b_row + j * b_col]
                        for k in ks
                    ]
                    out_mem[o0 + i * o_row + j * o_col] = store(_fsum(products))
