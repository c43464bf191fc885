"""Learning-rate schedulers: change each parameter group's ``lr`` as training goes on.

A scheduler is built on an optimizer and stepped once per epoch (or per batch,
for :class:`OneCycleLR`), after ``optimizer.step()``::

    for epoch in range(epochs):
        train_one_epoch(model, optimizer)
        scheduler.step()

Building a scheduler already takes its first step (epoch 0): it records each
group's starting rate as ``group["initial_lr"]`` (kept in ``base_lrs``) and sets
``lr`` for epoch 0. Every later ``step()`` adds one to ``last_epoch`` and writes
the new rates into the groups. Most schedulers compute the new rate from the
current one ("chainable" form), exactly as PyTorch does, so that two schedulers
on one optimizer compose and the floating-point values match PyTorch's step by
step.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from glasstorch.optim.optimizer import Optimizer
from glasstorch.tensor import Tensor

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "OneCycleLR",
    "ReduceLROnPlateau",
]

_EPOCH_ARGUMENT_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the "
    "new chainable form, where available."
)


def _copy(value):
    """A copy of a tensor hyper-parameter (so groups never alias), or the number itself."""
    return value.clone() if isinstance(value, Tensor) else value


def _group_values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` for every parameter group, tensors copied."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_group_value(group: dict[str, Any], key: str, value) -> None:
    """Store ``value`` in ``group[key]``; a tensor entry is filled in place."""
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group: ``value`` repeated, or a list checked for length."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return [_copy(v) for v in value]
    return [_copy(value) for _ in optimizer.param_groups]


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class of the learning-rate schedulers.

    A subclass implements :meth:`get_lr`, which returns the rates for epoch
    ``self.last_epoch`` (already advanced), usually from the groups' current
    ``lr``; it may add ``_get_closed_form_lr``, a formula in ``base_lrs`` and
    ``last_epoch`` used when ``step(epoch)`` jumps to an epoch.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        last_epoch: index of the last epoch seen. Leave it at ``-1`` to start a
            schedule; pass the saved epoch only when resuming, in which case every
            group must already have an ``"initial_lr"``.

    Attributes:
        optimizer: as given.
        base_lrs: each group's ``initial_lr``.
        last_epoch: the number of ``step()`` calls since the start (0 after building).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0.\nLoad the optimizer's state dict "
                        "(which holds initial_lr) before building the scheduler, or leave "
                        "last_epoch at -1 for a fresh run."
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._get_lr_called_within_step = False
        # The first step, to epoch 0; get_lr can tell it apart with _is_initial.
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # ------------------------------------------------------------- interface
    def get_lr(self) -> list:
        """The rates for epoch ``last_epoch``, one per group (called by :meth:`step`).

        To read the current rates, use :meth:`get_last_lr`.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def get_last_lr(self) -> list:
        """The rates the last :meth:`step` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance to the next epoch and set each group's ``lr``.

        Args:
            epoch: deprecated (as in PyTorch): jump to this epoch, using the
                closed-form schedule where the scheduler has one.
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_ARGUMENT_WARNING, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_if_called_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Every attribute of the scheduler except the optimizer, as a dict."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)


#: PyTorch's older name for :class:`LRScheduler`.
_LRScheduler = LRScheduler


def _one_lambda_per_group(optimizer: Optimizer, lr_lambda) -> list:
    """``lr_lambda`` for every parameter group, or the list given, one per group."""
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(
                f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
            )
        return list(lr_lambda)
    return [lr_lambda] * len(optimizer.param_groups)


class LambdaLR(LRScheduler):
    """Set each group's rate to its initial rate times a function of the epoch.

    ``lr = initial_lr * lr_lambda(epoch)``.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the epoch (an int), or a list of them, one per group.
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> warmup = LambdaLR(opt, lr_lambda=lambda epoch: min(1.0, (epoch + 1) / 5))
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.lr_lambdas = _one_lambda_per_group(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``initial_lr * lr_lambda(last_epoch)`` for each group."""
        self._warn_if_called_outside_step()
        return [
            base_lr * lmbda(self.last_epoch)
            for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)
        ]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes; functions are not saved (``None``), but the
        attributes of callable objects are."""
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes; the functions stay those given to the constructor."""
        state_dict = dict(state_dict)
        saved_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply each group's rate by ``gamma`` every ``step_size`` epochs.

    ``lr = initial_lr * gamma ** (epoch // step_size)``.

    Args:
        optimizer: the optimizer.
        step_size: epochs between two decays.
        gamma: multiplicative factor (default 0.1).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = StepLR(opt, step_size=30, gamma=0.1)  # 0.05 for 30 epochs, then 0.005...
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates, times ``gamma`` on each multiple of ``step_size``."""
        self._warn_if_called_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """Multiply each group's rate by ``gamma`` at each milestone epoch.

    Args:
        optimizer: the optimizer.
        milestones: epochs at which to decay (a milestone listed twice decays twice).
        gamma: multiplicative factor (default 0.1).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch=-1
    ):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates, times ``gamma`` (per occurrence) at a milestone."""
        self._warn_if_called_outside_step()
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base_lr * self.gamma**passed for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply each group's rate by ``gamma`` every epoch: ``lr = initial_lr * gamma ** epoch``.

    Args:
        optimizer: the optimizer.
        gamma: multiplicative factor per epoch.
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = ExponentialLR(opt, gamma=0.95)
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates times ``gamma`` (unchanged on the initial step)."""
        self._warn_if_called_outside_step()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal each group's rate along a cosine from ``initial_lr`` down to ``eta_min``.

    The schedule follows ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``
    for epoch ``t``, and keeps going past ``T_max`` (back up to ``initial_lr`` at
    ``2 * T_max``: it is periodic, without restarts).

    Like PyTorch, each step computes the new rate from the current one, so that
    a rate changed by someone else (another scheduler) is carried along::

        lr_t = eta_min + (lr_{t-1} - eta_min)
                         * (1 + cos(pi * t / T_max)) / (1 + cos(pi * (t - 1) / T_max))

    At the bottom of the cosine (where that ratio would divide by zero) the
    step adds ``(initial_lr - eta_min) * (1 - cos(pi / T_max)) / 2`` instead.
    The floating-point values therefore match PyTorch's step by step, and differ
    from the closed formula in the last bits.

    Args:
        optimizer: the optimizer.
        T_max: epochs of one half-period (from the top to the bottom).
        eta_min: the lowest rate (default 0).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = CosineAnnealingLR(opt, T_max=100, eta_min=1e-5)
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ):  # noqa: N803 - PyTorch's argument name
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The next rates by the recursive formula above."""
        self._warn_if_called_outside_step()
        t, period, eta_min = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and t > 0:  # resumed at epoch t: use the closed formula
            return [
                eta_min + (base_lr - eta_min) * (1 + math.cos(t * math.pi / period)) / 2
                for base_lr in self.base_lrs
            ]
        if (t - 1 - period) % (2 * period) == 0:  # leaving the bottom of the cosine
            return [
                group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / period)) / 2
                for base_lr, group in zip(self.base_lrs, groups)
            ]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (group["lr"] - eta_min) + eta_min for group in groups]

    def _get_closed_form_lr(self) -> list:
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base_lr in self.base_lrs
        ]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): warm the rate up to ``max_lr``, then anneal it far below.

    Stepped once per *batch*. The rate starts at ``max_lr / div_factor``, rises
    to ``max_lr`` over the first ``pct_start`` of the ``total_steps`` steps, then
    falls to ``initial_lr / final_div_factor``. With ``three_phase`` it first
    falls back to the initial rate (over as many steps as it rose) and only then
    to the minimum. Each phase anneals by a half cosine (``"cos"``) or a straight
    line (``"linear"``).

    With ``cycle_momentum`` the momentum moves the opposite way, between
    ``max_momentum`` and ``base_momentum``: the optimizer's ``momentum`` (SGD,
    RMSprop) or the first of its ``betas`` (Adam, AdamW).

    Each group receives ``initial_lr``, ``max_lr`` and ``min_lr`` entries (and
    ``max_momentum``, ``base_momentum`` when cycling momentum).

    Args:
        optimizer: the optimizer.
        max_lr: the peak rate, or one per group.
        total_steps: the number of steps in the cycle; or give ``epochs`` and
            ``steps_per_epoch`` and it is their product.
        epochs, steps_per_epoch: see ``total_steps``.
        pct_start: the fraction of the cycle spent rising (default 0.3).
        anneal_strategy: ``"cos"`` (default) or ``"linear"``.
        cycle_momentum: cycle the momentum too (default True).
        base_momentum: the lowest momentum, reached at the peak rate (default 0.85).
        max_momentum: the highest momentum, at the start and end (default 0.95).
        div_factor: ``initial_lr = max_lr / div_factor`` (default 25).
        final_div_factor: ``min_lr = initial_lr / final_div_factor`` (default 1e4).
        three_phase: use three phases instead of two (default False).
        last_epoch: the number of batches already done, when resuming (default -1).

    Raises:
        ValueError: a bad argument, or stepping past ``total_steps``.

    Example::

        >>> sched = OneCycleLR(opt, max_lr=0.1, epochs=10, steps_per_epoch=len(loader))
        >>> for epoch in range(10):
        ...     for batch in loader:
        ...         train_batch(batch)
        ...         sched.step()
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = self._count_total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = self._phases(pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy

        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, max_momentums, base_momentums):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _count_total_steps(total_steps, epochs, steps_per_epoch) -> int:
        """``total_steps``, or ``epochs * steps_per_epoch``, checked."""
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            return total_steps
        if epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            return epochs * steps_per_epoch
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")

    def _phases(self, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
        """The phases of the cycle: the step each ends on, and the group keys it goes between."""
        rise_end = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        if three_phase:
            return [
                self._phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                self._phase(
                    float(2 * pct_start * self.total_steps) - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                self._phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        return [
            self._phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            self._phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
        ]

    @staticmethod
    def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum) -> dict[str, Any]:
        return {
            "end_step": end_step,
            "start_lr": start_lr,
            "end_lr": end_lr,
            "start_momentum": start_momentum,
            "end_momentum": end_momentum,
        }

    def _anneal(self, start: float, end: float, pct: float) -> float:
        """The value ``pct`` (0 to 1) of the way from ``start`` to ``end``."""
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _set_momentum(self, group: dict[str, Any], momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def get_lr(self) -> list:
        """The rates for step ``last_epoch`` (and, with cycle_momentum, set the momentum)."""
        self._warn_if_called_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                        self._set_momentum(group, momentum)
                    break
                start_step = end_step
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Divide the rates when a watched metric stops improving.

    Call ``scheduler.step(metric)`` once per epoch with, for example, the
    validation loss. When ``patience`` epochs in a row bring no improvement
    (by more than ``threshold``), each group's rate becomes
    ``max(lr * factor, min_lr)``, and ``cooldown`` epochs pass before bad epochs
    are counted again.

    An epoch improves on the best value ``best`` when the metric is below
    ``best * (1 - threshold)`` (mode ``"min"``, threshold_mode ``"rel"``),
    below ``best - threshold`` (``"min"``, ``"abs"``), above
    ``best * (1 + threshold)`` (``"max"``, ``"rel"``) or above
    ``best + threshold`` (``"max"``, ``"abs"``).

    Args:
        optimizer: the optimizer.
        mode: ``"min"`` (default) when lower is better, ``"max"`` when higher is.
        factor: multiplier of the rate on a plateau (default 0.1; must be < 1).
        patience: bad epochs tolerated before reducing (default 10).
        threshold: the least change that counts as an improvement (default 1e-4).
        threshold_mode: ``"rel"`` (default) or ``"abs"``.
        cooldown: epochs to wait after a reduction before counting again (default 0).
        min_lr: the lowest rate, or one per group (default 0).
        eps: a reduction smaller than this is skipped (default 1e-8).

    Example::

        >>> sched = ReduceLROnPlateau(opt, mode="min", patience=5)
        >>> for epoch in range(100):
        ...     train(...)
        ...     sched.step(validation_loss())
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
    ):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        """Check and store how improvement is measured."""
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        """Forget the best value and the bad-epoch and cooldown counters."""
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is waiting after a reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric value ``a`` improves on ``best`` (see the class docstring)."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric and reduce the rates after too many bad epochs.

        Args:
            metrics: the watched value (a number or a one-element tensor).
            epoch: deprecated: the epoch number to record.
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_ARGUMENT_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch

        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1

        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count

        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        """Multiply each group's rate by ``factor``, not below its ``min_lr``."""
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                _set_group_value(group, "lr", new_lr)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


# ====================================================== more schedulers
# Warm-up and decay shapes, and schedulers that combine other schedulers.


def _initial_step(scheduler: LRScheduler) -> None:
    """Take a scheduler's first step (epoch 0) again, as building it did."""
    scheduler._step_count = 0
    scheduler._is_initial = True
    try:
        scheduler.step()
    finally:
        scheduler._is_initial = False


def _jump_to(scheduler: LRScheduler, epoch: int) -> None:
    """Set ``scheduler`` to ``epoch`` by its closed form (its formula in ``epoch``), silently."""
    scheduler.last_epoch = epoch
    scheduler._get_lr_called_within_step = True
    try:
        closed_form = getattr(scheduler, "_get_closed_form_lr", None)
        values = closed_form() if closed_form is not None else scheduler.get_lr()
    finally:
        scheduler._get_lr_called_within_step = False
    for group, lr in zip(scheduler.optimizer.param_groups, values):
        _set_group_value(group, "lr", lr)
    scheduler._last_lr = _group_values(scheduler.optimizer, "lr")


class ConstantLR(LRScheduler):
    """Multiply each group's rate by ``factor`` until epoch ``total_iters``, then restore it.

    ``lr = initial_lr * factor`` for ``epoch < total_iters``, ``initial_lr`` after.

    Args:
        optimizer: the optimizer.
        factor: the factor, in ``[0, 1]`` (default 1/3).
        total_iters: how many epochs the factor applies (default 5).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = ConstantLR(opt, factor=0.5, total_iters=4)  # 0.025 for 4 epochs, then 0.05
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates, times ``factor`` at epoch 0, divided by it at ``total_iters``."""
        self._warn_if_called_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self) -> list:
        done = self.last_epoch >= self.total_iters
        return [base_lr * (self.factor + done * (1 - self.factor)) for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Change each group's rate linearly from ``start_factor`` to ``end_factor`` times its
    initial rate over ``total_iters`` epochs (a linear warm-up, or a linear decay).

    ``lr = initial_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``.

    Args:
        optimizer: the optimizer.
        start_factor: the factor at epoch 0, in ``(0, 1]`` (default 1/3).
        end_factor: the factor from ``total_iters`` on, in ``[0, 1]`` (default 1).
        total_iters: how many epochs the change takes (default 5).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=10)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates, moved one step along the line (chainable form)."""
        self._warn_if_called_outside_step()
        groups = self.optimizer.param_groups
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        if self.last_epoch == 0:
            return [group["lr"] * start for group in groups]
        if self.last_epoch > total:
            return _group_values(self.optimizer, "lr")
        ratio = 1.0 + (end - start) / (total * start + (self.last_epoch - 1) * (end - start))
        return [group["lr"] * ratio for group in groups]

    def _get_closed_form_lr(self) -> list:
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        return [
            base_lr * (start + (end - start) * min(total, self.last_epoch) / total)
            for base_lr in self.base_lrs
        ]


class MultiplicativeLR(LRScheduler):
    """Multiply each group's rate by ``lr_lambda(epoch)`` every epoch after the first.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the epoch giving the factor, or a list of them, one per group.
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.lr_lambdas = _one_lambda_per_group(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates times ``lr_lambda(last_epoch)`` (unchanged at epoch 0)."""
        self._warn_if_called_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [
                group["lr"] * lmbda(self.last_epoch)
                for lmbda, group in zip(self.lr_lambdas, groups)
            ]
        return _group_values(self.optimizer, "lr")

    # Functions are not saved, the attributes of callable objects are (as LambdaLR).
    state_dict = LambdaLR.state_dict
    load_state_dict = LambdaLR.load_state_dict


class PolynomialLR(LRScheduler):
    """Decay each group's rate polynomially to zero over ``total_iters`` epochs.

    ``lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power``.

    Args:
        optimizer: the optimizer.
        total_iters: how many epochs the decay takes (default 5).
        power: the polynomial's power (default 1: linear).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = PolynomialLR(opt, total_iters=4, power=2.0)
    """

    def __init__(
        self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current rates times the ratio of two consecutive values of the polynomial."""
        self._warn_if_called_outside_step()
        t, total = self.last_epoch, self.total_iters
        if t == 0 or t > total:
            return _group_values(self.optimizer, "lr")
        factor = ((1.0 - t / total) / (1.0 - (t - 1) / total)) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * left**self.power for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial rate down to ``eta_min``, restarting every period
    (SGDR, Loshchilov and Hutter).

    ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``, where
    ``T_cur`` counts the epochs since the last restart and ``T_i`` is the current
    period: ``T_0``, then ``T_0 * T_mult``, ``T_0 * T_mult**2``, ...
    ``step(epoch)`` accepts a fractional epoch (``epoch + i / iters`` per batch).

    Args:
        optimizer: the optimizer.
        T_0: the first period, in epochs (a positive int).
        T_mult: the factor by which each period grows (an int, at least 1; default 1).
        eta_min: the lowest rate (default 0).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> sched = CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803 - PyTorch's argument names
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2`` per group."""
        self._warn_if_called_outside_step()
        angle = math.pi * self.T_cur / self.T_i
        return [
            self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(angle)) / 2
            for base_lr in self.base_lrs
        ]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (which may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            self._place(epoch)
        self._step_count += 1
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _place(self, epoch: float) -> None:
        """Set ``T_cur`` and ``T_i`` for an epoch counted from the start."""
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            restarts = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**restarts - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**restarts


class CyclicLR(LRScheduler):
    """Cycle each group's rate between ``base_lr`` and ``max_lr`` (Smith's cyclical rates),
    stepped once per *batch*.

    Each cycle rises linearly for ``step_size_up`` steps and falls for
    ``step_size_down``. The amplitude is scaled by ``scale_fn`` of the cycle
    number (``scale_mode="cycle"``) or of the step (``"iterations"``):
    ``"triangular"`` keeps it, ``"triangular2"`` halves it every cycle,
    ``"exp_range"`` multiplies it by ``gamma ** step``. With ``cycle_momentum``
    the momentum (or Adam's ``beta1``) cycles the other way, between
    ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: the optimizer.
        base_lr: the lowest rate, or one per group.
        max_lr: the highest rate, or one per group.
        step_size_up: steps in the rising half (default 2000).
        step_size_down: steps in the falling half (default ``step_size_up``).
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``.
        gamma: the factor of ``"exp_range"`` (default 1).
        scale_fn: a function of one argument to use instead of ``mode``.
        scale_mode: ``"cycle"`` or ``"iterations"``, the argument of ``scale_fn``.
        cycle_momentum: cycle the momentum too (default True).
        base_momentum: the lowest momentum, or one per group (default 0.8).
        max_momentum: the highest momentum, or one per group (default 0.9).
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> opt = glasstorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> sched = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=4)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr,
        max_lr,
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum=0.8,
        max_momentum=0.9,
        last_epoch: int = -1,
    ):
        _check_optimizer(optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._setup_momentum(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _setup_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> None:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(
                "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
            )
        self.use_beta1 = "betas" in optimizer.defaults
        self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
        self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        if last_epoch == -1:
            for top, bottom, group in zip(
                self.max_momentums, self.base_momentums, optimizer.param_groups
            ):
                self._set_momentum(group, top)
                group["max_momentum"] = top
                group["base_momentum"] = bottom

    def _set_momentum(self, group: dict[str, Any], momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at ``x`` (a cycle number or a step, see ``scale_mode``)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list:
        """The rates (and, with ``cycle_momentum``, the momenta) for step ``last_epoch``."""
        self._warn_if_called_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base_lr + (max_lr - base_lr) * scale_factor * scale
            for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, bottom, top in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                self._set_momentum(group, top - (top - bottom) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes; a custom ``scale_fn`` function is not saved."""
        state = super().state_dict()
        state.pop("_scale_fn_custom", None)
        return state


class SequentialLR(LRScheduler):
    """Run several schedulers one after the other, switching at the ``milestones`` epochs.

    Scheduler ``i`` runs from ``milestones[i - 1]`` on; at a switch it starts
    from its own epoch 0.

    Args:
        optimizer: the optimizer (all the schedulers must be built on it).
        schedulers: the schedulers, in order.
        milestones: the switching epochs, one fewer than the schedulers.
        last_epoch: see :class:`LRScheduler`.

    Example::

        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        >>> decay = ExponentialLR(opt, gamma=0.9)
        >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[5])
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ):
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler, but got no scheduler."
            )
        for index, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(
                    f"{type(self).__name__} at index {index} should have `optimizer` as its "
                    "attribute."
                )
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{type(self).__name__} does not support `ReduceLROnPlateau` scheduler as "
                    "it requires additional kwargs to be specified when calling `step`, but got "
                    f"one at index {index} in the given schedulers sequence."
                )
            if optimizer != scheduler.optimizer:
                raise ValueError(
                    f"{type(self).__name__} expects all schedulers to belong to the same "
                    f"optimizer, but got scheduler {type(scheduler).__name__} at index {index} "
                    f"has {scheduler.optimizer}, which is different from "
                    f"{type(optimizer).__name__}."
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        for scheduler in self._schedulers:  # undo the first step each took when built
            scheduler.last_epoch -= 1
        first = self._schedulers[bisect_right(self._milestones, 0)]
        _initial_step(first)
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch with the scheduler in charge of it."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            _jump_to(scheduler, 0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with each scheduler's own state dict in ``_schedulers``."""
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and each scheduler's state."""
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, state in zip(self._schedulers, saved):
            scheduler.load_state_dict(state)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together each epoch, so that their effects multiply.

    Args:
        schedulers: the schedulers (built on the same optimizer).
        optimizer: that optimizer (default: the first scheduler's).

    Example::

        >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.1, total_iters=2),
        ...                           ExponentialLR(opt, gamma=0.9)])
    """

    def __init__(self, schedulers: list[LRScheduler], optimizer: Optimizer | None = None):
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got "
                "no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        for index, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{type(self).__name__} does not support `ReduceLROnPlateau` scheduler as "
                    "it requires additional kwargs to be specified when calling `step`, but got "
                    f"one at index {index} in the given schedulers sequence."
                )
            if optimizer != scheduler.optimizer:
                raise ValueError(
                    f"{type(self).__name__} expects all schedulers to belong to the same "
                    f"optimizer, but got scheduler {type(scheduler).__name__} at index {index} "
                    f"has {scheduler.optimizer}, which is different from "
                    f"{type(optimizer).__name__}."
                )
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler once."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


__all__ += [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "LinearLR",
    "MultiplicativeLR",
    "PolynomialLR",
    "SequentialLR",
]
