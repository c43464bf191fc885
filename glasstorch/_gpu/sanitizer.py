"""The CUDA simulator's sanitizer, as the frontend sees it: which checks, and what a report is.

The checks run in the simulator (``fast/cuda/simulator``: the runtime checks
every access of a kernel built with instrumentation); this module holds what
the frontend and the simulator share without importing each other: the
names of the checks, the parsing of ``GLASSTORCH_SIM_CHECK``, and the
exceptions, re-exported as ``glasstorch.cuda.SanitizerError`` and friends.
See docs/guide/gpu.md, "The sanitizer".
"""

from __future__ import annotations

#: The checks by name, as the bits the simulator's runtime uses (GT_SIM_* in
#: gt_cuda_sim_runtime.h).
CHECKS = {"memcheck": 1, "racecheck": 2, "synccheck": 4, "initcheck": 8}
ALL_CHECKS = 15


def check_mask(value: str | None, default: int) -> int:
    """The checks named by ``value`` as a mask of :data:`CHECKS`: ``"all"``, ``"off"``,
    or names joined by commas (``GLASSTORCH_SIM_CHECK``'s syntax); ``default`` when
    ``value`` is None or blank.

    Raises:
        ValueError: an unknown name.
    """
    if value is None or not value.strip():
        return default
    value = value.strip().lower()
    if value in ("all", "on", "1", "true"):
        return ALL_CHECKS
    if value in ("off", "none", "0", "false"):
        return 0
    mask = 0
    for name in value.split(","):
        name = name.strip()
        if name not in CHECKS:
            raise ValueError(
                f"unknown simulator check {name!r}: use all, off, or some of "
                f"{', '.join(CHECKS)} joined by commas (GLASSTORCH_SIM_CHECK)"
            )
        mask |= CHECKS[name]
    return mask


class SanitizerError(RuntimeError):
    """A bug the CUDA simulator found in a kernel, raised by the next synchronize.

    The message reads as compute-sanitizer's: the check, the access, the source
    line, the kernel, the thread and the block, and what was wrong. The same
    facts are attributes: ``check``, ``kernel``, ``file``, ``line``, ``thread``
    and ``block`` (tuples ``(x, y, z)``), None where unknown."""

    check: str | None = None
    kernel: str | None = None
    file: str | None = None
    line: int | None = None
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None


class MemcheckError(SanitizerError):
    """An invalid memory access: out of bounds, misaligned, in freed memory."""


class RacecheckError(SanitizerError):
    """A data hazard: two threads of a block touch a word between the same two barriers."""


class SynccheckError(SanitizerError):
    """A barrier misused: divergent ``__syncthreads``, a bad ``*_sync`` mask, a deadlock."""


class InitcheckError(SanitizerError):
    """A read of memory that nothing has written."""


class KernelFault(SanitizerError):
    """A kernel crashed (segmentation fault, division by zero, stack overflow); the
    process goes on. Raised with or without checks."""
