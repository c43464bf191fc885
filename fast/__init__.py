"""The fast tier: the kernel contract in C (through cffi) and CUDA (through CuPy).

**Under construction.** This package holds the build machinery and a small C
extension, ``glasstorch.fast._native``, that reports how it was built; the
kernels themselves arrive in a later issue (one C file per kernel family in
``fast/csrc/``, CUDA sources in ``fast/cuda/``). Until then the fast tier does
not implement the contract, ``python -m glasstorch.tiers`` does not list it,
and programs run on the reference tier (``GLASSTORCH_TIER=reference``, the
default).

The extension is compiled by ``pip install -e .`` (or ``make``), from
``fast/build.py``. Set ``GLASSTORCH_PORTABLE=1`` while building to leave out
``-march=native``.
"""

from __future__ import annotations

from types import ModuleType

#: The C ABI version these Python sources expect; must equal ``GT_ABI_VERSION``
#: in ``fast/csrc/glasstorch_fast.h``.
ABI_VERSION = 1

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
    """The fast tier's kernel object, once it exists.

    Raises:
        NotImplementedError: always, for now: the C kernels are not written yet.
    """
    raise NotImplementedError(
        "The fast tier (GLASSTORCH_TIER=fast) is under construction: its C kernels "
        "are not written yet. Use GLASSTORCH_TIER=reference."
    )
