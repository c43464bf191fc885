"""Matrix and layout helpers real programs use: tril/triu, diagonal/diag/trace,
outer, repeat/tile, roll, cumprod, log2/log10.

Most are compositions of differentiable operations that already exist (masks,
``expand`` + ``reshape``, ``cat`` of two slices), so their gradients come from
those operations' derivatives. ``diagonal`` is a view with a Function of its
own, and ``log2``/``log10`` are Functions, so each keeps PyTorch's node name.
"""

from __future__ import annotations

import builtins
import math

from glasstorch import _dtype
from glasstorch._shape import normalize_dim
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.ops import pointwise
from glasstorch.ops.core import cast, default_float
from glasstorch.ops.creation import arange
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor, empty_tensor

# ------------------------------------------------------------------ tril, triu


def _triangle_mask(input: Tensor, diagonal: int, lower: bool, name: str) -> Tensor:
    """True where ``tril`` (lower) or ``triu`` keeps an element of the last two dims."""
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    rows, cols = input.shape[-2], input.shape[-1]
    # Element (i, j) sits on diagonal j - i.
    offset = arange(cols).unsqueeze(0) - arange(rows).unsqueeze(1)
    return offset <= diagonal if lower else offset >= diagonal


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: elements on or below ``diagonal`` (else 0).

    ``diagonal=0`` is the main diagonal, positive values lie above it.
    """
    return pointwise.masked_fill(input, ~_triangle_mask(input, diagonal, True, "tril"), 0)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims: elements on or above ``diagonal`` (else 0)."""
    return pointwise.masked_fill(input, ~_triangle_mask(input, diagonal, False, "triu"), 0)


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


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return Diagonal.apply(input, 0, 0, 1).sum()


# ----------------------------------------------------------------------- outer


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product ``out[i, j] = input[i] * vec2[j]`` of two vectors."""
    for name, value in (("self", input), ("vec2", vec2)):
        if value.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {value.dim()}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


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


# -------------------------------------------------------------------- cumprod


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running product along ``dim``.

    One multiplication per step along ``dim``, each a differentiable ``mul``,
    stacked at the end: the gradient is exact even where the input has zeros
    (the node is ``StackBackward0``, where PyTorch has ``CumprodBackward0``).
    Integers and bools accumulate in int64, as PyTorch's.
    """
    from glasstorch.ops.reduction import check_running_dtype

    dim = normalize_dim(dim, input.dim())
    if dtype is None and not input.dtype.is_floating_point:
        dtype = _dtype.int64
    check_running_dtype(input, dtype or input.dtype, "cumprod")
    if dtype is not None:
        input = input.to(dtype)
    if input.dim() == 0:
        return input.clone()
    if input.shape[dim] == 0:
        return input.clone()
    running, steps = None, []
    for part in input.unbind(dim):
        running = part if running is None else running * part
        steps.append(running)
    return stack(steps, dim)


# ------------------------------------------------------------------ log2, log10


def _log_base_function(name: str, base: float):
    """A Function for ``log(x) / log(base)``, computed in float64 and rounded once."""
    scale = math.log(base)

    def forward(ctx, a):
        out_dtype = a.dtype if a.dtype.is_floating_point else default_float()
        wide = pointwise.compute_unary("log", a, _dtype.float64)
        out = cast(pointwise.compute_binary("div", wide, scale), out_dtype)
        ctx.save_for_backward(a)
        return out

    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / (a * scale)

    return type(
        name,
        (Function,),
        {
            "backward_name": f"{name}Backward0",
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "__doc__": f"``log(x) / log({base:g})`` with its derivative.",
        },
    )


Log2 = _log_base_function("Log2", 2.0)
Log10 = _log_base_function("Log10", 10.0)


def log2(input: Tensor) -> Tensor:
    """Base-2 logarithm, elementwise (computed in float64, then rounded to the result dtype)."""
    return Log2.apply(input)


def log10(input: Tensor) -> Tensor:
    """Base-10 logarithm, elementwise (computed in float64, then rounded to the result dtype)."""
    return Log10.apply(input)
