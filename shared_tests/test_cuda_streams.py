"""Streams and events on the CUDA device: the host runs ahead of the device.

A kernel launch returns once the work is queued (paper §5.2, §6.1): an event
recorded after a long kernel is not complete right after the launch, and is
once the host synchronizes. No test here measures a duration against a bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_support import EXAMPLES_CU, requires_cuda

import glasstorch as gt

pytestmark = [pytest.mark.cuda, requires_cuda]

#: Iterations of examples.cu's `spin` kernel per thread: long enough that the
#: host, which only queues it, gets to the next line first.
SPIN = 20_000_000


def _cuda_kernels():
    from glasstorch._tier import kernels

    return kernels.cuda


def _spin(stream=None):
    """Queue examples.cu's `spin` kernel on ``stream`` (the current stream if None)."""
    k = _cuda_kernels()
    out = gt.zeros(1, dtype=gt.int64, device="cuda")
    with gt.cuda.stream(stream):
        k.launch_grid(str(EXAMPLES_CU), "spin", 1, 32, SPIN, out.data_ptr())
    return out


def test_the_host_runs_ahead_of_a_long_kernel():
    stream = gt.cuda.current_stream()
    keep = _spin()
    done = gt.cuda.Event()
    done.record()
    assert done.query() is False  # the host is already here; the device is still spinning
    assert stream.query() is False
    done.synchronize()
    assert done.query() is True and stream.query() is True
    assert keep.item() != 0


def test_item_waits_for_the_queued_work():
    x = gt.ones(1000, device="cuda")
    keep = _spin()
    total = (x * 3).sum()
    assert total.item() == 3000.0  # the copy to the host waits for the stream
    assert gt.cuda.current_stream().query() is True
    del keep


def test_streams_run_their_own_queues_and_events_order_them():
    side = gt.cuda.Stream(priority=-1)
    assert side != gt.cuda.default_stream() and gt.cuda.current_stream() == gt.cuda.default_stream()
    with gt.cuda.stream(side):
        assert gt.cuda.current_stream() == side
        _spin()
        y = gt.full((8,), 2.0, device="cuda")
        marker = side.record_event()  # after y's fill: waiting for it orders both
    assert gt.cuda.current_stream() == gt.cuda.default_stream()
    assert marker.query() is False
    gt.cuda.current_stream().wait_event(marker)  # default stream's later work waits
    z = (y + 1).cpu()
    assert marker.query() is True
    assert z.tolist() == [3.0] * 8
    side.synchronize()
    assert side.query()


def test_event_timing():
    start, end = gt.cuda.Event(enable_timing=True), gt.cuda.Event(enable_timing=True)
    start.record()
    _spin()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0.0
    untimed = gt.cuda.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        start.elapsed_time(untimed)
    never = gt.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(never)
    untimed.wait()  # accepted: makes the current stream wait
    gt.cuda.synchronize()


def test_record_stream_keeps_a_block_from_reuse_until_the_stream_is_done():
    side = gt.cuda.Stream()
    x = gt.ones(256, device="cuda")
    with gt.cuda.stream(side):
        _spin()
    x.record_stream(side)
    before = gt.cuda.memory_stats()["active_bytes.all.current"]
    allocated = gt.cuda.memory_allocated()
    del x
    assert gt.cuda.memory_allocated() == allocated - 1024  # no longer allocated...
    assert gt.cuda.memory_stats()["active_bytes.all.current"] == before  # ...but still active
    side.synchronize()
    gt.ones(1, device="cuda")  # the next allocation collects the finished event
    assert gt.cuda.memory_stats()["active_bytes.all.current"] < before + 512


def test_profiler_observers_see_kernels_and_copies():
    from glasstorch._gpu import trace as _trace

    seen = []

    def observer(kind, name, stream, start, end):
        seen.append((kind, name, stream))

    _trace.observers.append(observer)
    try:
        x = gt.tensor([1.0, 2.0], device="cuda")
        (x + x).cpu()
    finally:
        _trace.observers.remove(observer)
    kinds = {(kind, name) for kind, name, _ in seen}
    assert ("memcpy", "Memcpy HtoD") in kinds and ("memcpy", "Memcpy DtoH") in kinds
    assert ("kernel", "binary_f32") in kinds
    assert all(stream == gt.cuda.current_stream() for _, _, stream in seen)
    np.testing.assert_array_equal((x + x).cpu().numpy(), [2.0, 4.0])
