"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from glasstorch._tier import kernels
from glasstorch.autograd import no_grad
from glasstorch.ops.creation import zeros_like
from glasstorch.optim.optimizer import (
    Optimizer,
    as_number,
    check_lr,
    flat_buffers,
    flat_grad,
)
from glasstorch.tensor import Tensor


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum.

    For each parameter ``p`` with gradient ``g``, one step does::

        g = -g if maximize else g
        g = g + weight_decay * p
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
        check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient once; see :meth:`Optimizer.step`."""
        loss = self._run_closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p in self._params_with_grad(group):
                    self._update(p, group)
        return loss

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """One ``sgd_step`` kernel call for parameter ``p``."""
        momentum = as_number(group["momentum"])
        buffer = None
        first_step = False
        if momentum != 0:
            state = self.state[p]
            buffer = state.get("momentum_buffer")
            if buffer is None:  # the kernel fills it with the first gradient
                buffer = state["momentum_buffer"] = zeros_like(p)
                first_step = True
        with flat_buffers(p, buffer) as (param, momentum_buffer):
            kernels.sgd_step(
                param,
                flat_grad(p),
                momentum_buffer,
                as_number(group["lr"]),
                as_number(group["weight_decay"]),
                momentum,
                as_number(group["dampening"]),
                bool(group["nesterov"]),
                bool(group["maximize"]),
                first_step,
            )
