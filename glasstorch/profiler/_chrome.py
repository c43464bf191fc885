"""Writing a profile as a Chrome trace: open it in https://ui.perfetto.dev or chrome://tracing.

The format is JSON: ``{"traceEvents": [...]}``, each event a dict. Three kinds
are used, as PyTorch's own traces use them:

* ``"ph": "X"``, a complete slice with a start ``ts`` and a length ``dur``,
  both in microseconds, on a track named by ``pid`` (a process) and ``tid``
  (a thread in it). Host events go on the process's id with the thread's id
  as ``tid``; device events go on a process per GPU (``pid`` = the GPU's
  index, labelled ``GPU 0``) with one track per stream (``tid`` = the stream's
  number, labelled ``stream 0``).
* ``"ph": "s"`` and ``"ph": "f"``, the two ends of a flow arrow with the same
  ``id``: from the host's ``cudaLaunchKernel`` to the kernel it queued
  (category ``"ac2g"``, "asynchronous CPU to GPU").
* ``"ph": "M"``, metadata naming the processes and tracks.

Reading such a trace, the host track shows each operation end long before
the kernel it launched ends on the stream's track: the host runs ahead.

In a distributed job (``glasstorch.distributed`` initialised) the host's
``pid`` is the rank, labelled ``rank N``, so that the traces of all ranks,
their ``traceEvents`` put in one file, show one process per rank, each with
its collectives (``mpi:all_reduce``, ...) on the thread that ran them. The
GPUs then get ids past the ranks' (``world_size * (1 + gpu) + rank``).
"""

from __future__ import annotations

import json
import os
import sys
import threading

from glasstorch.profiler._record import DeviceType


def chrome_trace(events: list) -> dict:
    """The events (:class:`~glasstorch.profiler.FunctionEvent`) as a Chrome trace document
    (a dict ready for ``json.dump``)."""
    pid, rank, world_size = _host_process()
    trace: list[dict] = []
    host_threads: set[int] = set()
    device_tracks: set[tuple[int, int]] = set()
    for event in events:
        common = {
            "ph": "X",
            "cat": event.category,
            "name": event.name,
            "ts": round(event.time_range.start, 3),
            "dur": round(event.duration_us, 3),
        }
        if event.device_type is DeviceType.CPU:
            host_threads.add(event.thread)
            args = {"External id": event.id}
            if event.input_shapes:
                args["Input Dims"] = event.input_shapes
            if event.category == "cuda_runtime":
                args["correlation"] = event.id
            trace.append({**common, "pid": pid, "tid": event.thread, "args": args})
            continue
        device = _device_process(event.device_index, rank, world_size)
        device_tracks.add((device, event.thread))
        args = {"device": event.device_index, "stream": event.thread, "correlation": event.id}
        trace.append({**common, "pid": device, "tid": event.thread, "args": args})
        if event.launch is not None:
            trace += _flow(event, pid, device)
    return {
        "schemaVersion": 1,
        "displayTimeUnit": "ms",
        "traceEvents": _metadata(pid, host_threads, device_tracks, rank, world_size) + trace,
    }


def _host_process() -> tuple[int, int | None, int]:
    """The host's ``pid`` in the trace, the rank (None outside a distributed job), the world size."""
    distributed = sys.modules.get("glasstorch.distributed")
    if distributed is not None and distributed.is_initialized():
        rank = distributed.get_rank()
        return rank, rank, distributed.get_world_size()
    return os.getpid(), None, 1


def _device_process(device_index: int, rank: int | None, world_size: int) -> int:
    """A GPU's ``pid``: its index, or past every rank's host id in a distributed job."""
    return device_index if rank is None else world_size * (1 + device_index) + rank


def _flow(kernel, pid: int, device: int) -> list[dict]:
    """The arrow from the launch on the host to the start of ``kernel`` on its stream."""
    launch = kernel.launch
    flow = {"id": kernel.id, "cat": "ac2g", "name": "ac2g"}
    return [
        {
            **flow,
            "ph": "s",
            "pid": pid,
            "tid": launch.thread,
            "ts": round(launch.time_range.start, 3),
        },
        {
            **flow,
            "ph": "f",
            "bp": "e",
            "pid": device,
            "tid": kernel.thread,
            "ts": round(kernel.time_range.start, 3),
        },
    ]


def _metadata(
    pid: int, threads: set[int], tracks: set[tuple[int, int]], rank: int | None, world_size: int
) -> list[dict]:
    """Names for the host process and its threads, the GPUs and their streams."""
    main = threading.main_thread().native_id

    def meta(name: str, process, thread, args: dict) -> dict:
        return {"ph": "M", "name": name, "pid": process, "tid": thread, "args": args}

    prefix = "" if rank is None else f"rank {rank} "
    out = [
        meta("process_name", pid, 0, {"name": "python" if rank is None else f"rank {rank}"}),
        meta("process_labels", pid, 0, {"labels": "CPU"}),
        meta("process_sort_index", pid, 0, {"sort_index": 0 if rank is None else 2 * rank}),
    ]
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    for thread in sorted(threads):
        # A thread of glasstorch's own (a communication thread) is named for what it does.
        label = "main thread" if thread == main else names.get(thread, "thread")
        if not label.startswith("glasstorch-") and thread != main:
            label = "thread"
        out.append(meta("thread_name", pid, thread, {"name": f"{label} {thread} (python)"}))
    for device in sorted({device for device, _ in tracks}):
        index = device if rank is None else device // world_size - 1
        order = 1 + device if rank is None else 2 * rank + 1
        out += [
            meta("process_name", device, 0, {"name": "python"}),
            meta("process_labels", device, 0, {"labels": f"{prefix}GPU {index}"}),
            meta("process_sort_index", device, 0, {"sort_index": order}),
        ]
    for device, stream in sorted(tracks):
        out.append(meta("thread_name", device, stream, {"name": f"stream {stream}"}))
        out.append(meta("thread_sort_index", device, stream, {"sort_index": stream}))
    return out


def write_chrome_trace(events: list, path: str | os.PathLike) -> None:
    """Write :func:`chrome_trace` of ``events`` to ``path`` as JSON."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(chrome_trace(events), file)
