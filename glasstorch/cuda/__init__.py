"""``glasstorch.cuda``: the GPU, its streams, events and memory, with PyTorch's API.

Which GPU runtime runs is chosen once, at import, by ``GLASSTORCH_CUDA``:

* ``auto`` (the default): a real NVIDIA GPU through CuPy if there is one,
  otherwise no CUDA at all (``is_available()`` is False, as in PyTorch on
  such a machine, and a program written as PyTorch's tutorials write it,
  ``device = "cuda" if torch.cuda.is_available() else "cpu"``, runs on the CPU);
* ``cupy``: the GPU through CuPy (an error says what to do if there is none);
* ``simulator``: the CUDA simulator, which runs the same ``.cu`` kernels on
  the CPU with CUDA's execution model (``get_device_name()`` says so);
* ``off``: no CUDA.

Without CUDA, seeding calls are accepted and do nothing (as PyTorch's are),
queries answer truthfully that there is no device, and calls that need a
device raise PyTorch's ``AssertionError``. See ``docs/guide/gpu.md``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from glasstorch._gpu import buffers as _buffers
from glasstorch._gpu import runtime as _runtime
from glasstorch._gpu import trace as _trace
from glasstorch._gpu.allocator import OutOfMemoryError

__all__ = [
    "Event",
    "OutOfMemoryError",
    "RawKernel",
    "RawModule",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
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
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]

_NO_CUDA = "Torch not compiled with CUDA enabled"


def _driver():
    """The active driver; PyTorch's AssertionError when CUDA is off."""
    if _runtime.driver is None:
        raise AssertionError(_NO_CUDA)
    return _runtime.driver


# ------------------------------------------------------------------ the device


def is_available() -> bool:
    """Whether a CUDA device can be used (a GPU through CuPy, or the simulator)."""
    return _runtime.driver is not None


def device_count() -> int:
    """How many CUDA devices there are (0 without CUDA; glasstorch drives at most one)."""
    return 0 if _runtime.driver is None else min(1, _runtime.driver.device_count())


def is_initialized() -> bool:
    """Whether the CUDA runtime has started (its allocator exists)."""
    return _runtime._allocator is not None


def _index(device: Any) -> int:
    """The device index that ``device`` (None, an int, a string, a device) names; only 0 exists."""
    from glasstorch.tensor import device as device_type

    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        parsed = device_type(device)
        if parsed.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {parsed}")
        index = 0 if parsed.index is None else parsed.index
    if not 0 <= index < device_count():
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (device {index}; glasstorch drives one "
            "CUDA device, cuda:0)"
        )
    return index


def current_device() -> int:
    """The index of the current CUDA device: 0."""
    _driver()
    return 0


def set_device(device: Any) -> None:
    """Make ``device`` current; only ``cuda:0`` exists (another index raises)."""
    _driver()
    _index(device)


def get_device_name(device: Any = None) -> str:
    """The device's name (the simulator's is ``"glasstorch CUDA simulator"``)."""
    return _driver().device_name(_index(device))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The compute capability ``(major, minor)``."""
    driver = _driver()
    _index(device)
    return driver.capability()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether tensors on the device can compute in bfloat16: False in glasstorch.

    ``glasstorch.bfloat16`` is a name only (programs mention it; no kernel computes
    in it), so programs that choose their dtype with this call, as nanoGPT does,
    pick float32. On a PyTorch GPU of compute capability 8.0 or later it is True.

    Args:
        including_emulation: accepted for PyTorch's signature; it changes nothing.
    """
    _driver()
    return False


class _DeviceProperties:
    """What ``get_device_properties`` returns: name, total_memory, major, minor, ..."""

    def __init__(self, driver) -> None:
        self.name = driver.device_name(0)
        self.total_memory = driver.mem_get_info()[1]
        self.major, self.minor = driver.capability()
        self.multi_processor_count = driver.multi_processor_count()

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device: Any = None) -> _DeviceProperties:
    """The device's properties: ``name``, ``total_memory`` (bytes), ``major``, ``minor``,
    ``multi_processor_count``."""
    driver = _driver()
    _index(device)
    return _DeviceProperties(driver)


def synchronize(device: Any = None) -> None:
    """Wait until every stream of the device has finished its queued work."""
    _driver().synchronize()


def manual_seed(seed: int) -> None:
    """Seed the CUDA generator.

    glasstorch's random kernels draw from one Philox generator (the CPU's
    ``torch.manual_seed``) on every device, so this seeds that generator when
    CUDA is active, and does nothing without CUDA (as PyTorch's does).
    """
    seed = int(seed)
    if _runtime.driver is not None:
        from glasstorch.random import manual_seed as seed_all

        seed_all(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator (see :func:`manual_seed`)."""
    manual_seed(seed)


# --------------------------------------------------------- streams and events


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


# --------------------------------------------------------------------- memory


def _allocator():
    _driver()
    return _runtime.allocator()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors now (rounded block sizes): ``allocated_bytes.all.current``."""
    return _allocator().memory_allocated() if is_available() else 0


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` since the start or the last reset."""
    return _allocator().max_memory_allocated() if is_available() else 0


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds from the device: ``reserved_bytes.all.current``."""
    return _allocator().memory_reserved() if is_available() else 0


def max_memory_reserved(device: Any = None) -> int:
    """The peak of :func:`memory_reserved` since the start or the last reset."""
    return _allocator().max_memory_reserved() if is_available() else 0


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
    if is_available():
        with _buffers._guard:
            _runtime.allocator().empty_cache()


def memory_stats(device: Any = None) -> dict[str, int]:
    """The caching allocator's statistics, with PyTorch's key names
    (``allocated_bytes.all.current``, ``num_device_alloc``, ...); empty without CUDA."""
    return _allocator().memory_stats() if is_available() else {}


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """The statistics of :func:`memory_stats` as a table."""
    return _allocator().memory_summary()


def memory_snapshot() -> list[dict[str, Any]]:
    """Every segment with its blocks (``active_allocated``, ``inactive``, ...)."""
    return _allocator().memory_snapshot()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free bytes, total bytes) of the device, as ``cudaMemGetInfo``."""
    return _driver().mem_get_info()


def __getattr__(name: str):
    # RawKernel and RawModule (CuPy's API for your own kernels) live in
    # raw_kernels, which needs the Tensor class: imported when first asked for.
    if name in ("RawKernel", "RawModule"):
        from glasstorch.cuda import raw_kernels

        return getattr(raw_kernels, name)
    raise AttributeError(f"module 'glasstorch.cuda' has no attribute {name!r}")
