"""Elementwise copies: ``x.to(dtype)`` (a cast, whose gradient is cast back) and
``clone``.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch.autograd.function import Function
from glasstorch.ops.core import (
    cast,
)
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class ToCopy(Function):
    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, dtype):
        return cast(a, dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # the engine casts it back to the input's dtype


def to_dtype(input: Tensor, dtype) -> Tensor:
    """A copy of ``input`` converted to ``dtype`` (differentiable between floats)."""
    return ToCopy.apply(input, dtype)


class Clone(Function):
    backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a):
        from glasstorch._shape import dense_strides

        out = empty_tensor(a.shape, a.dtype, dense_strides(a.shape, a.stride()), device=a.device)
        kernels.copy(out._strided(), a._strided())
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own storage, recorded for autograd.

    A dense layout (say, a transposed matrix) keeps its strides; anything else
    becomes row-major.
    """
    return Clone.apply(input)
