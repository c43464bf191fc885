"""The cffi build of the fast tier's C kernels: ``glasstorch.fast._native``.

``pip install -e .`` (or ``make``) runs this through setuptools' ``cffi_modules``
hook (see setup.py); after editing a C file, run it again to rebuild.

Every ``fast/csrc/*.c`` file is compiled into the one extension module. What
Python can call (``lib.<name>``) is declared once, in the headers: the lines of
each ``fast/csrc/*.h`` between ``/* cffi-begin */`` and ``/* cffi-end */``
(``gt_common.h`` first) make up :data:`CDEF`.

Run ``python fast/build.py`` to rebuild the extension in place (it compiles in
a temporary folder, then swaps the new ``_native`` library in atomically), or
``pip install -e .``, which runs the same builder.

Compiler flags:

* ``-O3``: full optimisation, including auto-vectorisation of simple loops.
* ``-march=native``: use every instruction the building CPU has (AVX2,
  AVX-512, FMA...). The result may not run on an older CPU, so set
  ``GLASSTORCH_PORTABLE=1`` when building for another machine (a wheel, a
  shared cluster image) to leave it out.
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

cffi releases the GIL for the duration of each call into ``lib``, so C
kernels can run while other Python threads do work.
"""

from __future__ import annotations

import glob
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, "csrc")


def read_cdef() -> str:
    """The cffi declarations: every header's ``cffi-begin``/``cffi-end`` block."""
    headers = sorted(glob.glob(os.path.join(CSRC, "*.h")))
    headers.sort(key=lambda path: os.path.basename(path) != "gt_common.h")
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


def compile_args() -> list[str]:
    """The C compiler flags, honouring ``GLASSTORCH_PORTABLE``."""
    args = ["-O3", "-fopenmp", "-fno-trapping-math", "-fno-math-errno"]
    if os.environ.get("GLASSTORCH_PORTABLE", "") not in ("", "0"):
        return args
    return args + ["-march=native"]


def make_builder(absolute_paths: bool = False) -> FFI:
    """The cffi builder for ``glasstorch.fast._native``.

    setuptools wants source paths relative to the repository root; a build in
    a temporary folder (:func:`build_in_place`) needs absolute ones.
    """
    where = (lambda path: path) if absolute_paths else _relative
    builder = FFI()
    builder.cdef(CDEF)
    builder.set_source(
        "glasstorch.fast._native",
        "".join(
            f'#include "{os.path.basename(path)}"\n'
            for path in sorted(glob.glob(os.path.join(CSRC, "*.h")))
        ),
        sources=sorted(where(path) for path in glob.glob(os.path.join(CSRC, "*.c"))),
        include_dirs=[where(CSRC)],
        extra_compile_args=compile_args(),
        extra_link_args=["-fopenmp"],
    )
    return builder


#: What setuptools' ``cffi_modules`` hook builds during ``pip install``.
ffibuilder = make_builder()


def build_in_place() -> str:
    """Compile the extension and atomically replace ``fast/_native*.so`` with it."""
    import shutil
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gt-build-") as tmp:
        built = make_builder(absolute_paths=True).compile(tmpdir=tmp, verbose=False)
        # The name pip's build gives it (setuptools builds cffi modules against the
        # stable ABI), so the two ways of building replace each other's file.
        target = os.path.join(HERE, "_native.abi3.so")
        staging = target + f".{os.getpid()}.tmp"
        shutil.copy2(built, staging)
        os.replace(staging, target)  # a running import never sees half a file
    for stale in glob.glob(os.path.join(HERE, "_native*.so")):
        if stale != target:  # e.g. a cpython-311 build: Python would load it before abi3
            os.remove(stale)
    print(f"built {target}", file=sys.stderr)
    return target


if __name__ == "__main__":
    build_in_place()
