"""The fast tier: the kernel contract in C (through cffi) and CUDA (through CuPy).

Select it with ``GLASSTORCH_TIER=fast``. Every kernel of
:mod:`glasstorch._kernels` is a C function in ``fast/csrc/`` (one file per
kernel family), compiled into one extension, ``glasstorch.fast._native``. The
Python side is one thin mixin per family, binding each contract method to its C
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
``fast/build.py``. Set ``GLASSTORCH_PORTABLE=1`` while building to leave out
``-march=native``.
"""

from __future__ import annotations

from types import ModuleType

#: The C ABI version these Python sources expect; must equal ``GT_ABI_VERSION``
#: in ``fast/csrc/glasstorch_fast.h``.
ABI_VERSION = 5

_BUILD_HINT = (
    "Build it with `pip install -e .` (or `make test`, which does so in .venv), "
    "which needs a C compiler with OpenMP support; set GLASSTORCH_PORTABLE=1 while "
    "building to leave out -march=native. Or use the pure-Python tier: "
    "GLASSTORCH_TIER=reference."
)


def load_native() -> ModuleType:
    """Import and return the compiled cffi module ``glasstorch.fast._native``.

    The module has two attributes: ``ffi`` (for allocating and casting C data)
    and ``lib`` (the C functions declared in ``fast/build.py``).

    Raises:
        ImportError: if the extension has not been built, or was built from
            sources with another ABI version; the message says how to build it.
    """
    try:
        from glasstorch.fast import _native
    except ImportError as error:
        raise ImportError(
            f"The fast tier's C extension glasstorch.fast._native is not built ({error}). "
            + _BUILD_HINT
        ) from error
    built = _native.lib.gt_abi_version()
    if built != ABI_VERSION:
        raise ImportError(
            f"glasstorch.fast._native was built from older sources (ABI {built}, "
            f"expected {ABI_VERSION}). Rebuild it. " + _BUILD_HINT
        )
    return _native


def build_info() -> dict[str, int | bool]:
    """How the extension was built: ABI version, OpenMP, and OpenMP's thread count."""
    lib = load_native().lib
    return {
        "abi_version": lib.gt_abi_version(),
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
