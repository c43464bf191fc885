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

Before compiling, a preprocessing pass (:func:`rewrite_shared`) turns each
``extern __shared__`` array into the block's dynamic shared memory and
registers each ``__shared__`` variable, so its memory starts undefined (poisoned)
in every block. A module loaded with checks (``checks=`` a mask of
:data:`CHECKS`, or ``GLASSTORCH_SIM_CHECK``) is a separate cached variant built
with the compiler's address, bounds, alignment and division instrumentation
(``-DGT_SIM_CHECK``): every access calls back into the runtime, which reports
the first bug of a launch as a :class:`SanitizerError` at the next synchronize.

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
import re
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Any

from cffi import FFI

from glasstorch._gpu.driver import DeviceOutOfMemory, format_size
from glasstorch._gpu.sanitizer import (
    ALL_CHECKS,
    CHECKS,
    InitcheckError,
    KernelFault,
    MemcheckError,
    RacecheckError,
    SanitizerError,
    SynccheckError,
    check_mask,
)

from ..sources import (
    CUDA_DIR,
    KERNEL_ARITHMETIC,
    CudaSourceError,
    cache_dir,
    digest,
    headers_text,
    kernel_signatures,
)

__all__ = [
    "CHECKS",
    "FLOAT_MODES",
    "SIMULATOR_DIR",
    "Event",
    "InitcheckError",
    "KernelFault",
    "MemcheckError",
    "RacecheckError",
    "SanitizerError",
    "SynccheckError",
    "Kernel",
    "Module",
    "Simulator",
    "SimulatorError",
    "ALL_CHECKS",
    "Stream",
    "check_mask",
    "float_arithmetic",
    "float_mode",
    "get_simulator",
    "rewrite_shared",
]

#: Where the simulator's header (gt_cuda_sim.h) and its runtime live: this folder.
SIMULATOR_DIR = Path(__file__).resolve().parent

#: The float arithmetic of the built-in kernels (``load``): no FMA contraction, as
#: on a GPU (``KERNEL_ARITHMETIC``, which the CuPy driver passes to NVRTC too), and
#: denormals kept. On a GPU, CuPy compiles every kernel with ``-ftz=true``, which
#: flushes float32 denormals; the simulator keeps them for the built-in kernels,
#: whose results the suite compares bit for bit with the CPU tiers (and since
#: the x86 flush would take float64 denormals too, which a GPU keeps).
BUILTIN_OPTIONS: tuple[str, ...] = (*KERNEL_ARITHMETIC, "-ftz=false")

#: The largest block, as on every GPU since compute capability 2.0.
MAX_THREADS_PER_BLOCK = 1024

#: The flags of a checked build: every load and store calls __asan_*, every array
#: index, alignment and integer division calls __ubsan_handle_* (both defined by
#: the runtime, not by the compiler's sanitizer libraries, which are not linked);
#: -g gives addr2line the source line of each access.
_CHECK_FLAGS = [
    "-O1",
    "-gdwarf-4",  # addr2line of binutils 2.40 misreads the file names of DWARF 5 #line
    "-DGT_SIM_CHECK=1",
    "-fsanitize=kernel-address",
    "--param",
    "asan-instrumentation-with-call-threshold=0",
    "--param",
    "asan-stack=0",
    "--param",
    "asan-globals=0",
    "-fsanitize=bounds,alignment,null,integer-divide-by-zero",
    "-fsanitize-recover=all",
]

_RUNTIME_CDEF = """
typedef struct {
    const char *kernel;
    unsigned checks;
    unsigned long long dynamic_shared;
    int nextents;
    unsigned long long extents[128];
} gt_sim_launch_config;
typedef struct {
    int kind;
    char what[200];
    char detail[400];
    char kernel[128];
    int has_thread;
    unsigned block[3], thread[3];
    char file[256];
    unsigned line;
    char object[512];
    unsigned long long pc;
} gt_sim_error;
typedef struct { unsigned int x, y, z; } gt_sim_dim3;
const char *gt_sim_check_config(gt_sim_dim3 grid, gt_sim_dim3 block,
                                unsigned long long dynamic_shared);
int gt_sim_take_error(gt_sim_error *out);
void gt_sim_note_allocation(void *ptr, size_t nbytes, void *stream);
int gt_sim_stream_wait(void *stream, int timeout_ms);
int gt_sim_device_wait(int timeout_ms);
int gt_sim_event_wait(void *event, int timeout_ms);
void gt_sim_interrupt(int on);
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
"""

_RUNTIME_NAME = "libgt_cuda_sim_runtime.so"


class SimulatorError(CudaSourceError):
    """A kernel launch or a simulator call went wrong (compile error, bad configuration, ...)."""


_ERROR_CLASSES = {
    1: (SimulatorError, ""),
    2: (MemcheckError, "memcheck"),
    3: (RacecheckError, "racecheck"),
    4: (SynccheckError, "synccheck"),
    5: (InitcheckError, "initcheck"),
    6: (KernelFault, "kernel fault"),
}
_INTERRUPT = 7

#: How long one slice of a host wait lasts (ms): Ctrl-C is seen between slices.
_POLL_MS = 100


def builtin_checks() -> int:
    """The checks for the kernels of fast/cuda: ``GLASSTORCH_SIM_CHECK``, default off."""
    return check_mask(os.environ.get("GLASSTORCH_SIM_CHECK"), 0)


# ------------------------------------------------------------------- the preprocessing pass

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([^;\[]*?)\s*(\w+)\s*\[\s*\]\s*;"
)
_SHARED = re.compile(r"\b__shared__\b")


def rewrite_shared(text: str) -> str:
    """CUDA source with its shared memory made visible to the runtime, line for line.

    * ``extern __shared__ T name[];`` becomes ``static gt_sim_dynamic_shared<T> name;``,
      which reads the block's dynamic shared memory (``shared_mem=`` bytes);
    * ``__shared__ T name[...];`` inside a function becomes
      ``__shared__ T gt_shared_name[...]; auto &name = *gt_sim_shared_alias(&gt_shared_name,
      "name");`` on the same line: the alias registers the variable with the runtime
      (see gt_cuda_sim.h), and in a checked build hides its address from the
      compiler, which would otherwise leave accesses it can prove in bounds
      unchecked (and unseen by racecheck and initcheck).

    Comments and strings are left alone; no line is added or removed, so
    compiler messages and the sanitizer's reports keep the source's line numbers.
    """
    masked = _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    pieces, last = [], 0
    for match in _EXTERN_SHARED.finditer(masked):
        element, name = match.group(1).strip(), match.group(2)
        pieces.append(text[last : match.start()])
        pieces.append(f"static gt_sim_dynamic_shared<{element}> {name};")
        pieces.append("\n" * text.count("\n", match.start(), match.end()))
        last = match.end()
    pieces.append(text[last:])
    text = "".join(pieces)
    masked = _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    out, last = [], 0
    for match in _SHARED.finditer(masked):
        end = masked.find(";", match.end())
        if end < 0:
            continue
        depth = masked.count("{", 0, match.start()) - masked.count("}", 0, match.start())
        if depth <= 0:
            continue  # a file-scope variable: not poisoned per block
        # The declarators' names, by their positions: the piece before each comma
        # at bracket level 0 names one variable (its last word before `[` or `=`).
        names, level, piece_start = [], 0, match.end()
        for at in range(match.end(), end + 1):
            char = masked[at]
            if char in "([{<":
                level += 1
            elif char in ")]}>":
                level -= 1
            if at == end or (char == "," and level == 0):
                piece = masked[piece_start:at]
                found = list(re.finditer(r"(\w+)\s*(?:\[|=|$)", piece.rstrip()))
                if found:
                    names.append((piece_start + found[0].start(1), found[0].group(1)))
                piece_start = at + 1
        declaration = text[last : end + 1]
        for position, _ in reversed(names):  # rename: name -> gt_shared_name
            position -= last
            declaration = f"{declaration[:position]}gt_shared_{declaration[position:]}"
        aliases = "".join(
            f' auto &{n} = *gt_sim_shared_alias(&gt_shared_{n}, "{n}");' for _, n in names
        )
        out.append(declaration + aliases)
        last = end + 1
    out.append(text[last:])
    return "".join(out)


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
    header = (SIMULATOR_DIR / "gt_cuda_sim_runtime.h").read_text()
    folder = cache / f"runtime-{digest(source.read_text(), header, cc)}"
    target = folder / _RUNTIME_NAME
    if not target.exists():
        folder.mkdir(exist_ok=True)
        command = [cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-pthread", str(source)]
        _compile(command + [f"-Wl,-soname,{_RUNTIME_NAME}", "-ldl"], target)
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
            f"unsigned int bz, const gt_sim_launch_config *config{declared}) {{\n"
            "    gt_sim_launch_config gt_config = *config;\n"
            f'    gt_config.kernel = "{name}";\n'
            "    gt_sim::launch(stream, dim3(gx, gy, gz), dim3(bx, by, bz), &gt_config, "
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

    ``-ftz=false`` among ``options`` keeps denormals in ``gpu`` mode (the
    built-in kernels ask for it: :data:`BUILTIN_OPTIONS`).

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
    if contract:
        # GCC forms FMAs in a pass of -O2's "expensive optimizations": named, so
        # the sanitizer's -O1 builds contract too.
        flags.append("-fexpensive-optimizations")
        if os.uname().machine in ("x86_64", "i686") and _host_has_fma():
            flags.append("-mfma")
    flush = gpu and not any(option.lstrip("-") == "ftz=false" for option in options)
    bits = _MXCSR_FTZ_DAZ if flush else 0
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
        self._sim.wait(lambda: self._sim.lib.gt_sim_stream_wait(self.handle, _POLL_MS))
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
        self._sim.wait(lambda: self._sim.lib.gt_sim_event_wait(self.handle, _POLL_MS))

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
        shared_mem: int = 0,
        extents: list[tuple[int, int]] | None = None,
    ) -> None:
        """Queue the kernel over ``grid`` blocks of ``block`` threads; return at once.

        Args:
            grid, block: an int or a tuple of up to three ints (x, y, z).
            args: one value per kernel parameter; a pointer parameter takes a
                device address (an int, as :meth:`Simulator.malloc` returns).
            stream: where to queue it (the default stream if None).
            shared_mem: bytes of dynamic shared memory (``extern __shared__``) per block.
            extents: ``(address, nbytes)`` of the allocation each pointer argument
                came from, when known (``RawKernel`` passes its tensors'); memcheck
                then checks each global access against them, not the whole arena.

        Raises:
            SimulatorError: the configuration breaks one of CUDA's limits (at once,
                as ``cudaLaunchKernel`` returns it); later errors (a fault, a
                sanitizer report) are raised by the next synchronize.
        """
        grid3, block3 = _dim3(grid), _dim3(block)
        sim, ffi = self.module.sim, self.module.ffi
        if min(grid3 + block3) < 0 or max(grid3 + block3) >= 2**32 or shared_mem < 0:
            raise SimulatorError(
                f"{self.name}: invalid configuration argument: grid {grid3}, "
                f"block {block3}, shared_mem {shared_mem}"
            )
        invalid = ffi.string(sim.lib.gt_sim_check_config(grid3, block3, shared_mem)).decode()
        if invalid:
            raise SimulatorError(f"{self.name}: {invalid}")
        if len(args) != len(self.params):
            raise TypeError(
                f"{self.name}() takes {len(self.params)} arguments "
                f"({', '.join(p for _, p in self.params)}), got {len(args)}"
            )
        values = [
            ffi.cast("void *", int(value)) if "*" in ctype else value
            for (ctype, _), value in zip(self.params, args)
        ]
        config = sim.ffi.new("gt_sim_launch_config *")
        config.checks = self.module.checks
        config.dynamic_shared = shared_mem
        if extents is None:  # unknown sizes: initcheck marks what the pointers point into
            if not self.module.checks:
                extents = [(int(v), 0) for (c, _), v in zip(self.params, args) if "*" in c]
            else:
                extents = []
        extents = extents[:64]
        config.nextents = len(extents)
        for i, (base, nbytes) in enumerate(extents):
            config.extents[2 * i], config.extents[2 * i + 1] = base, nbytes
        stream_handle = ffi.cast("void *", sim.address_of(stream))
        config_arg = ffi.cast("void *", int(sim.ffi.cast("uintptr_t", config)))
        self._launch(stream_handle, *grid3, *block3, config_arg, *values)


def _dim3(size: int | tuple[int, ...]) -> tuple[int, int, int]:
    sizes = (size,) if isinstance(size, int) else tuple(size)
    if not 1 <= len(sizes) <= 3:
        raise SimulatorError(f"a grid or block size has 1 to 3 dimensions, got {size!r}")
    return tuple(int(s) for s in sizes) + (1,) * (3 - len(sizes))


class Module:
    """A compiled ``.cu`` source: its kernels, found by name (CuPy's ``RawModule``)."""

    def __init__(self, sim: Simulator, source: str, library: Path, checks: int = 0) -> None:
        self.sim = sim
        self.checks = checks  #: the GT_SIM_* checks of every launch (0: none)
        self.kernels = kernel_signatures(source)
        self.ffi = FFI()
        for name, params in self.kernels.items():
            declared = "".join(f", {_cdef_type(ctype)} {pname}" for ctype, pname in params)
            self.ffi.cdef(
                f"void gt_launch_{name}(void *stream, unsigned int, unsigned int, "
                f"unsigned int, unsigned int, unsigned int, unsigned int, void *{declared});"
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

    def load(self, path: str | os.PathLike, checks: int | None = None) -> Module:
        """Compile (or find in the cache) a .cu file; a bare name is looked up in fast/cuda.

        ``checks`` (a mask of :data:`CHECKS`) defaults to ``GLASSTORCH_SIM_CHECK``
        (off when unset), the setting of the built-in kernels, whose arithmetic
        is :data:`BUILTIN_OPTIONS`'."""
        path = Path(path)
        if not path.is_absolute() and not path.exists():
            path = CUDA_DIR / path
        return self.load_source(
            path.read_text(), filename=str(path), checks=checks, options=BUILTIN_OPTIONS
        )

    def load_source(
        self,
        source: str,
        filename: str = "<source>.cu",
        checks: int | None = None,
        options: tuple[str, ...] = (),
    ) -> Module:
        """Compile CUDA source text for the simulator and load it (``checks`` as :meth:`load`).

        Of NVRTC's ``options`` only ``--fmad=false`` has a meaning here (see
        :func:`float_arithmetic`); the others are for a GPU.
        """
        if checks is None:
            checks = builtin_checks()
        header = (SIMULATOR_DIR / "gt_cuda_sim.h").read_text() + headers_text()
        cxx = os.environ.get("CXX", "c++")
        checked = "checked" if checks else "plain"
        float_flags, float_prelude = float_arithmetic({}, options)  # the kernels are in source
        key = digest(
            source,
            filename,
            header,
            str(self.runtime_path),
            cxx,
            checked,
            *float_flags,
            float_prelude,
        )
        with self._lock:
            if (key, checks) in self._modules:
                return self._modules[key, checks]
            library = self.cache / f"kernels-{key}.so"
            if not library.exists():
                self._compile_module(source, filename, library, cxx, bool(checks), options)
            module = Module(self, source, library, checks)
            self._modules[key, checks] = module
            return module

    def _headers(self) -> Path:
        """fast/cuda's headers after the preprocessing pass, in a folder of the cache
        that comes first on the include path."""
        texts = {p.name: rewrite_shared(p.read_text()) for p in sorted(CUDA_DIR.glob("*.cuh"))}
        folder = self.cache / f"include-{digest(*texts.values())}"
        if not folder.exists():
            partial = Path(tempfile.mkdtemp(dir=self.cache, prefix="include-partial-"))
            for name, text in texts.items():
                (partial / name).write_text(text)
            try:
                os.replace(partial, folder)
            except OSError:  # another process made it first
                for child in partial.iterdir():
                    child.unlink()
                partial.rmdir()
        return folder

    def _compile_module(
        self,
        source: str,
        filename: str,
        library: Path,
        cxx: str,
        checked: bool,
        options: tuple[str, ...],
    ) -> None:
        kernels = kernel_signatures(source)
        if not kernels:
            raise SimulatorError(f'{filename}: no `extern "C" __global__ void name(...)` kernel')
        float_flags, float_entries = float_arithmetic(kernels, options)
        line_count = source.count("\n") + 2
        text = (
            f'#line 1 "{filename}"\n{rewrite_shared(source)}\n'
            f'#line {line_count} "<gt_launch wrappers>"\n{float_entries}'
            f"{_launcher_source(kernels)}"
        )
        # A name of this process's own, in case another process compiles the same source.
        unit = library.with_suffix(f".{os.getpid()}.cpp")
        obj = library.with_suffix(f".{os.getpid()}.o")
        unit.write_text(text)
        runtime_dir = str(self.runtime_path.parent)
        flags = _CHECK_FLAGS if checked else ["-O2"]
        compile_command = [cxx, "-std=c++17", *flags, *float_flags, "-fPIC", "-pthread", "-c"]
        compile_command += [f"-I{self._headers()}", f"-I{CUDA_DIR}", f"-I{SIMULATOR_DIR}"]
        compile_command += ["-include", "gt_cuda_sim.h", "-x", "c++", str(unit)]
        # Two steps, so the compiler driver links no sanitizer library: the runtime
        # defines the instrumentation's entry points.
        link = [cxx, "-shared", "-pthread", str(obj), f"-L{runtime_dir}", "-lgt_cuda_sim_runtime"]
        link += [f"-Wl,-rpath,{runtime_dir}"]
        try:
            # Run in the cache, so a relative file name stays relative in the debug lines.
            result = subprocess.run(
                compile_command + ["-o", str(obj)], capture_output=True, text=True, cwd=self.cache
            )
            if result.returncode != 0:
                raise SimulatorError(
                    f"compiling for the CUDA simulator failed ({' '.join(compile_command)}):\n"
                    f"{result.stderr}"
                )
            _compile(link, library)
        finally:
            unit.unlink()
            if obj.exists():
                obj.unlink()

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
        self.wait(lambda: self.lib.gt_sim_device_wait(_POLL_MS))
        self.check_error()

    def wait(self, poll) -> None:
        """Call ``poll()`` (a C wait with a timeout, true when done) until it is done.

        The host waits in short slices so that Python sees Ctrl-C: on
        KeyboardInterrupt, the device is told to stop (the running kernels end at
        once, the queued ones are skipped), and the interrupt goes on."""
        try:
            while not poll():
                pass
        except KeyboardInterrupt:
            self.lib.gt_sim_interrupt(1)
            try:
                while not self.lib.gt_sim_device_wait(_POLL_MS):
                    pass
            finally:
                self.lib.gt_sim_interrupt(0)
                self._take_error()  # the interrupt's own record
            raise

    def note_allocation(self, ptr: int, nbytes: int, stream: Stream | None = None) -> None:
        """The caching allocator hands out ``nbytes`` at ``ptr`` for ``stream``: once the
        stream reaches this point, their contents are undefined again (initcheck) and
        memcheck knows the block's size."""
        self.lib.gt_sim_note_allocation(
            self.ffi.cast("void *", ptr), nbytes, self._stream_handle(stream)
        )

    def _take_error(self):
        error = self.ffi.new("gt_sim_error *")
        return error if self.lib.gt_sim_take_error(error) else None

    def check_error(self) -> None:
        """Raise the first error of a launch since the last check: :class:`SimulatorError`
        for an invalid launch, a :class:`SanitizerError` subclass for a bug in a kernel."""
        error = self._take_error()
        if error is None or error.kind == _INTERRUPT:
            return
        raise _error_of(self.ffi, error)


def _text(ffi, chars) -> str:
    return ffi.string(chars).decode(errors="replace")


_LINES: dict[tuple[str, int], tuple[str, int] | None] = {}


def source_line(library: str, offset: int) -> tuple[str, int] | None:
    """The (file, line) of the code at ``offset`` in a kernel library, by addr2line (the
    innermost position in the student's source, past the simulator's header)."""
    key = (library, offset)
    if key not in _LINES:
        found = None
        try:
            result = subprocess.run(
                ["addr2line", "-i", "-e", library, hex(offset)],
                capture_output=True,
                text=True,
                timeout=30,
            )
            for line in result.stdout.splitlines():
                file, _, number = line.rpartition(":")
                number = number.split()[0] if number else ""
                if file and file != "??" and number.isdigit() and int(number) > 0:
                    if Path(file).name.startswith("gt_cuda_sim"):
                        continue
                    if file.startswith(str(Path(library).parent) + os.sep):
                        file = file[len(str(Path(library).parent)) + 1 :]  # a name as given
                    if file.startswith("include-"):  # fast/cuda's header, rewritten
                        file = str(CUDA_DIR / Path(file).name)
                    found = (file, int(number))
                    break
        except (OSError, subprocess.SubprocessError):
            pass
        _LINES[key] = found
    return _LINES[key]


def _error_of(ffi, error) -> SimulatorError:
    """The exception for a runtime error record, worded as compute-sanitizer words it."""
    cls, check = _ERROR_CLASSES.get(error.kind, (SimulatorError, ""))
    what, detail = _text(ffi, error.what), _text(ffi, error.detail)
    kernel, obj = _text(ffi, error.kernel), _text(ffi, error.object)
    position = None
    if error.line:
        position = (_text(ffi, error.file), error.line)
    elif obj and error.pc:
        position = source_line(obj, error.pc - 1)  # pc: the return address after the call

    # racecheck names the earlier access's code address: give its line
    def earlier(match):
        found = source_line(obj, int(match.group(1), 16) - 1) if obj else None
        return f"at line {found[1]}" if found else "(line unknown)"

    detail = re.sub(r"\{pc:([0-9a-f]+)\}", earlier, detail)
    parts = [f"{check}: {what}" if check else what]
    if position:
        parts.append(f" at line {position[1]} of {position[0]}")
    if kernel:
        parts.append(f" in kernel '{kernel}'")
    if error.has_thread:
        thread, block = tuple(error.thread), tuple(error.block)
        parts.append(
            f" by thread ({thread[0]},{thread[1]},{thread[2]}) "
            f"in block ({block[0]},{block[1]},{block[2]})"
        )
    if detail:
        parts.append(f": {detail}")
    exc = cls("".join(parts))  # (the deadlock's SimulatorError attributes stay unset)
    exc.check = check or None
    exc.kernel = kernel or None
    exc.thread = tuple(error.thread) if error.has_thread else None
    exc.block = tuple(error.block) if error.has_thread else None
    exc.file, exc.line = position if position else (None, None)
    return exc


_SIMULATOR: Simulator | None = None
_SIMULATOR_LOCK = threading.Lock()


def get_simulator() -> Simulator:
    """The process's simulator, created (and its runtime compiled) on first use."""
    global _SIMULATOR
    with _SIMULATOR_LOCK:
        if _SIMULATOR is None:
            _SIMULATOR = Simulator()
        return _SIMULATOR
