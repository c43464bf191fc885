"""The fast tier: the kernel contract in C (through cffi) and CUDA (through CuPy).

Select it with ``GLASSTORCH_TIER=fast``. Every kernel of
:mod:`glasstorch._kernels` is a C function in ``fast/csrc/`` (one file per
kernel family), compiled once per instruction set into the extension modules
``glasstorch.fast._native_avx512``, ``_native_avx2`` and ``_native_default``,
of which :func:`load_native` imports the best this CPU runs (run-time
dispatch, as PyTorch's ATen kernels: see fast/build.py). The Python side is one thin mixin per family, binding each contract method to its C
function:

* :mod:`~glasstorch.fast.elementwise`: fill, copy, unary, binary, where;
* :mod:`~glasstorch.fast.creation`: allocate, arange, linspace;
* :mod:`~glasstorch.fast.rng`: Philox 4x32-10 and the random kernels (the ``random`` family);
* :mod:`~glasstorch.fast.sorting`: a stable merge sort of each slice;
* :mod:`~glasstorch.fast.optim`: one fused update per optimizer;
* :mod:`~glasstorch.fast.reductions`, :mod:`~glasstorch.fast.linalg`,
  :mod:`~glasstorch.fast.indexing`, :mod:`~glasstorch.fast.nn`,
  :mod:`~glasstorch.fast.conv`, :mod:`~glasstorch.fast.transformer`: the rest;
* :mod:`~glasstorch.fast.threads`: the size of the OpenMP thread pool.

:func:`make_kernels` composes them into one :class:`~glasstorch._kernels.Kernels`
(with :func:`glasstorch._kernels.compose`, as every tier is composed).

The GPU half lives beside it, in :mod:`glasstorch.fast.cuda`: the CUDA kernels
of ``fast/cuda/*.cu``, their mixins (:mod:`glasstorch.fast.cuda.kernels`) and
the drivers that run them (on a GPU through CuPy, or on the CUDA simulator);
the dispatcher (:mod:`glasstorch._dispatch`) picks between the two by where
tensors live. There is no fallback to Python loops.

The extension is compiled by ``pip install -e .`` (or ``make``), from
``fast/build.py``.

Which kernels run: :func:`cpu_capability` says ("AVX512", "AVX2" or
"DEFAULT", PyTorch's names; also ``glasstorch.backends.cpu.get_cpu_capability()``).
It is the best level the CPU supports, unless ``GLASSTORCH_CPU_CAPABILITY``
(or, when that is unset, PyTorch's own ``ATEN_CPU_CAPABILITY``) is set to
``default``, ``avx2`` or ``avx512`` before glasstorch is imported, asking for a
lower one: for tests, and to see what the vector instructions are worth.
Asking for more than the CPU has gives a warning and the best it has
(PyTorch would stop on an illegal instruction).
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

#: The C ABI version these Python sources expect; must equal ``GT_ABI_VERSION``
#: in ``fast/csrc/glasstorch_fast.h``.
ABI_VERSION = 5

_BUILD_HINT = (
    "Build it with `pip install -e .` (or `make test`, which does so in .venv), "
    "which needs a C compiler with OpenMP support. Or use the pure-Python tier: "
    "GLASSTORCH_TIER=reference."
)

#: The instruction-set levels the kernels are compiled for, lowest first, in
#: PyTorch's spelling (the numbers of fast/csrc/cpuinfo.h are their indices).
CAPABILITIES = ("DEFAULT", "AVX2", "AVX512")

#: The environment variables that force a lower level, the first set one wins:
#: glasstorch's own, then PyTorch's (so ``ATEN_CPU_CAPABILITY=avx2`` lowers both
#: libraries, and the glasstorch one lowers glasstorch alone).
CAPABILITY_VARIABLES = ("GLASSTORCH_CPU_CAPABILITY", "ATEN_CPU_CAPABILITY")

_chosen: str | None = None  # the level picked at the first call, fixed after that


def supported_capability() -> str:
    """The best level this CPU (and its operating system) can run, from CPUID.

    Asks ``glasstorch.fast._native_cpuinfo``, a tiny module compiled without
    any instruction-set flags, so it runs on every CPU.

    Raises:
        ImportError: when the fast tier's extension is not built.
    """
    try:
        from glasstorch.fast import _native_cpuinfo
    except ImportError as error:
        raise ImportError(
            f"The fast tier's C extension is not built ({error}). " + _BUILD_HINT
        ) from error
    return CAPABILITIES[_native_cpuinfo.lib.gt_cpu_capability()]


def _requested_capability() -> str | None:
    """The level the environment asks for (see CAPABILITY_VARIABLES), or None."""
    for variable in CAPABILITY_VARIABLES:
        value = os.environ.get(variable, "")
        if not value:
            continue
        if value.upper() in CAPABILITIES:
            return value.upper()
        warnings.warn(
            f"ignoring invalid value for {variable}: {value!r} (expected default, avx2 or avx512)",
            stacklevel=3,
        )
    return None


def cpu_capability() -> str:
    """The level of the fast tier's CPU kernels in this process: "AVX512", "AVX2" or "DEFAULT".

    The best :func:`supported_capability`, or the lower one the environment
    asks for. Decided once, at the first call (the kernels are imported once).

    Raises:
        ImportError: when the fast tier's extension is not built.
    """
    global _chosen
    if _chosen is None:
        supported = supported_capability()
        requested = _requested_capability()
        if requested is None:
            _chosen = supported
        elif CAPABILITIES.index(requested) > CAPABILITIES.index(supported):
            warnings.warn(
                f"{requested} kernels were asked for (GLASSTORCH_CPU_CAPABILITY or "
                f"ATEN_CPU_CAPABILITY), but this CPU supports at most {supported}; "
                f"using the {supported} kernels",
                stacklevel=2,
            )
            _chosen = supported
        else:
            _chosen = requested
    return _chosen


def load_native() -> ModuleType:
    """Import and return the kernel module for :func:`cpu_capability`.

    That is ``glasstorch.fast._native_avx512``, ``_native_avx2`` or
    ``_native_default``: one compiled cffi module, with two attributes: ``ffi``
    (for allocating and casting C data) and ``lib`` (the C functions declared
    in the headers of ``fast/csrc``).

    Raises:
        ImportError: if the extension has not been built, or was built from
            sources with another ABI version; the message says how to build it.
    """
    name = f"glasstorch.fast._native_{cpu_capability().lower()}"
    try:
        native = _import_with_short_spin(name)
    except ImportError as error:
        raise ImportError(
            f"The fast tier's C extension {name} is not built ({error}). " + _BUILD_HINT
        ) from error
    built = native.lib.gt_abi_version()
    if built != ABI_VERSION:
        raise ImportError(
            f"{name} was built from older sources (ABI {built}, "
            f"expected {ABI_VERSION}). Rebuild it. " + _BUILD_HINT
        )
    return native


#: How many times an idle OpenMP thread of the kernels checks for work before
#: it sleeps (GNU OpenMP's GOMP_SPINCOUNT; its default is 300,000).
#: Optimization (threads that wait politely): GNU OpenMP reads this when the
#: kernel module loads it. By default a thread waiting at a barrier, or for
#: the next parallel region, spins for milliseconds before it sleeps; on a
#: machine whose cores other programs share, it then spins on a core that
#: the thread it waits for needs, and each wait lasts a time slice of the
#: scheduler (a 2-thread LSTM training step took 340-650 ms instead of 35 next
#: to another 2-thread job). 20,000 checks (a fraction of a millisecond, longer
#: than the gap between two kernel calls) cost nothing measurable on an idle
#: machine and took that step to about 150 ms. A value the user set, or an
#: OMP_WAIT_POLICY, is left alone; the variable is set only while the module
#: loads, so another OpenMP library loaded later (PyTorch's) keeps its own.
SPIN_COUNT = "20000"


def _import_with_short_spin(name: str) -> ModuleType:
    """Import the kernel module ``name`` with :data:`SPIN_COUNT` in the environment."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return importlib.import_module(name)
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        return importlib.import_module(name)
    finally:
        del os.environ["GOMP_SPINCOUNT"]


def build_info() -> dict[str, int | bool | str]:
    """How the kernels in use were built: ABI version, instruction sets, OpenMP.

    ``capability`` is the level the loaded module was compiled for, and
    ``cpu_supports`` the best this CPU could run.
    """
    lib = load_native().lib
    return {
        "abi_version": lib.gt_abi_version(),
        "capability": CAPABILITIES[lib.gt_compiled_capability()],
        "cpu_supports": supported_capability(),
        "openmp": bool(lib.gt_openmp_enabled()),
        "max_threads": lib.gt_max_threads(),
    }


def make_kernels():
    """The fast tier's kernel object: one class made of every family's mixin.

    Raises:
        ImportError: when the C extension is not built, saying how to build it.
    """
    load_native()  # first, so a missing extension is named before any mixin imports it
    from glasstorch._kernels import compose

    from .conv import ConvKernels
    from .creation import CreationKernels
    from .elementwise import ElementwiseKernels
    from .indexing import IndexingKernels
    from .linalg import LinalgKernels
    from .nn import NNKernels
    from .optim import OptimKernels
    from .reductions import ReductionKernels
    from .rng import RandomKernels
    from .rnn import LSTMCellKernels
    from .sorting import SortingKernels
    from .threads import ThreadKernels
    from .transformer import TransformerKernels

    fast_kernels = compose(
        "fast",
        {
            "creation": CreationKernels,
            "elementwise": ElementwiseKernels,
            "reductions": ReductionKernels,
            "linalg": LinalgKernels,
            "indexing": IndexingKernels,
            "nn": NNKernels,
            "rnn": LSTMCellKernels,
            "transformer": TransformerKernels,
            "conv": ConvKernels,
            "optim": OptimKernels,
            "random": RandomKernels,
            "sorting": SortingKernels,
            "threads": ThreadKernels,
        },
    )
    fast_kernels.__module__ = __name__
    return fast_kernels()
