"""Indexing: ``x[...]`` reads and writes, gather/scatter, index_select/index_add,
index_fill, take_along_dim.

``x[key]`` is done in two steps. *Basic* indexing (ints, slices, ``None``,
``...``) only makes a view: new shape, strides and offset. *Advanced* indexing
(integer tensors or lists, boolean masks) picks arbitrary elements, so it must
copy: the frontend computes, for every output element, its position in a
contiguous copy of the input, and one ``index_select`` kernel call gathers them.
Writing (``x[key] = value``) is the same computation in reverse with
``index_put``.
"""

from __future__ import annotations

import builtins

from glasstorch import _dtype, _tier
from glasstorch._dispatch import MIXED_DEVICES
from glasstorch._shape import broadcast_shapes, contiguous_strides, normalize_dim, normalize_dims
from glasstorch.autograd.function import Function, records_nothing
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    cast,
    check_same_device,
    common_device,
    contiguous_copy,
    contiguous_raw,
    is_number,
)
from glasstorch.ops.creation import arange, ones, zeros
from glasstorch.ops.inplace import destination
from glasstorch.ops.views import _selected, alias, select
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------ index checks


#: PyTorch's error for an index tensor of another dtype than int32/int64, per op.
_INDEX_DTYPE_ERRORS = {
    "gather": "gather(): Expected dtype int32/int64 for index",
    "scatter": "scatter(): Expected dtype int32/int64 for index",
    "index_select": "index_select(): Expected dtype int32 or int64 for index",
    "index_add": "index_add_(): Expected dtype int32/int64 for index but got: {title}",
    "index_copy": "index_copy_(): Expected a long tensor for index, but got {title}",
}


def _check_index_tensor(index: Tensor, name: str) -> Tensor:
    """``index`` as int64: PyTorch takes int32 indices too (except in index_copy), and
    gather and scatter take an empty index of any dtype."""
    if index.dtype is _dtype.int64:
        return index
    if index.dtype is _dtype.int32 and name != "index_copy":
        return cast(index, _dtype.int64)
    if index.numel() == 0 and name in ("gather", "scatter"):
        return cast(index, _dtype.int64)
    raise RuntimeError(_INDEX_DTYPE_ERRORS[name].format(title=index.dtype.title))


def _out_of_bounds(bad: int | None, dim: int, size: int, error=RuntimeError, prefix="") -> None:
    """Raise for the index a kernel reported outside ``[0, size)`` (None: all in range).

    The kernels check every index themselves as they read it (see
    :mod:`glasstorch._kernels`), so gather, scatter, index_select and index_put
    need no check before the call and are safe whatever another thread
    writes into the index tensor meanwhile.
    """
    if bad is not None:
        raise error(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {size}")


def _check_bounds(
    index: Tensor, size: int, dim: int, error=IndexError, message=None, snapshot=True
) -> Tensor:
    """Make negative indices positive (advanced indexing, ``x[idx]``, allows them);
    raise ``error`` for any out of range.

    The result is what the index positions are computed from; the kernel that
    reads them checks them again against the storage. With ``snapshot`` it is
    a private copy: another thread may write the caller's index after the
    check, and the positions must come from the values that were checked.
    """
    if index.numel() == 0:
        return index
    if snapshot:
        index = contiguous_copy(index)
    low, high = int(index.min().item()), int(index.max().item())
    if low < -size or high >= size:
        bad = high if high >= size else low
        raise error(message or f"index {bad} is out of bounds for dimension {dim} with size {size}")
    if low < 0:
        from glasstorch.ops.pointwise import where

        index = where(index < 0, index + size, index)
    return index


# --------------------------------------------------- gather / scatter family


class Gather(Function):
    backward_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.input_shape, ctx.dim = a.shape, dim
        ctx.save_for_backward(index)
        out = empty_tensor(index.shape, a.dtype, device=a.device)
        bad = kernels.gather(out._strided(), a._strided(), dim, index._strided())
        _out_of_bounds(bad, dim, a.shape[dim] if a.dim() else 1)
        return out

    @staticmethod
    def backward(ctx, grad):
        from glasstorch.ops.creation import zeros

        (index,) = ctx.saved_tensors
        grad_a = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device).scatter_add(
            ctx.dim, index, grad
        )
        return grad_a, None, None


def _check_gather_shapes(a: Tensor, dim: int, index: Tensor, name: str, src=None) -> None:
    if index.dim() != a.dim() and not (index.dim() <= 1 and a.dim() <= 1):
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as {'self' if src is not None else 'input'} tensor"
        )
    for d in range(index.dim()):
        if d != dim and index.shape[d] > a.shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                f"smaller than self {list(a.shape)} apart from dimension {dim}"
            )
        if src is not None and index.shape[d] > src.shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                f"smaller than src {list(src.shape)}"
            )


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for any dim)."""
    dim = normalize_dim(dim, input.dim())  # a bad dim is named before the index dtype
    index = _check_index_tensor(index, "gather")
    _check_gather_shapes(input, dim, index, "gather")
    return Gather.apply(input, dim, index)  # the kernel checks the indices


def _in_range(index: Tensor, size: int) -> bool:
    """Whether every index lies in ``[0, size)``.

    An in-place write checks first, so that a bad index raises with the
    tensor untouched (PyTorch's kernels may have written part of it by then).
    """
    return index.numel() == 0 or (int(index.min()) >= 0 and int(index.max()) < size)


class Scatter(Function):
    """scatter (last write wins) and scatter_add, out of place."""

    backward_name = "ScatterBackward0"
    accumulate = False

    @classmethod
    def forward(cls, ctx, a, dim, index, src):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = destination(cls, ctx, a)
        if out is None or not _in_range(index, a.shape[dim] if a.dim() else 1):
            out = contiguous_copy(a)  # a bad index raises below, a untouched
        if isinstance(src, Tensor):
            source = cast(src, a.dtype)._strided()
            source = source._replace(shape=index.shape)
        else:
            filler = empty_tensor(index.shape, a.dtype, device=a.device)
            if filler.numel() > 0:  # no value is converted when none is written
                kernels.fill(filler._strided(), a.dtype.to_python(src))
            source = filler._strided()
        bad = kernels.scatter(out._strided(), dim, index._strided(), source, cls.accumulate)
        _out_of_bounds(bad, dim, a.shape[dim] if a.dim() else 1)
        return out

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        # Overwritten positions get no gradient; the source gets what its targets get.
        grad_a = grad.scatter(ctx.dim, index, 0.0) if ctx.needs_input_grad[0] else None
        grad_src = grad.gather(ctx.dim, index) if ctx.needs_input_grad[3] else None
        return grad_a, None, None, grad_src


class ScatterAdd(Scatter):
    backward_name = "ScatterAddBackward0"
    accumulate = True

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        grad_src = grad.gather(ctx.dim, index) if ctx.needs_input_grad[3] else None
        return grad, None, None, grad_src


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    """Out-of-place scatter: ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``.

    ``src`` may be a tensor or a number (``value``). ``reduce="add"`` adds instead.
    """
    return _scatter(input, dim, index, value if src is None else src, reduce, in_place=False)


def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None):
    """In-place version of :meth:`scatter`, written into ``input``."""
    if src is None:
        src = value
    if type(dim) is int:  # PyTorch checks the dim before the memory it is about to write
        normalize_dim(dim, input.dim())
    return inplace.write_inplace(
        input, lambda: _scatter(input, dim, index, src, reduce, in_place=True), None, (index, src)
    )


def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place version of :meth:`scatter_add`, written into ``input``."""
    return scatter_(input, dim, index, src, reduce="add")


def _scatter(input: Tensor, dim: int, index: Tensor, src, reduce, in_place: bool) -> Tensor:
    """``scatter``, or with ``in_place`` its Function's variant that writes into ``input``."""
    dim = normalize_dim(dim, input.dim())  # a bad dim is named before the index dtype
    index = _check_index_tensor(index, "scatter")
    _check_gather_shapes(input, dim, index, "scatter", src if isinstance(src, Tensor) else None)
    if not isinstance(src, Tensor) and index.numel() > 0:
        # PyTorch's overflow error (3e38 into int64), raised once a value is written
        _dtype.check_scalar_fits(src, input.dtype)
    if reduce == "add":
        function = ScatterAdd
    elif reduce is not None:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    else:
        function = Scatter
    return (inplace.variant_of(function) if in_place else function).apply(input, dim, index, src)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Out-of-place scatter that adds: ``out[index[i][j]][j] += src[i][j]``."""
    return scatter(input, dim, index, src, reduce="add")


class IndexSelect(Function):
    backward_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.input_shape, ctx.dim = a.shape, dim
        ctx.save_for_backward(index)
        shape = list(a.shape)
        shape[dim] = index.shape[0] if index.dim() else 1
        # On a's device: with nothing to select no kernel runs to place it there.
        out = empty_tensor(shape, a.dtype, device=a.device)
        if a.numel() == 0 and out.numel() == 0:
            # No element is read, but PyTorch still checks the indices of an empty input.
            bad = _first_outside(index.reshape(-1), a.shape[dim])
        else:
            flat = index.reshape(-1)._strided()
            bad = kernels.index_select(out._strided(), a._strided(), dim, flat)
        if bad is not None:
            _index_select_error(a, dim, bad)
        return out

    @staticmethod
    def backward(ctx, grad):
        from glasstorch.ops.creation import zeros

        (index,) = ctx.saved_tensors
        grad_a = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device).index_add(
            ctx.dim, index.reshape(-1), grad
        )
        return grad_a, None, None


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Slices along ``dim`` picked by a 1-D int64 (or int32) ``index``."""
    check_same_device("wrapper_CUDA__index_select", self=input, index=index)
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    normalized = normalize_dim(dim, input.dim())  # a bad dim is named before the index dtype
    index = _check_index_tensor(index, "index_select")
    if input.dim() == 0:
        if index.numel() != 1:
            raise RuntimeError(
                "index_select(): Index to scalar can have only 1 value, "
                f"got {index.numel()} value(s)"
            )
        return IndexSelect.apply(input.reshape(1), 0, index).reshape(())
    return IndexSelect.apply(input, normalized, index)  # the kernel checks the indices


def _first_outside(index: Tensor, size: int) -> int | None:
    """The first value of a 1-D ``index`` outside ``[0, size)`` (None: all inside)."""
    for value in index.tolist():
        if not 0 <= value < size:
            return value
    return None


def _index_select_error(a: Tensor, dim: int, bad: int) -> None:
    """PyTorch's error for an index_select index outside ``a``'s dimension ``dim``.

    PyTorch words it three ways, after the code path it takes (for an input of
    two or more dims): an empty input whose dimension ``dim`` is empty; an empty
    input otherwise, or any input along dim 1 (a RuntimeError naming the index);
    and the general case, inputs of one dim included (an IndexError).
    """
    size = a.shape[dim]
    if a.dim() > 1 and a.numel() == 0 and size == 0:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if a.dim() > 1 and (a.numel() == 0 or dim == 1):
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    raise IndexError("index out of range in self")


class IndexPut(Function):
    """``index_add``/``index_copy`` along one dim, out of place."""

    backward_name = "IndexAddBackward0"
    accumulate = True

    @classmethod
    def forward(cls, ctx, a, dim, index, src, alpha):
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_for_backward(index)
        out = destination(cls, ctx, a)
        if out is None or not _in_range(index, a.shape[dim]):
            out = contiguous_copy(a)  # a bad index raises below, a untouched
        source = cast(src, a.dtype)
        if alpha != 1:
            source = source * alpha
        bad = kernels.index_put(
            out._strided(), dim, index._strided(), source._strided(), cls.accumulate
        )
        if bad is not None:
            cls.out_of_bounds(a, dim, bad)
        return out

    @staticmethod
    def out_of_bounds(a: Tensor, dim: int, bad: int) -> None:
        """index_add's error, worded as PyTorch's (which depends on a's dimensions).

        As in PyTorch, an empty ``a`` of two or more dimensions has nothing to add
        to, and its indices are not checked. PyTorch words the error by the path it
        takes: along the first or last dim of a tensor of two or more dims, the
        RuntimeError naming the index; otherwise (one dim, or a middle dim), the
        IndexError "index out of range in self".
        """
        if a.dim() > 1 and a.numel() == 0:
            return
        if a.dim() <= 1 or 0 < dim < a.dim() - 1:
            raise IndexError("index out of range in self")
        _out_of_bounds(bad, dim, a.shape[dim])

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        grad_src = (
            grad.index_select(ctx.dim, index) * ctx.alpha if ctx.needs_input_grad[3] else None
        )
        return grad, None, None, grad_src, None


class IndexCopy(IndexPut):
    backward_name = "IndexCopyBackward0"
    accumulate = False

    @staticmethod
    def out_of_bounds(a: Tensor, dim: int, bad: int) -> None:
        """index_copy's error, worded as PyTorch's."""
        size = a.shape[dim] if a.dim() else 1
        _out_of_bounds(bad, dim, size, IndexError, prefix="index_copy_(): ")

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        from glasstorch.ops.creation import zeros

        shape = list(grad.shape)
        shape[ctx.dim] = index.shape[0]
        grad_a = grad.index_copy(ctx.dim, index, zeros(shape, dtype=grad.dtype, device=grad.device))
        grad_src = grad.index_select(ctx.dim, index) if ctx.needs_input_grad[3] else None
        return grad_a, None, None, grad_src, None


def _check_index_put(input: Tensor, dim: int, index: Tensor, source: Tensor, name: str) -> int:
    _check_index_tensor(index, name)  # the dtype only: the caller converts the index
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    dim = normalize_dim(dim, input.dim())
    expected = list(input.shape)
    expected[dim] = index.numel()
    if list(source.shape) != expected and not (source.dim() == 0 and index.numel() == 1):
        raise RuntimeError(
            f"{name}(): Source/destination tensor must have same slice shapes. Destination slice "
            f"shape: {expected} at dimension {dim} and source slice shape: {list(source.shape)}"
        )
    return dim


def _check_index_add(input: Tensor, dim: int, index: Tensor, source: Tensor) -> int:
    """index_add's argument checks, in PyTorch's order and words; returns the dim."""
    dim = normalize_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {index.dim()} with "
            f"type: {index.dtype.title} and size: {list(index.shape)}"
        )
    _check_index_tensor(index, "index_add")  # the dtype only: the caller converts the index
    if input.dtype is not source.dtype:
        raise RuntimeError(
            f"index_add_(): self ({input.dtype.title}) and source ({source.dtype.title}) must "
            "have the same scalar type"
        )
    if source.dim() > 0 and dim >= source.dim():
        raise RuntimeError(
            f"index_add_(): Indexing dim {dim} is out of bounds of the source tensor with dim "
            f"{source.dim()}"
        )
    if source.dim() == 0 and index.numel() != 1:
        # PyTorch's message asks a 0-d source for its size along dim, which fails.
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if source.dim() > 0 and index.numel() != source.shape[dim]:
        raise RuntimeError(
            f"index_add_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({source.shape[dim]}), for dim: {dim}"
        )
    self_sizes, source_sizes = list(input.shape), list(source.shape)
    if input.dim() > 0 and source.dim() > 0:
        del self_sizes[dim], source_sizes[dim]
    if self_sizes != source_sizes:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(input.shape)} source.shape = "
            f"{list(source.shape)}"
        )
    return dim


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """Out-of-place ``index_add_``: add ``alpha * source`` slices at ``index`` along ``dim``."""
    return _index_add(input, dim, index, source, alpha, IndexPut)


def _index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha, function):
    """``index_add`` by ``function``: IndexPut, or its variant that writes into ``input``."""
    dim = _check_index_add(input, dim, index, source)
    if input.dim() == 0:
        return _on_scalar(index_add, input, dim, index, source, alpha=alpha)
    # PyTorch words an int32 index's bounds error as its general path does.
    general_wording = index.dtype is _dtype.int32
    index = _check_index_tensor(index, "index_add").reshape(-1)  # the kernel checks the indices
    source = source.reshape(_slice_shape(input, dim, index))
    try:
        return function.apply(input, dim, index, source, alpha)
    except RuntimeError as error:
        if general_wording and "out of bounds" in str(error):
            raise IndexError("index out of range in self") from None
        raise


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Out-of-place ``index_copy_``: copy ``source`` slices to ``index`` along ``dim``."""
    return _index_copy(input, dim, index, source, IndexCopy)


def _index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor, function) -> Tensor:
    """``index_copy`` by ``function``: IndexCopy, or its variant that writes into ``input``."""
    if input.dim() == 0:
        return _on_scalar(index_copy, input, dim, index, source)
    dim = _check_index_put(input, dim, index, source, "index_copy")
    index = index.reshape(-1)  # the kernel checks the indices
    return function.apply(input, dim, index, source.reshape(_slice_shape(input, dim, index)), 1)


def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place version of :meth:`index_add`, written into ``input``."""
    return _index_inplace(_index_add, input, dim, index, source, alpha, IndexPut)


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place version of :meth:`index_copy`, written into ``input``."""
    return _index_inplace(_index_copy, input, dim, index, source, IndexCopy)


def _index_inplace(compute, input: Tensor, dim, index, source, *rest) -> Tensor:
    """``input.index_add_(...)``/``index_copy_(...)`` by the Function's in-place variant.

    A 0-d ``input`` (computed as a one-element 1-D tensor) takes the plain path
    of computing the result and copying it back.
    """
    function = rest[-1]
    if type(dim) is int:  # PyTorch checks the dim before the memory it is about to write
        normalize_dim(dim, input.dim())
    if input.dim() == 0:
        return inplace.apply_inplace(
            input, lambda: compute(input, dim, index, source, *rest), (index, source)
        )
    variant = inplace.variant_of(function)
    args = (*rest[:-1], variant)
    return inplace.write_inplace(
        input, lambda: compute(input, dim, index, source, *args), None, (index, source)
    )


def _on_scalar(function, input: Tensor, dim: int, index: Tensor, source: Tensor, **kwargs):
    """``index_add``/``index_copy`` of a 0-d tensor: as a 1-element 1-D one (PyTorch's rule)."""
    normalize_dim(dim, 0)
    # index_add wants a 0-d source; index_copy takes any one-element source.
    if source.dim() != 0 and (function is index_add or source.numel() != 1):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = [] source.shape = {list(source.shape)}"
        )
    flat = function(input.reshape(1), 0, index.reshape(-1), source.reshape(1), **kwargs)
    return flat.reshape(())


def _slice_shape(input: Tensor, dim: int, index: Tensor) -> tuple[int, ...]:
    shape = list(input.shape)
    shape[dim] = index.numel()
    return tuple(shape)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """Indices of nonzero elements: an ``(n, ndim)`` int64 tensor, or a tuple of columns."""
    count = int((input != 0).sum().item())
    out = empty_tensor((count, input.dim()), _dtype.int64, device=input.device)
    kernels.nonzero(out._strided(), input._strided())
    if as_tuple:
        if input.dim() == 0:
            return (out.reshape(-1),)
        return tuple(out.select(1, d) for d in range(input.dim()))
    return out


def argwhere(input: Tensor) -> Tensor:
    """Same as ``nonzero(input)``."""
    return nonzero(input)


def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    from glasstorch.ops.creation import arange

    # A repeated dim is an error, as in PyTorch, named as soon as it is met.
    dims = normalize_dims(dims, input.dim(), repeats_first=True)
    out = input
    for dim in dims if input.dim() > 0 else ():  # a 0-d tensor has nothing to reverse
        n = input.shape[dim]
        out = out.index_select(dim, arange(n - 1, -1, -1, device=out.device))
    return out if out is not input else input.clone()


# ----------------------------------------------------------- x[key] parsing


#: Integer dtypes whose 0-d tensors index like an int (uint8 ones are masks).
_INDEX_INTS = (_dtype.int64, _dtype.int32)


def _normalize_key(key) -> tuple:
    """Turn any subscript into a tuple of items (lists become int64/bool tensors)."""
    from glasstorch.ops.creation import tensor

    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for item in key:
        if isinstance(item, Tensor) and item._shape == () and item.dtype in _INDEX_INTS:
            # A 0-d integer tensor indexes like the int it holds: basic indexing, a view
            # (as in PyTorch), not a gather.
            items.append(item.item())
            continue
        if isinstance(item, range):
            item = list(item)  # a range indexes like the list of its values
        if isinstance(item, (list,)):
            item = tensor(item) if item else tensor(item, dtype=_dtype.int64)
            if item.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(item, bool):
            item = tensor(item)
        elif isinstance(item, Tensor) and item.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif not (
            item is None
            or item is Ellipsis
            or isinstance(item, (int, slice, Tensor))
            or hasattr(item, "__index__")
        ):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                "are valid indices (got " + type(item).__name__ + ")"
            )
        items.append(item)
    return tuple(items)


def _consumes(item) -> int:
    """How many input dimensions an index item uses up."""
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, Tensor) and item.dtype in (_dtype.bool_, _dtype.uint8):
        return max(item.dim(), 1) if item.dim() else 0
    return 1


def _is_integer_scalar_tensor(item) -> bool:
    """A 0-d int32/int64 tensor: PyTorch indexes with it as with a Python int."""
    return (
        isinstance(item, Tensor)
        and item.dim() == 0
        and not item.dtype.is_floating_point
        and item.dtype not in (_dtype.bool_, _dtype.uint8)
    )


def _apply_basic(x: Tensor, key: tuple) -> tuple[Tensor, list[tuple[int, Tensor]]]:
    """Apply the basic part of ``key`` as views; return the view and the advanced
    items as ``(dim in the view, index tensor)`` pairs (masks become int tensors)."""
    used = sum(_consumes(item) for item in key)
    if sum(1 for item in key if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    view, dim, advanced = x, 0, []
    source_dim = 0  # the dimension of x the item indexes, for error messages
    for item in key:
        source_dim = dim + (x.dim() - view.dim())
        if _is_integer_scalar_tensor(item):
            item = int(item.item())  # a 0-d integer tensor selects, like an int (as PyTorch)
        if item is Ellipsis:
            dim += x.dim() - used
        elif item is None:
            view = view.unsqueeze(dim)
            dim += 1
        elif isinstance(item, slice):
            view = view._slice(dim, item.start, item.stop, item.step)
            dim += 1
        elif isinstance(item, Tensor):
            if item.dtype in (_dtype.bool_, _dtype.uint8):
                if item.dim() == 0:  # x[True] adds a dim of size 1; x[False] of size 0
                    view = view.unsqueeze(dim)
                    item = item.reshape(1)
                for d in range(item.dim()):
                    if item.shape[d] != view.shape[dim + d]:
                        raise IndexError(
                            f"The shape of the mask {list(item.shape)} at index {d} does not "
                            f"match the shape of the indexed tensor {list(view.shape)} at index "
                            f"{dim + d}"
                        )
                for d, column in enumerate(nonzero(item, as_tuple=True)):
                    advanced.append((dim + d, column))
                dim += item.dim()
            else:
                advanced.append((dim, item.long() if item.dtype is not _dtype.int64 else item))
                dim += 1
        else:  # an int
            index = int(item)
            size = view.shape[dim]
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for dimension {source_dim} with size {size}"
                )
            view = view.select(dim, index)
    return view, advanced


def _advanced_plan(view: Tensor, advanced) -> tuple[tuple[int, ...], Tensor]:
    """The result shape of advanced indexing and each result element's position
    in a contiguous copy of ``view``.

    The index tensors broadcast to one shape ``B``. If the indexed dims are next
    to each other, ``B`` replaces them in place; otherwise ``B`` goes first (the
    NumPy and PyTorch rule).
    """
    from glasstorch.ops.creation import arange

    dims = [d for d, _ in advanced]
    try:
        b_shape = broadcast_shapes(*(tuple(index.shape) for _, index in advanced))
    except RuntimeError:
        shapes = ", ".join(str(list(index.shape)) for _, index in advanced)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes [{shapes}]"
        ) from None
    strides = contiguous_strides(view.shape)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    rest = [d for d in range(view.dim()) if d not in dims]
    before = [d for d in rest if d < dims[0]] if adjacent else []
    after = [d for d in rest if d not in before]
    out_shape = (
        tuple(view.shape[d] for d in before) + tuple(b_shape) + tuple(view.shape[d] for d in after)
    )
    ndim_out = len(out_shape)
    b_start = len(before)

    # Sum index * stride over the advanced dims (each broadcast into B's place)...
    positions = None
    for d, index in advanced:
        # A lone index into the outermost dim needs no private copy: a value
        # written into it after the check lands outside the whole view, which
        # the kernel's own check catches. Anywhere else it could land on
        # another element, so the positions come from a checked copy.
        index = index.to(view.device)  # a CPU index may address a CUDA tensor, as in PyTorch
        index = _check_bounds(index, view.shape[d], d, snapshot=d != 0 or len(advanced) > 1)
        lead = [1] * (len(b_shape) - index.dim())
        shaped = index.reshape(
            [1] * b_start + lead + list(index.shape) + [1] * (ndim_out - b_start - len(b_shape))
        )
        term = shaped * strides[d]
        positions = term if positions is None else positions + term
    # ... plus arange * stride over every other dim, in its place in the output.
    places = [(i, d) for i, d in enumerate(before)]
    places += [(b_start + len(b_shape) + i, d) for i, d in enumerate(after)]
    for out_dim, d in places:
        along = [1] * ndim_out
        along[out_dim] = view.shape[d]
        positions = (
            positions + arange(view.shape[d], device=view.device).reshape(along) * strides[d]
        )
    return out_shape, positions.expand(out_shape)


class Index(Function):
    """Advanced indexing read: ``out = flat(view)[positions]``."""

    backward_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, view, positions, out_shape):
        ctx.input_shape = view.shape
        ctx.save_for_backward(positions)
        flat = contiguous_raw(view).reshape(-1)
        out = empty_tensor((positions.numel(),), view.dtype, device=view.device)
        flat_positions = contiguous_raw(positions).reshape(-1)
        bad = kernels.index_select(out._strided(), flat._strided(), 0, flat_positions._strided())
        _out_of_bounds(bad, 0, flat.numel(), IndexError)  # only if the index changed meanwhile
        return out.reshape(out_shape)

    @staticmethod
    def backward(ctx, grad):
        from glasstorch.ops.creation import zeros

        (positions,) = ctx.saved_tensors
        numel = 1
        for s in ctx.input_shape:
            numel *= s
        flat = zeros((numel,), dtype=grad.dtype, device=grad.device)
        flat = flat.index_add(0, positions.reshape(-1), grad.reshape(-1))
        return flat.reshape(ctx.input_shape), None, None


def _single_integer(key):
    """The int of a key that is one integer (``x[3]``, ``x[ix]`` with a 0-d int
    tensor ``ix``), else None.

    A speed trick, "the commonest key first": such a key is ``select(0, i)``,
    so ``getitem`` and ``setitem`` take it straight there without parsing.
    """
    if type(key) is int:
        return key
    if type(key) is Tensor and key._shape == () and key.dtype in _INDEX_INTS:
        return key.item()
    return None


def _check_index_devices(x: Tensor, advanced) -> None:
    """PyTorch's rule for ``x[idx]``: each index on the CPU or on ``x``'s own device.

    A CPU index may address a CUDA tensor (it is copied over), but a CUDA
    index may not address a CPU tensor.
    """
    for _, index in advanced:
        place = index.device
        if place.type != "cpu" and place != x.device:
            raise IndexError(
                "indices should be either on cpu or on the same device as the indexed "
                f"tensor ({x.device})"
            )


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``: a view for basic keys, a gathered copy for advanced ones."""
    if not x._shape and isinstance(key, int):
        raise IndexError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
        )
    index = _single_integer(key) if x._shape else None
    if index is not None and -x._shape[0] <= index < x._shape[0]:
        if records_nothing(x):
            # select's own shortcut, taken here: dim 0 and the index are known
            # good, so its checks would find nothing.
            return _selected(x, 0, index % x._shape[0])
        return select(x, 0, index)
    view, advanced = _apply_basic(x, _normalize_key(key))
    if not advanced:
        return view if view is not x else alias(x)
    _check_index_devices(x, advanced)
    out_shape, positions = _advanced_plan(view, advanced)
    return Index.apply(view, positions, out_shape)


class IndexPutAdvanced(Function):
    """Advanced indexing write, out of place: ``flat(view)[positions] (+)= values``."""

    backward_name = "IndexPutBackward0"

    @classmethod
    def forward(cls, ctx, view, values, positions, accumulate):
        ctx.save_for_backward(positions)
        ctx.accumulate = accumulate
        if values.device != view.device and values.dim() != 0:
            raise RuntimeError(MIXED_DEVICES)  # only a 0-d value moves (as PyTorch's index_put_)
        # The positions count in view's row-major order: written in place when that
        # is its memory order (write_into_view picks the variant only then).
        out = destination(cls, ctx, view)
        if out is None:
            out = contiguous_copy(view)
        values = values.to(view.device)  # a 0-d value may be written into another device's tensor
        values = cast(values, view.dtype).expand(positions.shape)
        flat_values = contiguous_raw(values).reshape(1, -1)
        bad = kernels.index_put(
            out.reshape(1, -1)._strided(),
            1,
            contiguous_raw(positions).reshape(-1)._strided(),
            flat_values._strided(),
            accumulate,
        )
        _out_of_bounds(bad, 0, out.numel(), IndexError)  # only if the index changed meanwhile
        return out

    @staticmethod
    def backward(ctx, grad):
        (positions,) = ctx.saved_tensors
        flat = grad.reshape(-1)
        grad_values = flat.index_select(0, positions.reshape(-1)).reshape(positions.shape)
        grad_view = grad
        if not ctx.accumulate:
            from glasstorch.ops.creation import zeros

            flat_positions = positions.reshape(-1)
            grad_view = flat.index_copy(
                0, flat_positions, zeros(flat_positions.shape, dtype=grad.dtype, device=grad.device)
            ).reshape(grad.shape)
        return grad_view, grad_values, None, None


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value``: write through a view, or scatter for advanced keys."""
    if _is_mask_fill(x, key, value):
        x.masked_fill_(key, value)  # as PyTorch: no positions of the mask's true elements
        return
    if not isinstance(value, Tensor) and not is_number(value):
        from glasstorch.ops.creation import tensor

        value = tensor(value, dtype=x.dtype)
    index = _single_integer(key) if x._shape else None
    if index is not None and -x._shape[0] <= index < x._shape[0]:
        view = x.select(0, index)  # the commonest key first (see _single_integer)
        _write_view(view, value)
        return
    view, advanced = _apply_basic(x, _normalize_key(key))
    if not advanced:
        _write_view(view, value)
        return
    out_shape, positions = _advanced_plan(view, advanced)
    values = value if isinstance(value, Tensor) else _full_like_scalar(value, view.dtype)
    try:
        broadcast_shapes(tuple(values.shape), out_shape)
    except RuntimeError:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
            f"indexing result of shape {list(out_shape)}"
        ) from None
    _put_into(view, values, positions, False)


def _put_into(view: Tensor, values, positions: Tensor, accumulate: bool) -> None:
    """``flat(view)[positions] (+)= values``, written into ``view`` when it is
    contiguous (the positions count in its row-major order); otherwise
    computed into a contiguous copy and copied back."""
    if view.is_contiguous():
        variant = inplace.variant_of(IndexPutAdvanced)
        inplace.write_inplace(
            view, lambda: variant.apply(view, values, positions, accumulate), None, (values,)
        )
    else:
        inplace.assign_inplace(
            view, lambda: IndexPutAdvanced.apply(view, values, positions, accumulate), (values,)
        )


def _is_mask_fill(x: Tensor, key, value) -> bool:
    """Whether ``x[key] = value`` is ``x.masked_fill_(key, value)``: a bool mask of
    x's shape on x's device, a number, and no autograd history to record
    (which would be an IndexPutBackward0 node, as in PyTorch)."""
    return (
        isinstance(key, Tensor)
        and key.dtype is _dtype.bool_
        and key._shape == x._shape
        and key.device == x.device
        and is_number(value)
        and not isinstance(value, bool | complex)
        and not (is_grad_enabled() and x.requires_grad)
    )


def _write_view(view: Tensor, value) -> None:
    """``view.copy_(value)`` for a tensor, ``view.fill_(value)`` for a number."""
    if not isinstance(value, Tensor):
        view.fill_(value)
    elif _is_write_back(view, value):
        view._bump_version()  # what the copy would have done; the values are already there
    else:
        view.copy_(value)


def _is_write_back(view: Tensor, value: Tensor) -> bool:
    """Whether ``x[key] = value`` only writes ``x[key]``'s own elements back onto themselves.

    A speed trick, "augmented assignment write-back": Python runs ``x[i] += v``
    as ``t = x[i]; t += v; x[i] = t``. The in-place add has already written
    the new values into ``x``, so the final assignment copies every element
    onto itself. Without autograd history to record, that copy changes
    nothing but the version counter, and is skipped.
    """
    return (
        value._storage is view._storage
        and value._offset == view._offset
        and value._shape == view._shape
        and value.stride() == view.stride()
        and not (is_grad_enabled() and (value.requires_grad or view.requires_grad))
    )


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate``)."""
    view, advanced = _apply_basic(input, _normalize_key(tuple(indices)))
    out_shape, positions = _advanced_plan(view, advanced)
    return IndexPutAdvanced.apply(view, values, positions, accumulate)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place version of :meth:`index_put`, written into ``input`` (or the view of
    it that its basic indices pick)."""
    if not isinstance(indices, tuple | list):
        return inplace.apply_inplace(
            input, lambda: index_put(input, indices, values, accumulate), (values,)
        )
    view, advanced = _apply_basic(input, _normalize_key(tuple(indices)))
    out_shape, positions = _advanced_plan(view, advanced)
    _put_into(view, values, positions, accumulate)
    return input


def _full_like_scalar(value, dtype) -> Tensor:
    from glasstorch._dtype import check_scalar_fits
    from glasstorch.tensor import wrap_scalar

    check_scalar_fits(value, dtype)
    return wrap_scalar(value, dtype)


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (the result has index's shape).

    The index must be int64; a negative one counts from the end, as in PyTorch.
    """
    check_same_device("wrapper_CUDA__take", self=input, index=index)
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.title}")
    flat = input.reshape(-1)
    size = flat.numel()
    if index.numel() and size == 0:
        raise IndexError("take(): tried to take from an empty tensor")
    if index.numel():
        # Two reductions over the index rather than a Python loop over its values.
        outside = (index < -size) | (index >= size)
        if outside.any().item():
            value = index[outside].reshape(-1)[0].item()  # the first bad one, in order
            raise IndexError(
                f"out of range: tried to access index {value} on a tensor of {size} elements."
            )
    return flat[index]


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` is true, as a 1-D tensor."""
    check_same_device("wrapper_CUDA__masked_select", self=input, mask=mask)
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    return input.expand(shape)[mask.expand(shape)]


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    if index.dtype is not _dtype.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    common_device(input, index.reshape(-1))  # PyTorch broadcasts the index over input's dims
    dim = normalize_dim(dim, builtins.max(input.dim(), 1))
    length = input.shape[dim] if input.dim() else 1
    hit = zeros((length,), dtype=_dtype.bool_, device=input.device)
    hit = hit.index_put((index.reshape(-1),), ones((), dtype=_dtype.bool_, device=input.device))
    shape = [1] * input.dim()
    if input.dim():
        shape[dim] = length
    return input.masked_fill(hit.reshape(shape), value)


class IndexFill(Function):
    """``x.index_fill_(dim, index, value)``: each slice at ``index`` filled by the fill
    kernel, straight into x; its gradient is the incoming one with those slices zero."""

    backward_name = "IndexFillBackward0"
    in_place = True

    @classmethod
    def forward(cls, ctx, a, dim, positions, index, value):
        ctx.dim, ctx.index = dim, index
        out = inplace.destination(cls, ctx, a)
        value = out.dtype.to_python(value)
        for position in positions:
            kernels.fill(_index_slice(out, dim, position)._strided(), value)
        return out

    @staticmethod
    def backward(ctx, grad):
        return index_fill(grad, ctx.dim, ctx.index, 0), None, None, None, None


def _index_slice(input: Tensor, dim: int, position: int) -> Tensor:
    """``input.select(dim, position)`` as a bare view (no autograd); a 0-d input itself."""
    if input.dim() == 0:
        return input
    shape, strides = list(input._shape), list(input._stride)
    offset = input._offset + position * strides.pop(dim)
    shape.pop(dim)
    return Tensor._make(input._storage, tuple(shape), tuple(strides), offset, input.dtype)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place :func:`index_fill`: the fill kernel on each slice, nothing the size of ``input``.

    A value that is a tensor requiring grad takes the plain path (computing
    :func:`index_fill` and copying it back), which gives it its gradient.
    """
    normalize_dim(dim, builtins.max(input.dim(), 1))
    if isinstance(value, Tensor) and (value.requires_grad or value.dim() != 0):
        return inplace.apply_inplace(input, lambda: index_fill(input, dim, index, value), (index,))
    if index.dtype is not _dtype.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    common_device(input, index.reshape(-1))
    dim = normalize_dim(dim, builtins.max(input.dim(), 1))
    size = input.shape[dim] if input.dim() else 1
    positions = []
    for position in index.reshape(-1).tolist():
        if not -size <= position < size:
            raise IndexError(
                f"index {position} is out of bounds for dimension {dim} with size {size}"
            )
        positions.append(position % size)
    number = value.item() if isinstance(value, Tensor) else value
    _dtype.check_scalar_fits(number, input.dtype)  # PyTorch's overflow error (3e38 into int64)
    function = IndexFill
    return inplace.write_inplace(
        input, lambda: function.apply(input, dim, positions, index, number), None, (index,)
    )


def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Set the main diagonal (``input[i, i, ...]``) to ``fill_value``, in place.

    With ``wrap``, a tall matrix's diagonal starts again every ``cols + 1`` rows,
    as in NumPy.
    """
    if input.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.dim() > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    inplace.check_inplace(input)  # before a view of it is made (a leaf's own message)
    rows, cols = input.shape[0], input.shape[1]
    strides = input.stride()
    if input.dim() == 2 and (not wrap or rows <= cols):
        # The diagonal is one strided view: fill_ writes it, and a view of a
        # tensor with history gets CopySlices, as in PyTorch.
        length = builtins.min(rows, cols)
        view = input.as_strided((length,), (strides[0] + strides[1],), input.storage_offset())
        view.fill_(fill_value)
        return input
    if input.dim() > 2:
        view = input.as_strided((rows,), (builtins.sum(strides),), input.storage_offset())
        view.fill_(fill_value)
        return input
    if input.dim() == 2:
        step = cols + 1
        limit = input.numel() if wrap else builtins.min(rows, cols) * cols
    else:
        n = input.shape[0]
        step = sum(n**k for k in range(input.dim()))
        limit = input.numel()
    flat = arange(input.numel(), device=input.device).reshape(input.shape)
    mask = ((flat % step) == 0) & (flat < limit)
    return input.masked_fill_(mask, fill_value)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``input`` gathered at ``indices`` along ``dim`` (the other dimensions broadcast).

    Without ``dim`` both are flattened. The partner of ``argsort``/``argmax`` with
    ``keepdim=True``: ``take_along_dim(x, x.argmax(1, keepdim=True), 1)``.
    """
    from glasstorch._shape import broadcast_shapes

    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    dim = dim % input.dim()
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[dim] = shape_ix[dim] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_ix)))
    input = input.expand(common[:dim] + [input.shape[dim]] + common[dim + 1 :])
    indices = indices.expand(common[:dim] + [indices.shape[dim]] + common[dim + 1 :])
    return input.gather(dim, indices)
