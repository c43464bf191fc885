"""CUDA memory: the caching allocator's statistics and controls, with PyTorch's API
(``memory_allocated``, ``memory_stats``, ``empty_cache``, ``mem_get_info``, ...).

The allocator itself lives in ``glasstorch._gpu.allocator``; this module asks it.
Without CUDA the statistics are 0 (or empty), as in PyTorch, and the calls
that need a device raise PyTorch's ``AssertionError``.
"""

from __future__ import annotations

from typing import Any

from glasstorch._gpu import buffers as _buffers
from glasstorch._gpu import runtime as _runtime
from glasstorch._gpu.allocator import OutOfMemoryError
from glasstorch.cuda._device import active_driver as _driver

__all__ = [
    "OutOfMemoryError",
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]


def _allocator():
    _driver()
    return _runtime.allocator()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors now (rounded block sizes): ``allocated_bytes.all.current``."""
    return _allocator().memory_allocated() if _runtime.driver is not None else 0


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` since the start or the last reset."""
    return _allocator().max_memory_allocated() if _runtime.driver is not None else 0


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds from the device: ``reserved_bytes.all.current``."""
    return _allocator().memory_reserved() if _runtime.driver is not None else 0


def max_memory_reserved(device: Any = None) -> int:
    """The peak of :func:`memory_reserved` since the start or the last reset."""
    return _allocator().max_memory_reserved() if _runtime.driver is not None else 0


def reset_peak_memory_stats(device: Any = None) -> None:
    """Set every ``peak`` statistic to its current value."""
    _allocator().reset_peak_memory_stats()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Zero the ``allocated``/``freed`` totals and the counters (``num_alloc_retries``, ...)."""
    _allocator().reset_accumulated_memory_stats()


def reset_max_memory_allocated(device: Any = None) -> None:
    """Reset the peak of :func:`memory_allocated` (PyTorch's older name)."""
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Give every whole cached segment back to the device (tensors alive keep theirs)."""
    if _runtime.driver is not None:
        with _buffers._guard:
            _runtime.allocator().empty_cache()


def memory_stats(device: Any = None) -> dict[str, int]:
    """The caching allocator's statistics, with PyTorch's key names
    (``allocated_bytes.all.current``, ``num_device_alloc``, ...); empty without CUDA."""
    return _allocator().memory_stats() if _runtime.driver is not None else {}


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """The statistics of :func:`memory_stats` as a table."""
    return _allocator().memory_summary()


def memory_snapshot() -> list[dict[str, Any]]:
    """Every segment with its blocks (``active_allocated``, ``inactive``, ...)."""
    return _allocator().memory_snapshot()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free bytes, total bytes) of the device, as ``cudaMemGetInfo``."""
    return _driver().mem_get_info()
