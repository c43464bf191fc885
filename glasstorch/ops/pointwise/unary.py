"""Elementwise operations of one input: neg, abs, exp, log, sqrt, sin, tanh,
sigmoid, relu, sign, floor/ceil/round/trunc, log2/log10, frac, sgn, signbit,
deg2rad/rad2deg, logit, nan_to_num, and their in-place forms.

The ops with a kernel of their own are made by ``_unary_function`` from a
kernel name and a derivative; the others are compositions of existing ops.
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch._dtype import finfo
from glasstorch.autograd.function import Function
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    cast,
    default_float,
    floating,
)
from glasstorch.ops.creation import zeros, zeros_like
from glasstorch.ops.inplace import (
    apply_inplace,
    destination,
    write_inplace,
)
from glasstorch.ops.pointwise.comparison import isnan
from glasstorch.ops.pointwise.compute import (
    _float_dtype,
    compute_binary,
    compute_unary,
    float_result_dtype,
)
from glasstorch.ops.pointwise.in_place import unary_inplace, write_composed
from glasstorch.ops.pointwise.selection import where
from glasstorch.tensor import Tensor


def _unary_function(name: str, op: str, derivative, *, floating: bool, save: str = "input"):
    """Build the Function for a unary op from its kernel name and derivative.

    ``derivative(grad, x, y)`` gets the input ``x`` and output ``y`` (whichever
    ``save`` asks for is kept) and returns the input's gradient.
    """

    def forward(cls, ctx, a):
        if save == "input":
            ctx.save_for_backward(a)  # before an in-place variant overwrites a
        # save == "none": the derivative needs neither (so neg_ keeps no copy)
        out = compute_unary(
            op, a, _float_dtype(a) if floating else None, out=destination(cls, ctx, a)
        )
        if save == "output":
            ctx.save_for_backward(out)
        return out

    def backward(ctx, grad):
        if save == "none":
            return derivative(grad, None, None)
        (saved,) = ctx.saved_tensors
        x, y = (saved, None) if save == "input" else (None, saved)
        return derivative(grad, x, y)

    return type(
        name,
        (Function,),
        {
            "backward_name": f"{name}Backward0",
            "forward": classmethod(forward),
            "backward": staticmethod(backward),
            "floating": floating,
            "__doc__": f"``{op}`` with its derivative.",
        },
    )


Neg = _unary_function("Neg", "neg", lambda g, x, y: -g, floating=False, save="none")


Abs = _unary_function("Abs", "abs", lambda g, x, y: g * x.sign(), floating=False)


Exp = _unary_function("Exp", "exp", lambda g, x, y: g * y, floating=True, save="output")


Log = _unary_function("Log", "log", lambda g, x, y: g / x, floating=True)


Log1p = _unary_function("Log1P", "log1p", lambda g, x, y: g / (x + 1), floating=True)


Expm1 = _unary_function("Expm1", "expm1", lambda g, x, y: g * (y + 1), floating=True, save="output")


Sqrt = _unary_function("Sqrt", "sqrt", lambda g, x, y: g / (2 * y), floating=True, save="output")


Rsqrt = _unary_function(
    "Rsqrt", "rsqrt", lambda g, x, y: -0.5 * g * y * y * y, floating=True, save="output"
)


Reciprocal = _unary_function(
    "Reciprocal", "reciprocal", lambda g, x, y: -g * y * y, floating=True, save="output"
)


Sin = _unary_function("Sin", "sin", lambda g, x, y: g * x.cos(), floating=True)


Cos = _unary_function("Cos", "cos", lambda g, x, y: -g * x.sin(), floating=True)


Tanh = _unary_function(
    "Tanh", "tanh", lambda g, x, y: g * (1 - y * y), floating=True, save="output"
)


Sigmoid = _unary_function(
    "Sigmoid", "sigmoid", lambda g, x, y: g * y * (1 - y), floating=True, save="output"
)


Erf = _unary_function(
    "Erf",
    "erf",
    lambda g, x, y: g * (-(x * x)).exp() * (2.0 / math.sqrt(math.pi)),
    floating=True,
)


class ThresholdBackward(Function):
    """ReLU's gradient as one kernel: ``grad`` where ``output > 0``, else 0.

    A Function of its own (PyTorch's ``threshold_backward``), so that a
    gradient computed with ``create_graph`` can itself be differentiated: it
    is linear in ``grad``, with the same mask.
    """

    backward_name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, output):
        ctx.save_for_backward(output)
        return compute_binary("threshold_backward", grad, output)

    @staticmethod
    def backward(ctx, grad_grad):
        (output,) = ctx.saved_tensors
        # The mask is piecewise constant in ``output``: its derivative is zero,
        # given as zeros (not None), as PyTorch does, so relu's second
        # derivative is a tensor of zeros rather than missing.
        zeros = zeros_like(output) if ctx.needs_input_grad[1] else None
        return ThresholdBackward.apply(grad_grad, output), zeros


Relu = _unary_function(
    "Relu", "relu", lambda g, x, y: ThresholdBackward.apply(g, y), floating=False, save="output"
)


# Piecewise-constant functions have a zero derivative almost everywhere.
Sign = _unary_function("Sign", "sign", lambda g, x, y: g * 0, floating=False, save="none")


Floor = _unary_function("Floor", "floor", lambda g, x, y: g * 0, floating=False, save="none")


Ceil = _unary_function("Ceil", "ceil", lambda g, x, y: g * 0, floating=False, save="none")


Round = _unary_function("Round", "round", lambda g, x, y: g * 0, floating=False, save="none")


Trunc = _unary_function("Trunc", "trunc", lambda g, x, y: g * 0, floating=False, save="none")


#: Unary ops PyTorch refuses on bool tensors, and the error it raises.
_NOT_FOR_BOOL = {
    "Abs": NotImplementedError("\"abs_cpu\" not implemented for 'Bool'"),
    "Relu": RuntimeError("Boolean inputs not supported for relu"),
    "Floor": NotImplementedError("\"floor_vml_cpu\" not implemented for 'Bool'"),
    "Ceil": NotImplementedError("\"ceil_vml_cpu\" not implemented for 'Bool'"),
    "Round": NotImplementedError("\"round_vml_cpu\" not implemented for 'Bool'"),
    "Trunc": NotImplementedError("\"trunc_vml_cpu\" not implemented for 'Bool'"),
}


def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    """``input.round_(decimals=...)``: :func:`round` written into ``input``."""
    if decimals == 0:
        return unary_inplace(Round, input, lambda: round(input))
    if not input.dtype.is_floating_point:
        return apply_inplace(input, lambda: round(input, decimals=decimals))
    return write_inplace(
        input, lambda: inplace.variant_of(RoundDecimals).apply(input, decimals), input.dtype
    )


def _public_unary(function, doc: str):
    def op(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{function.__name__.lower()}(): argument 'input' must be Tensor")
        if input.dtype is _dtype.bool_ and function.__name__ in _NOT_FOR_BOOL:
            error = _NOT_FOR_BOOL[function.__name__]
            raise type(error)(*error.args)
        return function.apply(input)

    op.__name__ = function.__name__.lower()
    op.__doc__ = doc
    op.function = function  # for the in-place method (see unary_inplace)
    return op


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input.dtype is _dtype.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return Neg.apply(input)


negative = neg


neg.function = Neg  # for the in-place method (see unary_inplace)


abs = _public_unary(
    Abs,  # noqa: A001 - PyTorch's name
    "Absolute value, elementwise.",
)


exp = _public_unary(Exp, "``e ** input``, elementwise.")


log = _public_unary(Log, "Natural logarithm, elementwise (``-inf`` at 0, NaN below).")


log1p = _public_unary(Log1p, "``log(1 + input)``, accurate for small inputs.")


expm1 = _public_unary(Expm1, "``exp(input) - 1``, accurate for small inputs.")


sqrt = _public_unary(Sqrt, "Square root, elementwise.")


rsqrt = _public_unary(Rsqrt, "``1 / sqrt(input)``, elementwise.")


reciprocal = _public_unary(Reciprocal, "``1 / input``, elementwise.")


sin = _public_unary(Sin, "Sine, elementwise.")


cos = _public_unary(Cos, "Cosine, elementwise.")


tanh = _public_unary(Tanh, "Hyperbolic tangent, elementwise.")


sigmoid = _public_unary(Sigmoid, "Logistic sigmoid ``1 / (1 + exp(-input))``.")


erf = _public_unary(Erf, "The error function ``2/sqrt(pi) * integral from 0 to x of exp(-t^2)``.")


relu = _public_unary(Relu, "``max(input, 0)``, elementwise.")


sign = _public_unary(Sign, "-1, 0 or 1 by the sign of each element.")


floor = _public_unary(Floor, "Round down, elementwise.")


ceil = _public_unary(Ceil, "Round up, elementwise.")


trunc = _public_unary(Trunc, "Round toward zero, elementwise.")


_round = _public_unary(Round, "Round half to even, elementwise.")


class RoundDecimals(Function):
    """Round to ``decimals`` places: ``round(a * 10**decimals) / 10**decimals``."""

    backward_name = "RoundBackward1"

    @classmethod
    def forward(cls, ctx, a, decimals):
        scale = 10.0**decimals
        out = compute_binary("mul", a, scale, out=destination(cls, ctx, a))
        compute_unary("round", out, out=out)  # each step reads an element, then writes it
        return compute_binary("div", out, scale, out=out)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, None


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round half to even; with ``decimals``, to that many decimal places."""
    if decimals == 0:
        return _round(input)
    if not input.dtype.is_floating_point:
        return _round(input * 10.0**decimals) / 10.0**decimals
    return RoundDecimals.apply(input, decimals)


def frac(input: Tensor) -> Tensor:
    """The fractional part, ``input - trunc(input)`` (its sign is the input's); floats only."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"frac_cpu\" not implemented for '{input.dtype.title}'")
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


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians: ``input * pi / 180``."""
    return floating(input) * (math.pi / 180)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees: ``input * 180 / pi``."""
    return floating(input) * (180 / math.pi)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``."""
    p = floating(input)
    if eps is not None:
        p = p.clamp(eps, 1 - eps)
    return (p / (1 - p)).log()


def _log_base_function(name: str, base: float):
    """A Function for ``log(x) / log(base)``, computed in float64 and rounded once."""
    scale = math.log(base)

    def forward(ctx, a):
        out_dtype = a.dtype if a.dtype.is_floating_point else default_float()
        wide = compute_unary("log", a, _dtype.float64)
        out = cast(compute_binary("div", wide, scale), out_dtype)
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


def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """``input`` with NaN replaced by ``nan``, ``+inf`` by ``posinf`` and ``-inf`` by ``neginf``.

    Args:
        input: any tensor (an integer tensor comes back as a copy).
        nan: the value for NaN. Default: 0.
        posinf: the value for ``+inf``. Default: the dtype's largest finite number.
        neginf: the value for ``-inf``. Default: the dtype's most negative finite number.

    Example::

        >>> torch.nan_to_num(torch.tensor([float("nan"), float("inf"), 1.0]), posinf=9.0)
        tensor([0., 9., 1.])
    """
    if not input.dtype.is_floating_point:
        return input.clone()
    info = finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(input), nan, input)
    out = where(input == float("inf"), posinf, out)
    return where(input == float("-inf"), neginf, out)


_SGN_ = inplace.elementwise_function("SgnBackward0", sgn, lambda g, x, y: (g * 0,))


_FRAC_ = inplace.elementwise_function("FracBackward0", frac, lambda g, x, y: (g,))


def sgn_(input: Tensor) -> Tensor:
    """In-place :func:`sgn`."""
    if input.dtype is _dtype.bool_:
        return inplace.apply_inplace(input, lambda: sgn(input))
    return write_composed(_SGN_, input, input.dtype)


def frac_(input: Tensor) -> Tensor:
    """In-place :func:`frac`: floats only."""
    if not input.dtype.is_floating_point:
        frac(input)  # raises PyTorch's error
    return write_composed(_FRAC_, input, input.dtype)


def _logit_derivative(g, x, y, eps):
    value = g / (x * (1 - x))
    if eps is None:
        return where((x < 0) | (x > 1), math.nan, value), None
    return where((x < eps) | (x > 1 - eps), 0.0, value), None


_LOGIT_ = inplace.elementwise_function("LogitBackward0", logit, _logit_derivative, keep_self=True)


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place :func:`logit`."""
    return write_composed(_LOGIT_, input, float_result_dtype(input), eps)


_DEG2RAD_ = inplace.elementwise_function(
    "Deg2RadBackward0", deg2rad, lambda g, x, y: (g * (math.pi / 180),)
)


_RAD2DEG_ = inplace.elementwise_function(
    "Rad2DegBackward0", rad2deg, lambda g, x, y: (g * (180 / math.pi),)
)


def deg2rad_(input: Tensor) -> Tensor:
    """In-place :func:`deg2rad`."""
    return write_composed(_DEG2RAD_, input, float_result_dtype(input))


def rad2deg_(input: Tensor) -> Tensor:
    """In-place :func:`rad2deg`."""
    return write_composed(_RAD2DEG_, input, float_result_dtype(input))


def _log_base_(name: str, base: float, compute):
    function = inplace.elementwise_function(
        f"{name}Backward0",
        compute,
        lambda g, x, y: (g / (x * math.log(base)),),
        keep_self=True,
    )

    def method(input: Tensor) -> Tensor:
        return write_composed(function, input, float_result_dtype(input))

    method.__name__ = name.lower() + "_"
    method.__doc__ = f"In-place ``{name.lower()}``."
    return method


log2_ = _log_base_("Log2", 2.0, log2)
log10_ = _log_base_("Log10", 10.0, log10)


_NAN_TO_NUM_ = inplace.elementwise_function(
    "NanToNumBackward0",
    nan_to_num,
    lambda g, x, y, *bounds: (g * x.isfinite(), None, None, None),
    keep_self=True,
)


def nan_to_num_(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """In-place ``nan_to_num`` (an integer tensor is left as it is, its version bumped)."""
    return write_composed(_NAN_TO_NUM_, input, input.dtype, nan, posinf, neginf)
