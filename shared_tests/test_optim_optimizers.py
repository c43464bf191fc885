"""Each optimizer follows PyTorch's update rule, step after step.

glasstorch and PyTorch start a tiny two-layer network (matmul, tanh) from the same
weights, copied through NumPy, and train it for 200 steps; the whole loss curve
and the final weights must agree within float tolerance, in float64 and float32.
A few single steps are also checked against the update rule written out in
NumPy, so the rules are tested without PyTorch too.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.optim as gt_optim

# Every test makes its inputs on the device under test (conftest: --device).
pytestmark = [pytest.mark.optim, pytest.mark.usefixtures("default_device")]

#: Training steps per run; fewer on a device, where the CUDA simulator runs each GPU
#: thread as a coroutine (a step costs tens of milliseconds there).
STEPS = 200 if TEST_DEVICE == "cpu" else 25
FLOATS = ("float64", "float32")

#: (optimizer name, keyword arguments): every configuration the suite trains with.
CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True, "weight_decay": 0.05}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {"lr": 0.005}),
    ("RMSprop", {"lr": 0.005, "momentum": 0.9}),
    # Centered RMSprop divides by the gradient's running variance, which nearly
    # vanishes on a smooth full-batch problem when alpha is small: the run becomes
    # chaotic and amplifies last-bit differences. alpha=0.99 keeps it well-posed.
    ("RMSprop", {"lr": 0.002, "centered": True}),
    ("RMSprop", {"lr": 0.002, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.005, "maximize": True, "eps": 1e-6}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "eps": 1e-8, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
]

#: Tolerances for loss curves and weights after 200 steps. PyTorch computes in
#: float32 arithmetic; glasstorch's reference tier in double precision rounded to
#: float32 on every store, so float32 runs drift apart by a few ulps per step.
TOLERANCES = {"float64": (1e-9, 1e-12), "float32": (1e-4, 1e-5)}


def initial_weights(dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs, targets and starting weights of the little network, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    arrays = {
        "x": rng.standard_normal((6, 3)),
        "y": rng.standard_normal((6, 2)),
        "w1": rng.standard_normal((3, 4)) * 0.5,
        "b1": rng.standard_normal(4) * 0.1,
        "w2": rng.standard_normal((4, 2)) * 0.5,
    }
    return {name: value.astype(dtype) for name, value in arrays.items()}


def train(lib, optim_module, name: str, kwargs: dict, arrays: dict, steps: int = STEPS):
    """Train ``tanh(x @ w1 + b1) @ w2`` on a squared error with ``lib`` (glasstorch or torch).

    With ``maximize`` the optimizer is handed the negated loss, so every run
    descends the same loss. ``w2`` is stored transposed (a non-contiguous leaf),
    which exercises the copy-and-write-back path for strided parameters.

    Returns the loss curve (a list of floats) and the final weights.
    """
    on = {"device": TEST_DEVICE} if lib is gt else {}  # PyTorch, the oracle, on its CPU
    x, y = lib.tensor(arrays["x"], **on), lib.tensor(arrays["y"], **on)
    w1 = lib.tensor(arrays["w1"], requires_grad=True, **on)
    b1 = lib.tensor(arrays["b1"], requires_grad=True, **on)
    w2 = lib.tensor(np.ascontiguousarray(arrays["w2"].T), **on).t().detach().requires_grad_()
    params = [w1, b1, w2]
    optimizer = getattr(optim_module, name)(params, **kwargs)
    sign = -1.0 if kwargs.get("maximize") else 1.0
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((lib.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
        (loss * sign).backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, params


#: The float32 runs: one or two configurations per optimizer (float32 costs as
#: much as float64 on the reference tier, and the rules are the same).
FLOAT32_CONFIGS = [CONFIGS[i] for i in (1, 3, 6, 10, 15, 18, 21)]

RUNS = [(name, kwargs, "float64") for name, kwargs in CONFIGS] + [
    (name, kwargs, "float32") for name, kwargs in FLOAT32_CONFIGS
]
if TEST_DEVICE != "cpu":
    # On a device, one or two configurations per optimizer in both dtypes: the
    # device's kernels are the same whatever the options.
    RUNS = [(name, kwargs, dtype) for name, kwargs in FLOAT32_CONFIGS for dtype in FLOATS]


@needs_torch
@pytest.mark.parametrize(("name", "kwargs", "dtype"), RUNS, ids=lambda v: str(v))
def test_loss_curve_matches_pytorch(name, kwargs, dtype):
    arrays = initial_weights(dtype)
    gt_losses, gt_params = train(gt, gt_optim, name, kwargs, arrays)
    torch_losses, torch_params = train(torch, torch.optim, name, kwargs, arrays)
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(gt_losses, torch_losses, rtol=rtol, atol=atol)
    assert gt_losses[-1] < gt_losses[0]  # the run actually trained
    for mine, theirs in zip(gt_params, torch_params):
        assert_close(mine, theirs.detach(), rtol=rtol, atol=atol)
        assert mine.stride() == theirs.stride()


@needs_torch
@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[1::3], ids=lambda v: str(v))
def test_state_tensors_match_pytorch(name, kwargs, device):
    """After some steps every state entry (buffers and the step count) equals PyTorch's."""
    arrays = initial_weights("float64", seed=1)
    gt_opt = _trained_optimizer(gt, gt_optim, name, kwargs, arrays)
    torch_opt = _trained_optimizer(torch, torch.optim, name, kwargs, arrays)
    gt_state = gt_opt.state_dict()["state"]
    torch_state = torch_opt.state_dict()["state"]
    assert sorted(gt_state) == sorted(torch_state)
    for pid, entries in torch_state.items():
        assert list(gt_state[pid]) == list(entries), f"state keys of param {pid}"
        for key, value in entries.items():
            # The step count stays a CPU tensor, as in PyTorch; the buffers follow the weights.
            on_device = key != "step"
            assert_close(gt_state[pid][key], value, rtol=1e-12, atol=1e-14, check_device=on_device)


def _trained_optimizer(lib, optim_module, name, kwargs, arrays, steps: int = 5):
    on = {"device": TEST_DEVICE} if lib is gt else {}
    w = lib.tensor(arrays["w1"], requires_grad=True, **on)
    x = lib.tensor(arrays["x"], **on)
    optimizer = getattr(optim_module, name)([w], **kwargs)
    for _ in range(steps):
        optimizer.zero_grad()
        (lib.tanh(x @ w) ** 2).sum().backward()
        optimizer.step()
    return optimizer


# ------------------------------------------------------ single steps, by hand
def _one_step(name: str, kwargs: dict, p0: np.ndarray, grads: list[np.ndarray]) -> np.ndarray:
    """glasstorch's parameter after one step per gradient in ``grads``."""
    p = gt.tensor(p0, requires_grad=True, device=TEST_DEVICE)
    optimizer = getattr(gt_optim, name)([p], **kwargs)
    for g in grads:
        p.grad = gt.tensor(g, device=TEST_DEVICE)
        optimizer.step()
    return p.detach().cpu().numpy().copy()


P0 = np.array([0.5, -1.0, 2.0])
G1 = np.array([0.1, 0.2, -0.3])
G2 = np.array([-0.4, 0.0, 0.25])


def test_sgd_momentum_rule_by_hand():
    lr, mu, damp, wd = 0.1, 0.9, 0.2, 0.01
    got = _one_step(
        "SGD", {"lr": lr, "momentum": mu, "dampening": damp, "weight_decay": wd}, P0, [G1, G2]
    )
    d1 = G1 + wd * P0
    p1 = P0 - lr * d1  # the first step's buffer is the gradient itself
    d2 = G2 + wd * p1
    buf = mu * d1 + (1 - damp) * d2
    np.testing.assert_allclose(got, p1 - lr * buf, rtol=1e-14)


def test_sgd_nesterov_rule_by_hand():
    lr, mu = 0.1, 0.9
    got = _one_step("SGD", {"lr": lr, "momentum": mu, "nesterov": True}, P0, [G1, G2])
    p1 = P0 - lr * (G1 + mu * G1)
    buf = mu * G1 + G2
    np.testing.assert_allclose(got, p1 - lr * (G2 + mu * buf), rtol=1e-14)


def test_adam_and_adamw_rules_by_hand():
    lr, b1, b2, eps, wd = 0.1, 0.9, 0.999, 1e-8, 0.1
    for decoupled in (False, True):
        name = "AdamW" if decoupled else "Adam"
        got = _one_step(name, {"lr": lr, "weight_decay": wd}, P0, [G1, G2])
        p, m, v = P0.copy(), np.zeros(3), np.zeros(3)
        for t, g in enumerate([G1, G2], start=1):
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            denom = np.sqrt(v) / np.sqrt(1 - b2**t) + eps
            p = p - lr / (1 - b1**t) * m / denom
        np.testing.assert_allclose(got, p, rtol=1e-13, err_msg=name)


def test_adagrad_rule_by_hand():
    lr, decay, init = 0.5, 0.1, 0.2
    kwargs = {"lr": lr, "lr_decay": decay, "initial_accumulator_value": init}
    got = _one_step("Adagrad", kwargs, P0, [G1, G2])
    p, s = P0.copy(), np.full(3, init)
    for t, g in enumerate([G1, G2], start=1):
        s = s + g * g
        p = p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(s) + 1e-10)
    np.testing.assert_allclose(got, p, rtol=1e-14)


def test_rmsprop_centered_rule_by_hand():
    lr, alpha, eps = 0.01, 0.99, 1e-8
    got = _one_step("RMSprop", {"lr": lr, "centered": True}, P0, [G1, G2])
    p, sq, ga = P0.copy(), np.zeros(3), np.zeros(3)
    for g in [G1, G2]:
        sq = alpha * sq + (1 - alpha) * g * g
        ga = alpha * ga + (1 - alpha) * g
        p = p - lr * g / (np.sqrt(sq - ga * ga) + eps)
    np.testing.assert_allclose(got, p, rtol=1e-14)


def test_adadelta_rule_by_hand():
    rho, eps = 0.9, 1e-6
    got = _one_step("Adadelta", {}, P0, [G1, G2])
    p, sq, acc = P0.copy(), np.zeros(3), np.zeros(3)
    for g in [G1, G2]:
        sq = rho * sq + (1 - rho) * g * g
        delta = np.sqrt(acc + eps) / np.sqrt(sq + eps) * g
        acc = rho * acc + (1 - rho) * delta * delta
        p = p - delta
    np.testing.assert_allclose(got, p, rtol=1e-14)


#: Every optimizer whose rule has a plain (coupled) weight-decay term.
COUPLED_DECAY = [
    ("SGD", {"momentum": 0.9}),
    ("Adam", {}),
    ("RMSprop", {}),
    ("Adagrad", {}),
    ("Adadelta", {}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "kwargs"), COUPLED_DECAY, ids=lambda v: str(v))
def test_zero_weight_decay_leaves_an_infinite_weight_infinite(name, kwargs, dtype):
    # PyTorch adds weight_decay * param only when weight_decay != 0; adding
    # 0 * inf would turn the weight into NaN. The weights are long enough
    # (40,000) for the fast tier's threaded loops.
    p0 = np.full(40_000, 0.5, dtype=dtype)
    p0[[0, 7, 39_999]] = [np.inf, -np.inf, np.inf]
    grad = np.full(40_000, 0.25, dtype=dtype)
    got = _one_step(name, {"lr": 0.1, "weight_decay": 0, **kwargs}, p0, [grad, grad])
    assert got.dtype == dtype
    assert np.isposinf(got[[0, 39_999]]).all() and np.isneginf(got[7])
    assert np.isfinite(np.delete(got, [0, 7, 39_999])).all()
    if torch is not None:  # and with weight decay, inf * 0.01 flows on as PyTorch's does
        for decay in (0, 0.01):
            param = torch.tensor(p0, requires_grad=True)
            optimizer = getattr(torch.optim, name)([param], lr=0.1, weight_decay=decay, **kwargs)
            for _ in range(2):
                param.grad = torch.tensor(grad)
                optimizer.step()
            mine = _one_step(name, {"lr": 0.1, "weight_decay": decay, **kwargs}, p0, [grad] * 2)
            expected = param.detach().cpu().numpy()
            np.testing.assert_array_equal(np.isnan(mine), np.isnan(expected))
            np.testing.assert_allclose(mine, expected, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_defaults_are_pytorchs(device):
    p = gt.zeros(2, requires_grad=True, device=device)
    expected = {
        "SGD": {"lr": 1e-3, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False},
        "Adam": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0},
        "AdamW": {"lr": 1e-3, "weight_decay": 1e-2, "decoupled_weight_decay": True},
        "RMSprop": {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "momentum": 0, "centered": False},
        "Adagrad": {"lr": 1e-2, "lr_decay": 0, "eps": 1e-10, "initial_accumulator_value": 0},
        "Adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0},
    }
    for name, values in expected.items():
        group = getattr(gt_optim, name)([p]).param_groups[0]
        for key, value in values.items():
            assert group[key] == value, f"{name} default {key}"
    if torch is not None:
        tp = torch.zeros(2, requires_grad=True)
        for name in expected:
            mine = getattr(gt_optim, name)([p]).defaults
            theirs = getattr(torch.optim, name)([tp]).defaults
            assert mine == theirs, name


# -- Adamax, NAdam, RAdam and LBFGS follow PyTorch step by step
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


@needs_torch
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


@needs_torch
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


@needs_torch
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
