"""The Optimizer base class: parameter groups, zero_grad, state_dict, errors.

Where PyTorch is installed, checkpoints are compared with PyTorch's format, and a
checkpoint taken by PyTorch is loaded into glasstorch (and the other way round)
to continue the same run.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from oracle import (
    TEST_DEVICE,
    assert_close,
    assert_same_error,
    from_torch,
    needs_torch,
    to_torch,
    torch,
)

import glasstorch as gt
import glasstorch.optim as gt_optim

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.optim, pytest.mark.usefixtures("default_device")]


def quadratic_step(optimizer, params, target: float = 1.0) -> float:
    """One step on ``sum((p - target)**2 * (i + 1))`` over the parameters; returns the loss."""
    optimizer.zero_grad()
    loss = sum(((p - target) ** 2 * (i + 1)).sum() for i, p in enumerate(params))
    loss.backward()
    optimizer.step()
    return loss.item()


def fresh_params(lib=gt, values=((0.5, -1.0, 2.0), ((0.1, 0.2), (0.3, -0.4)))):
    return [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in values]


# --------------------------------------------------------------- param groups
def test_defaults_fill_groups_and_groups_override():
    a, b = fresh_params()
    opt = gt_optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    assert len(opt.param_groups[1]["params"]) == 1 and opt.param_groups[1]["params"][0] is b
    a.grad = gt.ones(3, dtype=gt.float64)
    b.grad = gt.ones(2, 2, dtype=gt.float64)
    opt.step()
    assert_close(a, np.array([0.4, -1.1, 1.9]))
    assert_close(b, np.array([[-0.4, -0.3], [-0.2, -0.9]]))


def test_add_param_group_trains_new_parameters():
    a, b = fresh_params()
    opt = gt_optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert len(opt.param_groups) == 2
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    b_before = b.detach().clone()
    quadratic_step(opt, [a, b])
    assert not gt.equal(b.detach(), b_before)
    # The first Adam step moves every element by lr (the ratio m / sqrt(v) is +-1).
    assert_close((b.detach() - b_before).abs(), np.full((2, 2), 0.01), rtol=1e-6)


@needs_torch
def test_add_param_group_matches_pytorch_midway():
    runs = []
    for lib, optim in ((gt, gt_optim), (torch, torch.optim)):
        a, b = fresh_params(lib)
        opt = optim.RMSprop([a], lr=0.01, momentum=0.5)
        losses = [quadratic_step(opt, [a, b]) for _ in range(5)]
        opt.add_param_group({"params": [b], "lr": 0.02, "centered": True})
        losses += [quadratic_step(opt, [a, b]) for _ in range(10)]
        runs.append((losses, a, b))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-12)
    assert_close(runs[0][2], runs[1][2].detach(), rtol=1e-12)


def test_parameter_in_two_groups_is_an_error():
    a, b = fresh_params()

    def torch_twice():
        t = torch.zeros(1, requires_grad=True)
        torch.optim.SGD([{"params": [t]}, {"params": [t]}], lr=0.1)

    assert_same_error(
        lambda: gt_optim.SGD([{"params": [a]}, {"params": [a, b]}], lr=0.1),
        torch_twice if torch is not None else None,
        match="^some parameters appear in more than one parameter group$",
        exc_type=ValueError,
    )
    opt = gt_optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [b, a]})


def _torch_leaf():
    return torch.zeros(2, requires_grad=True)


@pytest.mark.parametrize(
    ("make_gt", "make_torch", "match", "exc_type"),
    [
        (
            lambda: gt_optim.SGD([], lr=0.1),
            lambda: torch.optim.SGD([], lr=0.1),
            "^optimizer got an empty parameter list$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD(gt.zeros(2, requires_grad=True), lr=0.1),
            lambda: torch.optim.SGD(_torch_leaf(), lr=0.1),
            "^params argument given to the optimizer should be an iterable of Tensors or dicts, "
            "but got torch.FloatTensor$",
            TypeError,
        ),
        (
            lambda: gt_optim.SGD([{"params": {gt.zeros(2, requires_grad=True)}}], lr=0.1),
            lambda: torch.optim.SGD([{"params": {_torch_leaf()}}], lr=0.1),
            "need to be organized in ordered collections",
            TypeError,
        ),
        (
            lambda: gt_optim.SGD([gt.zeros(2, requires_grad=True) * 2], lr=0.1),
            lambda: torch.optim.SGD([_torch_leaf() * 2], lr=0.1),
            "^can't optimize a non-leaf Tensor$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD([1.0], lr=0.1),
            lambda: torch.optim.SGD([1.0], lr=0.1),
            "^optimizer can only optimize Tensors, but one of the params is float$",
            TypeError,
        ),
        (
            lambda: gt_optim.SGD([gt.zeros(2, requires_grad=True)], lr=-1.0),
            lambda: torch.optim.SGD([_torch_leaf()], lr=-1.0),
            r"^Invalid learning rate: -1\.0$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD([gt.zeros(2, requires_grad=True)], lr=0.1, momentum=-0.5),
            lambda: torch.optim.SGD([_torch_leaf()], lr=0.1, momentum=-0.5),
            r"^Invalid momentum value: -0\.5$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD([gt.zeros(2, requires_grad=True)], lr=0.1, weight_decay=-1),
            lambda: torch.optim.SGD([_torch_leaf()], lr=0.1, weight_decay=-1),
            r"^Invalid weight_decay value: -1$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD([gt.zeros(2, requires_grad=True)], lr=0.1, nesterov=True),
            lambda: torch.optim.SGD([_torch_leaf()], lr=0.1, nesterov=True),
            "^Nesterov momentum requires a momentum and zero dampening$",
            ValueError,
        ),
        (
            lambda: gt_optim.SGD(
                [gt.zeros(2, requires_grad=True)],
                lr=0.1,
                momentum=0.9,
                dampening=0.1,
                nesterov=True,
            ),
            lambda: torch.optim.SGD(
                [_torch_leaf()], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True
            ),
            "^Nesterov momentum requires a momentum and zero dampening$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adam([gt.zeros(2, requires_grad=True)], betas=(1.0, 0.9)),
            lambda: torch.optim.Adam([_torch_leaf()], betas=(1.0, 0.9)),
            r"^Invalid beta parameter at index 0: 1\.0$",
            ValueError,
        ),
        (
            lambda: gt_optim.AdamW([gt.zeros(2, requires_grad=True)], betas=(0.9, -0.1)),
            lambda: torch.optim.AdamW([_torch_leaf()], betas=(0.9, -0.1)),
            r"^Invalid beta parameter at index 1: -0\.1$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adam([gt.zeros(2, requires_grad=True)], eps=-1e-8),
            lambda: torch.optim.Adam([_torch_leaf()], eps=-1e-8),
            r"^Invalid epsilon value: -1e-08$",
            ValueError,
        ),
        (
            lambda: gt_optim.RMSprop([gt.zeros(2, requires_grad=True)], alpha=-0.1),
            lambda: torch.optim.RMSprop([_torch_leaf()], alpha=-0.1),
            r"^Invalid alpha value: -0\.1$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adagrad([gt.zeros(2, requires_grad=True)], lr_decay=-0.1),
            lambda: torch.optim.Adagrad([_torch_leaf()], lr_decay=-0.1),
            r"^Invalid lr_decay value: -0\.1$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adagrad(
                [gt.zeros(2, requires_grad=True)], initial_accumulator_value=-1.0
            ),
            lambda: torch.optim.Adagrad([_torch_leaf()], initial_accumulator_value=-1.0),
            r"^Invalid initial_accumulator_value value: -1\.0$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adadelta([gt.zeros(2, requires_grad=True)], rho=1.5),
            lambda: torch.optim.Adadelta([_torch_leaf()], rho=1.5),
            r"^Invalid rho value: 1\.5$",
            ValueError,
        ),
        (
            lambda: gt_optim.Adadelta([gt.zeros(2, requires_grad=True)], lr=-2),
            lambda: torch.optim.Adadelta([_torch_leaf()], lr=-2),
            r"^Invalid learning rate: -2$",
            ValueError,
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_error_wording_matches_pytorch(make_gt, make_torch, match, exc_type):
    if TEST_DEVICE == "cpu" or "torch.FloatTensor" not in match:
        assert_same_error(
            make_gt, make_torch if torch is not None else None, match=match, exc_type=exc_type
        )
        return
    # PyTorch names a CUDA tensor's type torch.cuda.FloatTensor; the oracle runs on the CPU.
    on_device = match.replace("torch.FloatTensor", "torch.cuda.FloatTensor")
    assert_same_error(make_gt, match=on_device, exc_type=exc_type)
    if torch is not None:
        with pytest.raises(exc_type, match=match):
            make_torch()


def test_differentiable_steps_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="do not support differentiable=True"):
        gt_optim.Adam([gt.zeros(2, requires_grad=True)], differentiable=True)


def test_tensor_learning_rate():
    p = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True)
    opt = gt_optim.SGD([p], lr=gt.tensor(0.5))
    p.grad = gt.ones(2, dtype=gt.float64)
    opt.step()
    assert_close(p, np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        gt_optim.SGD([p], lr=gt.tensor([0.1, 0.2]))


def test_param_group_must_be_a_dict():
    opt = gt_optim.SGD(fresh_params()[:1], lr=0.1)
    with pytest.raises(TypeError, match="^param_group must be a dict, but got <class 'list'>$"):
        opt.add_param_group([gt.zeros(1, requires_grad=True)])


# ------------------------------------------------------------------ zero_grad
def test_zero_grad_sets_to_none_by_default():
    a, b = fresh_params()
    opt = gt_optim.SGD([a, b], lr=0.1)
    quadratic_step(opt, [a, b])
    ((a * 2).sum() + b.sum()).backward()
    assert a.grad is not None
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_zero_grad_set_to_none_false_keeps_zero_tensors():
    a, b = fresh_params()
    opt = gt_optim.SGD([a, b], lr=0.1)
    ((a * 2).sum() + b.sum()).backward()
    grad = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is grad  # the same tensor, zeroed in place
    assert_close(a.grad, np.zeros(3))
    assert_close(b.grad, np.zeros((2, 2)))


def test_parameters_without_grad_are_skipped_but_zero_grads_step():
    a, b = fresh_params()
    opt = gt_optim.SGD([a, b], lr=0.1, weight_decay=0.5)
    b_before = b.detach().clone()
    a.grad = gt.zeros(3, dtype=gt.float64)
    opt.step()
    assert gt.equal(b.detach(), b_before)  # no grad: untouched, no state
    assert_close(a, np.array([0.5, -1.0, 2.0]) * (1 - 0.1 * 0.5))  # weight decay acts
    assert b not in opt.state


# --------------------------------------------------------------------- step
def test_step_runs_closure_with_grad_and_returns_its_loss():
    a, b = fresh_params()
    opt = gt_optim.SGD([a, b], lr=0.1)
    calls = []

    def closure():
        opt.zero_grad()
        loss = (a**2).sum()
        assert gt.is_grad_enabled()
        loss.backward()
        calls.append(loss.item())
        return loss

    with gt.no_grad():
        loss = opt.step(closure)
    assert calls == [loss.item()] == [5.25]
    assert_close(a, np.array([0.4, -0.8, 1.6]))


def test_step_records_no_graph_and_bumps_versions():
    a, b = fresh_params()
    opt = gt_optim.Adam([a, b], lr=0.1)
    version = a._version
    quadratic_step(opt, [a, b])
    assert a.grad_fn is None and a.is_leaf and a.requires_grad
    assert a._version > version
    assert opt.state[a]["exp_avg"].requires_grad is False


@needs_torch
def test_a_graph_saved_before_a_step_is_stale_afterwards():
    results = []
    for lib, optim in ((gt, gt_optim), (torch, torch.optim)):
        a, b = fresh_params(lib)
        opt = optim.SGD([a], lr=0.1)
        loss = (a * a).sum()
        a.grad = lib.ones(3, dtype=lib.float64)
        opt.step()
        try:
            loss.backward()
            results.append(None)
        except RuntimeError as error:
            results.append(str(error))
    assert results[1] is not None and "modified by an inplace operation" in results[1]
    assert results[0] is not None and "modified by an inplace operation" in results[0]


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta"])
def test_non_contiguous_parameter_is_updated_in_place(name):
    """A transposed or sliced parameter keeps its layout and matches a contiguous twin."""
    base = gt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=gt.float64)
    strided = base.t().detach().requires_grad_()  # strides (1, 3)
    twin = strided.detach().contiguous().requires_grad_()
    kwargs = {"lr": 0.1, "momentum": 0.9} if name in ("SGD", "RMSprop") else {"lr": 0.1}
    opts = [getattr(gt_optim, name)([p], **kwargs) for p in (strided, twin)]
    for _ in range(3):
        for opt, p in zip(opts, (strided, twin)):
            quadratic_step(opt, [p], target=0.5)
    assert strided.stride() == (1, 3)
    assert_close(strided, twin.detach().cpu().numpy(), rtol=1e-15)
    assert_close(base, twin.detach().t().cpu().numpy(), rtol=1e-15)  # written through the view


def test_float32_parameter_keeps_float32_state():
    p = gt.tensor([1.0, -2.0], requires_grad=True)
    opt = gt_optim.Adam([p], lr=0.1, amsgrad=True)
    quadratic_step(opt, [p])
    state = opt.state[p]
    assert list(state) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert state["step"].dtype == gt.float32 and state["step"].item() == 1.0
    assert state["exp_avg"].dtype == gt.float32 and p.dtype == gt.float32


# --------------------------------------------------------------- state_dict
def test_state_dict_format():
    a, b = fresh_params()
    opt = gt_optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    quadratic_step(opt, [a, b])
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert set(sd["state"]) == {0, 1}
    assert list(sd["state"][0]) == ["momentum_buffer"]
    assert_close(sd["state"][0]["momentum_buffer"], opt.state[a]["momentum_buffer"].cpu().numpy())


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"lr": 0.05, "amsgrad": True}),
        ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
        ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
        ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
        ("Adadelta", {"lr": 0.5}),
    ],
)
def test_state_dict_round_trip_continues_the_run_exactly(name, kwargs):
    """Checkpoint mid-run, load into fresh parameters and optimizer, continue: bit-identical."""
    a, b = fresh_params()
    opt = getattr(gt_optim, name)([{"params": [a]}, {"params": [b], "lr": 0.02}], **kwargs)
    straight = [quadratic_step(opt, [a, b]) for _ in range(12)]

    a2, b2 = fresh_params()
    opt2 = getattr(gt_optim, name)([{"params": [a2]}, {"params": [b2], "lr": 0.02}], **kwargs)
    resumed = [quadratic_step(opt2, [a2, b2]) for _ in range(6)]
    checkpoint = copy.deepcopy(opt2.state_dict())
    weights = [p.detach().clone() for p in (a2, b2)]
    quadratic_step(opt2, [a2, b2])  # moves on; must not disturb the checkpoint

    a3, b3 = (w.requires_grad_() for w in weights)
    opt3 = getattr(gt_optim, name)([{"params": [a3]}, {"params": [b3]}], lr=123.0)
    opt3.load_state_dict(checkpoint)
    assert opt3.param_groups[1]["lr"] == 0.02 and opt3.param_groups[0]["params"][0] is a3
    resumed += [quadratic_step(opt3, [a3, b3]) for _ in range(6)]
    assert resumed == straight
    assert gt.equal(a3.detach(), a.detach()) and gt.equal(b3.detach(), b.detach())


def test_load_state_dict_copies_state_tensors_and_casts_to_param_dtype():
    p = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True)
    opt = gt_optim.Adam([p], lr=0.1)
    quadratic_step(opt, [p])
    sd = opt.state_dict()
    q = gt.tensor([1.0, 2.0], requires_grad=True)  # float32
    other = gt_optim.Adam([q], lr=0.1)
    other.load_state_dict(sd)
    assert other.state[q]["exp_avg"].dtype == gt.float32
    assert other.state[q]["step"].dtype == gt.float32
    loaded = other.state[q]["exp_avg_sq"]
    assert loaded.untyped_storage() is not sd["state"][0]["exp_avg_sq"].untyped_storage()
    same = gt_optim.Adam([p.detach().clone().requires_grad_()], lr=0.1)
    same.load_state_dict(sd)
    (param,) = same.param_groups[0]["params"]
    assert same.state[param]["exp_avg"] is not sd["state"][0]["exp_avg"]
    assert_close(same.state[param]["exp_avg"], sd["state"][0]["exp_avg"].cpu().numpy())


def test_load_state_dict_accepts_an_integer_step():
    p = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True)
    opt = gt_optim.Adam([p], lr=0.1)
    quadratic_step(opt, [p])
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0]["step"] = 1
    opt.load_state_dict(sd)
    assert opt.state[p]["step"].dtype == gt.float32
    quadratic_step(opt, [p])
    assert opt.state[p]["step"].item() == 2.0


def test_load_state_dict_mismatch_errors():
    a, b = fresh_params()
    opt = gt_optim.SGD([a, b], lr=0.1)
    two_groups = gt_optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(
        ValueError, match="^loaded state dict has a different number of parameter groups$"
    ):
        opt.load_state_dict(two_groups.state_dict())
    one = gt_optim.SGD([a], lr=0.1)
    with pytest.raises(
        ValueError,
        match="^loaded state dict contains a parameter group that doesn't match the size of "
        "optimizer's group$",
    ):
        opt.load_state_dict(one.state_dict())


@needs_torch
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", {"lr": 0.05, "momentum": 0.9}),
        ("Adam", {"lr": 0.05, "amsgrad": True}),
        ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
        ("Adagrad", {"lr": 0.1}),
        ("Adadelta", {}),
    ],
)
def test_checkpoints_move_between_pytorch_and_glasstorch(name, kwargs):
    """Same keys as PyTorch's state_dict; a PyTorch checkpoint continues in glasstorch."""
    tp = fresh_params(torch)
    topt = getattr(torch.optim, name)([{"params": [tp[0]]}, {"params": [tp[1]]}], **kwargs)
    gp = fresh_params(gt)
    gopt = getattr(gt_optim, name)([{"params": [gp[0]]}, {"params": [gp[1]]}], **kwargs)
    for _ in range(4):
        quadratic_step(topt, tp)
        quadratic_step(gopt, gp)
    tsd, gsd = topt.state_dict(), gopt.state_dict()
    assert [sorted(g) for g in gsd["param_groups"]] == [sorted(g) for g in tsd["param_groups"]]
    for pid, entries in tsd["state"].items():
        assert list(gsd["state"][pid]) == list(entries)
        for key, value in entries.items():
            assert_close(gsd["state"][pid][key], value, rtol=1e-13, atol=1e-15)

    # PyTorch's checkpoint, tensors converted, continues the glasstorch run (and back).
    converted = {
        "state": {
            pid: {k: from_torch(v) if torch.is_tensor(v) else v for k, v in entries.items()}
            for pid, entries in tsd["state"].items()
        },
        "param_groups": copy.deepcopy(tsd["param_groups"]),
    }
    # The checkpoint's tensors stay on the CPU: loading moves them to the parameters' device.
    weights = [from_torch(p).to(TEST_DEVICE).requires_grad_() for p in tp]
    resumed = getattr(gt_optim, name)([{"params": [weights[0]]}, {"params": [weights[1]]}])
    resumed.load_state_dict(converted)
    back = {
        "state": {
            pid: {k: to_torch(v) if isinstance(v, gt.Tensor) else v for k, v in entries.items()}
            for pid, entries in gsd["state"].items()
        },
        "param_groups": copy.deepcopy(gsd["param_groups"]),
    }
    tweights = [to_torch(p).requires_grad_() for p in gp]
    tresumed = getattr(torch.optim, name)([{"params": [tweights[0]]}, {"params": [tweights[1]]}])
    tresumed.load_state_dict(back)
    for _ in range(4):
        mine = quadratic_step(resumed, weights)
        theirs = quadratic_step(tresumed, tweights)
        assert mine == pytest.approx(theirs, rel=1e-12)
    for mine, theirs in zip(weights, tweights):
        assert_close(mine, theirs.detach(), rtol=1e-12)


def test_repr_lists_groups_like_pytorch():
    a, b = fresh_params()
    opt = gt_optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n")
    assert "Parameter Group 1\n" in text and "    lr: 0.5\n" in text and text.endswith("\n)")
    if torch is not None:
        t = torch.zeros(1, requires_grad=True)
        u = torch.zeros(1, requires_grad=True)
        theirs = repr(torch.optim.SGD([{"params": [t]}, {"params": [u], "lr": 0.5}], lr=0.1))
        assert text == theirs
