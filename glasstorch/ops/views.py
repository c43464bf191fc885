"""Views and joins: new shapes and strides over the same storage, and cat/stack.

A view copies nothing: ``transpose`` swaps two strides, ``expand`` sets strides
to 0, ``select`` moves the offset and drops a dimension. The output shares the
input's storage and version counter (``out._base`` is the tensor that owns the
storage). Each view's backward maps the gradient back through the same geometry.
"""

from __future__ import annotations

import functools
import operator

from glasstorch import _dtype, _tier
from glasstorch._shape import (
    check_ndim,
    check_shape,
    check_view_geometry,
    expand_strides,
    infer_size,
    normalize_dim,
    normalize_dims,
    numel,
    view_strides,
)
from glasstorch.autograd.function import Function, records_nothing
from glasstorch.ops.core import cast
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------------ helpers


def _shape_arg(shape) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` alike."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    try:
        return tuple(map(operator.index, shape))
    except TypeError:  # name the first size that is not an int, as PyTorch does
        return tuple(_integer(s, i) for i, s in enumerate(shape))


def _integer(value, position: int) -> int:
    """``value`` as an int; a float or None is a TypeError (as in PyTorch), never truncated."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"expected a tuple of ints, but found element of type {type(value).__name__} at "
            f"pos {position}"
        ) from None


class _Embed(Function):
    """Place ``grad`` into zeros of ``shape`` at the view ``geometry`` picks.

    The backward of every view that drops elements (select, slice, narrow) is
    this Function; its own backward is the view again, so double backward works.
    """

    backward_name = "EmbedBackward0"

    @staticmethod
    def forward(ctx, grad, shape, geometry):
        ctx.geometry = geometry
        out = empty_tensor(shape, grad.dtype, device=grad.device)
        kernels.fill(out._strided(), grad.dtype.to_python(0))
        target = geometry(out)
        kernels.copy(target._strided(), grad._strided())
        return out

    @staticmethod
    def backward(ctx, grad):
        return ctx.geometry(grad), None, None


#: :func:`~glasstorch._shape.view_strides`, remembered. Optimization: a model
#: reshapes the same few layouts every step (a transformer splits each
#: activation into heads and merges them back), and a lookup is far cheaper
#: than the walk over the dimensions; the arguments are the tensors' own shape
#: and stride tuples.
_remembered_view_strides = functools.lru_cache(maxsize=4096)(view_strides)


def _raw_view(tensor: Tensor, shape, stride, offset=None) -> Tensor:
    return tensor._view(shape, stride, offset)


# ----------------------------------------------------------- view Functions


class View(Function):
    backward_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._shape
        strides = _remembered_view_strides(a._shape, a._stride, shape)
        if strides is None:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            )
        return _raw_view(a, shape, strides)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.input_shape), None


class UnsafeView(View):
    """The view step of a ``reshape`` that had to copy first."""

    backward_name = "UnsafeViewBackward0"


def view(input: Tensor, *shape) -> Tensor:
    """The same elements with a new shape, without copying (one dim may be -1).

    Raises RuntimeError when the strides make that impossible; use :func:`reshape`.
    """
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("view(dtype) is not part of the supported subset")
    shape = infer_size(_shape_arg(shape), input.numel())
    return View.apply(input, shape)


def reshape(input: Tensor, *shape) -> Tensor:
    """A view when the strides allow it, otherwise a copy with the new shape."""
    shape = infer_size(_shape_arg(shape), input.numel())
    if _remembered_view_strides(input._shape, input._stride, shape) is not None:
        return View.apply(input, shape)
    return UnsafeView.apply(ContiguousClone.apply(input), shape)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``."""
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.shape)``."""
    return reshape(input, other.shape)


class Permute(Function):
    backward_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, a, dims):
        # -- solution: strides/permute
        ctx.dims = dims
        shape = tuple(a.shape[d] for d in dims)
        strides = tuple(a.stride()[d] for d in dims)
        return _raw_view(a, shape, strides)
        # -- end solution

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/views
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse), None
        # -- end solution


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder the dimensions: ``dims[i]`` is the input dim that becomes dim ``i``."""
    dims = _shape_arg(dims)
    if len(dims) != input.dim():
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.dim()} is "
            f"not equal to len(dims) = {len(dims)}"
        )
    normalized = tuple(normalize_dim(d, input.dim()) for d in dims)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, normalized)


class Transpose(Function):
    backward_name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        # -- solution: strides/permute
        ctx.dims = (dim0, dim1)
        shape, strides = list(a.shape), list(a.stride())
        if dim0 == dim1:
            return _raw_view(a, shape, strides)
        shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
        strides[dim0], strides[dim1] = strides[dim1], strides[dim0]
        return _raw_view(a, shape, strides)
        # -- end solution

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/views
        return grad.transpose(*ctx.dims), None, None
        # -- end solution


class T(Transpose):
    backward_name = "TBackward0"

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/views
        return grad.t(), None, None
        # -- end solution


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    ndim = input.dim()
    return Transpose.apply(input, normalize_dim(dim0, ndim), normalize_dim(dim1, ndim))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """Transpose a matrix; 0-d and 1-d tensors are returned as they are (as views)."""
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    if input.dim() < 2:
        return T.apply(input, 0, 0)
    return T.apply(input, 0, 1)


def mT(input: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """Transpose the last two dimensions."""
    if input.dim() < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
        )
    return transpose(input, -2, -1)


class Expand(Function):
    backward_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a.shape
        return _raw_view(a, shape, expand_strides(a.shape, a.stride(), shape))

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/views
        return grad.sum_to_size(ctx.input_shape), None
        # -- end solution


def expand(input: Tensor, *sizes) -> Tensor:
    """Repeat size-1 dimensions (and add leading ones) without copying: stride 0."""
    sizes = _shape_arg(sizes)
    if len(sizes) < input.dim():
        raise RuntimeError(
            f"expand({input.type()}{{{list(input.shape)}}}, size={list(sizes)}): the number of "
            f"sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions "
            f"in the tensor ({input.dim()})"
        )
    lead = len(sizes) - input.dim()
    target = []
    for i, size in enumerate(sizes):
        if i < lead:
            if size == -1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({size}) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            target.append(size)
            continue
        own = input.shape[i - lead]
        if size == -1:
            size = own
        if own != size and own != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({size}) must match the existing size ({own}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(input.shape)}"
            )
        target.append(size)
    if min(target, default=0) < 0:  # PyTorch's wording for a negative size here
        raise RuntimeError("numel: integer multiplication overflow")
    check_shape(target)  # a stride-0 view may claim more elements than an int64 counts
    return Expand.apply(input, tuple(target))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``."""
    return expand(input, other.shape)


def broadcast_to(input: Tensor, shape) -> Tensor:
    """``input.expand(shape)``."""
    return expand(input, tuple(shape))


class Squeeze(Function):
    backward_name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, a, dims):
        ctx.input_shape = a.shape
        keep = [d for d in range(a.dim()) if not (d in dims and a.shape[d] == 1)]
        return _raw_view(a, [a.shape[d] for d in keep], [a.stride()[d] for d in keep])

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.input_shape), None


class SqueezeDim(Squeeze):
    backward_name = "SqueezeBackward1"


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove dimensions of size 1 (all of them, or those in ``dim``)."""
    if dim is None:
        return Squeeze.apply(input, tuple(range(input.dim())))
    return SqueezeDim.apply(input, normalize_dims(dim, input.dim()))


class Alias(Function):
    """``x[...]`` and ``x[()]``: a new tensor object viewing exactly the same elements."""

    backward_name = "AliasBackward0"

    @staticmethod
    def forward(ctx, a):
        return _raw_view(a, a.shape, a.stride())

    @staticmethod
    def backward(ctx, grad):
        return grad


def alias(input: Tensor) -> Tensor:
    """A view of all of ``input`` with the same shape and strides."""
    return Alias.apply(input)


class Unsqueeze(Function):
    backward_name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        shape, strides = list(a.shape), list(a.stride())
        # Any stride works for a size-1 dim; PyTorch uses size * stride of the next dim.
        new_stride = shape[dim] * strides[dim] if dim < a.dim() else 1
        shape.insert(dim, 1)
        strides.insert(dim, new_stride)
        check_ndim(len(shape))
        return _raw_view(a, shape, strides)

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim``."""
    return Unsqueeze.apply(input, normalize_dim(dim, input.dim() + 1))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim`` to ``end_dim`` into one (a view when possible)."""
    if input.dim() == 0:
        normalize_dim(start_dim, 0), normalize_dim(end_dim, 0)  # only 0 and -1 name its dim
        return reshape(input, (1,))
    start, end = normalize_dim(start_dim, input.dim()), normalize_dim(end_dim, input.dim())
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input.shape
    merged = 1
    for size in shape[start : end + 1]:
        merged *= size
    return reshape(input, tuple(shape[:start]) + (merged,) + tuple(shape[end + 1 :]))


def ravel(input: Tensor) -> Tensor:
    """Flatten to 1-D."""
    return flatten(input)


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (one entry may be -1)."""
    dim = normalize_dim(dim, input.dim())
    if input.dim() == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    sizes = tuple(int(s) for s in sizes)
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    if -1 not in sizes and known != input.shape[dim]:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({input.shape[dim]}) in the input tensor"
        )
    sizes = infer_size(sizes, input.shape[dim])
    return view(input, tuple(input.shape[:dim]) + sizes + tuple(input.shape[dim + 1 :]))


class Select(Function):
    backward_name = "SelectBackward0"

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.input_shape, ctx.dim, ctx.index = a.shape, dim, index
        return _selected(a, dim, index)

    @staticmethod
    def backward(ctx, grad):
        dim, index = ctx.dim, ctx.index
        return _Embed.apply(grad, ctx.input_shape, lambda z: z.select(dim, index)), None, None


def _selected(a: Tensor, dim: int, index: int) -> Tensor:
    """The view of ``a`` at ``index`` (in range, not negative) along ``dim``, no autograd."""
    shape, stride = a._shape, a._stride
    return a._view(
        shape[:dim] + shape[dim + 1 :],
        stride[:dim] + stride[dim + 1 :],
        a._offset + index * stride[dim],
    )


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, with that dimension removed."""
    if not input._shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = normalize_dim(dim, len(input._shape))
    size = input._shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {dim}"
        )
    if records_nothing(input):
        # Shortcut: no graph (and no profiler span) to record, so Select.apply
        # would only call forward.
        return _selected(input, dim, index % size)
    return Select.apply(input, dim, index % size)


class Slice(Function):
    backward_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, a, dim, start, stop, step):
        ctx.input_shape, ctx.args = a.shape, (dim, start, stop, step)
        length = max(0, (stop - start + step - 1) // step)
        shape, strides = list(a.shape), list(a.stride())
        shape[dim] = length
        strides[dim] = strides[dim] * step
        return _raw_view(a, shape, strides, a.storage_offset() + start * a.stride()[dim])

    @staticmethod
    def backward(ctx, grad):
        args = ctx.args
        return (
            _Embed.apply(grad, ctx.input_shape, lambda z: Slice.apply(z, *args)),
            None,
            None,
            None,
            None,
        )


def slice_dim(input: Tensor, dim: int, start=None, stop=None, step=None) -> Tensor:
    """``input[..., start:stop:step, ...]`` along ``dim`` (Python slice rules)."""
    dim = normalize_dim(dim, input.dim())
    step = 1 if step is None else int(step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start, stop, _ = slice(start, stop, step).indices(input.shape[dim])
    stop = max(stop, start)
    if start == 0 and stop == input.shape[dim] and step == 1:
        return input
    return Slice.apply(input, dim, start, stop, step)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` elements along ``dim`` from ``start`` (a view)."""
    if input.dim() == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    dim = normalize_dim(dim, input.dim())
    size = input.shape[dim]
    if isinstance(start, Tensor):
        start = int(start.item())
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size  # start == size is allowed (with length 0) and must not wrap to 0
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return Slice.apply(input, dim, start, start + length, 1)


class Unbind(Function):
    backward_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        shape = a.shape[:dim] + a.shape[dim + 1 :]
        strides = a.stride()[:dim] + a.stride()[dim + 1 :]
        return tuple(
            _raw_view(a, shape, strides, a.storage_offset() + i * a.stride()[dim])
            for i in range(a.shape[dim])
        )

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim), None


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """All slices along ``dim``, as a tuple of views."""
    if input.dim() == 0:
        normalize_dim(dim, 0)  # an out-of-range dim is named first, as in PyTorch
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(input, normalize_dim(dim, input.dim()))


class Split(Function):
    backward_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, a, dim, sizes):
        ctx.dim = dim
        pieces, start = [], 0
        for size in sizes:
            shape, strides = list(a.shape), list(a.stride())
            shape[dim] = size
            pieces.append(
                _raw_view(a, shape, strides, a.storage_offset() + start * a.stride()[dim])
            )
            start += size
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.dim), None, None


class SplitWithSizes(Split):
    backward_name = "SplitWithSizesBackward0"


def split(input: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces along ``dim``: all of one size, or of the given sizes."""
    if input.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, int) and split_size_or_sections < 0:
        raise RuntimeError(
            f"split expects split_size be non-negative, but got split_size={split_size_or_sections}"
        )
    dim = normalize_dim(dim, input.dim())
    length = input.shape[dim]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and length > 0:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}"
            )
        count = max(1, -(-length // size)) if size > 0 else 1
        sizes = [min(size, length - i * size) for i in range(count)]
        return Split.apply(input, dim, sizes)
    sizes = [int(s) for s in split_size_or_sections]
    if sum(sizes) != length:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's size "
            f"at dimension {dim}), but got split_sizes={sizes}"
        )
    return SplitWithSizes.apply(input, dim, sizes)


def split_method(self: Tensor, split_size, dim: int = 0) -> tuple[Tensor, ...]:
    """``Tensor.split``: :func:`split`, whose first argument PyTorch names ``split_size`` here."""
    return split(self, split_size, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of equal size (the last may be smaller)."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    dim = normalize_dim(dim, input.dim())
    length = input.shape[dim]
    if length == 0:  # every chunk of an empty dimension is empty, as in PyTorch
        return Split.apply(input, dim, [0] * chunks)
    size = -(-length // chunks)
    return split(input, size, dim)


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """``input`` itself if contiguous, otherwise a contiguous copy."""
    if input.is_contiguous():
        return input
    return ContiguousClone.apply(input)


class ContiguousClone(Function):
    """The row-major copy ``contiguous()`` makes (PyTorch names it CloneBackward0)."""

    backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a):
        from glasstorch.ops.core import contiguous_copy

        return contiguous_copy(a)

    @staticmethod
    def backward(ctx, grad):
        return grad


# ------------------------------------------------------------- as_strided


class AsStrided(Function):
    """Any geometry over a *contiguous* input's elements (offset relative to it).

    The backward sends each output element's gradient to the input position it
    came from, adding where the view overlaps itself.
    """

    backward_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, a, shape, strides, offset):
        ctx.input_shape, ctx.geometry = a.shape, (shape, strides, offset)
        return _raw_view(a, shape, strides, a.storage_offset() + offset)

    @staticmethod
    def backward(ctx, grad):
        from glasstorch.ops.creation import zeros

        shape, strides, offset = ctx.geometry
        flat = zeros(numel(ctx.input_shape), dtype=grad.dtype, device=grad.device)
        positions = geometry_positions(shape, strides, offset, grad.device).reshape(-1)
        flat = flat.index_add(0, positions, grad.reshape(-1))
        return flat.view(ctx.input_shape), None, None, None


def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A view with any ``size``/``stride``/``storage_offset`` over ``input``'s storage.

    The geometry must stay inside the storage, with non-negative strides and
    offset (checked by :func:`glasstorch._shape.check_view_geometry`, with
    PyTorch's messages). For autograd the input must be contiguous (the
    geometry is read relative to it).
    """
    size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    check_view_geometry(size, stride, offset, input.dtype.itemsize, len(input._storage))
    if not input.requires_grad:
        return input._view(size, stride, offset)
    if not input.is_contiguous():
        raise RuntimeError("as_strided with autograd needs a contiguous input in glasstorch")
    return AsStrided.apply(input, size, stride, offset - input.storage_offset())


def _int_tuple(values, name: str) -> tuple[int, ...]:
    """A size or stride argument as a tuple of ints (PyTorch's TypeError otherwise)."""
    if isinstance(values, int):
        values = (values,)
    result = []
    for value in values:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(
                f"as_strided(): argument '{name}' must be tuple of ints, but found element of "
                f"type {type(value).__name__}"
            )
        result.append(int(value))
    return tuple(result)


# ------------------------------------------------------------- cat, stack


class Cat(Function):
    backward_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        # A legacy empty 1-D tensor is skipped, whatever ``dim`` is: no gradient slice.
        ctx.sizes = [0 if t.dim() <= 1 and t.numel() == 0 else t.shape[dim] for t in tensors]
        ctx.legacy_empty = [t.dim() == 1 and t.shape[0] == 0 for t in tensors]
        dtype = _dtype.result_type(*tensors) if tensors else _dtype.get_default_dtype()
        parts = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
        shape = list(parts[0].shape) if parts else [0]
        shape[dim] = sum(t.shape[dim] for t in parts)
        # On the first input's device: when only legacy empty tensors are joined no
        # copy runs to place it there.
        out = empty_tensor(shape, dtype, device=(parts or tensors)[0].device)
        start = 0
        for t in parts:
            target = out._view(
                tuple(shape[:dim]) + (t.shape[dim],) + tuple(shape[dim + 1 :]),
                out.stride(),
                start * out.stride()[dim],
            )
            kernels.copy(target._strided(), cast(t, dtype)._strided())
            start += t.shape[dim]
        return out

    @staticmethod
    def backward(ctx, grad):
        # Every input gets a gradient, an empty one included (PyTorch's is an empty
        # tensor, not None): its slice of ``grad``, or for a skipped legacy empty
        # tensor a new empty one.
        grads, start = [], 0
        for size, legacy_empty in zip(ctx.sizes, ctx.legacy_empty):
            if legacy_empty and grad.dim() != 1:
                grads.append(empty_tensor((0,), grad.dtype, device=grad.device))
            else:
                grads.append(grad.narrow(ctx.dim, start, size))
            start += size
        return (None, *grads)


def _check_cat_inputs(tensors, dim: int, name: str) -> int:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{name}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}"
        )
    if len(tensors) == 0:
        raise ValueError(f"{name}(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element in argument 0, but got {type(t).__name__}")
    if len({t.device for t in tensors}) > 1:  # the copies that join them could mix devices
        from glasstorch._dispatch import MIXED_DEVICES

        raise RuntimeError(MIXED_DEVICES)
    return dim


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension; all other sizes must match."""
    _check_cat_inputs(tensors, dim, "cat")
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # PyTorch still accepts (and skips) the legacy empty tensor of shape (0,) next to
    # tensors of any rank.
    parts = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    if not parts:
        return Cat.apply(0, *tensors)
    first = parts[0]
    dim = normalize_dim(dim, first.dim())
    for i, t in enumerate(parts):
        if t.dim() != first.dim():
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.dim()} and {t.dim()}"
            )
        for d in range(first.dim()):
            if d != dim and t.shape[d] != first.shape[d]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{first.shape[d]} but got size {t.shape[d]} for tensor number {i} in the list."
                )
    return Cat.apply(dim, *tensors)


concat = concatenate = cat


class Stack(Function):
    backward_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        expanded = [t.unsqueeze(dim) for t in tensors]
        return Cat.forward(ctx, dim, *expanded)

    @staticmethod
    def backward(ctx, grad):
        return (None, *grad.unbind(ctx.dim))


def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dimension ``dim``."""
    _check_cat_inputs(tensors, dim, "stack")
    first = tensors[0]
    dim = normalize_dim(dim, first.dim() + 1)  # a bad dim is named before unequal sizes
    for i, t in enumerate(tensors):
        if t.shape != first.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first.shape)} at "
                f"entry 0 and {list(t.shape)} at entry {i}"
            )
    return Stack.apply(dim, *tensors)


def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum broadcast dimensions away so the result has ``size`` (the reverse of expand)."""
    size = _shape_arg(size)
    if tuple(input.shape) == size:
        return input
    lead = input.dim() - len(size)
    dims = list(range(lead))
    dims += [lead + i for i, s in enumerate(size) if s == 1 and input.shape[lead + i] != 1]
    out = input.sum(dims, keepdim=True) if dims else input
    return out.view(size) if lead else out


def geometry_positions(shape, strides, offset: int, device=None) -> Tensor:
    """An int64 tensor of ``shape``: the buffer position of each element of a view.

    The same sum as the kernels' index math, offset + sum(index * stride), done
    with tensor arithmetic: one broadcast ``arange * stride`` per dimension.
    """
    from glasstorch.ops.creation import arange, full

    positions = full(tuple(shape), offset, dtype=_dtype.int64, device=device)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        along = [1] * len(shape)
        along[d] = size
        positions = positions + arange(size, device=device).reshape(along) * stride
    return positions
