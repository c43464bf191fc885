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
        for i, p in enumerate(positions(out)):
            out_mem[p] = store(start + i * step)

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
