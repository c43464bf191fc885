"""CUDA streams and events (``torch.cuda.Stream``, ``torch.cuda.Event``), and the
calls that choose the stream work is queued on.

A stream is a queue of kernels and copies that run in order on the device; an
event is a marker in a stream. The runtime state behind them (the stream table
and each thread's current stream) lives in ``glasstorch._gpu.runtime``; this
module is the public face of it. See ``docs/guide/gpu.md``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from glasstorch._gpu import runtime as _runtime
from glasstorch._gpu import trace as _trace
from glasstorch.cuda._device import active_driver as _driver
from glasstorch.cuda._device import device_index as _index

__all__ = [
    "Event",
    "Stream",
    "StreamArgumentError",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
]


class StreamArgumentError(TypeError, AttributeError):
    """A stream or event argument of the wrong type (``set_stream("hello")``).

    PyTorch raises an AttributeError there (it reads the argument's
    ``stream_id``, which a string does not have); glasstorch checks the type
    and says what was expected. The error is both a TypeError, which is what
    it means, and an AttributeError, so code written for PyTorch catches it.
    """


def _check_argument(value, expected: type, what: str, allow_none: bool = False) -> None:
    """Refuse a stream or event argument of another type at once.

    Accepted as it was, a wrong value would be stored (as the current stream,
    say) and every later CUDA operation would fail with an AttributeError
    about it, far from the call that caused it.
    """
    if isinstance(value, expected) or (allow_none and value is None):
        return
    expected_name = f"torch.cuda.{expected.__name__}" + (" or None" if allow_none else "")
    raise StreamArgumentError(f"{what}: expected a {expected_name}, but got {type(value).__name__}")


class Stream:
    """A CUDA stream: a queue of kernels and copies that run in order on the device.

    Work on different streams may run at the same time. Use it as a context
    manager (``with torch.cuda.stream(s):``) to queue work on it.

    Args:
        device: the device (only ``cuda:0``).
        priority: accepted for PyTorch's sake (lower is higher priority); the
            simulator ignores it.
    """

    def __init__(
        self,
        device: Any = None,
        priority: int = 0,
        *,
        _handle: Any = None,
        _number: int | None = None,
    ) -> None:
        driver = _driver()
        _index(device)
        self.priority = priority
        if _handle is None:
            self.handle = driver.create_stream(priority)
            self.number = _runtime.register_stream(self.handle)
        else:
            self.handle, self.number = _handle, _number

    @property
    def device(self):
        """The stream's device (``cuda:0``)."""
        from glasstorch.tensor import device

        return device("cuda", 0)

    def synchronize(self) -> None:
        """Wait until all the work queued on this stream has run."""
        _driver().stream_synchronize(self.handle)

    def query(self) -> bool:
        """Whether all the work queued on this stream has run."""
        return _driver().stream_query(self.handle)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        _check_argument(event, Event, "Stream.wait_event()")
        _driver().stream_wait_event(self.handle, event.handle)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work queued on ``stream`` so far."""
        _check_argument(stream, Stream, "Stream.wait_stream()")
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream and return it."""
        _check_argument(event, Event, "Stream.record_event()", allow_none=True)
        event = Event() if event is None else event
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        self._previous = _runtime.current_stream()
        _runtime.set_current_stream(self)
        return self

    def __exit__(self, *exc) -> None:
        _runtime.set_current_stream(self._previous)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.number == self.number

    def __hash__(self) -> int:
        return hash(("cuda-stream", self.number))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:0 cuda_stream={self.number:#x}>"


_DEFAULT_STREAM: Stream | None = None


def default_stream(device: Any = None) -> Stream:
    """The device's default stream."""
    global _DEFAULT_STREAM
    if _DEFAULT_STREAM is None:
        driver = _driver()
        _index(device)
        handle = driver.default_stream()
        _runtime.stream_handles.setdefault(0, handle)
        _DEFAULT_STREAM = Stream(_handle=handle, _number=0)
    return _DEFAULT_STREAM


def current_stream(device: Any = None) -> Stream:
    """The stream this thread queues work on (the default stream unless changed)."""
    _driver()
    _index(device)
    return _runtime.current_stream()


def set_stream(stream_: Stream | None) -> None:
    """Make ``stream_`` this thread's current stream (nothing changes for None, as in PyTorch)."""
    _driver()
    _check_argument(stream_, Stream, "set_stream()", allow_none=True)
    if stream_ is not None:
        _runtime.set_current_stream(stream_)


@contextlib.contextmanager
def stream(stream_: Stream | None):
    """Queue the work of the ``with`` block on ``stream_`` (nothing changes for None)."""
    _check_argument(stream_, Stream, "stream()", allow_none=True)
    if stream_ is None:
        yield
        return
    previous = _runtime.current_stream()
    _runtime.set_current_stream(stream_)
    try:
        yield
    finally:
        _runtime.set_current_stream(previous)


class Event:
    """A CUDA event: a marker in a stream, complete once the stream's work before it ran.

    Args:
        enable_timing: whether :meth:`elapsed_time` may be used with it.
        blocking, interprocess: accepted for PyTorch's sake.
    """

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self.handle = _driver().create_event(enable_timing)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream if None)."""
        _check_argument(stream, Stream, "Event.record()", allow_none=True)
        stream = _runtime.current_stream() if stream is None else stream
        _driver().event_record(self.handle, stream.handle)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream``'s later work (the current stream's if None) wait for this event."""
        _check_argument(stream, Stream, "Event.wait()", allow_none=True)
        stream = _runtime.current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event's record has completed."""
        return _driver().event_query(self.handle)

    def synchronize(self) -> None:
        """Wait until the work before the event's record has completed."""
        _driver().event_synchronize(self.handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event`` (both recorded, timing enabled).

        Raises:
            RuntimeError: as PyTorch, when either event was created without
                ``enable_timing=True`` or has not been recorded.
        """
        _check_argument(end_event, Event, "Event.elapsed_time()")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        self.synchronize()
        end_event.synchronize()
        return _driver().event_elapsed_ms(self.handle, end_event.handle)

    def __repr__(self) -> str:
        return f"<torch.cuda.Event {id(self):#x}>"


# The runtime and the trace hooks make these public objects without importing this module.
_runtime.make_default_stream = default_stream
_trace.make_timing_event = lambda: Event(enable_timing=True)
