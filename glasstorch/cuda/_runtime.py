"""The CUDA runtime state of this process: the driver, the allocator, the current stream.

``driver`` is chosen once, when glasstorch is imported, from ``GLASSTORCH_CUDA``
(see :func:`glasstorch.cuda._driver.select_driver`); it is None when CUDA is
off, and then nothing else here is ever used. The caching allocator and the
stream table are made on first use.

Streams have two names: the driver's handle (what kernels are queued on) and a
small number (what the caching allocator files blocks under; 0 is the default
stream). :data:`stream_handles` maps one to the other.
"""

from __future__ import annotations

import threading
from typing import Any

from glasstorch.cuda._driver import select_driver

#: The active driver, or None when CUDA is off.
driver = select_driver()

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
                from glasstorch.cuda._allocator import CachingAllocator

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
        from glasstorch.cuda import default_stream

        stream = default_stream()
        _local.stream = stream
    return stream


def set_current_stream(stream) -> None:
    """Make ``stream`` this thread's current stream."""
    _local.stream = stream
