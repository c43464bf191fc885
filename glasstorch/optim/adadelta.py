"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from glasstorch._tier import kernels
from glasstorch.autograd import no_grad
from glasstorch.ops.creation import zeros_like
from glasstorch.optim.optimizer import (
    Optimizer,
    advance_step,
    as_number,
    check_lr,
    flat_buffers,
    flat_grad,
    new_step_counter,
)
from glasstorch.tensor import Tensor


class Adadelta(Optimizer):
    """Adadelta (Zeiler).

    For each parameter ``p`` with gradient ``g``, one step does::

        g = -g if maximize else g
        g = g + weight_decay * p
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
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient once; see :meth:`Optimizer.step`."""
        loss = self._run_closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in self._params_with_grad(group):
                    self._update(p, group)
        return loss

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``adadelta_step`` kernel call for parameter ``p``."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step_counter()
            state["square_avg"] = zeros_like(p)
            state["acc_delta"] = zeros_like(p)
        advance_step(state)
        with flat_buffers(p, state["square_avg"], state["acc_delta"]) as (param, sq, acc):
            kernels.adadelta_step(
                param,
                flat_grad(p),
                sq,
                acc,
                as_number(group["lr"]),
                as_number(group["rho"]),
                as_number(group["eps"]),
                as_number(group["weight_decay"]),
                bool(group["maximize"]),
            )
