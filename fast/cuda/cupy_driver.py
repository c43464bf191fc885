"""A real NVIDIA GPU as a driver: the device interface over CuPy.

CuPy is used as a thin layer over the CUDA runtime, not as an array library:

* kernels are the ``.cu`` files of ``fast/cuda``, compiled at run time by NVRTC
  (``cupy.RawModule``, cached by CuPy on disk) with ``fast/cuda`` on the
  include path; arguments are converted by each kernel's parameter types, read
  from the preprocessed source (``kernel_signatures``), as the simulator does;
* device memory comes from ``cudaMalloc``/``cudaFree`` (``cupy.cuda.runtime``),
  handed out by glasstorch's own caching allocator, not CuPy's memory pool;
* streams and events are CUDA's (``cupy.cuda.Stream``, ``cupy.cuda.Event``);
  streams are non-blocking and the default stream is the legacy one, as PyTorch's;
* float32/float64 matmul calls cuBLAS through ``cupy.matmul`` on views of
  glasstorch's memory (:meth:`CupyDriver.matmul_blas`).

CuPy is an optional dependency (``pip install cupy-cuda12x``); glasstorch
installs and tests without it. This driver is selected by ``GLASSTORCH_CUDA=cupy``,
or by ``auto`` when CuPy finds a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from glasstorch._gpu.driver import DeviceOutOfMemory, Driver
from glasstorch._shape import is_contiguous

from .sources import CUDA_DIR, KERNEL_ARITHMETIC, headers_fingerprint, kernel_signatures

_H2D, _D2H, _D2D = 1, 2, 3  # cudaMemcpyKind

#: NVRTC options for every ``.cu`` file, besides the include path (``-I fast/cuda``)
#: that :meth:`CupyDriver._module` adds. ``--device-int128``: ``creation.cu`` counts
#: exactly in 128-bit integers, which NVRTC (unlike nvcc) accepts only with this
#: flag. CuPy itself appends ``-arch`` for the current GPU and ``-ftz=true``. The
#: suite compiles every source with these options (``shared_tests/test_cuda_simulator.py``).
#: ``KERNEL_ARITHMETIC`` (``--fmad=false``): see ``sources.py``.
NVRTC_OPTIONS: tuple[str, ...] = ("--std=c++17", "--device-int128", *KERNEL_ARITHMETIC)

#: C parameter type -> the NumPy scalar type CuPy passes by value.
_SCALARS = {
    "bool": np.bool_,
    "char": np.int8,
    "unsigned char": np.uint8,
    "short": np.int16,
    "unsigned short": np.uint16,
    "int": np.int32,
    "unsigned int": np.uint32,
    "unsigned": np.uint32,
    "long": np.int64,
    "long long": np.int64,
    "long long int": np.int64,
    "unsigned long": np.uint64,
    "unsigned long long": np.uint64,
    "size_t": np.uint64,
    "float": np.float32,
    "double": np.float64,
}


class _Kernel:
    """A compiled kernel and how to convert its arguments."""

    def __init__(self, function: Any, params: list[tuple[str, str]]) -> None:
        self.function = function
        self.converters = []
        for ctype, _ in params:
            if "*" in ctype:
                self.converters.append(np.uint64)  # a device address, passed as 8 bytes
            else:
                self.converters.append(_SCALARS[ctype.replace("const ", "").strip()])


class _SourceModule:
    """A user's ``RawModule`` on the GPU: CuPy's compiled module, and the source
    its kernels' parameter types are read from."""

    def __init__(self, module: Any, code: str) -> None:
        self.module, self.code = module, code

    def get_function(self, name: str) -> _Kernel:
        signatures = kernel_signatures(self.code)
        if name not in signatures:
            raise AttributeError(f'no extern "C" __global__ function named {name!r}')
        return _Kernel(self.module.get_function(name), signatures[name])


class CupyDriver(Driver):
    """The device interface on an NVIDIA GPU through CuPy (device 0)."""

    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy
        self.runtime = cupy.cuda.runtime
        self._modules: dict[str, Any] = {}
        self._functions: dict[tuple[str, str], _Kernel] = {}
        self._properties = self.runtime.getDeviceProperties(0)

    # ---- the device
    def device_count(self) -> int:
        return self.runtime.getDeviceCount()

    def device_name(self, index: int = 0) -> str:
        name = self._properties["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def mem_get_info(self) -> tuple[int, int]:
        free, total = self.runtime.memGetInfo()
        return int(free), int(total)

    def capability(self) -> tuple[int, int]:
        return int(self._properties["major"]), int(self._properties["minor"])

    def multi_processor_count(self) -> int:
        return int(self._properties["multiProcessorCount"])

    # ---- memory
    def malloc(self, nbytes: int) -> int:
        try:
            return int(self.runtime.malloc(max(nbytes, 1)))
        except self.runtime.CUDARuntimeError as error:
            if "cudaErrorMemoryAllocation" in str(error):
                raise DeviceOutOfMemory(str(error)) from error
            raise

    def free(self, ptr: int) -> None:
        self.runtime.free(ptr)

    def memcpy_h2d(self, dst: int, src: Any, stream: Any) -> None:
        array = np.ascontiguousarray(src)
        # From pageable memory the call returns once the source is staged.
        self.runtime.memcpyAsync(dst, array.ctypes.data, array.nbytes, _H2D, stream.ptr)

    def memcpy_d2h(self, dst: Any, src: int, stream: Any) -> None:
        view = memoryview(dst).cast("B")
        host = np.frombuffer(view, dtype=np.uint8)
        self.runtime.memcpyAsync(host.ctypes.data, src, host.nbytes, _D2H, stream.ptr)
        stream.synchronize()

    def memcpy_d2d(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        self.runtime.memcpyAsync(dst, src, nbytes, _D2D, stream.ptr)

    def memset(self, ptr: int, value: int, nbytes: int, stream: Any) -> None:
        self.runtime.memsetAsync(ptr, value, nbytes, stream.ptr)

    # ---- kernels
    def _module(self, source: str) -> Any:
        module = self._modules.get(source)
        if module is None:
            code = (CUDA_DIR / source).read_text() + headers_fingerprint()
            module = self.cupy.RawModule(code=code, options=(f"-I{CUDA_DIR}", *NVRTC_OPTIONS))
            self._modules[source] = module
        return module

    def get_function(self, source: str, name: str) -> _Kernel:
        key = (source, name)
        kernel = self._functions.get(key)
        if kernel is None:
            params = kernel_signatures((CUDA_DIR / source).read_text())[name]
            kernel = _Kernel(self._module(source).get_function(name), params)
            self._functions[key] = kernel
        return kernel

    def compile_source(
        self,
        code: str,
        options: tuple[str, ...],
        sim_check: str | None = None,
        filename: str = "raw_module.cu",
    ) -> Any:
        # sim_check and filename are the simulator's; compute-sanitizer checks a GPU.
        return _SourceModule(self.cupy.RawModule(code=code, options=tuple(options)), code)

    def launch(
        self,
        kernel: _Kernel,
        grid: tuple,
        block: tuple,
        args: tuple,
        stream: Any,
        shared_mem: int = 0,
        extents: list[tuple[int, int]] | None = None,
    ) -> None:
        if len(args) != len(kernel.converters):
            raise TypeError(
                f"kernel takes {len(kernel.converters)} arguments but {len(args)} were given"
            )
        values = tuple(convert(value) for convert, value in zip(kernel.converters, args))
        with stream:  # a RawKernel launches on CuPy's current stream
            kernel.function(grid, block, values, shared_mem=shared_mem)

    # ---- streams
    def create_stream(self, priority: int = 0) -> Any:
        # Non-blocking, as PyTorch's streams are (cudaStreamNonBlocking): a
        # blocking stream would also wait for the legacy default stream and make
        # it wait, which hides a missing wait_stream that breaks under PyTorch.
        try:
            return self.cupy.cuda.Stream(non_blocking=True, priority=priority)
        except TypeError:  # an older CuPy without priorities
            return self.cupy.cuda.Stream(non_blocking=True)

    def default_stream(self) -> Any:
        # The legacy default stream (handle 0), which PyTorch also uses as each
        # device's default stream: one for the process, shared by every host
        # thread (CuPy's per-thread default stream, Stream.ptds, would give each
        # host thread its own). With every other stream non-blocking, it neither
        # waits for them nor makes them wait, as on the simulator.
        return self.cupy.cuda.Stream.null

    def stream_synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def stream_query(self, stream: Any) -> bool:
        return bool(stream.done)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        stream.wait_event(event)

    def synchronize(self) -> None:
        self.runtime.deviceSynchronize()

    # ---- events
    def create_event(self, enable_timing: bool = False) -> Any:
        return self.cupy.cuda.Event(block=False, disable_timing=not enable_timing)

    def event_record(self, event: Any, stream: Any) -> None:
        event.record(stream)

    def event_query(self, event: Any) -> bool:
        return bool(event.done)

    def event_synchronize(self, event: Any) -> None:
        event.synchronize()

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return float(self.cupy.cuda.get_elapsed_time(start, end))

    # ---- cuBLAS
    def _array(self, view, shape=None, strides=None) -> Any:
        """A CuPy array over glasstorch's device memory (no copy, not owned by CuPy)."""
        cupy = self.cupy
        buffer = view.buffer
        item = buffer.dtype.itemsize
        memory = cupy.cuda.UnownedMemory(buffer.ptr, buffer.nbytes, buffer)
        pointer = cupy.cuda.MemoryPointer(memory, view.offset * item)
        shape = view.shape if shape is None else shape
        strides = view.strides if strides is None else strides
        return cupy.ndarray(shape, buffer.dtype, pointer, strides=tuple(s * item for s in strides))

    def matmul_blas(self, kernels, out, a, b) -> bool:
        """float32/float64 matmul through cuBLAS (``cupy.matmul``) on the current stream.

        Returns False (the tiled kernel then runs) for other dtypes or a
        non-contiguous output.
        """
        if out.buffer.dtype.kind != "f" or not is_contiguous(out.shape, out.strides):
            return False
        with self.current_stream().handle:
            self.cupy.matmul(self._array(a), self._array(b), out=self._array(out))
        return True
