"""Your own CUDA kernels: ``RawModule`` and ``RawKernel``, CuPy's API on glasstorch's devices.

A kernel is CUDA C source, compiled when the module is made and launched over
a grid of blocks of threads::

    import glasstorch as torch

    add = torch.cuda.RawKernel(r'''
    extern "C" __global__ void add(const float *x, const float *y, float *out, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i] + y[i];
    }
    ''', "add")
    x = torch.arange(1000.0, device="cuda")
    out = torch.empty(1000, device="cuda")
    add((4,), (256,), (x, x, out, 1000))  # grid, block, arguments

The same code runs on a real GPU (the ``cupy`` driver compiles it with NVRTC
through ``cupy.RawModule``) and on any CPU (the simulator compiles it with the
host C++ compiler and runs every thread of every block, with real
``__syncthreads`` barriers and ``__shared__`` memory).

Arguments are passed as the kernel's parameter types say, read from its
source: a pointer parameter takes a CUDA tensor (the address of its first
element, so a view starts where the view starts; the kernel sees raw memory,
so mind the tensor's strides and dtype), a number parameter takes a Python or
NumPy number. A launch is queued on the current stream (or ``stream=``) and
returns at once, like every CUDA launch.

Dynamic shared memory works as in CUDA: declare ``extern __shared__ float
buf[];`` and launch with ``shared_mem=`` the bytes each block gets.

On the simulator, your kernels run under a sanitizer by default (memcheck,
racecheck, synccheck, initcheck; see docs/guide/gpu.md): an out-of-bounds
access, a missing ``__syncthreads``, a barrier in divergent code, a read of
uninitialised memory or a crash is raised at the next synchronize as a
:class:`glasstorch.cuda.SanitizerError` that names the check, the line, the
kernel, the thread and the block. ``sim_check=`` (or the environment variable
``GLASSTORCH_SIM_CHECK``) chooses the checks; a GPU ignores both.

Differences from CuPy: of NVRTC's options the simulator honours
``--fmad=false`` only (it computes as CuPy's NVRTC build by default: FMA
contraction, float32 denormals flushed to zero); ``sim_check`` is glasstorch's
own; ``name_expressions`` (C++ templates by name) and ``jitify``
are not offered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from glasstorch.cuda._device import active_driver as _driver
from glasstorch.cuda.streams import Stream, current_stream
from glasstorch.tensor import Tensor

__all__ = ["RawKernel", "RawModule"]


class RawModule:
    """CUDA source compiled for the active device: its kernels by name.

    Args:
        code: the CUDA C source; its kernels are ``extern "C" __global__``
            functions.
        options: compiler options, passed to NVRTC on a GPU (for example
            ``("--std=c++17",)``); the simulator honours ``--fmad=false`` only.
        path: a ``.cu`` file to read instead of ``code``.
        sim_check: the simulator's checks for these kernels: ``"all"``, ``"off"``,
            or some of ``"memcheck,racecheck,synccheck,initcheck"``. None (the
            default) takes ``GLASSTORCH_SIM_CHECK`` when it is set, else ``"all"``.
            Checked kernels run several times slower. A GPU ignores it.

    Example::

        module = torch.cuda.RawModule(code=source)
        scale = module.get_function("scale")
        scale((blocks,), (256,), (x, 2.0, x.numel()))
    """

    def __init__(
        self,
        code: str | None = None,
        *,
        options: tuple[str, ...] = (),
        path: str | None = None,
        sim_check: str | None = None,
        _filename: str = "raw_module.cu",
    ) -> None:
        if (code is None) == (path is None):
            raise TypeError("RawModule takes one of code= or path=")
        self.code = Path(path).read_text() if path is not None else code
        self.options = tuple(options)
        filename = str(path) if path is not None else _filename
        self._compiled = _driver().compile_source(
            self.code, self.options, sim_check=sim_check, filename=filename
        )

    def get_function(self, name: str) -> RawKernel:
        """The kernel ``name`` (an ``extern "C" __global__`` function of the source)."""
        return RawKernel._of(self, name)


class RawKernel:
    """One CUDA kernel, compiled from source, called as ``kernel(grid, block, args)``.

    Args:
        code: the CUDA C source that defines the kernel.
        name: the kernel's name (an ``extern "C" __global__`` function).
        options: compiler options (see :class:`RawModule`).
        sim_check: the simulator's checks (see :class:`RawModule`).

    On the simulator the source is compiled as ``<name>.cu``, the file a report names.
    """

    def __init__(
        self, code: str, name: str, options: tuple[str, ...] = (), sim_check: str | None = None
    ) -> None:
        module = RawModule(code=code, options=options, sim_check=sim_check, _filename=f"{name}.cu")
        self._bind(module, name)

    @classmethod
    def _of(cls, module: RawModule, name: str) -> RawKernel:
        kernel = cls.__new__(cls)
        kernel._bind(module, name)
        return kernel

    def _bind(self, module: RawModule, name: str) -> None:
        self.module, self.name = module, name
        self.code, self.options = module.code, module.options
        self._function = module._compiled.get_function(name)

    def __call__(
        self,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: tuple,
        *,
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        """Queue the kernel over ``grid`` blocks of ``block`` threads; return at once.

        Args:
            grid, block: an int or a tuple of up to three ints (x, y, z).
            args: one value per kernel parameter: a CUDA tensor for a pointer,
                a number for a number.
            shared_mem: bytes of dynamic shared memory (``extern __shared__``).
            stream: a :class:`glasstorch.cuda.Stream` (the current stream if None).
        """
        shared_mem = int(shared_mem)
        if shared_mem < 0:
            raise ValueError(f"{self.name}: shared_mem must be >= 0 bytes, got {shared_mem}")
        if stream is None:
            stream = current_stream()
        elif not isinstance(stream, Stream):
            raise TypeError(
                f"{self.name}: stream must be a torch.cuda.Stream, not {type(stream).__name__}"
            )
        values = tuple(_argument(self.name, i, value) for i, value in enumerate(args))
        # Each tensor's storage is the allocation its pointer may reach (memcheck's bounds).
        extents = [
            (value.untyped_storage().data_ptr(), value.untyped_storage().buffer.nbytes)
            for value in args
            if isinstance(value, Tensor)
        ]
        _driver().launch(
            self._function,
            _dims(grid),
            _dims(block),
            values,
            stream.handle,
            shared_mem=shared_mem,
            extents=extents,
        )


def _dims(size: int | tuple[int, ...]) -> tuple[int, ...]:
    return (size,) if isinstance(size, int) else tuple(size)


def _argument(kernel: str, position: int, value):
    """A launch argument as the driver takes it: a device address for a tensor."""
    if isinstance(value, Tensor):
        if value.device.type != "cuda":
            raise TypeError(
                f"{kernel}: argument {position} is a tensor on {value.device}; a kernel "
                "reads device memory: pass a CUDA tensor (tensor.cuda())"
            )
        return value.data_ptr()
    if hasattr(value, "item") and not isinstance(value, (int, float)):  # a NumPy number
        return value.item()
    if isinstance(value, (bool, int, float)):
        return value
    raise TypeError(
        f"{kernel}: argument {position} of type {type(value).__name__} is neither a CUDA "
        "tensor nor a number"
    )
