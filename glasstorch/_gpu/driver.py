"""The device interface: what glasstorch needs from a GPU runtime.

A *driver* is a small object with the operations a GPU runtime offers
(CUDA's runtime API in miniature): allocate and free device memory, copy
host-to-device, device-to-host and device-to-device, set memory, load a
``.cu`` file and launch one of its kernels with a grid, a block and arguments
on a stream, create, synchronize and wait on streams, record, query,
synchronize and time events. Two drivers implement it, beside the kernels
they run (the fast tier's ``fast/cuda/``):

* the CUDA simulator's (``fast/cuda/simulator/``), which runs the very same
  ``.cu`` sources on the CPU, one worker thread per stream;
* CuPy's (``fast/cuda/cupy_driver.py``): a real NVIDIA GPU (NVRTC compiles
  the sources; memory comes from ``cudaMalloc``).

Everything above the driver (the caching allocator, ``DeviceBuffer``, the
kernels' launch helpers, ``glasstorch.cuda``'s streams and events) is written
once against this interface. What the kernels take from the driver they are
built with (the current stream, device memory from the caching allocator, the
trace hooks) is implemented once, here in the base class, over this
process's runtime state (:mod:`glasstorch._gpu.runtime`).

Which driver runs is chosen once, when glasstorch is imported, from
``GLASSTORCH_CUDA`` (:func:`glasstorch._tier.select_driver`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from glasstorch._gpu import runtime, trace
from glasstorch._gpu.allocator import DeviceOutOfMemory, format_size
from glasstorch._gpu.buffers import DeviceBuffer, device_empty

__all__ = ["DeviceBuffer", "DeviceOutOfMemory", "Driver", "format_size"]


class Driver:
    """The interface every driver implements (each method says what it must do).

    Streams and events are opaque handles of the driver's own; ``None`` as a
    stream means the default stream. Pointers are ints (device addresses).
    """

    #: "simulator" or "cupy".
    name = "abstract"

    # ---- the device
    def device_count(self) -> int:
        """How many devices this driver drives."""
        raise NotImplementedError

    def device_name(self, index: int = 0) -> str:
        """The device's name, as ``torch.cuda.get_device_name`` prints it."""
        raise NotImplementedError

    def mem_get_info(self) -> tuple[int, int]:
        """(free bytes, total bytes) of device memory, as ``cudaMemGetInfo``."""
        raise NotImplementedError

    def capability(self) -> tuple[int, int]:
        """The compute capability (major, minor)."""
        raise NotImplementedError

    def multi_processor_count(self) -> int:
        """How many streaming multiprocessors the device has."""
        raise NotImplementedError

    # ---- memory
    def malloc(self, nbytes: int) -> int:
        """Device memory (``cudaMalloc``); raise ``DeviceOutOfMemory`` when there is none."""
        raise NotImplementedError

    def free(self, ptr: int) -> None:
        """Give memory from :meth:`malloc` back (``cudaFree``)."""
        raise NotImplementedError

    def memcpy_h2d(self, dst: int, src: Any, stream: Any) -> None:
        """Queue a copy of the contiguous host buffer ``src`` to ``dst``.

        ``src`` may be reused as soon as the call returns (pageable memory is
        staged, as CUDA does).
        """
        raise NotImplementedError

    def memcpy_d2h(self, dst: Any, src: int, stream: Any) -> None:
        """Copy ``len(dst)`` bytes from ``src`` into the writable host buffer ``dst``.

        Synchronous: waits for ``stream``'s earlier work, as ``cudaMemcpy`` to
        pageable memory does.
        """
        raise NotImplementedError

    def memcpy_d2d(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        """Queue a device-to-device copy of ``nbytes``."""
        raise NotImplementedError

    def memset(self, ptr: int, value: int, nbytes: int, stream: Any) -> None:
        """Queue setting ``nbytes`` bytes at ``ptr`` to the byte ``value``."""
        raise NotImplementedError

    # ---- kernels
    def get_function(self, source: str, name: str) -> Any:
        """Kernel ``name`` of ``fast/cuda/<source>``, compiled on first use and cached."""
        raise NotImplementedError

    def compile_source(
        self,
        code: str,
        options: tuple[str, ...],
        sim_check: str | None = None,
        filename: str = "raw_module.cu",
    ) -> Any:
        """A module compiled from a user's CUDA source (``RawModule``), whose
        ``get_function(name)`` gives kernels that :meth:`launch` takes.

        ``sim_check`` (the user's choice of sanitizer checks, ``None`` for the
        default) and ``filename`` (the name reports and compile errors give the
        source) concern a driver that checks kernels, the simulator; a GPU's
        ignores them."""
        raise NotImplementedError

    def launch(
        self,
        kernel: Any,
        grid: tuple,
        block: tuple,
        args: tuple,
        stream: Any,
        shared_mem: int = 0,
        extents: list[tuple[int, int]] | None = None,
    ) -> None:
        """Queue ``kernel`` over ``grid`` x ``block`` with ``args`` (converted by the
        kernel's parameter types, read from its source) on ``stream``, with
        ``shared_mem`` bytes of dynamic shared memory per block; return at once.
        ``extents``: each pointer argument's allocation ``(address, nbytes)``, for
        a driver that checks accesses (the simulator); others ignore it."""
        raise NotImplementedError

    # ---- streams
    def create_stream(self, priority: int = 0) -> Any:
        """A new stream."""
        raise NotImplementedError

    def default_stream(self) -> Any:
        """The default (null) stream's handle."""
        raise NotImplementedError

    def stream_synchronize(self, stream: Any) -> None:
        """Wait until ``stream`` has run all its queued work."""
        raise NotImplementedError

    def stream_query(self, stream: Any) -> bool:
        """Whether ``stream`` has finished all its work."""
        raise NotImplementedError

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Make ``stream``'s later work wait for ``event``'s last record."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for every stream of the device (``cudaDeviceSynchronize``)."""
        raise NotImplementedError

    # ---- events
    def create_event(self, enable_timing: bool = False) -> Any:
        """A new event."""
        raise NotImplementedError

    def event_record(self, event: Any, stream: Any) -> None:
        """Record ``event`` at the current end of ``stream``'s queue."""
        raise NotImplementedError

    def event_query(self, event: Any) -> bool:
        """Whether ``event``'s last record has completed (True if never recorded)."""
        raise NotImplementedError

    def event_synchronize(self, event: Any) -> None:
        """Wait until ``event``'s last record has completed."""
        raise NotImplementedError

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two completed events."""
        raise NotImplementedError

    # ---- what kernels take from the driver (the same for every driver)
    #: The observers of device work (:data:`glasstorch._gpu.trace.observers`,
    #: the same list): a kernel tests it before each launch and copy.
    observers: list = trace.observers

    def current_stream(self) -> Any:
        """This thread's current ``glasstorch.cuda.Stream`` (its ``handle`` is this
        driver's stream, its ``number`` the allocator's)."""
        return runtime.current_stream()

    def device_empty(self, numel: int, dtype: Any) -> DeviceBuffer:
        """A new buffer of ``numel`` elements of NumPy ``dtype`` from the caching
        allocator, on the current stream."""
        return device_empty(numel, np.dtype(dtype))

    def traced(self, kind: str, name: str, stream: Any, queue) -> None:
        """Run ``queue()`` (which queues work on ``stream``) between two timing
        events, and tell every observer (see :mod:`glasstorch._gpu.trace`)."""
        start, end = trace.make_timing_event(), trace.make_timing_event()
        start.record(stream)
        queue()
        end.record(stream)
        for observer in list(trace.observers):
            observer(kind, name, stream, start, end)
