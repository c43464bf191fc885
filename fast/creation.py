"""Creation kernels of the fast tier: allocate, arange, linspace.

Storage is a flat NumPy array, as in the reference tier, so ``from_numpy`` and
``.numpy()`` share memory with the user. Buffers come straight from
``np.empty``: aligning them to 64 bytes by hand measured slower per
allocation (about 5 us for reading the address through ``ctypes``) than the
unaligned loads it would save, which AVX-512 handles at almost full speed.
"""

from __future__ import annotations

import os

import numpy as np

from glasstorch._kernels import Strided

from ._glue import lib, view

# Optimization: NumPy's module defines __getattr__, so Python cannot cache a
# lookup such as ``np.empty``; every tensor's buffer comes from this one, bound once.
_empty = np.empty

#: How much freed memory, in MiB, the heap keeps for new tensors (see
#: fast/csrc/heap.c); ``GLASSTORCH_KEEP_FREED_MEMORY`` sets it, 0 turns it off.
KEEP_FREED_MEMORY_MIB = 256


def keep_freed_memory(setting: str | None = None) -> int:
    """Ask the C library's allocator to keep freed memory for reuse; returns the MiB kept.

    Speed trick (keeping freed memory): a training step frees and allocates
    the same megabytes of tensors over and over, and memory handed back to the
    operating system costs a page fault per 4 KiB when it is touched again
    (about a fifth of a GPT-mini step). ``heap.c`` explains the two glibc
    settings. Applied once, when the fast tier loads; ``setting`` (by default
    the environment variable) is a number of MiB, ``"0"`` to leave malloc as it is.
    """
    if setting is None:
        setting = os.environ.get("GLASSTORCH_KEEP_FREED_MEMORY", str(KEEP_FREED_MEMORY_MIB))
    try:
        mib = int(setting)
    except ValueError:
        raise ValueError(
            f"GLASSTORCH_KEEP_FREED_MEMORY must be a whole number of MiB (0 to turn it off), "
            f"got {setting!r}"
        ) from None
    if mib <= 0:
        return 0
    return mib if lib.gt_keep_freed_memory(mib << 20) else 0


KEPT_FREED_MEMORY_MIB = keep_freed_memory()


class CreationKernels:
    """allocate, arange, linspace."""

    def allocate(self, numel: int, dtype) -> np.ndarray:
        """A new flat buffer of ``numel`` elements of NumPy ``dtype`` (contents unspecified)."""
        return _empty(numel, dtype)

    def arange(self, out: Strided, start, step) -> None:
        """``out[i] = start + i * step`` as the contract has it: exact integers
        for an integer ``out``, PyTorch's vectorised double loop for a float one."""
        if out.buffer.dtype.kind == "f":
            status = lib.gt_arange_float(view(out), float(start), float(step))
        else:
            status = lib.gt_arange_int(view(out), start, step)
        if status:
            raise TypeError(f"arange does not support dtype {out.buffer.dtype}")

    def linspace(self, out: Strided, start: float, end: float) -> None:
        """Evenly spaced values from ``start`` to ``end``, both included."""
        if lib.gt_linspace(view(out), float(start), float(end)):
            raise TypeError(f"linspace does not support dtype {out.buffer.dtype}")
