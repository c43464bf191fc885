"""Creation kernels: allocate, arange and linspace."""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided

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
        step = (end - start) / (n - 1) if n > 1 else 0.0
        if n == 1:
            out_mem[out.offset] = store(start)  # a single point is the start
            return
        for i, p in enumerate(positions(out)):
            # Count from whichever end is nearer, so both ends come out exact.
            value = start + i * step if i < n // 2 else end - (n - 1 - i) * step
            out_mem[p] = store(value)
