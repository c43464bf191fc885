"""Loss modules: each holds its options and calls one function of ``nn.functional``.

Every loss takes ``reduction``: ``'mean'`` (default) averages the elementwise
losses, ``'sum'`` adds them, ``'none'`` returns them unreduced.
"""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn._reduction import _legacy_reduction
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor


class _Loss(Module):
    """Base of the losses: keeps ``reduction``.

    The first two positional parameters of most PyTorch losses are the
    deprecated ``size_average`` and ``reduce``; they are accepted here too, so
    positional calls line up with PyTorch's.
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with an optional ``weight`` (per class, or per element for the binary
    cross-entropies), kept as a buffer."""

    def __init__(
        self, weight: Tensor | None = None, size_average=None, reduce=None, reduction="mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class _ClassIndexLoss(_WeightedLoss):
    """A weighted loss over class-index targets, which skips the target value ``ignore_index``."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index


class MSELoss(_Loss):
    """Mean squared error ``(input - target) ** 2``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.MSELoss()(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
        tensor(2.)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.L1Loss()(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
        tensor(1.)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above: ``0.5 d^2 / beta`` or ``|d| - 0.5 beta``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        beta: where the loss turns from quadratic to linear. Default: 1.0.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.SmoothL1Loss()(torch.tensor([0.0, 3.0]), torch.zeros(2))
        tensor(1.2500)
    """

    def __init__(
        self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, scaled absolute error above: ``0.5 d^2`` or ``delta (|d| - 0.5 delta)``.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        delta: where the loss turns from quadratic to linear. Default: 1.0.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.HuberLoss(delta=2.0)(torch.tensor([3.0]), torch.zeros(1))
        tensor(4.)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_ClassIndexLoss):
    """Negative log-likelihood of the target classes, given log-probabilities.

    Args:
        weight: a weight per class, ``(C,)``.
        ignore_index: a target value that is skipped (also in the mean). Default: -100.
        reduction: ``'none'``, ``'mean'`` (divides by the summed weights of the
            counted samples) or ``'sum'``.

    Shape:
        - Input: ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``: log-probabilities.
        - Target: ``(N,)``, ``(N, d1, ...)`` or ``()``: class indices (int64).
        - Output: a scalar, or the target's shape with ``reduction='none'``.

    Example::

        >>> logp = torch.log_softmax(torch.randn(3, 5), dim=1)
        >>> nn.NLLLoss()(logp, torch.tensor([1, 0, 4]))
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class CrossEntropyLoss(_ClassIndexLoss):
    """Cross-entropy between ``softmax(input)`` and the targets (log-softmax plus NLL).

    Args:
        weight: a weight per class, ``(C,)``.
        ignore_index: a class-index target that is skipped. Default: -100.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        label_smoothing: mix the targets with a uniform distribution by this
            amount, in ``[0, 1]``. Default: 0.0.

    Shape:
        - Input: ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``: unnormalised scores.
        - Target: class indices of shape ``(N,)``, ``(N, d1, ...)`` or ``()``;
          or class probabilities of the input's shape.
        - Output: a scalar, or one loss per sample with ``reduction='none'``.

    Example::

        >>> loss = nn.CrossEntropyLoss()
        >>> logits = torch.randn(3, 5, requires_grad=True)
        >>> loss(logits, torch.tensor([1, 0, 4])).backward()
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class BCELoss(_WeightedLoss):
    """Binary cross-entropy between probabilities and targets in ``[0, 1]``.

    ``-weight * (t log(x) + (1 - t) log(1 - x))``, each log clamped at -100.

    Args:
        weight: rescales each element's loss (broadcast to the input).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.BCELoss()(torch.tensor([0.8, 0.1]), torch.tensor([1.0, 0.0]))
        tensor(0.1643)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid plus binary cross-entropy in one numerically stable formula.

    Args:
        weight: rescales each element's loss (broadcast to the input).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        pos_weight: weight of positive examples, one per class (broadcast along
            the last dimension); above 1 it raises recall.

    Shape:
        - Input and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> nn.BCEWithLogitsLoss()(torch.tensor([2.0, -1.0]), torch.tensor([1.0, 0.0]))
        tensor(0.2201)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence: see :func:`F.kl_div <glasstorch.nn.functional.kl_div>`.

    Args:
        reduction: ``'none'``, ``'sum'``, ``'mean'`` or ``'batchmean'`` (the
            divergence per example). Default: ``'mean'``.
        log_target: ``target`` is given as log-probabilities. Default: False.

    Shape:
        - Input (log-probabilities) and target: ``(*)``, the same shape.
        - Output: a scalar, or ``(*)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.KLDivLoss(reduction="batchmean")
        >>> loss(torch.tensor([[0.5, 0.5]]).log(), torch.tensor([[0.5, 0.5]]))
        tensor(0.)
    """

    def __init__(
        self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """``max(0, -y * (x1 - x2) + margin)``: see :func:`F.margin_ranking_loss <glasstorch.nn.functional.margin_ranking_loss>`.

    Args:
        margin: the gap asked between the two inputs. Default: 0.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input1, Input2, Target (1 or -1): ``(N)`` or ``()``; Output: a scalar, or ``(N)``.

    Examples::

        >>> loss = nn.MarginRankingLoss(margin=0.5)
        >>> loss(torch.randn(3), torch.randn(3), torch.tensor([1.0, -1.0, 1.0])).shape
        torch.Size([])
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class HingeEmbeddingLoss(_Loss):
    """``x`` for similar pairs, ``max(0, margin - x)`` for dissimilar ones:
    see :func:`F.hinge_embedding_loss <glasstorch.nn.functional.hinge_embedding_loss>`.

    Args:
        margin: the distance dissimilar pairs should exceed. Default: 1.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input (a distance), Target (1 or -1): ``(*)``; Output: a scalar, or ``(*)``.

    Examples::

        >>> nn.HingeEmbeddingLoss()(torch.rand(4), torch.tensor([1.0, -1.0, 1.0, -1.0])).shape
        torch.Size([])
    """

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for similar pairs, ``max(0, cos(x1, x2) - margin)`` for dissimilar ones:
    see :func:`F.cosine_embedding_loss <glasstorch.nn.functional.cosine_embedding_loss>`.

    Args:
        margin: a cosine in ``[-1, 1]`` dissimilar pairs should stay below. Default: 0.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input1, Input2: ``(N, D)`` or ``(D)``; Target (1 or -1): ``(N)`` or ``()``.
        - Output: a scalar, or ``(N)``.

    Examples::

        >>> loss = nn.CosineEmbeddingLoss()
        >>> loss(torch.randn(3, 5), torch.randn(3, 5), torch.tensor([1.0, -1.0, 1.0])).shape
        torch.Size([])
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(
            input1, input2, target, margin=self.margin, reduction=self.reduction
        )


class TripletMarginLoss(_Loss):
    """``max(0, d(a, p) - d(a, n) + margin)``:
    see :func:`F.triplet_margin_loss <glasstorch.nn.functional.triplet_margin_loss>`.

    Args:
        margin: the gap asked between the two distances. Default: 1.
        p: the norm of the distance. Default: 2.
        eps: added to the differences before the norm. Default: 1e-6.
        swap: use the smaller of ``d(a, n)`` and ``d(p, n)``. Default: False.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. Default: ``'mean'``.

    Shape:
        - Anchor, Positive, Negative: ``(N, D)`` or ``(D)``; Output: a scalar, or ``(N)``.

    Examples::

        >>> a, p, n = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
        >>> nn.TripletMarginLoss(margin=0.2)(a, p, n).shape
        torch.Size([])
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
            swap=self.swap, reduction=self.reduction,
        )  # fmt: skip


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y * x))`` with targets ``y`` of 1 or -1.

    See :func:`F.soft_margin_loss <glasstorch.nn.functional.soft_margin_loss>`.

    Args:
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input: ``(*)``; Target: the same; Output: a scalar, or ``(*)`` with ``'none'``.

    Examples::

        >>> nn.SoftMarginLoss()(torch.randn(3, 5), torch.ones(3, 5)).shape
        torch.Size([])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss for multi-label classification.

    ``-mean_c(y_c log(sigmoid(x_c)) + (1 - y_c) log(sigmoid(-x_c)))`` per sample;
    see :func:`F.multilabel_soft_margin_loss
    <glasstorch.nn.functional.multilabel_soft_margin_loss>`.

    Args:
        weight: a weight per class, or None.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input: ``(N, C)``; Target: ``(N, C)`` of 0s and 1s; Output: a scalar, or
          ``(N,)`` with ``'none'``.

    Examples::

        >>> loss = nn.MultiLabelSoftMarginLoss()
        >>> loss(torch.randn(3, 5), torch.randint(0, 2, (3, 5)).float()).shape
        torch.Size([])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C``.

    See :func:`F.multi_margin_loss <glasstorch.nn.functional.multi_margin_loss>`.

    Args:
        p: 1 or 2. Default: 1.
        margin: Default: 1.
        weight: a weight per class, or None.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input: ``(N, C)`` or ``(C,)``; Target: ``(N,)`` or ``()`` class indices;
          Output: a scalar, or ``(N,)`` with ``'none'``.

    Examples::

        >>> loss = nn.MultiMarginLoss()
        >>> loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                f"{weight.dim()}D instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight,
            reduction=self.reduction,
        )  # fmt: skip


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of counts under a Poisson distribution.

    ``exp(input) - target * input`` (``log_input=True``), else
    ``input - target * log(input + eps)``; see :func:`F.poisson_nll_loss
    <glasstorch.nn.functional.poisson_nll_loss>`.

    Args:
        log_input: the input is a log-rate. Default: True.
        full: add Stirling's approximation of ``log(target!)``. Default: False.
        eps: keeps the log finite when ``log_input=False``. Default: 1e-8.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input: ``(*)``; Target: the same; Output: a scalar, or ``(*)`` with ``'none'``.

    Examples::

        >>> loss = nn.PoissonNLLLoss()
        >>> loss(torch.randn(5, 2), torch.randn(5, 2)).shape
        torch.Size([])
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average=None,
        eps: float = 1e-8,
        reduce=None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
            reduction=self.reduction,
        )  # fmt: skip


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of targets under Gaussians with predicted means and variances.

    ``0.5 * (log(max(var, eps)) + (input - target) ** 2 / max(var, eps))``; see
    :func:`F.gaussian_nll_loss <glasstorch.nn.functional.gaussian_nll_loss>`.

    Args:
        full: add the constant ``0.5 * log(2 pi)``. Default: False.
        eps: the smallest variance used. Default: 1e-6.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Input: ``(N, *)``; Target: the same; Var: the same, or with one
          dimension of size 1 or the last one missing; Output: a scalar, or
          the input's shape with ``'none'``.

    Examples::

        >>> loss = nn.GaussianNLLLoss()
        >>> loss(torch.randn(5, 2), torch.randn(5, 2), torch.ones(5, 1)).shape
        torch.Size([])
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )
