"""Writing an elementwise result into its input: ``x.exp_()``, ``x.pow_(y)``.

The kernel is handed ``x`` itself as its output, so no temporary the size of
``x`` is made. ``write_composed`` does the same for an op composed of several
kernels (``fmod_``, ``lerp_``, ...): it runs on pieces of ``x``
(:func:`~glasstorch.ops.inplace.write_in_pieces`).
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._kernels import BOOL_RESULT_OPS
from glasstorch._shape import broadcast_shapes
from glasstorch.ops import inplace
from glasstorch.ops.core import (
    common_device,
)
from glasstorch.ops.creation import zeros
from glasstorch.ops.inplace import (
    apply_inplace,
    write_inplace,
    write_values,
)
from glasstorch.ops.pointwise.compute import _float_dtype, compute_binary, compute_unary
from glasstorch.tensor import Tensor


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


def function_inplace(function, target: Tensor, other, dtype, compute) -> Tensor:
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


def zero_gradient(grad: Tensor) -> Tensor:
    return zeros((), dtype=grad.dtype, device=grad.device).expand(grad.shape)


def write_composed(function, target: Tensor, dtype, *args) -> Tensor:
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


def not_differentiable(name: str):
    def derivative(g, x, y, *args):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return derivative
