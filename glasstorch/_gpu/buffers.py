"""``DeviceBuffer``: the buffer of a CUDA storage, and how its memory goes back.

A CPU storage holds a NumPy array; a CUDA storage holds a :class:`DeviceBuffer`
(the contract's ``Strided.buffer`` on the device). Its memory is a block of the
caching allocator (:mod:`glasstorch._gpu.allocator`), and the block returns
to the allocator's cache the moment the buffer is collected: in CPython, when
the last tensor that views the storage goes away (paper §5.5). The memory is
not given back to the device; the next allocation of a similar size reuses
it, which ``torch.cuda.memory_allocated()`` shows at once.

Freeing from ``__del__`` may happen at any moment, even while the allocator is
busy on this thread (the garbage collector runs inside any allocation). Such a
free is put on a list and done by the next allocator call.
"""

from __future__ import annotations

import threading

import numpy as np

from glasstorch._gpu import runtime as _runtime

_guard = threading.RLock()
_busy = threading.local()  # .depth: allocator calls in progress on this thread
_deferred: list = []  # blocks whose free came while the allocator was busy


class DeviceBuffer:
    """Flat device memory holding ``size`` elements of ``dtype``.

    Attributes:
        ptr: device address of element 0 (an int).
        dtype: the NumPy dtype of the elements, as CPU buffers have.
        size: number of elements (``len(buffer)``).
        nbytes: ``size * dtype.itemsize``.
        device_index: the CUDA device (always 0: glasstorch drives one device).
    """

    __slots__ = ("ptr", "dtype", "size", "nbytes", "device_index", "_block", "__weakref__")

    def __init__(self, block, dtype: np.dtype, size: int) -> None:
        self._block = block
        self.ptr = block.ptr
        self.dtype = np.dtype(dtype)
        self.size = size
        self.nbytes = size * self.dtype.itemsize
        self.device_index = 0

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"DeviceBuffer(ptr={self.ptr:#x}, dtype={self.dtype}, size={self.size})"

    def record_stream(self, stream_number: int) -> None:
        """Keep the memory from reuse until ``stream``'s queued work is done."""
        with _guard:
            _enter()
            try:
                _runtime.allocator().record_stream(self._block, stream_number)
            finally:
                _leave()

    def __del__(self) -> None:
        block = self._block
        if block is None:
            return
        self._block = None
        release(block)


def _enter() -> None:
    _busy.depth = getattr(_busy, "depth", 0) + 1


def _leave() -> None:
    _busy.depth -= 1
    if _busy.depth == 0 and _deferred:
        allocator = _runtime.allocator()
        while _deferred:
            block = _deferred.pop()
            _busy.depth = 1
            try:
                allocator.free(block)
            finally:
                _busy.depth = 0


def release(block) -> None:
    """Return ``block`` to the caching allocator (later, if it is busy on this thread)."""
    if getattr(_busy, "depth", 0):
        _deferred.append(block)
        return
    with _guard:
        _enter()
        try:
            _runtime.allocator().free(block)
        finally:
            _leave()


def device_empty(numel: int, dtype) -> DeviceBuffer:
    """A new buffer of ``numel`` elements of NumPy ``dtype`` on the current stream.

    Raises:
        glasstorch.cuda.OutOfMemoryError: the device has no room, even after
            the allocator emptied its cache.
    """
    dtype = np.dtype(dtype)
    stream = _runtime.current_stream()
    with _guard:
        _enter()
        try:
            block = _runtime.allocator().malloc(numel * dtype.itemsize, stream.number)
        finally:
            _leave()
    return DeviceBuffer(block, dtype, numel)
