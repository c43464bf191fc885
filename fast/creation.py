"""Creation kernels of the fast tier: allocate, arange, linspace.

Storage is a flat NumPy array, as in the reference tier, so ``from_numpy`` and
``.numpy()`` share memory with the user. Buffers come straight from
``np.empty``: aligning them to 64 bytes by hand measured slower per
allocation (about 5 us for reading the address through ``ctypes``) than the
unaligned loads it would save, which AVX-512 handles at almost full speed.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided

from ._glue import lib, view


class CreationKernels:
    """allocate, arange, linspace."""

    def allocate(self, numel: int, dtype) -> np.ndarray:
        """A new flat buffer of ``numel`` elements of NumPy ``dtype`` (contents unspecified)."""
        return np.empty(numel, dtype=dtype)

    def arange(self, out: Strided, start, step) -> None:
        """``out[i] = start + i * step``, evaluated as Python would for these types.

        Two ints: exact integer arithmetic (wrapping in 64 bits). A float start
        and an int step: ``i * step`` exactly, then the float sum. Otherwise in double.
        """
        if isinstance(step, int) and isinstance(start, int):
            status = lib.gt_arange_int(view(out), start, step)
        elif isinstance(step, int):
            status = lib.gt_arange_float_int(view(out), start, step)
        else:
            status = lib.gt_arange_float(view(out), float(start), float(step))
        if status:
            raise TypeError(f"arange does not support dtype {out.buffer.dtype}")

    def linspace(self, out: Strided, start: float, end: float) -> None:
        """Evenly spaced values from ``start`` to ``end``, both included."""
        if lib.gt_linspace(view(out), float(start), float(end)):
            raise TypeError(f"linspace does not support dtype {out.buffer.dtype}")
