"""NAdam: Adam with Nesterov momentum (Dozat, 2016)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from glasstorch import _dtype
from glasstorch.ops.creation import tensor
from glasstorch.optim.optimizer import (
    Optimizer,
    advance_step,
    as_number,
    check_hyperparameters,
    state_buffer,
)
from glasstorch.tensor import Tensor


class NAdam(Optimizer):
    """NAdam: Adam whose momentum looks one step ahead, with a momentum schedule.

    For each parameter ``p`` with gradient ``g``, step ``t`` (counting from 1) does::

        g = -g if maximize else g
        if decoupled_weight_decay: p = p * (1 - lr * weight_decay)
        elif weight_decay != 0:    g = g + weight_decay * p
        mu_t  = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_t1 = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod  = prod * mu_t                           # state["mu_product"]
        m = beta1 * m + (1 - beta1) * g               # state["exp_avg"]
        v = beta2 * v + (1 - beta2) * g * g           # state["exp_avg_sq"]
        denom = sqrt(v / (1 - beta2 ** t)) + eps
        p = p - lr * (1 - mu_t) / (1 - prod) * g / denom
              - lr * mu_t1 / (1 - prod * mu_t1) * m / denom

    ``state["mu_product"]`` is a float32 scalar tensor, as PyTorch keeps it.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``2e-3``).
        betas: decay rates of the running averages (default ``(0.9, 0.999)``).
        eps: added to the denominator (default ``1e-8``).
        weight_decay: weight decay (default 0).
        momentum_decay: the momentum schedule's decay (default ``4e-3``).
        decoupled_weight_decay: shrink the weights instead of adding an L2
            gradient (NAdamW).
        maximize: ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for compatibility.

    Example::

        >>> opt = glasstorch.optim.NAdam(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        check_hyperparameters(
            lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay
        )
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
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
        if "mu_product" not in state:
            state["mu_product"] = tensor(1.0, dtype=_dtype.float32)
        exp_avg = state_buffer(state, "exp_avg", p)
        exp_avg_sq = state_buffer(state, "exp_avg_sq", p)
        lr, eps = as_number(group["lr"]), as_number(group["eps"])
        beta1, beta2 = (as_number(b) for b in group["betas"])
        weight_decay = as_number(group["weight_decay"])
        decay = as_number(group["momentum_decay"])
        grad = -p.grad if group["maximize"] else p.grad
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad + p * weight_decay
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        state["mu_product"].mul_(mu)
        mu_product = float(state["mu_product"].item())
        exp_avg.mul_(beta1).add_(grad * (1 - beta1))
        exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
        denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + eps
        p.sub_(grad / denom * (lr * (1.0 - mu) / (1.0 - mu_product)))
        p.sub_(exp_avg / denom * (lr * mu_next / (1.0 - mu_product * mu_next)))
