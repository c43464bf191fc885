"""Choosing values elementwise: maximum/minimum, clamp (values kept inside
bounds), where (one of two values by a condition) and masked_fill.

The gradient goes to the input each value was taken from; a tie in
maximum/minimum splits it in half, as PyTorch's does.
"""

from __future__ import annotations

from glasstorch import _dtype, _tier
from glasstorch.autograd.function import Function
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    as_operand,
    broadcast,
    common_device,
    is_number,
    strided_as,
)
from glasstorch.ops.creation import zeros
from glasstorch.ops.inplace import (
    apply_inplace,
    destination,
    write_inplace,
)
from glasstorch.ops.pointwise.comparison import as_tensor_like
from glasstorch.ops.pointwise.compute import (
    _check_both_tensors,
    _needs,
    compute_binary,
    ones_like_bool,
)
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


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
        device = common_device(condition, a, b)
        dtype = _dtype.result_type(a, b)
        shape = broadcast(condition, a, b)
        a, b = as_operand(a, dtype), as_operand(b, dtype)
        out = empty_tensor(shape, dtype, device=device)
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
        return condition.nonzero(as_tuple=True)
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
            out = empty_tensor(a.shape, a.dtype, device=a.device)
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


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum of two tensors (NaN wins)."""
    _check_both_tensors("maximum", input, other)
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum of two tensors (NaN wins)."""
    _check_both_tensors("minimum", input, other)
    return Minimum.apply(input, other)
