"""``profile``, ``record_function`` and ``schedule``: the profiler's public face."""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from contextlib import ContextDecorator
from typing import Any

from glasstorch._gpu import trace as _trace
from glasstorch.autograd import function as _function
from glasstorch.profiler import _record
from glasstorch.profiler._events import EventList, build_events

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What a profile observes: host operations (``CPU``) and device work (``CUDA``)."""

    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What the profiler does during one step, as a :func:`schedule` decides."""

    NONE = 0  # not recording
    WARMUP = 1  # about to record (glasstorch records nothing while warming up)
    RECORD = 2  # recording
    RECORD_AND_SAVE = 3  # recording; at the end of this step the results are handed over


def supported_activities() -> set[ProfilerActivity]:
    """The activities that can be observed here: CPU always, CUDA when a driver is active."""
    from glasstorch import cuda

    activities = {ProfilerActivity.CPU}
    if cuda.is_available():
        activities.add(ProfilerActivity.CUDA)
    return activities


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerAction]:
    """Which steps a :class:`profile` records, for long loops that call ``prof.step()``.

    After ``skip_first`` steps, cycles of ``wait`` steps doing nothing, ``warmup``
    steps warming up, and ``active`` steps recording repeat ``repeat`` times (for
    ever if 0). At the last active step of each cycle the results are handed
    to ``on_trace_ready``.

    Returns:
        A function from the step number (from 0) to its :class:`ProfilerAction`.

    Example::

        with profile(schedule=schedule(wait=1, warmup=1, active=2),
                     on_trace_ready=lambda p: print(p.key_averages().table())) as prof:
            for batch in loader:
                train_step(batch)
                prof.step()
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        place = step % cycle
        if place < wait:
            return ProfilerAction.NONE
        if place < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if place < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

#: The profile that records now, if any (one at a time).
_recording: profile | None = None


class profile:  # noqa: N801 - PyTorch's name
    """Record what the host and the device do, with PyTorch's ``torch.profiler.profile`` API.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`::

        from glasstorch.profiler import profile, record_function, ProfilerActivity

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("forward"):
                loss = model(x).sum()
            loss.backward()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
        prof.export_chrome_trace("trace.json")

    What is recorded:

    * **host spans**: every operation (each passes through ``Function.apply``),
      named as PyTorch names it (``aten::add``, ``aten::mm``: see
      :mod:`glasstorch.profiler._names`), every backward node (``MulBackward0``)
      and every :class:`record_function` block, with their nesting;
    * **device spans**, with ``ProfilerActivity.CUDA`` and an active CUDA
      driver: every kernel and copy the driver queues, on its stream, and the
      ``cudaLaunchKernel`` instant on the host that queued it.

    Args:
        activities: what to observe; by default the CPU, and CUDA when a driver
            is active (:func:`supported_activities`).
        schedule: a function from the step number to a :class:`ProfilerAction`
            (see :func:`schedule`); by default every step records.
        on_trace_ready: called with the profiler each time a recording ends
            (at :meth:`stop`, or at a ``RECORD_AND_SAVE`` step).
        record_shapes: note the shapes of each operation's arguments
            (``key_averages(group_by_input_shape=True)`` groups by them).
        profile_memory, with_stack, with_flops, with_modules: accepted for
            PyTorch's signature and ignored: glasstorch records neither memory,
            Python stacks, FLOPs nor module hierarchy (a warning says so).
        experimental_config, execution_trace_observer, acc_events: accepted
            and ignored.
        use_cuda: PyTorch's deprecated switch for the CUDA activity.

    Differences from PyTorch: one profile records at a time (starting a second
    raises ``RuntimeError``); results exist once a recording ended (call
    :meth:`key_averages` after the ``with`` block); a warm-up step records
    nothing; operations that are not an ``autograd.Function`` (tensor
    creation, ``copy_`` done by the runtime) have no host span of their own.
    """

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        experimental_config: Any = None,
        execution_trace_observer: Any = None,
        acc_events: bool = False,
        use_cuda: bool | None = None,
    ) -> None:
        if activities is None:
            activities = supported_activities()
        activities = set(activities)
        for activity in activities:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity values, got {activity!r}")
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        ignored = [
            name
            for name, value in (
                ("profile_memory", profile_memory),
                ("with_stack", with_stack),
                ("with_flops", with_flops),
                ("with_modules", with_modules),
            )
            if value
        ]
        if ignored:
            warnings.warn(
                f"glasstorch's profiler ignores {', '.join(ignored)}: it records operation "
                "spans and device work only",
                stacklevel=2,
            )
        self.activities = activities
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._recorder: _record.Recorder | None = None
        self._step_span: _record.Span | None = None
        self._events: EventList | None = None
        self._running = False
        self._metadata: dict[str, str] = {}

    # ---------------------------------------------------------------- control
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        """Begin: record now (or from the step the schedule says)."""
        if self._running:
            raise RuntimeError("this profiler is already running; call stop() first")
        self._running = True
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._enter(self.current_action)

    def stop(self) -> None:
        """End: stop recording and hand the results over (``on_trace_ready``)."""
        if not self._running:
            return
        self._running = False
        if self._recorder is not None:
            self._finish_recording()
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """Mark the end of one step (a training iteration) for the :func:`schedule`."""
        if not self._running:
            return
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._close_step_span()
        if self._recorder is not None and (
            previous is ProfilerAction.RECORD_AND_SAVE or self.current_action not in _RECORDING
        ):
            self._finish_recording()
        self._enter(self.current_action)

    def _enter(self, action: ProfilerAction) -> None:
        """Start recording if ``action`` records and nothing records yet; mark the step."""
        if action not in _RECORDING:
            return
        if self._recorder is None:
            self._begin_recording()
        if self.record_steps and ProfilerActivity.CPU in self.activities:
            self._step_span = self._recorder.user_span(f"ProfilerStep#{self.step_num}")
            self._step_span.__enter__()

    def _close_step_span(self) -> None:
        if self._step_span is not None:
            self._step_span.__exit__(None, None, None)
            self._step_span = None

    def _begin_recording(self) -> None:
        global _recording
        if _recording is not None:
            self._running = False
            raise RuntimeError(
                "another profiler is already recording; glasstorch records one profile at a "
                "time (stop the other one first)"
            )
        clock = None
        if ProfilerActivity.CUDA in self.activities:
            clock = _record.cuda_clock()
            if clock is None:
                warnings.warn(
                    "ProfilerActivity.CUDA was requested but no CUDA driver is active "
                    "(torch.cuda.is_available() is False): only the host is profiled. "
                    "Set GLASSTORCH_CUDA=simulator to run on the CUDA simulator.",
                    stacklevel=4,
                )
            else:
                clock.start()
        recorder = _record.Recorder(self.record_shapes, clock)
        self._recorder = recorder
        if clock is not None:
            _trace.observers.append(recorder.observe)
        if ProfilerActivity.CPU in self.activities:
            _function.profiler_hook = recorder
        _recording = self

    def _finish_recording(self) -> None:
        global _recording
        self._close_step_span()
        recorder, self._recorder = self._recorder, None
        _recording = None
        if _function.profiler_hook is recorder:
            _function.profiler_hook = None
        if recorder.observe in _trace.observers:
            _trace.observers.remove(recorder.observe)
        recorder.finish()
        self._events = build_events(recorder, use_device=ProfilerActivity.CUDA in self.activities)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---------------------------------------------------------------- results
    def events(self) -> EventList:
        """Every recorded event, host and device, by start time (after the recording ended)."""
        if self._events is None:
            raise RuntimeError(
                "the profiler has no results yet: read them after the `with profile(...)` "
                "block (or after stop())"
            )
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0):
        """The events grouped by name: an :class:`EventList` whose ``table()`` prints them.

        Args:
            group_by_input_shape: one row per name and input shapes (needs
                ``record_shapes=True``).
            group_by_stack_n: accepted for PyTorch's signature; glasstorch
                records no stacks.
        """
        return self.events().key_averages(group_by_input_shape=group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        """Write the recording as a Chrome trace (JSON) for https://ui.perfetto.dev."""
        self.events().export_chrome_trace(path)

    def add_metadata(self, key: str, value: str) -> None:
        """Keep a key/value pair with the profile (PyTorch writes it into the trace)."""
        self._metadata[key] = value


class record_function(ContextDecorator):  # noqa: N801 - PyTorch's name
    """Label a block of code in the profile: a span named ``name`` around it.

    A context manager or a decorator. Operations inside the block become its
    children, so the table's total time for ``name`` is the whole block's.
    Without a recording profiler it does nothing (one test on entry).

    Args:
        name: the label (PyTorch's tables show it like an operation's name).
        args: an optional string kept for PyTorch's signature.

    Example::

        with record_function("data loading"):
            batch = next(iterator)

        @record_function("train_step")
        def train_step(batch): ...
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._span = None

    def __enter__(self) -> record_function:
        recorder = _function.profiler_hook
        if recorder is not None:
            self._span = recorder.user_span(self.name)
            self._span.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        span, self._span = self._span, None
        if span is not None:
            span.__exit__(*exc_info)

    def _recreate_cm(self) -> record_function:
        # As a decorator, each call gets a fresh span (calls may nest or overlap in threads).
        return record_function(self.name, self.args)


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each recording as a Chrome trace into ``dir_name``.

    The files are named ``<worker_name>.<milliseconds>.pt.trace.json`` (``.gz``
    with ``use_gzip``), as PyTorch names them; the worker name defaults to
    ``<host name>_<process id>``.
    """

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(dir_name, name)
        if not use_gzip:
            prof.export_chrome_trace(path)
            return
        import gzip
        import json

        from glasstorch.profiler._chrome import chrome_trace

        with gzip.open(path + ".gz", "wt", encoding="utf-8") as file:
            json.dump(chrome_trace(prof.events()), file)

    return handler
