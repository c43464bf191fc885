"""Index math for strided storage, written once and shared by every reference kernel.

A tensor is a flat buffer plus a *shape*, *strides* and an *offset*. The element
with multi-dimensional index ``(i0, i1, ..., ik)`` lives at buffer position::

    offset + i0 * strides[0] + i1 * strides[1] + ... + ik * strides[k]

That one formula is all a view is: ``transpose`` swaps two strides, ``expand``
sets a stride to 0, slicing changes the offset and multiplies a stride. The
functions below turn it into loops. Kernels never call NumPy's math: NumPy is
only the buffer, read and written through a ``memoryview`` (which hands out
plain Python numbers, far faster than indexing the array element by element).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import numel  # shape arithmetic has one home, the frontend's _shape


def index_to_position(index: tuple[int, ...], strides: tuple[int, ...], offset: int) -> int:
    """Buffer position of the element at ``index``: offset + sum(index * strides)."""
    # -- solution: strides/walk
    position = offset
    for i, stride in zip(index, strides):
        position += i * stride
    return position
    # -- end solution


def row_major_indices(shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every index of ``shape`` in row-major order: the last dimension moves fastest.

    >>> list(row_major_indices((2, 2)))
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    # -- solution: strides/walk
    if numel(shape) == 0:
        return
    index = [0] * len(shape)
    while True:
        yield tuple(index)
        # Odometer step: bump the last digit, carry into the previous ones.
        dim = len(shape) - 1
        while dim >= 0:
            index[dim] += 1
            if index[dim] < shape[dim]:
                break
            index[dim] = 0
            dim -= 1
        if dim < 0:
            return
    # -- end solution


def positions(view: Strided) -> Iterator[int]:
    """Buffer positions of every element of ``view``, in row-major order.

    The same walk as :func:`row_major_indices`, but it keeps the position up to
    date as it goes (adding a stride when a digit goes up, taking
    ``size * stride`` back when it wraps) instead of recomputing the whole sum
    for each element. The innermost dimension is a plain arithmetic sequence.
    """
    # -- solution: strides/walk
    shape, strides = view.shape, view.strides
    if numel(shape) == 0:
        return
    if len(shape) == 0:
        yield view.offset
        return
    last = len(shape) - 1
    inner_size, inner_stride = shape[last], strides[last]
    index = [0] * len(shape)
    start = view.offset  # position of the first element of the current row
    while True:
        for i in range(inner_size):
            yield start + i * inner_stride
        dim = last - 1
        while dim >= 0:
            index[dim] += 1
            start += strides[dim]
            if index[dim] < shape[dim]:
                break
            start -= strides[dim] * shape[dim]
            index[dim] = 0
            dim -= 1
        if dim < 0:
            return
    # -- end solution


def drop_dim(view: Strided, dim: int) -> Strided:
    """The view with dimension ``dim`` removed (its index fixed at 0).

    Looping over ``drop_dim(view, dim)`` visits the start of every 1-D slice
    along ``dim``; adding ``k * view.strides[dim]`` then walks one slice.
    """
    return Strided(
        view.buffer,
        view.shape[:dim] + view.shape[dim + 1 :],
        view.strides[:dim] + view.strides[dim + 1 :],
        view.offset,
    )


def memory(view: Strided) -> memoryview:
    """The buffer as a memoryview: indexing it yields plain Python numbers."""
    return memoryview(view.buffer)


# --------------------------------------------------------------------- storing
# A memoryview only accepts values that fit its format: a float for 'f', an int
# in range for 'B'. These converters turn any Python number into what the dtype
# stores, with the same rules as a C cast in PyTorch.

_FLOAT32_OVERFLOW = 3.4028235677973366e38  # from here on, float32 rounds to inf


def _to_float32(value: float) -> float:
    value = float(value)
    if -_FLOAT32_OVERFLOW < value < _FLOAT32_OVERFLOW or value != value:
        return value
    return math.inf if value > 0 else -math.inf


def _wrapping_int(bits: int, signed: bool):
    """A converter to an integer of ``bits`` bits.

    An int keeps its low ``bits`` bits (it wraps around on overflow). A float is
    truncated toward zero as x86's conversion instruction does it: into int32
    or int64, a NaN, an infinity or a number outside the type's range becomes
    the type's most negative number (-2**31 or -2**63, the "integer
    indefinite"); uint8 goes through int64, as C compilers do, and then wraps.
    """
    span = 1 << bits
    low = -(1 << (bits - 1)) if signed else 0
    via = bits if signed else 64  # the width of the conversion instruction
    via_low, via_high = -(1 << (via - 1)), 1 << (via - 1)

    def convert(value) -> int:
        if isinstance(value, float):
            # Python compares a float with an int exactly; NaN fails every comparison.
            if via_low - 1 < value < via_high:
                value = int(value)  # truncates toward zero, like a C cast
            else:
                value = via_low  # NaN, an infinity or out of range
        return (value - low) % span + low

    return convert


_CONVERTERS = {
    "float32": _to_float32,
    "float64": float,
    "int64": _wrapping_int(64, signed=True),
    "int32": _wrapping_int(32, signed=True),
    "uint8": _wrapping_int(8, signed=False),
    "bool": bool,
}


# The same table keyed by NumPy dtype objects: a dict lookup instead of str(dtype),
# which is slow in NumPy and would run for every kernel call.
_CONVERTERS_BY_DTYPE = {np.dtype(name): convert for name, convert in _CONVERTERS.items()}


def converter(dtype) -> callable:
    """The function that turns a Python number into a storable value of ``dtype``."""
    return _CONVERTERS_BY_DTYPE[dtype]


def is_floating(dtype) -> bool:
    """Whether a NumPy dtype is a floating-point type."""
    return dtype.kind == "f"
