"""The ``reduction`` argument of the losses, and PyTorch's deprecated
``size_average``/``reduce`` flags that map onto it.

Used by both :mod:`glasstorch.nn.functional.loss` and
:mod:`glasstorch.nn.modules.loss` (PyTorch keeps this in ``torch/nn/_reduction.py``).
"""

from __future__ import annotations

import warnings

from glasstorch.ops.pointwise import where
from glasstorch.tensor import Tensor


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    """Apply ``reduction``: ``'none'`` (as is), ``'mean'`` or ``'sum'``."""
    if reduction == "none":
        return losses
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """Translate PyTorch's deprecated ``size_average``/``reduce`` flags into ``reduction``.

    Both default to true; ``reduce=False`` means ``'none'``, otherwise
    ``size_average`` picks ``'mean'`` over ``'sum'``.
    """
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        f"reduction='{reduction}' instead.",
        UserWarning,
        stacklevel=4,
    )
    return reduction


def _sample_weights(target: Tensor, weight: Tensor | None, ignore_index: int, dtype):
    """Each row's weight: ``weight[target]`` (or 1), and 0 for ignored rows."""
    kept = target != ignore_index
    if weight is None:
        return kept.to(dtype)
    safe = where(kept, target, 0)
    return weight.index_select(0, safe) * kept


def _reduce_weighted(losses: Tensor, weights: Tensor, reduction: str, shape) -> Tensor:
    """PyTorch's class-loss reductions: the weighted mean divides by the weights' sum."""
    if reduction == "none":
        return losses if tuple(losses.shape) == tuple(shape) else losses.reshape(shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / weights.sum()
