"""Losses: values and gradients against PyTorch for every reduction and option,
closed forms with NumPy, gradcheck in float64, and PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

# Every test makes its inputs on the device under test (conftest: --device).
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(99)
REDUCTIONS = ["none", "mean", "sum"]


def compare(call, arrays, *, grad_of=(0,), rtol=None, atol=None):
    """Run ``call(lib, F, *tensors)`` on glasstorch and on torch; compare value and grads.

    ``arrays`` are NumPy arrays; those at positions ``grad_of`` require grad.
    """
    gt_in = [
        gt.tensor(a, requires_grad=i in grad_of, device=TEST_DEVICE) for i, a in enumerate(arrays)
    ]
    t_in = [torch.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    yg = call(gt, F, *gt_in)
    yt = call(torch, torch.nn.functional, *t_in)
    assert_close(yg, yt, rtol=rtol, atol=atol)
    seed = RNG.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(seed, dtype=yt.dtype))
    yg.backward(gt.tensor(seed, device=TEST_DEVICE).to(yg.dtype))
    for i in grad_of:
        assert_close(gt_in[i].grad, t_in[i].grad, rtol=rtol, atol=atol)
    return yg


def floats(*shape, dtype=np.float32, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


# ---------------------------------------------------------- regression losses

REGRESSION = {
    "mse": lambda lib, F, a, b, r: F.mse_loss(a, b, reduction=r),
    "l1": lambda lib, F, a, b, r: F.l1_loss(a, b, reduction=r),
    "smooth_l1": lambda lib, F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.7),
    "smooth_l1_beta0": lambda lib, F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.0),
    "huber": lambda lib, F, a, b, r: F.huber_loss(a, b, reduction=r, delta=0.6),
    "mse_module": lambda lib, F, a, b, r: lib.nn.MSELoss(reduction=r)(a, b),
    "l1_module": lambda lib, F, a, b, r: lib.nn.L1Loss(reduction=r)(a, b),
    "smooth_l1_module": lambda lib, F, a, b, r: lib.nn.SmoothL1Loss(reduction=r, beta=1.5)(a, b),
    "huber_module": lambda lib, F, a, b, r: lib.nn.HuberLoss(reduction=r, delta=1.5)(a, b),
}


def _with_nn(lib):
    """glasstorch.nn is not yet attached to the top-level package; look it up here."""
    return lib if lib is not gt else _GT_WITH_NN


class _GtWithNN:
    nn = gnn


_GT_WITH_NN = _GtWithNN()


@needs_torch
@pytest.mark.parametrize("name", sorted(REGRESSION))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_regression_losses_match_torch(name, reduction, dtype):
    loss = REGRESSION[name]
    compare(
        lambda lib, F, a, b: loss(_with_nn(lib), F, a, b, reduction),
        [floats(3, 4, dtype=dtype), floats(3, 4, dtype=dtype)],
        grad_of=(0, 1),
    )


def test_regression_closed_forms(device):
    a, b = floats(5, dtype=np.float64), floats(5, dtype=np.float64)
    d = a - b
    ga, gb = gt.tensor(a, device=device), gt.tensor(b, device=device)
    assert_close(F.mse_loss(ga, gb), np.mean(d**2))
    assert_close(F.l1_loss(ga, gb, reduction="sum"), np.sum(np.abs(d)))
    smooth = np.where(np.abs(d) < 0.5, 0.5 * d**2 / 0.5, np.abs(d) - 0.25)
    assert_close(F.smooth_l1_loss(ga, gb, reduction="none", beta=0.5), smooth)
    huber = np.where(np.abs(d) < 0.5, 0.5 * d**2, 0.5 * (np.abs(d) - 0.25))
    assert_close(F.huber_loss(ga, gb, reduction="none", delta=0.5), huber)


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_gradcheck(name, device):
    a = gt.tensor(floats(2, 3, dtype=np.float64), requires_grad=True, device=device)
    b = gt.tensor(floats(2, 3, dtype=np.float64), requires_grad=True, device=device)
    assert gradcheck(lambda a, b: REGRESSION[name](_GT_WITH_NN, F, a, b, "mean"), (a, b))


@needs_torch
def test_broadcasting_target_warns_like_torch(device):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.mse_loss(gt.ones(3, 1, device=device), gt.ones(3, device=device))
        torch.nn.functional.mse_loss(torch.ones(3, 1), torch.ones(3))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and messages[0] == messages[1]


@needs_torch
def test_bad_reduction_error_matches_torch(device):
    assert_same_error(
        lambda: F.mse_loss(gt.ones(2, device=device), gt.ones(2, device=device), reduction="foo"),
        lambda: torch.nn.functional.mse_loss(torch.ones(2), torch.ones(2), reduction="foo"),
        match="foo is not a valid value for reduction",
    )


# -------------------------------------------------------------- cross-entropy


def _targets(n, classes, ignore=None):
    target = RNG.integers(0, classes, size=n)
    if ignore is not None:
        target[0] = ignore
    return target


CE_OPTIONS = [
    {},
    {"weight": True},
    {"ignore_index": 1},
    {"ignore_index": -100, "with_ignored": True},
    {"label_smoothing": 0.2},
    {"label_smoothing": 0.1, "weight": True, "with_ignored": True},
]


def _ce_call(options, reduction, module=False):
    ignore_index = options.get("ignore_index", -100)
    label_smoothing = options.get("label_smoothing", 0.0)

    def call(lib, F, logits, target, weight=None):
        kwargs = dict(ignore_index=ignore_index, reduction=reduction)
        if label_smoothing:
            kwargs["label_smoothing"] = label_smoothing
        if module:
            nn = gnn if lib is gt else lib.nn
            return nn.CrossEntropyLoss(weight, **kwargs)(logits, target)
        return F.cross_entropy(logits, target, weight, **kwargs)

    return call


@needs_torch
@pytest.mark.parametrize("options", CE_OPTIONS, ids=lambda o: "-".join(o) or "plain")
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2)])
def test_cross_entropy_with_class_indices_matches_torch(options, reduction, shape):
    n, classes = shape[0], shape[1]
    logits = floats(*shape, dtype=np.float64)
    target = RNG.integers(0, classes, size=(n,) + shape[2:])
    if options.get("with_ignored"):
        target.reshape(-1)[0] = options.get("ignore_index", -100)
    if options.get("ignore_index") == 1:
        target.reshape(-1)[-1] = 1
    arrays = [logits, target]
    if options.get("weight"):
        arrays.append(RNG.uniform(0.5, 2.0, size=classes))
    compare(_ce_call(options, reduction), arrays)


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_module_float32_matches_torch(reduction):
    compare(_ce_call({}, reduction, module=True), [floats(5, 4), _targets(5, 4)])


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"weight": True}, {"label_smoothing": 0.3}])
def test_cross_entropy_with_probabilities_matches_torch(reduction, options):
    logits = floats(3, 4, dtype=np.float64)
    probs = RNG.uniform(0, 1, size=(3, 4))
    probs /= probs.sum(1, keepdims=True)
    arrays = [logits, probs]
    if options.get("weight"):
        arrays.append(RNG.uniform(0.5, 2.0, size=4))
    compare(_ce_call(options, reduction), arrays, grad_of=(0, 1))


@needs_torch
def test_cross_entropy_unbatched_matches_torch():
    compare(_ce_call({}, "mean"), [floats(4, dtype=np.float64), np.array(2)])
    compare(_ce_call({}, "none"), [floats(4, dtype=np.float64), np.array(1)])


def test_cross_entropy_closed_form_and_gradient(device):
    logits = floats(3, 4, dtype=np.float64)
    target = np.array([0, 3, 1])
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    expected = -log_probs[np.arange(3), target]
    x = gt.tensor(logits, requires_grad=True, device=device)
    losses = F.cross_entropy(x, gt.tensor(target, device=device), reduction="none")
    assert_close(losses.detach(), expected)
    assert losses.grad_fn.name() == "NllLossBackward0"
    losses.sum().backward()
    one_hot = np.eye(4)[target]
    assert_close(x.grad, np.exp(log_probs) - one_hot)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradient_with_create_graph_matches_the_kernel(reduction, device):
    """Under create_graph the backward is built from operations: same numbers."""
    logits = floats(5, 4, dtype=np.float64)
    target = gt.tensor([0, 3, -100, 1, 3], device=device)
    weight = gt.tensor(RNG.uniform(0.5, 2, size=4), device=device)
    grads = []
    for create_graph in (False, True):
        x = gt.tensor(logits, requires_grad=True, device=device)
        loss = F.cross_entropy(x, target, weight, reduction=reduction)
        scale = gt.tensor(1.5, dtype=gt.float64, requires_grad=True, device=device)
        weighted = (
            loss * scale if reduction != "none" else loss * gt.arange(5.0, device=device) * scale
        )
        (grad,) = gt.autograd.grad(weighted.sum(), x, create_graph=create_graph)
        # the gradient joins the graph through the incoming gradient (it depends on scale)
        assert grad.requires_grad is create_graph
        grads.append(grad.detach())
    assert_close(grads[1], grads[0].cpu().numpy())
    assert_close(grads[0][2], np.zeros(4))  # the ignored row


def test_cross_entropy_all_ignored_mean_is_nan(device):
    loss = F.cross_entropy(gt.ones(2, 3, device=device), gt.tensor([-100, -100], device=device))
    assert np.isnan(loss.item())


@pytest.mark.parametrize(
    "options", [{}, {"weight": True}, {"label_smoothing": 0.2}, {"soft": True}]
)
def test_cross_entropy_gradcheck(options, device):
    logits = gt.tensor(floats(3, 4, dtype=np.float64), requires_grad=True, device=device)
    weight = (
        gt.tensor(RNG.uniform(0.5, 2, size=4), device=device) if options.get("weight") else None
    )
    if options.get("soft"):
        target = gt.tensor(RNG.dirichlet(np.ones(4), size=3), device=device)
    else:
        target = gt.tensor([0, 2, 3], device=device)
    smoothing = options.get("label_smoothing", 0.0)
    assert gradcheck(
        lambda x: F.cross_entropy(x, target, weight, label_smoothing=smoothing), (logits,)
    )


#: PyTorch's errors for the cases below (checked against PyTorch when it is installed),
#: so the test gives the same verdict without it.
CROSS_ENTROPY_ERRORS = {
    "too_big": (IndexError, "Target 5 is out of bounds."),
    "negative": (IndexError, "Target -2 is out of bounds."),
    "batch": (ValueError, "Expected input batch_size (2) to match target batch_size (3)."),
    "float_target": (RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    "nll_too_big": (IndexError, "Target 5 is out of bounds."),
    "nll_float": (RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
}


@pytest.mark.parametrize("case", list(CROSS_ENTROPY_ERRORS))
def test_cross_entropy_errors_match_torch(case):
    def attempt(lib, F):
        calls = {
            "too_big": lambda: F.cross_entropy(lib.ones(2, 3), lib.tensor([0, 5])),
            "negative": lambda: F.cross_entropy(lib.ones(2, 3), lib.tensor([0, -2])),
            "batch": lambda: F.cross_entropy(lib.ones(2, 3), lib.tensor([0, 1, 2])),
            "float_target": lambda: F.cross_entropy(lib.ones(2, 3), lib.tensor([0.0, 1.0])),
            "nll_too_big": lambda: F.nll_loss(lib.ones(2, 3), lib.tensor([0, 5])),
            "nll_float": lambda: F.nll_loss(lib.ones(2, 3), lib.tensor([0.0, 1.0])),
        }
        return calls[case]()

    kind, message = CROSS_ENTROPY_ERRORS[case]
    if torch is not None:
        gt_error = assert_same_error(
            lambda: attempt(gt, F), lambda: attempt(torch, torch.nn.functional)
        )
        with pytest.raises(Exception) as torch_error:
            attempt(torch, torch.nn.functional)
        assert str(gt_error) == str(torch_error.value)
        assert isinstance(torch_error.value, kind) and str(torch_error.value) == message
    with pytest.raises(kind) as gt_raised:
        attempt(gt, F)
    assert str(gt_raised.value) == message


# ------------------------------------------------------------------ NLL loss


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2)])
def test_nll_loss_matches_torch(reduction, weighted, shape):
    log_probs = floats(*shape, dtype=np.float64, low=-3, high=0)
    target = RNG.integers(0, shape[1], size=(shape[0],) + shape[2:])
    target.reshape(-1)[0] = 2  # ignored below
    arrays = [log_probs, target]
    if weighted:
        arrays.append(RNG.uniform(0.5, 2.0, size=shape[1]))

    def call(lib, F, x, t, w=None):
        nn = gnn if lib is gt else lib.nn
        return nn.NLLLoss(w, ignore_index=2, reduction=reduction)(x, t)

    compare(call, arrays)


def test_nll_loss_closed_form_and_gradcheck(device):
    log_probs = floats(3, 4, dtype=np.float64, low=-3, high=0)
    target = np.array([1, 0, 3])
    weight = np.array([0.5, 1.0, 2.0, 1.5])
    picked = log_probs[np.arange(3), target] * weight[target]
    loss = F.nll_loss(
        gt.tensor(log_probs, device=device),
        gt.tensor(target, device=device),
        gt.tensor(weight, device=device),
    )
    assert_close(loss, -picked.sum() / weight[target].sum())
    x = gt.tensor(log_probs, requires_grad=True, device=device)
    assert gradcheck(
        lambda x: F.nll_loss(x, gt.tensor(target, device=device), gt.tensor(weight, device=device)),
        (x,),
    )


# ------------------------------------------------------------ binary losses


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_cross_entropy_matches_torch(reduction, weighted, dtype):
    probs = RNG.uniform(0.05, 0.95, size=(3, 2)).astype(dtype)
    target = RNG.uniform(0, 1, size=(3, 2)).astype(dtype)
    arrays = [probs, target]
    if weighted:
        arrays.append(RNG.uniform(0.5, 2, size=(2,)).astype(dtype))

    def call(lib, F, x, t, w=None):
        nn = gnn if lib is gt else lib.nn
        return nn.BCELoss(w, reduction=reduction)(x, t)

    compare(call, arrays, grad_of=(0, 1))


@needs_torch
def test_binary_cross_entropy_clamps_logs_like_torch():
    compare(
        lambda lib, F, x, t: F.binary_cross_entropy(x, t, reduction="none"),
        [np.array([0.0, 1.0, 0.5, 1.0]), np.array([1.0, 0.0, 1.0, 1.0])],
    )


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"weight": True}, {"pos_weight": True}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bce_with_logits_matches_torch(reduction, options, dtype):
    logits = floats(3, 2, dtype=dtype, low=-30, high=30)  # large logits stay finite
    target = RNG.uniform(0, 1, size=(3, 2)).astype(dtype)
    weight = RNG.uniform(0.5, 2, size=(2,)).astype(dtype) if options.get("weight") else None
    pos = RNG.uniform(0.5, 3, size=(2,)).astype(dtype) if options.get("pos_weight") else None

    def call(lib, F, x, t):
        nn = gnn if lib is gt else lib.nn
        on = {"device": TEST_DEVICE} if lib is gt else {}
        w = None if weight is None else lib.tensor(weight, **on)
        p = None if pos is None else lib.tensor(pos, **on)
        return nn.BCEWithLogitsLoss(w, reduction=reduction, pos_weight=p)(x, t)

    compare(call, [logits, target], grad_of=(0, 1))


def test_binary_losses_closed_form_and_gradcheck(device):
    x = RNG.uniform(-3, 3, size=4)
    t = RNG.uniform(0, 1, size=4)
    p = 1 / (1 + np.exp(-x))
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    assert_close(
        F.binary_cross_entropy_with_logits(
            gt.tensor(x, device=device), gt.tensor(t, device=device), reduction="none"
        ),
        expected,
    )
    assert_close(
        F.binary_cross_entropy(
            gt.tensor(p, device=device), gt.tensor(t, device=device), reduction="none"
        ),
        expected,
    )
    xg = gt.tensor(x, requires_grad=True, device=device)
    tg = gt.tensor(t, requires_grad=True, device=device)
    pos = gt.tensor([2.0, 0.5, 1.0, 3.0], dtype=gt.float64, requires_grad=True, device=device)
    assert gradcheck(
        lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, pos_weight=c), (xg, tg, pos)
    )
    pg = gt.tensor(p, requires_grad=True, device=device)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b), (pg, tg))


@needs_torch
@pytest.mark.parametrize("case", ["out_of_range", "bce_shape", "logits_shape"])
def test_binary_loss_errors_match_torch(case):
    def attempt(lib, F):
        calls = {
            "out_of_range": lambda: F.binary_cross_entropy(
                lib.tensor([0.5, 2.0]), lib.tensor([0.0, 1.0])
            ),
            "bce_shape": lambda: F.binary_cross_entropy(
                lib.tensor([0.5, 0.2]), lib.tensor([[0.0, 1.0]])
            ),
            "logits_shape": lambda: F.binary_cross_entropy_with_logits(
                lib.tensor([0.5, 0.2]), lib.tensor([[0.0, 1.0, 1.0]])
            ),
        }
        return calls[case]()

    gt_error = assert_same_error(
        lambda: attempt(gt, F), lambda: attempt(torch, torch.nn.functional)
    )
    with pytest.raises(Exception) as torch_error:
        attempt(torch, torch.nn.functional)
    assert str(gt_error) == str(torch_error.value)


# -- Fused losses carry PyTorch's node names and gradients
def _inputs(lib, seed=0):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((3, 4)))
    target = lib.tensor(rng.uniform(0, 1, (3, 4)))
    classes = lib.tensor(np.array([0, 3, 1]))
    return x, target, classes


LOSSES = {
    "mse_loss": lambda F, lib, x, t, c, r: F.mse_loss(x, t, reduction=r),
    "l1_loss": lambda F, lib, x, t, c, r: F.l1_loss(x, t, reduction=r),
    "smooth_l1_loss": lambda F, lib, x, t, c, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
    "huber_loss": lambda F, lib, x, t, c, r: F.huber_loss(x, t, reduction=r, delta=0.7),
    "binary_cross_entropy": lambda F, lib, x, t, c, r: F.binary_cross_entropy(
        lib.sigmoid(x), t, reduction=r
    ),
    "binary_cross_entropy_with_logits": lambda F, lib, x, t, c, r: (
        F.binary_cross_entropy_with_logits(x, t, reduction=r, pos_weight=lib.full((4,), 2.0))
    ),
    "nll_loss": lambda F, lib, x, t, c, r: F.nll_loss(x, c, reduction=r),
    "cross_entropy": lambda F, lib, x, t, c, r: F.cross_entropy(x, c, reduction=r),
}


@needs_torch
@pytest.mark.autograd
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_node_names_and_gradients_match_pytorch(name, reduction):
    x, t, c = _inputs(gt)
    tx, tt, tc = _inputs(torch)
    x.requires_grad_()
    tx.requires_grad_()
    ours = LOSSES[name](gt.nn.functional, gt, x, t, c, reduction)
    theirs = LOSSES[name](torch.nn.functional, torch, tx, tt, tc, reduction)
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert_close(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    assert_close(x.grad, tx.grad)


@needs_torch
@pytest.mark.gradcheck
@pytest.mark.parametrize(
    "name", ["mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits"]
)
def test_named_losses_gradcheck_both_arguments(name):
    x, t, c = _inputs(gt, seed=1)
    x.requires_grad_()
    t.requires_grad_()
    assert gradcheck(lambda a, b: LOSSES[name](gt.nn.functional, gt, a, b, c, "mean"), (x, t))


@needs_torch
@pytest.mark.autograd
def test_named_loss_double_backward_matches_pytorch():
    x, t, _ = _inputs(gt, seed=2)
    tx, tt, _ = _inputs(torch, seed=2)
    x.requires_grad_()
    tx.requires_grad_()
    (g,) = gt.autograd.grad(gt.nn.functional.mse_loss(x.tanh(), t), x, create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.mse_loss(tx.tanh(), tt), tx, create_graph=True)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    assert_close(x.grad, tx.grad)


# ------------------------------------------- the legacy size_average/reduce flags
LEGACY_FLAGS = [
    ({"size_average": False}, "sum"),
    ({"size_average": True}, "mean"),
    ({"reduce": False}, "none"),
    ({"size_average": False, "reduce": True}, "sum"),
]


def _legacy_cases(lib, F, dtype):
    """Each loss that takes size_average/reduce, with inputs from ``lib``."""
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.normal(size=(4, 3)), dtype=dtype)
    y = lib.tensor(rng.normal(size=(4, 3)), dtype=dtype)
    p = lib.tensor(rng.uniform(0.05, 0.95, size=(4, 3)), dtype=dtype)
    t = lib.tensor(rng.uniform(0, 1, size=(4, 3)), dtype=dtype)
    labels = lib.tensor([0, 2, 1, 2])
    logp = F.log_softmax(x, dim=1)
    return {
        "mse_loss": lambda **kw: F.mse_loss(x, y, **kw),
        "l1_loss": lambda **kw: F.l1_loss(x, y, **kw),
        "smooth_l1_loss": lambda **kw: F.smooth_l1_loss(x, y, **kw),
        "nll_loss": lambda **kw: F.nll_loss(logp, labels, **kw),
        "cross_entropy": lambda **kw: F.cross_entropy(x, labels, **kw),
        "binary_cross_entropy": lambda **kw: F.binary_cross_entropy(p, t, **kw),
        "binary_cross_entropy_with_logits": (
            lambda **kw: F.binary_cross_entropy_with_logits(x, t, **kw)
        ),
    }


LEGACY_LOSSES = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
]


@pytest.mark.parametrize("name", LEGACY_LOSSES)
@pytest.mark.parametrize("flags, reduction", LEGACY_FLAGS)
def test_legacy_flags_mean_their_reduction(name, flags, reduction):
    """size_average/reduce give what reduction= gives, with PyTorch's deprecation warning."""
    loss = _legacy_cases(gt, F, gt.float64)[name]
    with pytest.warns(UserWarning, match=f"please use reduction='{reduction}'"):
        legacy = loss(**flags)
    assert_close(legacy, loss(reduction=reduction).cpu().numpy())


@needs_torch
@pytest.mark.parametrize("name", LEGACY_LOSSES)
@pytest.mark.parametrize("flags, reduction", LEGACY_FLAGS)
def test_legacy_flags_match_torch(name, flags, reduction):
    ours = _legacy_cases(gt, F, gt.float64)[name]
    theirs = _legacy_cases(torch, torch.nn.functional, torch.float64)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(ours(**flags), theirs(**flags))


def test_legacy_flags_by_position_as_in_torch():
    """PyTorch's positional order: nll_loss(input, target, weight, size_average, ...)."""
    logp = F.log_softmax(gt.tensor([[0.1, 2.0], [1.0, -1.0]], dtype=gt.float64), dim=1)
    labels = gt.tensor([1, 0])
    with pytest.warns(UserWarning):
        summed = F.nll_loss(logp, labels, None, False)
    assert_close(summed, F.nll_loss(logp, labels, reduction="sum").cpu().numpy())
