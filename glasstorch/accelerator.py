"""``glasstorch.accelerator``: PyTorch's device-neutral questions about accelerators.

There is no accelerator (no CUDA, no MPS) in glasstorch today, so
``current_accelerator()`` is None, and the idiom::

    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"

picks the CPU.
"""

from __future__ import annotations

from glasstorch import cuda


def is_available() -> bool:
    """Whether an accelerator (a GPU) can be used."""
    return cuda.is_available()


def device_count() -> int:
    """How many accelerator devices there are."""
    return cuda.device_count()


def current_accelerator(check_available: bool = False):
    """The accelerator's device type (a :class:`~glasstorch.device`), or None without one."""
    if cuda.is_available():
        from glasstorch.tensor import device

        return device("cuda")
    return None
