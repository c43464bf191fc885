"""Creation kernels of the fast tier: allocate, arange, linspace.

Storage is a flat NumPy array, as in the reference tier, so ``from_numpy`` and
``.numpy()`` share memory with the user. Large buffers start on a 64-byte
boundary: that is one cache line and one AVX-512 register, so a vectorised
loop never has a load or store straddling two lines.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided

from ._glue import lib, view

#: Buffers of at least this many bytes are cache-line aligned; smaller ones
#: skip the extra work (it would cost more than it saves).
ALIGNED_BYTES = 4096
ALIGNMENT = 64


def aligned_empty(numel: int, dtype) -> np.ndarray:
    """A new 1-D array of ``numel`` elements whose data starts on a 64-byte boundary.

    Over-allocate by one alignment's worth of bytes, then view the array from
    the first aligned address (the view keeps the raw block alive).
    """
    dtype = np.dtype(dtype)
    nbytes = numel * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + nbytes].view(dtype)


class CreationKernels:
    """allocate, arange, linspace."""

    def allocate(self, numel: int, dtype) -> np.ndarray:
        """A new flat buffer of ``numel`` elements of NumPy ``dtype`` (contents unspecified)."""
        if numel * np.dtype(dtype).itemsize < ALIGNED_BYTES:
            return np.empty(numel, dtype=dtype)
        return aligned_empty(numel, dtype)

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
