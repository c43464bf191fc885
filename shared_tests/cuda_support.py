"""Whether a CUDA driver is active in this test process, and the marker that says so.

The driver is chosen once, when glasstorch is imported, from ``GLASSTORCH_CUDA``
(``auto``, ``cupy``, ``simulator``, ``off``). ``make test`` runs the tests marked
``cuda`` once more with ``GLASSTORCH_CUDA=simulator``; in the ordinary run, without
a GPU, the device tests below are skipped with the reason shown.
"""

from __future__ import annotations

import pytest

import glasstorch as gt

#: True when a CUDA driver (the simulator or a GPU through CuPy) runs in this process.
CUDA_ACTIVE: bool = gt.cuda.is_available()

#: Skip a test that needs a CUDA device, visibly, when none is active.
requires_cuda = pytest.mark.skipif(
    not CUDA_ACTIVE,
    reason="no CUDA driver in this process: run with GLASSTORCH_CUDA=simulator (make test does)",
)

#: Skip a test that checks the answers of a process without CUDA.
requires_no_cuda = pytest.mark.skipif(
    CUDA_ACTIVE, reason="a CUDA driver is active (GLASSTORCH_CUDA): this test checks its absence"
)


def driver_name() -> str | None:
    """``"simulator"`` or ``"cupy"`` (None without CUDA)."""
    from glasstorch.cuda import _runtime

    return None if _runtime.driver is None else _runtime.driver.name
