"""Scans (running operations) along a dimension: cumsum, cumprod, cummax, cummin,
logcumsumexp and diff.

``cumsum`` has a kernel; the others are compositions of existing operations
(``cumprod`` one ``mul`` per step, ``cummax`` a running comparison), so they
run on every tier and device and get autograd from their parts. Where the
composition costs more than PyTorch's dedicated kernel (``logcumsumexp`` builds
an ``L x L`` matrix), the docstring says so.
"""

from __future__ import annotations

import builtins

from glasstorch import _dtype, _tier
from glasstorch._shape import normalize_dim
from glasstorch.autograd.function import Function
from glasstorch.ops.core import cast
from glasstorch.ops.creation import arange, zeros
from glasstorch.ops.pointwise.comparison import isnan
from glasstorch.ops.pointwise.selection import where
from glasstorch.ops.reduction import _sum_dtype, named_result
from glasstorch.ops.shape import from_front, movedim, to_front
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class Cumsum(Function):
    backward_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, a, dim, dtype):
        ctx.dim = dim
        a = cast(a, dtype)
        out = empty_tensor(a.shape, a.dtype, device=a.device)
        if a.dim() == 0:  # the running sum of one number is that number (in ``dtype``)
            kernels.copy(out._strided(), a._strided())
        else:
            kernels.cumsum(out._strided(), a._strided(), dim)
        return out

    @staticmethod
    def backward(ctx, grad):
        if grad.dim() == 0:
            return grad, None, None
        # Each input feeds every later output: reverse, running-sum, reverse back.
        return grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim), None, None


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sum along ``dim``, in ``dtype`` (integers and bool accumulate in int64).

    A 0-d tensor accepts dim 0 or -1 and gives its value, converted like the rest.
    """
    dim, dtype = normalize_dim(dim, input.dim()), _sum_dtype(input, dtype)
    check_running_dtype(input, dtype, "cumsum")
    return Cumsum.apply(input, dim, dtype)


def check_running_dtype(input: Tensor, dtype, name: str) -> None:
    """Refuse a running sum or product (``name``) computed in bool, as PyTorch does.

    PyTorch has no bool kernel for them; it needs none for a 0-d or an empty
    input, whose result is a copy.
    """
    if dtype is _dtype.bool_ and input.dim() > 0 and input.numel() > 0:
        raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")


def check_inplace_dtype(input: Tensor, dtype) -> None:
    """An in-place running op writes ``input``'s dtype: another ``dtype`` is an error."""
    if dtype is not None and dtype is not input.dtype:
        raise RuntimeError(
            f"Bad in-place call: input tensor dtype {input.dtype.c_name} and output tensor "
            f"dtype {dtype.c_name} should match"
        )


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running product along ``dim``.

    One multiplication per step along ``dim``, each a differentiable ``mul``,
    stacked at the end: the gradient is exact even where the input has zeros
    (the node is ``StackBackward0``, where PyTorch has ``CumprodBackward0``).
    Integers and bools accumulate in int64, as PyTorch's.
    """
    dim = normalize_dim(dim, input.dim())
    if dtype is None and not input.dtype.is_floating_point:
        dtype = _dtype.int64
    check_running_dtype(input, dtype or input.dtype, "cumprod")
    if dtype is not None:
        input = input.to(dtype)
    if input.dim() == 0:
        return input.clone()
    if input.shape[dim] == 0:
        return input.clone()
    running, steps = None, []
    for part in input.unbind(dim):
        running = part if running is None else running * part
        steps.append(running)
    return stack(steps, dim)


_CummaxResult = named_result("cummax", ["values", "indices"])


_CumminResult = named_result("cummin", ["values", "indices"])


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


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))``, computed without overflow or underflow.

    Output ``i`` along ``dim`` is the :func:`logsumexp` of inputs ``0..i``:
    the input is laid out as an ``L x L`` matrix, the entries after the
    diagonal set to ``-inf``, and each row reduced by ``logsumexp``. That costs
    ``L`` times the memory of the input, where PyTorch runs a scan.

    Example::

        >>> torch.logcumsumexp(torch.tensor([0.0, 0.0, 0.0]), 0)
        tensor([0.0000, 0.6931, 1.0986])
    """
    dim = normalize_dim(dim, input.dim())
    if input.dim() == 0:
        return input.clone()
    last = to_front(input, dim).permute(*range(1, input.dim()), 0)
    length = last.shape[-1]
    square = last.unsqueeze(-2).expand(*last.shape[:-1], length, length)
    position = arange(length, device=input.device)
    later = position.unsqueeze(0) > position.unsqueeze(1)  # [i, j]: j after i
    masked = square.masked_fill(later, float("-inf"))
    summed = masked.logsumexp(-1)
    return from_front(summed.permute(input.dim() - 1, *range(input.dim() - 1)), dim)


def diff(
    input: Tensor,
    n: int = 1,
    dim: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
) -> Tensor:
    """The ``n``-th forward difference along ``dim``: ``out[i] = input[i + 1] - input[i]``.

    ``prepend`` and ``append`` are joined to ``input`` along ``dim`` first. For
    bool tensors the difference is "not equal".

    Example::

        >>> torch.diff(torch.tensor([1, 3, 2]))
        tensor([ 2, -1])
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = normalize_dim(dim, input.dim())
    parts = [t for t in (prepend, input, append) if t is not None]
    out = cat(parts, dim) if len(parts) > 1 else input
    # Each difference is one shorter, so after ``length`` of them nothing is left:
    # a larger ``n`` gives the same empty result (and must not loop n times).
    for _ in range(min(n, out.shape[dim])):
        length = out.shape[dim]
        later, earlier = out.narrow(dim, 1, length - 1), out.narrow(dim, 0, length - 1)
        out = later != earlier if out.dtype is _dtype.bool_ else later - earlier
    return out
