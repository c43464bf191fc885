"""What the public modules of ``glasstorch.cuda`` share: the active driver, and
which device an argument names.

Calls that need a device raise PyTorch's ``AssertionError`` when no CUDA driver
is active; glasstorch drives one CUDA device, ``cuda:0``.
"""

from __future__ import annotations

from typing import Any

from glasstorch._gpu import runtime as _runtime

#: The most CUDA devices glasstorch drives: one, ``cuda:0``.
MAX_DEVICES = 1

#: The active driver; PyTorch's AssertionError when CUDA is off.
active_driver = _runtime.require_driver


def device_count() -> int:
    """How many CUDA devices there are (0 without CUDA; glasstorch drives at most one)."""
    return 0 if _runtime.driver is None else min(MAX_DEVICES, _runtime.driver.device_count())


def device_index(device: Any) -> int:
    """The device index that ``device`` (None, an int, a string, a device) names; only 0 exists."""
    from glasstorch.tensor import device as device_type

    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        parsed = device_type(device)
        if parsed.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {parsed}")
        index = 0 if parsed.index is None else parsed.index
    if not 0 <= index < device_count():
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (device {index}; glasstorch drives one "
            "CUDA device, cuda:0)"
        )
    return index
