"""Helpers shared by the operations: operands, casting, broadcasting, allocation.

None of these record autograd history; they are the plumbing between a
Function's ``forward`` and a kernel call.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._kernels import Strided
from glasstorch._shape import broadcast_shapes, expand_strides
from glasstorch._tier import kernels
from glasstorch.tensor import Tensor, empty_tensor, wrap_scalar


def is_number(value) -> bool:
    """Whether ``value`` is a Python (or NumPy) scalar number."""
    import numpy as np

    return isinstance(value, (int, float, bool, np.number, np.bool_)) and not isinstance(
        value, Tensor
    )


def check_tensor_or_number(value, what: str = "other") -> None:
    """Reject operands that are neither tensors nor numbers with a TypeError."""
    if not isinstance(value, Tensor) and not is_number(value):
        raise TypeError(
            f"unsupported operand: expected a Tensor or a number for {what}, "
            f"got {type(value).__name__}"
        )


def as_operand(value, dtype) -> Tensor:
    """A tensor of ``dtype`` for a tensor or a scalar operand (cast if needed)."""
    if isinstance(value, Tensor):
        return cast(value, dtype)
    return wrap_scalar(value, dtype)


def cast(tensor: Tensor, dtype) -> Tensor:
    """``tensor`` converted to ``dtype`` by the copy kernel (itself if already so)."""
    if tensor.dtype is dtype:
        return tensor
    out = empty_tensor(tensor._shape, dtype)
    kernels.copy(out._strided(), tensor._strided())
    return out


def strided_as(tensor: Tensor, shape) -> Strided:
    """Kernel view of ``tensor`` broadcast to ``shape`` (stride 0 where it repeats)."""
    if tensor._shape == tuple(shape):
        return tensor._strided()  # nothing to broadcast
    strides = expand_strides(tensor._shape, tensor._stride, shape)
    return Strided(tensor._storage.buffer, tuple(shape), strides, tensor.storage_offset())


def shape_of(value) -> tuple[int, ...]:
    """The shape of a tensor operand; a scalar has shape ``()``."""
    return value._shape if isinstance(value, Tensor) else ()


def broadcast(*values) -> tuple[int, ...]:
    """The broadcast shape of several operands."""
    if len(values) == 2 and isinstance(values[0], Tensor) and isinstance(values[1], Tensor):
        if values[0]._shape == values[1]._shape:
            return values[0]._shape  # the common case: nothing to broadcast
    return broadcast_shapes(*(shape_of(v) for v in values))


def contiguous_copy(tensor: Tensor) -> Tensor:
    """A fresh contiguous copy of ``tensor``'s values."""
    out = empty_tensor(tensor._shape, tensor.dtype)
    kernels.copy(out._strided(), tensor._strided())
    return out


def contiguous_raw(tensor: Tensor) -> Tensor:
    """``tensor`` itself if contiguous, else a contiguous copy (no autograd)."""
    return tensor if tensor.is_contiguous() else contiguous_copy(tensor)


def default_float() -> _dtype.dtype:
    """The default floating dtype (float32 unless changed)."""
    return _dtype.get_default_dtype()
