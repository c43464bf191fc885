"""Argument helpers shared by the functions of ``nn.functional``: integers or
tuples to tuples (``_single``, ``_pair``, ``_triple``), batching and the shapes
of error messages.
"""

from __future__ import annotations

from glasstorch.tensor import Tensor


def _dims_error(input: Tensor, low: int, high: int, name: str) -> RuntimeError:
    return RuntimeError(
        f"Expected {low} to {high} dimensions, but got {input.dim()}-dimensional tensor for "
        f"argument #1 'self' (while checking arguments for {name})"
    )


def _triple(value, name: str) -> tuple[int, int, int]:
    """An int or a triple of ints as a triple: ``2`` -> ``(2, 2, 2)``."""
    if isinstance(value, int):
        return (value, value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0],) * 3
    if len(value) != 3:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of three ints")
    return value


def _ints(value, n: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    return tuple(int(v) for v in value)


def _pair(value, name: str = "argument") -> tuple[int, int]:
    """An int or a pair of ints as a pair: ``3`` -> ``(3, 3)``."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) != 2:
        raise ValueError(f"expected {name} to be a single int or a pair of ints, got {value}")
    return (int(value[0]), int(value[1]))


def _single(value) -> int:
    """An int or a one-element sequence as an int."""
    if isinstance(value, int):
        return value
    (value,) = tuple(value)
    return int(value)


def _float_input(input: Tensor, name: str) -> None:
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{input.dtype.legacy_name[:-6]}'")


def _size_list(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _batched(input: Tensor, dims: int, name: str) -> tuple[Tensor, bool]:
    """``input`` with a batch dimension, and whether one was added (unbatched input)."""
    if input.dim() == dims + 1:
        return input.unsqueeze(0), True
    if input.dim() == dims + 2:
        return input, False
    raise RuntimeError(
        f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, "
        f"but got input of size: {_size_list(input.shape)}"
    )


def _conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """The length of a convolution's (or unfold's) output along one dimension."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
