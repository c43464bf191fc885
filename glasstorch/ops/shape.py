"""Shape operations beyond plain views and joins (those are in
:mod:`~glasstorch.ops.views`): movedim, unfold, hstack/vstack/dstack,
column_stack, tensor_split, flips and rot90, tril/triu, diagonal/diag,
diag_embed, repeat/tile, roll, repeat_interleave, meshgrid, cartesian_prod,
block_diag, tril_indices/triu_indices.

Most are compositions of differentiable operations that already exist (masks,
``expand`` + ``reshape``, ``cat`` of two slices), so their gradients come from
those operations' derivatives. ``diagonal`` and ``unfold`` are views with a
Function of their own.
"""

from __future__ import annotations

import builtins
import operator

from glasstorch import _dtype, _tier
from glasstorch._shape import normalize_dim
from glasstorch.autograd.function import Function
from glasstorch.ops import inplace
from glasstorch.ops.creation import arange, ones, tensor, zeros
from glasstorch.ops.indexing import flip
from glasstorch.ops.pointwise.selection import masked_fill
from glasstorch.ops.views import cat, permute, stack
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------------ tril, triu


def _triangle_mask(input: Tensor, diagonal: int, lower: bool, name: str) -> Tensor:
    """True where ``tril`` (lower) or ``triu`` keeps an element of the last two dims."""
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    rows, cols = input.shape[-2], input.shape[-1]
    # Element (i, j) sits on diagonal j - i.
    device = input.device  # the mask is made where the input lives
    offset = arange(cols, device=device).unsqueeze(0) - arange(rows, device=device).unsqueeze(1)
    return offset <= diagonal if lower else offset >= diagonal


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: elements on or below ``diagonal`` (else 0).

    ``diagonal=0`` is the main diagonal, positive values lie above it.
    """
    return masked_fill(input, ~_triangle_mask(input, diagonal, True, "tril"), 0)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims: elements on or above ``diagonal`` (else 0)."""
    return masked_fill(input, ~_triangle_mask(input, diagonal, False, "triu"), 0)


# ------------------------------------------------------- diagonal, diag, trace


def _diagonal_geometry(shape, strides, offset: int, dim1: int, dim2: int, start: int):
    """Shape, strides and storage offset of the diagonal view (the diagonal last)."""
    size1, size2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = builtins.max(0, builtins.min(size1, size2 - offset))
        first = offset * strides[dim2]
    else:
        length = builtins.max(0, builtins.min(size1 + offset, size2))
        first = -offset * strides[dim1]
    keep = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    new_shape = tuple(shape[d] for d in keep) + (length,)
    new_strides = tuple(strides[d] for d in keep) + (strides[dim1] + strides[dim2],)
    return new_shape, new_strides, start + (first if length else 0)


class Diagonal(Function):
    """The view of one diagonal of the ``(dim1, dim2)`` planes."""

    backward_name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, a, offset, dim1, dim2):
        ctx.geometry = (tuple(a.shape), offset, dim1, dim2)
        shape, strides, start = _diagonal_geometry(
            a.shape, a.stride(), offset, dim1, dim2, a.storage_offset()
        )
        return a._view(shape, strides, start)

    @staticmethod
    def backward(ctx, grad):
        return DiagonalScatter.apply(grad, *ctx.geometry), None, None, None


class DiagonalScatter(Function):
    """Diagonal's adjoint: zeros of the input's shape with ``grad`` on the diagonal."""

    backward_name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, grad, shape, offset, dim1, dim2):
        ctx.geometry = (offset, dim1, dim2)
        out = empty_tensor(shape, grad.dtype, device=grad.device)
        kernels.fill(out._strided(), grad.dtype.to_python(0))
        diagonal = out._view(*_diagonal_geometry(shape, out.stride(), offset, dim1, dim2, 0))
        kernels.copy(diagonal._strided(), grad._strided())
        return out

    @staticmethod
    def backward(ctx, grad):
        return Diagonal.apply(grad, *ctx.geometry), None, None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal ``offset`` of the ``(dim1, dim2)`` planes, as the last dim.

    ``offset > 0`` is above the main diagonal, ``offset < 0`` below.
    """
    d1, d2 = normalize_dim(dim1, input.dim()), normalize_dim(dim2, input.dim())
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with ``input`` on diagonal ``diagonal``.
    2-D input: that diagonal of the matrix, as a 1-D tensor (a copy, as in PyTorch).
    """
    if input.dim() == 2:
        return Diagonal.apply(input, int(diagonal), 0, 1).clone()
    if input.dim() != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    size = input.shape[0] + builtins.abs(int(diagonal))
    return DiagonalScatter.apply(input, (size, size), int(diagonal), 0, 1)


# ---------------------------------------------------------- repeat, tile, roll


def _sizes_arg(sizes) -> tuple[int, ...]:
    if len(sizes) == 1 and not isinstance(sizes[0], builtins.int):
        return tuple(builtins.int(s) for s in sizes[0])
    return tuple(builtins.int(s) for s in sizes)


def repeat(input: Tensor, *sizes) -> Tensor:
    """Repeat the whole tensor ``sizes[d]`` times along each dim (a copy).

    ``sizes`` may have more entries than ``input`` has dims: ``input`` is
    first viewed with leading dims of size 1. Built as ``expand`` over a new
    dim before each dim, then ``reshape``, so the gradient sums the copies.
    """
    sizes = _sizes_arg(sizes)
    if len(sizes) < input.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    shape = (1,) * (len(sizes) - input.dim()) + tuple(input.shape)
    interleaved, expanded = [], []  # (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...)
    for repeats, size in zip(sizes, shape):
        interleaved += [1, size]
        expanded += [repeats, size]
    final = tuple(r * s for r, s in zip(sizes, shape))
    return input.reshape(interleaved).expand(expanded).reshape(final)


def tile(input: Tensor, dims) -> Tensor:
    """``repeat`` with ``dims`` padded on the left with 1s to ``input``'s dims."""
    dims = _sizes_arg((dims,))
    dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements along ``dims`` by ``shifts``; those pushed off one end come back at the other.

    Without ``dims`` the tensor is rolled as if flattened.
    """
    shifts = (shifts,) if isinstance(shifts, builtins.int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(input.flatten(), shifts, 0).view(input.shape)
    dims = (dims,) if isinstance(dims, builtins.int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    out = input
    for shift, dim in zip(shifts, dims):
        dim = normalize_dim(dim, input.dim())
        size = input.shape[dim]
        shift = shift % size if size else 0
        if shift:
            # The last `shift` elements move to the front.
            out = cat([out.narrow(dim, size - shift, shift), out.narrow(dim, 0, size - shift)], dim)
    return out if out is not input else input.clone()


# ----------------------------------------------------- moving and splitting dims


def _dims_list(dims, ndim: int) -> list[int]:
    """An int or a sequence of dims, each made non-negative."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [normalize_dim(d, ndim) for d in dims]


def movedim(input: Tensor, source, destination) -> Tensor:
    """Move the dimension(s) ``source`` to position(s) ``destination`` (a view).

    The other dimensions keep their order. ``moveaxis`` is the same function.

    Args:
        input: any tensor.
        source: an int or a sequence of ints.
        destination: as many ints as ``source``.

    Example::

        >>> torch.movedim(torch.zeros(2, 3, 4), 0, -1).shape
        torch.Size([3, 4, 2])
    """
    ndim = input.dim()
    src = _dims_list(source, builtins.max(ndim, 1))
    dst = _dims_list(destination, builtins.max(ndim, 1))
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)"
        )
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if ndim == 0:
        return permute(input, ())
    order = [-1] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return permute(input, order)


moveaxis = movedim


class Unfold(Function):
    """All windows of ``size`` elements, ``step`` apart, along one dimension: a view.

    Dimension ``dim`` becomes the number of windows and a new last dimension
    of ``size`` walks along the window; both use ``dim``'s stride, the first
    multiplied by ``step``. The backward adds each window's gradient back to
    the elements it covered (windows may overlap).
    """

    backward_name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, a, dim, size, step):
        ctx.input_shape, ctx.args = a.shape, (dim, size, step)
        if a.dim() == 0:
            return a._view((size,), (1,), a.storage_offset())
        windows = (a.shape[dim] - size) // step + 1
        shape = list(a.shape)
        strides = list(a.stride())
        shape[dim], strides[dim] = windows, strides[dim] * step
        return a._view((*shape, size), (*strides, a.stride()[dim]), a.storage_offset())

    @staticmethod
    def backward(ctx, grad):
        dim, size, step = ctx.args
        if len(ctx.input_shape) == 0:
            return grad.sum().reshape(()), None, None, None
        windows = grad.shape[dim]
        # Put each window's elements next to its window index, then flatten both
        # into one dimension of positions ``i * step + j`` along ``dim``.
        spread = movedim(grad, -1, dim + 1).flatten(dim, dim + 1)
        first = arange(windows, device=grad.device).unsqueeze(1) * step
        positions = (first + arange(size, device=grad.device).unsqueeze(0)).reshape(-1)
        out = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device)
        return out.index_add(dim, positions, spread), None, None, None


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: every window of ``size`` elements, ``step`` apart, along ``dimension``.

    A view sharing ``input``'s storage: ``dimension`` becomes the window
    count ``(length - size) // step + 1`` and a new last dimension of
    ``size`` holds each window's elements.

    Example::

        >>> torch.arange(5.0).unfold(0, 2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    ndim = builtins.max(input.dim(), 1)
    dim = normalize_dim(dimension, ndim)
    length = input.shape[dim] if input.dim() else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {dim} is {length} but size is {size}"
        )
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold.apply(input, dim, size, step)


def _atleast(t: Tensor, ndim: int) -> Tensor:
    """NumPy's ``atleast_nd``: ``(n,)`` becomes ``(1, n)`` or ``(1, n, 1)``, ``(m, n)`` ``(m, n, 1)``."""
    if t.dim() >= ndim:
        return t
    if t.dim() == 0:
        return t.reshape((1,) * ndim)
    if t.dim() == 1:
        return t.unsqueeze(0) if ndim == 2 else t.reshape(1, -1, 1)
    return t.unsqueeze(-1)


def hstack(tensors) -> Tensor:
    """Join tensors column-wise: along dim 1, or dim 0 for 1-D tensors (0-D count as 1-D).

    Example::

        >>> torch.hstack([torch.tensor([1, 2]), torch.tensor([3])])
        tensor([1, 2, 3])
    """
    tensors = [_atleast(t, 1) for t in tensors]
    return cat(tensors, 0 if tensors and tensors[0].dim() == 1 else 1)


def vstack(tensors) -> Tensor:
    """Join tensors row-wise (along dim 0), 1-D tensors as rows of a matrix.

    Example::

        >>> torch.vstack([torch.tensor([1, 2]), torch.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    return cat([_atleast(t, 2) for t in tensors], 0)


def dstack(tensors) -> Tensor:
    """Join tensors depth-wise (along dim 2), after making each at least 3-D as NumPy does."""
    return cat([_atleast(t, 3) for t in tensors], 2)


def column_stack(tensors) -> Tensor:
    """Join tensors as columns: 0-D and 1-D tensors become columns ``(n, 1)``, then along dim 1."""
    columns = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors]
    return cat(columns, 1)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into views along ``dim``: into ``n`` near-equal parts, or before each index.

    With an int ``n`` the first ``length % n`` parts get one element more
    (unlike :func:`split`, ``n`` counts parts, not their size). With a list of
    indices ``[i, j]`` the parts are ``[:i]``, ``[i:j]``, ``[j:]``.

    Example::

        >>> [p.tolist() for p in torch.arange(5).tensor_split(2)]
        [[0, 1, 2], [3, 4]]
    """
    dim = normalize_dim(dim, input.dim())
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dtype is not _dtype.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{indices_or_sections.dtype.title}"
            )
        if indices_or_sections.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {indices_or_sections.dim()} dims"
            )
        if indices_or_sections.dim() == 0:
            indices_or_sections = int(indices_or_sections.item())
        else:
            indices_or_sections = [int(v) for v in indices_or_sections.tolist()]
    length = input.shape[dim]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size, extra = divmod(length, sections)
        bounds, start = [], 0
        for part in range(sections):
            start += size + (1 if part < extra else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [operator.index(i) for i in indices_or_sections]
    pieces, start = [], 0
    for stop in [*bounds, length]:
        lo = builtins.min(builtins.max(start if start >= 0 else start + length, 0), length)
        hi = builtins.min(builtins.max(stop if stop >= 0 else stop + length, 0), length)
        pieces.append(input.narrow(dim, lo, builtins.max(hi - lo, 0)))
        start = stop
    return tuple(pieces)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first toward the second.

    Example::

        >>> torch.rot90(torch.tensor([[1, 2], [3, 4]]))
        tensor([[2, 4],
                [1, 3]])
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (normalize_dim(d, input.dim()) for d in dims)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(input, [d0]).transpose(d0, d1)
    return input.clone()


def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (dim 1); a copy, as in PyTorch."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (dim 0); a copy, as in PyTorch."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def _triangle_indices(row: int, col: int, offset: int, lower: bool, dtype, device) -> Tensor:
    if dtype is None:
        dtype = _dtype.int64
    if dtype not in (_dtype.int64, _dtype.int32):
        name = "tril_indices" if lower else "triu_indices"
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype.title}'")
    r = arange(row, device=device).unsqueeze(1)
    c = arange(col, device=device).unsqueeze(0)
    inside = (c - r <= offset) if lower else (c - r >= offset)
    inside = inside.expand(row, col)
    return inside.nonzero().t().to(dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The coordinates of a ``row x col`` matrix's lower triangle, as a ``2 x N`` tensor.

    ``offset`` moves the diagonal up (positive) or down (negative). Rows
    come in order, and within a row the columns.
    """
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The coordinates of a ``row x col`` matrix's upper triangle (see :func:`tril_indices`)."""
    return _triangle_indices(row, col, offset, False, dtype, device)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Batched diagonal matrices: ``input``'s last dimension on the diagonal of dims ``dim1, dim2``.

    ``offset`` puts it above (positive) or below (negative) the main diagonal.
    The new matrices are ``n + |offset|`` square.
    """
    ndim = input.dim() + 1
    d1, d2 = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] if input.dim() else 1
    size = n + builtins.abs(offset)
    k = arange(n, device=input.device)
    rows, cols = (k, k + offset) if offset >= 0 else (k - offset, k)
    flat = zeros((*input.shape[:-1], size * size), dtype=input.dtype, device=input.device)
    flat = flat.index_copy(-1, rows * size + cols, input.reshape(*input.shape[:-1], n))
    square = flat.reshape(*input.shape[:-1], size, size)
    return movedim(square, (-2, -1), (d1, d2))


class Triangle(Function):
    """``x.tril_(diagonal)``: the elements above the diagonal set to 0 by the fill
    kernel, one row's run at a time, straight into x."""

    backward_name = "TrilBackward0"
    in_place = True
    lower = True

    @classmethod
    def forward(cls, ctx, a, diagonal):
        ctx.diagonal = diagonal
        out = inplace.destination(cls, ctx, a)
        *batch, rows, cols = out._shape
        *batch_strides, row_stride, col_stride = out._stride
        zero = out.dtype.to_python(0)
        for i in range(rows):
            # Row i keeps columns j <= i + diagonal (tril) or j >= i + diagonal (triu).
            first, last = (
                (builtins.max(0, i + diagonal + 1), cols)
                if cls.lower
                else (0, builtins.min(cols, i + diagonal))
            )
            if first < last:
                run = Tensor._make(
                    out._storage,
                    (*batch, last - first),
                    (*batch_strides, col_stride),
                    out._offset + i * row_stride + first * col_stride,
                    out.dtype,
                )
                kernels.fill(run._strided(), zero)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        return (grad.tril(ctx.diagonal) if cls.lower else grad.triu(ctx.diagonal)), None


class UpperTriangle(Triangle):
    """``x.triu_(diagonal)``: the elements below the diagonal set to 0."""

    backward_name = "TriuBackward0"
    lower = False


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``tril``."""
    if input.dim() < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return inplace.write_inplace(input, lambda: Triangle.apply(input, diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``triu``."""
    if input.dim() < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return inplace.write_inplace(input, lambda: UpperTriangle.apply(input, diagonal))


def meshgrid(*tensors, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``meshgrid(x, y, indexing="ij")``.

    With ``indexing="ij"`` output ``k`` varies along dimension ``k``; with
    ``"xy"`` the first two dimensions are swapped (NumPy's default). PyTorch's
    default is ``"ij"``, with a warning when ``indexing`` is not given.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        import warnings

        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    vectors = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(vectors) >= 2
    if swap:
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = tuple(v.shape[0] for v in vectors)
    grids = []
    for k, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[k] = shape[k]
        grids.append(v.reshape(view).expand(shape))
    if swap:  # the grids of (y, x, ...) in "ij" order, handed back as (x, y, ...)
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size=None):
    """Repeat each element (each slice along ``dim``) ``repeats`` times, in place in the order.

    ``repeats`` is an int or an int tensor of one count per element. Without
    ``dim`` the input is flattened first. Called with one int tensor,
    ``repeat_interleave(counts)`` gives ``i`` repeated ``counts[i]`` times.

    Nothing here is sized by a count in Python: an int count is an
    ``expand`` of a new dimension, then one copy; a tensor of counts becomes an
    index tensor built by kernels (:func:`_interleave_index`). So a count too
    large for memory fails at once, in the allocation of the result, with
    PyTorch's error.

    Example::

        >>> torch.repeat_interleave(torch.tensor([1, 2]), 2)
        tensor([1, 1, 2, 2])
    """
    if repeats is None:  # the one-argument form: the counts themselves
        counts = _check_counts(input)
        return _interleave_index(counts, _total(counts, output_size))
    if dim is None:
        input, dim = input.reshape(-1), 0
    elif input.dim() == 0:
        input = input.reshape(1)
    dim = dim % input.dim()
    if isinstance(repeats, (list, tuple)):
        repeats = tensor(repeats, dtype=_dtype.int64)
    if not isinstance(repeats, Tensor):
        return _repeat_each(input, int(repeats), dim, output_size)
    counts = _check_counts(repeats)
    size = input.shape[dim]
    if counts.numel() == 1:
        counts = counts.reshape(1).expand(size)
    elif counts.shape[0] != size:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{counts.shape[0]} and input.size({dim}) = {size}"
        )
    return input.index_select(dim, _interleave_index(counts, _total(counts, output_size)))


def _repeat_each(input: Tensor, count: int, dim: int, output_size) -> Tensor:
    """``repeat_interleave`` by one int: a new dimension after ``dim``, expanded, then merged.

    The expand is a view (stride 0), so the only memory is the result's own,
    allocated by one copy. As in PyTorch the result is always a new row-major
    tensor, even for a count of 1 (``contiguous`` alone would return the input).
    """
    if count < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(input.shape)
    _check_output_size(output_size, shape[dim] * count)
    expanded = input.unsqueeze(dim + 1).expand(*shape[: dim + 1], count, *shape[dim + 1 :])
    copied = expanded.clone().contiguous()  # contiguous: a permuted input copied by a count of 1
    return copied.reshape(*shape[:dim], shape[dim] * count, *shape[dim + 1 :])


def _check_counts(repeats: Tensor) -> Tensor:
    """A tensor of counts as a 1-D int64 tensor, checked as PyTorch checks it."""
    if repeats.dtype not in (_dtype.int64, _dtype.int32):
        raise NotImplementedError(
            f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype.title}'"
        )
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    return repeats.reshape(-1).long()


def _total(counts: Tensor, output_size) -> int:
    """The sum of ``counts`` (all checked non-negative), as an exact Python int."""
    if counts.numel() == 0:
        total = 0
    else:
        if (counts < 0).any().item():
            raise RuntimeError("repeats can not be negative")
        largest = counts.max().item()
        if largest * counts.numel() < 2**63:
            total = counts.sum().item()  # cannot overflow int64: the kernel's sum is exact
        else:
            total = sum(counts.tolist())  # one int per row: exact where int64 would wrap
    _check_output_size(output_size, total)
    return total


def _check_output_size(output_size, total: int) -> None:
    if output_size is not None and output_size != total:
        raise RuntimeError(
            f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}"
        )


def _interleave_index(counts: Tensor, total: int) -> Tensor:
    """``[0] * counts[0] + [1] * counts[1] + ...`` as an int64 tensor, built by kernels.

    Each row marks the position where its run starts (``cumsum(counts) -
    counts``); the running sum of the marks, less one, is then the row that
    owns each position. An empty row marks the same place as the next row, so
    the count passes it by. For counts ``[2, 0, 1]`` the runs start at
    ``[0, 2, 2]``, the marks are ``[1, 0, 2]`` and the index is ``[0, 0, 2]``.
    Runs that start at ``total`` (empty rows at the end) mark nothing.

    The first allocation is the result's own (``total`` int64 elements), so
    a total too large for memory fails there, with PyTorch's error, before
    any other work.
    """
    marks = zeros((total,), dtype=_dtype.int64, device=counts.device)
    starts = counts.cumsum(0) - counts
    starts = starts[starts < total]
    marks.index_add_(0, starts, ones(starts.shape, dtype=_dtype.int64, device=counts.device))
    return marks.cumsum(0).sub_(1)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-D tensor, one per row.

    Example::

        >>> torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (each 0-, 1- or 2-D) as blocks along the diagonal of a zero matrix.

    A 0-D tensor is a ``1 x 1`` block, a 1-D tensor of ``n`` a ``1 x n`` row.
    The result has the promoted dtype of all the tensors.

    Example::

        >>> torch.block_diag(torch.ones(2, 2), torch.tensor([5.0]))
        tensor([[1., 1., 0.],
                [1., 1., 0.],
                [0., 0., 5.]])
    """
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions"
            )
    if not tensors:
        return zeros((1, 0))
    dtype = _dtype.result_type(*tensors)
    device = tensors[0].device
    blocks = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for block in blocks:
        height, cols = block.shape
        pieces = [
            zeros((height, left), dtype=dtype, device=device),
            block.to(dtype),
            zeros((height, width - left - cols), dtype=dtype, device=device),
        ]
        rows.append(cat(pieces, 1))
        left += cols
    return cat(rows, 0)


def to_front(input: Tensor, dim: int) -> Tensor:
    """A view of ``input`` with dimension ``dim`` moved to the front."""
    order = [dim] + [d for d in range(input.dim()) if d != dim]
    return input.permute(*order)


def from_front(input: Tensor, dim: int) -> Tensor:
    """Undo :func:`to_front`: the front dimension goes back to position ``dim``."""
    order = list(range(1, dim + 1)) + [0] + list(range(dim + 1, input.dim()))
    return input.permute(*order)
