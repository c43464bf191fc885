"""Random kernels of the CUDA tier: Philox 4x32-10 on the device (``fast/cuda/random.cu``).

The device code includes ``fast/cuda/gt_philox.cuh``, the generator the fast CPU
tier's ``random.c`` includes too, so the same seed and offset give the same numbers on
the CPU and on the device. Python reduces the seed to 64 bits, as the CPU tiers
do, and works out the clamp bound of :meth:`random_uniform` once per call.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import walk

_MASK64 = (1 << 64) - 1


def _below(high: float, dtype: np.dtype) -> float:
    """The largest number of float ``dtype`` strictly below ``high``."""
    rounded = dtype.type(high)
    if float(rounded) < high:
        return float(rounded)
    return float(np.nextafter(rounded, dtype.type(-np.inf)))


class RandomKernels:
    """random_uniform, random_normal, random_integers, randperm."""

    def random_uniform(self, out: Strided, seed: int, offset: int, low: float, high: float) -> None:
        """Uniform numbers in ``[low, high)``; ``ceil(numel / 4)`` blocks."""
        n = numel(out.shape)
        dtype = out.buffer.dtype
        below, clamp = 0.0, 0
        if dtype.kind == "f":
            below = _below(high, dtype)
            clamp = int(not below < low)
        meta, ndim = walk(self, out)
        self.launch(
            "random.cu", f"random_uniform_{self.suffix(out)}", (n + 3) // 4,
            self.ptr(out), meta, ndim, n, seed & _MASK64, offset, float(low), float(high),
            below, clamp,
        )  # fmt: skip

    def random_normal(self, out: Strided, seed: int, offset: int, mean: float, std: float) -> None:
        """Normal numbers by the Box-Muller transform; ``ceil(numel / 2)`` blocks."""
        n = numel(out.shape)
        meta, ndim = walk(self, out)
        self.launch(
            "random.cu", f"random_normal_{self.suffix(out)}", (n + 1) // 2,
            self.ptr(out), meta, ndim, n, seed & _MASK64, offset, float(mean), float(std),
        )  # fmt: skip

    def random_integers(self, out: Strided, seed: int, offset: int, low: int, high: int) -> None:
        """Integers in ``[low, high)``; ``ceil(numel / 2)`` blocks (a span of 2**64 passes as 0)."""
        n = numel(out.shape)
        meta, ndim = walk(self, out)
        self.launch(
            "random.cu", f"random_integers_{self.suffix(out)}", (n + 1) // 2,
            self.ptr(out), meta, ndim, n, seed & _MASK64, offset, int(low),
            (high - low) & _MASK64,
        )  # fmt: skip

    def randperm(self, out: Strided, seed: int, offset: int) -> None:
        """A random permutation of ``0 .. n-1`` (Fisher-Yates); ``ceil(n / 2)`` blocks.

        The draws run in parallel into a scratch buffer; the swaps, which
        depend on each other, run on one device thread.
        """
        n = out.shape[0]
        if n == 0:
            return
        picks = self.scratch_int64(max(n - 1, 1))
        self.launch("random.cu", "randperm_picks_i64", n // 2, picks.ptr, n, seed & _MASK64, offset)
        self.launch_grid(
            "random.cu", "randperm_swaps_i64", 1, 1, self.ptr(out), out.strides[0], picks.ptr, n
        )
