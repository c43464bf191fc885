"""Comparisons and tests, elementwise: eq/ne/lt/le/gt/ge (and their long names),
logical and bitwise ops, isnan/isinf/isfinite, and equal/allclose/isclose.

None is differentiable: each result is bool (or an integer for bitwise ops),
computed by one kernel call.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.ops.core import (
    default_float,
    is_number,
)
from glasstorch.ops.creation import ones, tensor, zeros
from glasstorch.ops.pointwise.compute import _check_both_tensors, compute_binary, compute_unary
from glasstorch.ops.pointwise.in_place import kernel_inplace
from glasstorch.tensor import Tensor


def as_tensor_like(number, other) -> Tensor:
    """A number as a 0-d tensor, for ``number op tensor`` written the other way round."""
    return tensor(number, dtype=_dtype.scalar_dtype(number)) if is_number(number) else number


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


def bitwise_inplace(op: str, input: Tensor, other) -> Tensor:
    """``input.bitwise_and_(other)`` and its kind, written into ``input``."""
    dtype = _dtype.result_type(input, other)
    if _dtype.can_cast(dtype, input.dtype) and dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{dtype.title}'")
    return kernel_inplace(op, input, other, dtype)


def isinf(input: Tensor) -> Tensor:
    """Elementwise test for ``+inf`` or ``-inf``; returns bool.

    Example::

        >>> torch.isinf(torch.tensor([1.0, float("inf"), float("nan")]))
        tensor([False,  True, False])
    """
    if not input.dtype.is_floating_point:
        return zeros(input.shape, dtype=_dtype.bool_, device=input.device)
    return input.abs() == float("inf")


def isfinite(input: Tensor) -> Tensor:
    """Elementwise test for a finite number (neither infinite nor NaN); returns bool.

    Example::

        >>> torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")]))
        tensor([ True, False, False])
    """
    if not input.dtype.is_floating_point:
        return ones(input.shape, dtype=_dtype.bool_, device=input.device)
    return input.abs() < float("inf")
