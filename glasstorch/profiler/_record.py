"""Recording a profile: host spans, device work, and the clock that joins them.

While a profile records, one :class:`Recorder` is installed as
``glasstorch.autograd.function.profiler_hook``. Every operation passes through
``Function.apply`` and every backward node through ``BackwardNode.apply``; each
sees the hook and runs inside a :class:`Span`: the host time from entering the
operation to leaving it. Spans nest: an operation that runs others inside it
(a loss computed from several operations, ``record_function`` blocks around a
model) is their *parent*, which gives the profile its self and total times.

Device work is seen through ``glasstorch._gpu.trace.observers``: the CUDA
driver reports every kernel launch and memory copy with two events it recorded
on the stream just before and just after the work. The host does not wait for
the work, so at that moment only the launch is known; the events are read when
the profile stops, after a synchronize. Event times are *relative* (the
milliseconds between two events), so :class:`DeviceClock` records one
reference event at the start of the profile, right after a synchronize, notes
the host time when it completed, and turns each event into a host time as
``reference host time + reference.elapsed_time(event)``. On one time axis the
trace then shows what the paper's section 6.1 describes: the host queues
kernels and runs ahead, the device runs them later.
"""

from __future__ import annotations

import enum
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from glasstorch.autograd import function as _function
from glasstorch.profiler._names import operation_name

_now_ns = time.perf_counter_ns


class DeviceType(enum.Enum):
    """Where an event ran: on the host (``CPU``) or on a GPU (``CUDA``)."""

    CPU = 0
    CUDA = 1


class Span:
    """One timed stretch of host work: an operation, a backward node, a user's block.

    A span is its own context manager: entering notes the start time and makes
    it the current span of its thread, leaving notes the end time.

    Attributes:
        id: a number unique within the profile (PyTorch's "External id").
        name: ``"aten::add"``, ``"MulBackward0"``, a ``record_function`` name, ...
        category: ``"cpu_op"``, ``"user_annotation"`` or ``"cuda_runtime"``
            (the Chrome trace's ``cat``).
        thread: the native id of the thread that ran it.
        start_ns, end_ns: ``time.perf_counter_ns()`` at entry and exit.
        parent: the span this one ran inside, or None for a top-level span.
        input_shapes: with ``record_shapes``, one shape per argument (``[]``
            for arguments that are not tensors); else None.
    """

    __slots__ = (
        "recorder",
        "id",
        "name",
        "category",
        "thread",
        "start_ns",
        "end_ns",
        "parent",
        "input_shapes",
    )

    def __init__(
        self,
        recorder: Recorder,
        name: str,
        category: str,
        input_shapes: list | None = None,
    ) -> None:
        self.recorder = recorder
        self.id = next(recorder.ids)
        self.name = name
        self.category = category
        self.input_shapes = input_shapes
        self.thread = 0
        self.start_ns = self.end_ns = None
        self.parent = None

    def __enter__(self) -> Span:
        recorder = self.recorder
        stack = recorder.stack()
        self.parent = stack[-1] if stack else None
        self.thread = recorder.local.thread
        stack.append(self)
        recorder.spans.append(self)
        self.start_ns = _now_ns()
        return self

    def __exit__(self, *exc_info) -> None:
        self.end_ns = _now_ns()
        stack = self.recorder.stack()
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:  # closed out of order (a generator, a stray exit): still unwind
            stack.remove(self)


class DeviceWork:
    """One kernel or memory copy that the driver queued while the profile recorded.

    Attributes:
        id: the correlation id, shared with the launch's runtime span.
        kind: ``"kernel"`` or ``"memcpy"``.
        name: the kernel's name, or ``"Memcpy HtoD"`` and friends.
        stream: the ``glasstorch.cuda.Stream`` it was queued on.
        start_event, end_event: events recorded just before and after it.
        launch: the ``cuda_runtime`` span marking when the host saw the launch.
        launcher: the operation span the launch happened in (None outside any).
        start_ns, end_ns: host times of the device work, once resolved at stop.
    """

    __slots__ = (
        "id",
        "kind",
        "name",
        "stream",
        "start_event",
        "end_event",
        "launch",
        "launcher",
        "start_ns",
        "end_ns",
    )

    def __init__(self, id, kind, name, stream, start_event, end_event, launch, launcher):
        self.id = id
        self.kind = kind
        self.name = name
        self.stream = stream
        self.start_event = start_event
        self.end_event = end_event
        self.launch = launch
        self.launcher = launcher
        self.start_ns = self.end_ns = None


class DeviceClock:
    """Turns device events into host times through one reference event.

    Args:
        synchronize: waits for all the device's work (``torch.cuda.synchronize``).
        new_event: makes a timing event with PyTorch's ``torch.cuda.Event`` methods
            (``record()``, ``synchronize()``, ``elapsed_time(end)`` in milliseconds).
    """

    def __init__(self, synchronize: Callable[[], None], new_event: Callable[[], Any]) -> None:
        self.synchronize = synchronize
        self.new_event = new_event
        self.reference = None
        self.reference_ns = 0

    def start(self, tries: int = 3) -> None:
        """Record the reference event on an idle device and note when it completed.

        The event completes somewhere between its record and the return of its
        synchronize; the host time taken after that return is at most that
        bracket late. Of a few tries, the narrowest bracket is kept.
        """
        self.synchronize()
        best = None
        for _ in range(tries):
            event = self.new_event()
            before = _now_ns()
            event.record()
            event.synchronize()
            after = _now_ns()
            if best is None or after - before < best[0]:
                best = (after - before, event, after)
        # The event completed before ``after``, so device times computed from
        # it can only come out a little late, never before their launch.
        _, self.reference, self.reference_ns = best

    def host_time(self, event: Any) -> int:
        """The ``perf_counter_ns`` time at which ``event`` completed on the device."""
        return self.reference_ns + round(self.reference.elapsed_time(event) * 1e6)


def cuda_clock() -> DeviceClock | None:
    """A :class:`DeviceClock` over ``glasstorch.cuda``, or None when no CUDA driver is active."""
    from glasstorch import cuda

    if not cuda.is_available():
        return None
    return DeviceClock(cuda.synchronize, lambda: cuda.Event(enable_timing=True))


class Recorder:
    """Everything one profile records, and the hook that records it.

    Args:
        record_shapes: note each operation's input shapes.
        clock: a started :class:`DeviceClock` to observe device work, or None
            to record the host only.
    """

    def __init__(self, record_shapes: bool = False, clock: DeviceClock | None = None) -> None:
        self.record_shapes = record_shapes
        self.clock = clock
        self.ids = itertools.count(1)
        self.spans: list[Span] = []
        self.device_work: list[DeviceWork] = []
        self.local = threading.local()
        self.start_ns = _now_ns()
        self.end_ns: int | None = None

    def stack(self) -> list[Span]:
        """The open spans of the calling thread, innermost last."""
        local = self.local
        try:
            return local.stack
        except AttributeError:
            local.stack = []
            local.thread = threading.get_native_id()
            return local.stack

    # --------------------------------------------- called by Function.apply & co.
    def operation_span(self, cls: type, args: tuple) -> Span:
        """The span of one call of the ``autograd.Function`` ``cls`` on ``args``."""
        shapes = _input_shapes(args) if self.record_shapes else None
        return Span(self, operation_name(cls), "cpu_op", shapes)

    def node_span(self, node) -> Span:
        """The span of one backward node's ``apply`` (named as the node: ``MulBackward0``)."""
        return Span(self, node.name(), "cpu_op", [] if self.record_shapes else None)

    def user_span(self, name: str) -> Span:
        """The span of a ``record_function`` block."""
        return Span(self, name, "user_annotation", [] if self.record_shapes else None)

    # ------------------------------------------ called by the CUDA driver
    def observe(self, kind: str, name: str, stream, start_event, end_event) -> None:
        """An observer for ``glasstorch._gpu.trace.observers``: note one queued piece of work.

        The launch itself is over by now (the driver reports it once queued), so
        the ``cudaLaunchKernel``/``cudaMemcpyAsync`` span it leaves on the host
        track marks *when* the host launched, not how long launching took. It
        ends now, and starts now or, if the device started the work earlier
        (known at :meth:`finish`), when the work started: the earliest moment
        by which the launch surely happened.
        """
        name_on_host = "cudaLaunchKernel" if kind == "kernel" else "cudaMemcpyAsync"
        with Span(self, name_on_host, "cuda_runtime") as launch:
            work = DeviceWork(
                launch.id, kind, name, stream, start_event, end_event, launch, launch.parent
            )
            self.device_work.append(work)

    # ------------------------------------------------------------- at the end
    def finish(self) -> None:
        """End the recording: close open spans, wait for the device, place its work in time."""
        self.end_ns = _now_ns()
        for span in self.spans:
            if span.end_ns is None:  # still open when the profile stopped
                span.end_ns = self.end_ns
        if self.clock is None or not self.device_work:
            return
        self.clock.synchronize()
        for work in self.device_work:
            try:
                work.start_ns = self.clock.host_time(work.start_event)
                work.end_ns = self.clock.host_time(work.end_event)
            except Exception:  # an event the driver never recorded: leave it out
                work.start_ns = work.end_ns = None
            work.start_event = work.end_event = None  # the events may go now
            if work.start_ns is not None and work.start_ns < work.launch.start_ns:
                # The driver reports a launch after queueing it, and the device
                # may start at once: the work's start proves the launch happened
                # by then, so the launch span starts there.
                work.launch.start_ns = work.start_ns


def _input_shapes(args: tuple) -> list:
    """One shape per argument, as PyTorch's "Input Shapes": ``[]`` for a non-tensor."""
    tensor = _function.Tensor
    return [list(arg.shape) if isinstance(arg, tensor) else [] for arg in args]
