"""Order statistics: sort, argsort, msort, topk, median, nanmedian, quantile,
nanquantile, unique, unique_consecutive, bincount, histc, searchsorted and
bucketize.

``sort`` goes through the contract's ``sort`` kernel, which sorts each 1-D
slice along a dimension, stably; the gradient of a value moved from position
``i`` to position ``j`` goes back to position ``i`` (a scatter through the
indices). The others are compositions of ``sort``, comparisons, ``cumsum`` and
``index_add``; where one costs more than PyTorch's kernel (``searchsorted``
compares every value with every boundary), its docstring says so.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from glasstorch import _dtype, _tier
from glasstorch._shape import normalize_dim
from glasstorch.autograd.function import Function
from glasstorch.ops.creation import as_tensor_on, ones, tensor, zeros
from glasstorch.ops.pointwise.comparison import isnan
from glasstorch.ops.pointwise.selection import where
from glasstorch.ops.reduction import _ValuesIndices, named_result
from glasstorch.ops.shape import from_front, movedim, to_front
from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

#: What ``sort`` and ``topk`` return: PyTorch's named tuples ``(values, indices)``.
sort_result = type(
    "sort", (_ValuesIndices, namedtuple("sort", ["values", "indices"])), {"__slots__": ()}
)
topk_result = type(
    "topk", (_ValuesIndices, namedtuple("topk", ["values", "indices"])), {"__slots__": ()}
)


def _sorted_raw(a: Tensor, dim: int, descending: bool) -> tuple[Tensor, Tensor]:
    """Values and indices of ``a`` sorted along ``dim`` (no autograd)."""
    values = empty_tensor(a._shape, a.dtype, device=a.device)
    indices = empty_tensor(a._shape, _dtype.int64, device=a.device)
    kernels.sort(values._strided(), indices._strided(), a._strided(), dim, descending)
    return values, indices


class Sort(Function):
    """Sort along ``dim`` and keep the first ``k`` of each slice (all of it for sort)."""

    backward_name = "SortBackward0"

    @staticmethod
    def forward(ctx, a, dim, descending, k):
        ctx.input_shape, ctx.dim = a.shape, dim
        values, indices = _sorted_raw(a, dim, descending)
        if k != a.shape[dim]:
            values, indices = values.narrow(dim, 0, k), indices.narrow(dim, 0, k)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad, grad_indices):
        (indices,) = ctx.saved_tensors
        input_grad = zeros(ctx.input_shape, dtype=grad.dtype, device=grad.device)
        return input_grad.scatter(ctx.dim, indices, grad), None, None, None


class Topk(Sort):
    backward_name = "TopkBackward0"


def _as_1d(input: Tensor) -> tuple[Tensor, bool]:
    """A 0-d tensor sorts as one element: PyTorch treats it as shape ``(1,)``."""
    return (input.reshape(1), True) if input.dim() == 0 else (input, False)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Sort ``input`` along ``dim``; returns the named tuple ``(values, indices)``.

    The sort is always stable (equal elements keep their order), which is one
    of the orders PyTorch's ``stable=False`` may give, and the one it gives
    with ``stable=True``.

    Example:
        >>> torch.sort(torch.tensor([3, 1, 2])).indices
        tensor([1, 2, 0])
    """
    flat, was_scalar = _as_1d(input)
    dim = normalize_dim(dim, flat.dim())
    values, indices = Sort.apply(flat, dim, bool(descending), flat.shape[dim])
    if was_scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return sort_result(values, indices)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    return sort(input.detach(), dim, descending, stable).indices


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest, ``largest=False``) elements along ``dim``.

    Returns the named tuple ``(values, indices)``. The values always come in
    sorted order (PyTorch's ``sorted=False`` leaves the order unspecified).
    """
    flat, was_scalar = _as_1d(input)
    dim = normalize_dim(dim, flat.dim())
    if not 0 <= k <= flat.shape[dim]:
        raise RuntimeError("selected index k out of range")
    values, indices = Topk.apply(flat, dim, bool(largest), int(k))
    if was_scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return topk_result(values, indices)


_MedianResult = named_result("median", ["values", "indices"])


_NanMedianResult = named_result("nanmedian", ["values", "indices"])


def _check_nonempty_dim(input: Tensor, dim: int, name: str) -> None:
    if input.dim() and input.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    name = "nanmedian" if ignore_nan else "median"
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return tensor(math.nan, dtype=input.dtype, device=input.device)
        values, _ = _median(flat, 0, False, ignore_nan)
        return values
    dim = normalize_dim(dim, builtins.max(input.dim(), 1))
    if input.dim() == 0:
        return (_NanMedianResult if ignore_nan else _MedianResult)(
            input.clone(), zeros((), dtype=_dtype.int64, device=input.device)
        )
    _check_nonempty_dim(input, dim, name)
    length = input.shape[dim]
    values, order = input.detach().sort(dim, stable=True)  # NaN sorts last
    detached = input.detach()
    nans = (detached != detached).sum(dim, keepdim=True)  # NaN is the only x != x
    numbers = length - nans
    if ignore_nan:
        # an all-NaN slice gives its first element (PyTorch: whichever NaN its selection leaves)
        rank = ((numbers - 1) // 2).clamp_min(0)
    else:  # a NaN anywhere is the median: the first NaN in sorted order
        rank = where(nans > 0, numbers, (length - 1) // 2)
    indices = order.gather(dim, rank)
    result = _NanMedianResult if ignore_nan else _MedianResult
    chosen = input.gather(dim, indices)
    if not keepdim:
        chosen, indices = chosen.squeeze(dim), indices.squeeze(dim)
    return result(chosen, indices)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """The lower median (of two middle values, the smaller); with ``dim``, ``(values, indices)``.

    Without ``dim`` the whole tensor gives one number. A NaN makes the median
    NaN. Found by sorting (``O(n log n)``), where PyTorch selects in ``O(n)``;
    for tied values the index may differ from PyTorch's.

    Example::

        >>> torch.median(torch.tensor([4.0, 1.0, 3.0, 2.0]))
        tensor(2.)
    """
    return _median(input, dim, keepdim, ignore_nan=False)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """:func:`median` ignoring NaN (NaN only where every element is NaN).

    For a slice of NaN only, the index is its first element's; PyTorch's is
    whichever NaN its selection algorithm leaves in the middle.
    """
    return _median(input, dim, keepdim, ignore_nan=True)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.dtype.is_floating_point:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q = tensor([float(q)], dtype=input.dtype, device=input.device)
    else:
        if q.dim() > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        scalar_q = q.dim() == 0
        q = q.reshape(-1)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    # Lay the values out as columns: (L, R), L values in each of R rows.
    if dim is None:
        rows = input.reshape(-1, 1)
        dim_out = 0
    else:
        dim_out = normalize_dim(dim, builtins.max(input.dim(), 1))
        rows = input.reshape(1) if input.dim() == 0 else input
        rows = movedim(rows, dim_out, 0).reshape(rows.shape[dim_out], -1)
    # rows: (L, R). Sort each column, NaN last.
    values, _ = rows.sort(0)
    length = rows.shape[0]
    nans = isnan(rows.detach()).sum(0, keepdim=True)  # (1, R)
    if ignore_nan:
        last = (length - nans - 1).to(input.dtype)
    else:
        last = zeros(nans.shape, dtype=input.dtype, device=input.device) + (length - 1)
    ranks = q.unsqueeze(1) * last.clamp_min(0)  # (Q, R)
    if interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().long().clamp(0, length - 1)
    above = ranks.ceil().long().clamp(0, length - 1)
    low = values.gather(0, below)
    high = values.gather(0, above)
    if interpolation in ("lower", "nearest"):
        out = (
            low if interpolation == "lower" else values.gather(0, ranks.long().clamp(0, length - 1))
        )
    elif interpolation == "higher":
        out = high
    else:
        weight = 0.5 if interpolation == "midpoint" else (ranks - below.to(input.dtype))
        out = low + weight * (high - low)
    missing = (nans == length) if ignore_nan else (nans > 0)
    out = where(missing, math.nan, out)  # (Q, R)
    return _shape_quantile(out, input, dim, dim_out, keepdim, scalar_q)


def _shape_quantile(out, input, dim, dim_out, keepdim, scalar_q):
    """Reshape the ``(Q, R)`` result: q's dim first, then the input's dims (``dim`` kept or not)."""
    count = out.shape[0]
    if dim is None or input.dim() == 0:
        shape = [1] * input.dim() if keepdim else []
    else:
        shape = list(input.shape)
        shape[dim_out] = 1
        if not keepdim:
            del shape[dim_out]
    out = out.reshape(count, *shape)
    return out.squeeze(0) if scalar_q else out


def quantile(
    input: Tensor,
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles of ``input`` (of all of it, or along ``dim``).

    For each ``q`` in ``[0, 1]`` the rank ``q * (n - 1)`` into the sorted
    values is interpolated between its neighbours: ``linear`` by the fraction,
    ``lower``/``higher`` take the neighbour below/above, ``nearest`` the
    nearer (half to even), ``midpoint`` their mean. A NaN makes its row NaN.

    Args:
        input: a float tensor.
        q: a float, or a 1-D tensor of ``input``'s dtype (its dimension comes first
            in the result).
        dim: the dimension to reduce; ``None`` reduces all of them.
        keepdim: keep reduced dimensions as size 1.
        interpolation: see above. Default: ``"linear"``.

    Example::

        >>> torch.quantile(torch.tensor([1.0, 2.0, 4.0]), 0.25)
        tensor(1.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(
    input: Tensor,
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """:func:`quantile` ignoring NaN (a row that is all NaN gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


_INTEGRAL = (_dtype.uint8, _dtype.int32, _dtype.int64)


def _run_starts(values: Tensor) -> Tensor:
    """A bool per element of 1-D ``values``: True where a run of equal values begins."""
    first = ones((1,), dtype=_dtype.bool_, device=values.device)
    return cat([first, values[1:] != values[:-1]])


def _runs(values: Tensor, return_inverse: bool, return_counts: bool):
    """The first value of each run of 1-D ``values``, each element's run, each run's length."""
    if values.numel() == 0:
        empty = zeros((0,), dtype=_dtype.int64, device=values.device)
        return values, empty, empty
    starts = _run_starts(values)
    run_of = starts.long().cumsum(0) - 1
    firsts = values[starts]
    counts = None
    if return_counts:
        counts = zeros((firsts.shape[0],), dtype=_dtype.int64, device=values.device)
        counts = counts.index_add(
            0, run_of, ones(run_of.shape, dtype=_dtype.int64, device=values.device)
        )
    return firsts, run_of, counts


def _result(output, inverse, counts, return_inverse: bool, return_counts: bool):
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """The distinct elements of ``input``, in ascending order.

    The elements are sorted (stably), and each run of equal values gives one
    output. ``sorted=False`` returns them sorted too, as PyTorch does on the CPU.

    Args:
        input: any tensor.
        sorted: accepted for compatibility; the output is always sorted.
        return_inverse: also return, for each input element, the position of
            its value in the output (shaped like ``input``).
        return_counts: also return how often each distinct value occurs.
        dim: the distinct slices along ``dim`` instead of distinct elements.

    Example::

        >>> torch.unique(torch.tensor([3, 1, 3, 2]), return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    if dim is not None:
        return _unique_dim(input, dim, return_inverse, return_counts)
    flat = input.reshape(-1)
    values, order = flat.sort(stable=True)
    output, run_of, counts = _runs(values, return_inverse, return_counts)
    inverse = None
    if return_inverse:
        inverse = zeros(flat.shape, dtype=_dtype.int64, device=input.device)
        inverse = inverse.scatter(0, order, run_of).reshape(input.shape)
    return _result(output, inverse, counts, return_inverse, return_counts)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
):
    """One element of each run of equal consecutive elements (like Unix ``uniq``).

    Args:
        input: any tensor (flattened unless ``dim`` is given).
        return_inverse: also return each element's run (shaped like ``input``).
        return_counts: also return each run's length.
        dim: runs of equal slices along ``dim`` instead.

    Example::

        >>> torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]))
        tensor([1, 2, 3, 1])
    """
    if dim is not None:
        return _unique_dim(input, dim, return_inverse, return_counts, consecutive=True)
    output, run_of, counts = _runs(input.reshape(-1), return_inverse, return_counts)
    inverse = run_of.reshape(input.shape) if return_inverse else None
    return _result(output, inverse, counts, return_inverse, return_counts)


def _unique_dim(input: Tensor, dim: int, return_inverse, return_counts, consecutive=False):
    """``unique`` over slices along ``dim``: slices compare as tuples of their elements."""
    dim = normalize_dim(dim, input.dim())
    moved = to_front(input, dim)
    rows = [tuple(row) for row in moved.reshape(moved.shape[0], -1).tolist()]
    order = list(range(len(rows)))
    if not consecutive:
        order.sort(key=lambda i: rows[i])
    keep, run_of, counts = [], [0] * len(rows), []
    for position, i in enumerate(order):
        if position == 0 or rows[i] != rows[order[position - 1]]:
            keep.append(i)
            counts.append(0)
        run_of[i] = len(keep) - 1
        counts[-1] += 1
    index = _long(keep, input)
    output = from_front(moved.index_select(0, index), dim)
    return _result(
        output, _long(run_of, input), _long(counts, input), return_inverse, return_counts
    )


def _long(values: list[int], like: Tensor) -> Tensor:
    return tensor(values, dtype=_dtype.int64, device=like.device)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value from 0 to ``max(input)`` occurs in a 1-D tensor of non-negative integers.

    With ``weights``, each occurrence adds its weight instead of 1.

    Args:
        input: 1-D, non-negative integers.
        weights: 1-D, as long as ``input``.
        minlength: the least length of the result.

    Returns:
        ``max(max(input) + 1, minlength)`` counts: int64, or the weights' float
        dtype (float64 for integer weights).

    Example::

        >>> torch.bincount(torch.tensor([0, 1, 1, 3]))
        tensor([1, 2, 0, 1])
    """
    if input.dtype not in _INTEGRAL and input.dtype is not _dtype.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype.title}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.dim() != 1 or (input.numel() and int(input.min().item()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(int(input.max().item()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        dtype, weights = _dtype.int64, ones(input.shape, dtype=_dtype.int64, device=input.device)
    else:
        dtype = weights.dtype if weights.dtype.is_floating_point else _dtype.float64
        weights = weights.to(dtype)
    return zeros((length,), dtype=dtype, device=input.device).index_add(0, input.long(), weights)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of ``input`` with ``bins`` equal-width bins between ``min`` and ``max``.

    Elements outside ``[min, max]`` (and NaN) are not counted; an element equal
    to ``max`` counts in the last bin. ``min == max`` (the default) takes the
    data's smallest and largest elements; if those are equal too, the range is
    widened by 1 each way.

    Example::

        >>> torch.histc(torch.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.title}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    low, high = float(min), float(max)
    if low == high and input.numel():
        low, high = float(input.min().item()), float(input.max().item())
    if low == high:
        low, high = low - 1, high + 1
    flat = input.reshape(-1)
    inside = (flat >= low) & (flat <= high)
    kept = flat[inside]
    position = ((kept - low) * (bins / (high - low))).floor().long().clamp(0, bins - 1)
    counts = zeros((bins,), dtype=input.dtype, device=input.device)
    return counts.index_add(
        0, position, ones(position.shape, dtype=input.dtype, device=input.device)
    )


def searchsorted(
    sorted_sequence: Tensor,
    input,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """Where each of ``input`` would go in ``sorted_sequence`` to keep it sorted.

    The index is the number of boundaries below the value (``right=False``:
    ``<``; ``right=True`` or ``side="right"``: ``<=``). It is computed by
    comparing every value with every boundary of its row, ``O(n * m)``, where
    PyTorch runs a binary search.

    Args:
        sorted_sequence: 1-D, or ``(*, M)`` with the same leading dimensions as ``input``.
        input: the values, a tensor or a number.
        out_int32: return int32 instead of int64.
        right, side: which side of equal boundaries to go to.
        sorter: indices that sort ``sorted_sequence`` along its last dimension.

    Example::

        >>> torch.searchsorted(torch.tensor([1, 3, 5, 7]), torch.tensor([3, 6, 9]))
        tensor([1, 3, 4])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = as_tensor_on(input, sorted_sequence)
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    if sorted_sequence.dim() != 1 and (
        sorted_sequence.dim() != values.dim()
        or tuple(sorted_sequence.shape[:-1]) != tuple(values.shape[:-1])
    ):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
            f"{list(values.shape)}"
        )
    out = _count_below(sorted_sequence, values, right)
    out = out.int() if out_int32 else out
    return out.reshape(()) if scalar else out


def _count_below(boundaries: Tensor, values: Tensor, right: bool) -> Tensor:
    """For each value, how many boundaries of its row are below it (``<=`` with ``right``)."""
    column = values.unsqueeze(-1)
    rows = boundaries if boundaries.dim() == 1 else boundaries.unsqueeze(-2)
    below = rows <= column if right else rows < column
    return below.sum(-1)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False):
    """The bucket of each of ``input`` among 1-D, ascending ``boundaries``.

    ``right=False``: ``boundaries[i - 1] < x <= boundaries[i]`` gives ``i``;
    ``right=True``: ``boundaries[i - 1] <= x < boundaries[i]``. It is
    :func:`searchsorted` with the arguments swapped.

    Example::

        >>> torch.bucketize(torch.tensor([3, 6, 9]), torch.tensor([1, 3, 5, 7]))
        tensor([1, 3, 4])
    """
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
