"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from glasstorch import _tier
from glasstorch.optim.optimizer import (
    Optimizer,
    advance_step,
    as_number,
    check_hyperparameters,
    fused_step,
    state_buffer,
)
from glasstorch.tensor import Tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum.

    For each parameter ``p`` with gradient ``g``, one step does::

        g = -g if maximize else g
        if weight_decay != 0: g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g          # state["square_avg"]
        if centered:
            ga = alpha * ga + (1 - alpha) * g          # state["grad_avg"]
            avg = sqrt(sq - ga * ga) + eps
        else:
            avg = sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg             # state["momentum_buffer"]
            p = p - lr * buf
        else:
            p = p - lr * g / avg

    The whole update is one call of the tier's fused ``rmsprop_step`` kernel per
    parameter; ``state[p]["step"]`` counts the steps.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-2``).
        alpha: smoothing constant of the running average (default 0.99).
        eps: added to the denominator for numerical stability (default ``1e-8``).
        weight_decay: L2 penalty (default 0).
        momentum: momentum factor (default 0).
        centered: normalise by an estimate of the gradient's variance instead of
            its second moment.
        maximize: ascend the objective instead of descending it.
        capturable, foreach: accepted for compatibility (glasstorch always runs its
            fused kernel). differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.RMSprop([w], lr=1e-2, momentum=0.9, centered=True)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_hyperparameters(
            lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha
        )
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``rmsprop_step`` kernel call for parameter ``p``."""
        state = self.state[p]
        momentum = as_number(group["momentum"])
        centered = bool(group["centered"])
        advance_step(state)
        square_avg = state_buffer(state, "square_avg", p)
        momentum_buffer = state_buffer(state, "momentum_buffer", p) if momentum > 0 else None
        grad_avg = state_buffer(state, "grad_avg", p) if centered else None
        fused_step(
            kernels.rmsprop_step,
            p,
            [square_avg, momentum_buffer, grad_avg],
            as_number(group["lr"]),
            as_number(group["alpha"]),
            as_number(group["eps"]),
            as_number(group["weight_decay"]),
            momentum,
            centered,
            bool(group["maximize"]),
        )
