"""Shape and stride arithmetic: pure functions on tuples, no data touched.

Broadcasting, the strides of a fresh tensor, when a view is possible, and how
dimensions are counted from the end are all decided here, before any kernel runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides: the last dimension has stride 1, each earlier one the
    product of the sizes after it. ``(2, 3, 4)`` gives ``(12, 4, 1)``."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


@functools.lru_cache(maxsize=4096)
def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """:func:`contiguous_strides` of a tuple, remembered: a program allocates
    the same few shapes over and over, and a cache lookup is four times
    cheaper than the loop."""
    return contiguous_strides(shape)


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a shape: the product of its sizes (1 for a 0-d shape).

    ``math.prod`` is that loop in C (every new tensor asks for its size).
    """
    return math.prod(shape)


@functools.lru_cache(maxsize=4096)
def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether a view of ``shape`` and ``strides`` is row-major with no gaps
    (the strides :func:`contiguous_strides` gives). Dimensions of size 1 may
    have any stride, and a view without elements is contiguous, as in PyTorch.

    Remembered, as :func:`row_major_strides` is: ``Tensor.is_contiguous`` runs
    before most kernel calls, on the same few layouts, and a cache lookup is
    several times cheaper than the loop."""
    if 0 in shape:
        return True  # no elements: nothing is out of place
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


# ------------------------------------------------- limits every tensor obeys
#
# A shape, strides and offset are plain Python ints, which never overflow. The
# kernels below the contract compute with 64-bit integers (C's int64_t on the
# fast tier), so every tensor a user can make is held to what 64 bits can
# describe, and every view to the storage it reads. These checks run where a
# geometry enters the frontend (creation, view, reshape, expand, as_strided,
# loading), never in the per-element loops.

#: The most dimensions a tensor may have, on every tier (PyTorch's limit).
MAX_DIMS = 64

#: The largest value an int64 holds: no element count, position or byte count
#: may exceed it.
INT64_MAX = 2**63 - 1


def check_ndim(ndim: int) -> None:
    """Refuse more than :data:`MAX_DIMS` dimensions, with PyTorch's message."""
    if ndim > MAX_DIMS:
        raise RuntimeError(f"only tensors with up to {MAX_DIMS} dims are supported")


def check_shape(shape: Sequence[int]) -> int:
    """Check a shape a new tensor or view will have; return its element count.

    Every size must be non-negative, there may be at most :data:`MAX_DIMS`
    of them, and their product must fit in an int64 (PyTorch's
    ``numel: integer multiplication overflow``). A size of 0 anywhere makes
    the count 0, however large the others are, as in PyTorch.
    """
    check_sizes(shape)
    count = numel(shape)
    if count > INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    return count


def check_sizes(shape: Sequence[int]) -> None:
    """Refuse negative sizes and more than :data:`MAX_DIMS` of them."""
    for size in shape:
        if size < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {size}: {list(shape)}"
            )
    check_ndim(len(shape))


def check_storage_bytes(shape: Sequence[int], itemsize: int) -> int:
    """Check that a fresh tensor of ``shape`` fits in an int64 count of bytes; return its numel.

    Checks what :func:`check_shape` checks, but words an overflow as
    PyTorch's allocator does.
    """
    check_sizes(shape)
    count = numel(shape)
    if count * itemsize > INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return count


def storage_extent(shape: Sequence[int], strides: Sequence[int], offset: int) -> int:
    """How many storage elements a view needs: one past its last element.

    ``offset + 1 + sum((size - 1) * stride)``, or 0 for a view without elements
    (it reads nothing, wherever it points). Strides must not be negative.
    """
    if 0 in shape:
        return 0
    return offset + 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def check_view_geometry(
    shape: Sequence[int],
    strides: Sequence[int],
    offset: int,
    itemsize: int,
    storage_numel: int,
    name: str = "as_strided",
) -> None:
    """Check that a view stays inside its storage, as PyTorch's ``setStorage`` does.

    The one check for any geometry that does not come from an already valid
    view by a rule known to stay inside it (``as_strided``, a loaded
    checkpoint): sizes non-negative and at most :data:`MAX_DIMS`, strides
    non-negative, the offset non-negative, every count and byte position
    within an int64, and the last element (``offset + sum((size - 1) *
    stride)``) inside the ``storage_numel`` elements of the storage.

    Args:
        shape, strides, offset: the view's geometry, in elements.
        itemsize: bytes per element.
        storage_numel: the storage's length, in elements.
        name: the operation, for the messages.

    Raises:
        RuntimeError: with PyTorch's wording, naming what is wrong.
    """
    shape, strides = [int(s) for s in shape], [int(s) for s in strides]
    if len(shape) != len(strides):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(strides)} strides for "
            f"{len(shape)} sizes"
        )
    check_shape(shape)
    if any(stride < 0 for stride in strides):
        raise RuntimeError(
            f"{name}: Negative strides are not supported at the moment, got strides: {strides}"
        )
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = storage_extent(shape, strides, offset) * itemsize
    if needed > INT64_MAX:
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={shape} and strides={strides}"
        )
    available = storage_numel * itemsize
    if needed > available:
        raise RuntimeError(
            f"setStorage: sizes {shape}, strides {strides}, storage offset {offset}, and "
            f"itemsize {itemsize} requiring a storage size of {needed} are out of bounds for "
            f"storage of size {available}"
        )


def normalize_dim(dim: int, ndim: int) -> int:
    """Turn a possibly negative dim into ``0 .. ndim-1`` (a 0-d tensor accepts 0 and -1)."""
    if not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    low, high = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not low <= dim <= high:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})"
        )
    return dim % ndim if ndim > 0 else 0


def normalize_dims(dims, ndim: int, *, repeats_first: bool = False) -> tuple[int, ...]:
    """Normalize an int, a sequence of ints or None (meaning all dims).

    A dim out of range and a repeated dim are both errors. By default every dim
    is checked for range first; with ``repeats_first`` each dim is checked in
    turn against those before it, so a repeat before a bad dim is named first
    (the order some PyTorch ops, such as ``flip``, check in).
    """
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    if repeats_first:
        seen: list[int] = []
        for d in dims:
            d = normalize_dim(d, ndim)
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.append(d)
        return tuple(seen)
    result = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(result)) != len(result):
        repeated = next(d for d in result if result.count(d) > 1)
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return result


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape all ``shapes`` broadcast to (``torch.broadcast_shapes``).

    Shapes are aligned at their last dimension; each result size is the one
    size that is not 1 (or 1). Two different sizes, neither 1, are an error.
    """
    # -- solution: strides/broadcast
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape):
            dim = ndim - len(shape) + i
            if size == result[dim] or size == 1:
                continue
            if result[dim] == 1:
                result[dim] = size
                continue
            raise RuntimeError(
                f"The size of tensor a ({result[dim]}) must match the size of tensor b "
                f"({size}) at non-singleton dimension {dim}"
            )
    return tuple(result)
    # -- end solution


def dense_strides(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Strides for a copy that keeps the layout of a dense tensor (PyTorch's
    ``preserve_format``): a transposed matrix stays transposed. A tensor with
    gaps or overlaps gets row-major strides instead."""
    if numel(shape) == 0:
        return contiguous_strides(shape)
    order = sorted(range(len(shape)), key=lambda d: (strides[d], -d))
    expected = 1
    for d in order:
        if shape[d] == 1:
            continue
        if strides[d] != expected:
            return contiguous_strides(shape)
        expected *= shape[d]
    return tuple(strides)


def is_expandable_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to exactly ``target``."""
    if len(shape) > len(target):
        return False
    for size, target_size in zip(reversed(shape), reversed(target)):
        if size != target_size and size != 1:
            return False
    return True


def expand_strides(
    shape: Sequence[int], strides: Sequence[int], target: Sequence[int]
) -> tuple[int, ...]:
    """Strides that make a ``shape``/``strides`` tensor look like ``target``.

    New leading dimensions and size-1 dimensions stretched to a larger size get
    stride 0: every index along them reads the same element.
    """
    # -- solution: strides/broadcast
    lead = len(target) - len(shape)
    result = [0] * lead
    for size, stride, target_size in zip(shape, strides, target[lead:]):
        result.append(stride if size == target_size else 0)
    return tuple(result)
    # -- end solution


def infer_size(shape: Sequence[int], count: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in a requested shape so that it holds ``count`` elements."""
    shape = tuple(map(int, shape))
    check_ndim(len(shape))
    inferred = shape.count(-1)
    if inferred > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, size in enumerate(shape):
        if size != -1:
            if size < 0:
                raise RuntimeError(
                    f"invalid shape dimension {size} at index {i} of shape {list(shape)}"
                )
            known *= size
    if inferred:
        if known == 0 or count % known != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {count}")
        where = shape.index(-1)
        return shape[:where] + (count // known,) + shape[where + 1 :]
    if known != count:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {count}")
    return shape


def view_strides(
    old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides that show the same elements in ``new_shape`` without copying, or None.

    A view is possible when each run of new dimensions covers a run of old
    dimensions that is contiguous *within itself* (each old dimension's stride is
    the next one's stride times its size). The old dimensions are walked in
    chunks; each chunk is split among the new dimensions that fill it.
    """
    # -- solution: strides/view
    if numel(old_shape) == 0 or len(old_shape) == 0:
        return contiguous_strides(new_shape)  # nothing to keep in place
    result = [0] * len(new_shape)
    new_dim = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel, view_numel = 1, 1
    for old_dim in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[old_dim]
        # A chunk ends at the first old dim, or where the old dims stop being contiguous.
        chunk_ends = old_dim == 0 or (
            old_shape[old_dim - 1] != 1
            and old_strides[old_dim - 1] != tensor_numel * chunk_base_stride
        )
        if chunk_ends:
            while new_dim >= 0 and (view_numel < tensor_numel or new_shape[new_dim] == 1):
                result[new_dim] = view_numel * chunk_base_stride
                view_numel *= new_shape[new_dim]
                new_dim -= 1
            if view_numel != tensor_numel:
                return None
            if old_dim > 0:
                chunk_base_stride = old_strides[old_dim - 1]
                tensor_numel, view_numel = 1, 1
    if new_dim != -1:
        return None
    return tuple(result)
    # -- end solution
