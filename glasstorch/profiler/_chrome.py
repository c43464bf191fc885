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
"""

from __future__ import annotations

import json
import os
import threading

from glasstorch.profiler._record import DeviceType


def chrome_trace(events: list) -> dict:
    """The events (:class:`~glasstorch.profiler.FunctionEvent`) as a Chrome trace document
    (a dict ready for ``json.dump``)."""
    pid = os.getpid()
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
        device_tracks.add((event.device_index, event.thread))
        args = {"device": event.device_index, "stream": event.thread, "correlation": event.id}
        trace.append({**common, "pid": event.device_index, "tid": event.thread, "args": args})
        if event.launch is not None:
            trace += _flow(event, pid)
    return {
        "schemaVersion": 1,
        "displayTimeUnit": "ms",
        "traceEvents": _metadata(pid, host_threads, device_tracks) + trace,
    }


def _flow(kernel, pid: int) -> list[dict]:
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
            "pid": kernel.device_index,
            "tid": kernel.thread,
            "ts": round(kernel.time_range.start, 3),
        },
    ]


def _metadata(pid: int, threads: set[int], tracks: set[tuple[int, int]]) -> list[dict]:
    """Names for the host process and its threads, the GPUs and their streams."""
    main = threading.main_thread().native_id

    def meta(name: str, process, thread, args: dict) -> dict:
        return {"ph": "M", "name": name, "pid": process, "tid": thread, "args": args}

    out = [
        meta("process_name", pid, 0, {"name": "python"}),
        meta("process_labels", pid, 0, {"labels": "CPU"}),
        meta("process_sort_index", pid, 0, {"sort_index": 0}),
    ]
    for thread in sorted(threads):
        label = "main thread" if thread == main else "thread"
        out.append(meta("thread_name", pid, thread, {"name": f"{label} {thread} (python)"}))
    for device in sorted({device for device, _ in tracks}):
        out += [
            meta("process_name", device, 0, {"name": "python"}),
            meta("process_labels", device, 0, {"labels": f"GPU {device}"}),
            meta("process_sort_index", device, 0, {"sort_index": 1 + device}),
        ]
    for device, stream in sorted(tracks):
        out.append(meta("thread_name", device, stream, {"name": f"stream {stream}"}))
        out.append(meta("thread_sort_index", device, stream, {"sort_index": stream}))
    return out


def write_chrome_trace(events: list, path: str | os.PathLike) -> None:
    """Write :func:`chrome_trace` of ``events`` to ``path`` as JSON."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(chrome_trace(events), file)
