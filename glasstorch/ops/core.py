"""Helpers shared by the operations: operands, casting, broadcasting, allocation.

None of these record autograd history; they are the plumbing between a
Function's ``forward`` and a kernel call.
"""

from __future__ import annotations

import numpy as np

from glasstorch import _dtype, _tier
from glasstorch._dispatch import MIXED_DEVICES
from glasstorch._kernels import Strided
from glasstorch._shape import broadcast_shapes, expand_strides
from glasstorch._tier import cuda_active
from glasstorch.tensor import CPU, Tensor, empty_tensor, wrap_scalar

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


#: Python's and NumPy's scalar number types (made once: NumPy's module attributes
#: are slow lookups, and this is asked of every operand of every operation).
_NUMBER_TYPES = (int, float, bool, np.number, np.bool_)


def is_number(value) -> bool:
    """Whether ``value`` is a Python (or NumPy) scalar number."""
    return isinstance(value, _NUMBER_TYPES) and not isinstance(value, Tensor)


def check_tensor_or_number(value, what: str = "other") -> None:
    """Reject operands that are neither tensors nor numbers with a TypeError."""
    if not isinstance(value, Tensor) and not is_number(value):
        raise TypeError(
            f"unsupported operand: expected a Tensor or a number for {what}, "
            f"got {type(value).__name__}"
        )


def common_device(*operands):
    """The device an elementwise operation on ``operands`` runs on, checked as PyTorch does.

    Every tensor operand must live on one device, with one exception that
    PyTorch's TensorIterator makes too: a CPU tensor *with no dimensions* (a
    0-d tensor, like a Python number) may join a computation on the GPU, so
    ``cuda_x * torch.tensor(2.0)`` works. A CPU tensor with dimensions does
    not, even with a single element (``cuda_x + torch.ones(1)`` is refused).
    Numbers and ``None`` are skipped. List an in-place operation's target among
    the operands: it must be on the common device too.

    Returns:
        the common device (the CPU when no operand is on the GPU).

    Raises:
        RuntimeError: PyTorch's "Expected all tensors to be on the same device".
    """
    if not cuda_active:
        return CPU  # one device only: nothing can disagree
    gpu = None
    cpu_with_dims = False
    for operand in operands:
        if not isinstance(operand, Tensor):
            continue
        place = operand.device
        if place.type == "cpu":
            cpu_with_dims = cpu_with_dims or bool(operand._shape)
        elif gpu is None:
            gpu = place
    if gpu is None:
        return CPU
    if cpu_with_dims:
        raise RuntimeError(MIXED_DEVICES)
    return gpu


def check_same_device(method: str, **tensors) -> None:
    """Refuse tensor arguments on different devices, for an operation that is not elementwise.

    Such an operation (matmul, take, embedding, ...) gets no CPU-scalar
    exception: every tensor argument (None is skipped) must be on the device of
    the first one. The error is the one PyTorch's generated operator wrappers
    raise, naming the argument that differs and the operation.

    Args:
        method: the operation, named as PyTorch's error names it (for example
            ``"wrapper_CUDA__take"``).
        tensors: the tensor arguments by their PyTorch names, in PyTorch's order.
    """
    if not cuda_active:
        return
    first = None
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        if first is None:
            first = tensor.device
        elif tensor.device != first:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but got {name} is on "
                f"{tensor.device}, different from other tensors on {first} (when checking "
                f"argument in method {method})"
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
    out = empty_tensor(tensor._shape, dtype, device=tensor.device)
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
    out = empty_tensor(tensor._shape, tensor.dtype, device=tensor.device)
    kernels.copy(out._strided(), tensor._strided())
    return out


def contiguous_raw(tensor: Tensor) -> Tensor:
    """``tensor`` itself if contiguous, else a contiguous copy (no autograd)."""
    return tensor if tensor.is_contiguous() else contiguous_copy(tensor)


def default_float() -> _dtype.dtype:
    """The default floating dtype (float32 unless changed)."""
    return _dtype.get_default_dtype()


def floating(x: Tensor) -> Tensor:
    """``x`` itself if floating, else converted to the default float dtype."""
    return x if x.dtype.is_floating_point else x.to(default_float())
