"""The CUDA simulator's Python side: compile a ``.cu`` file for the CPU and launch its kernels.

The CUDA kernels in ``fast/cuda/*.cu`` are compiled by the host C++ compiler
with ``gt_cuda_sim.h`` (beside this file; it implements CUDA's execution model
on the CPU, see its header comment) into a shared library, loaded here with
cffi's ABI mode (``ffi.dlopen``). The runtime (device memory, streams, events)
is one more shared library, ``gt_cuda_sim_runtime.c`` (also beside this
file), shared by every kernel library of the process.

Kernels do float arithmetic as CuPy's NVRTC build does on a GPU (multiply-adds
contracted into fused multiply-adds, float denormals flushed to zero) unless
``GLASSTORCH_SIM_FLOAT=host`` asks for the host's plain IEEE arithmetic; see
:func:`float_arithmetic`.

Compiled libraries are cached by a hash of their sources and flags under
``$GLASSTORCH_SIM_CACHE`` (default ``~/.cache/glasstorch/cuda_sim``), so each
``.cu`` compiles once. The compilers are ``$CC`` and ``$CXX`` (default ``cc``
and ``c++``).

The API follows CuPy's where it can (``RawModule``, ``get_function``, a kernel
called as ``kernel(grid, block, args, stream=...)``), since the same kernels run
on a GPU through CuPy.

Examples::

    sim = Simulator()
    module = sim.load("elementwise.cu")  # a name in fast/cuda, or a path
    out = sim.malloc(4 * 1000)
    module.get_function("fill_f32")(8, 128, (out, 1.5, 0, 0, 0, 1000))
    sim.synchronize()
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Any

from cffi import FFI

from glasstorch._gpu.driver import DeviceOutOfMemory, format_size

from ..sources import CUDA_DIR, CudaSourceError, cache_dir, digest, headers_text, kernel_signatures

__all__ = [
    "FLOAT_MODES",
    "SIMULATOR_DIR",
    "Event",
    "Kernel",
    "Module",
    "Simulator",
    "SimulatorError",
    "Stream",
    "float_arithmetic",
    "float_mode",
    "get_simulator",
]

#: Where the simulator's header (gt_cuda_sim.h) and its runtime live: this folder.
SIMULATOR_DIR = Path(__file__).resolve().parent

#: The largest block, as on every GPU since compute capability 2.0.
MAX_THREADS_PER_BLOCK = 1024

_RUNTIME_CDEF = """
void *gt_sim_malloc(size_t nbytes);
void gt_sim_free(void *ptr);
void gt_sim_mem_get_info(size_t *free_bytes, size_t *total_bytes);
void *gt_sim_stream_create(void);
void gt_sim_stream_destroy(void *stream);
void gt_sim_stream_synchronize(void *stream);
int gt_sim_stream_query(void *stream);
void gt_sim_device_synchronize(void);
void gt_sim_memcpy_async(void *dst, const void *src, size_t nbytes, void *stream);
void gt_sim_memcpy_h2d_async(void *dst, const void *src, size_t nbytes, void *stream);
void gt_sim_memset_async(void *dst, int value, size_t nbytes, void *stream);
void *gt_sim_event_create(void);
void gt_sim_event_destroy(void *event);
void gt_sim_event_record(void *event, void *stream);
int gt_sim_event_query(void *event);
void gt_sim_event_synchronize(void *event);
float gt_sim_event_elapsed_ms(void *start, void *end);
void gt_sim_stream_wait_event(void *stream, void *event);
const char *gt_sim_last_error(void);
"""

_RUNTIME_NAME = "libgt_cuda_sim_runtime.so"


class SimulatorError(CudaSourceError):
    """A kernel launch or a simulator call went wrong (compile error, bad configuration, ...)."""


# ------------------------------------------------------------------- compiling


def _compile(command: list[str], target: Path) -> None:
    """Run a compiler command writing ``target`` atomically (another process may race us)."""
    fd, partial = tempfile.mkstemp(dir=target.parent, suffix=".so.partial")
    os.close(fd)
    try:
        result = subprocess.run(command + ["-o", partial], capture_output=True, text=True)
        if result.returncode != 0:
            raise SimulatorError(
                f"compiling for the CUDA simulator failed ({' '.join(command)}):\n{result.stderr}"
            )
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _build_runtime(cache: Path) -> Path:
    """The runtime library, compiled once per version of its source."""
    source = SIMULATOR_DIR / "gt_cuda_sim_runtime.c"
    cc = os.environ.get("CC", "cc")
    folder = cache / f"runtime-{digest(source.read_text(), cc)}"
    target = folder / _RUNTIME_NAME
    if not target.exists():
        folder.mkdir(exist_ok=True)
        command = [cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-pthread", str(source)]
        _compile(command + [f"-Wl,-soname,{_RUNTIME_NAME}"], target)
    return target


def _launcher_source(kernels: dict[str, list[tuple[str, str]]]) -> str:
    """C++ with one ``gt_launch_<kernel>`` per kernel, callable from cffi."""
    lines = []
    for name, params in kernels.items():
        declared = "".join(f", {ctype} {pname}" for ctype, pname in params)
        passed = "".join(f", {pname}" for _, pname in params)
        lines.append(
            f'extern "C" void gt_launch_{name}(gt_sim_stream *stream, unsigned int gx, '
            f"unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, "
            f"unsigned int bz{declared}) {{\n"
            f"    gt_sim::launch(stream, dim3(gx, gy, gz), dim3(bx, by, bz), "
            f"gt_float_mode_{name}{passed});\n"
            "}"
        )
    return "\n".join(lines) + "\n"


def _cdef_type(ctype: str) -> str:
    """Pointers travel as ``void *`` (the ABI is the same); scalars keep their type."""
    return "void *" if "*" in ctype else ctype.replace("const ", "")


# ------------------------------------------------------------------- float arithmetic

#: ``GLASSTORCH_SIM_FLOAT``'s values: ``gpu`` (the default) computes as a GPU
#: does, ``host`` as the host compiler does by default.
FLOAT_MODES = ("gpu", "host")

#: MXCSR's flush-to-zero (bit 15: a denormal result becomes 0) and
#: denormals-are-zero (bit 6: a denormal operand reads as 0) bits, on x86.
_MXCSR_FTZ_DAZ = 0x8040


def float_mode() -> str:
    """The simulator's float arithmetic, ``GLASSTORCH_SIM_FLOAT`` (``gpu`` unless set)."""
    mode = os.environ.get("GLASSTORCH_SIM_FLOAT", "gpu")
    if mode not in FLOAT_MODES:
        raise SimulatorError(
            f"GLASSTORCH_SIM_FLOAT={mode!r}: use 'gpu' (compute as CuPy's NVRTC build on "
            "a GPU: FMA contraction, float denormals flushed to zero) or 'host'"
        )
    return mode


@cache
def _host_has_fma() -> bool:
    """Whether this CPU has fused multiply-add instructions (every 64-bit ARM has;
    on x86 ``/proc/cpuinfo`` says, where there is one)."""
    machine = os.uname().machine
    if machine in ("aarch64", "arm64"):
        return True
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return any(
                line.startswith("flags") and " fma " in f"{line.rstrip()} " for line in cpuinfo
            )
    except OSError:
        return False


def float_arithmetic(
    kernels: dict[str, list[tuple[str, str]]], options: tuple[str, ...] = ()
) -> tuple[list[str], str]:
    """The compiler flags and kernel entries that give the simulator a GPU's float arithmetic.

    CuPy compiles every kernel with NVRTC's ``-ftz=true`` (which a ``RawModule``
    cannot turn off) and NVRTC's default ``--fmad=true``. So, in ``gpu`` mode:

    * **FMA contraction.** ``a * b + c`` is computed as one fused multiply-add,
      rounded once, as NVRTC contracts it: ``-ffp-contract=fast``, with ``-mfma``
      on an x86 CPU that has FMA (without an FMA instruction the compiler
      cannot contract). ``--fmad=false`` among ``options`` turns it off, as on
      the GPU. Which of several products a compiler fuses is its own choice, so
      contraction makes results closer to a GPU's, not always bit for bit equal.
    * **Denormals flushed to zero.** Each CUDA thread starts by setting its OS
      thread's MXCSR FTZ and DAZ bits (x86 only), so a denormal result becomes
      zero and a denormal operand reads as zero. Unlike the GPU, where
      ``-ftz`` concerns float32 only, MXCSR flushes float64 denormals too.

    In ``host`` mode contraction is off and denormals are kept (the entries
    clear FTZ and DAZ, as another module may have set them on the same stream).

    Returns:
        the extra compiler flags, and C++ source that defines, for each kernel
        ``k``, the entry ``gt_float_mode_k`` the launchers start (it sets the
        float mode, then calls ``k``).
    """
    gpu = float_mode() == "gpu"
    contract = gpu and not any(option.lstrip("-") == "fmad=false" for option in options)
    flags = ["-ffp-contract=fast" if contract else "-ffp-contract=off"]
    if contract and os.uname().machine in ("x86_64", "i686") and _host_has_fma():
        flags.append("-mfma")
    bits = _MXCSR_FTZ_DAZ if gpu else 0
    lines = [
        "static inline void gt_set_float_mode(void) {",
        "#if defined(__x86_64__) || defined(__i386__)",
        f"    unsigned int csr = __builtin_ia32_stmxcsr() & ~{_MXCSR_FTZ_DAZ:#x}u;",
        f"    __builtin_ia32_ldmxcsr(csr | {bits:#x}u);",
        "#endif",
        "}",
    ]
    for name, params in kernels.items():
        declared = ", ".join(f"{ctype} {pname}" for ctype, pname in params)
        passed = ", ".join(pname for _, pname in params)
        lines.append(
            f"static void gt_float_mode_{name}({declared}) {{ gt_set_float_mode(); "
            f"{name}({passed}); }}"
        )
    return flags, "\n".join(lines) + "\n"


# ------------------------------------------------------------------- objects


class Stream:
    """A simulator stream: a worker thread running its queue of work in order.

    ``Stream(sim, null=True)`` is the default stream. Use :meth:`synchronize`
    to wait for it and :meth:`query` to ask whether it is idle.
    """

    def __init__(self, sim: Simulator, null: bool = False) -> None:
        self._sim = sim
        self.handle = sim.ffi.NULL if null else sim.lib.gt_sim_stream_create()
        self.null = null

    def synchronize(self) -> None:
        """Wait until every task queued on the stream has run; raise a recorded launch error."""
        self._sim.lib.gt_sim_stream_synchronize(self.handle)
        self._sim.check_error()

    def query(self) -> bool:
        """Whether the stream has finished all its work."""
        return bool(self._sim.lib.gt_sim_stream_query(self.handle))

    def wait_event(self, event: Event) -> None:
        """Make the stream's later work wait for ``event``'s last record."""
        self._sim.lib.gt_sim_stream_wait_event(self.handle, event.handle)

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream and return it."""
        event = event if event is not None else Event(self._sim)
        event.record(self)
        return event

    def close(self) -> None:
        """Finish the queued work and stop the worker thread."""
        if not self.null and self.handle != self._sim.ffi.NULL:
            self._sim.lib.gt_sim_stream_destroy(self.handle)
            self.handle = self._sim.ffi.NULL


class Event:
    """A simulator event: complete when its stream reaches the point where it was recorded."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self.handle = sim.ffi.gc(sim.lib.gt_sim_event_create(), sim.lib.gt_sim_event_destroy)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event at the current end of ``stream``'s queue (default stream if None)."""
        handle = stream.handle if stream is not None else self._sim.ffi.NULL
        self._sim.lib.gt_sim_event_record(self.handle, handle)

    def query(self) -> bool:
        """Whether the last record has completed (True for an event never recorded)."""
        return bool(self._sim.lib.gt_sim_event_query(self.handle))

    @property
    def done(self) -> bool:
        """The same as :meth:`query` (CuPy's name)."""
        return self.query()

    def synchronize(self) -> None:
        """Wait until the last record has completed."""
        self._sim.lib.gt_sim_event_synchronize(self.handle)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event's completion and ``end``'s, by the host clock."""
        return float(self._sim.lib.gt_sim_event_elapsed_ms(self.handle, end.handle))


class Kernel:
    """One ``extern "C" __global__`` function of a :class:`Module`, ready to launch."""

    def __init__(self, module: Module, name: str, params: list[tuple[str, str]]) -> None:
        self.module = module
        self.name = name
        self.params = params
        self._launch = getattr(module.lib, f"gt_launch_{name}")

    def __call__(
        self,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: tuple,
        stream: Stream | None = None,
    ) -> None:
        """Queue the kernel over ``grid`` blocks of ``block`` threads; return at once.

        Args:
            grid, block: an int or a tuple of up to three ints (x, y, z).
            args: one value per kernel parameter; a pointer parameter takes a
                device address (an int, as :meth:`Simulator.malloc` returns).
            stream: where to queue it (the default stream if None).
        """
        grid3, block3 = _dim3(grid), _dim3(block)
        threads = block3[0] * block3[1] * block3[2]
        if min(grid3 + block3) < 1 or threads > MAX_THREADS_PER_BLOCK:
            raise SimulatorError(
                f"{self.name}: invalid configuration argument: grid {grid3}, block {block3} "
                f"(each size must be at least 1, and a block at most "
                f"{MAX_THREADS_PER_BLOCK} threads)"
            )
        if len(args) != len(self.params):
            raise TypeError(
                f"{self.name}() takes {len(self.params)} arguments "
                f"({', '.join(p for _, p in self.params)}), got {len(args)}"
            )
        ffi = self.module.ffi
        values = [
            ffi.cast("void *", int(value)) if "*" in ctype else value
            for (ctype, _), value in zip(self.params, args)
        ]
        stream_handle = ffi.cast("void *", self.module.sim.address_of(stream))
        self._launch(stream_handle, *grid3, *block3, *values)


def _dim3(size: int | tuple[int, ...]) -> tuple[int, int, int]:
    sizes = (size,) if isinstance(size, int) else tuple(size)
    if not 1 <= len(sizes) <= 3:
        raise SimulatorError(f"a grid or block size has 1 to 3 dimensions, got {size!r}")
    return tuple(int(s) for s in sizes) + (1,) * (3 - len(sizes))


class Module:
    """A compiled ``.cu`` source: its kernels, found by name (CuPy's ``RawModule``)."""

    def __init__(self, sim: Simulator, source: str, library: Path) -> None:
        self.sim = sim
        self.kernels = kernel_signatures(source)
        self.ffi = FFI()
        for name, params in self.kernels.items():
            declared = "".join(f", {_cdef_type(ctype)} {pname}" for ctype, pname in params)
            self.ffi.cdef(
                f"void gt_launch_{name}(void *stream, unsigned int, unsigned int, "
                f"unsigned int, unsigned int, unsigned int, unsigned int{declared});"
            )
        self.lib = self.ffi.dlopen(str(library))

    def get_function(self, name: str) -> Kernel:
        """The kernel called ``name``."""
        if name not in self.kernels:
            raise AttributeError(
                f"no kernel named {name!r}; this module has {', '.join(self.kernels)}"
            )
        return Kernel(self, name, self.kernels[name])


class Simulator:
    """The CUDA simulator of this process: device memory, streams, events and modules.

    Use :func:`get_simulator` for the shared instance; the device memory arena
    (``GLASSTORCH_SIM_MEMORY`` bytes, default 1 GiB) is one per process.
    """

    def __init__(self) -> None:
        self.cache = cache_dir()
        self.ffi = FFI()
        self.ffi.cdef(_RUNTIME_CDEF)
        self.runtime_path = _build_runtime(self.cache)
        self.lib = self.ffi.dlopen(str(self.runtime_path))
        self.default_stream = Stream(self, null=True)
        self._modules: dict[str, Module] = {}
        self._lock = threading.Lock()

    # ---- modules

    def load(self, path: str | os.PathLike) -> Module:
        """Compile (or find in the cache) a .cu file; a bare name is looked up in fast/cuda."""
        path = Path(path)
        if not path.is_absolute() and not path.exists():
            path = CUDA_DIR / path
        return self.load_source(path.read_text(), filename=str(path))

    def load_source(
        self, source: str, filename: str = "<source>.cu", options: tuple[str, ...] = ()
    ) -> Module:
        """Compile CUDA source text for the simulator and load it.

        Of NVRTC's ``options`` only ``--fmad=false`` has a meaning here (see
        :func:`float_arithmetic`); the others are for a GPU.
        """
        header = (SIMULATOR_DIR / "gt_cuda_sim.h").read_text() + headers_text()
        cxx = os.environ.get("CXX", "c++")
        float_flags, float_prelude = float_arithmetic({}, options)  # the kernels are in source
        key = digest(source, header, str(self.runtime_path), cxx, *float_flags, float_prelude)
        with self._lock:
            if key in self._modules:
                return self._modules[key]
            library = self.cache / f"kernels-{key}.so"
            if not library.exists():
                self._compile_module(source, filename, library, cxx, options)
            module = Module(self, source, library)
            self._modules[key] = module
            return module

    def _compile_module(
        self, source: str, filename: str, library: Path, cxx: str, options: tuple[str, ...]
    ) -> None:
        kernels = kernel_signatures(source)
        if not kernels:
            raise SimulatorError(f'{filename}: no `extern "C" __global__ void name(...)` kernel')
        float_flags, float_entries = float_arithmetic(kernels, options)
        line_count = source.count("\n") + 2
        text = (
            f'#line 1 "{filename}"\n{source}\n'
            f'#line {line_count} "<gt_launch wrappers>"\n{float_entries}'
            f"{_launcher_source(kernels)}"
        )
        # A name of this process's own, in case another process compiles the same source.
        unit = library.with_suffix(f".{os.getpid()}.cpp")
        unit.write_text(text)
        runtime_dir = str(self.runtime_path.parent)
        command = [cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", *float_flags]
        command += [f"-I{CUDA_DIR}", f"-I{SIMULATOR_DIR}", "-include", "gt_cuda_sim.h"]
        command += ["-x", "c++", str(unit)]
        command += ["-x", "none", f"-L{runtime_dir}", "-lgt_cuda_sim_runtime"]
        command += [f"-Wl,-rpath,{runtime_dir}"]
        try:
            _compile(command, library)
        finally:
            unit.unlink()

    # ---- memory

    def malloc(self, nbytes: int) -> int:
        """Device memory of ``nbytes`` (256-byte aligned); its address as an int.

        Raises:
            glasstorch._gpu.driver.DeviceOutOfMemory: the arena is full.
        """
        ptr = self.lib.gt_sim_malloc(nbytes)
        if ptr == self.ffi.NULL:
            free, total = self.mem_get_info()
            raise DeviceOutOfMemory(
                f"out of memory: cannot allocate {format_size(nbytes)} of simulated device "
                f"memory ({format_size(free)} free of {format_size(total)}; set "
                "GLASSTORCH_SIM_MEMORY=<bytes> before the first use for a larger arena)"
            )
        return int(self.ffi.cast("uintptr_t", ptr))

    def free(self, ptr: int) -> None:
        """Give back memory from :meth:`malloc`."""
        self.lib.gt_sim_free(self.ffi.cast("void *", ptr))

    def mem_get_info(self) -> tuple[int, int]:
        """(free bytes, total bytes) of the arena, as ``cudaMemGetInfo``."""
        free, total = self.ffi.new("size_t *"), self.ffi.new("size_t *")
        self.lib.gt_sim_mem_get_info(free, total)
        return int(free[0]), int(total[0])

    def copy_from_host(self, ptr: int, data: Any, stream: Stream | None = None) -> None:
        """Queue a copy of ``data`` (bytes or a contiguous buffer) to ``ptr``; ``data`` may be
        reused at once (it is staged, as CUDA does for pageable memory)."""
        source = self.ffi.from_buffer(data)
        handle = self._stream_handle(stream)
        dst = self.ffi.cast("void *", ptr)
        self.lib.gt_sim_memcpy_h2d_async(dst, source, len(source), handle)

    def copy_to_host(self, ptr: int, nbytes: int, stream: Stream | None = None) -> bytes:
        """Wait for ``stream``, then return ``nbytes`` from ``ptr`` (a synchronous copy)."""
        (stream or self.default_stream).synchronize()
        return bytes(self.ffi.buffer(self.ffi.cast("char *", ptr), nbytes))

    def memset(self, ptr: int, value: int, nbytes: int, stream: Stream | None = None) -> None:
        """Queue setting ``nbytes`` bytes at ``ptr`` to ``value``."""
        self.lib.gt_sim_memset_async(
            self.ffi.cast("void *", ptr), value, nbytes, self._stream_handle(stream)
        )

    # ---- streams and errors

    def _stream_handle(self, stream: Stream | None) -> Any:
        return stream.handle if stream is not None else self.ffi.NULL

    def address_of(self, stream: Stream | None) -> int:
        """The stream's handle as an int (0 for the default stream)."""
        return int(self.ffi.cast("uintptr_t", self._stream_handle(stream)))

    def synchronize(self) -> None:
        """Wait for every stream (``cudaDeviceSynchronize``); raise a recorded launch error."""
        self.lib.gt_sim_device_synchronize()
        self.check_error()

    def check_error(self) -> None:
        """Raise :class:`SimulatorError` if a launch failed since the last check."""
        message = self.ffi.string(self.lib.gt_sim_last_error()).decode()
        if message:
            raise SimulatorError(f"CUDA simulator: {message}")


_SIMULATOR: Simulator | None = None
_SIMULATOR_LOCK = threading.Lock()


def get_simulator() -> Simulator:
    """The process's simulator, created (and its runtime compiled) on first use."""
    global _SIMULATOR
    with _SIMULATOR_LOCK:
        if _SIMULATOR is None:
            _SIMULATOR = Simulator()
        return _SIMULATOR
