"""Flatten parameters into one vector and back (for second-order methods, line searches)."""

from __future__ import annotations

from collections.abc import Iterable

from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and joined into one 1-D tensor, in order.

    Example::

        >>> vec = nn.utils.parameters_to_vector(nn.Linear(2, 3).parameters())
        >>> vec.shape
        torch.Size([9])
    """
    return cat([param.reshape(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into the parameters (the inverse).

    Each parameter's ``.data`` becomes a view of ``vec`` of its shape.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    position = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[position : position + count].view_as(param).data
        position += count
