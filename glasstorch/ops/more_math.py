"""More tensor functions that tutorial and course programs use: layout (``movedim``,
``hstack``, ``tensor_split``, ``rot90``, ``Tensor.unfold``, ...), elementwise math
(``atan2``, ``logaddexp``, ``fmod``, ``xlogy``, ...), running and order statistics
(``cummax``, ``median``, ``quantile``, ...) and small linear algebra (``kron``,
``cross``, ``addmv``, ``cov``, ...).

Each is a composition of operations glasstorch already has (views, ``where``,
``sort``, ``gather``, ``index_copy``, ``matmul``), so it runs on every tier and
device, and the differentiable ones get autograd from their parts. The only
Functions written here are the ``Tensor.unfold`` view (its geometry is new) and
``atan2``, whose arctangent is a rational approximation (glasstorch has no
``atan`` kernel) and whose derivative is written out so that it is exact, and
the in-place forms at the end (``fmod_``, ``lerp_``, ``tril_``, ...), which
write into their input and record PyTorch's nodes.
Where a composition costs more than PyTorch's dedicated kernel, the docstring
says so.

One visible difference follows from composing: a result's ``grad_fn`` is the
node of its last part (``WhereBackward0`` for ``logaddexp``, ``GatherBackward0``
for ``cummax``), where PyTorch names a node after the function
(``LogaddexpBackward0``). The gradients are the same.
"""

from __future__ import annotations

import builtins
import math
import operator
import warnings
from collections import namedtuple

from glasstorch import _dtype
from glasstorch._shape import broadcast_shapes, normalize_dim, normalize_dims
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.ops import inplace
from glasstorch.ops.core import common_device, default_float
from glasstorch.ops.creation import arange, ones, tensor, zeros
from glasstorch.ops.indexing import flip
from glasstorch.ops.pointwise import _check_both_tensors, float_result_dtype, isnan, where
from glasstorch.ops.reduction import _ValuesIndices
from glasstorch.ops.views import cat, permute
from glasstorch.tensor import Tensor

__all__ = [
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmv",
    "aminmax",
    "arctan2",
    "atan2",
    "column_stack",
    "copysign",
    "corrcoef",
    "cov",
    "cross",
    "cummax",
    "cummin",
    "deg2rad",
    "diag_embed",
    "dist",
    "dstack",
    "fliplr",
    "flipud",
    "fmod",
    "frac",
    "heaviside",
    "hstack",
    "hypot",
    "inner",
    "kron",
    "logaddexp",
    "logit",
    "median",
    "moveaxis",
    "movedim",
    "nanmean",
    "nanmedian",
    "nanquantile",
    "nansum",
    "quantile",
    "rad2deg",
    "rot90",
    "sgn",
    "signbit",
    "tensor_split",
    "tril_indices",
    "triu_indices",
    "unfold",
    "vdot",
    "vstack",
    "xlogy",
]


def _named(name: str, fields: list[str]):
    """A named tuple printed as PyTorch's ``torch.return_types.<name>``."""
    return type(name, (_ValuesIndices, namedtuple(name, fields)), {"__slots__": ()})


_CummaxResult = _named("cummax", ["values", "indices"])
_CumminResult = _named("cummin", ["values", "indices"])
_MedianResult = _named("median", ["values", "indices"])
_NanMedianResult = _named("nanmedian", ["values", "indices"])


def _minmax_repr(self) -> str:
    return f"torch.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"


#: ``(min, max)``, printed like PyTorch's ``torch.return_types.aminmax``.
_MinMax = type(
    "aminmax",
    (namedtuple("aminmax", ["min", "max"]),),
    {"__slots__": (), "__repr__": _minmax_repr},
)


def _type_name(dtype) -> str:
    """PyTorch's short type name in "not implemented for 'Float'" messages."""
    return dtype.legacy_name[:-6]


def _floating(x: Tensor) -> Tensor:
    """``x`` itself if floating, else converted to the default float dtype."""
    return x if x.dtype.is_floating_point else x.to(default_float())


def _as_tensor(value, like: Tensor) -> Tensor:
    """A number as a 0-d tensor on ``like``'s device (with PyTorch's scalar dtype)."""
    return value if isinstance(value, Tensor) else tensor(value, device=like.device)


def _dims_list(dims, ndim: int) -> list[int]:
    """An int or a sequence of dims, each made non-negative."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [normalize_dim(d, ndim) for d in dims]


# ==================================================================== views


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


# ==================================================================== joins


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
                f"{_type_name(indices_or_sections.dtype)}"
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


# ================================================================== flipping


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


# ================================================================ elementwise

# Cephes' arctangent: after reducing |x| to at most tan(pi/8), a rational
# function of x^2 accurate to double precision.
_ATAN_P = (
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
)
_ATAN_Q = (
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
)


def _polynomial(z: Tensor, coefficients, leading_one: bool = False) -> Tensor:
    """Horner's rule over ``coefficients`` (highest power first)."""
    value = z + coefficients[0] if leading_one else z * 0 + coefficients[0]
    for c in coefficients[1:]:
        value = value * z + c
    return value


def _atan(x: Tensor) -> Tensor:
    """Arctangent of a float tensor (no autograd): Cephes' range reduction and rational function."""
    magnitude = x.abs()
    big = magnitude > 2.414213562373095  # tan(3 pi / 8)
    medium = (magnitude > 0.66) & ~big
    safe = where(big, magnitude, 1.0)
    reduced = where(
        big, -1.0 / safe, where(medium, (magnitude - 1.0) / (magnitude + 1.0), magnitude)
    )
    z = reduced * reduced
    ratio = z * _polynomial(z, _ATAN_P) / _polynomial(z, _ATAN_Q, leading_one=True)
    base = where(big, math.pi / 2, where(medium, math.pi / 4, magnitude * 0))
    result = base + (reduced * ratio + reduced)
    result = where(isnan(x), x, result)
    return where(x < 0, -result, result)


class Atan2(Function):
    """``atan2(y, x)``: the angle of the point ``(x, y)``, in ``[-pi, pi]``.

    The derivative is written out, ``(x, -y) / (x^2 + y^2)``; the forward
    value comes from :func:`_atan` and the quadrant.
    """

    backward_name = "Atan2Backward0"

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        # Reduce to an angle in [0, pi/4] on |y|/|x| or |x|/|y|, then unfold.
        ay, ax = y.abs(), x.abs()
        steep = ay > ax
        num, den = where(steep, ax, ay), where(steep, ay, ax)
        angle = _atan(where(den == 0, 0.0, num / where(den == 0, 1.0, den)))
        both_inf = (ay == math.inf) & (ax == math.inf)
        angle = where(both_inf, math.pi / 4, angle)
        angle = where(steep, math.pi / 2 - angle, angle)
        negative_x = (x < 0) | ((x == 0) & (1.0 / where(x == 0, x, 1.0) < 0))
        angle = where(negative_x, math.pi - angle, angle)
        negative_y = (y < 0) | ((y == 0) & (1.0 / where(y == 0, y, 1.0) < 0))
        angle = where(negative_y, -angle, angle)
        return where(isnan(x) | isnan(y), x + y, angle)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        scale = grad / (x * x + y * y)
        return scale * x, -scale * y


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise arctangent of ``input / other`` in the right quadrant (``arctan2`` too).

    The arctangent is Cephes' rational approximation built from glasstorch's
    elementwise ops (about 25 of them per element where PyTorch calls libm's
    ``atan2``); it is exact to a few units in the last place. Signed zeros and
    infinities give C's answers.

    Example::

        >>> torch.atan2(torch.tensor([1.0, -1.0]), torch.tensor([-1.0, -1.0]))
        tensor([ 2.3562, -2.3562])
    """
    _check_both_tensors("atan2", input, other)
    dtype = _dtype.result_type(input, other)
    if not dtype.is_floating_point:
        dtype = default_float()
    shape = broadcast_shapes(input.shape, other.shape)
    return Atan2.apply(input.to(dtype).expand(shape), other.to(dtype).expand(shape))


arctan2 = atan2


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow: ``max + log1p(exp(-|input - other|))``."""
    _check_both_tensors("logaddexp", input, other)
    for t in (input, other):
        if not t.dtype.is_floating_point:
            raise NotImplementedError(
                f"\"logaddexp_cpu\" not implemented for '{_type_name(t.dtype)}'"
            )
    high = input.maximum(other)
    gap = (input - other).abs()
    same_infinity = (input == other) & (high.abs() == math.inf)
    return where(same_infinity, high, high + (-where(same_infinity, 0.0, gap)).exp().log1p())


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)``, elementwise, without overflow.

    Both are divided by the larger magnitude ``m`` before squaring, and the
    root multiplied by ``m`` again (about ten elementwise ops where PyTorch
    calls libm's ``hypot``).
    """
    _check_both_tensors("hypot", input, other)
    for t in (input, other):
        if not t.dtype.is_floating_point:
            raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{_type_name(t.dtype)}'")
    a, b = input.abs(), other.abs()
    largest = a.maximum(b)
    safe = where((largest == 0) | (largest == math.inf), 1.0, largest)
    x, y = a / safe, b / safe
    scaled = largest * (x * x + y * y).sqrt()
    infinite = (a == math.inf) | (b == math.inf)  # inf even beside a NaN, as C's hypot
    return where(infinite, math.inf, where(largest == 0, largest, scaled))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (all broadcast), as optimizers use it."""
    product = tensor1 * tensor2
    return input + (product if value == 1 else product * value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (all broadcast); integer divisions are refused."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
            "for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)


def frac(input: Tensor) -> Tensor:
    """The fractional part, ``input - trunc(input)`` (its sign is the input's); floats only."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{_type_name(input.dtype)}'")
    return input - input.trunc()


def sgn(input: Tensor) -> Tensor:
    """:func:`sign` (PyTorch's ``sgn`` differs only for complex tensors, which glasstorch lacks)."""
    return input.sign()


def signbit(input: Tensor) -> Tensor:
    """Whether the sign bit is set: True for negative numbers and ``-0.0``; returns bool.

    NaN counts as positive here (its sign bit is not visible to comparisons).
    """
    if input.dtype is _dtype.bool_ or input.dtype is _dtype.uint8:
        return zeros(input.shape, dtype=_dtype.bool_, device=input.device)
    negative = input < 0
    if not input.dtype.is_floating_point:
        return negative
    zero = input == 0
    return negative | (zero & (1.0 / where(zero, input, 1.0) < 0))


def copysign(input: Tensor, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (``-0.0`` counts as negative); a float result."""
    other = _as_tensor(other, input)
    magnitude = _floating(input).abs()
    return where(signbit(other), -magnitude, magnitude)


def fmod(input: Tensor, other) -> Tensor:
    """C's ``fmod``: the remainder of ``input / other`` with the sign of ``input``.

    (:func:`remainder` takes the divisor's sign.) Computed as
    ``sign(input) * remainder(|input|, |other|)``, so the derivative is
    1 for ``input`` and ``-trunc(input / other)`` for ``other``.
    """
    divisor = other.abs() if isinstance(other, Tensor) else builtins.abs(other)
    magnitude = input.abs().remainder(divisor)
    return where(input < 0, -magnitude, magnitude)


def xlogy(input, other) -> Tensor:
    """``input * log(other)``, with 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    if not isinstance(input, Tensor):
        input = _as_tensor(input, other)
    other = _as_tensor(other, input)
    dtype = _dtype.result_type(input, other)
    if not dtype.is_floating_point:
        dtype = default_float()
    x, y = input.to(dtype), other.to(dtype)
    log = y.log()
    # Where x is 0 the product is 0 even for log(y) = -inf or NaN (y <= 0); keeping x in the
    # product (rather than selecting 0) gives x the gradient log(y), as PyTorch.
    zero_times_infinite = (x == 0) & ~isnan(y) & ~(log.abs() < math.inf)
    return x * where(zero_times_infinite, 0.0, log) + 0.0  # + 0.0 turns -0.0 into 0.0


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians: ``input * pi / 180``."""
    return _floating(input) * (math.pi / 180)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees: ``input * 180 / pi``."""
    return _floating(input) * (180 / math.pi)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 for negative ``input``, 1 for positive, ``values`` where it is 0."""
    _check_heaviside(input, values)
    step = (input > 0).to(input.dtype)
    return where(input == 0, values, step)


def _check_heaviside(input: Tensor, values) -> None:
    if not isinstance(values, Tensor):
        raise TypeError(
            f"heaviside(): argument 'values' (position 2) must be Tensor, not "
            f"{type(values).__name__}"
        )
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``."""
    p = _floating(input)
    if eps is not None:
        p = p.clamp(eps, 1 - eps)
    return (p / (1 - p)).log()


# ============================================================ running extremes


def _running_extreme(input: Tensor, dim: int, largest: bool, result):
    dim = normalize_dim(dim, builtins.max(input.dim(), 1))
    if input.dim() == 0 or input.numel() == 0:
        indices = zeros(input.shape, dtype=_dtype.int64, device=input.device)
        return result(input.clone(), indices)
    with_grad = input
    work = input.detach()
    if work.dtype is _dtype.bool_:
        work = work.to(_dtype.uint8)
    last = movedim(work, dim, -1)
    length = last.shape[-1]
    position = arange(length, device=input.device)
    later = position.unsqueeze(0) > position.unsqueeze(1)  # [i, j]: j after i
    square = last.unsqueeze(-2).expand(*last.shape[:-1], length, length)
    own = last.unsqueeze(-1)  # element i stands in for the ones after it
    masked = where(later, own, square)
    values = masked.amax(-1) if largest else masked.amin(-1)
    equal = square == values.unsqueeze(-1)
    if work.dtype.is_floating_point:
        equal = equal | (isnan(square) & isnan(values.unsqueeze(-1)))
    hit = equal & ~later
    indices = where(hit, position, -1).amax(-1)  # ties take the latest index, as PyTorch
    indices = movedim(indices, -1, dim)
    return result(with_grad.gather(dim, indices), indices)


def cummax(input: Tensor, dim: int):
    """Running maximum along ``dim`` and where it was found: ``(values, indices)``.

    A tie takes the later index, and a NaN wins from where it appears, as in
    PyTorch. Computed by laying out an ``L x L`` matrix per row (``L`` the
    length of ``dim``) where PyTorch runs a scan.

    Example::

        >>> torch.cummax(torch.tensor([1, 3, 2, 3]), 0)
        torch.return_types.cummax(
        values=tensor([1, 3, 3, 3]),
        indices=tensor([0, 1, 1, 3]))
    """
    return _running_extreme(input, dim, True, _CummaxResult)


def cummin(input: Tensor, dim: int):
    """Running minimum along ``dim`` and where it was found (see :func:`cummax`)."""
    return _running_extreme(input, dim, False, _CumminResult)


# ============================================================ order statistics


def _check_nonempty_dim(input: Tensor, dim: int, name: str) -> None:
    if input.dim() and input.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    name = "nanmedian" if ignore_nan else "median"
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return tensor(math.nan, dtype=input.dtype, device=input.device)
        values, _ = _median(flat, 0, False, ignore_nan)
        return values
    dim = normalize_dim(dim, builtins.max(input.dim(), 1))
    if input.dim() == 0:
        return (_NanMedianResult if ignore_nan else _MedianResult)(
            input.clone(), zeros((), dtype=_dtype.int64, device=input.device)
        )
    _check_nonempty_dim(input, dim, name)
    length = input.shape[dim]
    values, order = input.detach().sort(dim, stable=True)  # NaN sorts last
    detached = input.detach()
    nans = (detached != detached).sum(dim, keepdim=True)  # NaN is the only x != x
    numbers = length - nans
    if ignore_nan:
        # an all-NaN slice gives its first element (PyTorch: whichever NaN its selection leaves)
        rank = ((numbers - 1) // 2).clamp_min(0)
    else:  # a NaN anywhere is the median: the first NaN in sorted order
        rank = where(nans > 0, numbers, (length - 1) // 2)
    indices = order.gather(dim, rank)
    result = _NanMedianResult if ignore_nan else _MedianResult
    chosen = input.gather(dim, indices)
    if not keepdim:
        chosen, indices = chosen.squeeze(dim), indices.squeeze(dim)
    return result(chosen, indices)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """The lower median (of two middle values, the smaller); with ``dim``, ``(values, indices)``.

    Without ``dim`` the whole tensor gives one number. A NaN makes the median
    NaN. Found by sorting (``O(n log n)``), where PyTorch selects in ``O(n)``;
    for tied values the index may differ from PyTorch's.

    Example::

        >>> torch.median(torch.tensor([4.0, 1.0, 3.0, 2.0]))
        tensor(2.)
    """
    return _median(input, dim, keepdim, ignore_nan=False)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """:func:`median` ignoring NaN (NaN only where every element is NaN).

    For a slice of NaN only, the index is its first element's; PyTorch's is
    whichever NaN its selection algorithm leaves in the middle.
    """
    return _median(input, dim, keepdim, ignore_nan=True)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.dtype.is_floating_point:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q = tensor([float(q)], dtype=input.dtype, device=input.device)
    else:
        if q.dim() > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        scalar_q = q.dim() == 0
        q = q.reshape(-1)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    # Lay the values out as columns: (L, R), L values in each of R rows.
    if dim is None:
        rows = input.reshape(-1, 1)
        dim_out = 0
    else:
        dim_out = normalize_dim(dim, builtins.max(input.dim(), 1))
        rows = input.reshape(1) if input.dim() == 0 else input
        rows = movedim(rows, dim_out, 0).reshape(rows.shape[dim_out], -1)
    # rows: (L, R). Sort each column, NaN last.
    values, _ = rows.sort(0)
    length = rows.shape[0]
    nans = isnan(rows.detach()).sum(0, keepdim=True)  # (1, R)
    if ignore_nan:
        last = (length - nans - 1).to(input.dtype)
    else:
        last = zeros(nans.shape, dtype=input.dtype, device=input.device) + (length - 1)
    ranks = q.unsqueeze(1) * last.clamp_min(0)  # (Q, R)
    if interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().long().clamp(0, length - 1)
    above = ranks.ceil().long().clamp(0, length - 1)
    low = values.gather(0, below)
    high = values.gather(0, above)
    if interpolation in ("lower", "nearest"):
        out = (
            low if interpolation == "lower" else values.gather(0, ranks.long().clamp(0, length - 1))
        )
    elif interpolation == "higher":
        out = high
    else:
        weight = 0.5 if interpolation == "midpoint" else (ranks - below.to(input.dtype))
        out = low + weight * (high - low)
    missing = (nans == length) if ignore_nan else (nans > 0)
    out = where(missing, math.nan, out)  # (Q, R)
    return _shape_quantile(out, input, dim, dim_out, keepdim, scalar_q)


def _shape_quantile(out, input, dim, dim_out, keepdim, scalar_q):
    """Reshape the ``(Q, R)`` result: q's dim first, then the input's dims (``dim`` kept or not)."""
    count = out.shape[0]
    if dim is None or input.dim() == 0:
        shape = [1] * input.dim() if keepdim else []
    else:
        shape = list(input.shape)
        shape[dim_out] = 1
        if not keepdim:
            del shape[dim_out]
    out = out.reshape(count, *shape)
    return out.squeeze(0) if scalar_q else out


def quantile(
    input: Tensor,
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles of ``input`` (of all of it, or along ``dim``).

    For each ``q`` in ``[0, 1]`` the rank ``q * (n - 1)`` into the sorted
    values is interpolated between its neighbours: ``linear`` by the fraction,
    ``lower``/``higher`` take the neighbour below/above, ``nearest`` the
    nearer (half to even), ``midpoint`` their mean. A NaN makes its row NaN.

    Args:
        input: a float tensor.
        q: a float, or a 1-D tensor of ``input``'s dtype (its dimension comes first
            in the result).
        dim: the dimension to reduce; ``None`` reduces all of them.
        keepdim: keep reduced dimensions as size 1.
        interpolation: see above. Default: ``"linear"``.

    Example::

        >>> torch.quantile(torch.tensor([1.0, 2.0, 4.0]), 0.25)
        tensor(1.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(
    input: Tensor,
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """:func:`quantile` ignoring NaN (a row that is all NaN gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """The smallest and largest elements, ``(min, max)``, of all of ``input`` or along ``dim``."""
    if input.numel() == 0 or (dim is not None and input.dim() and input.shape[dim] == 0):
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    if dim is None:
        low, high = input.amin(), input.amax()
        if keepdim:
            shape = (1,) * input.dim()
            low, high = low.reshape(shape), high.reshape(shape)
        return _MinMax(low, high)
    if input.dim() == 0:
        normalize_dim(dim, 1)
        return _MinMax(input.clone(), input.clone())
    return _MinMax(input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim))


# ============================================================ NaN-ignoring sums


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """:func:`sum` with NaN counted as zero."""
    if dim is not None:  # PyTorch names a repeated dim before a bad one here
        normalize_dims(dim, builtins.max(input.dim(), 1), repeats_first=True)
    if input.dtype.is_floating_point:
        input = where(isnan(input), 0.0, input)
    if dim is None:
        return (
            input.sum(dtype=dtype)
            if not keepdim
            else input.sum(tuple(range(input.dim())), keepdim=True, dtype=dtype)
        )
    return input.sum(dim, keepdim=keepdim, dtype=dtype)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """:func:`mean` of the elements that are not NaN (NaN where there are none)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype.title}"
        )
    count = nansum((~isnan(input)).to(input.dtype), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


# ============================================================ linear algebra


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    from glasstorch.ops.composites import _scaled_sum as scaled

    return scaled(input, product, beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for a matrix and a vector."""
    return _scaled_sum(input, mat.mv(vec), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    The batch of products is computed, then summed (PyTorch accumulates in place).
    """
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor"
        )
    return _scaled_sum(input, batch1.bmm(batch2).sum(0), beta, alpha)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (conjugating the first, a no-op for real tensors)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors"
        )
    if input.dtype is not other.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{_type_name(input.dtype)} and {_type_name(other.dtype)}"
        )
    return input.dot(other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dimension of both.

    The result's shape is ``input.shape[:-1] + other.shape[:-1]``; a 0-d
    operand multiplies the other.
    """
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    k = input.shape[-1]
    product = input.reshape(-1, k) @ other.reshape(-1, k).t()
    return product.reshape(*input.shape[:-1], *other.shape[:-1])


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: each element of ``input`` scales a whole copy of ``other``.

    Example::

        >>> torch.kron(torch.eye(2), torch.ones(1, 2))
        tensor([[1., 1., 0., 0.],
                [0., 0., 1., 1.]])
    """
    ndim = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (ndim - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.dim()) + tuple(other.shape))
    a_split = [s for n in a.shape for s in (n, 1)]
    b_split = [s for n in b.shape for s in (1, n)]
    product = a.reshape(a_split) * b.reshape(b_split)
    return product.reshape([m * n for m, n in zip(a.shape, b.shape)])


def _cross_along(a: Tensor, b: Tensor, dim: int) -> Tensor:
    a0, a1, a2 = (a.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(dim, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The 3-D cross product along ``dim`` (a dimension of size 3), broadcasting the rest.

    Without ``dim`` PyTorch's deprecated default is used: the first dimension
    of size 3, with its warning. :func:`glasstorch.linalg.cross` defaults to -1.
    """
    shape = broadcast_shapes(input.shape, other.shape)
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\n"
            "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
            "The default value of dim will change to agree with that of linalg.cross in a "
            "future release.",
            UserWarning,
            stacklevel=2,
        )
        dim = next((d for d, n in enumerate(shape) if n == 3), -1)
    return linalg_cross(input, other, dim=dim)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.cross``: the cross product of 3-vectors along ``dim`` (default -1)."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input.shape, other.shape)
    dim = normalize_dim(dim, len(shape))
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim]} and {other.shape[dim]}"
        )
    return _cross_along(input.expand(shape), other.expand(shape), dim)


def _triangle_indices(row: int, col: int, offset: int, lower: bool, dtype, device) -> Tensor:
    if dtype is None:
        dtype = _dtype.int64
    if dtype not in (_dtype.int64, _dtype.int32):
        name = "tril_indices" if lower else "triu_indices"
        raise NotImplementedError(f"\"{name}\" not implemented for '{_type_name(dtype)}'")
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


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), as a 0-d tensor."""
    from glasstorch.linalg import vector_norm

    difference = input - other
    if not difference.dtype.is_floating_point:
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{_type_name(difference.dtype)} instead."
        )
    return vector_norm(difference, p)


def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns).

    Args:
        input: 1-D (one variable) or 2-D ``(variables, observations)``.
        correction: subtracted from the (weighted) observation count; 1 is Bessel's.
        fweights: integer frequency of each observation.
        aweights: a float weight for each observation.
    """
    if input.dim() > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.dim()} dimensions"
        )
    x = input.reshape(1, -1) if input.dim() < 2 else input
    x = _floating(x)
    weights = None
    if fweights is not None:
        weights = fweights.to(x.dtype)
    if aweights is not None:
        weights = aweights.to(x.dtype) if weights is None else weights * aweights.to(x.dtype)
    if weights is None:
        total = x.shape[1]
        mean = x.mean(1, keepdim=True)
        centered = x - mean
        norm = total - correction
        product = centered @ centered.t()
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        centered = x - mean
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (weights * aweights.to(x.dtype)).sum() / total
        product = (centered * weights) @ centered.t()
    if isinstance(norm, Tensor):
        norm = norm.clamp_min(0)
    else:
        if norm <= 0:
            warnings.warn(
                "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
                "number of observations.",
                UserWarning,
                stacklevel=2,
            )
        norm = builtins.max(norm, 0)
    out = product / norm
    return out.reshape(()) if input.dim() < 2 else out


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (clipped to ``[-1, 1]``)."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


# ============================================================ in-place writes


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


# ================================================= in-place forms, written in place
# ``x.fmod_(y)`` and the rest write their values into x (PyTorch computes them in
# place): each is composed from several kernels, so the composition runs on
# pieces of x (inplace.write_in_pieces) and nothing the size of x is made. Each
# records PyTorch's node with its own derivative; only the nodes that need x's
# old values (``atan2_``, ``hypot_``, ...) keep a copy of them, as PyTorch does.


def _zeros(grad: Tensor) -> Tensor:
    return zeros((), dtype=grad.dtype, device=grad.device).expand(grad.shape)


def _write(function, target: Tensor, dtype, *args) -> Tensor:
    """``function`` (an in-place Function) applied to ``target`` and ``args``.

    Tensor args on another device, or of a shape that does not broadcast to
    ``target``'s, are refused here with PyTorch's error for an in-place op.
    """
    tensors = [a for a in args if isinstance(a, Tensor)]
    for other in tensors:
        if other.device != target.device and other.dim() != 0:
            common_device(target, other)
        if not inplace.broadcasts_into(target, other) and other.device == target.device:
            shape = broadcast_shapes(target.shape, other.shape)
            raise RuntimeError(
                f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                f"{list(shape)}"
            )
    return inplace.write_inplace(target, lambda: function.apply(target, *args), dtype, tensors)


def _lerp(x, end, weight):
    from glasstorch.ops.composites import lerp

    return lerp(x, end, weight)


_LERP_ = inplace.elementwise_function(
    "LerpBackward0", _lerp, lambda g, x, y, end, w: (g * (1 - w), g * w, None)
)
_LERP_TENSOR_ = inplace.elementwise_function(
    "LerpBackward1",
    _lerp,
    lambda g, x, y, end, w: (g * (1 - w), g * w, g * (end - x) if x is not None else None),
    keep_self=lambda needs: needs[2],  # only the weight's gradient needs the old values
)


def lerp_(input: Tensor, end: Tensor, weight) -> Tensor:
    """In-place ``lerp``: ``input + weight * (end - input)`` written into ``input``."""
    function = _LERP_TENSOR_ if isinstance(weight, Tensor) else _LERP_
    return _write(function, input, _dtype.result_type(input, end, weight), end, weight)


_ADDCMUL_ = inplace.elementwise_function(
    "AddcmulBackward0",
    lambda x, t1, t2, value: addcmul(x, t1, t2, value=value),
    lambda g, x, y, t1, t2, value: (g, g * t2 * value, g * t1 * value, None),
)
_ADDCDIV_ = inplace.elementwise_function(
    "AddcdivBackward0",
    lambda x, t1, t2, value: addcdiv(x, t1, t2, value=value),
    lambda g, x, y, t1, t2, value: (g, g * value / t2, -g * value * t1 / (t2 * t2), None),
)


def addcmul_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcmul`: only ``tensor1`` and ``tensor2`` are kept for backward."""
    dtype = _dtype.result_type(input, tensor1, tensor2)
    return _write(_ADDCMUL_, input, dtype, tensor1, tensor2, value)


def addcdiv_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcdiv`: only ``tensor1`` and ``tensor2`` are kept for backward."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        addcdiv(input, tensor1, tensor2)  # raises PyTorch's integer-division error
    dtype = _dtype.result_type(input, tensor1, tensor2)
    return _write(_ADDCDIV_, input, dtype, tensor1, tensor2, value)


_FMOD_ = inplace.elementwise_function("FmodBackward0", fmod, lambda g, x, y, o: (g, None))
_FMOD_TENSOR_ = inplace.elementwise_function(
    "FmodBackward1",
    fmod,
    lambda g, x, y, o: (g, -g * (x / o).trunc() if x is not None else None),
    keep_self=lambda needs: needs[1],
)


def fmod_(input: Tensor, other) -> Tensor:
    """In-place :func:`fmod`."""
    function = _FMOD_TENSOR_ if isinstance(other, Tensor) else _FMOD_
    return _write(function, input, _dtype.result_type(input, other), other)


_SGN_ = inplace.elementwise_function("SgnBackward0", sgn, lambda g, x, y: (g * 0,))
_FRAC_ = inplace.elementwise_function("FracBackward0", frac, lambda g, x, y: (g,))


def sgn_(input: Tensor) -> Tensor:
    """In-place :func:`sgn`."""
    if input.dtype is _dtype.bool_:
        return inplace.apply_inplace(input, lambda: sgn(input))
    return _write(_SGN_, input, input.dtype)


def frac_(input: Tensor) -> Tensor:
    """In-place :func:`frac`: floats only."""
    if not input.dtype.is_floating_point:
        frac(input)  # raises PyTorch's error
    return _write(_FRAC_, input, input.dtype)


def _atan2_derivative(g, x, y, other):
    scale = g / (x * x + other * other)
    return scale * other, -scale * x


_ATAN2_ = inplace.elementwise_function("Atan2Backward0", atan2, _atan2_derivative, keep_self=True)
_HYPOT_ = inplace.elementwise_function(
    "HypotBackward0",
    hypot,
    lambda g, x, y, other: (g * x / y, g * other / y),
    keep_self=True,
    keep_output=True,
)


def atan2_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`atan2` (``arctan2_`` too)."""
    _check_both_tensors("atan2", input, other)
    return _write(_ATAN2_, input, float_result_dtype(input, other), other)


arctan2_ = atan2_


def hypot_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`hypot`."""
    _check_both_tensors("hypot", input, other)
    if not (input.dtype.is_floating_point and other.dtype.is_floating_point):
        hypot(input, other)  # raises PyTorch's error
    return _write(_HYPOT_, input, _dtype.result_type(input, other), other)


def _copysign_derivative(g, x, y, other):
    ratio = where(x == 0, 0.0, y / where(x == 0, 1.0, x))
    return g * ratio, (_zeros(g) if isinstance(other, Tensor) else None)


_COPYSIGN_ = {
    overload: inplace.elementwise_function(
        f"CopysignBackward{overload}",
        copysign,
        _copysign_derivative,
        keep_self=True,
        keep_output=True,
    )
    for overload in (0, 1)
}


def copysign_(input: Tensor, other) -> Tensor:
    """In-place :func:`copysign`: CopysignBackward0 for a tensor ``other``, 1 for a number."""
    function = _COPYSIGN_[0 if isinstance(other, Tensor) else 1]
    return _write(function, input, float_result_dtype(input, other), other)


def _xlogy_derivative(g, x, y, other):
    grad_x = g * xlogy((x != 0).to(g.dtype), other)
    grad_other = g * x / other if isinstance(other, Tensor) else None
    return grad_x, grad_other


_XLOGY_ = {
    overload: inplace.elementwise_function(
        f"XlogyBackward{overload}", xlogy, _xlogy_derivative, keep_self=True
    )
    for overload in (0, 2)
}


def xlogy_(input: Tensor, other) -> Tensor:
    """In-place :func:`xlogy`: XlogyBackward0 for a tensor ``other``, 2 for a number."""
    function = _XLOGY_[0 if isinstance(other, Tensor) else 2]
    return _write(function, input, float_result_dtype(input, other), other)


def _not_differentiable(name: str):
    def derivative(g, x, y, *args):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return derivative


_HEAVISIDE_ = inplace.elementwise_function(
    "NotImplemented", heaviside, _not_differentiable("heaviside_")
)


def heaviside_(input: Tensor, values: Tensor) -> Tensor:
    """In-place :func:`heaviside` (no gradient: backward raises, as in PyTorch)."""
    _check_heaviside(input, values)
    return _write(_HEAVISIDE_, input, input.dtype, values)


def _logit_derivative(g, x, y, eps):
    value = g / (x * (1 - x))
    if eps is None:
        return where((x < 0) | (x > 1), math.nan, value), None
    return where((x < eps) | (x > 1 - eps), 0.0, value), None


_LOGIT_ = inplace.elementwise_function("LogitBackward0", logit, _logit_derivative, keep_self=True)


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place :func:`logit`."""
    return _write(_LOGIT_, input, float_result_dtype(input), eps)


_DEG2RAD_ = inplace.elementwise_function(
    "Deg2RadBackward0", deg2rad, lambda g, x, y: (g * (math.pi / 180),)
)
_RAD2DEG_ = inplace.elementwise_function(
    "Rad2DegBackward0", rad2deg, lambda g, x, y: (g * (180 / math.pi),)
)


def deg2rad_(input: Tensor) -> Tensor:
    """In-place :func:`deg2rad`."""
    return _write(_DEG2RAD_, input, float_result_dtype(input))


def rad2deg_(input: Tensor) -> Tensor:
    """In-place :func:`rad2deg`."""
    return _write(_RAD2DEG_, input, float_result_dtype(input))


def _log_base_(name: str, base: float):
    def compute(x):
        from glasstorch.ops import shaping

        return getattr(shaping, name.lower())(x)

    function = inplace.elementwise_function(
        f"{name}Backward0",
        compute,
        lambda g, x, y: (g / (x * math.log(base)),),
        keep_self=True,
    )

    def method(input: Tensor) -> Tensor:
        return _write(function, input, float_result_dtype(input))

    method.__name__ = name.lower() + "_"
    method.__doc__ = f"In-place ``{name.lower()}``."
    return method


log2_ = _log_base_("Log2", 2.0)
log10_ = _log_base_("Log10", 10.0)


def _nan_to_num(x, nan, posinf, neginf):
    from glasstorch.ops.counting import nan_to_num

    return nan_to_num(x, nan, posinf, neginf)


_NAN_TO_NUM_ = inplace.elementwise_function(
    "NanToNumBackward0",
    _nan_to_num,
    lambda g, x, y, *bounds: (g * x.isfinite(), None, None, None),
    keep_self=True,
)


def nan_to_num_(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """In-place ``nan_to_num`` (an integer tensor is left as it is, its version bumped)."""
    return _write(_NAN_TO_NUM_, input, input.dtype, nan, posinf, neginf)


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


#: The in-place methods written here (``Tensor.fmod_`` and the rest), for the method table.
INPLACE_METHODS = {
    "addcdiv_": addcdiv_,
    "addcmul_": addcmul_,
    "arctan2_": arctan2_,
    "atan2_": atan2_,
    "copysign_": copysign_,
    "deg2rad_": deg2rad_,
    "fmod_": fmod_,
    "frac_": frac_,
    "heaviside_": heaviside_,
    "hypot_": hypot_,
    "lerp_": lerp_,
    "log10_": log10_,
    "log2_": log2_,
    "logit_": logit_,
    "nan_to_num_": nan_to_num_,
    "rad2deg_": rad2deg_,
    "sgn_": sgn_,
    "tril_": tril_,
    "triu_": triu_,
    "xlogy_": xlogy_,
}
