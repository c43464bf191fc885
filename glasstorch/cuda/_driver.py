"""The device interface: what glasstorch needs from a GPU runtime, and how one is chosen.

A *driver* is a small object with the operations a GPU runtime offers
(CUDA's runtime API in miniature): allocate and free device memory, copy
host-to-device, device-to-host and device-to-device, set memory, load a
``.cu`` file and launch one of its kernels with a grid, a block and arguments
on a stream, create, synchronize and wait on streams, record, query,
synchronize and time events. Two drivers implement it:

* :class:`~glasstorch.cuda._sim_driver.SimulatorDriver`: the CUDA simulator
  (``fast/cuda/gt_cuda_sim.h``), which runs the very same ``.cu`` sources on
  the CPU, one worker thread per stream;
* :class:`~glasstorch.cuda._cupy_driver.CupyDriver`: a real NVIDIA GPU through
  CuPy (NVRTC compiles the sources; memory comes from ``cudaMalloc``).

Everything above the driver (the caching allocator, ``DeviceBuffer``, the
kernels' launch helpers, ``glasstorch.cuda``'s streams and events) is written
once against this interface.

Selection: ``GLASSTORCH_CUDA=auto|cupy|simulator|off``, read once when
glasstorch is imported (:func:`select_driver`). ``auto`` (the default) takes a
GPU through CuPy when there is one and otherwise runs without CUDA, so
``torch.cuda.is_available()`` is False, as PyTorch's is on such a machine.
"""

from __future__ import annotations

import os
from typing import Any

#: The values GLASSTORCH_CUDA accepts.
CHOICES = ("auto", "cupy", "simulator", "off")


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

    def compile_source(self, code: str, options: tuple[str, ...]) -> Any:
        """A module compiled from a user's CUDA source (``RawModule``), whose
        ``get_function(name)`` gives kernels that :meth:`launch` takes."""
        raise NotImplementedError

    def launch(self, kernel: Any, grid: tuple, block: tuple, args: tuple, stream: Any) -> None:
        """Queue ``kernel`` over ``grid`` x ``block`` with ``args`` (converted by the
        kernel's parameter types, read from its source) on ``stream``; return at once."""
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


def _cupy_status() -> str | None:
    """None when CuPy is installed and sees a GPU; otherwise why not."""
    try:
        import cupy
    except ImportError as error:
        return f"CuPy is not installed ({error})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - any CUDA failure means "no usable GPU"
        return f"CuPy finds no usable CUDA device ({error})"
    return None if count > 0 else "CuPy finds no CUDA device"


def select_driver(choice: str | None = None) -> Driver | None:
    """The driver ``GLASSTORCH_CUDA`` asks for, or None for no CUDA at all.

    Args:
        choice: ``auto``, ``cupy``, ``simulator`` or ``off``; default: the
            environment variable ``GLASSTORCH_CUDA`` (``auto`` when unset).

    Raises:
        ValueError: an unknown value.
        RuntimeError: ``cupy`` where CuPy or a GPU is missing.
    """
    if choice is None:
        choice = os.environ.get("GLASSTORCH_CUDA", "auto")
    choice = choice.strip().lower() or "auto"
    if choice not in CHOICES:
        raise ValueError(
            f"GLASSTORCH_CUDA={choice!r} is not a CUDA driver; use one of {', '.join(CHOICES)} "
            "(auto: a GPU through CuPy if there is one, else no CUDA; simulator: the CUDA "
            "simulator, on any machine with a C compiler; off: no CUDA)"
        )
    if choice == "off":
        return None
    if choice == "simulator":
        from glasstorch.cuda._sim_driver import SimulatorDriver

        return SimulatorDriver()
    problem = _cupy_status()
    if problem is None:
        from glasstorch.cuda._cupy_driver import CupyDriver

        return CupyDriver()
    if choice == "cupy":
        raise RuntimeError(
            f"GLASSTORCH_CUDA=cupy needs CuPy and an NVIDIA GPU, but {problem}. Install CuPy "
            "for your CUDA version (pip install 'glasstorch[cuda]' or cupy-cuda12x) on a machine "
            "with a GPU, or use GLASSTORCH_CUDA=simulator to run the CUDA kernels on the CPU, "
            "or GLASSTORCH_CUDA=off."
        )
    return None  # auto without a GPU: no CUDA, as PyTorch on such a machine
