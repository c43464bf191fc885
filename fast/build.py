"""The cffi build of the fast tier's C kernels, once per instruction set.

``pip install -e .`` (or ``make``) runs this through setuptools' ``cffi_modules``
hook (see setup.py); after editing a C file, run ``python fast/build.py`` to
rebuild in place (it compiles in temporary folders, then swaps the new
libraries in atomically).

What Python can call (``lib.<name>``) is declared once, in the headers: the
lines of each ``fast/csrc/*.h`` between ``/* cffi-begin */`` and
``/* cffi-end */`` (``gt_common.h`` first) make up :data:`CDEF`.

One build, every x86-64 CPU: run-time dispatch
----------------------------------------------
A vector instruction the CPU lacks stops the program (SIGILL), so a library
compiled for the newest instructions (``-march=native`` on the building
machine) may not run on another machine, and one compiled for the oldest runs
everywhere but slowly. PyTorch ships one wheel that has its vectorised ATen
kernels compiled several times (DEFAULT, AVX2, AVX512) and picks one when it
starts, from what the CPU reports (``torch.backends.cpu.get_cpu_capability()``);
OpenBLAS does the same with its GEMM kernels. So does glasstorch:
every ``fast/csrc/*.c`` file is compiled into three extension modules that
differ only in their instruction-set flags (:data:`CAPABILITIES`):

* ``glasstorch.fast._native_avx512``: AVX-512 F/BW/DQ/VL, AVX2 and FMA
  (512-bit vectors; 32 vector registers; masked loads and stores);
* ``glasstorch.fast._native_avx2``: AVX2 and FMA (256-bit vectors, 16 registers);
* ``glasstorch.fast._native_default``: no flags, plain x86-64 (SSE2, 128-bit,
  no fused multiply-add), which every x86-64 CPU runs;

plus ``glasstorch.fast._native_cpuinfo``, the tiny ``csrc/cpuinfo.c`` compiled
without flags, which asks the CPU (CPUID) what it has. The loader
(``load_native`` in ``fast/__init__.py``) imports that first and then the best
kernel module the CPU can run, or a lower one forced by
``GLASSTORCH_CPU_CAPABILITY`` or PyTorch's ``ATEN_CPU_CAPABILITY``.
Only one kernel module is imported in a process. On a CPU that is not x86
only the DEFAULT module is built (the ``-m`` flags are x86's).

Why three whole modules rather than three copies of each hot function behind
a table of function pointers: the C sources stay exactly as they are (a
kernel picks its vector width with ``#if defined(__AVX512F__)``, as gemm.c
does, and the compiler auto-vectorises the rest for the flags it is given);
nothing has to rename hundreds of functions or keep a pointer table in step
with the headers; and a call from Python reaches its kernel as directly as
before. The cost is compile time: each file is compiled three times (the
non-hot files too, though they are a small part), about three times the CPU
time of one module. :func:`build_in_place` compiles the modules in parallel
processes and setup.py asks setuptools to do the same: measured on this
project's 2-core machine, 41 s (58 s of CPU) against 22 s (21 s of CPU) for
the single ``-march=native`` module of before.

Building on the machine itself with ``-march=native`` is not needed: on an
AMD EPYC with AVX-512, the AVX-512 module ran the GEMM and the model
training steps as fast as the ``-march=native`` build did (docs/bench.md).
``GLASSTORCH_PORTABLE``, which used to leave out ``-march=native``, no longer
means anything: every build is portable.

Compiler flags (all three modules):

* ``-O3``: full optimisation, including auto-vectorisation of simple loops.
* ``-fopenmp``: OpenMP, so a kernel can split a large loop across cores.
* ``-fno-trapping-math``: glasstorch never traps on floating-point exceptions,
  so GCC may evaluate both sides of a ``?:`` and select. Without it, on a CPU
  with AVX2 but no AVX-512 (no masked instructions), GCC 12 leaves the
  branch-free exp, tanh and sigmoid of ``gt_math.h`` scalar ("control flow in
  loop"): float32 sigmoid ran about 20 times slower than PyTorch's there.
* ``-fno-math-errno``: glasstorch never reads ``errno``. C's ``sqrt`` must set
  it for a negative argument, so with it GCC calls libm's ``sqrt`` once per
  element and cannot vectorise a loop that takes a square root: the Adam,
  RMSprop and Adagrad updates (whose double-precision arithmetic mirrors the
  reference tier) ran about 20 cycles per element. Without it ``sqrt`` is one
  ``vsqrtpd`` per vector, the same correctly rounded IEEE square root. (It
  does not let GCC swap ``exp`` or ``log`` for vector versions that round
  differently: glibc declares those only under ``-ffast-math``.)

Numbers may differ in the last bits between the modules: with FMA the
compiler fuses ``a * b + c`` into one rounding (AVX2, AVX512) where DEFAULT
rounds twice, and a reduction adds its partial sums in vector-width order.
AVX2 and AVX512 fuse the same expressions, so elementwise kernels agree
bit for bit between them. shared_tests/test_cpu_capability.py checks this.

cffi releases the GIL for the duration of each call into ``lib``, so C
kernels can run while other Python threads do work.
"""

from __future__ import annotations

import glob
import os
import platform

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, "csrc")

#: Is the building machine x86? Only x86 has the three instruction-set levels.
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")

#: The instruction-set levels each kernel module is compiled for (PyTorch's
#: names, best first) and the GCC/Clang flags of each. Its module is
#: ``glasstorch.fast._native_<name in lower case>``.
CAPABILITIES = {
    "AVX512": ["-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx2", "-mfma"],
    "AVX2": ["-mavx2", "-mfma"],
    "DEFAULT": [],
}
if not X86:
    CAPABILITIES = {"DEFAULT": []}

#: The flags every module is compiled with (see the module docstring).
COMMON_ARGS = ["-O3", "-fopenmp", "-fno-trapping-math", "-fno-math-errno"]


def read_cdef(headers: list[str] | None = None) -> str:
    """The cffi declarations: the ``cffi-begin``/``cffi-end`` block of each header."""
    if headers is None:
        headers = sorted(glob.glob(os.path.join(CSRC, "*.h")))
    headers = sorted(headers, key=lambda path: os.path.basename(path) != "gt_common.h")
    blocks = []
    for path in headers:
        with open(path, encoding="utf-8") as header:
            text = header.read()
        start, end = text.find("/* cffi-begin */"), text.find("/* cffi-end */")
        if start != -1 and end != -1:
            blocks.append(text[start + len("/* cffi-begin */") : end])
    return "\n".join(blocks)


#: The C functions and types Python can call, read from the headers.
CDEF = read_cdef()


def _relative(path: str) -> str:
    """``path`` relative to the working directory, as setuptools prefers."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path


def module_name(capability: str) -> str:
    """The kernel module compiled for ``capability``: ``glasstorch.fast._native_avx2``..."""
    return f"glasstorch.fast._native_{capability.lower()}"


def compile_args(capability: str) -> list[str]:
    """The C compiler flags of the module for ``capability``."""
    return COMMON_ARGS + CAPABILITIES[capability]


def make_builder(capability: str, absolute_paths: bool = False) -> FFI:
    """The cffi builder of the kernel module for ``capability`` (a key of CAPABILITIES).

    setuptools wants source paths relative to the repository root; a build in
    a temporary folder (:func:`build_in_place`) needs absolute ones.
    """
    where = (lambda path: path) if absolute_paths else _relative
    builder = FFI()
    builder.cdef(CDEF)
    builder.set_source(
        module_name(capability),
        "".join(
            f'#include "{os.path.basename(path)}"\n'
            for path in sorted(glob.glob(os.path.join(CSRC, "*.h")))
        ),
        sources=sorted(where(path) for path in glob.glob(os.path.join(CSRC, "*.c"))),
        include_dirs=[where(CSRC)],
        extra_compile_args=compile_args(capability),
        extra_link_args=["-fopenmp"],
    )
    return builder


def make_cpuinfo_builder(absolute_paths: bool = False) -> FFI:
    """The cffi builder of ``glasstorch.fast._native_cpuinfo``: cpuinfo.c alone, no flags."""
    where = (lambda path: path) if absolute_paths else _relative
    builder = FFI()
    builder.cdef(read_cdef([os.path.join(CSRC, "cpuinfo.h")]))
    builder.set_source(
        "glasstorch.fast._native_cpuinfo",
        '#include "cpuinfo.h"\n',
        sources=[where(os.path.join(CSRC, "cpuinfo.c"))],
        include_dirs=[where(CSRC)],
        extra_compile_args=["-O2"],
    )
    return builder


#: What setuptools' ``cffi_modules`` hook builds during ``pip install``
#: (setup.py lists the names in BUILDERS).
ffibuilder_cpuinfo = make_cpuinfo_builder()
ffibuilder_default = make_builder("DEFAULT")
if X86:
    ffibuilder_avx2 = make_builder("AVX2")
    ffibuilder_avx512 = make_builder("AVX512")
#: The names of the builders above, for setup.py's ``cffi_modules``.
BUILDERS = ["ffibuilder_cpuinfo"] + [f"ffibuilder_{name.lower()}" for name in CAPABILITIES]


def _compile(capability: str | None, tmpdir: str) -> str:
    """Compile one module (``None``: the cpuinfo module) in ``tmpdir``; its path."""
    if capability is None:
        builder = make_cpuinfo_builder(absolute_paths=True)
    else:
        builder = make_builder(capability, absolute_paths=True)
    return builder.compile(tmpdir=tmpdir, verbose=False)


def build_in_place() -> list[str]:
    """Compile every module, in parallel, and atomically replace ``fast/_native_*.so``."""
    import shutil
    import sys
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    jobs = [None, *CAPABILITIES]
    targets = []
    with tempfile.TemporaryDirectory(prefix="gt-build-") as tmp:
        # One process per module (cffi's compile changes the working directory,
        # so threads cannot share the work), all at once even on fewer cores: the
        # operating system then shares the cores out until the last file is done,
        # where a pool of one process per core would leave a core idle at the end.
        workers = len(jobs)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_compile, job, os.path.join(tmp, str(job))) for job in jobs]
            built = [future.result() for future in futures]
        for job, path in zip(jobs, built):
            name = "cpuinfo" if job is None else job.lower()
            # The name pip's build gives it (setuptools builds cffi modules against
            # the stable ABI), so the two ways of building replace each other's file.
            target = os.path.join(HERE, f"_native_{name}.abi3.so")
            staging = target + f".{os.getpid()}.tmp"
            shutil.copy2(path, staging)
            os.replace(staging, target)  # a running import never sees half a file
            targets.append(target)
    for stale in glob.glob(os.path.join(HERE, "_native*.so")):
        # e.g. a cpython-311 build, which Python would load before abi3, or the one
        # _native module of the -march=native builds before run-time dispatch
        if stale not in targets:
            os.remove(stale)
    for target in targets:
        print(f"built {target}", file=sys.stderr)
    return targets


if __name__ == "__main__":
    build_in_place()
