"""Optimizers, schedulers and a sampler added for programs copied from tutorials and courses:
Adamax, NAdam, RAdam, LBFGS; ConstantLR, LinearLR, MultiplicativeLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR, SequentialLR, ChainedScheduler; WeightedRandomSampler.
Each optimizer follows PyTorch step by step from the same start; each scheduler gives
PyTorch's rates; bad arguments give PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

pytestmark = [pytest.mark.optim, needs_torch, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(5)
START = RNG.standard_normal(6).astype(np.float32)
GOAL = RNG.standard_normal(6).astype(np.float32)


def loss_of(lib, w, goal):
    """A smooth, non-quadratic loss, so that every optimizer's state matters."""
    return ((w - goal) ** 4).sum() + (w * w).sum()


def follow(lib, name, kwargs, steps, device="cpu", closure_style=False):
    """The parameter after ``steps`` steps of ``lib.optim.<name>`` from ``START``."""
    make = on_test_device if lib is gt else torch.tensor
    w = make(START.copy(), requires_grad=True)
    goal = make(GOAL)
    opt = getattr(lib.optim, name)([w], **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_of(lib, w, goal)
        loss.backward()
        return loss

    for _ in range(steps):
        if closure_style:
            opt.step(closure)
        else:
            closure()
            opt.step()
    return w.detach(), opt


CASES = [
    ("Adamax", {}),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES)
def test_optimizer_follows_pytorch(device, name, kwargs):
    got, opt = follow(gt, name, kwargs, 12, device)
    want, topt = follow(torch, name, kwargs, 12)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    state, tstate = opt.state[opt.param_groups[0]["params"][0]], next(iter(topt.state.values()))
    assert sorted(state) == sorted(tstate)
    for key in tstate:
        if key != "step":
            assert_close(state[key], tstate[key], rtol=1e-5, atol=1e-6, check_device=False)


@pytest.mark.parametrize(
    "kwargs", [dict(lr=0.5), dict(lr=1, history_size=3, max_iter=7), dict(max_iter=4, max_eval=3)]
)
def test_lbfgs_follows_pytorch(device, kwargs):
    got, opt = follow(gt, "LBFGS", kwargs, 3, device, closure_style=True)
    want, topt = follow(torch, "LBFGS", kwargs, 3, closure_style=True)
    assert_close(got, want, rtol=1e-5, atol=1e-6)
    state, tstate = next(iter(opt.state.values())), next(iter(topt.state.values()))
    assert state["func_evals"] == tstate["func_evals"]
    assert state["n_iter"] == tstate["n_iter"]


@pytest.mark.errors
def test_optimizer_errors():
    w, tw = [gt.zeros(2, requires_grad=True)], [torch.zeros(2, requires_grad=True)]
    assert_same_error(
        lambda: gt.optim.NAdam(w, momentum_decay=-1),
        lambda: torch.optim.NAdam(tw, momentum_decay=-1),
        match="Invalid momentum_decay value: -1",
    )
    assert_same_error(
        lambda: gt.optim.RAdam(w, betas=(1.0, 0.9)),
        lambda: torch.optim.RAdam(tw, betas=(1.0, 0.9)),
        match="Invalid beta parameter at index 0: 1.0",
    )
    assert_same_error(
        lambda: gt.optim.Adamax(w, eps=-1),
        lambda: torch.optim.Adamax(tw, eps=-1),
        match="Invalid epsilon value: -1",
    )
    assert_same_error(
        lambda: gt.optim.LBFGS([{"params": w}, {"params": [gt.zeros(1, requires_grad=True)]}]),
        lambda: torch.optim.LBFGS(
            [{"params": tw}, {"params": [torch.zeros(1, requires_grad=True)]}]
        ),
        match="LBFGS doesn't support per-parameter options",
    )
    assert_same_error(
        lambda: gt.optim.LBFGS(w).step(), lambda: torch.optim.LBFGS(tw).step(), exc_type=TypeError
    )

    def bisect_step(lib, params):
        opt = lib.optim.LBFGS(params, line_search_fn="bisect")

        def closure():
            opt.zero_grad()
            loss = ((params[0] - 1) ** 2).sum()
            loss.backward()
            return loss

        return opt.step(closure)

    assert_same_error(
        lambda: bisect_step(gt, w),
        lambda: bisect_step(torch, tw),
        match="only 'strong_wolfe' is supported",
    )


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


SCHEDULES = {
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


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_scheduler_gives_pytorchs_rates(name):
    got, want = rates(gt, SCHEDULES[name]), rates(torch, SCHEDULES[name])
    np.testing.assert_allclose(np.array(got[1:]), np.array(want[1:]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


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


# ================================================================= sampling


@pytest.mark.data
def test_weighted_random_sampler():
    weights = [0.0, 1.0, 3.0, 0.0]
    sampler = WeightedRandomSampler(weights, 400, generator=gt.Generator().manual_seed(1))
    drawn = list(sampler)
    assert len(sampler) == len(drawn) == 400
    counts = np.bincount(drawn, minlength=4)
    assert counts[0] == counts[3] == 0  # zero weight: never drawn
    assert 200 < counts[2] < 400 and counts[1] > 40  # about 3 to 1
    again = WeightedRandomSampler(weights, 400, generator=gt.Generator().manual_seed(1))
    assert list(again) == drawn  # a seeded generator repeats the draws
    once = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 4, replacement=False))
    assert sorted(once) == [0, 1, 2, 3]
    assert_close(sampler.weights, torch.tensor(weights, dtype=torch.float64), check_device=False)
    data = TensorDataset(gt.arange(4))
    loader = DataLoader(data, batch_size=5, sampler=WeightedRandomSampler(weights, 10))
    assert all(int(v) in (1, 2) for (batch,) in loader for v in batch)


@pytest.mark.data
@pytest.mark.errors
def test_weighted_random_sampler_errors():
    from torch.utils.data import WeightedRandomSampler as TorchSampler

    assert_same_error(
        lambda: WeightedRandomSampler([1, 2], 0),
        lambda: TorchSampler([1, 2], 0),
        match="num_samples should be a positive integer value, but got num_samples=0",
    )
    assert_same_error(
        lambda: WeightedRandomSampler([1, 2], 2, replacement=1),
        lambda: TorchSampler([1, 2], 2, replacement=1),
        match="replacement should be a boolean value",
    )
    assert_same_error(
        lambda: WeightedRandomSampler([[1, 2]], 2),
        lambda: TorchSampler([[1, 2]], 2),
        match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)",
    )
    assert_same_error(
        lambda: list(WeightedRandomSampler([1, 2], 3, replacement=False)),
        lambda: list(TorchSampler([1, 2], 3, replacement=False)),
        match="cannot sample n_sample > prob_dist.size",
    )
