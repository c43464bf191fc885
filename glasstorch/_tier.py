"""Choosing the tiers: ``GLASSTORCH_TIER=reference|fast`` and ``GLASSTORCH_CUDA``, read once at import.

The chosen CPU tier's kernel object (a :class:`glasstorch._kernels.Kernels`,
composed from its kernel families by :func:`glasstorch._kernels.compose`) is
``cpu_kernels``. When ``GLASSTORCH_CUDA`` chooses a driver, the fast tier's
GPU half (:data:`CUDA_TIER`, loaded by name as the tiers are) makes it and the
CUDA kernels over it; the driver is installed in the GPU runtime
(:mod:`glasstorch._gpu.runtime`) and ``kernels`` becomes a dispatcher over
both. Every tensor operation calls through ``kernels``.
"""

from __future__ import annotations

import builtins
import importlib
import os

from glasstorch._gpu import runtime as _gpu_runtime
from glasstorch._kernels import Kernels, contract_kernel_names

#: Every tier glasstorch knows, and the module that provides its kernels.
TIERS = {
    "reference": "glasstorch.reference",
    "fast": "glasstorch.fast",
}
#: The tier used when ``GLASSTORCH_TIER`` is not set: the compiled one. If its C
#: extension is not built, importing glasstorch says how to build it or to set
#: ``GLASSTORCH_TIER=reference``; it never falls back to Python loops silently.
DEFAULT_TIER = "fast"


def load_tier(name: str) -> Kernels:
    """Import tier ``name`` and return its kernel object.

    Raises:
        ValueError: for a name that is not a tier.
        ImportError: when the tier cannot be loaded (for the fast tier: the C
            extension is not built), with what to do about it.
    """
    if name not in TIERS:
        valid = ", ".join(sorted(TIERS))
        raise ValueError(f"GLASSTORCH_TIER={name!r} is not a tier; valid tiers are: {valid}")
    return importlib.import_module(TIERS[name]).make_kernels()


def missing_kernels(kernels: Kernels) -> list[str]:
    """Contract kernels that ``kernels`` does not implement itself."""
    return [
        name
        for name in contract_kernel_names()
        if getattr(type(kernels), name) is getattr(Kernels, name)
    ]


def complete_tiers() -> list[str]:
    """The tiers that load here and implement the whole kernel contract.

    A tier that fails to load is left out, with the reason on stderr.
    """
    import sys

    names = []
    for name in TIERS:
        try:
            kernels = load_tier(name)
        except Exception as error:  # noqa: BLE001 - any failure means "not usable here"
            print(f"glasstorch: tier {name!r} is not available: {error}", file=sys.stderr)
            continue
        if not missing_kernels(kernels):
            names.append(name)
    return names


#: The module of the CUDA kernels and their drivers (the fast tier's GPU half).
CUDA_TIER = "glasstorch.fast.cuda"
#: The values GLASSTORCH_CUDA accepts.
CUDA_CHOICES = ("auto", "cupy", "simulator", "off")


def select_driver(choice: str | None = None):
    """The driver ``GLASSTORCH_CUDA`` asks for (a :class:`glasstorch._gpu.driver.Driver`),
    or None for no CUDA at all.

    ``auto`` (the default) takes a GPU through CuPy when there is one and
    otherwise runs without CUDA, so ``torch.cuda.is_available()`` is False, as
    PyTorch's is on such a machine.

    Args:
        choice: ``auto``, ``cupy``, ``simulator`` or ``off``; default: the
            environment variable ``GLASSTORCH_CUDA`` (``auto`` when unset).

    Raises:
        ValueError: an unknown value.
        RuntimeError: ``cupy`` where CuPy or a GPU is missing.
    """
    if choice is None:
        choice = os.environ.get("GLASSTORCH_CUDA", "auto")
    choice = choice.strip().lower() or "auto"
    if choice not in CUDA_CHOICES:
        raise ValueError(
            f"GLASSTORCH_CUDA={choice!r} is not a CUDA driver; use one of "
            f"{', '.join(CUDA_CHOICES)} (auto: a GPU through CuPy if there is one, else no "
            "CUDA; simulator: the CUDA simulator, on any machine with a C compiler; off: no CUDA)"
        )
    if choice == "off":
        return None
    cuda = importlib.import_module(CUDA_TIER)
    if choice == "simulator":
        return cuda.make_driver("simulator")
    problem = cuda.cupy_problem()
    if problem is None:
        return cuda.make_driver("cupy")
    if choice == "cupy":
        raise RuntimeError(
            f"GLASSTORCH_CUDA=cupy needs CuPy and an NVIDIA GPU, but {problem}. Install CuPy "
            "for your CUDA version (pip install 'glasstorch[cuda]' or cupy-cuda12x) on a machine "
            "with a GPU, or use GLASSTORCH_CUDA=simulator to run the CUDA kernels on the CPU, "
            "or GLASSTORCH_CUDA=off."
        )
    return None  # auto without a GPU: no CUDA, as PyTorch on such a machine


def _with_cuda(cpu: Kernels, driver) -> Kernels:
    """``cpu`` itself when CUDA is off; else a dispatcher over the CPU and CUDA kernels.

    With CUDA off the CPU path pays nothing.
    """
    if driver is None:
        return cpu
    from glasstorch._dispatch import make_dispatcher

    return make_dispatcher(cpu, importlib.import_module(CUDA_TIER).make_kernels(driver, cpu))


tier: str = os.environ.get("GLASSTORCH_TIER", DEFAULT_TIER).strip().lower() or DEFAULT_TIER
#: The CPU tier's kernels, whether or not CUDA is active.
cpu_kernels: Kernels = load_tier(tier)
_gpu_runtime.install(select_driver())
#: The kernels every operation calls: ``cpu_kernels``, or the dispatcher over it
#: and the CUDA kernels.
#:
#: The frontend's modules bind it by assignment, ``kernels = _tier.kernels``,
#: not by ``from glasstorch._tier import kernels``. Speed: Python (3.11 and
#: later) compiles ``name.method(...)`` into a method call whose lookup it caches,
#: unless ``name`` was imported, which it takes for a module; then every call
#: looks ``method`` up anew and builds a bound method (about 25 ns per kernel call).
kernels: Kernels = _with_cuda(cpu_kernels, _gpu_runtime.driver)
#: Whether a CUDA driver is active (``kernels`` is then a dispatcher).
cuda_active: bool = kernels is not cpu_kernels


# ------------------------------------------------- the CPU tier's threads


def set_num_threads(int: int) -> None:  # noqa: A002 - PyTorch's argument name
    """Let each operation use up to ``int`` threads (the fast tier's OpenMP pool).

    As in PyTorch, the setting applies to operations started from the calling
    thread. The reference tier always computes in one thread; it remembers the
    number, so that :func:`get_num_threads` reads it back.
    """
    value = int
    if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(value).__name__}")
    if value < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    kernels.set_num_threads(value)


def get_num_threads() -> int:
    """How many threads each operation may use (see :func:`set_num_threads`)."""
    return kernels.get_num_threads()
