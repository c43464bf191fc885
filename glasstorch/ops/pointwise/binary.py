"""Elementwise operations of two or more inputs: add, sub, mul, div, pow,
remainder, floor_divide, atan2, logaddexp, hypot, copysign, fmod, xlogy,
heaviside, addcmul, addcdiv, lerp, and their in-place forms.

Each differentiable operation is a Function with its derivative next to it. The
engine reduces a gradient over broadcast dimensions and casts it back to the
input's dtype, so the backward formulas below never have to. The ops without a
kernel of their own (``atan2``, ``fmod``, ``lerp``, ...) are compositions of
those that have one, so they run on every tier and device; their in-place forms
(``x.fmod_(y)``) write piece by piece (see :mod:`.in_place`).
"""

from __future__ import annotations

import builtins
import math

from glasstorch import _dtype, _tier
from glasstorch._shape import broadcast_shapes, is_expandable_to
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    as_operand,
    check_tensor_or_number,
    default_float,
    floating,
    is_number,
    strided_as,
)
from glasstorch.ops.creation import as_tensor_on, zeros_like
from glasstorch.ops.inplace import (
    destination,
    save_output,
)
from glasstorch.ops.pointwise.comparison import isnan
from glasstorch.ops.pointwise.compute import (
    _check_both_tensors,
    _needs,
    compute_add_scaled,
    compute_binary,
    compute_unary,
    fast_path_when_unrecorded,
    float_result_dtype,
    ones_like_scalar,
)
from glasstorch.ops.pointwise.in_place import (
    function_inplace,
    kernel_inplace,
    not_differentiable,
    write_composed,
    zero_gradient,
)
from glasstorch.ops.pointwise.selection import where
from glasstorch.ops.pointwise.unary import reciprocal, signbit, trunc
from glasstorch.tensor import Tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------ binary Functions


def _save_operands(ctx, a, b, keep_a: bool = True, keep_b: bool = True) -> None:
    """Keep both operands for backward: tensors through ``save_for_backward`` (so
    in-place changes are caught), numbers as they are."""
    ctx.numbers = tuple(None if isinstance(x, Tensor) else x for x in (a, b))
    ctx.save_for_backward(
        a if isinstance(a, Tensor) and keep_a else None,
        b if isinstance(b, Tensor) and keep_b else None,
    )


def _operands(ctx) -> tuple:
    """The operands kept by :func:`_save_operands`."""
    return tuple(n if n is not None else t for n, t in zip(ctx.numbers, ctx.saved_tensors))


def _scaled(b, alpha, dtype):
    """``alpha * b`` for add/sub's ``alpha`` argument (b itself when alpha is 1)."""
    return b if alpha == 1 else compute_binary("mul", b, alpha, dtype)


class Add(Function):
    backward_name = "AddBackward0"
    operand_positions = (0, 1)
    op, sign = "add", 1  # Sub reuses everything but the kernel and the sign

    @classmethod
    def forward(cls, ctx, a, b, alpha=1):
        ctx.alpha = alpha
        out = destination(cls, ctx, a)
        if alpha == 1:
            return compute_binary(cls.op, a, b, out=out)
        dtype = _dtype.result_type(a, b)
        if isinstance(b, Tensor) and dtype is not _dtype.bool_ and b.device == a.device:
            return compute_add_scaled(a, b, cls.sign * alpha, dtype, out)
        return compute_binary(cls.op, a, _scaled(b, alpha, dtype), dtype, out=out)

    @classmethod
    def backward(cls, ctx, grad):
        scale = cls.sign * ctx.alpha
        return grad, (grad if scale == 1 else grad * scale), None


class Sub(Add):
    backward_name = "SubBackward0"
    op, sign = "sub", -1


class Rsub(Function):
    """``number - tensor`` (PyTorch names its node RsubBackward1)."""

    backward_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, a, number):
        return compute_binary("sub", number, a, _dtype.result_type(a, number))

    @staticmethod
    def backward(ctx, grad):
        return -grad, None


class Mul(Function):
    backward_name = "MulBackward0"
    operand_positions = (0, 1)

    @classmethod
    def forward(cls, ctx, a, b):
        # Each side's gradient needs the other side: keep only what will be used.
        _save_operands(ctx, a, b, keep_a=_needs(ctx, 1), keep_b=_needs(ctx, 0))
        return compute_binary("mul", a, b, out=destination(cls, ctx, a))

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/pointwise
        a, b = _operands(ctx)
        grad_a = grad * b if _needs(ctx, 0) else None
        grad_b = grad * a if _needs(ctx, 1) else None
        return grad_a, grad_b
        # -- end solution


class Div(Function):
    backward_name = "DivBackward0"
    operand_positions = (0, 1)

    @classmethod
    def forward(cls, ctx, a, b):
        _save_operands(ctx, a, b, keep_a=_needs(ctx, 1))
        return compute_binary("div", a, b, float_result_dtype(a, b), out=destination(cls, ctx, a))

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/pointwise
        a, b = _operands(ctx)
        grad_a = grad / b if _needs(ctx, 0) else None
        grad_b = -grad * a / (b * b) if _needs(ctx, 1) else None
        return grad_a, grad_b
        # -- end solution


class Pow(Function):
    """``tensor ** number`` (PowBackward0)."""

    backward_name = "PowBackward0"

    #: Exponents PyTorch computes with a unary kernel instead of pow. They differ
    #: from C's pow at -0.0 and -inf: sqrt(-0.0) is -0.0, pow(-0.0, 0.5) is 0.0.
    UNARY_FOR_EXPONENT = {0.5: "sqrt", -0.5: "rsqrt"}

    @classmethod
    def forward(cls, ctx, a, exponent):
        ctx.exponent = exponent
        ctx.save_for_backward(a)  # before an in-place variant overwrites a
        out = destination(cls, ctx, a)
        dtype = _dtype.result_type(a, exponent)
        if dtype.is_floating_point and exponent in Pow.UNARY_FOR_EXPONENT:
            return compute_unary(Pow.UNARY_FOR_EXPONENT[exponent], a, dtype, out=out)
        return compute_binary("pow", a, exponent, out=out)

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/pointwise
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return zeros_like(a), None
        return grad * p * a ** (p - 1), None
        # -- end solution


class PowTensor(Function):
    """``tensor ** tensor`` (PowBackward1)."""

    backward_name = "PowBackward1"

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)  # before an in-place variant overwrites a
        out = compute_binary("pow", a, b, out=destination(cls, ctx, a))
        save_output(ctx, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        grad_a = grad * b * a ** (b - 1) if _needs(ctx, 0) else None
        # d(a^b)/db = a^b log(a); where a == 0 and b >= 0 the limit is 0.
        grad_b = None
        if _needs(ctx, 1):
            safe = where(a == 0, ones_like_scalar(a), a)
            grad_b = grad * where((a == 0) & (b >= 0), out * 0, out * safe.log())
        return grad_a, grad_b


class RPow(Function):
    """``number ** tensor`` (PowBackward2)."""

    backward_name = "PowBackward2"

    @staticmethod
    def forward(ctx, base, b):
        dtype = _dtype.result_type(b, base)
        out = compute_binary("pow", base, b, dtype)
        ctx.base = base
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        log_base = math.log(ctx.base) if ctx.base > 0 else float("nan")
        if ctx.base == 0:
            return None, zeros_like(grad)
        return None, grad * out * log_base


class Remainder(Function):
    backward_name = "RemainderBackward0"
    operand_positions = (0, 1)

    @classmethod
    def forward(cls, ctx, a, b):
        _check_integer_divisor(a, b)
        # Only b's gradient needs the operands.
        _save_operands(ctx, a, b, keep_a=_needs(ctx, 1), keep_b=_needs(ctx, 1))
        return compute_binary("remainder", a, b, out=destination(cls, ctx, a))

    @staticmethod
    def backward(ctx, grad):
        a, b = _operands(ctx)
        # a % b = a - floor(a / b) * b: slope 1 in a, -floor(a / b) in b.
        grad_b = -grad * floor_divide(a, b) if _needs(ctx, 1) else None
        return grad, grad_b


#: The Functions of the arithmetic ops that have in-place forms (``x.add_(y)``).
_ARITHMETIC = {"add": Add, "sub": Sub, "mul": Mul, "div": Div}


def in_place_arithmetic(op: str, target: Tensor, other) -> tuple:
    """For ``target.<op>_(other)``: the in-place Function, and the dtype it computes in.

    Raises PyTorch's error for subtracting bools; a result dtype that cannot be
    cast to ``target``'s is refused by the caller (:func:`~glasstorch.ops.inplace.write_inplace`).
    """
    if op == "sub":
        _check_bool_sub(target, other)
    dtype = float_result_dtype(target, other) if op == "div" else _dtype.result_type(target, other)
    return inplace.variant_of(_ARITHMETIC[op]), dtype


# ------------------------------------------ speed trick: one kernel call, no autograd


def binary_inplace(op: str, target: Tensor, other, compute, alpha=1) -> Tensor:
    """``target.<op>_(other, alpha=alpha)`` for ``op`` one of ``add``, ``sub``,
    ``mul``, ``div`` (``alpha`` only for ``add`` and ``sub``).

    The result is written into ``target`` by the Function's in-place variant
    (:func:`write_inplace`); ``compute()``, the out-of-place op, is the plain
    path (:func:`apply_inplace`), taken where the other operand is on
    another device or does not broadcast to ``target``'s shape (it raises or
    moves a CPU scalar, as PyTorch does).

    Speed trick (one kernel call): for a small tensor (an optimizer's step
    counter, a batch norm's running mean) the Function machinery costs
    several times the arithmetic. When no history is recorded and the
    result has the target's dtype, the elementwise kernel is called straight
    away: it reads each element before it writes the same place. The checks
    and the version bump are the same.
    """
    if alpha != 1 or not _writes_directly(op, target, other):
        if not inplace.broadcasts_into(target, other):
            return inplace.apply_inplace(target, compute, (other,))
        function, dtype = in_place_arithmetic(op, target, other)
        arguments = (target, other, alpha) if op in ("add", "sub") else (target, other)
        return inplace.write_inplace(target, lambda: function.apply(*arguments), dtype, (other,))
    inplace.check_inplace(target)
    inplace.check_no_partial_overlap(target, (other,))
    operand = as_operand(other, target.dtype)
    view = target._strided()
    kernels.binary(op, view, view, strided_as(operand, target._shape))
    target._bump_version()
    return target


def _writes_directly(op: str, target: Tensor, other) -> bool:
    """Whether :func:`binary_inplace` may run the kernel into ``target``."""
    other_is_tensor = isinstance(other, Tensor)
    if not (other_is_tensor or is_number(other)):
        return False
    if is_grad_enabled() and (target._requires_grad or (other_is_tensor and other._requires_grad)):
        return False  # history to record
    if other_is_tensor and (
        other.device != target.device or not is_expandable_to(other._shape, target._shape)
    ):
        return False  # the plain path raises, or moves a CPU scalar, as PyTorch does
    dtype = target.dtype
    if op == "div" and not dtype.is_floating_point:
        return False  # true division gives floats
    if op == "sub" and (
        dtype is _dtype.bool_
        or isinstance(other, bool)
        or (other_is_tensor and other.dtype is _dtype.bool_)
    ):
        return False  # subtracting bools is an error, raised by the plain path
    return _dtype.result_type(target, other) is dtype


def _check_integer_divisor(a, b) -> None:
    """Integer division by zero is an error, as in PyTorch; float division gives inf/nan."""
    dtype = _dtype.result_type(a, b)
    if dtype.is_floating_point:
        return
    shapes = [x.shape for x in (a, b) if isinstance(x, Tensor)]
    if 0 in broadcast_shapes(*shapes):  # an empty result divides nothing
        return
    zero = (b == 0) if isinstance(b, Tensor) else b == 0
    if bool(zero.any()) if isinstance(zero, Tensor) else zero:
        raise RuntimeError("ZeroDivisionError")


# ------------------------------------------------------------- public binary


@fast_path_when_unrecorded("add")
def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other``, with broadcasting and type promotion."""
    if not isinstance(input, Tensor) and alpha == 1:
        input, other = other, input  # 2 + x is recorded as x + 2, as in PyTorch
    return Add.apply(input, other, alpha)


def _check_bool_sub(a, b) -> None:
    bools = [
        isinstance(x, bool) or (isinstance(x, Tensor) and x.dtype is _dtype.bool_) for x in (a, b)
    ]
    if all(bools):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if any(bools):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


@fast_path_when_unrecorded("sub", check=_check_bool_sub)
def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other``."""
    _check_bool_sub(input, other)
    if not isinstance(input, Tensor):
        return Rsub.apply(other, input)
    return Sub.apply(input, other, alpha)


@fast_path_when_unrecorded("mul")
def mul(input, other) -> Tensor:
    """``input * other``."""
    if not isinstance(input, Tensor):
        input, other = other, input  # 2 * x is recorded as x * 2, as in PyTorch
    return Mul.apply(input, other)


def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division (``rounding_mode=None``), or ``"floor"``/``"trunc"`` division."""
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return _trunc_divide(input, other)
    if rounding_mode is not None:
        raise ValueError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    if not isinstance(input, Tensor):
        return mul(reciprocal(other), input)  # number / x, as PyTorch records it
    return Div.apply(input, other)


true_divide = div


def _trunc_divide(input, other) -> Tensor:
    """``div(..., rounding_mode="trunc")``: the quotient rounded toward zero.

    Floats: ``trunc(input / other)``. Integers divide exactly, as the result
    dtype holds them (``-6`` as uint8 is 250), with PyTorch's error for a zero
    divisor: the floor quotient, moved one step toward zero where the division
    is inexact and the signs differ.
    """
    dtype = _dtype.result_type(input, other)
    if dtype.is_floating_point or dtype is _dtype.bool_:
        return trunc(div(input, other)).to(dtype)
    a, b = as_operand(input, dtype), as_operand(other, dtype)
    floor = floor_divide(a, b)
    inexact_and_negative = (floor * b != a) & ((a < 0) != (b < 0))
    return floor + inexact_and_negative.to(dtype)


def floor_divide(input, other) -> Tensor:
    """Division rounded toward minus infinity (no gradient)."""
    if _dtype.result_type(input, other) is _dtype.bool_:
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")
    _check_integer_divisor(input, other)
    return compute_binary("floor_divide", input, other)


def remainder(input, other) -> Tensor:
    """Python-style remainder: the result has the sign of the divisor."""
    if _dtype.result_type(input, other) is _dtype.bool_:
        raise NotImplementedError("\"remainder_cpu\" not implemented for 'Bool'")
    return Remainder.apply(input, other)


def pow(input, exponent) -> Tensor:
    """``input ** exponent`` for tensors and numbers on either side."""
    if not isinstance(input, Tensor):
        return RPow.apply(input, exponent)
    if isinstance(exponent, Tensor):
        if _dtype.result_type(input, exponent) is _dtype.bool_:
            raise NotImplementedError("\"pow\" not implemented for 'Bool'")
        _check_integer_power(input, exponent)
        return PowTensor.apply(input, exponent)
    check_tensor_or_number(exponent, "exponent")
    _check_integer_power(input, exponent)
    return Pow.apply(input, exponent)


def _check_integer_power(a: Tensor, exponent) -> None:
    dtype = _dtype.result_type(a, exponent)
    if dtype.is_floating_point:
        return
    negative = (exponent < 0).any() if isinstance(exponent, Tensor) else exponent < 0
    if bool(negative):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


# ------------------------------------------------- in-place binary ops (x.pow_(y))


def pow_(input: Tensor, exponent) -> Tensor:
    """``input.pow_(exponent)``: :func:`pow` written into ``input``."""
    if isinstance(exponent, Tensor):
        if _dtype.result_type(input, exponent) is _dtype.bool_:
            raise NotImplementedError("\"pow\" not implemented for 'Bool'")
        _check_integer_power(input, exponent)
        dtype = _dtype.result_type(input, exponent)
        return function_inplace(PowTensor, input, exponent, dtype, lambda: pow(input, exponent))
    check_tensor_or_number(exponent, "exponent")
    _check_integer_power(input, exponent)
    dtype = _dtype.result_type(input, exponent)
    return function_inplace(Pow, input, exponent, dtype, lambda: pow(input, exponent))


def remainder_(input: Tensor, other) -> Tensor:
    """``input.remainder_(other)``: :func:`remainder` written into ``input``."""
    check_tensor_or_number(other, "other")
    dtype = _dtype.result_type(input, other)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"remainder_cpu\" not implemented for 'Bool'")
    return function_inplace(Remainder, input, other, dtype, lambda: remainder(input, other))


def floor_divide_(input: Tensor, other) -> Tensor:
    """``input.floor_divide_(other)``: :func:`floor_divide` written into ``input``."""
    check_tensor_or_number(other, "other")
    dtype = _dtype.result_type(input, other)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")
    if _dtype.can_cast(dtype, input.dtype):  # else the cast error comes first
        _check_integer_divisor(input, other)
    return kernel_inplace("floor_divide", input, other, dtype)


# ------------------------------------------ composed binary ops (no kernel of their own)


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
            raise NotImplementedError(f"\"logaddexp_cpu\" not implemented for '{t.dtype.title}'")
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
            raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{t.dtype.title}'")
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


def copysign(input: Tensor, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (``-0.0`` counts as negative); a float result."""
    other = as_tensor_on(other, input)
    magnitude = floating(input).abs()
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
        input = as_tensor_on(input, other)
    other = as_tensor_on(other, input)
    dtype = _dtype.result_type(input, other)
    if not dtype.is_floating_point:
        dtype = default_float()
    x, y = input.to(dtype), other.to(dtype)
    log = y.log()
    # Where x is 0 the product is 0 even for log(y) = -inf or NaN (y <= 0); keeping x in the
    # product (rather than selecting 0) gives x the gradient log(y), as PyTorch.
    zero_times_infinite = (x == 0) & ~isnan(y) & ~(log.abs() < math.inf)
    return x * where(zero_times_infinite, 0.0, log) + 0.0  # + 0.0 turns -0.0 into 0.0


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


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``."""
    return input + weight * (end - input)


_LERP_ = inplace.elementwise_function(
    "LerpBackward0", lerp, lambda g, x, y, end, w: (g * (1 - w), g * w, None)
)


_LERP_TENSOR_ = inplace.elementwise_function(
    "LerpBackward1",
    lerp,
    lambda g, x, y, end, w: (g * (1 - w), g * w, g * (end - x) if x is not None else None),
    keep_self=lambda needs: needs[2],  # only the weight's gradient needs the old values
)


def lerp_(input: Tensor, end: Tensor, weight) -> Tensor:
    """In-place ``lerp``: ``input + weight * (end - input)`` written into ``input``."""
    function = _LERP_TENSOR_ if isinstance(weight, Tensor) else _LERP_
    return write_composed(function, input, _dtype.result_type(input, end, weight), end, weight)


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
    return write_composed(_ADDCMUL_, input, dtype, tensor1, tensor2, value)


def addcdiv_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcdiv`: only ``tensor1`` and ``tensor2`` are kept for backward."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        addcdiv(input, tensor1, tensor2)  # raises PyTorch's integer-division error
    dtype = _dtype.result_type(input, tensor1, tensor2)
    return write_composed(_ADDCDIV_, input, dtype, tensor1, tensor2, value)


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
    return write_composed(function, input, _dtype.result_type(input, other), other)


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
    return write_composed(_ATAN2_, input, float_result_dtype(input, other), other)


arctan2_ = atan2_


def hypot_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`hypot`."""
    _check_both_tensors("hypot", input, other)
    if not (input.dtype.is_floating_point and other.dtype.is_floating_point):
        hypot(input, other)  # raises PyTorch's error
    return write_composed(_HYPOT_, input, _dtype.result_type(input, other), other)


def _copysign_derivative(g, x, y, other):
    ratio = where(x == 0, 0.0, y / where(x == 0, 1.0, x))
    return g * ratio, (zero_gradient(g) if isinstance(other, Tensor) else None)


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
    return write_composed(function, input, float_result_dtype(input, other), other)


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
    return write_composed(function, input, float_result_dtype(input, other), other)


_HEAVISIDE_ = inplace.elementwise_function(
    "NotImplemented", heaviside, not_differentiable("heaviside_")
)


def heaviside_(input: Tensor, values: Tensor) -> Tensor:
    """In-place :func:`heaviside` (no gradient: backward raises, as in PyTorch)."""
    _check_heaviside(input, values)
    return write_composed(_HEAVISIDE_, input, input.dtype, values)


def square_(input: Tensor) -> Tensor:
    """``input.square_()``: ``input.pow_(2)``."""
    return pow_(input, 2)


def square(input: Tensor) -> Tensor:
    """``input ** 2``: a bool input gives int64 (1 or 0), as in PyTorch."""
    return pow(input, 2)
