"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from glasstorch import _tier
from glasstorch.optim.optimizer import (
    Optimizer,
    as_number,
    check_hyperparameters,
    fused_step,
    state_buffer,
)
from glasstorch.tensor import Tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum.

    For each parameter ``p`` with gradient ``g``, one step does::

        g = -g if maximize else g
        if weight_decay != 0: g = g + weight_decay * p
        if momentum != 0:
            buf = g on the first step, else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g

    The whole update is one call of the tier's fused ``sgd_step`` kernel per
    parameter. The momentum buffer is kept in ``state[p]["momentum_buffer"]``
    (only when ``momentum != 0``).

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-3``).
        momentum: momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty (default 0).
        nesterov: use Nesterov momentum; needs ``momentum > 0`` and ``dampening == 0``.
        maximize: ascend the objective instead of descending it.
        foreach, fused: accepted for compatibility with PyTorch and stored in the
            groups; glasstorch always runs its fused kernel.
        differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> opt.zero_grad()
        >>> loss_fn(w).backward()
        >>> opt.step()
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        check_hyperparameters(lr=lr, momentum=momentum, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``sgd_step`` kernel call for parameter ``p``."""
        momentum = as_number(group["momentum"])
        momentum_buffer = None
        first_step = False
        if momentum != 0:
            state = self.state[p]
            first_step = state.get("momentum_buffer") is None  # the kernel fills it from g
            momentum_buffer = state_buffer(state, "momentum_buffer", p)
        fused_step(
            kernels.sgd_step,
            p,
            [momentum_buffer],
            as_number(group["lr"]),
            as_number(group["weight_decay"]),
            momentum,
            as_number(group["dampening"]),
            bool(group["nesterov"]),
            bool(group["maximize"]),
            first_step,
        )
