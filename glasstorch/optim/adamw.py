"""AdamW: Adam with decoupled weight decay."""

from __future__ import annotations

from collections.abc import Iterable

from glasstorch.optim.adam import Adam
from glasstorch.tensor import Tensor


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter).

    Instead of adding ``weight_decay * p`` to the gradient (which Adam's
    per-element scaling then distorts), each step first shrinks the weights::

        p = p * (1 - lr * weight_decay)

    and then takes a plain Adam step. It is :class:`Adam` with
    ``decoupled_weight_decay=True`` (the same fused ``adam_step`` kernel) and a
    default ``weight_decay`` of ``1e-2``.

    Args:
        params: tensors to optimize, or dicts defining parameter groups.
        lr: learning rate (default ``1e-3``).
        betas: decay rates of the running averages (default ``(0.9, 0.999)``).
        eps: added to the denominator for numerical stability (default ``1e-8``).
        weight_decay: decoupled weight decay coefficient (default ``1e-2``).
        amsgrad: use the AMSGrad variant.
        maximize: ascend the objective instead of descending it.
        foreach, capturable, fused: accepted for compatibility (see :class:`Adam`).
        differentiable: only ``False`` is supported.

    Example::

        >>> opt = glasstorch.optim.AdamW(params, lr=1e-3, weight_decay=0.05)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ):
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
