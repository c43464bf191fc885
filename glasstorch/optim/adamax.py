"""Adamax: Adam with the infinity norm of past gradients in place of their root-mean-square."""

from __future__ import annotations

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


class Adamax(Optimizer):
    """Adamax (Kingma and Ba, section 7 of the Adam paper).

    For each parameter ``p`` with gradient ``g``, step ``t`` (counting from 1) does::

        g = -g if maximize else g
        if weight_decay != 0: g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g               # state["exp_avg"]
        u = max(beta2 * u, |g| + eps)                 # state["exp_inf"]
        p = p - lr / (1 - beta1**t) * m / u

    The update is a handful of in-place tensor operations (no fused kernel),
    so it runs on every tier and device.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``2e-3``).
        betas: decay rates of the gradient's running average and of its
            running infinity norm (default ``(0.9, 0.999)``).
        eps: keeps the denominator away from zero (default ``1e-8``).
        weight_decay: L2 penalty added to the gradient (default 0).
        maximize: ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for compatibility
            (``differentiable`` only ``False``).

    Example::

        >>> opt = glasstorch.optim.Adamax(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        step = advance_step(state)
        exp_avg = state_buffer(state, "exp_avg", p)
        exp_inf = state_buffer(state, "exp_inf", p)
        beta1, beta2 = (as_number(b) for b in group["betas"])
        grad = -p.grad if group["maximize"] else p.grad
        if group["weight_decay"] != 0:
            grad = grad + p * as_number(group["weight_decay"])
        exp_avg.mul_(beta1).add_(grad * (1 - beta1))
        exp_inf.copy_((exp_inf * beta2).maximum(grad.abs() + as_number(group["eps"])))
        step_size = as_number(group["lr"]) / (1 - beta1**step)
        p.sub_(exp_avg / exp_inf * step_size)
