"""``glasstorch.distributions``: the probability distributions programs sample from.

Only the two that public programs reach for most: :class:`Categorical`
(policy-gradient reinforcement learning picks actions from one) and
:class:`Normal` (variational autoencoders, Gaussian policies), with
:func:`kl_divergence` between two Normals. Each is written from glasstorch
operations, so ``log_prob`` and ``rsample`` are differentiable.
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch._shape import numel
from glasstorch.autograd.grad_mode import no_grad
from glasstorch.ops.creation import as_tensor, randn
from glasstorch.ops.sampling import multinomial
from glasstorch.tensor import Tensor

__all__ = ["Categorical", "Distribution", "Normal", "kl_divergence"]


def _as_float_tensor(value) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return as_tensor(value, dtype=_dtype.get_default_dtype())


class Distribution:
    """What every distribution has: ``batch_shape``, ``event_shape``, ``sample``."""

    batch_shape: tuple = ()
    event_shape: tuple = ()

    def sample(self, sample_shape=()) -> Tensor:
        """Draw values (no gradient flows through them)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Draw values through which gradients flow (where the distribution allows it)."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler")

    def _extended_shape(self, sample_shape) -> tuple:
        return tuple(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)


class Categorical(Distribution):
    """A choice among ``K`` categories, ``0`` to ``K-1``, with the given probabilities.

    Args:
        probs: ``(*, K)`` non-negative weights (normalised along the last dimension).
        logits: ``(*, K)`` unnormalised log-probabilities (give one of the two).

    Example::

        >>> dist = Categorical(probs=torch.tensor([0.1, 0.9]))
        >>> action = dist.sample()
        >>> dist.log_prob(action)  # differentiable in probs
    """

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = _as_float_tensor(probs)
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp_min(_tiny(self.probs)).log()
        else:
            logits = _as_float_tensor(logits)
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.exp()
        self._num_events = self.probs.shape[-1]
        self.batch_shape = tuple(self.probs.shape[:-1])

    @property
    def param_shape(self) -> tuple:
        return tuple(self.probs.shape)

    def sample(self, sample_shape=()) -> Tensor:
        """Category indices (int64) of shape ``sample_shape + batch_shape``."""
        sample_shape = tuple(sample_shape)
        count = numel(sample_shape)
        with no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            drawn = multinomial(rows, count, replacement=True)  # (rows, count)
            drawn = drawn.t().reshape(sample_shape + self.batch_shape)
        return drawn

    def log_prob(self, value: Tensor) -> Tensor:
        """The log-probability of each category index in ``value``."""
        value = value.long().unsqueeze(-1)
        shape = tuple(value.shape[:-1])
        logits = self.logits
        from glasstorch._shape import broadcast_shapes

        batch = broadcast_shapes(shape, tuple(logits.shape[:-1]))
        value = value.expand((*batch, 1))
        logits = logits.expand((*batch, self._num_events))
        return logits.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        """``-sum(p * log p)`` over the categories."""
        return -(self.probs * self.logits).sum(-1)

    def __repr__(self) -> str:
        return f"Categorical(probs: {self.probs.shape})"


class Normal(Distribution):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Args:
        loc, scale: tensors or numbers (they broadcast).

    Example::

        >>> dist = Normal(torch.zeros(2), torch.ones(2))
        >>> z = dist.rsample()      # differentiable in loc and scale
        >>> dist.log_prob(z)
    """

    def __init__(self, loc, scale, validate_args=None) -> None:
        loc, scale = _as_float_tensor(loc), _as_float_tensor(scale)
        from glasstorch._shape import broadcast_shapes

        shape = broadcast_shapes(tuple(loc.shape), tuple(scale.shape))
        self.loc, self.scale = loc.expand(shape), scale.expand(shape)
        self.batch_shape = tuple(shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + scale * eps`` with ``eps`` standard normal: gradients reach loc and scale."""
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        """``-(value - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))``."""
        value = _as_float_tensor(value)
        var = self.scale.pow(2)
        return (
            -((value - self.loc) ** 2) / (2 * var)
            - self.scale.log()
            - math.log(math.sqrt(2 * math.pi))
        )

    def entropy(self) -> Tensor:
        """``0.5 + 0.5 log(2 pi) + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def __repr__(self) -> str:
        return f"Normal(loc: {self.loc.shape}, scale: {self.scale.shape})"


def _tiny(t: Tensor) -> float:
    from glasstorch._dtype import finfo

    return finfo(t.dtype).tiny


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)`` for two :class:`Normal` or two :class:`Categorical` distributions."""
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = (p.scale / q.scale).pow(2)
        t1 = ((p.loc - q.loc) / q.scale).pow(2)
        return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        return (p.probs * (p.logits - q.logits)).sum(-1)
    raise NotImplementedError(
        f"kl_divergence is not implemented for {type(p).__name__} and {type(q).__name__}"
    )
