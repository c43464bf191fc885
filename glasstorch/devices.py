"""The default device of the factory functions: ``set_default_device``.

Only the CPU exists in glasstorch today, so the default device is always
``cpu``; :func:`set_default_device` accepts it (and None) and refuses a GPU
with an error that says why.
"""

from __future__ import annotations

from glasstorch.tensor import CPU, device


def set_default_device(device_spec) -> None:
    """Make ``device_spec`` the device that ``zeros``, ``randn``, ... allocate on.

    Args:
        device_spec: ``"cpu"``, a :class:`device`, or None (back to the CPU).

    Raises:
        RuntimeError: for ``"cuda"``: there is no CUDA device
            (:func:`glasstorch.cuda.is_available` is False). PyTorch without
            CUDA accepts the call and fails at the next factory call with
            ``AssertionError: Torch not compiled with CUDA enabled``; glasstorch
            fails at once, where the cause is.
    """
    if device_spec is None:
        return
    if device(device_spec).type != "cpu":
        raise RuntimeError(
            f"set_default_device({str(device_spec)!r}): no CUDA device is available "
            "(glasstorch.cuda.is_available() is False). Use set_default_device('cpu'), "
            "or pick the device with: 'cuda' if torch.cuda.is_available() else 'cpu'."
        )


def get_default_device() -> device:
    """The device that factory functions allocate on: always the CPU."""
    return CPU
