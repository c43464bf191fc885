"""What the public modules of ``glasstorch.cuda`` share: the active driver, and
which device an argument names.

Calls that need a device raise PyTorch's ``AssertionError`` when no CUDA driver
is active; glasstorch drives one CUDA device, ``cuda:0``.
"""

from __future__ import annotations

from typing import Any

from glasstorch._gpu import runtime as _runtime

#: PyTorch's message when a call needs CUDA and there is none.
NO_CUDA = "Torch not compiled with CUDA enabled"

#: The most CUDA devices glasstorch drives: one, ``cuda:0``.
MAX_DEVICES = 1


def active_driver():
    """The active driver; PyTorch's AssertionError when CUDA is off."""
    if _runtime.driver is None:
        raise AssertionError(NO_CUDA)
    return _runtime.driver


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
    count = 0 if _runtime.driver is None else min(MAX_DEVICES, _runtime.driver.device_count())
    if not 0 <= index < count:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal (device {index}; glasstorch drives one "
            "CUDA device, cuda:0)"
        )
    return index
