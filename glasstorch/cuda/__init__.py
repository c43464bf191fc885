"""``glasstorch.cuda``: what programs ask about NVIDIA GPUs.

glasstorch has no GPU runtime yet, so every query answers truthfully that
there is no CUDA device: ``is_available()`` is False and ``device_count()``
is 0, and a program written as PyTorch's tutorials write it::

    device = "cuda" if torch.cuda.is_available() else "cpu"

runs on the CPU. A GPU runtime will extend this package. Seeding calls are
accepted and do nothing, as PyTorch's are on a machine without CUDA; calls
that need a device raise PyTorch's ``AssertionError``.
"""

from __future__ import annotations

_NO_CUDA = "Torch not compiled with CUDA enabled"


def is_available() -> bool:
    """Whether a CUDA device can be used: False (glasstorch has no GPU runtime yet)."""
    return False


def device_count() -> int:
    """How many CUDA devices there are: 0."""
    return 0


def is_initialized() -> bool:
    """Whether the CUDA runtime has started: never, without one."""
    return False


def manual_seed(seed: int) -> None:
    """Seed the CUDA generators: nothing to seed without a device (as PyTorch, no error)."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator: nothing to seed without a device."""
    int(seed)


def _no_device(*args, **kwargs):
    """A call that needs a CUDA device: raises PyTorch's AssertionError."""
    raise AssertionError(_NO_CUDA)


def current_device() -> int:
    """The index of the current CUDA device: raises, there is none."""
    _no_device()


def synchronize(device=None) -> None:
    """Wait for the device's work to finish: raises, there is no CUDA device."""
    _no_device()


def get_device_name(device=None) -> str:
    """The name of a CUDA device: raises, there is none."""
    _no_device()


def set_device(device) -> None:
    """Make ``device`` current: raises, there is no CUDA device."""
    _no_device()
