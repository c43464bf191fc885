"""The default device of the factory functions: ``set_default_device``.

The default device is the CPU unless :func:`set_default_device` changes it;
``"cuda"`` is accepted while a CUDA driver is active (``GLASSTORCH_CUDA``), and
refused otherwise with an error that says why.
"""

from __future__ import annotations

from glasstorch._gpu import runtime as _gpu_runtime
from glasstorch.tensor import CPU, check_device, device

_default = CPU


def set_default_device(device_spec) -> None:
    """Make ``device_spec`` the device that ``zeros``, ``randn``, ... allocate on.

    Args:
        device_spec: ``"cpu"``, ``"cuda"``, a :class:`device`, or None (back to the CPU).

    Raises:
        RuntimeError: for ``"cuda"`` when there is no CUDA device
            (:func:`glasstorch.cuda.is_available` is False). PyTorch without
            CUDA accepts the call and fails at the next factory call with
            ``AssertionError: Torch not compiled with CUDA enabled``; glasstorch
            fails at once, where the cause is.
    """
    global _default
    if device_spec is None:
        _default = CPU
        return
    if device(device_spec).type != "cpu":
        if _gpu_runtime.driver is None:  # what glasstorch.cuda.is_available() reads
            raise RuntimeError(
                f"set_default_device({str(device_spec)!r}): no CUDA device is available "
                "(glasstorch.cuda.is_available() is False). Use set_default_device('cpu'), "
                "or pick the device with: 'cuda' if torch.cuda.is_available() else 'cpu'."
            )
    _default = check_device(device_spec)


def get_default_device() -> device:
    """The device that factory functions allocate on (the CPU unless changed)."""
    return _default
