"""The CUDA runtime state of this process: the driver, the allocator, the current stream.

``driver`` is chosen once, when glasstorch is imported, from ``GLASSTORCH_CUDA``
(:func:`glasstorch._tier.select_driver` picks it, :func:`install` sets it); it
is None when CUDA is off, and then nothing else here is ever used. The caching
allocator and the stream table are made on first use.

Streams have two names: the driver's handle (what kernels are queued on) and a
small number (what the caching allocator files blocks under; 0 is the default
stream). :data:`stream_handles` maps one to the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

#: The active driver, or None when CUDA is off.
driver = None

#: Makes the default stream's public object (``glasstorch.cuda.default_stream``,
#: which registers itself here when imported: this package never imports the
#: public API built on it).
make_default_stream: Callable[[], Any] | None = None

#: Allocator stream number -> driver stream handle.
stream_handles: dict[int, Any] = {}

_allocator = None
_lock = threading.Lock()
_local = threading.local()  # .stream: this thread's current glasstorch.cuda.Stream


class _DriverDevice:
    """The driver as the caching allocator's ``Device`` (raw memory and events by stream number)."""

    def __init__(self, active_driver, index: int = 0) -> None:
        self.driver = active_driver
        self.index = index

    def raw_malloc(self, nbytes: int) -> int:
        return self.driver.malloc(nbytes)

    def raw_free(self, ptr: int) -> None:
        self.driver.free(ptr)

    def note_allocation(self, ptr: int, nbytes: int, stream: int) -> None:
        # The simulator's sanitizer learns each block's size, in the order of the
        # block's stream (kernels queued before still see the previous block there).
        note = getattr(self.driver, "note_allocation", None)
        if note is not None:
            note(ptr, nbytes, stream_handles[stream])

    def new_event(self) -> Any:
        return self.driver.create_event()

    def record_event(self, event: Any, stream: int) -> None:
        self.driver.event_record(event, stream_handles[stream])

    def query_event(self, event: Any) -> bool:
        return self.driver.event_query(event)

    def synchronize_event(self, event: Any) -> None:
        self.driver.event_synchronize(event)

    def total_memory(self) -> int:
        return self.driver.mem_get_info()[1]

    def free_memory(self) -> int:
        return self.driver.mem_get_info()[0]


def install(active_driver) -> None:
    """Make ``active_driver`` (a :class:`~glasstorch._gpu.driver.Driver`, or None) this
    process's driver; done once, by :mod:`glasstorch._tier`, at import."""
    global driver
    driver = active_driver


def require_driver():
    """The driver; raise PyTorch's error when CUDA is off."""
    if driver is None:
        raise AssertionError("Torch not compiled with CUDA enabled")
    return driver


def allocator():
    """The caching allocator of device 0, made on first use."""
    global _allocator
    if _allocator is None:
        with _lock:
            if _allocator is None:
                from glasstorch._gpu.allocator import CachingAllocator

                require_driver()
                stream_handles.setdefault(0, driver.default_stream())
                _allocator = CachingAllocator(_DriverDevice(driver))
    return _allocator


def register_stream(handle: Any) -> int:
    """Give a new driver stream its allocator number."""
    with _lock:
        stream_handles.setdefault(0, driver.default_stream())
        number = len(stream_handles)
        stream_handles[number] = handle
        return number


def current_stream():
    """This thread's current ``glasstorch.cuda.Stream`` (the default stream unless changed)."""
    stream = getattr(_local, "stream", None)
    if stream is None:
        stream = make_default_stream()
        _local.stream = stream
    return stream


def set_current_stream(stream) -> None:
    """Make ``stream`` this thread's current stream."""
    _local.stream = stream
