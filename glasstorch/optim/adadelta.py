"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

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


class Adadelta(Optimizer):
    """Adadelta (Zeiler).

    For each parameter ``p`` with gradient ``g``, one step does::

        g = -g if maximize else g
        if weight_decay != 0: g = g + weight_decay * p
        sq = rho * sq + (1 - rho) * g * g                    # state["square_avg"]
        delta = sqrt(acc + eps) / sqrt(sq + eps) * g
        acc = rho * acc + (1 - rho) * delta * delta          # state["acc_delta"]
        p = p - lr * delta

    The whole update is one call of the tier's fused ``adadelta_step`` kernel
    per parameter; ``state[p]["step"]`` counts the steps.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: scale applied to ``delta`` (default 1.0).
        rho: decay rate of both running averages (default 0.9).
        eps: added inside the square roots for numerical stability (default ``1e-6``).
        weight_decay: L2 penalty (default 0).
        maximize: ascend the objective instead of descending it.
        foreach, capturable: accepted for compatibility (glasstorch always runs its
            fused kernel). differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.Adadelta([w])
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ):
        check_hyperparameters(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``adadelta_step`` kernel call for parameter ``p``."""
        state = self.state[p]
        advance_step(state)
        square_avg = state_buffer(state, "square_avg", p)
        acc_delta = state_buffer(state, "acc_delta", p)
        fused_step(
            kernels.adadelta_step,
            p,
            [square_avg, acc_delta],
            as_number(group["lr"]),
            as_number(group["rho"]),
            as_number(group["eps"]),
            as_number(group["weight_decay"]),
            bool(group["maximize"]),
        )
