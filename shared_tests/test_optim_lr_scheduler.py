"""Learning-rate schedulers: the same rates as PyTorch, step by step.

Each scheduler drives an optimizer with two parameter groups for many steps;
the learning rates (and, for OneCycleLR, the momentum or beta1) after every
step must equal PyTorch's. The rates involve no tensors, so the comparison is
exact where PyTorch evaluates the same formula.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
from oracle import assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.optim as gt_optim
from glasstorch.optim import lr_scheduler as gt_sched

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.optim, pytest.mark.usefixtures("default_device")]


def make_optimizer(lib, optim, name="SGD", **kwargs):
    """An optimizer over two tiny parameter groups (lr 0.1 and 0.02)."""
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    kwargs = {"lr": 0.1, **kwargs}
    return getattr(optim, name)([{"params": [a]}, {"params": [b], "lr": 0.02}], **kwargs)


def record(optimizer, scheduler, steps: int, metrics=None, keys=("lr",)) -> list:
    """The groups' values of ``keys`` after building and after every step."""
    history = [[tuple(g[k] for k in keys) for g in optimizer.param_groups]]
    for i in range(steps):
        optimizer.step()  # no gradients: nothing moves, but the order is the usual one
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        history.append([tuple(g[k] for k in keys) for g in optimizer.param_groups])
        assert scheduler.get_last_lr() == [g["lr"] for g in optimizer.param_groups]
    return history


def both(
    name, make_scheduler, steps=60, optimizer="SGD", opt_kwargs=None, metrics=None, keys=("lr",)
):
    """The histories of glasstorch and PyTorch under the same scheduler."""
    runs = []
    for lib, optim, sched in (
        (gt, gt_optim, gt_sched),
        (torch, torch.optim, torch.optim.lr_scheduler),
    ):
        opt = make_optimizer(lib, optim, optimizer, **(opt_kwargs or {}))
        scheduler = make_scheduler(sched, opt)
        runs.append(record(opt, scheduler, steps, metrics, keys))
    return runs


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.93, 0.5, 0.5, 0.5, 0.5, 0.5] * 5

SCHEDULES = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=12),
    "CosineAnnealingLR-eta_min": lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1 + e) ** 0.5),
    "LambdaLR-list": lambda s, o: s.LambdaLR(
        o, lr_lambda=[lambda e: 0.95**e, lambda e: min(1.0, (e + 1) / 10)]
    ),
    "ReduceLROnPlateau": lambda s, o: s.ReduceLROnPlateau(o, patience=2, factor=0.5),
    "ReduceLROnPlateau-abs-cooldown": lambda s, o: s.ReduceLROnPlateau(
        o, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2, min_lr=[0.01, 0.001]
    ),
    "ReduceLROnPlateau-max": lambda s, o: s.ReduceLROnPlateau(
        o, mode="max", patience=0, factor=0.7, min_lr=0.005
    ),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_learning_rates_match_pytorch(name):
    metrics = PLATEAU_METRICS if name.startswith("ReduceLROnPlateau") else None
    if name == "ReduceLROnPlateau-max":
        metrics = [-m for m in PLATEAU_METRICS]
    mine, theirs = both(name, SCHEDULES[name], metrics=metrics)
    assert mine == theirs


ONE_CYCLE = {
    "cos-sgd": ({}, dict(max_lr=1.0, total_steps=50)),
    "linear-sgd": ({}, dict(max_lr=[1.0, 0.5], total_steps=40, anneal_strategy="linear")),
    "three-phase": ({}, dict(max_lr=0.8, epochs=5, steps_per_epoch=9, three_phase=True)),
    "divisors": (
        {},
        dict(
            max_lr=0.3,
            total_steps=30,
            pct_start=0.5,
            div_factor=10.0,
            final_div_factor=100.0,
            base_momentum=0.8,
            max_momentum=0.9,
        ),
    ),
    "no-momentum-cycle": ({}, dict(max_lr=0.3, total_steps=20, cycle_momentum=False)),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(ONE_CYCLE))
def test_one_cycle_lr_and_momentum_match_pytorch(case):
    opt_kwargs, kwargs = ONE_CYCLE[case]
    total = kwargs.get("total_steps") or kwargs["epochs"] * kwargs["steps_per_epoch"]
    mine, theirs = both(
        case,
        lambda s, o: s.OneCycleLR(o, **kwargs),
        steps=total - 1,
        opt_kwargs={"momentum": 0.9, **opt_kwargs},
        keys=("lr", "momentum"),
    )
    assert mine == theirs


@needs_torch
@pytest.mark.parametrize("optimizer", ["Adam", "AdamW"])
def test_one_cycle_cycles_adam_beta1(optimizer):
    mine, theirs = both(
        optimizer,
        lambda s, o: s.OneCycleLR(o, max_lr=0.01, total_steps=25, three_phase=True),
        steps=24,
        optimizer=optimizer,
        keys=("lr", "betas"),
    )
    assert mine == theirs


# --------------------------------------------------------- without PyTorch
def test_step_lr_closed_form():
    opt = make_optimizer(gt, gt_optim)
    sched = gt_sched.StepLR(opt, step_size=3, gamma=0.5)
    history = record(opt, sched, 10)
    assert [h[0][0] for h in history] == [0.1 * 0.5 ** (e // 3) for e in range(11)]
    assert sched.last_epoch == 10 and sched.base_lrs == [0.1, 0.02]
    assert opt.param_groups[1]["initial_lr"] == 0.02


def test_cosine_annealing_follows_the_cosine():
    opt = make_optimizer(gt, gt_optim)
    sched = gt_sched.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    history = record(opt, sched, 25)
    for epoch, groups in enumerate(history):
        expected = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert groups[0][0] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_one_cycle_endpoints():
    opt = make_optimizer(gt, gt_optim, momentum=0.9)
    sched = gt_sched.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3)
    history = record(opt, sched, 9, keys=("lr", "momentum"))
    assert history[0][0] == pytest.approx((1.0 / 25, 0.95), rel=1e-14)
    assert history[2][0] == pytest.approx((1.0, 0.85), rel=1e-14)  # peak: pct_start*total - 1
    assert history[9][0][0] == pytest.approx(1.0 / 25 / 1e4, rel=1e-12)
    assert history[9][0][1] == pytest.approx(0.95)
    with pytest.raises(
        ValueError, match="^Tried to step 11 times. The specified number of total steps is 10$"
    ):
        sched.step()
        sched.step()


def test_reduce_on_plateau_by_hand():
    opt = make_optimizer(gt, gt_optim)
    sched = gt_sched.ReduceLROnPlateau(opt, patience=1, factor=0.5, cooldown=1)
    lrs = []
    for metric in [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5]:
        sched.step(metric)
        lrs.append(opt.param_groups[0]["lr"])
    # Two bad epochs (patience 1) halve the rate; one cooldown epoch does not count.
    assert lrs == [0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]
    assert sched.get_last_lr() == [0.025, 0.005]


def test_two_schedulers_chain():
    opt = make_optimizer(gt, gt_optim)
    first = gt_sched.ExponentialLR(opt, gamma=0.9)
    second = gt_sched.StepLR(opt, step_size=2, gamma=0.1)
    for _ in range(4):
        opt.step()
        first.step()
        second.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.9**4 * 0.1**2, rel=1e-12)


def test_get_lr_outside_step_warns():
    opt = make_optimizer(gt, gt_optim)
    sched = gt_sched.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()  # no warning from inside step
    assert sched.get_last_lr() == [0.05, 0.01]


# ---------------------------------------------------------------- state_dict
ROUND_TRIP = {
    "StepLR": (SCHEDULES["StepLR"], None, "SGD"),
    "MultiStepLR": (SCHEDULES["MultiStepLR"], None, "SGD"),
    "CosineAnnealingLR": (SCHEDULES["CosineAnnealingLR-eta_min"], None, "SGD"),
    "LambdaLR": (SCHEDULES["LambdaLR-list"], None, "SGD"),
    "OneCycleLR": (lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=30), None, "Adam"),
    "ReduceLROnPlateau": (SCHEDULES["ReduceLROnPlateau-abs-cooldown"], PLATEAU_METRICS, "SGD"),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_scheduler_state_dict_round_trip(name):
    """Save optimizer and scheduler mid-run, restore into fresh ones, continue: same rates."""
    make_scheduler, metrics, optimizer = ROUND_TRIP[name]
    keys = ("lr", "betas") if optimizer == "Adam" else ("lr",)

    opt = make_optimizer(gt, gt_optim, optimizer)
    straight = record(opt, make_scheduler(gt_sched, opt), 25, metrics, keys)

    opt = make_optimizer(gt, gt_optim, optimizer)
    sched = make_scheduler(gt_sched, opt)
    first = record(opt, sched, 10, metrics, keys)
    opt_state = copy.deepcopy(opt.state_dict())
    sched_state = copy.deepcopy(sched.state_dict())
    assert "optimizer" not in sched_state and sched_state["last_epoch"] == 10

    fresh_opt = make_optimizer(gt, gt_optim, optimizer)
    fresh = make_scheduler(gt_sched, fresh_opt)  # build first, then load (PyTorch's order)
    fresh_opt.load_state_dict(opt_state)
    fresh.load_state_dict(sched_state)
    rest = record(fresh_opt, fresh, 15, metrics[10:] if metrics else None, keys)
    assert first + rest[1:] == straight


def test_lambda_lr_state_dict_keeps_callable_objects_state():
    class Warmup:
        def __init__(self):
            self.length = 5

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.length)

    opt = make_optimizer(gt, gt_optim)
    rule = Warmup()
    sched = gt_sched.LambdaLR(opt, [lambda e: 1.0, rule])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"length": 5}]
    rule.length = 50
    sched.load_state_dict(state)
    assert rule.length == 5


# -------------------------------------------------------------------- errors
def _gt_opt(name="SGD", **kw):
    return make_optimizer(gt, gt_optim, name, **kw)


def _torch_opt(name="SGD", **kw):
    return make_optimizer(torch, torch.optim, name, **kw)


@pytest.mark.parametrize(
    ("make", "match", "exc_type"),
    [
        (lambda s, o: s.StepLR("not an optimizer", 3), "^str is not an Optimizer$", TypeError),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=1.0),
            r"^You must define either total_steps OR \(epochs AND steps_per_epoch\)$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=1.0, total_steps=0),
            "^Expected positive integer total_steps, but got 0$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=1.0, epochs=2, steps_per_epoch=-1),
            "^Expected positive integer steps_per_epoch, but got -1$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=1.0, total_steps=10, pct_start=1.5),
            "^Expected float between 0 and 1 pct_start, but got 1.5$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=1.0, total_steps=10, anneal_strategy="exp"),
            "^anneal_strategy must be one of 'cos' or 'linear', instead got exp$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o("Adagrad"), max_lr=1.0, total_steps=10),
            "^optimizer must support momentum or beta1 with `cycle_momentum` option enabled$",
            ValueError,
        ),
        (
            lambda s, o: s.OneCycleLR(o(), max_lr=[1.0], total_steps=10),
            "^max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, "
            "param_groups has 2.$",
            ValueError,
        ),
        (
            lambda s, o: s.ReduceLROnPlateau(o(), factor=1.0),
            r"^Factor should be < 1\.0\.$",
            ValueError,
        ),
        (
            lambda s, o: s.ReduceLROnPlateau(o(), mode="lowest"),
            "^mode lowest is unknown!$",
            ValueError,
        ),
        (
            lambda s, o: s.ReduceLROnPlateau(o(), threshold_mode="pct"),
            "^threshold mode pct is unknown!$",
            ValueError,
        ),
        (
            lambda s, o: s.ReduceLROnPlateau(o(), min_lr=[0.1]),
            "^expected 2 min_lrs, got 1$",
            ValueError,
        ),
        (
            lambda s, o: s.LambdaLR(o(), [lambda e: 1.0]),
            "^Expected 2 lr_lambdas, but got 1$",
            ValueError,
        ),
        (
            lambda s, o: s.StepLR(o(), 3, last_epoch=5),
            "^\"param 'initial_lr' is not specified in param_groups\\[0\\] when resuming",
            KeyError,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_scheduler_errors_match_pytorch(make, match, exc_type):
    assert_same_error(
        lambda: make(gt_sched, _gt_opt),
        (lambda: make(torch.optim.lr_scheduler, _torch_opt)) if torch is not None else None,
        match=match,
        exc_type=exc_type,
    )


# -- ConstantLR, LinearLR, MultiplicativeLR, PolynomialLR, warm restarts, CyclicLR, SequentialLR and ChainedScheduler
# ============================================================== schedulers


def rates(lib, make, steps=22, optimizer=("SGD", dict(lr=0.1, momentum=0.9)), epochs=None):
    """The rates (and momentum or beta1) after building and after each step."""
    w = lib.zeros(2, requires_grad=True)
    opt = getattr(lib.optim, optimizer[0])([w], **optimizer[1])
    sched = make(lib.optim.lr_scheduler, opt)
    seen = [list(sched.get_last_lr())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(steps):
            opt.step()
            sched.step() if epochs is None else sched.step(epochs[i])
            group = opt.param_groups[0]
            momentum = group["betas"][0] if "betas" in group else group["momentum"]
            seen.append(list(sched.get_last_lr()) + [momentum])
    return seen


FACTOR_AND_CYCLE_SCHEDULES = {
    "constant": lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4),
    "linear": lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=7),
    "multiplicative": lambda s, o: s.MultiplicativeLR(o, lambda epoch: 0.9 + 0.001 * epoch),
    "polynomial": lambda s, o: s.PolynomialLR(o, total_iters=10, power=2.0),
    "warm_restarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-3),
    "cyclic": lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=3),
    "cyclic2": lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="triangular2"),
    "sequential": lambda s, o: s.SequentialLR(
        o,
        [s.LinearLR(o, start_factor=0.1, total_iters=5), s.ExponentialLR(o, gamma=0.9)],
        milestones=[5],
    ),
    "sequential3": lambda s, o: s.SequentialLR(
        o,
        [s.ConstantLR(o, factor=0.1, total_iters=2), s.CosineAnnealingLR(o, 6), s.StepLR(o, 3)],
        milestones=[3, 9],
    ),
    "chained": lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, factor=0.1, total_iters=2), s.ExponentialLR(o, gamma=0.9)]
    ),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(FACTOR_AND_CYCLE_SCHEDULES))
def test_scheduler_gives_pytorchs_rates(name):
    got, want = (
        rates(gt, FACTOR_AND_CYCLE_SCHEDULES[name]),
        rates(torch, FACTOR_AND_CYCLE_SCHEDULES[name]),
    )
    np.testing.assert_allclose(np.array(got[1:]), np.array(want[1:]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


@needs_torch
def test_schedulers_with_epochs_and_adam():
    def make(s, o):
        return s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)

    epochs = [i * 0.37 for i in range(22)]  # fractional epochs, as stepped per batch
    got, want = rates(gt, make, epochs=epochs), rates(torch, make, epochs=epochs)
    np.testing.assert_allclose(np.array(got[1:]), np.array(want[1:]), rtol=1e-12, atol=1e-15)

    def cyclic(s, o):
        return s.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9)

    adam = ("Adam", dict(lr=0.1))
    got, want = rates(gt, cyclic, optimizer=adam), rates(torch, cyclic, optimizer=adam)
    np.testing.assert_allclose(np.array(got[1:]), np.array(want[1:]), rtol=1e-12, atol=1e-15)


@needs_torch
@pytest.mark.errors
def test_scheduler_errors():
    def both(make, match):
        w, tw = [gt.zeros(2, requires_grad=True)], [torch.zeros(2, requires_grad=True)]
        assert_same_error(
            lambda: make(gt.optim.lr_scheduler, gt.optim.SGD(w, lr=0.1)),
            lambda: make(torch.optim.lr_scheduler, torch.optim.SGD(tw, lr=0.1)),
            match=match,
        )

    both(lambda s, o: s.LinearLR(o, start_factor=0), "Starting multiplicative factor")
    both(lambda s, o: s.LinearLR(o, end_factor=2), "Ending multiplicative factor")
    both(lambda s, o: s.ConstantLR(o, factor=2), "Constant multiplicative factor")
    both(lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=0), "Expected positive integer T_0")
    both(lambda s, o: s.CosineAnnealingWarmRestarts(o, 2, T_mult=0), "Expected integer T_mult")
    both(
        lambda s, o: s.SequentialLR(o, [s.StepLR(o, 2)], milestones=[3]),
        "one more than the number of milestone points",
    )
    both(lambda s, o: s.SequentialLR(o, [], milestones=[]), "expects at least one scheduler")
    assert_same_error(
        lambda: gt.optim.lr_scheduler.CyclicLR(
            gt.optim.Adagrad([gt.zeros(1, requires_grad=True)]), 0.1, 1
        ),
        lambda: torch.optim.lr_scheduler.CyclicLR(
            torch.optim.Adagrad([torch.zeros(1, requires_grad=True)]), 0.1, 1
        ),
        match="optimizer must support momentum or beta1",
    )
