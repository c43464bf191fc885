"""Running an elementwise kernel, with no autograd: ``compute_binary`` and
``compute_unary`` promote, broadcast, allocate the output (on the operands'
device) and call the tier; the dtype rules and operand checks the pointwise
Functions share live here too.
"""

from __future__ import annotations

import functools
import math

from glasstorch import _dtype, _tier
from glasstorch._kernels import BOOL_RESULT_OPS, Strided
from glasstorch._shape import contiguous_strides, dense_strides, row_major_strides
from glasstorch._tier import cuda_active
from glasstorch.autograd.function import records_nothing
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    as_operand,
    broadcast,
    cast,
    check_tensor_or_number,
    common_device,
    default_float,
    strided_as,
)
from glasstorch.tensor import CPU, Tensor, empty_tensor, new_storage, wrap_scalar

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


def compute_binary(op: str, a, b, dtype=None, out=None) -> Tensor:
    """Run the binary kernel ``op`` on two operands (tensors or numbers), no autograd.

    Promotes to the common dtype (or ``dtype`` when given), broadcasts both
    operands to the common shape and allocates the output on their common
    device, or writes into ``out`` (a tensor of that shape) and returns it: see
    :func:`_write_result`. (Speed: two row-major tensors of one shape and dtype
    skip these steps, in the same-layout shortcut at the top.)
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
        # The same-layout shortcut, the common case: nothing to promote,
        # broadcast or lay out. It is recognised by comparing the strides with
        # the (cached) row-major strides, cheaper than is_contiguous()'s loop (a
        # size-1 dimension with another stride takes the general path below).
        # It is written out here rather than called: a one-element add is
        # mostly such fixed costs, and a call is one of them (about 50 ns).
        # What empty_tensor would check and compute (the size limits, the
        # strides) is known from ``a``: it exists, and its strides are the
        # row-major ones. The output takes a's very shape and strides tuples,
        # and its kernel view is made here, once, rather than by out._strided().
        result_dtype = _dtype.bool_ if op in BOOL_RESULT_OPS else a.dtype
        # common_device's own first test, made here to spare the call on the CPU.
        device = common_device(a, b) if cuda_active else CPU
        shape, stride = a._shape, a._stride
        count = math.prod(shape)  # numel(shape), without a call's cost
        storage = new_storage(count, result_dtype.numpy, device)
        result = Tensor._make(storage, shape, stride, 0, result_dtype)
        result._kernel_view = result_view = Strided(storage.buffer, shape, stride, 0)
        kernels.binary(op, result_view, a._strided(), b._strided())
        return result
    check_tensor_or_number(a, "input")
    check_tensor_or_number(b, "other")
    device = common_device(a, b)
    dtype = dtype or _dtype.result_type(a, b)
    result_dtype = _dtype.bool_ if op in BOOL_RESULT_OPS else dtype
    if _in_pieces(out, result_dtype):
        inplace.write_in_pieces(out, lambda _, x, y: compute_binary(op, x, y, dtype), (a, b))
        return out
    shape = broadcast(a, b)
    strides = output_strides(shape, a, b)
    a, b = as_operand(a, dtype), as_operand(b, dtype)
    result = _result_tensor(out, shape, result_dtype, strides, device)
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
    result = _result_tensor(out, shape, dtype, strides, common_device(a, b))
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


def _result_tensor(out, shape, dtype, strides, device) -> Tensor:
    """Where a kernel writes: ``out`` itself when it has the result's dtype (the
    caller made sure it has the result's shape), else a new tensor on ``device``."""
    if out is not None and out.dtype is dtype:
        return out
    return empty_tensor(shape, dtype, strides, device=device)


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


def compute_unary(op: str, a: Tensor, dtype=None, out=None) -> Tensor:
    """Run the unary kernel ``op`` on ``a`` (cast to ``dtype`` first), no autograd;
    into ``out`` (a tensor of a's shape) if given, as :func:`compute_binary` does."""
    out_dtype = _dtype.bool_ if op in BOOL_RESULT_OPS else (dtype or a.dtype)
    if _in_pieces(out, out_dtype):
        inplace.write_in_pieces(out, lambda _, x: compute_unary(op, x, dtype), (a,))
        return out
    if dtype is not None:
        a = cast(a, dtype)
    strides = output_strides(a.shape, a)
    result = _result_tensor(out, a.shape, out_dtype, strides, a.device)
    kernels.unary(op, result._strided(), a._strided())
    return _write_result(result, out)


def output_strides(shape, *operands):
    """Strides for an elementwise result: those of the first operand with the
    result's shape if it is dense (so ``x.t() + 1`` stays transposed, as in
    PyTorch), row-major otherwise."""
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


def ones_like_scalar(a: Tensor) -> Tensor:
    """A 0-d tensor holding 1 in ``a``'s dtype (for masking formulas)."""
    return wrap_scalar(1, a.dtype)


def ones_like_bool(a: Tensor) -> Tensor:
    """A 0-d True (broadcasts against ``a``)."""
    return wrap_scalar(True, _dtype.bool_)


def float_result_dtype(*operands):
    """The dtype a float-valued op (true division, atan2, logit...) computes in:
    the operands' result type, with integers and bools in the default float."""
    dtype = _dtype.result_type(*operands)
    return dtype if dtype.is_floating_point else default_float()


def _check_both_tensors(name: str, input, other) -> None:
    """maximum/minimum/logical_* take tensors; a number is a TypeError, as in PyTorch."""
    for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )


def fast_path_when_unrecorded(op: str, check=None):
    """Decorate the public binary op ``op`` (``add``, ``sub``, ``mul``) with a
    shortcut, taken when its Function would record nothing.

    The op's own body is the plain meaning (``Add.apply(input, other, alpha)``).
    Speed: with no graph to record (:func:`~glasstorch.autograd.function.records_nothing`),
    ``apply`` would only call ``forward``, which calls :func:`compute_binary`;
    calling it directly saves the context and the grad-mode switch, a large part
    of a small tensor's cost. The shortcut is taken for a tensor ``input`` and no
    keyword arguments; ``check(input, other)`` raises the op's own errors first.
    """

    def decorate(function):
        @functools.wraps(function)
        def op_or_fast_path(input, other, **options):
            if not options and isinstance(input, Tensor) and records_nothing(input, other):
                if check is not None:
                    check(input, other)
                return compute_binary(op, input, other)
            return function(input, other, **options)

        return op_or_fast_path

    return decorate
