"""Random kernels of the fast tier: Philox 4x32-10 in C (``fast/csrc/random.c``).

(The module is not called ``random.py``: ``python fast/build.py`` puts ``fast/`` on
``sys.path``, where that name would shadow the standard library's ``random``.)

The C code draws exactly the blocks, words and formulas of
:mod:`glasstorch.reference.random`, so the same seed and offset give the same
bits in both tiers. Python only reduces the seed to its 64-bit two's
complement (as the reference does) and ``high - low`` of
:meth:`random_integers` to a 64-bit span.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, view

_MASK64 = (1 << 64) - 1


def _check(status: int, kernel: str, out: Strided) -> None:
    if status == -2:
        raise MemoryError(f"{kernel}: out of memory for a temporary buffer")
    if status:
        raise TypeError(f"{kernel} does not support dtype {out.buffer.dtype}")


class RandomKernels:
    """random_uniform, random_normal, random_integers, randperm."""

    def random_uniform(self, out: Strided, seed: int, offset: int, low: float, high: float) -> None:
        """Uniform numbers in ``[low, high)``; ``ceil(numel / 4)`` blocks."""
        status = lib.gt_random_uniform(view(out), seed & _MASK64, offset, low, high)
        _check(status, "random_uniform", out)

    def random_normal(self, out: Strided, seed: int, offset: int, mean: float, std: float) -> None:
        """Normal numbers by the Box-Muller transform; ``ceil(numel / 2)`` blocks."""
        status = lib.gt_random_normal(view(out), seed & _MASK64, offset, mean, std)
        _check(status, "random_normal", out)

    def random_integers(self, out: Strided, seed: int, offset: int, low: int, high: int) -> None:
        """Integers in ``[low, high)``; ``ceil(numel / 2)`` blocks.

        A span of exactly ``2**64`` is passed as 0, which C reads as "no modulo".
        """
        span = (high - low) & _MASK64
        status = lib.gt_random_integers(view(out), seed & _MASK64, offset, low, span)
        _check(status, "random_integers", out)

    def randperm(self, out: Strided, seed: int, offset: int) -> None:
        """A random permutation of ``0 .. n-1`` (Fisher-Yates); ``ceil(n / 2)`` blocks."""
        _check(lib.gt_randperm(view(out), seed & _MASK64, offset), "randperm", out)
