"""Counting, binning, searching and distances: ``unique``, ``bincount``, ``histc``,
``searchsorted``, ``bucketize``, ``cdist``, ``cartesian_prod``, ``block_diag``,
``nan_to_num``, ``logcumsumexp``, ``diff``, ``isinf``, ``isfinite``.

Each is a composition of operations glasstorch already has (``sort``,
comparisons, ``cumsum``, ``index_add``, ``where``, ``cat``), so it runs on every
tier and device, and the differentiable ones get autograd from their parts.
Where the composition costs more than PyTorch's dedicated kernel (``searchsorted``
compares every value with every boundary, ``logcumsumexp`` builds an
``L x L`` matrix), the docstring says so.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._shape import normalize_dim
from glasstorch.ops.creation import arange, ones, zeros
from glasstorch.ops.pointwise import isnan, where
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor

__all__ = [
    "bincount",
    "block_diag",
    "bucketize",
    "cartesian_prod",
    "cdist",
    "diff",
    "histc",
    "isfinite",
    "isinf",
    "logcumsumexp",
    "nan_to_num",
    "nan_to_num_",
    "searchsorted",
    "unique",
    "unique_consecutive",
]

_INTEGRAL = (_dtype.uint8, _dtype.int32, _dtype.int64)


def _type_name(dtype) -> str:
    """PyTorch's short type name in "not implemented for 'Float'" messages."""
    return dtype.legacy_name[:-6]


# ============================================================== classification


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
    from glasstorch.ops.composites import finfo

    info = finfo(input.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(input), nan, input)
    out = where(input == float("inf"), posinf, out)
    return where(input == float("-inf"), neginf, out)


def nan_to_num_(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """In-place :func:`nan_to_num`, written into ``input`` (see more_math.nan_to_num_)."""
    from glasstorch.ops.more_math import nan_to_num_ as write

    return write(input, nan, posinf, neginf)


# ================================================================== unique


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
    moved = _to_front(input, dim)
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
    output = _from_front(moved.index_select(0, index), dim)
    return _result(
        output, _long(run_of, input), _long(counts, input), return_inverse, return_counts
    )


def _to_front(input: Tensor, dim: int) -> Tensor:
    """A view of ``input`` with dimension ``dim`` moved to the front."""
    order = [dim] + [d for d in range(input.dim()) if d != dim]
    return input.permute(*order)


def _from_front(input: Tensor, dim: int) -> Tensor:
    """Undo :func:`_to_front`: the front dimension goes back to position ``dim``."""
    order = list(range(1, dim + 1)) + [0] + list(range(dim + 1, input.dim()))
    return input.permute(*order)


def _long(values: list[int], like: Tensor) -> Tensor:
    from glasstorch.ops.creation import tensor

    return tensor(values, dtype=_dtype.int64, device=like.device)


# ================================================================ counting


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
        raise NotImplementedError(
            f"\"bincount_cpu\" not implemented for '{_type_name(input.dtype)}'"
        )
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
        raise NotImplementedError(
            f"\"histogram_cpu\" not implemented for '{_type_name(input.dtype)}'"
        )
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


# ================================================================ searching


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
    values = _as_tensor(input, sorted_sequence)
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


def _as_tensor(value, like: Tensor) -> Tensor:
    from glasstorch.ops.creation import tensor

    return value if isinstance(value, Tensor) else tensor(value, device=like.device)


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


# ================================================================ distances


def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` and each row of ``x2``.

    ``out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p``, from the
    broadcast difference (``P x R x M`` elements per batch). The gradient of a
    zero distance is zero, as in PyTorch.

    Args:
        x1: ``(*, P, M)``.
        x2: ``(*, R, M)``.
        p: the norm, ``>= 0`` (``float("inf")`` for the largest difference).
        compute_mode: accepted for compatibility.

    Shape:
        - Output: ``(*, P, R)``.

    Example::

        >>> torch.cdist(torch.zeros(1, 2), torch.tensor([[3.0, 4.0]]))
        tensor([[5.]])
    """
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    difference = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == float("inf"):
        return difference.amax(-1)
    if p == 0:
        return (difference != 0).sum(-1).to(difference.dtype)
    if p == 1:
        return difference.sum(-1)
    powered = (difference * difference).sum(-1) if p == 2 else difference.pow(p).sum(-1)
    positive = powered > 0
    safe = where(positive, powered, 1.0)
    return where(positive, safe.pow(1.0 / p), 0.0)


# ============================================================ constructions


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-D tensor, one per row.

    Example::

        >>> torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    from glasstorch.ops.composites import meshgrid

    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (each 0-, 1- or 2-D) as blocks along the diagonal of a zero matrix.

    A 0-D tensor is a ``1 x 1`` block, a 1-D tensor of ``n`` a ``1 x n`` row.
    The result has the promoted dtype of all the tensors.

    Example::

        >>> torch.block_diag(torch.ones(2, 2), torch.tensor([5.0]))
        tensor([[1., 1., 0.],
                [1., 1., 0.],
                [0., 0., 5.]])
    """
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} "
                f"has {t.dim()} dimensions"
            )
    if not tensors:
        return zeros((1, 0))
    dtype = _dtype.result_type(*tensors)
    device = tensors[0].device
    blocks = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for block in blocks:
        height, cols = block.shape
        pieces = [
            zeros((height, left), dtype=dtype, device=device),
            block.to(dtype),
            zeros((height, width - left - cols), dtype=dtype, device=device),
        ]
        rows.append(cat(pieces, 1))
        left += cols
    return cat(rows, 0)


# ================================================================= scanning


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
    last = _to_front(input, dim).permute(*range(1, input.dim()), 0)
    length = last.shape[-1]
    square = last.unsqueeze(-2).expand(*last.shape[:-1], length, length)
    position = arange(length, device=input.device)
    later = position.unsqueeze(0) > position.unsqueeze(1)  # [i, j]: j after i
    masked = square.masked_fill(later, float("-inf"))
    summed = masked.logsumexp(-1)
    return _from_front(summed.permute(input.dim() - 1, *range(input.dim() - 1)), dim)


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
