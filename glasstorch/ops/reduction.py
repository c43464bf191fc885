"""Reductions: sum, mean, prod, max/min, aminmax, var/std (and their _mean forms),
nansum/nanmean, logsumexp, all/any, count_nonzero, softmax.

A reduction kernel writes into an output with the *keepdim* shape (size 1 along
the reduced dims); without ``keepdim`` the frontend then views it without those
dims. Backward does the opposite: it views the gradient back to keepdim shape
and expands it over the reduced dims.
"""

from __future__ import annotations

import builtins
import warnings
from collections import namedtuple

from glasstorch import _dtype, _tier
from glasstorch._shape import normalize_dim, normalize_dims, numel
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.ops.core import cast, default_float
from glasstorch.ops.pointwise.comparison import isnan
from glasstorch.ops.pointwise.selection import where
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------------ helpers


def _keepdim_shape(shape, dims) -> tuple[int, ...]:
    return tuple(1 if d in dims else s for d, s in enumerate(shape))


def _drop_dims(out: Tensor, dims, keepdim: bool) -> Tensor:
    """View a keepdim-shaped result without the reduced dims (unless ``keepdim``)."""
    if keepdim:
        return out
    shape = tuple(s for d, s in enumerate(out.shape) if d not in dims)
    strides = tuple(st for d, st in enumerate(out.stride()) if d not in dims)
    # A fresh result, not a view of anything the user can reach: no _base.
    return Tensor._make(out._storage, shape, strides, out.storage_offset(), out.dtype)


def compute_reduce(op: str, a: Tensor, dims, keepdim: bool, dtype=None) -> Tensor:
    """Run the reduce kernel over ``dims`` (no autograd)."""
    if dtype is not None:
        a = cast(a, dtype)
    out_dtype = a.dtype
    if op in ("all", "any") and a.dtype is not _dtype.uint8:
        out_dtype = _dtype.bool_  # uint8 stays uint8, as in PyTorch
    out = empty_tensor(_keepdim_shape(a.shape, dims), out_dtype, device=a.device)
    kernels.reduce(op, out._strided(), a._strided(), tuple(dims))
    return _drop_dims(out, dims, keepdim)


def _expand_back(grad: Tensor, input_shape, dims, keepdim: bool) -> Tensor:
    """Undo a reduction's shape: put the reduced dims back as size 1, then expand."""
    # -- solution: autograd/reduction
    if not keepdim:
        grad = grad.reshape(_keepdim_shape(input_shape, dims))
    return grad.expand(input_shape)
    # -- end solution


def _dims_arg(input: Tensor, dim, repeats_first: bool = False) -> tuple[int, ...]:
    """The reduced dims: all of them for None or (); a 0-d tensor has none to reduce.

    ``repeats_first``: check each dim against those before it as it comes, so
    ``(2, 2, 5)`` names the repeat before the bad dim, as PyTorch's var, std
    and nansum do (sum and mean check every dim's range first)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(input.dim()))
    dims = normalize_dims(dim, input.dim(), repeats_first=repeats_first)
    return dims if input.dim() > 0 else ()


def _sum_dtype(input: Tensor, dtype):
    """Integer and bool sums accumulate in int64, as in PyTorch."""
    if dtype is not None:
        return dtype
    return input.dtype if input.dtype.is_floating_point else _dtype.int64


# ---------------------------------------------------------------------- sum


class Sum(Function):
    backward_name = "SumBackward0"

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return compute_reduce("sum", a, dims, keepdim, dtype)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim), None, None, None


class SumDim(Sum):
    backward_name = "SumBackward1"


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    dims = _dims_arg(input, dim)
    function = Sum if dim is None else SumDim
    return function.apply(input, dims, keepdim, _sum_dtype(input, dtype))


class Mean(Function):
    backward_name = "MeanBackward0"

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        count = numel([a.shape[d] for d in dims])
        ctx.count = count
        total = compute_reduce("sum", a, dims, keepdim, dtype)
        out = empty_tensor(total.shape, total.dtype, device=total.device)
        from glasstorch.ops.core import strided_as
        from glasstorch.tensor import wrap_scalar

        divisor = wrap_scalar(float(count), total.dtype)
        kernels.binary("div", out._strided(), total._strided(), strided_as(divisor, total.shape))
        return out

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/reduction
        grad = _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim)
        return grad / ctx.count, None, None, None
        # -- end solution


class MeanDim(Mean):
    backward_name = "MeanBackward1"


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Average of all elements, or over ``dim``. Needs a floating dtype."""
    which = "Input" if dtype is None else "Optional"
    dtype = dtype or input.dtype
    if not dtype.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. {which} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype.title}"
        )
    dims = _dims_arg(input, dim)
    return (Mean if dim is None else MeanDim).apply(input, dims, keepdim, dtype)


class Prod(Function):
    """The product of all elements (ProdDim: along one dim)."""

    backward_name = "ProdBackward0"
    whole = True  # the whole tensor is one slice

    @classmethod
    def forward(cls, ctx, a, dims, keepdim, dtype):
        ctx.input_shape, ctx.dims, ctx.keepdim, ctx.whole = a.shape, dims, keepdim, cls.whole
        out = compute_reduce("prod", a, dims, keepdim, dtype)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        if a.dim() == 0:
            return grad, None, None, None
        grad = _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim)
        # d(prod)/dx_i is the product of the other elements. Without zeros that is
        # prod / x_i. With a zero, division fails, so (as PyTorch) the products of
        # the others are multiplied out; they are differentiable again, which gives
        # second derivatives, and NaN or inf elsewhere in a slice stay where they are.
        if not bool((a == 0).any()):
            out = _expand_back(out, ctx.input_shape, ctx.dims, ctx.keepdim)
            return grad * (out / a), None, None, None
        if ctx.whole and not is_grad_enabled() and int((a == 0).sum()) > 1:
            # Two zeros in the one slice: every "product of the others" holds a zero.
            # (PyTorch takes this shortcut for a whole-tensor product outside create_graph.)
            from glasstorch.ops.creation import zeros_like

            return zeros_like(a), None, None, None
        if ctx.whole:  # the flattened tensor is the one slice
            others = _products_of_others(a.reshape(-1), 0).reshape(a.shape)
        else:
            others = _products_of_others(a, ctx.dims[0])
        return grad * others, None, None, None


def _products_of_others(a: Tensor, dim: int) -> Tensor:
    """For each element, the product of the *other* elements along ``dim``.

    No division: the running product of everything before an element (from the
    left) times the running product of everything after it (from the right).
    For ``[a, b, c]``: left ``[1, a, ab]``, right ``[bc, c, 1]``.
    """
    from glasstorch.ops.creation import ones
    from glasstorch.ops.views import cat

    size = a.shape[dim]
    if size == 0:
        return a
    one = ones(_keepdim_shape(a.shape, (dim,)), dtype=a.dtype, device=a.device)
    left = cat([one, a.narrow(dim, 0, size - 1)], dim).cumprod(dim)
    right = cat([one, a.narrow(dim, 1, size - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return left * right


class ProdDim(Prod):
    backward_name = "ProdBackward1"
    whole = False


def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product of all elements, or along one ``dim``."""
    dims = _dims_arg(input, dim)
    return (Prod if dim is None else ProdDim).apply(input, dims, keepdim, _sum_dtype(input, dtype))


# ------------------------------------------------------------- max and min


class AMax(Function):
    """amax/amin and full max()/min(): the gradient is shared among ties."""

    backward_name = "AmaxBackward0"
    op = "amax"

    @classmethod
    def forward(cls, ctx, a, dims, keepdim):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        out = compute_reduce(cls.op, a, dims, keepdim)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        out = _expand_back(out, ctx.input_shape, ctx.dims, ctx.keepdim)
        grad = _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim)
        ties = (a == out).to(grad.dtype)
        count = ties.sum(ctx.dims, keepdim=True)
        return grad * ties / count, None, None


class AMin(AMax):
    backward_name = "AminBackward0"
    op = "amin"


class MaxAll(AMax):
    backward_name = "MaxBackward1"


class MinAll(AMin):
    backward_name = "MinBackward1"


def _check_nonempty(input: Tensor, dims, name: str, whole: bool = False) -> None:
    """Reductions without an identity (max, min, argmax) refuse empty slices."""
    if input.numel() != 0:
        return
    if whole:
        error = IndexError if name.startswith("arg") else RuntimeError
        tail = (
            ""
            if name.startswith("arg")
            else (" Specify the reduction dim with the 'dim' argument.")
        )
        raise error(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0.{tail}"
        )
    for d in dims:
        if input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Largest value over ``dim`` (all dims by default); NaN propagates."""
    dims = _dims_arg(input, dim)
    _check_nonempty(input, dims, "amax", whole=dim is None or dim == ())
    return AMax.apply(input, dims, keepdim)


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim`` (all dims by default); NaN propagates."""
    dims = _dims_arg(input, dim)
    _check_nonempty(input, dims, "amin", whole=dim is None or dim == ())
    return AMin.apply(input, dims, keepdim)


class _ValuesIndices:
    """Printed like PyTorch's ``torch.return_types.max(values=..., indices=...)``."""

    def __repr__(self) -> str:
        return (
            f"torch.return_types.{type(self).__name__}(\nvalues={self.values!r},\n"
            f"indices={self.indices!r})"
        )


#: What ``max(dim=...)`` and ``min(dim=...)`` return: values and their indices.
max_result = type(
    "max", (_ValuesIndices, namedtuple("max", ["values", "indices"])), {"__slots__": ()}
)
min_result = type(
    "min", (_ValuesIndices, namedtuple("min", ["values", "indices"])), {"__slots__": ()}
)


class MaxDim(Function):
    backward_name = "MaxBackward0"
    op = "max"

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        ctx.input_shape, ctx.dim, ctx.keepdim = a.shape, dim, keepdim
        shape = _keepdim_shape(a.shape, (dim,))
        values = empty_tensor(shape, a.dtype, device=a.device)
        indices = empty_tensor(shape, _dtype.int64, device=a.device)
        kernels.arg_reduce(cls.op, values._strided(), indices._strided(), a._strided(), dim)
        values, indices = _drop_dims(values, (dim,), keepdim), _drop_dims(indices, (dim,), keepdim)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        from glasstorch.ops.creation import zeros

        (indices,) = ctx.saved_tensors
        if not ctx.keepdim:
            grad, indices = grad.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        grad_input = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device)
        return grad_input.scatter(ctx.dim, indices, grad), None, None


class MinDim(MaxDim):
    backward_name = "MinBackward0"
    op = "min"


def _extreme(input: Tensor, dim, keepdim: bool, name: str):
    """max or min: of everything, with ``dim`` as (values, indices), or elementwise."""
    from glasstorch.ops import pointwise

    whole, along, result, elementwise = {
        "max": (MaxAll, MaxDim, max_result, pointwise.maximum),
        "min": (MinAll, MinDim, min_result, pointwise.minimum),
    }[name]
    if isinstance(dim, Tensor):  # max(a, b) is maximum(a, b)
        return elementwise(input, dim)
    if dim is None:
        _check_nonempty(input, (), name, whole=True)
        return whole.apply(input, tuple(range(input.dim())), False)
    dim = normalize_dim(dim, input.dim())
    if input.dim() == 0:
        return result(*along.apply(input.reshape(1), 0, False))
    _check_nonempty(input, (dim,), name)
    return result(*along.apply(input, dim, keepdim))


def max(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The largest element; with ``dim``, a named tuple ``(values, indices)`` along it.

    ``max(a, b)`` with two tensors is :func:`maximum`.
    """
    return _extreme(input, dim, keepdim, "max")


def min(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """The smallest element; with ``dim``, a named tuple ``(values, indices)`` along it."""
    return _extreme(input, dim, keepdim, "min")


def _arg_extreme(input: Tensor, dim, keepdim: bool, name: str) -> Tensor:
    """argmax or argmin: the index of the extreme (of the flattened tensor without dim)."""
    if input.dtype is _dtype.bool_:  # PyTorch refuses bool before any other check
        raise RuntimeError(f"arg{name}(): does not support bool input")
    if dim is None:
        _check_nonempty(input, (), "arg" + name, whole=True)
        return _extreme(input.detach().reshape(-1), 0, False, name).indices
    _check_nonempty(input, (normalize_dim(dim, input.dim()),), "arg" + name)
    return _extreme(input.detach(), dim, keepdim, name).indices


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(input, dim, keepdim, "max")


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (of the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(input, dim, keepdim, "min")


# ------------------------------------------------------------- var and std


def _var_divisor(a: Tensor, dims, correction) -> float:
    """``max(0, N - correction)``, as PyTorch: with no degrees of freedom left the
    variance is ``x / 0``, so inf (or NaN for a zero sum, and for an empty slice)."""
    count = numel([a.shape[d] for d in dims])
    return builtins.max(0, count - correction)


def _variance(a: Tensor, dims, correction, keepdim: bool, take_sqrt: bool) -> Tensor:
    """The variance (or its square root) of ``a`` over ``dims``, without autograd.

    Two passes, as a student would write it: the mean, then the sum of squared
    distances from it, divided by ``max(0, N - correction)``.

    The squares are summed in float64 whatever the input's float dtype, and only
    the result is rounded back, as PyTorch does. In float32 a distance of 1e20
    squares to 1e40, past float32's largest number (3.4e38), and one of 1e-25
    squares to 0, yet the standard deviations (1e20, 1e-25) are ordinary float32
    numbers. When the result is a single number PyTorch takes the mean in the
    input's own dtype first (so a float32 mean that overflows stays inf); for
    several results it keeps the mean in float64 too. Both are followed here.
    """
    wide = a if a.dtype is _dtype.float64 else cast(a, _dtype.float64)
    single = numel(_keepdim_shape(a.shape, dims)) == 1
    if single and a.dtype is not _dtype.float64:
        center = cast(a.mean(dims, keepdim=True), _dtype.float64)
    else:
        center = wide.mean(dims, keepdim=True)
    centered = wide - center
    out = (centered * centered).sum(dims, keepdim=keepdim) / _var_divisor(a, dims, correction)
    if take_sqrt:
        out = out.sqrt()
    return out if out.dtype is a.dtype else cast(out, a.dtype)


def _var_backward(ctx, a: Tensor, grad: Tensor) -> Tensor:
    """d var / d a = 2 (a - mean) / (N - correction), times the incoming ``grad``.

    PyTorch's formula, including its edge cases: with a ``dim``, ``N - correction``
    may be negative (a finite, negative slope); over the whole tensor with no
    degrees of freedom left the slope is inf, or NaN where an element equals the mean.
    An empty list of dims reduces everything, but PyTorch's backward then counts
    N as 1 (``ctx.count``); that is followed too.
    """
    grad = _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim)
    if a.dim() == 0 or ctx.count is None:
        centered = a - a.mean()
        dof = a.numel() - ctx.correction
        if dof <= 0:
            from glasstorch.ops.pointwise import where

            return grad * where(centered == 0, float("nan"), float("inf"))
        return (2.0 / dof) * grad * centered
    centered = a - a.mean(ctx.dims, keepdim=True)
    dof = ctx.count - ctx.correction
    slope = 2.0 / dof if dof != 0 else float("inf")
    return slope * grad * centered


class Var(Function):
    backward_name = "VarBackward0"

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim, count):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.correction, ctx.count = correction, count
        ctx.save_for_backward(a)
        return _variance(a, dims, correction, keepdim, take_sqrt=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return _var_backward(ctx, a, grad), None, None, None, None


class Std(Function):
    backward_name = "StdBackward0"

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim, count):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.correction, ctx.count = correction, count
        out = _variance(a, dims, correction, keepdim, take_sqrt=True)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # std = sqrt(var): d std = d var / (2 std). Where std is 0 PyTorch passes 0
        # on (not grad / 0), so a constant slice has a zero gradient.
        from glasstorch.ops.pointwise import where

        a, out = ctx.saved_tensors
        grad_var = where(out == 0, 0.0, grad / (out * 2))
        return _var_backward(ctx, a, grad_var), None, None, None, None


def _backward_count(input: Tensor, dim, dims):
    """The N of var's backward: None without a dim (the whole tensor), else the
    number of elements per slice (1 for an empty list of dims, as PyTorch counts)."""
    if dim is None or isinstance(dim, bool):
        return None
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return 1
    return numel([input.shape[d] for d in dims])


def _correction(unbiased, correction) -> float:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _var_args(input, dim, unbiased, keepdim, correction, name: str):
    # var(x, True) passes unbiased positionally, as older PyTorch code does.
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims, correction = _dims_arg(input, dim, repeats_first=True), _correction(unbiased, correction)
    if numel([input.shape[d] for d in dims]) - correction <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    return dims, correction, keepdim


def var(input: Tensor, dim=None, unbiased=None, keepdim=False, *, correction=None) -> Tensor:
    """Variance over ``dim``: the mean squared deviation, divided by ``N - correction``.

    ``correction`` defaults to 1 (Bessel's correction); ``unbiased=False`` means 0.
    """
    dims, correction, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "var")
    return Var.apply(input, dims, correction, keepdim, _backward_count(input, dim, dims))


def std(input: Tensor, dim=None, unbiased=None, keepdim=False, *, correction=None) -> Tensor:
    """Standard deviation: the square root of :func:`var`."""
    dims, correction, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "std")
    return Std.apply(input, dims, correction, keepdim, _backward_count(input, dim, dims))


# ------------------------------------------------------------ logsumexp etc.


class LogSumExp(Function):
    backward_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.input_shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        from glasstorch.ops.creation import zeros
        from glasstorch.ops.pointwise import where

        # Subtract the maximum first so exp never overflows (empty slices give -inf).
        if numel([a.shape[d] for d in dims]) == 0:
            peak = zeros(_keepdim_shape(a.shape, dims), dtype=a.dtype, device=a.device)
        else:
            peak = compute_reduce("amax", a, dims, keepdim=True)
            peak = where(peak.abs() == float("inf"), 0.0, peak)
        out = (a - peak).exp().sum(dims, keepdim=True).log() + peak
        out = _drop_dims(out, dims, keepdim)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        grad = _expand_back(grad, ctx.input_shape, ctx.dims, ctx.keepdim)
        out = _expand_back(out, ctx.input_shape, ctx.dims, ctx.keepdim)
        return grad * (a - out).exp(), None, None


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input)))`` over ``dim``, computed without overflow."""
    if not input.dtype.is_floating_point:
        input = input.to(default_float())
    return LogSumExp.apply(input, _dims_arg(input, dim), keepdim)


def _logical_dims(input: Tensor, dim) -> tuple[int, ...]:
    """all/any's dims: unlike sum's, an empty tuple reduces *no* dimension (as in
    PyTorch), so ``x.all(())`` is the elementwise truth of ``x``."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return ()
    return _dims_arg(input, dim)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element (over ``dim``) is nonzero; returns bool (uint8 for uint8).

    ``dim=()`` reduces nothing: the result is each element's truth.
    """
    return compute_reduce("all", input, _logical_dims(input, dim), keepdim)


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some element (over ``dim``) is nonzero; returns bool (uint8 for uint8).

    ``dim=()`` reduces nothing: the result is each element's truth.
    """
    return compute_reduce("any", input, _logical_dims(input, dim), keepdim)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of nonzero elements (over ``dim``)."""
    return sum((input != 0), dim)


# ------------------------------------------------------------------ softmax


class Softmax(Function):
    backward_name = "SoftmaxBackward0"
    log = False  # LogSoftmax runs the same fused kernel with log=True

    @classmethod
    def forward(cls, ctx, a, dim):
        ctx.dim = dim
        out = empty_tensor(a.shape, a.dtype, device=a.device)
        kernels.softmax(out._strided(), a._strided(), dim, cls.log)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        # Jacobian-vector product of softmax: y * (g - sum(g * y)).
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None


class LogSoftmax(Softmax):
    backward_name = "LogSoftmaxBackward0"
    log = True

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        # d log_softmax: g - softmax * sum(g), and softmax = exp(y).
        return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None


def _softmax_input(input: Tensor, dim, dtype, name: str = "softmax") -> tuple[Tensor, int]:
    if dim is None:
        raise TypeError("softmax(): argument 'dim' must be int, not NoneType (pass dim=...)")
    dim = normalize_dim(dim, input.dim())
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point and input.numel() > 0:
        # PyTorch names the kernel it would have run: the last-dim one or the general one.
        kernel = f"{name}_lastdim_kernel_impl" if dim >= input.dim() - 1 else f"{name}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.title}'")
    return input, dim


def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``: each slice becomes a distribution."""
    input, dim = _softmax_input(input, dim, dtype)
    if not input.dtype.is_floating_point:  # empty: nothing to compute, as in PyTorch
        return input.clone()
    if input.dim() == 0:
        return input * 0 + 1
    return Softmax.apply(input, dim)


def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed in one stable step."""
    input, dim = _softmax_input(input, dim, dtype, "log_softmax")
    if not input.dtype.is_floating_point:  # empty: nothing to compute, as in PyTorch
        return input.clone()
    if input.dim() == 0:
        return input * 0
    return LogSoftmax.apply(input, dim)


def _minmax_repr(self) -> str:
    return f"torch.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"


#: ``(min, max)``, printed like PyTorch's ``torch.return_types.aminmax``.
_MinMax = type(
    "aminmax",
    (namedtuple("aminmax", ["min", "max"]),),
    {"__slots__": (), "__repr__": _minmax_repr},
)


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


def std_mean(input: Tensor, dim=None, *, correction=1, keepdim: bool = False):
    """``(std, mean)`` over ``dim`` (all dims if None), in one call."""
    return (
        input.std(dim, correction=correction, keepdim=keepdim),
        input.mean(dim, keepdim=keepdim) if dim is not None else input.mean(),
    )


def var_mean(input: Tensor, dim=None, *, correction=1, keepdim: bool = False):
    """``(var, mean)`` over ``dim`` (all dims if None), in one call."""
    return (
        input.var(dim, correction=correction, keepdim=keepdim),
        input.mean(dim, keepdim=keepdim) if dim is not None else input.mean(),
    )


def named_result(name: str, fields: list[str]):
    """A named tuple printed as PyTorch's ``torch.return_types.<name>``."""
    return type(name, (_ValuesIndices, namedtuple(name, fields)), {"__slots__": ()})
