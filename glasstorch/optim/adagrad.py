"""Adagrad: per-element learning rates that shrink with the sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from glasstorch import _tier
from glasstorch.ops.creation import full_like
from glasstorch.optim.optimizer import (
    Optimizer,
    advance_step,
    as_number,
    check_hyperparameters,
    fused_step,
    new_step_counter,
)
from glasstorch.tensor import Tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.).

    For each parameter ``p`` with gradient ``g``, step ``t`` (counting from 1) does::

        g = -g if maximize else g
        if weight_decay != 0: g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g * g                              # state["sum"]
        p = p - clr * g / (sqrt(sum) + eps)

    The whole update is one call of the tier's fused ``adagrad_step`` kernel per
    parameter. As in PyTorch, the state (``step`` and ``sum``, which starts at
    ``initial_accumulator_value``) is created for every parameter when the
    optimizer is built.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-2``).
        lr_decay: learning-rate decay per step (default 0).
        weight_decay: L2 penalty (default 0).
        initial_accumulator_value: starting value of ``sum`` (default 0).
        eps: added to the denominator for numerical stability (default ``1e-10``).
        maximize: ascend the objective instead of descending it.
        foreach, fused: accepted for compatibility (glasstorch always runs its fused
            kernel). differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.Adagrad([w], lr=0.1, lr_decay=1e-3)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        check_hyperparameters(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> None:
        """Give ``p`` a step counter and a ``sum`` filled with the initial accumulator value."""
        state = self.state[p]
        state["step"] = new_step_counter()
        state["sum"] = full_like(p, group["initial_accumulator_value"])

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``adagrad_step`` kernel call for parameter ``p``."""
        state = self.state[p]
        if len(state) == 0:  # a parameter added later with add_param_group
            self._init_state(p, group)
        step = advance_step(state)
        fused_step(
            kernels.adagrad_step,
            p,
            [state["sum"]],
            step,
            as_number(group["lr"]),
            as_number(group["lr_decay"]),
            as_number(group["weight_decay"]),
            as_number(group["eps"]),
            bool(group["maximize"]),
        )
