"""Batched matrix multiplication in C: ``fast/csrc/gemm.c``.

The C routine is a BLIS-style GEMM: operands are packed into cache-sized blocks
(reading any strides, so transposed, sliced and broadcast operands need no
copy), and an MR x NR register-tiled micro-kernel does the arithmetic with
vector fused multiply-adds. float32 and float64 take that blocked path; small
products and the integer and bool dtypes use a direct loop. OpenMP splits the
batch, or the rows of one large product, across threads.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, refused, view

#: The C code of each ``triangle`` of causal_matmul (CAUSAL_* in gemm.c).
TRIANGLES = {"out": 0, "a": 1, "a_transposed": 2}


class LinalgKernels:
    """matmul and causal_matmul."""

    def matmul(self, out: Strided, a: Strided, b: Strided) -> None:
        """Batched ``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]`` (see the contract)."""
        lib.gt_matmul(view(out), view(a), view(b))

    def causal_matmul(self, out: Strided, a: Strided, b: Strided, triangle: str) -> None:
        """:meth:`matmul` without the terms a causal mask makes zero (see the contract)."""
        status = lib.gt_causal_matmul(view(out), view(a), view(b), TRIANGLES[triangle])
        if status == -2:
            raise MemoryError("causal_matmul could not allocate its packing buffer")
        if status:
            raise refused("causal_matmul", out, a, b)
