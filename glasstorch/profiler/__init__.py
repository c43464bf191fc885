"""``torch.profiler``: where the time goes, on the host and on the device.

The paper's section 6.1 shows a profiler trace of one training step: the
Python host queues GPU kernels and runs ahead of them, so the GPU stays busy
while Python does its bookkeeping. This package records such traces with
PyTorch's API::

    import glasstorch as torch
    from glasstorch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("step"):
            loss = model(x).sum()
            loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # open in https://ui.perfetto.dev

The modules, in reading order: :mod:`._record` (how spans and device work
are recorded, and how device events get host times), :mod:`._names` (how
operations are named), :mod:`._events` (events, self and total times, the
table), :mod:`._chrome` (the trace file) and :mod:`.profiler` (the API).
"""

from glasstorch.profiler._events import (
    DeviceType,
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    Interval,
)
from glasstorch.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "DeviceType",
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "Interval",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]
