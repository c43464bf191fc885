"""The CUDA caching allocator, following PyTorch's rules, in plain Python.

Asking a GPU driver for memory (``cudaMalloc``) is slow and synchronizes the
device, and giving it back (``cudaFree``) is slower still. So PyTorch never
frees GPU memory when a tensor dies: it keeps the memory in a cache and hands
it out again to the next tensor that fits. This module is that cache, small
enough to read in one sitting. It knows nothing about tensors or about CUDA
itself: it talks to the device through the tiny :class:`Device` interface, so
the same code runs over a real GPU (a CuPy driver), over the CUDA simulator,
and over :class:`FakeDevice`, an integer address space that the tests drive by
hand.

The rules, each a few lines below (``docs/guide/gpu.md`` walks through them):

1. **Rounding.** Every request is rounded up to a multiple of 512 bytes
   (:data:`MIN_BLOCK_SIZE`), and 0 bytes becomes 512.
2. **Two pools.** Requests of at most 1 MiB (:data:`SMALL_SIZE`) come from the
   *small* pool, larger ones from the *large* pool. A free block never moves
   between pools.
3. **Segment sizes.** When the pool has nothing that fits, the allocator asks
   the device for a new *segment*: 2 MiB for a small request, 20 MiB for a
   request under 10 MiB, else the request rounded up to 2 MiB.
4. **Best fit.** Each pool is a list of free blocks sorted by
   ``(stream, size, address)``. A bisect finds the smallest free block of the
   *same stream* that is large enough.
5. **Split.** A block larger than the request is split when the remainder is
   worth keeping: at least 512 bytes in the small pool, more than 1 MiB in the
   large pool. The remainder goes back to the pool.
6. **Merge.** The blocks of one segment form a doubly linked list
   (``prev``/``next``). A freed block merges with free neighbours, so a
   segment whose blocks are all free becomes one block again.
7. **Streams.** A block belongs to the stream it was allocated on. If it was
   also used on other streams (:meth:`CachingAllocator.record_stream`), freeing
   it records an event on each of those streams, and the block returns to the
   pool only when the events have completed (checked at the next ``malloc``).
8. **Out of memory.** When the device refuses, the allocator frees every
   cached segment that is whole (not split), retries once
   (``num_alloc_retries``), and then raises :class:`OutOfMemoryError`.
9. **Never give back on free.** Memory returns to the device only through
   :meth:`CachingAllocator.empty_cache` and the out-of-memory path.

Statistics use PyTorch's names, flattened with "." as ``torch.cuda.memory_stats``
returns them, for example ``allocated_bytes.all.current``.

What is left out (see the guide): expandable segments, CUDA-graph private
pools, ``max_split_size_mb`` and the other ``PYTORCH_CUDA_ALLOC_CONF`` knobs,
and several devices at once (one allocator serves one device).
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "MIN_BLOCK_SIZE",
    "SMALL_SIZE",
    "SMALL_BUFFER",
    "MIN_LARGE_ALLOC",
    "LARGE_BUFFER",
    "ROUND_LARGE",
    "Block",
    "CachingAllocator",
    "Device",
    "DeviceOutOfMemory",
    "FakeDevice",
    "OutOfMemoryError",
    "allocation_size",
    "format_size",
    "round_size",
]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

#: Every request is rounded up to a multiple of this (bytes).
MIN_BLOCK_SIZE = 512
#: Requests up to this size (after rounding) use the small pool.
SMALL_SIZE = 1 * MiB
#: Segment size for small requests.
SMALL_BUFFER = 2 * MiB
#: Requests below this size (and above SMALL_SIZE) get a LARGE_BUFFER segment.
MIN_LARGE_ALLOC = 10 * MiB
#: Segment size for mid-size requests.
LARGE_BUFFER = 20 * MiB
#: Requests of MIN_LARGE_ALLOC or more get a segment rounded up to this.
ROUND_LARGE = 2 * MiB

SMALL_POOL = "small_pool"
LARGE_POOL = "large_pool"
_POOL_NAMES = ("all", LARGE_POOL, SMALL_POOL)

#: The statistics kept for "all" and for each pool (names as in PyTorch).
_ARRAY_STATS = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
#: The counters that are a single number (names as in PyTorch).
_SCALAR_STATS = (
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
)


# --------------------------------------------------------------------- errors


class OutOfMemoryError(RuntimeError):
    """Raised when the device has no room for a request, even after the cache was emptied.

    Like ``torch.cuda.OutOfMemoryError``, a subclass of :class:`RuntimeError`.
    """


class DeviceOutOfMemory(Exception):
    """Raised by a :class:`Device` whose ``raw_malloc`` cannot find the memory.

    The allocator catches it, empties its cache and retries; only the
    allocator's own :class:`OutOfMemoryError` reaches the user.
    """


# --------------------------------------------------------------------- device


class Device(Protocol):
    """What the allocator needs from a device (a real GPU, the simulator, a fake).

    Streams are identified by small integers (0 is the default stream); events
    are whatever objects the device hands out.
    """

    index: int

    def raw_malloc(self, nbytes: int) -> int:
        """Reserve ``nbytes`` of device memory; return its address or raise DeviceOutOfMemory."""

    def raw_free(self, ptr: int) -> None:
        """Give the memory at ``ptr`` (an address raw_malloc returned) back to the device."""

    def new_event(self) -> Any:
        """Create an event (the allocator recycles them, as creating one can be slow)."""

    def record_event(self, event: Any, stream: int) -> None:
        """Record ``event`` on ``stream``: it completes when the work queued so far is done."""

    def query_event(self, event: Any) -> bool:
        """Whether ``event`` has completed, without waiting."""

    def synchronize_event(self, event: Any) -> None:
        """Wait until ``event`` has completed."""

    def total_memory(self) -> int:
        """The device's capacity in bytes."""

    def free_memory(self) -> int:
        """The bytes the device could still hand out."""


@dataclass(eq=False)
class _FakeEvent:
    """An event of :class:`FakeDevice`: pending from record until the test completes it."""

    stream: int | None = None
    done: bool = True


class FakeDevice:
    """A pretend GPU for tests: an address space with a capacity, and hand-driven events.

    Every raw call is appended to :attr:`calls` as a tuple (``("malloc", nbytes,
    ptr)``, ``("free", ptr, nbytes)``, ``("record", stream)``,
    ``("synchronize", stream)``), so a test can check exactly when the allocator
    went to the device. Recorded events stay pending until :meth:`tick`
    completes them, which stands for the streams finishing their work.

    Args:
        capacity: the device's total memory in bytes.
        index: the device number shown in messages.

    Examples::

        >>> dev = FakeDevice(capacity=64 * MiB)
        >>> ptr = dev.raw_malloc(2 * MiB)
        >>> dev.free_memory() == 62 * MiB
        True
    """

    #: Where the first segment starts (any non-zero address would do).
    BASE_ADDRESS = 0x7F00_0000_0000

    def __init__(self, capacity: int = 1 * GiB, index: int = 0) -> None:
        self.capacity = capacity
        self.index = index
        self.used = 0
        self.segments: dict[int, int] = {}
        self.calls: list[tuple] = []
        self._next_address = self.BASE_ADDRESS
        self._pending: list[_FakeEvent] = []

    def raw_malloc(self, nbytes: int) -> int:
        """Hand out ``nbytes`` at a fresh address, or raise DeviceOutOfMemory past capacity."""
        if self.used + nbytes > self.capacity:
            self.calls.append(("malloc failed", nbytes))
            raise DeviceOutOfMemory(f"cannot allocate {nbytes} bytes")
        ptr = self._next_address
        self._next_address += nbytes
        self.segments[ptr] = nbytes
        self.used += nbytes
        self.calls.append(("malloc", nbytes, ptr))
        return ptr

    def raw_free(self, ptr: int) -> None:
        """Take back the segment at ``ptr``."""
        nbytes = self.segments.pop(ptr)
        self.used -= nbytes
        self.calls.append(("free", ptr, nbytes))

    def new_event(self) -> _FakeEvent:
        """A fresh, already completed event."""
        return _FakeEvent()

    def record_event(self, event: _FakeEvent, stream: int) -> None:
        """Mark ``event`` pending on ``stream`` until :meth:`tick`."""
        event.stream = stream
        event.done = False
        self._pending.append(event)
        self.calls.append(("record", stream))

    def query_event(self, event: _FakeEvent) -> bool:
        """Whether ``event`` was completed."""
        return event.done

    def synchronize_event(self, event: _FakeEvent) -> None:
        """Waiting for an event completes it (the stream runs until it gets there)."""
        if not event.done:
            self.calls.append(("synchronize", event.stream))
        event.done = True

    def tick(self, stream: int | None = None) -> int:
        """Complete the pending events of ``stream`` (of every stream if None); return how many."""
        finished = [e for e in self._pending if stream is None or e.stream == stream]
        for event in finished:
            event.done = True
        self._pending = [e for e in self._pending if not e.done]
        return len(finished)

    def total_memory(self) -> int:
        """The capacity given at construction."""
        return self.capacity

    def free_memory(self) -> int:
        """Capacity minus the segments handed out."""
        return self.capacity - self.used


# --------------------------------------------------------------------- sizes


def round_size(nbytes: int) -> int:
    """Round a request up to a multiple of 512 bytes (0 becomes 512)."""
    if nbytes < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return -(-nbytes // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE


def allocation_size(size: int) -> int:
    """The size of the segment requested from the device for a (rounded) request."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def format_size(nbytes: int) -> str:
    """A byte count as PyTorch prints it: "512 bytes", "1.50 KiB", "2.00 GiB"."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    if nbytes <= MiB:
        return f"{nbytes / KiB:.2f} KiB"
    if nbytes <= GiB:
        return f"{nbytes / MiB:.2f} MiB"
    return f"{nbytes / GiB:.2f} GiB"


# --------------------------------------------------------------------- blocks


@dataclass(eq=False)
class Block:
    """A piece of a segment: free in a pool, or handed out to a tensor.

    Attributes:
        ptr: the block's device address.
        size: its size in bytes (a multiple of 512).
        stream: the stream it was allocated on; it is reused only on that stream.
        pool: ``"small_pool"`` or ``"large_pool"``.
        requested_size: the caller's size before rounding (while allocated).
        allocated: whether a caller holds it.
        prev, next: the neighbouring blocks of the same segment, or None.
        stream_uses: other streams that used it (see ``record_stream``).
        event_count: events still pending before the freed block may be reused.
    """

    ptr: int
    size: int
    stream: int
    pool: str
    requested_size: int = 0
    allocated: bool = False
    prev: Block | None = field(default=None, repr=False)
    next: Block | None = field(default=None, repr=False)
    stream_uses: set[int] = field(default_factory=set, repr=False)
    event_count: int = 0

    @property
    def is_split(self) -> bool:
        """Whether the block shares its segment with other blocks."""
        return self.prev is not None or self.next is not None

    def key(self) -> tuple[int, int, int]:
        """The pool's sort key: same stream first, then smallest size, then lowest address."""
        return (self.stream, self.size, self.ptr)


class _Pool:
    """The free blocks of one pool, sorted by (stream, size, address) for best fit."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.keys: list[tuple[int, int, int]] = []
        self.blocks: dict[tuple[int, int, int], Block] = {}

    def insert(self, block: Block) -> None:
        key = block.key()
        bisect.insort(self.keys, key)
        self.blocks[key] = block

    def remove(self, block: Block) -> None:
        key = block.key()
        del self.keys[bisect.bisect_left(self.keys, key)]
        del self.blocks[key]

    def best_fit(self, stream: int, size: int) -> Block | None:
        """The smallest free block of ``stream`` holding at least ``size`` bytes."""
        i = bisect.bisect_left(self.keys, (stream, size, 0))
        if i == len(self.keys) or self.keys[i][0] != stream:
            return None
        return self.blocks[self.keys[i]]

    def __iter__(self):
        return iter(list(self.blocks.values()))


class _Stat:
    """One statistic: its current value, peak, and totals added and removed."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self) -> None:
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, amount: int) -> None:
        """Add ``amount`` (negative to remove)."""
        self.current += amount
        if amount >= 0:
            self.allocated += amount
            self.peak = max(self.peak, self.current)
        else:
            self.freed -= amount


# --------------------------------------------------------------------- allocator


class CachingAllocator:
    """PyTorch's caching allocator for one device.

    Args:
        device: the :class:`Device` that provides raw memory and events.

    Examples::

        >>> alloc = CachingAllocator(FakeDevice(capacity=64 * MiB))
        >>> block = alloc.malloc(1000)
        >>> block.size, alloc.memory_reserved()
        (1024, 2097152)
        >>> alloc.free(block)
        >>> alloc.memory_allocated(), alloc.memory_reserved()
        (0, 2097152)
    """

    def __init__(self, device: Device) -> None:
        self.device = device
        self._pools = {SMALL_POOL: _Pool(SMALL_POOL), LARGE_POOL: _Pool(LARGE_POOL)}
        self._segments: dict[int, Block] = {}  # first block of each segment, by address
        self._allocated: dict[int, Block] = {}  # blocks held by callers, by address
        # Per stream, the (event, block) pairs recorded at free time, oldest first.
        self._pending: dict[int, deque[tuple[Any, Block]]] = {}
        self._spare_events: list[Any] = []
        self._lock = threading.RLock()
        self._stats = {(name, pool): _Stat() for name in _ARRAY_STATS for pool in _POOL_NAMES}
        self._counters = dict.fromkeys(_SCALAR_STATS, 0)

    # ------------------------------------------------------------- malloc / free

    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """Hand out a block of at least ``nbytes`` bytes for use on ``stream``.

        Raises:
            OutOfMemoryError: the device has no room even after the cache was emptied.
        """
        if nbytes < 0:
            raise ValueError(f"malloc(): the size must be non-negative, got {nbytes}")
        with self._lock:
            self._process_events()
            size = round_size(nbytes)
            pool = self._pools[SMALL_POOL if size <= SMALL_SIZE else LARGE_POOL]
            block = pool.best_fit(stream, size)
            if block is not None:
                self._leave_pool(block)
            else:
                block = self._new_segment(allocation_size(size), stream, pool.name)
            if block is None:
                # Rule 8: give back every whole cached segment, then try once more.
                self._release_cached_blocks()
                self._counters["num_alloc_retries"] += 1
                block = self._new_segment(allocation_size(size), stream, pool.name)
            if block is None:
                self._counters["num_ooms"] += 1
                raise OutOfMemoryError(self._oom_message(size))
            if self._should_split(block, size):
                self._split(block, size)
            self._hand_out(block, nbytes)
            return block

    def free(self, block: Block) -> None:
        """Take ``block`` back: into the pool now, or once the streams that used it are done."""
        with self._lock:
            if self._allocated.get(block.ptr) is not block:
                raise ValueError(f"free(): the block at {block.ptr:#x} is not allocated here")
            del self._allocated[block.ptr]
            block.allocated = False
            self._update(block.pool, "allocation", -1)
            self._update(block.pool, "allocated_bytes", -block.size)
            self._update(block.pool, "requested_bytes", -block.requested_size)
            if block.stream_uses:
                self._record_free_events(block)
            else:
                self._return_to_pool(block)

    def record_stream(self, block: Block, stream: int) -> None:
        """Note that ``block`` is used on ``stream`` too (``Tensor.record_stream``).

        Its memory is then not reused until the work queued on ``stream`` at the
        time it is freed has completed. Recording the allocation stream is a no-op.
        """
        with self._lock:
            if stream != block.stream:
                block.stream_uses.add(stream)

    def empty_cache(self) -> None:
        """Give every cached segment that holds no allocated block back to the device."""
        with self._lock:
            self._release_cached_blocks()

    # ------------------------------------------------------------- the rules

    @staticmethod
    def _should_split(block: Block, size: int) -> bool:
        """Rule 5: split when the remainder is worth keeping in its pool."""
        remaining = block.size - size
        if block.pool == SMALL_POOL:
            return remaining >= MIN_BLOCK_SIZE
        return remaining > SMALL_SIZE

    def _split(self, block: Block, size: int) -> None:
        """Cut ``block`` to ``size`` bytes; the tail becomes a free block in the pool."""
        tail = Block(block.ptr + size, block.size - size, block.stream, block.pool)
        tail.prev, tail.next = block, block.next
        if block.next is not None:
            block.next.prev = tail
        block.next = tail
        block.size = size
        self._enter_pool(tail)

    def _new_segment(self, nbytes: int, stream: int, pool: str) -> Block | None:
        """Rule 3: ask the device for a segment; None when it refuses."""
        try:
            ptr = self.device.raw_malloc(nbytes)
        except DeviceOutOfMemory:
            return None
        self._counters["num_device_alloc"] += 1
        self._update(pool, "segment", 1)
        self._update(pool, "reserved_bytes", nbytes)
        block = Block(ptr, nbytes, stream, pool)
        self._segments[ptr] = block
        return block

    def _hand_out(self, block: Block, requested: int) -> None:
        note = getattr(self.device, "note_allocation", None)
        if note is not None:  # a device that checks kernels' accesses (the simulator)
            note(block.ptr, requested, block.stream)
        block.allocated = True
        block.requested_size = requested
        self._allocated[block.ptr] = block
        self._update(block.pool, "allocation", 1)
        self._update(block.pool, "allocated_bytes", block.size)
        self._update(block.pool, "requested_bytes", requested)
        self._update(block.pool, "active", 1)
        self._update(block.pool, "active_bytes", block.size)

    def _return_to_pool(self, block: Block) -> None:
        """Rule 6: merge with free neighbours, then put the result in its pool."""
        self._update(block.pool, "active", -1)
        self._update(block.pool, "active_bytes", -block.size)
        block.stream_uses.clear()
        for neighbour in (block.prev, block.next):
            if neighbour is not None and self._is_free(neighbour):
                self._merge(block, neighbour)
        self._enter_pool(block)

    def _is_free(self, block: Block) -> bool:
        """Whether a neighbour sits in the pool (not allocated, not waiting on events)."""
        return not block.allocated and block.event_count == 0 and not block.stream_uses

    def _merge(self, block: Block, neighbour: Block) -> None:
        """Absorb the free ``neighbour`` (just before or just after) into ``block``."""
        self._leave_pool(neighbour)
        if neighbour is block.prev:
            if self._segments.get(neighbour.ptr) is neighbour:
                self._segments[neighbour.ptr] = block
            block.ptr = neighbour.ptr
            block.prev = neighbour.prev
            if block.prev is not None:
                block.prev.next = block
        else:
            block.next = neighbour.next
            if block.next is not None:
                block.next.prev = block
        block.size += neighbour.size

    def _enter_pool(self, block: Block) -> None:
        self._pools[block.pool].insert(block)
        if block.is_split:
            self._update(block.pool, "inactive_split", 1)
            self._update(block.pool, "inactive_split_bytes", block.size)

    def _leave_pool(self, block: Block) -> None:
        self._pools[block.pool].remove(block)
        if block.is_split:
            self._update(block.pool, "inactive_split", -1)
            self._update(block.pool, "inactive_split_bytes", -block.size)

    # ------------------------------------------------------------- streams and events

    def _record_free_events(self, block: Block) -> None:
        """Rule 7: one event per stream that used the block; the block waits for all."""
        for stream in sorted(block.stream_uses):
            event = self._spare_events.pop() if self._spare_events else self.device.new_event()
            self.device.record_event(event, stream)
            block.event_count += 1
            self._pending.setdefault(stream, deque()).append((event, block))
        block.stream_uses.clear()

    def _event_done(self, event: Any, block: Block) -> None:
        self._spare_events.append(event)
        block.event_count -= 1
        if block.event_count == 0:
            self._return_to_pool(block)

    def _process_events(self) -> None:
        """Return the blocks whose events have all completed (oldest first, per stream)."""
        for queue in self._pending.values():
            while queue and self.device.query_event(queue[0][0]):
                self._event_done(*queue.popleft())

    def _synchronize_events(self) -> None:
        """Wait for every pending event (before giving memory back to the device)."""
        self._counters["num_sync_all_streams"] += 1
        for queue in self._pending.values():
            while queue:
                event, block = queue.popleft()
                self.device.synchronize_event(event)
                self._event_done(event, block)

    def _release_cached_blocks(self) -> None:
        """Free every whole (unsplit) segment sitting in a pool."""
        self._synchronize_events()
        for pool in self._pools.values():
            for block in pool:
                if not block.is_split:
                    self._leave_pool(block)
                    del self._segments[block.ptr]
                    self.device.raw_free(block.ptr)
                    self._counters["num_device_free"] += 1
                    self._update(block.pool, "segment", -1)
                    self._update(block.pool, "reserved_bytes", -block.size)

    # ------------------------------------------------------------- statistics

    def _update(self, pool: str, name: str, amount: int) -> None:
        self._stats[(name, "all")].add(amount)
        self._stats[(name, pool)].add(amount)

    def memory_stats(self) -> dict[str, int]:
        """The statistics, flattened with "." and sorted, as ``torch.cuda.memory_stats``.

        Keys are ``<stat>.<all|small_pool|large_pool>.<current|peak|allocated|freed>``
        for the stats ``allocation``, ``segment``, ``active``, ``inactive_split``,
        ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``,
        ``inactive_split_bytes`` and ``requested_bytes``, plus the counters
        ``num_alloc_retries``, ``num_ooms``, ``num_sync_all_streams``,
        ``num_device_alloc`` and ``num_device_free``.
        """
        with self._lock:
            result = dict(self._counters)
            for (name, pool), stat in self._stats.items():
                for part in _Stat.__slots__:
                    result[f"{name}.{pool}.{part}"] = getattr(stat, part)
            return dict(sorted(result.items()))

    def memory_allocated(self) -> int:
        """Bytes held by callers (rounded sizes): ``allocated_bytes.all.current``."""
        return self._stats[("allocated_bytes", "all")].current

    def max_memory_allocated(self) -> int:
        """The peak of :meth:`memory_allocated` since the last reset."""
        return self._stats[("allocated_bytes", "all")].peak

    def memory_reserved(self) -> int:
        """Bytes obtained from the device (all segments): ``reserved_bytes.all.current``."""
        return self._stats[("reserved_bytes", "all")].current

    def max_memory_reserved(self) -> int:
        """The peak of :meth:`memory_reserved` since the last reset."""
        return self._stats[("reserved_bytes", "all")].peak

    def reset_peak_memory_stats(self) -> None:
        """Set every ``peak`` to its ``current`` value."""
        with self._lock:
            for stat in self._stats.values():
                stat.peak = stat.current

    def reset_accumulated_memory_stats(self) -> None:
        """Zero the ``allocated``/``freed`` totals and the counters."""
        with self._lock:
            for stat in self._stats.values():
                stat.allocated = stat.freed = 0
            self._counters = dict.fromkeys(_SCALAR_STATS, 0)

    def memory_snapshot(self) -> list[dict[str, Any]]:
        """Every segment with its blocks, in address order (like ``torch.cuda.memory_snapshot``).

        Each segment is a dict with ``address``, ``total_size``, ``stream``,
        ``segment_type`` ("small" or "large"), ``allocated_size``,
        ``active_size``, ``requested_size`` and ``blocks``; each block has
        ``address``, ``size``, ``requested_size`` and ``state``: "active_allocated",
        "active_pending_free" (freed, waiting on events) or "inactive" (free).
        """
        with self._lock:
            return [self._describe_segment(self._segments[p]) for p in sorted(self._segments)]

    def _describe_segment(self, head: Block) -> dict[str, Any]:
        blocks = []
        block: Block | None = head
        while block is not None:
            if block.allocated:
                state = "active_allocated"
            elif block.event_count or block.stream_uses:
                state = "active_pending_free"
            else:
                state = "inactive"
            blocks.append(
                {
                    "address": block.ptr,
                    "size": block.size,
                    "requested_size": block.requested_size if block.allocated else 0,
                    "state": state,
                }
            )
            block = block.next
        return {
            "device": self.device.index,
            "address": head.ptr,
            "total_size": sum(b["size"] for b in blocks),
            "stream": head.stream,
            "segment_type": "small" if head.pool == SMALL_POOL else "large",
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
            "requested_size": sum(b["requested_size"] for b in blocks),
            "blocks": blocks,
        }

    def memory_summary(self) -> str:
        """A readable table of the statistics (the layout of ``torch.cuda.memory_summary``)."""
        stats = self.memory_stats()
        rows = [
            ("Allocated memory", "allocated_bytes", True),
            ("Active memory", "active_bytes", True),
            ("Requested memory", "requested_bytes", True),
            ("GPU reserved memory", "reserved_bytes", True),
            ("Non-releasable memory", "inactive_split_bytes", True),
            ("Allocations", "allocation", False),
            ("Active allocs", "active", False),
            ("GPU reserved segments", "segment", False),
            ("Non-releasable allocs", "inactive_split", False),
        ]
        width = 75
        rule = "|" + "=" * (width - 2) + "|"
        thin = "|" + "-" * (width - 2) + "|"
        lines = [
            rule,
            "|{:^73}|".format(f"glasstorch CUDA memory summary, device ID {self.device.index}"),
            thin,
            "|  {:<71}|".format(
                f"CUDA OOMs: {stats['num_ooms']}"
                f"  |  cudaMalloc retries: {stats['num_alloc_retries']}"
            ),
            rule,
            "|{:<25}|{:>11} |{:>11} |{:>11} |{:>11} |".format(
                "        Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"
            ),
        ]
        for title, name, is_bytes in rows:
            lines.append(thin)
            for pool, label in (
                ("all", title),
                (LARGE_POOL, "      from large pool"),
                (SMALL_POOL, "      from small pool"),
            ):
                values = [stats[f"{name}.{pool}.{part}"] for part in _Stat.__slots__]
                text = [format_size(v) if is_bytes else str(v) for v in values]
                lines.append("|{:<25}|{:>11} |{:>11} |{:>11} |{:>11} |".format(label, *text))
        lines.append(rule)
        lines.append(
            "|  {:<71}|".format(
                f"Device allocs: {stats['num_device_alloc']}"
                f"  |  Device frees: {stats['num_device_free']}"
            )
        )
        lines.append(rule)
        return "\n".join(lines) + "\n"

    def _oom_message(self, size: int) -> str:
        """PyTorch's out-of-memory message, with glasstorch's own advice."""
        allocated = self.memory_allocated()
        reserved = self.memory_reserved()
        return (
            f"CUDA out of memory. Tried to allocate {format_size(size)}. "
            f"GPU {self.device.index} has a total capacity of "
            f"{format_size(self.device.total_memory())} of which "
            f"{format_size(self.device.free_memory())} is free. "
            f"Of the allocated memory {format_size(allocated)} is allocated by glasstorch, "
            f"and {format_size(reserved - allocated)} is reserved by glasstorch but "
            "unallocated. Free the tensors you no longer need (del them), or use smaller "
            "batches; glasstorch has no expandable segments to reduce fragmentation."
        )
