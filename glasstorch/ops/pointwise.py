"""Pointwise operations: arithmetic, unary math, comparisons, clamp, where.

Each differentiable operation is a Function with its derivative next to it. The
engine reduces a gradient over broadcast dimensions and casts it back to the
input's dtype, so the backward formulas below never have to.
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch._kernels import BOOL_RESULT_OPS
from glasstorch._shape import broadcast_shapes, row_major_strides
from glasstorch._tier import cuda_active, kernels
from glasstorch.autograd import function as _function
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import _state as _grad_state
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    as_operand,
    broadcast,
    cast,
    check_tensor_or_number,
    common_device,
    default_float,
    is_number,
    strided_as,
)
from glasstorch.ops.creation import zeros, zeros_like
from glasstorch.ops.inplace import (
    apply_inplace,
    destination,
    save_output,
    write_inplace,
    write_values,
)
from glasstorch.tensor import Storage, Tensor, empty_tensor

# ------------------------------------------------------------ compute helpers


def compute_binary(op: str, a, b, dtype=None, out=None) -> Tensor:
    """Run the binary kernel ``op`` on two operands (tensors or numbers), no autograd.

    Promotes to the common dtype (or ``dtype`` when given), broadcasts both
    operands to the common shape and allocates the output, or writes into
    ``out`` (a tensor of that shape) and returns it: see :func:`_write_result`.
    """
    if (
        out is None
        and dtype is None
        and isinstance(a, Tensor)
        and isinstance(b, Tensor)
        and a.dtype is b.dtype
        and a._shape == b._shape
        and a._stride == b._stride == row_major_strides(a._shape)
    ):
        # The common case, taken first: nothing to promote, broadcast or lay out.
        # Shortcut: contiguity is read off by comparing the strides with the
        # (cached) row-major strides, which is cheaper than is_contiguous()'s loop
        # (a size-1 dimension with another stride takes the general path below).
        if cuda_active:
            common_device(a, b)
        out = _same_layout_as(a, _dtype.bool_ if op in BOOL_RESULT_OPS else a.dtype)
        kernels.binary(op, out._strided(), a._strided(), b._strided())
        return out
    check_tensor_or_number(a, "input")
    check_tensor_or_number(b, "other")
    if cuda_active:
        common_device(a, b)
    dtype = dtype or _dtype.result_type(a, b)
    result_dtype = _dtype.bool_ if op in BOOL_RESULT_OPS else dtype
    if _in_pieces(out, result_dtype):
        inplace.write_in_pieces(out, lambda _, x, y: compute_binary(op, x, y, dtype), (a, b))
        return out
    shape = broadcast(a, b)
    strides = output_strides(shape, a, b)
    a, b = as_operand(a, dtype), as_operand(b, dtype)
    result = _result_tensor(out, shape, result_dtype, strides)
    kernels.binary(op, result._strided(), strided_as(a, shape), strided_as(b, shape))
    return _write_result(result, out)


def compute_add_scaled(a, b: Tensor, alpha, dtype, out=None) -> Tensor:
    """``a + alpha * b`` in ``dtype`` by one kernel call (no tensor for ``alpha * b``),
    into ``out`` if given, as :func:`compute_binary` does; no autograd."""
    if _in_pieces(out, dtype):
        inplace.write_in_pieces(out, lambda _, x, y: compute_add_scaled(x, y, alpha, dtype), (a, b))
        return out
    shape = broadcast(a, b)
    strides = output_strides(shape, a, b)
    a, b = as_operand(a, dtype), as_operand(b, dtype)
    alpha = float(alpha) if dtype.is_floating_point else int(alpha)
    result = _result_tensor(out, shape, dtype, strides)
    kernels.add_scaled(result._strided(), strided_as(a, shape), strided_as(b, shape), alpha)
    return _write_result(result, out)


def _in_pieces(out, dtype) -> bool:
    """Whether to compute into ``out`` piece by piece: it is an in-place op's
    target of another dtype than the result's (a float32 tensor plus a float64
    one computes in float64; a comparison gives bools), and larger than a
    piece. The kernels write their inputs' dtype, so the result is made a
    piece at a time and cast into ``out`` (see
    :func:`~glasstorch.ops.inplace.write_in_pieces`), rather than made whole
    (with the target cast to the wider dtype too) and copied."""
    return out is not None and out.dtype is not dtype and out.numel() > inplace.PIECE


def _result_tensor(out, shape, dtype, strides=None) -> Tensor:
    """Where a kernel writes: ``out`` itself when it has the result's dtype (the
    caller made sure it has the result's shape), else a new tensor."""
    if out is not None and out.dtype is dtype:
        return out
    return empty_tensor(shape, dtype, strides)


def _write_result(result: Tensor, out) -> Tensor:
    """The result, written into ``out`` if there is one.

    ``out`` is the tensor an in-place op overwrites (see
    :func:`~glasstorch.ops.inplace.destination`). The kernel wrote into it
    directly unless its dtype differs from the computation's (a float32
    tensor plus a float64 one computes in float64): then the result is cast
    into it here, as PyTorch casts into an ``out`` of another dtype.
    """
    if out is None or result is out:
        return result
    kernels.copy(out._strided(), result._strided())
    return out


def _same_layout_as(a: Tensor, dtype) -> Tensor:
    """A new row-major tensor of ``a``'s shape, for a row-major ``a``.

    Shortcut: what :func:`empty_tensor` would check and compute (the size
    limits, the strides) is known from ``a`` already: ``a`` exists, so its
    shape passed those checks, and its strides are the row-major ones.
    """
    storage = Storage(kernels.allocate(math.prod(a._shape), dtype.numpy))
    return Tensor._make(storage, a._shape, a._stride, 0, dtype)


def compute_unary(op: str, a: Tensor, dtype=None, out=None) -> Tensor:
    """Run the unary kernel ``op`` on ``a`` (cast to ``dtype`` first), no autograd;
    into ``out`` (a tensor of a's shape) if given, as :func:`compute_binary` does."""
    out_dtype = _dtype.bool_ if op in BOOL_RESULT_OPS else (dtype or a.dtype)
    if _in_pieces(out, out_dtype):
        inplace.write_in_pieces(out, lambda _, x: compute_unary(op, x, dtype), (a,))
        return out
    if dtype is not None:
        a = cast(a, dtype)
    result = _result_tensor(out, a.shape, out_dtype, output_strides(a.shape, a))
    kernels.unary(op, result._strided(), a._strided())
    return _write_result(result, out)


def output_strides(shape, *operands):
    """Strides for an elementwise result: those of the first operand with the
    result's shape if it is dense (so ``x.t() + 1`` stays transposed, as in
    PyTorch), row-major otherwise."""
    from glasstorch._shape import contiguous_strides, dense_strides

    shape = tuple(shape)
    for operand in operands:
        if isinstance(operand, Tensor) and operand._shape == shape:
            if operand.is_contiguous():
                return None  # row-major, the allocator's default
            return dense_strides(shape, operand._stride)
    return contiguous_strides(shape)


def _float_dtype(a: Tensor):
    """Integer and bool inputs of exp, log, sin, ... compute in the default float."""
    return a.dtype if a.dtype.is_floating_point else default_float()


def _needs(ctx, i: int) -> bool:
    return len(ctx.needs_input_grad) > i and ctx.needs_input_grad[i]


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


def _extreme_gradients(grad, a, b, a_loses, b_loses):
    """The gradients of ``maximum(a, b)`` or ``minimum(a, b)``, as PyTorch's.

    Where ``a == b`` each operand gets half of ``grad``; the operand that loses
    gets exactly 0 (by ``where``, not ``grad * 0``, which is NaN for an infinite
    ``grad``). Where a NaN makes both comparisons false, *both* operands get the
    whole ``grad``. The masks come from saved inputs, so a second derivative only
    flows through ``grad``.
    """
    zero = zeros((), dtype=grad.dtype, device=grad.device)
    shared = where(a == b, grad / 2, grad)
    return where(a_loses, zero, shared), where(b_loses, zero, shared)


class Maximum(Function):
    backward_name = "MaximumBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return compute_binary("maximum", a, b)

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/pointwise
        a, b = ctx.saved_tensors
        return _extreme_gradients(grad, a, b, a_loses=a < b, b_loses=a > b)
        # -- end solution


class Minimum(Function):
    backward_name = "MinimumBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return compute_binary("minimum", a, b)

    @staticmethod
    def backward(ctx, grad):
        # -- solution: autograd/pointwise
        a, b = ctx.saved_tensors
        return _extreme_gradients(grad, a, b, a_loses=a > b, b_loses=a < b)
        # -- end solution


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


def float_result_dtype(*operands):
    """The dtype a float-valued op (true division, atan2, logit...) computes in:
    the operands' result type, with integers and bools in the default float."""
    dtype = _dtype.result_type(*operands)
    return dtype if dtype.is_floating_point else default_float()


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


def _records_nothing(a: Tensor, b) -> bool:
    """Whether ``a op b`` would record nothing: no autograd node (grad mode off,
    or no operand requiring grad) and no profiler span. Then the Function
    machinery has nothing to do."""
    if _function.profiler_hook is not None:
        return False
    return not _grad_state.enabled or not (
        a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)
    )


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other``, with broadcasting and type promotion."""
    if alpha == 1 and isinstance(input, Tensor) and _records_nothing(input, other):
        # Shortcut: with no graph to record, ``Add.apply`` would only call
        # ``compute_binary``; calling it directly saves the context and the
        # grad-mode switch (a large part of a small tensor's cost).
        return compute_binary("add", input, other)
    if not isinstance(input, Tensor) and alpha == 1:
        input, other = other, input  # 2 + x is recorded as x + 2, as in PyTorch
    return Add.apply(input, other, alpha)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other``."""
    _check_bool_sub(input, other)
    if not isinstance(input, Tensor):
        return Rsub.apply(other, input)
    if alpha == 1 and _records_nothing(input, other):
        return compute_binary("sub", input, other)  # shortcut: as in add
    return Sub.apply(input, other, alpha)


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


def mul(input, other) -> Tensor:
    """``input * other``."""
    if not isinstance(input, Tensor):
        input, other = other, input  # 2 * x is recorded as x * 2, as in PyTorch
    if isinstance(input, Tensor) and _records_nothing(input, other):
        return compute_binary("mul", input, other)  # shortcut: as in add
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


def _check_both_tensors(name: str, input, other) -> None:
    """maximum/minimum/logical_* take tensors; a number is a TypeError, as in PyTorch."""
    for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum of two tensors (NaN wins)."""
    _check_both_tensors("maximum", input, other)
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum of two tensors (NaN wins)."""
    _check_both_tensors("minimum", input, other)
    return Minimum.apply(input, other)


def as_tensor_like(number, other) -> Tensor:
    """A number as a 0-d tensor, for ``number op tensor`` written the other way round."""
    from glasstorch.ops.creation import tensor

    return tensor(number, dtype=_dtype.scalar_dtype(number)) if is_number(number) else number


# ---------------------------------------------------------------- comparisons


def _comparison(op: str):
    def compare(input, other) -> Tensor:
        return compute_binary(op, input, other)

    compare.__name__ = op
    compare.__doc__ = f"Elementwise ``{op}`` comparison with broadcasting; returns a bool tensor."
    return compare


eq, ne, lt, le, gt, ge = (_comparison(op) for op in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def logical_and(input, other) -> Tensor:
    """Elementwise logical and (nonzero is true); returns bool."""
    _check_both_tensors("logical_and", input, other)
    return compute_binary("logical_and", input, other)


def logical_or(input, other) -> Tensor:
    """Elementwise logical or; returns bool."""
    _check_both_tensors("logical_or", input, other)
    return compute_binary("logical_or", input, other)


def logical_xor(input, other) -> Tensor:
    """Elementwise logical exclusive or; returns bool."""
    _check_both_tensors("logical_xor", input, other)
    return compute_binary("logical_xor", input, other)


def logical_not(input: Tensor) -> Tensor:
    """Elementwise logical not; returns bool."""
    _check_both_tensors("logical_not", input, input)
    return compute_unary("logical_not", input)


def _bitwise(op: str, symbol: str):
    def bitwise(input, other) -> Tensor:
        dtype = _dtype.result_type(input, other)
        if dtype.is_floating_point:
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{dtype.title}'")
        return compute_binary(op, input, other)

    bitwise.__name__ = op
    bitwise.__doc__ = f"Elementwise ``{symbol}`` of integer or bool tensors."
    return bitwise


bitwise_and = _bitwise("bitwise_and", "&")
bitwise_or = _bitwise("bitwise_or", "|")
bitwise_xor = _bitwise("bitwise_xor", "^")


def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise ``~`` of an integer or bool tensor."""
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{input.dtype.title}'")
    return compute_unary("bitwise_not", input)


def isnan(input: Tensor) -> Tensor:
    """Elementwise NaN test; returns bool."""
    return compute_unary("isnan", input)


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool(eq(input, other).all())


def allclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether :func:`isclose` holds everywhere."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def isclose(input: Tensor, other: Tensor, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|``; returns bool.

    Equal elements are close (so ``inf`` is close to ``inf``); otherwise the
    difference must be finite, so an infinity is close only to the same
    infinity. NaN is close to NaN only with ``equal_nan``. Both tensors must
    have the same dtype, as in PyTorch.
    """
    for name, value in (("other", other), ("input", input)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"isclose(): argument '{name}' must be Tensor, not {type(value).__name__}"
            )
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.title} did not match {other.dtype.title}")
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tolerance}")
    close = eq(input, other)
    if equal_nan:
        close = close | (isnan(input) & isnan(other))
    if input.dtype is _dtype.bool_:
        input, other = input.to(default_float()), other.to(default_float())
    difference = (input - other).abs()
    allowed = atol + (other * rtol).abs()
    # A NaN or infinite difference is never close (inf - inf is NaN, 1 - inf is inf).
    finite = difference < float("inf")
    return close | (finite & (difference <= allowed))


# ----------------------------------------------------------- unary Functions


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


def unary_inplace(function, target: Tensor, compute) -> Tensor:
    """``target.<op>_()`` for the unary Function ``function``, written into ``target``.

    ``compute()``, the out-of-place op, is the plain path for a bool
    ``target`` (refused, or computed in another dtype, by the op itself) and
    an integer one that the op would make float (an error when cast back).
    """
    if target.dtype is _dtype.bool_:
        return apply_inplace(target, compute)
    # An integer target of a float op (exp_) is refused by write_inplace's cast check.
    dtype = _float_dtype(target) if function.floating else target.dtype
    variant = inplace.variant_of(function)
    return write_inplace(target, lambda: variant.apply(target), dtype)


# ------------------------------------------------- in-place binary ops (x.pow_(y))


def _function_inplace(function, target: Tensor, other, dtype, compute) -> Tensor:
    """``target.<op>_(other)`` by ``function``'s in-place variant, computed in ``dtype``.

    ``compute()``, the out-of-place op, is the plain path where ``other`` is on
    another device or does not broadcast to ``target``'s shape (it raises, or
    moves a CPU scalar, as PyTorch does).
    """
    if not inplace.broadcasts_into(target, other):
        return apply_inplace(target, compute, (other,))
    variant = inplace.variant_of(function)
    return write_inplace(target, lambda: variant.apply(target, other), dtype, (other,))


def kernel_inplace(op: str, target: Tensor, other=None, dtype=None) -> Tensor:
    """``target.<op>_(other)`` (or ``target.<op>_()`` for a unary op) for an op
    without a gradient: the kernel writes into ``target`` and its history stays.

    Computed in ``dtype`` (default: the operands' result type), which must be
    castable to ``target``'s; comparisons and logical ops give bools, which cast
    to every dtype (a kernel writes bools, so a target of another dtype takes a
    bool temporary, a quarter of a float32 target's size at most: PyTorch's CPU
    kernels keep one too).
    """
    if other is None:
        return write_values(target, lambda: compute_unary(op, target, out=target), target.dtype)
    if not inplace.broadcasts_into(target, other):
        return apply_inplace(target, lambda: compute_binary(op, target, other), (other,))
    dtype = dtype or _dtype.result_type(target, other)
    result_dtype = None if op in BOOL_RESULT_OPS else dtype
    return write_values(
        target, lambda: compute_binary(op, target, other, dtype, out=target), result_dtype, (other,)
    )


def pow_(input: Tensor, exponent) -> Tensor:
    """``input.pow_(exponent)``: :func:`pow` written into ``input``."""
    if isinstance(exponent, Tensor):
        if _dtype.result_type(input, exponent) is _dtype.bool_:
            raise NotImplementedError("\"pow\" not implemented for 'Bool'")
        _check_integer_power(input, exponent)
        dtype = _dtype.result_type(input, exponent)
        return _function_inplace(PowTensor, input, exponent, dtype, lambda: pow(input, exponent))
    check_tensor_or_number(exponent, "exponent")
    _check_integer_power(input, exponent)
    dtype = _dtype.result_type(input, exponent)
    return _function_inplace(Pow, input, exponent, dtype, lambda: pow(input, exponent))


def remainder_(input: Tensor, other) -> Tensor:
    """``input.remainder_(other)``: :func:`remainder` written into ``input``."""
    check_tensor_or_number(other, "other")
    dtype = _dtype.result_type(input, other)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"remainder_cpu\" not implemented for 'Bool'")
    return _function_inplace(Remainder, input, other, dtype, lambda: remainder(input, other))


def floor_divide_(input: Tensor, other) -> Tensor:
    """``input.floor_divide_(other)``: :func:`floor_divide` written into ``input``."""
    check_tensor_or_number(other, "other")
    dtype = _dtype.result_type(input, other)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")
    if _dtype.can_cast(dtype, input.dtype):  # else the cast error comes first
        _check_integer_divisor(input, other)
    return kernel_inplace("floor_divide", input, other, dtype)


def bitwise_inplace(op: str, input: Tensor, other) -> Tensor:
    """``input.bitwise_and_(other)`` and its kind, written into ``input``."""
    dtype = _dtype.result_type(input, other)
    if _dtype.can_cast(dtype, input.dtype) and dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{dtype.title}'")
    return kernel_inplace(op, input, other, dtype)


def square_(input: Tensor) -> Tensor:
    """``input.square_()``: ``input.pow_(2)``."""
    return pow_(input, 2)


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


def square(input: Tensor) -> Tensor:
    """``input ** 2``: a bool input gives int64 (1 or 0), as in PyTorch."""
    return pow(input, 2)


# ------------------------------------------------------------- clamp, where


class Clamp(Function):
    """Clamp between two numbers (either may be None): ClampBackward1."""

    backward_name = "ClampBackward1"

    @classmethod
    def forward(cls, ctx, a, low, high):
        ctx.save_for_backward(a)
        ctx.low, ctx.high = low, high
        target = destination(cls, ctx, a)
        # The bound goes first: the kernels keep their second operand on a tie,
        # and PyTorch's clamp keeps the input (clamp(-0.0, min=0.0) is -0.0).
        # In place, both steps write into a: each reads an element, then writes it.
        out = a
        if low is not None:
            out = compute_binary("maximum", low, out, _dtype.result_type(a, low), out=target)
        if high is not None:
            out = compute_binary("minimum", high, out, _dtype.result_type(out, high), out=target)
        return out if out is not a or target is not None else out.clone()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        inside = ones_like_bool(a)
        if ctx.low is not None:
            inside = inside & (a >= ctx.low)
        if ctx.high is not None:
            inside = inside & (a <= ctx.high)
        # where, not grad * inside: outside the bounds (and at a NaN input) the gradient
        # is exactly 0 even when grad is NaN or infinite, as in PyTorch.
        zero = zeros((), dtype=grad.dtype, device=grad.device)
        return where(inside, grad, zero), None, None


def _check_clamp_numbers(input: Tensor, min, max) -> None:  # noqa: A002
    """PyTorch's errors for number bounds: none on a bool result, overflowing ints."""
    dtype = _dtype.result_type(input, *(b for b in (min, max) if b is not None))
    if dtype is _dtype.bool_:
        kind = "clamp_min" if max is None else "clamp_max" if min is None else "clamp"
        raise NotImplementedError(f"\"{kind}_scalar_cpu\" not implemented for 'Bool'")
    if not dtype.is_floating_point:  # an int bound must fit an integer input's dtype
        for bound in (min, max):
            if isinstance(bound, int):
                _dtype.check_scalar_fits(bound, dtype)


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Limit every element to ``[min, max]``; ``min``/``max`` are numbers or tensors.

    The result has the promoted dtype of the input and the bounds (a float
    bound makes an integer input float). Where ``min > max`` every element is
    ``max``. An int bound that does not fit an integer input's dtype is an
    error, as in PyTorch.
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min if isinstance(min, Tensor) else as_tensor_like(min, input))
        if max is not None:
            out = minimum(out, max if isinstance(max, Tensor) else as_tensor_like(max, input))
        return out
    _check_clamp_numbers(input, min, max)
    dtype = _dtype.result_type(input, *(b for b in (min, max) if b is not None))
    if dtype is not input.dtype and not input.dtype.is_floating_point:
        # Every step in the result's dtype, as in PyTorch: clamp(uint8, -5, 1.0) must not
        # wrap -5 into uint8 first. (An integer input has no gradient to lose.)
        input = input.to(dtype)
    return Clamp.apply(input, min, max)


clip = clamp


def clamp_(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """``input.clamp_(min, max)``: :func:`clamp` written into ``input``.

    Number bounds that keep ``input``'s dtype are written directly; tensor
    bounds, and bounds that change the dtype (an error unless PyTorch allows
    it), take the plain path of computing ``clamp`` and copying it back.
    """
    bounds = [bound for bound in (min, max) if bound is not None]
    if not bounds or not all(is_number(bound) for bound in bounds):
        return _clamp_by_tensors_(ClampTensors, input, min, max)
    _check_clamp_numbers(input, min, max)
    dtype = _dtype.result_type(input, *bounds)
    if dtype is not input.dtype:
        return apply_inplace(input, lambda: clamp(input, min, max), bounds)
    return write_inplace(input, lambda: inplace.variant_of(Clamp).apply(input, min, max), dtype)


class ClampTensors(Function):
    """``x.clamp_(min, max)`` with a tensor bound, written into x: PyTorch's ClampBackward0.

    The values are :func:`clamp`'s with tensor bounds (``maximum``, then
    ``minimum``); the gradients are PyTorch's, which send each element's
    gradient to whichever of x, min and max it came from.
    """

    backward_name = "ClampBackward0"
    in_place = True  # only the in-place op records it (clamp composes maximum and minimum)

    @classmethod
    def forward(cls, ctx, a, low, high):
        ctx.low_high = tuple(None if isinstance(b, Tensor) else b for b in (low, high))
        ctx.save_for_backward(a, *(b if isinstance(b, Tensor) else None for b in (low, high)))
        out = destination(cls, ctx, a)  # the old values of a, kept for the gradients
        bounds = [b for b in (low, high) if b is not None]
        if _dtype.result_type(a, *bounds) is a.dtype:
            # Each kernel reads an element of out, then writes the same place.
            if low is not None:
                compute_binary("maximum", out, low, out=out)
            if high is not None:
                compute_binary("minimum", out, high, out=out)
        else:  # computed in the bounds' wider dtype: a piece at a time, cast into out
            inplace.write_in_pieces(out, lambda x, lo, hi: clamp(x, lo, hi), (low, high))
        return out

    @staticmethod
    def backward(ctx, grad):
        a, saved_low, saved_high = ctx.saved_tensors
        low, high = (n if t is None else t for n, t in zip(ctx.low_high, (saved_low, saved_high)))
        zero = zeros((), dtype=grad.dtype, device=grad.device)
        grad_low = grad_high = None
        if low is not None and high is not None:
            grad_a = where((a >= low) & (a <= high), grad, zero)
            if _needs(ctx, 1):
                grad_low = where((a < low) & (as_tensor_like(low, a) < high), grad, zero)
            if _needs(ctx, 2):
                grad_high = where((a > high) | (as_tensor_like(high, a) < low), grad, zero)
        elif low is not None:
            grad_a = where(a >= low, grad, zero)
            grad_low = where(a < low, grad, zero) if _needs(ctx, 1) else None
        else:
            grad_a = where(a <= high, grad, zero)
            grad_high = where(a > high, grad, zero) if _needs(ctx, 2) else None
        return grad_a, grad_low, grad_high


class ClampMinTensor(ClampTensors):
    """``x.clamp_min_(min)`` with a tensor ``min``."""

    backward_name = "ClampMinBackward1"


class ClampMaxTensor(ClampTensors):
    """``x.clamp_max_(max)`` with a tensor ``max``."""

    backward_name = "ClampMaxBackward1"


def _clamp_by_tensors_(function, input: Tensor, min, max) -> Tensor:  # noqa: A002
    """``input.clamp_(min, max)`` with a tensor bound, by ``function``, written into ``input``.

    Bounds on another device or of a shape that does not broadcast to
    ``input``'s, and bool results, take the plain path (which raises or
    computes as :func:`clamp` does) of computing ``clamp`` and copying it back.
    """
    bounds = [bound for bound in (min, max) if bound is not None]
    if not bounds or not all(inplace.broadcasts_into(input, bound) for bound in bounds):
        return apply_inplace(input, lambda: clamp(input, min, max), bounds)
    dtype = _dtype.result_type(input, *bounds)
    if dtype is _dtype.bool_:
        return apply_inplace(input, lambda: clamp(input, min, max), bounds)
    return write_inplace(input, lambda: function.apply(input, min, max), dtype, bounds)


def clamp_min_(input: Tensor, min) -> Tensor:  # noqa: A002
    """``input.clamp_min_(min)``: a tensor ``min`` records ClampMinBackward1, as in PyTorch."""
    if isinstance(min, Tensor):
        return _clamp_by_tensors_(ClampMinTensor, input, min, None)
    return clamp_(input, min=min)


def clamp_max_(input: Tensor, max) -> Tensor:  # noqa: A002
    """``input.clamp_max_(max)``: a tensor ``max`` records ClampMaxBackward1, as in PyTorch."""
    if isinstance(max, Tensor):
        return _clamp_by_tensors_(ClampMaxTensor, input, None, max)
    return clamp_(input, max=max)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)


class Where(Function):
    backward_name = "WhereBackward0"
    operand_positions = (1, 2)

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(condition)
        common_device(condition, a, b)
        dtype = _dtype.result_type(a, b)
        shape = broadcast(condition, a, b)
        a, b = as_operand(a, dtype), as_operand(b, dtype)
        out = empty_tensor(shape, dtype)
        kernels.where(
            out._strided(),
            strided_as(condition, shape),
            strided_as(a, shape),
            strided_as(b, shape),
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        zero = zeros((), dtype=grad.dtype, device=grad.device)  # not grad * 0: NaN * 0 is NaN
        grad_a = where(condition, grad, zero) if _needs(ctx, 1) else None
        grad_b = where(condition, zero, grad) if _needs(ctx, 2) else None
        return None, grad_a, grad_b


def where(condition: Tensor, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast together).

    With only ``condition``, returns ``condition.nonzero(as_tuple=True)``.
    """
    if input is None and other is None:
        from glasstorch.ops.indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype.name.capitalize()}"
        )
    return Where.apply(condition, input, other)


class MaskedFill(Function):
    backward_name = "MaskedFillBackward0"

    @classmethod
    def forward(cls, ctx, a, mask, value):
        ctx.save_for_backward(mask)
        common_device(a, mask)
        shape = broadcast(a, mask)
        if tuple(shape) != tuple(a.shape):
            raise RuntimeError(
                f"masked_fill: the mask of shape {list(mask.shape)} does not broadcast to the "
                f"input's shape {list(a.shape)}"
            )
        value = value.item() if isinstance(value, Tensor) else value
        # In place, where() reads each element of a before it writes the same place.
        out = destination(cls, ctx, a)
        if out is None:
            out = empty_tensor(a.shape, a.dtype)
        filler = as_operand(value, a.dtype)
        kernels.where(
            out._strided(), strided_as(mask, shape), strided_as(filler, shape), a._strided()
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return where(mask, zeros((), dtype=grad.dtype, device=grad.device), grad), None, None


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``input`` with ``value`` wherever the bool ``mask`` is true."""
    return MaskedFill.apply(input, mask, _masked_fill_value(input, mask, value))


def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """``input.masked_fill_(mask, value)``: :func:`masked_fill` written into ``input``."""
    value = _masked_fill_value(input, mask, value)
    variant = inplace.variant_of(MaskedFill)
    return write_inplace(input, lambda: variant.apply(input, mask, value), None, (mask,))


def _masked_fill_value(input: Tensor, mask: Tensor, value):
    """masked_fill's argument checks, in PyTorch's words; returns ``value``."""
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype.c_name}"
        )
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.dim()} dimension(s)."
        )
    if not isinstance(value, Tensor):
        _dtype.check_scalar_fits(value, input.dtype)
    return value


# ------------------------------------------------------------ copies, casts


class ToCopy(Function):
    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, dtype):
        return cast(a, dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # the engine casts it back to the input's dtype


def to_dtype(input: Tensor, dtype) -> Tensor:
    """A copy of ``input`` converted to ``dtype`` (differentiable between floats)."""
    return ToCopy.apply(input, dtype)


class Clone(Function):
    backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a):
        from glasstorch._shape import dense_strides

        out = empty_tensor(a.shape, a.dtype, dense_strides(a.shape, a.stride()))
        kernels.copy(out._strided(), a._strided())
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own storage, recorded for autograd.

    A dense layout (say, a transposed matrix) keeps its strides; anything else
    becomes row-major.
    """
    return Clone.apply(input)


def ones_like_scalar(a: Tensor) -> Tensor:
    """A 0-d tensor holding 1 in ``a``'s dtype (for masking formulas)."""
    from glasstorch.tensor import wrap_scalar

    return wrap_scalar(1, a.dtype)


def ones_like_bool(a: Tensor) -> Tensor:
    """A 0-d True (broadcasts against ``a``)."""
    from glasstorch.tensor import wrap_scalar

    return wrap_scalar(True, _dtype.bool_)
