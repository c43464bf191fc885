"""``glasstorch.cuda``: the GPU, its streams, events and memory, with PyTorch's API.

Which GPU runtime runs is chosen once, at import, by ``GLASSTORCH_CUDA``:

* ``auto`` (the default): a real NVIDIA GPU through CuPy if there is one,
  otherwise no CUDA at all (``is_available()`` is False, as in PyTorch on
  such a machine, and a program written as PyTorch's tutorials write it,
  ``device = "cuda" if torch.cuda.is_available() else "cpu"``, runs on the CPU);
* ``cupy``: the GPU through CuPy (an error says what to do if there is none);
* ``simulator``: the CUDA simulator, which runs the same ``.cu`` kernels on
  the CPU with CUDA's execution model (``get_device_name()`` says so);
* ``off``: no CUDA.

Without CUDA, seeding calls are accepted and do nothing (as PyTorch's are),
queries answer truthfully that there is no device, and calls that need a
device raise PyTorch's ``AssertionError``. See ``docs/guide/gpu.md``.

The API is laid out as ``torch.cuda``'s: this module holds the device calls
(``is_available``, ``get_device_properties``, ``synchronize``, seeding) and
re-exports the rest: :mod:`~glasstorch.cuda.streams` (``Stream``, ``Event``,
``stream()``, ...), :mod:`~glasstorch.cuda.memory` (``memory_allocated``,
``memory_stats``, ``empty_cache``, ...) and, when first asked for,
:mod:`~glasstorch.cuda.raw_kernels` (``RawKernel``, ``RawModule``).
"""

from __future__ import annotations

from typing import Any

from glasstorch._gpu import runtime as _runtime
from glasstorch._gpu.sanitizer import (
    InitcheckError,
    KernelFault,
    MemcheckError,
    RacecheckError,
    SanitizerError,
    SynccheckError,
)
from glasstorch.cuda._device import active_driver as _driver
from glasstorch.cuda._device import device_count
from glasstorch.cuda._device import device_index as _index
from glasstorch.cuda.memory import (
    OutOfMemoryError,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from glasstorch.cuda.streams import (
    Event,
    Stream,
    StreamArgumentError,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "Event",
    "InitcheckError",
    "KernelFault",
    "MemcheckError",
    "OutOfMemoryError",
    "RacecheckError",
    "RawKernel",
    "RawModule",
    "SanitizerError",
    "Stream",
    "SynccheckError",
    "current_device",
    "current_stream",
    "default_stream",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]

# ------------------------------------------------------------------ the device


def is_available() -> bool:
    """Whether a CUDA device can be used (a GPU through CuPy, or the simulator)."""
    return _runtime.driver is not None


def is_initialized() -> bool:
    """Whether the CUDA runtime has started (its allocator exists)."""
    return _runtime._allocator is not None


def current_device() -> int:
    """The index of the current CUDA device: 0."""
    _driver()
    return 0


def set_device(device: Any) -> None:
    """Make ``device`` current; only ``cuda:0`` exists (another index raises)."""
    _driver()
    _index(device)


def get_device_name(device: Any = None) -> str:
    """The device's name (the simulator's is ``"glasstorch CUDA simulator"``)."""
    return _driver().device_name(_index(device))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The compute capability ``(major, minor)``."""
    driver = _driver()
    _index(device)
    return driver.capability()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether tensors on the device can compute in bfloat16: False in glasstorch.

    ``glasstorch.bfloat16`` is a name only (programs mention it; no kernel computes
    in it), so programs that choose their dtype with this call, as nanoGPT does,
    pick float32. On a PyTorch GPU of compute capability 8.0 or later it is True.

    Args:
        including_emulation: accepted for PyTorch's signature; it changes nothing.
    """
    _driver()
    return False


class _DeviceProperties:
    """What ``get_device_properties`` returns: name, total_memory, major, minor, ..."""

    def __init__(self, driver) -> None:
        self.name = driver.device_name(0)
        self.total_memory = driver.mem_get_info()[1]
        self.major, self.minor = driver.capability()
        self.multi_processor_count = driver.multi_processor_count()

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


def get_device_properties(device: Any = None) -> _DeviceProperties:
    """The device's properties: ``name``, ``total_memory`` (bytes), ``major``, ``minor``,
    ``multi_processor_count``."""
    driver = _driver()
    _index(device)
    return _DeviceProperties(driver)


def synchronize(device: Any = None) -> None:
    """Wait until every stream of the device has finished its queued work."""
    _driver().synchronize()


def manual_seed(seed: int) -> None:
    """Seed the CUDA generator.

    glasstorch's random kernels draw from one Philox generator (the CPU's
    ``torch.manual_seed``) on every device, so this seeds that generator when
    CUDA is active, and does nothing without CUDA (as PyTorch's does).
    """
    seed = int(seed)
    if _runtime.driver is not None:
        from glasstorch.random import manual_seed as seed_all

        seed_all(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator (see :func:`manual_seed`)."""
    manual_seed(seed)


def __getattr__(name: str):
    # RawKernel and RawModule (CuPy's API for your own kernels) live in
    # raw_kernels, which needs the Tensor class: imported when first asked for.
    if name in ("RawKernel", "RawModule"):
        from glasstorch.cuda import raw_kernels

        return getattr(raw_kernels, name)
    raise AttributeError(f"module 'glasstorch.cuda' has no attribute {name!r}")
