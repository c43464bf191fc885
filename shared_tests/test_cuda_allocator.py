"""The caching allocator's rules, one test each, against a FakeDevice.

The allocator is pure Python over a small device interface, so these tests run
on every tier and on machines without a GPU. The rules and numbers follow
PyTorch's CUDACachingAllocator (see ``docs/guide/gpu.md``).
"""

from __future__ import annotations

import pytest

from glasstorch._gpu.allocator import (
    CachingAllocator,
    FakeDevice,
    GiB,
    MiB,
    OutOfMemoryError,
    allocation_size,
    format_size,
    round_size,
)

pytestmark = pytest.mark.cuda


def make(capacity: int = 1 * GiB) -> tuple[CachingAllocator, FakeDevice]:
    device = FakeDevice(capacity=capacity)
    return CachingAllocator(device), device


def mallocs(device: FakeDevice) -> list[int]:
    """The sizes the allocator asked the device for, in order."""
    return [call[1] for call in device.calls if call[0] == "malloc"]


# ----------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "request_, rounded",
    [(0, 512), (1, 512), (512, 512), (513, 1024), (1000, 1024), (MiB + 1, MiB + 512)],
)
def test_requests_round_up_to_512_bytes(request_, rounded):
    assert round_size(request_) == rounded
    alloc, _ = make()
    block = alloc.malloc(request_)
    assert block.size == rounded
    assert block.requested_size == request_


@pytest.mark.parametrize(
    "size, segment",
    [
        (512, 2 * MiB),
        (MiB, 2 * MiB),  # 1 MiB exactly is still small
        (MiB + 512, 20 * MiB),
        (10 * MiB - 512, 20 * MiB),
        (10 * MiB, 10 * MiB),
        (11 * MiB, 12 * MiB),  # rounded up to 2 MiB
    ],
)
def test_segment_sizes(size, segment):
    assert allocation_size(size) == segment
    alloc, device = make()
    alloc.malloc(size)
    assert mallocs(device) == [segment]
    assert alloc.memory_reserved() == segment


def test_small_and_large_pools_are_separate():
    alloc, device = make()
    small = alloc.malloc(MiB)
    large = alloc.malloc(MiB + 1)
    assert small.pool == "small_pool" and large.pool == "large_pool"
    stats = alloc.memory_stats()
    assert stats["segment.small_pool.current"] == 1
    assert stats["segment.large_pool.current"] == 1
    assert stats["reserved_bytes.small_pool.current"] == 2 * MiB
    assert stats["reserved_bytes.large_pool.current"] == 20 * MiB
    # A free large block is never used for a small request.
    alloc.free(large)
    alloc.malloc(512)
    assert stats["segment.large_pool.current"] == 1
    assert len(mallocs(device)) == 2


# ----------------------------------------------------------------- caching, best fit


def test_free_keeps_memory_and_the_next_malloc_reuses_it():
    alloc, device = make()
    block = alloc.malloc(4 * MiB)
    ptr = block.ptr
    alloc.free(block)
    assert alloc.memory_allocated() == 0
    assert alloc.memory_reserved() == 20 * MiB
    assert not [c for c in device.calls if c[0] == "free"]
    again = alloc.malloc(4 * MiB)
    assert again.ptr == ptr
    assert alloc.memory_stats()["num_device_alloc"] == 1


def test_best_fit_takes_the_smallest_block_that_fits():
    alloc, _ = make()
    # Three whole large segments of 12, 16 and 14 MiB; free them all.
    blocks = [alloc.malloc(n * MiB) for n in (12, 16, 14)]
    sizes = {b.ptr: b.size for b in blocks}
    for b in blocks:
        alloc.free(b)
    chosen = alloc.malloc(13 * MiB)
    assert sizes[chosen.ptr] == 14 * MiB
    # Equal sizes: the lowest address wins.
    alloc2, _ = make()
    a, b = alloc2.malloc(12 * MiB), alloc2.malloc(12 * MiB)
    alloc2.free(b)
    alloc2.free(a)
    assert alloc2.malloc(12 * MiB).ptr == min(a.ptr, b.ptr)


def test_free_blocks_are_reused_only_on_their_stream():
    alloc, device = make()
    block = alloc.malloc(1000, stream=1)
    alloc.free(block)
    other = alloc.malloc(1000, stream=2)
    assert other.ptr != block.ptr
    assert len(mallocs(device)) == 2
    same = alloc.malloc(1000, stream=1)
    assert same.ptr == block.ptr


# ----------------------------------------------------------------- split and merge


def test_small_blocks_split_when_the_remainder_is_at_least_512():
    alloc, _ = make()
    a = alloc.malloc(512)
    b = alloc.malloc(512)
    assert b.ptr == a.ptr + 512  # carved from the same 2 MiB segment
    stats = alloc.memory_stats()
    assert stats["inactive_split.small_pool.current"] == 1
    assert stats["inactive_split_bytes.small_pool.current"] == 2 * MiB - 1024
    assert stats["segment.all.current"] == 1


def test_a_small_block_is_not_split_when_it_fits_exactly():
    alloc, _ = make()
    a = alloc.malloc(MiB)
    b = alloc.malloc(MiB)  # takes the rest of the 2 MiB small segment exactly
    assert b.ptr == a.ptr + MiB
    assert alloc.memory_stats()["inactive_split.small_pool.current"] == 0


def test_large_blocks_split_only_when_more_than_1_mib_remains():
    alloc, _ = make()
    a = alloc.malloc(19 * MiB)  # 20 MiB segment, remainder exactly 1 MiB: no split
    assert a.size == 20 * MiB
    assert alloc.memory_allocated() == 20 * MiB
    assert alloc.memory_stats()["requested_bytes.all.current"] == 19 * MiB
    alloc.free(a)
    b = alloc.malloc(18 * MiB - 512)  # remainder 2 MiB + 512: split
    assert b.size == 18 * MiB - 512
    stats = alloc.memory_stats()
    assert stats["inactive_split_bytes.large_pool.current"] == 2 * MiB + 512


def test_freed_neighbours_merge_back_into_one_block():
    alloc, device = make()
    blocks = [alloc.malloc(4096) for _ in range(3)]
    alloc.free(blocks[0])
    alloc.free(blocks[2])
    assert alloc.memory_stats()["inactive_split.all.current"] == 2
    alloc.free(blocks[1])  # merges with both sides and with the tail
    stats = alloc.memory_stats()
    assert stats["inactive_split.all.current"] == 0
    assert stats["inactive_split_bytes.all.current"] == 0
    (segment,) = alloc.memory_snapshot()
    assert segment["blocks"] == [
        {"address": segment["address"], "size": 2 * MiB, "requested_size": 0, "state": "inactive"}
    ]
    # Whole again, so empty_cache can give it back.
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0
    assert device.used == 0


def test_empty_cache_keeps_split_segments_with_live_blocks():
    alloc, device = make()
    keep = alloc.malloc(1000)
    gone = alloc.malloc(30 * MiB)
    alloc.free(gone)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 2 * MiB
    assert [c[2] for c in device.calls if c[0] == "free"] == [30 * MiB]
    stats = alloc.memory_stats()
    assert stats["num_device_free"] == 1
    assert stats["segment.large_pool.freed"] == 1
    alloc.free(keep)
    alloc.empty_cache()
    assert alloc.memory_reserved() == 0


# ----------------------------------------------------------------- streams and events


def test_record_stream_delays_reuse_until_the_event_completes():
    alloc, device = make()
    block = alloc.malloc(1000, stream=0)
    alloc.record_stream(block, 1)
    alloc.free(block)
    assert ("record", 1) in device.calls
    assert alloc.memory_stats()["active.all.current"] == 1  # still active: pending
    states = [b["state"] for b in alloc.memory_snapshot()[0]["blocks"]]
    assert states[0] == "active_pending_free"
    # Stream 1 has not finished: the next malloc must not get the same memory.
    other = alloc.malloc(1000, stream=0)
    assert other.ptr != block.ptr
    alloc.free(other)
    device.tick(stream=1)
    again = alloc.malloc(1000, stream=0)  # the poll at malloc returns the block
    assert again.ptr == block.ptr
    assert alloc.memory_stats()["active.all.current"] == 1


def test_record_stream_on_the_allocation_stream_is_a_no_op():
    alloc, device = make()
    block = alloc.malloc(1000, stream=3)
    alloc.record_stream(block, 3)
    alloc.free(block)
    assert not [c for c in device.calls if c[0] == "record"]
    assert alloc.malloc(1000, stream=3).ptr == block.ptr


def test_a_block_used_on_two_streams_waits_for_both():
    alloc, device = make()
    block = alloc.malloc(1000)
    alloc.record_stream(block, 1)
    alloc.record_stream(block, 2)
    alloc.free(block)
    device.tick(stream=1)
    assert alloc.malloc(1000).ptr != block.ptr
    device.tick(stream=2)
    assert alloc.malloc(1000).ptr == block.ptr


def test_empty_cache_waits_for_pending_events():
    alloc, device = make()
    block = alloc.malloc(30 * MiB)
    alloc.record_stream(block, 1)
    alloc.free(block)
    alloc.empty_cache()
    assert ("synchronize", 1) in device.calls
    assert alloc.memory_reserved() == 0
    assert alloc.memory_stats()["num_sync_all_streams"] == 1


# ----------------------------------------------------------------- out of memory


def test_out_of_memory_frees_cached_segments_and_retries_once():
    alloc, device = make(capacity=40 * MiB)
    cached = alloc.malloc(30 * MiB)
    alloc.free(cached)  # 30 MiB cached, on stream 0
    block = alloc.malloc(30 * MiB, stream=1)  # other stream: no reuse, device full
    assert block.size == 30 * MiB
    stats = alloc.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["num_sync_all_streams"] == 1
    assert stats["num_ooms"] == 0
    assert stats["num_device_free"] == 1
    assert [c[0] for c in device.calls] == ["malloc", "malloc failed", "free", "malloc"]


def test_out_of_memory_raises_with_pytorchs_wording():
    alloc, _ = make(capacity=100 * MiB)
    held = alloc.malloc(60 * MiB)
    with pytest.raises(OutOfMemoryError) as info:
        alloc.malloc(2 * GiB)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert message.startswith("CUDA out of memory. Tried to allocate 2.00 GiB. ")
    assert "GPU 0 has a total capacity of 100.00 MiB of which 40.00 MiB is free." in message
    assert "Of the allocated memory 60.00 MiB is allocated by glasstorch, and 0 bytes" in message
    stats = alloc.memory_stats()
    assert stats["num_ooms"] == 1
    assert stats["num_alloc_retries"] == 1
    alloc.free(held)  # the allocator is still usable
    assert alloc.malloc(60 * MiB).ptr == held.ptr


# ----------------------------------------------------------------- statistics


def test_memory_stats_keys_follow_pytorch():
    alloc, _ = make()
    stats = alloc.memory_stats()
    for name in (
        "allocation",
        "segment",
        "active",
        "inactive_split",
        "allocated_bytes",
        "reserved_bytes",
        "active_bytes",
        "inactive_split_bytes",
        "requested_bytes",
    ):
        for pool in ("all", "small_pool", "large_pool"):
            for part in ("current", "peak", "allocated", "freed"):
                assert stats[f"{name}.{pool}.{part}"] == 0
    for name in (
        "num_alloc_retries",
        "num_ooms",
        "num_device_alloc",
        "num_device_free",
        "num_sync_all_streams",
    ):
        assert stats[name] == 0
    assert len(stats) == 9 * 3 * 4 + 5
    assert list(stats) == sorted(stats)


def test_statistics_current_peak_allocated_freed():
    alloc, _ = make()
    a = alloc.malloc(1000)
    b = alloc.malloc(3 * MiB)
    alloc.free(a)
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] == 3 * MiB
    assert stats["allocated_bytes.all.peak"] == 3 * MiB + 1024
    assert stats["allocated_bytes.all.allocated"] == 3 * MiB + 1024
    assert stats["allocated_bytes.all.freed"] == 1024
    assert stats["allocated_bytes.small_pool.freed"] == 1024
    assert stats["requested_bytes.all.peak"] == 3 * MiB + 1000
    assert stats["allocation.all.current"] == 1
    assert stats["allocation.all.allocated"] == 2
    assert alloc.max_memory_allocated() == 3 * MiB + 1024
    assert alloc.memory_reserved() == alloc.max_memory_reserved() == 22 * MiB
    alloc.reset_peak_memory_stats()
    assert alloc.max_memory_allocated() == 3 * MiB
    alloc.free(b)
    alloc.reset_accumulated_memory_stats()
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.allocated"] == 0
    assert stats["num_device_alloc"] == 0


def test_the_second_iteration_allocates_nothing_new():
    """Paper 5.3: reserved memory and device allocations rise once, then stay flat."""
    alloc, device = make()

    def iteration():
        blocks = [alloc.malloc(n) for n in (4000, 12 * MiB, 300_000, 5 * MiB, 4000)]
        for block in reversed(blocks):
            alloc.free(block)

    iteration()
    reserved = alloc.memory_reserved()
    calls = len(device.calls)
    for _ in range(3):
        iteration()
    assert alloc.memory_reserved() == reserved
    assert len(device.calls) == calls


def test_memory_snapshot_lists_segments_and_blocks():
    alloc, _ = make()
    a = alloc.malloc(1000)
    b = alloc.malloc(600)
    alloc.free(a)
    (segment,) = alloc.memory_snapshot()
    assert segment["segment_type"] == "small"
    assert segment["total_size"] == 2 * MiB
    assert segment["allocated_size"] == 1024
    assert segment["requested_size"] == 600
    assert [(blk["size"], blk["state"]) for blk in segment["blocks"]] == [
        (1024, "inactive"),
        (1024, "active_allocated"),
        (2 * MiB - 2048, "inactive"),
    ]
    assert segment["blocks"][1]["address"] == b.ptr


def test_memory_summary_is_a_table_of_the_statistics():
    alloc, _ = make()
    alloc.malloc(3 * MiB)
    summary = alloc.memory_summary()
    assert "CUDA OOMs: 0" in summary and "cudaMalloc retries: 0" in summary
    line = next(x for x in summary.splitlines() if x.startswith("|GPU reserved memory"))
    assert line.split("|")[2].strip() == "20.00 MiB"
    assert format_size(20 * MiB) == "20.00 MiB"
    assert format_size(1024) == "1024 bytes"


def test_free_refuses_a_block_twice():
    alloc, _ = make()
    block = alloc.malloc(10)
    alloc.free(block)
    with pytest.raises(ValueError, match="not allocated"):
        alloc.free(block)
