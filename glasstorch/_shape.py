"""Shape and stride arithmetic: pure functions on tuples, no data touched.

Broadcasting, the strides of a fresh tensor, when a view is possible, and how
dimensions are counted from the end are all decided here, before any kernel runs.
"""

from __future__ import annotations

import functools
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
    """Number of elements of a shape."""
    count = 1
    for size in shape:
        count *= size
    return count


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


def normalize_dims(dims, ndim: int) -> tuple[int, ...]:
    """Normalize an int, a sequence of ints or None (meaning all dims)."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
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
    lead = len(target) - len(shape)
    result = [0] * lead
    for size, stride, target_size in zip(shape, strides, target[lead:]):
        result.append(stride if size == target_size else 0)
    return tuple(result)


def infer_size(shape: Sequence[int], count: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in a requested shape so that it holds ``count`` elements."""
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for size in shape:
        if size != -1:
            if size < 0:
                raise RuntimeError(f"invalid shape dimension {size}")
            known *= size
    if -1 in shape:
        if known == 0 or count % known != 0:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {count}")
        return tuple(count // known if s == -1 else s for s in shape)
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
