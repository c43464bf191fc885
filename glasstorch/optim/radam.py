"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2019)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from glasstorch.optim.optimizer import (
    Optimizer,
    advance_step,
    as_number,
    check_hyperparameters,
    state_buffer,
)
from glasstorch.tensor import Tensor


class RAdam(Optimizer):
    """RAdam: plain momentum SGD while the variance estimate is unreliable, then rectified Adam.

    For each parameter ``p`` with gradient ``g``, step ``t`` (counting from 1) does::

        g = -g if maximize else g
        if decoupled_weight_decay: p = p * (1 - lr * weight_decay)
        elif weight_decay != 0:    g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g               # state["exp_avg"]
        v = beta2 * v + (1 - beta2) * g * g           # state["exp_avg_sq"]
        m_hat = m / (1 - beta1 ** t)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2 ** t / (1 - beta2 ** t)
        if rho_t > 5:
            r = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * r * sqrt(1 - beta2 ** t) / (sqrt(v) + eps)
        else:
            p = p - lr * m_hat

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-3``).
        betas: decay rates of the running averages (default ``(0.9, 0.999)``).
        eps: added to the denominator (default ``1e-8``).
        weight_decay: weight decay (default 0).
        decoupled_weight_decay: shrink the weights instead of adding an L2 gradient.
        maximize: ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for compatibility.

    Example::

        >>> opt = glasstorch.optim.RAdam(model.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        step = advance_step(state)
        exp_avg = state_buffer(state, "exp_avg", p)
        exp_avg_sq = state_buffer(state, "exp_avg_sq", p)
        lr, eps = as_number(group["lr"]), as_number(group["eps"])
        beta1, beta2 = (as_number(b) for b in group["betas"])
        weight_decay = as_number(group["weight_decay"])
        grad = -p.grad if group["maximize"] else p.grad
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad + p * weight_decay
        exp_avg.mul_(beta1).add_(grad * (1 - beta1))
        exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
        correction1, correction2 = 1 - beta1**step, 1 - beta2**step
        m_hat = exp_avg / correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2**step / correction2
        if rho_t > 5.0:
            rect = math.sqrt(
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            )
            adaptive = math.sqrt(correction2) / (exp_avg_sq.sqrt() + eps)
            p.sub_(m_hat * lr * adaptive * rect)
        else:
            p.sub_(m_hat * lr)
