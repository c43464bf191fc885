"""Loss functions of ``nn.functional`` (the functions of ``nn.modules.loss``).

Each loss is written as a formula of tensor operations (``_mse_formula``,
``_nll_formula``, ...). The ones PyTorch computes as single operations are
recorded as one node with PyTorch's name (``MseLossBackward0``, ...) through
:mod:`glasstorch.nn.fused.loss`; cross-entropy over class indices runs the
fused ``cross_entropy`` kernel there (log-softmax and negative log-likelihood
in one pass).
"""

from __future__ import annotations

import math
import warnings

from glasstorch import _dtype
from glasstorch.autograd.function import Function
from glasstorch.nn._reduction import (
    _check_reduction,
    _legacy,
    _legacy_reduction,
    _reduce,
    _reduce_weighted,
    _sample_weights,
)
from glasstorch.nn.functional._utils import _size_list
from glasstorch.nn.functional.activation import logsigmoid, softplus
from glasstorch.nn.functional.distance import pairwise_distance
from glasstorch.nn.fused.loss import (
    BinaryCrossEntropyNode,
    BinaryCrossEntropyWithLogits,
    CrossEntropyIndices,
    HuberLoss,
    MseLoss,
    NllLoss,
    SmoothL1Loss,
)
from glasstorch.ops.creation import full as _filled
from glasstorch.ops.creation import zeros
from glasstorch.ops.indexing import masked_select
from glasstorch.ops.pointwise import where
from glasstorch.ops.reduction import log_softmax as _log_softmax
from glasstorch.tensor import Tensor


def _broadcast_pair(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` broadcast to one shape, as PyTorch's losses take them.

    So a 0-dim float64 target makes a float32 input's loss float64: once
    expanded it is no longer 0-dim, and promotes like any other tensor.
    """
    if target.shape == input.shape:
        return input, target
    from glasstorch._shape import broadcast_shapes

    shape = broadcast_shapes(input.shape, target.shape)
    return input.expand(shape), target.expand(shape)


def _warn_on_broadcast(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def mse_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Mean squared error: ``(input - target) ** 2``, reduced.

    ``size_average``/``reduce`` are PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return MseLoss.apply(_mse_formula, (reduction,), input, target)


def _mse_formula(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    # -- solution: nn/losses
    difference = input - target
    return _reduce(difference * difference, reduction)
    # -- end solution


def l1_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Mean absolute error: ``|input - target|``, reduced.

    ``size_average``/``reduce`` are PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``d = input - target``).

    With ``beta = 0`` it is the L1 loss. ``size_average``/``reduce`` are
    PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return SmoothL1Loss.apply(_smooth_l1_formula, (reduction, beta), input, target)


def _smooth_l1_formula(input: Tensor, target: Tensor, reduction: str, beta: float) -> Tensor:
    distance = (input - target).abs()
    if beta == 0:
        return _reduce(distance, reduction)
    losses = where(distance < beta, distance * distance * (0.5 / beta), distance - 0.5 * beta)
    return _reduce(losses, reduction)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0
) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere.

    Equal to ``delta * smooth_l1_loss(beta=delta)``.
    """
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_on_broadcast(input, target)
    return HuberLoss.apply(_huber_formula, (reduction, delta), input, target)


def _huber_formula(input: Tensor, target: Tensor, reduction: str, delta: float) -> Tensor:
    distance = (input - target).abs()
    losses = where(distance < delta, distance * distance * 0.5, (distance - 0.5 * delta) * delta)
    # PyTorch writes the losses into a tensor like the input: a float64 target
    # does not make a float32 input's loss float64 (unlike mse_loss).
    return _reduce(losses.to(input.dtype), reduction)


def _check_class_target(input: Tensor, target: Tensor) -> Tensor:
    """Validate an integer class target against ``input``'s shape; return it as int64."""
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype.legacy_name[:-6]}"
        )
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
    if tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    return target.long()


def _rows_of_classes(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Move the class dimension last and flatten: ``(M, C)`` scores, ``(M,)`` targets.

    ``(C,)`` with a 0-d target is one row; ``(N, C, d1, ...)`` gives ``N*d1*...`` rows.
    """
    if input.dim() == 1:
        return input.unsqueeze(0), target.reshape(1)
    if input.dim() == 2:
        return input, target  # already rows of scores (the usual case: no view to record)
    if input.dim() > 2:
        order = (0,) + tuple(range(2, input.dim())) + (1,)
        input = input.permute(order)
    return input.reshape(-1, input.shape[-1]), target.reshape(-1)


def _check_targets_in_range(target: Tensor, classes: int, ignore_index: int) -> None:
    if target.numel() == 0:
        return
    if 0 <= int(target.min()) and int(target.max()) < classes:
        return  # the usual case, settled by two reductions
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    if bad.any():
        first = masked_select(target, bad)[0].item()
        raise IndexError(f"Target {first} is out of bounds.")


def _check_weight(weight: Tensor | None, classes: int) -> None:
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood: ``-weight[t] * input[i, t]`` for each sample's class ``t``.

    Args:
        input: log-probabilities, ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: class indices, ``(N,)``, ``(N, d1, ...)`` or ``()``.
        weight: a weight per class, ``(C,)``.
        ignore_index: a target value that contributes nothing (not even to the mean).
        reduction: ``'mean'`` divides by the summed weights of the counted samples.
        size_average, reduce: PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _check_class_target(input, target)
    rows, flat_target = _rows_of_classes(input, target)
    classes = rows.shape[1]
    _check_weight(weight, classes)
    _check_targets_in_range(flat_target, classes, ignore_index)
    options = (ignore_index, reduction)
    return NllLoss.apply(_nll_formula, options, input, target, weight)


def _nll_formula(input, target, weight, ignore_index: int, reduction: str) -> Tensor:
    rows, flat_target = _rows_of_classes(input, target)
    kept = flat_target != ignore_index
    picked = rows.gather(1, where(kept, flat_target, 0).unsqueeze(1)).squeeze(1)
    weights = _sample_weights(flat_target, weight, ignore_index, rows.dtype)
    # an ignored sample is skipped, not multiplied by 0 (a NaN there must not count)
    losses = where(kept, -picked * weights, 0.0)
    return _reduce_weighted(losses, weights, reduction, target.shape)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between ``softmax(input)`` along dimension 1 and the targets.

    Args:
        input: unnormalized scores (logits), ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: class indices (int64, the shape of ``input`` without dimension 1),
            or class probabilities (float, ``input``'s shape).
        weight: a weight per class, ``(C,)``.
        ignore_index: a class-index target value that contributes nothing.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. With class indices the
            mean divides by the summed weights of the counted samples; with
            probabilities it divides by the number of samples.
        label_smoothing: mix the targets with the uniform distribution:
            ``(1 - eps) * target + eps / C``.
        size_average, reduce: PyTorch's deprecated spelling of ``reduction``.

    Example::

        >>> logits = torch.randn(3, 5, requires_grad=True)
        >>> F.cross_entropy(logits, torch.tensor([1, 0, 4])).backward()
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    _check_weight(weight, classes)
    if target.dtype.is_floating_point and target.shape == input.shape:
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
    target = _check_class_target(input, target)
    if label_smoothing > 0:
        return _cross_entropy_smoothed(
            input, target, weight, ignore_index, reduction, label_smoothing
        )
    rows, flat_target = _rows_of_classes(input, target)
    if weight is not None:
        weight = weight.to(rows.dtype)
    loss = CrossEntropyIndices.apply(rows, flat_target, weight, ignore_index, reduction)
    if reduction == "none" and loss.shape != target.shape:
        loss = loss.reshape(target.shape)
    return loss


def _class_weights_along(weight: Tensor, input: Tensor, class_dim: int) -> Tensor:
    """``weight`` shaped to broadcast along ``input``'s class dimension."""
    shape = [1] * input.dim()
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing):
    """Cross-entropy against class probabilities: ``-sum_c w_c p_c log q_c`` per sample."""
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    log_probs = _log_softmax(input, class_dim)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = log_probs * target
    if weight is not None:
        products = products * _class_weights_along(weight, input, class_dim)
    if reduction == "none":
        return -products.sum(class_dim)
    if reduction == "sum":
        return -products.sum()
    return -products.sum() / (input.numel() / classes)


def _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing):
    """Class-index cross-entropy with label smoothing, as PyTorch defines it.

    ``(1 - eps) * nll + (eps / C) * smooth``, where ``smooth`` is each sample's
    ``-sum_c w_c log q_c`` (0 where ignored), reduced like ``nll``: the mean
    divides by the summed ``w[target]`` of the counted samples.
    """
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    log_probs = _log_softmax(input, class_dim)
    nll = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    weighted = log_probs
    if weight is not None:
        weighted = log_probs * _class_weights_along(weight, input, class_dim)
    smooth = -weighted.sum(class_dim)
    smooth = where(target != ignore_index, smooth, 0.0)  # skipped, not times 0 (NaN, inf)
    if reduction == "none":
        total = smooth
    elif reduction == "sum":
        total = smooth.sum()
    else:
        flat_target = target.reshape(-1)
        weights = _sample_weights(flat_target, weight, ignore_index, input.dtype)
        total = smooth.sum() / weights.sum()
    return nll * (1 - label_smoothing) + total * (label_smoothing / classes)


#: PyTorch clamps BCE's logarithms at -100 so that a 0 or 1 prediction stays finite.
_LOG_FLOOR = -100.0


#: ... and keeps the gradient's denominator ``x (1 - x)`` at least this large: 1e-12
#: rounded to float32, which is how PyTorch stores the constant.
_BCE_GRAD_EPS = 9.999999960041972e-13


class BinaryCrossEntropyElementwise(Function):
    """Elementwise ``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100."""

    backward_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        log_x = x.log().clamp(min=_LOG_FLOOR)
        log_1mx = (1 - x).log().clamp(min=_LOG_FLOOR)
        return -(t * log_x + (1 - t) * log_1mx)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=_BCE_GRAD_EPS)
        grad_t = None
        if ctx.needs_input_grad[1]:
            log_x = x.log().clamp(min=_LOG_FLOOR)
            log_1mx = (1 - x).log().clamp(min=_LOG_FLOOR)
            grad_t = grad * (log_1mx - log_x)
        return grad_x, grad_t


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy between probabilities ``input`` and targets in ``[0, 1]``.

    ``-weight * (target * log(input) + (1 - target) * log(1 - input))``, with
    each logarithm clamped at -100, reduced. ``size_average``/``reduce`` are
    PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if target.dtype is not input.dtype:  # PyTorch's kernel takes one dtype
        raise RuntimeError(f"Found dtype {target.dtype.title} but expected {input.dtype.title}")
    # (written so that NaN fails the test, as in PyTorch's check)
    if input.numel() and not bool(((input >= 0) & (input <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.numel() and not bool(((target >= 0) & (target <= 1)).all()):
        raise RuntimeError("all elements of target should be between 0 and 1")
    return BinaryCrossEntropyNode.apply(_bce_formula, (reduction,), input, target, weight)


def _bce_formula(input, target, weight, reduction: str) -> Tensor:
    losses = BinaryCrossEntropyElementwise.apply(input, target)
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy on logits: ``sigmoid`` and BCE in one stable formula.

    ``loss = (1 - t) x - l log(sigmoid(x))`` with ``l = 1 + (pos_weight - 1) t``
    (``l = 1`` without ``pos_weight``); ``log(sigmoid(x))`` is computed without
    overflow (:func:`logsigmoid`), so large logits are safe.

    Args:
        pos_weight: weight of the positive term, broadcast along the last
            dimension (one per class).
        size_average, reduce: PyTorch's deprecated spelling of ``reduction``.
    """
    reduction = _legacy(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    return BinaryCrossEntropyWithLogits.apply(
        _bce_with_logits_formula, (reduction,), input, target, weight, pos_weight
    )


def _bce_with_logits_formula(input, target, weight, pos_weight, reduction: str) -> Tensor:
    weighted = logsigmoid(input)
    if pos_weight is not None:
        # PyTorch multiplies in place into logsigmoid(input): the product keeps the
        # input's dtype (a float32 input rounds it to float32, where it may overflow)
        weighted = (weighted * ((pos_weight - 1) * target + 1)).to(input.dtype)

    # PyTorch computes the losses in place in ``1 - target``, so the target's
    # float dtype wins (a float64 input with a float32 target gives a float32
    # loss), and each in-place step is rounded to it (where it may overflow).
    def in_place(value: Tensor) -> Tensor:
        if target.dtype.is_floating_point and value.dtype is not target.dtype:
            return value.to(target.dtype)
        return value

    losses = in_place(in_place((1 - target) * input) - weighted)
    if weight is not None:
        losses = in_place(losses * weight)
    return _reduce(losses, reduction)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from the distribution whose log is ``input``.

    Pointwise ``target * (log(target) - input)`` (0 where ``target`` is 0), or
    ``exp(target) * (target - input)`` with ``log_target=True``. ``reduction``:
    ``'none'``, ``'sum'``, ``'mean'`` (over every element) or ``'batchmean'``
    (the sum divided by the batch size, the true KL divergence per example).
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if log_target:
        pointwise_loss = target.exp() * (target - input)
    else:
        # PyTorch's xlogy(target, target) - target * input: 0 * log(0) is 0, and a
        # negative target's log is NaN (the 1 stands in for a zero target's log)
        entropy = target * where(target == 0, 1.0, target).log()
        pointwise_loss = entropy - target * input
    if reduction == "none":
        return pointwise_loss
    if reduction == "sum":
        return pointwise_loss.sum()
    if reduction == "batchmean":
        return pointwise_loss.sum() / (input.shape[0] if input.dim() else 1)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
        return pointwise_loss.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` (1 or -1) says which should rank higher.

    Examples::

        >>> F.margin_ranking_loss(torch.tensor([2.0]), torch.tensor([1.0]), torch.tensor([1.0]))
        tensor(0.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    losses = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(losses, reduction)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (``input`` a distance).

    Examples::

        >>> F.hinge_embedding_loss(torch.tensor([0.3, 2.0]), torch.tensor([1.0, -1.0]))
        tensor(0.1500)
    """
    reduction = _legacy(size_average, reduce, reduction)
    zero = input * 0
    positive = where(target == 1, input, zero)
    negative = where(target == -1, (margin - input).clamp_min(0), zero)
    return _reduce(positive + negative, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1.

    The cosine is taken along the last dimension, as
    ``dot / sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))``.

    Shape:
        - input1, input2: ``(N, D)`` or ``(D,)``; target: ``(N,)`` or ``()``.

    Examples::

        >>> x = torch.randn(3, 5)
        >>> F.cosine_embedding_loss(x, x, torch.ones(3))
        tensor(0.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.shape != input2.shape:
        raise RuntimeError(
            f"cosine_embedding_loss: Input tensors must have the same shape, but got "
            f"{_size_list(input1.shape)} and {_size_list(input2.shape)}"
        )
    if input1.dim() - 1 != target.dim():
        raise RuntimeError(
            f"{input1.dim()}D target tensor expects {input1.dim() - 1}D input tensors, but found "
            f"inputs with sizes {_size_list(input1.shape)} and "
            f"{_size_list(input2.shape)}."
        )
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    norms = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = dot / norms.sqrt()
    zero = cos * 0
    positive = where(target == 1, 1 - cos, zero)
    negative = where(target == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(positive + negative, reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the :func:`pairwise_distance`.

    With ``swap``, ``d(a, n)`` is replaced by ``min(d(a, n), d(p, n))``.

    Shape:
        - anchor, positive, negative: ``(N, D)`` or ``(D,)``; output ``(N,)`` or a scalar.

    Examples::

        >>> a, p, n = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
        >>> F.triplet_margin_loss(a, p, n).shape
        torch.Size([])
    """
    reduction = _legacy(size_average, reduce, reduction)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
            f"{dims[2]}D inputs"
        )
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        other = pairwise_distance(positive, negative, p, eps)
        to_negative = where(other < to_negative, other, to_negative)
    losses = (to_positive - to_negative + margin).clamp_min(0)
    return _reduce(losses, reduction)


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, ``target`` 1 or -1.

    Args:
        input: any shape; target: the same shape.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.soft_margin_loss(torch.tensor([2.0, -1.0]), torch.tensor([1.0, -1.0]))
        tensor(0.2201)
    """
    reduction = _legacy(size_average, reduce, reduction)
    losses = softplus(-target * input)
    # In the input's dtype, as PyTorch (a float64 target does not widen it).
    if input.dtype.is_floating_point and losses.dtype is not input.dtype:
        losses = losses.to(input.dtype)
    return _reduce(losses, reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """One-versus-all logistic loss over ``C`` labels, averaged over the labels.

    ``-(y log(sigmoid(x)) + (1 - y) log(sigmoid(-x)))`` per label (times
    ``weight``), then the mean over the label dimension (the last).

    Args:
        input: ``(N, C)`` or ``(C,)``; target: the same shape, 0 or 1.
        weight: a weight per label, or None.
        reduction: ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or ``(N,)`` with ``reduction='none'``.

    Examples::

        >>> F.multilabel_soft_margin_loss(torch.zeros(1, 3), torch.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.6931)
    """
    reduction = _legacy(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores; target: ``(N,)`` or ``()`` class indices.
        p: 1 or 2. Default: 1.
        margin: Default: 1.
        weight: a weight per class, applied by the target's class, or None.
        reduction: ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or ``(N,)`` with ``reduction='none'``.

    Examples::

        >>> F.multi_margin_loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    classes = x.shape[1]
    t = target.reshape(-1, 1).long()
    if input.dim() > 2 or t.shape[0] != x.shape[0]:
        raise RuntimeError(
            f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}"
        )
    x_y = x.gather(1, t)
    losses = (x - x_y + margin).clamp_min(0.0)
    if p == 2:
        losses = losses * losses
    if weight is not None:
        losses = losses * weight[t.reshape(-1)].reshape(-1, 1)
    others = zeros(*x.shape, dtype=x.dtype, device=x.device).scatter(1, t, 1.0)
    losses = (losses * (1 - others)).sum(1) / classes
    if input.dim() < 2:
        losses = losses.reshape(())
    return _reduce(losses, reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate ``input``.

    ``exp(input) - target * input`` with ``log_input=True`` (``input`` is the
    log of the rate), else ``input - target * log(input + eps)``. With
    ``full=True`` Stirling's approximation of ``log(target!)``,
    ``target * log(target) - target + 0.5 * log(2 pi target)``, is added where
    ``target > 1``.

    Args:
        input: the (log-)rate, any shape; target: counts, the same shape.
        log_input: ``input`` is a log-rate. Default: True.
        full: add the Stirling term. Default: False.
        eps: keeps the log finite when ``log_input=False``. Default: 1e-8.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.poisson_nll_loss(torch.zeros(3), torch.tensor([0.0, 1.0, 2.0]))
        tensor(1.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under Gaussians of mean ``input`` and variance ``var``.

    ``0.5 * (log(max(var, eps)) + (input - target) ** 2 / max(var, eps))``, plus
    ``0.5 * log(2 pi)`` with ``full=True``. The clamp to ``eps`` does not stop
    the gradient to ``var`` (PyTorch clamps in place under ``no_grad``).

    Args:
        input: the means, ``(N, *)``; target: the same shape.
        var: the variances: the input's shape, or missing the last dimension,
            or with one dimension of size 1 (shared along it), or a float.
        full: add the constant. Default: False.
        eps: the smallest variance used. Default: 1e-6.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.gaussian_nll_loss(torch.zeros(3), torch.ones(3), torch.ones(3))
        tensor(0.5000)
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _filled(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance shared along the last dimension
        elif input.dim() == var.dim() and (
            sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1
        ):
            pass  # one dimension of size 1, broadcast
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # var clamped to eps with the gradient of the identity.
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
