"""``CudaKernelsBase``: what every CUDA kernel family's mixin builds on.

A CUDA kernel method of the contract does three things: find the device
addresses of its operands (:meth:`~CudaKernelsBase.ptr`), describe their shapes
and strides to the kernel (:meth:`~CudaKernelsBase.meta`), and queue the kernel
on the current stream (:meth:`~CudaKernelsBase.launch`). The host never waits
for the device here: a launch returns as soon as the work is queued, so Python
runs ahead of the GPU (paper §5.2). Only reading a result back
(:meth:`~CudaKernelsBase.read_int64`, or a copy to the host) waits.

Kernel names carry a dtype suffix (:meth:`~CudaKernelsBase.suffix`): ``fill_f32``,
``unary_i64``, ... as ``fast/cuda/gt_cuda_common.cuh``'s ``GT_FOR_EACH_DTYPE``
instantiates them.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from glasstorch._kernels import Kernels, Strided

#: Threads per block of a 1-D launch: 8 warps, enough to hide memory latency
#: on every GPU while leaving room for several blocks per multiprocessor.
BLOCK = 256
#: The most blocks a 1-D launch uses: with grid-stride loops more blocks would
#: only add scheduling work once every multiprocessor is busy.
MAX_GRID = 4096

#: NumPy dtype -> kernel-name suffix.
SUFFIXES = {
    np.dtype(np.bool_): "b8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}


def _dim3(size) -> tuple[int, int, int]:
    sizes = (size,) if isinstance(size, int) else tuple(size)
    return tuple(int(s) for s in sizes) + (1,) * (3 - len(sizes))


class CudaKernelsBase(Kernels):
    """The launch helpers; each family's mixin adds contract methods on top.

    Args:
        driver: the active :class:`glasstorch._gpu.driver.Driver`; the kernels take
            the current stream, device memory and the trace hooks from it.
    """

    name = "cuda"

    #: What :meth:`scratch_int64` fills a new scratch buffer with: "nothing found".
    SENTINEL = (1 << 63) - 1

    def __init__(self, driver, host: Kernels) -> None:
        self.driver = driver
        #: The CPU tier's kernels: the host side of a copy between host and
        #: device, and the host's rules for converting values (a float into an
        #: integer tensor), so both devices convert alike.
        self.host = host
        #: The grid cap of :meth:`launch`: :data:`MAX_GRID`, or less where the
        #: driver says more blocks only cost (the simulator runs one block at a
        #: time per stream, and starting a block's threads is its main cost).
        self.max_grid = min(MAX_GRID, getattr(driver, "max_grid", MAX_GRID))
        self._local = threading.local()  # .keep: meta buffers of the launch being queued

    # ------------------------------------------------------------- launching
    def launch(self, source: str, name: str, n: int, *args) -> None:
        """A 1-D grid-stride launch covering ``n`` work items on the current stream.

        Blocks of :data:`BLOCK` threads, ``min(ceil(n / BLOCK), MAX_GRID)``
        of them (at least 1; the simulator caps the grid lower, see
        ``max_grid``). Does nothing when ``n == 0``.
        """
        if n <= 0:
            self._drop_meta()
            return
        grid = max(1, min((n + BLOCK - 1) // BLOCK, self.max_grid))
        self.launch_grid(source, name, grid, BLOCK, *args)

    def launch_grid(self, source: str, name: str, grid, block, *args) -> None:
        """Queue kernel ``name`` of ``fast/cuda/<source>`` over ``grid`` x ``block``.

        ``grid`` and ``block`` are ints or 3-tuples. Arguments are converted
        by the kernel's parameter types (pointers take int addresses).
        """
        stream = self.driver.current_stream()
        kernel = self.driver.get_function(source, name)
        if self.driver.observers:
            self.driver.traced(
                "kernel",
                name,
                stream,
                lambda: self.driver.launch(kernel, _dim3(grid), _dim3(block), args, stream.handle),
            )
        else:
            self.driver.launch(kernel, _dim3(grid), _dim3(block), args, stream.handle)
        self._drop_meta()

    # ------------------------------------------------------------- operands
    @staticmethod
    def suffix(x) -> str:
        """The kernel-name suffix of a Strided's (or a NumPy dtype's) element type."""
        dtype = x.buffer.dtype if isinstance(x, Strided) else np.dtype(x)
        return SUFFIXES[dtype]

    @staticmethod
    def ptr(view: Strided) -> int:
        """Device address of the view's first element."""
        buffer = view.buffer
        return buffer.ptr + view.offset * buffer.dtype.itemsize

    @classmethod
    def ptr_or_null(cls, view: Strided | None) -> int:
        """:meth:`ptr` of an optional operand, or 0 (a null pointer) when it is absent
        (a convolution without bias, a batch norm without weight)."""
        return 0 if view is None else cls.ptr(view)

    def meta(self, *views: Strided) -> int:
        """Device address of an int64 array: each view's shape, then its strides.

        The array comes from the caching allocator, is copied host-to-device
        on the current stream and is freed once the next launch is queued
        (the stream runs the copy, then the kernel, before any later use of
        the memory: stream-ordered reuse, as in PyTorch).
        """
        numbers = []
        for view in views:
            numbers.extend(view.shape)
            numbers.extend(view.strides)
        host = np.array(numbers or [0], dtype=np.int64)
        buffer = self.driver.device_empty(host.size, np.int64)
        self.copy_to_device(buffer.ptr, host)
        keep = getattr(self._local, "keep", None)
        if keep is None:
            keep = self._local.keep = []
        keep.append(buffer)
        return buffer.ptr

    def _drop_meta(self) -> None:
        keep = getattr(self._local, "keep", None)
        if keep:
            keep.clear()

    # ------------------------------------------------------------- copies
    def copy_to_device(self, dst: int, host: np.ndarray) -> None:
        """Queue a host-to-device copy of the contiguous array ``host`` to ``dst``."""
        stream = self.driver.current_stream()
        host = np.ascontiguousarray(host)
        if self.driver.observers:
            self.driver.traced(
                "memcpy",
                "Memcpy HtoD",
                stream,
                lambda: self.driver.memcpy_h2d(dst, host, stream.handle),
            )
        else:
            self.driver.memcpy_h2d(dst, host, stream.handle)

    def copy_to_host(self, host: np.ndarray, src: int) -> None:
        """Copy ``host.nbytes`` bytes from ``src`` into the contiguous array ``host``.

        Waits for the current stream first (a device-to-host copy synchronizes).
        """
        stream = self.driver.current_stream()
        if self.driver.observers:
            self.driver.traced(
                "memcpy",
                "Memcpy DtoH",
                stream,
                lambda: self.driver.memcpy_d2h(host, src, stream.handle),
            )
        else:
            self.driver.memcpy_d2h(host, src, stream.handle)

    def copy_device_to_device(self, dst: int, src: int, nbytes: int) -> None:
        """Queue a device-to-device copy of ``nbytes`` bytes."""
        stream = self.driver.current_stream()
        if self.driver.observers:
            self.driver.traced(
                "memcpy",
                "Memcpy DtoD",
                stream,
                lambda: self.driver.memcpy_d2d(dst, src, nbytes, stream.handle),
            )
        else:
            self.driver.memcpy_d2d(dst, src, nbytes, stream.handle)

    # ------------------------------------------------------------- scratch
    def scratch_int64(self, n: int = 1, value: int | None = None) -> Any:
        """A device buffer of ``n`` int64 set to ``value`` (default :data:`SENTINEL`)."""
        host = np.full(n, self.SENTINEL if value is None else value, dtype=np.int64)
        buffer = self.driver.device_empty(n, np.int64)
        self.copy_to_device(buffer.ptr, host)
        return buffer

    def read_int64(self, buffer) -> list[int]:
        """The int64 values of a device buffer (waits for the current stream)."""
        host = np.empty(buffer.size, dtype=np.int64)
        self.copy_to_host(host, buffer.ptr)
        return host.tolist()

    # ------------------------------------------------------------- storage
    def allocate(self, numel: int, dtype: Any) -> Any:
        """A :class:`~glasstorch._gpu.driver.DeviceBuffer` of ``numel`` elements."""
        return self.driver.device_empty(numel, dtype)
