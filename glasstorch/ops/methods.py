"""The Tensor's methods and operators, as one table.

Each line attaches a function from the ``ops`` modules to :class:`Tensor`, so
``x.exp()`` and ``torch.exp(x)`` are the same code. In-place variants
(``add_``, ``exp_``, ...) wrap the out-of-place function with
:func:`~glasstorch.ops.inplace.apply_inplace`.
"""

from __future__ import annotations

import functools

from glasstorch import _dtype
from glasstorch import linalg as glasstorch_linalg
from glasstorch._shape import normalize_dim
from glasstorch.autograd.function import Function
from glasstorch.ops import (
    creation,
    indexing,
    inplace,
    linalg,
    pointwise,
    reduction,
    sampling,
    scan,
    shape,
    sorting,
    sparse,
    views,
)
from glasstorch.tensor import Tensor

#: In-place indexed writes whose first argument is a dim.
_DIM_FIRST = {"scatter", "scatter_add", "index_add", "index_copy", "index_fill"}


#: In-place arithmetic written straight into the tensor by pointwise.binary_inplace
#: (with one operand, and add/sub's alpha), and the kernel op each runs.
_DIRECT_BINARY = {
    "add_": "add",
    "sub_": "sub",
    "subtract_": "sub",
    "mul_": "mul",
    "multiply_": "mul",
    "div_": "div",
    "divide_": "div",
    "true_divide_": "div",
    "__iadd__": "add",
    "__isub__": "sub",
    "__imul__": "mul",
    "__itruediv__": "div",
}


def _inplace(function, name: str):
    """``x.name_(*args)``: ``function(x, *args)`` written into x.

    Arithmetic, clamps and unary math write their result into x directly;
    the other ops compute it into a new tensor and copy it back
    (:mod:`glasstorch.ops.inplace`).
    """
    dim_first = name[:-1] in _DIM_FIRST

    direct_op = _DIRECT_BINARY.get(name)
    alpha_ok = direct_op in ("add", "sub")
    unary = getattr(function, "function", None)  # the Function of a unary op

    @functools.wraps(function)
    def method(self, *args, **kwargs):
        if (
            direct_op is not None
            and len(args) == 1
            and (not kwargs or (alpha_ok and kwargs.keys() == {"alpha"}))
        ):
            other = args[0]
            return pointwise.binary_inplace(
                direct_op, self, other, lambda: function(self, other, **kwargs), **kwargs
            )
        if unary is not None and not args and not kwargs:
            return pointwise.unary_inplace(unary, self, lambda: function(self))
        dim = (args[0] if args else kwargs.get("dim")) if dim_first else None
        if type(dim) is int:  # PyTorch checks the dim before the memory it is about to write
            normalize_dim(dim, self.dim())
        inputs = (*args, *kwargs.values())
        return inplace.apply_inplace(self, lambda: function(self, *args, **kwargs), inputs)

    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
    return method


def _reflected(function):
    """``number op tensor``: call ``function(number, tensor)``."""

    def method(self, other):
        return function(other, self)

    return method


# ------------------------------------------------------------------ operators
Tensor.__add__ = pointwise.add
Tensor.__radd__ = pointwise.add  # addition commutes; the tensor goes first
Tensor.__sub__ = pointwise.sub
Tensor.__rsub__ = _reflected(pointwise.sub)
Tensor.__mul__ = pointwise.mul
Tensor.__rmul__ = pointwise.mul
Tensor.__truediv__ = pointwise.div
Tensor.__rtruediv__ = _reflected(pointwise.div)
Tensor.__floordiv__ = pointwise.floor_divide
Tensor.__rfloordiv__ = _reflected(pointwise.floor_divide)
Tensor.__mod__ = pointwise.remainder
Tensor.__rmod__ = _reflected(pointwise.remainder)
Tensor.__pow__ = pointwise.pow
Tensor.__rpow__ = _reflected(pointwise.pow)
Tensor.__matmul__ = linalg.matmul
Tensor.__rmatmul__ = _reflected(linalg.matmul)
Tensor.__neg__ = pointwise.neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = pointwise.abs
Tensor.__invert__ = pointwise.bitwise_not
Tensor.__and__ = pointwise.bitwise_and
Tensor.__rand__ = pointwise.bitwise_and
Tensor.__or__ = pointwise.bitwise_or
Tensor.__ror__ = pointwise.bitwise_or
Tensor.__xor__ = pointwise.bitwise_xor
Tensor.__rxor__ = pointwise.bitwise_xor
Tensor.__eq__ = pointwise.eq
Tensor.__ne__ = pointwise.ne
Tensor.__lt__ = pointwise.lt
Tensor.__le__ = pointwise.le
Tensor.__gt__ = pointwise.gt
Tensor.__ge__ = pointwise.ge
Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem

for _symbol, _function in [
    ("add", pointwise.add),
    ("sub", pointwise.sub),
    ("mul", pointwise.mul),
    ("truediv", pointwise.div),
    ("floordiv", pointwise.floor_divide),
    ("mod", pointwise.remainder),
    ("pow", pointwise.pow),
    ("and", pointwise.bitwise_and),
    ("or", pointwise.bitwise_or),
    ("xor", pointwise.bitwise_xor),
]:
    setattr(Tensor, f"__i{_symbol}__", _inplace(_function, f"__i{_symbol}__"))

# ------------------------------------------------------------ named methods
_METHODS = {
    # pointwise
    "add": pointwise.add,
    "sub": pointwise.sub,
    "subtract": pointwise.sub,
    "mul": pointwise.mul,
    "multiply": pointwise.mul,
    "div": pointwise.div,
    "divide": pointwise.div,
    "true_divide": pointwise.div,
    "floor_divide": pointwise.floor_divide,
    "remainder": pointwise.remainder,
    "pow": pointwise.pow,
    "neg": pointwise.neg,
    "negative": pointwise.neg,
    "abs": pointwise.abs,
    "exp": pointwise.exp,
    "log": pointwise.log,
    "log1p": pointwise.log1p,
    "expm1": pointwise.expm1,
    "sqrt": pointwise.sqrt,
    "rsqrt": pointwise.rsqrt,
    "reciprocal": pointwise.reciprocal,
    "sin": pointwise.sin,
    "cos": pointwise.cos,
    "tanh": pointwise.tanh,
    "sigmoid": pointwise.sigmoid,
    "relu": pointwise.relu,
    "sign": pointwise.sign,
    "floor": pointwise.floor,
    "ceil": pointwise.ceil,
    "round": pointwise.round,
    "trunc": pointwise.trunc,
    "square": pointwise.square,
    "clamp": pointwise.clamp,
    "clip": pointwise.clamp,
    "clamp_min": pointwise.clamp_min,
    "clamp_max": pointwise.clamp_max,
    "maximum": pointwise.maximum,
    "minimum": pointwise.minimum,
    "eq": pointwise.eq,
    "ne": pointwise.ne,
    "lt": pointwise.lt,
    "le": pointwise.le,
    "gt": pointwise.gt,
    "ge": pointwise.ge,
    "greater": pointwise.gt,
    "less": pointwise.lt,
    "logical_and": pointwise.logical_and,
    "logical_or": pointwise.logical_or,
    "logical_xor": pointwise.logical_xor,
    "logical_not": pointwise.logical_not,
    "bitwise_and": pointwise.bitwise_and,
    "bitwise_or": pointwise.bitwise_or,
    "bitwise_xor": pointwise.bitwise_xor,
    "bitwise_not": pointwise.bitwise_not,
    "isnan": pointwise.isnan,
    "where": lambda self, condition, other: pointwise.where(condition, self, other),
    "masked_fill": pointwise.masked_fill,
    "clone": pointwise.clone,
    "equal": pointwise.equal,
    "allclose": pointwise.allclose,
    "isclose": pointwise.isclose,
    "erf": pointwise.erf,
    "greater_equal": pointwise.greater_equal,
    "less_equal": pointwise.less_equal,
    "not_equal": pointwise.not_equal,
    "isinf": pointwise.isinf,
    "isfinite": pointwise.isfinite,
    "nan_to_num": pointwise.nan_to_num,
    "log2": pointwise.log2,
    "log10": pointwise.log10,
    "frac": pointwise.frac,
    "sgn": pointwise.sgn,
    "signbit": pointwise.signbit,
    "deg2rad": pointwise.deg2rad,
    "rad2deg": pointwise.rad2deg,
    "logit": pointwise.logit,
    "atan2": pointwise.atan2,
    "arctan2": pointwise.atan2,
    "logaddexp": pointwise.logaddexp,
    "hypot": pointwise.hypot,
    "copysign": pointwise.copysign,
    "fmod": pointwise.fmod,
    "xlogy": pointwise.xlogy,
    "heaviside": pointwise.heaviside,
    "addcmul": pointwise.addcmul,
    "addcdiv": pointwise.addcdiv,
    "lerp": pointwise.lerp,
    # reductions
    "sum": reduction.sum,
    "mean": reduction.mean,
    "prod": reduction.prod,
    "max": reduction.max,
    "min": reduction.min,
    "amax": reduction.amax,
    "amin": reduction.amin,
    "argmax": reduction.argmax,
    "argmin": reduction.argmin,
    "var": reduction.var,
    "std": reduction.std,
    "logsumexp": reduction.logsumexp,
    "all": reduction.all,
    "any": reduction.any,
    "softmax": reduction.softmax,
    "log_softmax": reduction.log_softmax,
    "count_nonzero": reduction.count_nonzero,
    "aminmax": reduction.aminmax,
    "nansum": reduction.nansum,
    "nanmean": reduction.nanmean,
    "norm": glasstorch_linalg.tensor_norm,
    # scans
    "cumsum": scan.cumsum,
    "cumprod": scan.cumprod,
    "cummax": scan.cummax,
    "cummin": scan.cummin,
    "logcumsumexp": scan.logcumsumexp,
    "diff": scan.diff,
    # views and joins
    "view": views.view,
    "view_as": views.view_as,
    "reshape": views.reshape,
    "reshape_as": views.reshape_as,
    "permute": views.permute,
    "transpose": views.transpose,
    "swapaxes": views.transpose,
    "swapdims": views.transpose,
    "t": views.t,
    "expand": views.expand,
    "expand_as": views.expand_as,
    "broadcast_to": views.broadcast_to,
    "squeeze": views.squeeze,
    "unsqueeze": views.unsqueeze,
    "flatten": views.flatten,
    "ravel": views.ravel,
    "unflatten": views.unflatten,
    "narrow": views.narrow,
    "select": views.select,
    "unbind": views.unbind,
    "split": views.split_method,
    "chunk": views.chunk,
    "contiguous": views.contiguous,
    "as_strided": views.as_strided,
    "sum_to_size": views.sum_to_size,
    "_slice": views.slice_dim,
    # other shape ops
    "movedim": shape.movedim,
    "moveaxis": shape.movedim,
    "unfold": shape.unfold,
    "tensor_split": shape.tensor_split,
    "rot90": shape.rot90,
    "fliplr": shape.fliplr,
    "flipud": shape.flipud,
    "tril": shape.tril,
    "triu": shape.triu,
    "diagonal": shape.diagonal,
    "diag": shape.diag,
    "diag_embed": shape.diag_embed,
    "repeat": shape.repeat,
    "tile": shape.tile,
    "roll": shape.roll,
    "repeat_interleave": shape.repeat_interleave,
    # indexing
    "gather": indexing.gather,
    "scatter": indexing.scatter,
    "scatter_add": indexing.scatter_add,
    "index_select": indexing.index_select,
    "index_add": indexing.index_add,
    "index_copy": indexing.index_copy,
    "index_put": indexing.index_put,
    "nonzero": indexing.nonzero,
    "argwhere": indexing.argwhere,
    "flip": indexing.flip,
    "take": indexing.take,
    "masked_select": indexing.masked_select,
    "index_fill": indexing.index_fill,
    "take_along_dim": indexing.take_along_dim,
    # order statistics
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "msort": sorting.msort,
    "topk": sorting.topk,
    "median": sorting.median,
    "nanmedian": sorting.nanmedian,
    "quantile": sorting.quantile,
    "nanquantile": sorting.nanquantile,
    "unique": sorting.unique,
    "unique_consecutive": sorting.unique_consecutive,
    "bincount": sorting.bincount,
    "histc": sorting.histc,
    # sampling
    "multinomial": sampling.multinomial,
    "bernoulli": sampling.bernoulli,
    # linear algebra
    "matmul": linalg.matmul,
    "mm": linalg.mm,
    "bmm": linalg.bmm,
    "mv": linalg.mv,
    "dot": linalg.dot,
    "addmm": linalg.addmm,
    "baddbmm": linalg.baddbmm,
    "addmv": linalg.addmv,
    "addbmm": linalg.addbmm,
    "vdot": linalg.vdot,
    "inner": linalg.inner,
    "outer": linalg.outer,
    "ger": linalg.outer,
    "trace": linalg.trace,
    "kron": linalg.kron,
    "cross": linalg.cross,
    "dist": glasstorch_linalg.dist,
    "cov": linalg.cov,
    "corrcoef": linalg.corrcoef,
    # in place, with no out-of-place twin
    "copy_": inplace.copy_,
    "fill_": inplace.fill_,
    "zero_": inplace.zero_,
    "resize_": inplace.resize_,
    "bernoulli_": sampling.bernoulli_,
    "random_": sampling.random_,
    "exponential_": sampling.exponential_,
    "cauchy_": sampling.cauchy_,
    "log_normal_": sampling.log_normal_,
    "geometric_": sampling.geometric_,
    "index_fill_": indexing.index_fill_,
    "fill_diagonal_": indexing.fill_diagonal_,
    # layouts (a sparse COO tensor has its own versions, glasstorch/ops/sparse.py)
    "to_sparse": sparse.to_sparse,
    "to_dense": sparse.to_dense,
}
for _name, _function in _METHODS.items():
    setattr(Tensor, _name, _function)

_INPLACE = [
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "neg",
    "abs",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "clamp",
    "clamp_min",
    "clamp_max",
    "square",
    "masked_fill",
    "remainder",
    "floor_divide",
    "scatter",
    "scatter_add",
    "index_add",
    "index_copy",
    "index_put",
    "logical_not",
    "logical_and",
    "logical_or",
    "bitwise_not",
    "true_divide",
    "subtract",
    "multiply",
    "divide",
    "clip",
]
for _name in _INPLACE:
    setattr(Tensor, _name + "_", _inplace(_METHODS[_name], _name + "_"))


def _clamp_min_(self, min):  # noqa: A002 - PyTorch's name
    """In-place version of :meth:`clamp_min`."""
    return pointwise.clamp_min_(self, min)


def _clamp_max_(self, max):  # noqa: A002 - PyTorch's name
    """In-place version of :meth:`clamp_max`."""
    return pointwise.clamp_max_(self, max)


# The clamps write into the tensor directly (pointwise.clamp_).
Tensor.clamp_ = Tensor.clip_ = pointwise.clamp_
Tensor.clamp_min_, Tensor.clamp_max_ = _clamp_min_, _clamp_max_

# These write into the tensor directly too (see pointwise's in-place binary ops).
Tensor.pow_ = Tensor.__ipow__ = pointwise.pow_
Tensor.remainder_ = Tensor.__imod__ = pointwise.remainder_
Tensor.floor_divide_ = Tensor.__ifloordiv__ = pointwise.floor_divide_
Tensor.square_ = pointwise.square_
Tensor.round_ = pointwise.round_
Tensor.masked_fill_ = pointwise.masked_fill_
Tensor.scatter_, Tensor.scatter_add_ = indexing.scatter_, indexing.scatter_add_
Tensor.index_add_, Tensor.index_copy_ = indexing.index_add_, indexing.index_copy_
Tensor.index_put_ = indexing.index_put_
# The composed elementwise ops write their values in place piece by piece
# (see pointwise.in_place.write_composed); tril_/triu_ fill the other triangle.
_COMPOSED_INPLACE = {
    "addcdiv_": pointwise.addcdiv_,
    "addcmul_": pointwise.addcmul_,
    "arctan2_": pointwise.arctan2_,
    "atan2_": pointwise.atan2_,
    "copysign_": pointwise.copysign_,
    "deg2rad_": pointwise.deg2rad_,
    "fmod_": pointwise.fmod_,
    "frac_": pointwise.frac_,
    "heaviside_": pointwise.heaviside_,
    "hypot_": pointwise.hypot_,
    "lerp_": pointwise.lerp_,
    "log10_": pointwise.log10_,
    "log2_": pointwise.log2_,
    "logit_": pointwise.logit_,
    "nan_to_num_": pointwise.nan_to_num_,
    "rad2deg_": pointwise.rad2deg_,
    "sgn_": pointwise.sgn_,
    "xlogy_": pointwise.xlogy_,
    "tril_": shape.tril_,
    "triu_": shape.triu_,
}
for _name, _function in _COMPOSED_INPLACE.items():
    setattr(Tensor, _name, _function)


# The random kernels write into ``self`` itself, element i of its row-major
# order from the stream's i-th number, so a tensor of any layout gets the values
# a new contiguous one would.


def _uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None):
    """Fill with uniform numbers in ``[a, b)``."""
    return inplace.write_values(
        self, lambda: creation.fill_random(self, "uniform", generator, float(a), float(b))
    )


def _normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None):
    """Fill with normal numbers of ``mean`` and ``std``."""
    return inplace.write_values(
        self, lambda: creation.fill_random(self, "normal", generator, float(mean), float(std))
    )


Tensor.uniform_ = _uniform_
Tensor.normal_ = _normal_
Tensor.T = property(
    lambda self: views.permute(self, tuple(reversed(range(self.dim())))),
    doc="All dimensions reversed (the transpose of a matrix).",
)
Tensor.mT = property(views.mT, doc="The last two dimensions transposed.")
Tensor.is_nonzero = lambda self: bool(self)


# --------------------------------------- in-place comparison, logical and bitwise ops
# An in-place op keeps ``self``'s dtype: ``x.ge_(y)`` writes 1.0/0.0 into a
# float ``x``, and a result that cannot be cast back (``int.bitwise_and_(float)``)
# raises as every in-place op does.


def _invert(self) -> Tensor:
    """``~self``: bitwise not of an integer tensor, logical not of a bool tensor."""
    if self.dtype.is_floating_point:
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        )
    return pointwise.bitwise_not(self)


Tensor.__invert__ = _invert


def _check_result_castable(self: Tensor, other) -> None:
    """Refuse ``self.op_(other)`` whose result type cannot be written into ``self``.

    Checked before computing, as PyTorch does, so ``int.bitwise_and_(1.5)``
    names the cast rather than the float bitwise op.
    """
    result = _dtype.result_type(self, other)
    if not _dtype.can_cast(result, self.dtype):
        raise RuntimeError(
            f"result type {result.title} can't be cast to the desired output type "
            f"{self.dtype.title}"
        )


def _inplace_binary(function, name: str):
    """``x.name_(other)`` with the result type checked first, written into x."""
    op = name.strip("_").removeprefix("i")  # bitwise_and_ and __iand__ alike
    op = op if op.startswith("bitwise_") else "bitwise_" + op

    def method(self, other):
        _check_result_castable(self, other)
        return pointwise.bitwise_inplace(op, self, other)

    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
    return method


for _name, _function in {
    "erf_": pointwise.erf,
    "negative_": pointwise.neg,
    "logical_xor_": pointwise.logical_xor,  # a bool result casts to every dtype
}.items():
    setattr(Tensor, _name, _inplace(_function, _name))
for _name, _function in {
    "bitwise_and_": pointwise.bitwise_and,
    "bitwise_or_": pointwise.bitwise_or,
    "bitwise_xor_": pointwise.bitwise_xor,
    "__iand__": pointwise.bitwise_and,
    "__ior__": pointwise.bitwise_or,
    "__ixor__": pointwise.bitwise_xor,
}.items():
    setattr(Tensor, _name, _inplace_binary(_function, _name))


def _bitwise_not_(self) -> Tensor:
    """In-place version of :meth:`bitwise_not`."""
    if self.dtype.is_floating_point:
        pointwise.bitwise_not(self)  # raises PyTorch's error
    return pointwise.kernel_inplace("bitwise_not", self)


def _logical_not_(self) -> Tensor:
    """In-place version of :meth:`logical_not`: 1 or 0 in ``self``'s dtype."""
    return pointwise.kernel_inplace("logical_not", self)


Tensor.bitwise_not_, Tensor.logical_not_ = _bitwise_not_, _logical_not_


def _logical_inplace(function, name: str):
    """``x.logical_and_(other)`` and its kind: ``other`` must be a tensor.

    PyTorch checks the argument's type before anything else (even before it
    refuses to write into an expanded tensor), so this method does too.
    """

    def method(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(
                f"{name}(): argument 'other' (position 1) must be Tensor, "
                f"not {type(other).__name__}"
            )
        return pointwise.kernel_inplace(name[:-1], self, other)

    method.__name__ = name
    method.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
    return method


for _name in ("logical_and", "logical_or", "logical_xor"):
    setattr(Tensor, _name + "_", _logical_inplace(_METHODS[_name], _name + "_"))


def _comparison_function(name: str, compare, overload: int):
    """The Function behind ``x.<name>_(other)``: compare, cast to x's dtype, zero gradient.

    A comparison is flat almost everywhere, so PyTorch gives the overwritten
    tensor a node (``GeBackward0`` ...) whose gradient is zero for both operands,
    rather than leaving the tensor's old history in place.
    """

    def forward(cls, ctx, a, other):
        ctx.other_shape = tuple(other.shape) if isinstance(other, Tensor) else None
        target = inplace.destination(cls, ctx, a)
        if target is None:
            return compare(a, other).to(a.dtype)
        return pointwise.compute_binary(name, a, other, out=target)

    def backward(ctx, grad):
        if ctx.other_shape is None:
            return creation.zeros_like(grad), None
        other = creation.zeros(ctx.other_shape, dtype=grad.dtype, device=grad.device)
        return creation.zeros_like(grad), other

    return type(
        name.capitalize(),
        (Function,),
        {
            "backward_name": f"{name.capitalize()}Backward{overload}",
            "forward": classmethod(forward),
            "backward": staticmethod(backward),
            "__doc__": f"In-place ``{name}``: the comparison's values in the input's dtype.",
        },
    )


def _inplace_comparison(name: str, compare):
    """``x.<name>_(other)``: ``x[...] = compare(x, other)`` in x's dtype (1 or 0)."""
    # PyTorch's nodes: GeBackward0 for a number, GeBackward1 for a tensor.
    functions = [_comparison_function(name, compare, overload) for overload in (0, 1)]
    variants = [inplace.variant_of(function) for function in functions]

    def method(self, other):
        function = functions[isinstance(other, Tensor)]
        variant = variants[isinstance(other, Tensor)]
        if not inplace.broadcasts_into(self, other):  # raises, or moves a CPU scalar
            return inplace.apply_inplace(self, lambda: function.apply(self, other), (other,))
        return inplace.write_inplace(self, lambda: variant.apply(self, other), None, (other,))

    method.__name__ = f"{name}_"
    method.__doc__ = f"In-place version of :meth:`{name}`: the result keeps ``self``'s dtype."
    return method


for _name, _function in [
    ("eq", pointwise.eq),
    ("ne", pointwise.ne),
    ("lt", pointwise.lt),
    ("le", pointwise.le),
    ("gt", pointwise.gt),
    ("ge", pointwise.ge),
]:
    setattr(Tensor, _name + "_", _inplace_comparison(_name, _function))
for _alias, _name in [
    ("greater_", "gt_"),
    ("greater_equal_", "ge_"),
    ("less_", "lt_"),
    ("less_equal_", "le_"),
    ("not_equal_", "ne_"),
]:
    setattr(Tensor, _alias, getattr(Tensor, _name))


def _running_inplace(function, name: str):
    """``x.cumsum_``/``x.cumprod_``: the running op computed in x's own dtype.

    As in PyTorch, a ``dtype`` other than x's is an error, and integers wrap
    around in x's dtype rather than accumulating in int64.
    """

    def method(self, dim: int, *, dtype=None) -> Tensor:
        normalize_dim(dim, self.dim())  # a bad dim is named before the dtype
        scan.check_inplace_dtype(self, dtype)
        scan.check_running_dtype(self, self.dtype, name)
        return inplace.apply_inplace(self, lambda: function(self, dim, dtype=self.dtype))

    method.__name__ = name + "_"
    method.__doc__ = f"In-place version of :meth:`{name}`."
    return method


Tensor.cumsum_ = _running_inplace(scan.cumsum, "cumsum")
Tensor.cumprod_ = _running_inplace(scan.cumprod, "cumprod")


# ----------------------------------------------------- new_* constructors
# ``x.new_zeros(size)`` and friends make a fresh tensor with ``x``'s dtype and
# device unless told otherwise: code that must not care which dtype or device
# its inputs use (an RNN's initial state, from ``next(model.parameters())``)
# builds its buffers this way.


def _like_self(self: Tensor, dtype, device) -> dict:
    return {"dtype": self.dtype if dtype is None else dtype, "device": device or self.device}


def _size_of(size: tuple) -> tuple:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of ``size``, with this tensor's dtype and device by default."""
    return creation.zeros(
        _size_of(size), **_like_self(self, dtype, device), requires_grad=requires_grad
    )


def _new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of ``size``, with this tensor's dtype and device by default."""
    return creation.ones(
        _size_of(size), **_like_self(self, dtype, device), requires_grad=requires_grad
    )


def _new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of ``size``, with this tensor's dtype and device by default."""
    return creation.empty(
        _size_of(size), **_like_self(self, dtype, device), requires_grad=requires_grad
    )


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype by default."""
    return creation.full(
        tuple(size), fill_value, **_like_self(self, dtype, device), requires_grad=requires_grad
    )


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of ``data`` as a new leaf tensor, with this tensor's dtype and device by default."""
    if isinstance(data, Tensor):
        import warnings

        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than "
            "tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        data = data.detach().clone()
    return creation.tensor(data, **_like_self(self, dtype, device), requires_grad=requires_grad)


Tensor.new_zeros = _new_zeros
Tensor.new_ones = _new_ones
Tensor.new_empty = _new_empty
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor


# ------------------------------------------------------ size, type and transposes
def _nbytes(self: Tensor) -> int:
    """Bytes the elements take: ``numel() * element_size()``."""
    return self.numel() * self.dtype.itemsize


def _conjugate_transpose(self: Tensor) -> Tensor:
    """``x.H``: the (conjugate) transpose of a matrix; real tensors have no conjugate."""
    if self.dim() not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
        )
    return self.t() if self.dim() == 2 else self


_LEGACY_NAMES = {f"torch.{d.legacy_name}": d for d in _dtype.ALL_DTYPES}


def _with_legacy_type_names(type_method):
    """``x.type("torch.FloatTensor")``: a legacy type name is a dtype too."""

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):  # noqa: A001
        if isinstance(dtype, str):
            if dtype not in _LEGACY_NAMES:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = _LEGACY_NAMES[dtype]
        return type_method(self, dtype)

    type.__doc__ = type_method.__doc__
    return type


Tensor.nbytes = property(_nbytes, doc=_nbytes.__doc__)
Tensor.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per element.")
Tensor.H = property(_conjugate_transpose, doc=_conjugate_transpose.__doc__)
Tensor.mH = property(
    lambda self: self.transpose(-2, -1), doc="The last two dimensions transposed (conjugated)."
)
Tensor.type = _with_legacy_type_names(Tensor.type)
