"""Choosing the tier: ``GLASSTORCH_TIER=reference|fast``, read once at import.

The chosen tier's kernel object (a :class:`glasstorch._kernels.Kernels`) is
``glasstorch._tier.kernels``; every tensor operation calls through it.
"""

from __future__ import annotations

import importlib
import os

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
    module = importlib.import_module(TIERS[name])
    make_kernels = getattr(module, "make_kernels", None)
    if make_kernels is None:
        raise ImportError(
            f"the {name} tier does not implement the kernel contract yet; "
            "use GLASSTORCH_TIER=reference"
        )
    return make_kernels()


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


tier: str = os.environ.get("GLASSTORCH_TIER", DEFAULT_TIER).strip().lower() or DEFAULT_TIER
#: The CPU tier's kernels, whether or not CUDA is active.
cpu_kernels: Kernels = load_tier(tier)
kernels: Kernels = cpu_kernels


def _with_cuda(cpu: Kernels) -> Kernels:
    """``cpu`` itself when CUDA is off; else a dispatcher over the CPU and CUDA kernels.

    The driver is chosen here, once, from ``GLASSTORCH_CUDA`` (see
    :mod:`glasstorch.cuda._driver`); with CUDA off the CPU path pays nothing.
    """
    from glasstorch.cuda import _runtime

    if _runtime.driver is None:
        return cpu
    from glasstorch._dispatch import make_dispatcher

    return make_dispatcher(cpu, _runtime.driver)


kernels = _with_cuda(cpu_kernels)
#: Whether a CUDA driver is active (``kernels`` is then a dispatcher).
cuda_active: bool = kernels is not cpu_kernels
