"""Adam: adaptive moment estimation (and, with decoupled weight decay, AdamW)."""

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


class Adam(Optimizer):
    """Adam, with optional AMSGrad and (L2 or decoupled) weight decay.

    For each parameter ``p`` with gradient ``g``, step ``t`` (counting from 1) does::

        g = -g if maximize else g
        if decoupled_weight_decay: p = p * (1 - lr * weight_decay)
        elif weight_decay != 0:    g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g            # state["exp_avg"]
        v = beta2 * v + (1 - beta2) * g * g        # state["exp_avg_sq"]
        v_hat = max(v_max, v) if amsgrad else v    # state["max_exp_avg_sq"]
        p = p - lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    The whole update is one call of the tier's fused ``adam_step`` kernel per
    parameter. ``state[p]["step"]`` counts the steps as a float32 scalar tensor,
    as PyTorch stores it.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-3``).
        betas: decay rates of the running averages of the gradient and of its
            square (default ``(0.9, 0.999)``).
        eps: added to the denominator for numerical stability (default ``1e-8``).
        weight_decay: weight decay (default 0); an L2 penalty added to the
            gradient, or, with ``decoupled_weight_decay``, a shrink of the weights.
        amsgrad: use the maximum of all ``v`` so far (the AMSGrad variant).
        maximize: ascend the objective instead of descending it.
        decoupled_weight_decay: AdamW's weight decay (see :class:`AdamW`).
        foreach, capturable, fused: accepted for compatibility with PyTorch and
            stored in the groups; glasstorch always runs its fused kernel.
        differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.Adam([w], lr=1e-2, amsgrad=True)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``adam_step`` kernel call for parameter ``p``."""
        state = self.state[p]
        amsgrad = bool(group["amsgrad"])
        step = advance_step(state)
        exp_avg = state_buffer(state, "exp_avg", p)
        exp_avg_sq = state_buffer(state, "exp_avg_sq", p)
        max_exp_avg_sq = state_buffer(state, "max_exp_avg_sq", p) if amsgrad else None
        beta1, beta2 = group["betas"]
        fused_step(
            kernels.adam_step,
            p,
            [exp_avg, exp_avg_sq, max_exp_avg_sq],
            step,
            as_number(group["lr"]),
            as_number(beta1),
            as_number(beta2),
            as_number(group["eps"]),
            as_number(group["weight_decay"]),
            bool(group["decoupled_weight_decay"]),
            amsgrad,
            bool(group["maximize"]),
        )
