"""Creation kernels: allocate, arange and linspace."""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided

from .moments import fma, rounder
from .strided import converter, memory, positions


class CreationKernels:
    """allocate, arange, linspace."""

    def allocate(self, numel: int, dtype) -> np.ndarray:
        # NumPy is only the buffer: a flat block of memory that from_numpy and
        # .numpy() can share with the user at no cost.
        return np.empty(numel, dtype=dtype)

    def arange(self, out: Strided, start, step) -> None:
        store, out_mem = converter(out.buffer.dtype), memory(out)
        if out.buffer.dtype.kind != "f":
            # Integers: Python's exact arithmetic, then stored (wrapping).
            for i, p in enumerate(positions(out)):
                out_mem[p] = store(start + i * step)
            return
        # Floats: PyTorch's vectorised loop, in double. A vector holds 256 bits
        # (8 float32 or 4 float64 lanes) and the loop takes two vectors at a
        # time; each vector's first value is rounded to the output dtype and
        # its lanes step on from there. Values after the last pair of vectors
        # are counted from start.
        start, step = float(start), float(step)
        round_base = rounder(out.buffer.dtype.name)
        lanes = 32 // out.buffer.dtype.itemsize
        n = out.shape[0]
        in_blocks = n - n % (2 * lanes)
        for i, p in enumerate(positions(out)):
            if i < in_blocks:
                first = i - i % lanes  # the first index of i's vector
                base = round_base(fma(step, float(first), start))
                value = fma(float(i - first), step, base)
            else:
                value = fma(step, float(i), start)
            out_mem[p] = store(value)

    def linspace(self, out: Strided, start: float, end: float) -> None:
        store, out_mem = converter(out.buffer.dtype), memory(out)
        n = out.shape[0]
        if n == 1:
            out_mem[out.offset] = store(start)  # a single point is the start
            return
        # PyTorch's arithmetic: float32 for a float32 output, double otherwise
        # (an integer output truncates the double values).
        round_ = rounder(out.buffer.dtype.name)
        start, end = round_(start), round_(end)
        step = round_(round_(end - start) / round_(float(n - 1)))
        for i, p in enumerate(positions(out)):
            # The first half counts up from start, the second half down from end,
            # so both ends are exact; each value is one fused multiply-add.
            if i < n // 2:
                value = fma(step, round_(float(i)), start, round_)
            else:
                value = fma(-step, round_(float(n - 1 - i)), end, round_)
            out_mem[p] = store(value)
