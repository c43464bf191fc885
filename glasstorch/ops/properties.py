"""Questions about a tensor, as functions: ``torch.is_tensor``, ``is_floating_point``, ``numel``."""

from __future__ import annotations

from glasstorch.tensor import Tensor


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a glasstorch Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input`` has a floating-point dtype."""
    return input.dtype.is_floating_point


def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()
