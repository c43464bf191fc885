"""Activation layers and functions against PyTorch, beyond the course's (test_nn_layers.py):
the other activation modules and their in-place forms, Softmax2d, channel shuffle, RReLU and
Gumbel-softmax; values, gradients, random slopes and samples by their structure, and PyTorch's
errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import run_both, values
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


# -- Activation modules and their in-place forms
ACTIVATIONS = [
    ("ReLU6", (), {}),
    ("Hardsigmoid", (), {}),
    ("Hardswish", (), {}),
    ("SELU", (), {}),
    ("CELU", (), dict(alpha=1.7)),
    ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
    ("Softmin", (), dict(dim=1)),
    ("GLU", (), dict(dim=1)),
    ("Hardshrink", (0.3,), {}),
    ("Softshrink", (0.3,), {}),
    ("Threshold", (0.1, 2.0), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), ACTIVATIONS)
def test_activation_matches_pytorch(device, name, args, kwargs):
    x = values(3, 4) * 4
    gm, tm = getattr(gnn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    run_both(gm, tm, [x])
    assert repr(gm) == repr(tm)
    x64 = on_test_device(values(2, 4, dtype=np.float64) * 4, requires_grad=True)
    assert gradcheck(gm, (x64,))


@pytest.mark.parametrize("name", ["ReLU6", "Hardswish", "SELU", "CELU", "Threshold"])
def test_activation_inplace(device, name):
    args = (0.1, 2.0) if name == "Threshold" else ()
    x = values(3, 4) * 4
    gx, tx = on_test_device(x), torch.tensor(x)
    out = getattr(gnn, name)(*args, inplace=True)(gx)
    getattr(torch.nn, name)(*args, inplace=True)(tx)
    assert out is gx
    assert_close(gx, tx, rtol=1e-6, atol=1e-6)


@pytest.mark.errors
def test_activation_errors():
    assert_same_error(
        lambda: F.glu(gt.zeros(2, 3), 1),
        lambda: torch.nn.functional.glu(torch.zeros(2, 3), 1),
        match="Halving dimension must be even, but dimension 1 is size 3",
    )
    assert_same_error(
        lambda: F.rms_norm(gt.zeros(2, 3), [4]),
        lambda: torch.nn.functional.rms_norm(torch.zeros(2, 3), [4]),
        match=r"expected input with shape \[\*, 4\]|Given normalized_shape=\[4\]",
    )
    assert_same_error(
        lambda: F.softshrink(gt.zeros(2, 3), -1.0),
        lambda: torch.nn.functional.softshrink(torch.zeros(2, 3), -1.0),
        match="lambda must be in range",
    )


# -- Softmax2d, channel shuffle, RReLU and Gumbel-softmax
@pytest.mark.usefixtures("seeded_generators")
def test_softmax2d_and_channel_shuffle(device):
    run_both(gnn.Softmax2d(), torch.nn.Softmax2d(), [values(2, 3, 4, 5)])
    run_both(gnn.Softmax2d(), torch.nn.Softmax2d(), [values(3, 4, 5)])
    run_both(gnn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), [values(2, 6, 2, 3)])
    run_both(lambda x: F.channel_shuffle(x, 2), lambda x: torch.nn.functional.channel_shuffle(x, 2),
             [values(2, 4, 5)], grad=False)  # fmt: skip
    assert repr(gnn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    assert repr(gnn.Softmax2d()) == repr(torch.nn.Softmax2d())


@pytest.mark.usefixtures("seeded_generators")
def test_rrelu_eval_matches_pytorch_and_training_draws_slopes(device):
    gm, tm = gnn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(3, 7)])
    run_both(lambda x: F.rrelu(x), lambda x: torch.nn.functional.rrelu(x), [values(4, 5)])
    assert repr(gnn.RReLU()) == repr(torch.nn.RReLU())
    assert repr(gnn.RReLU(0.2, 0.4, inplace=True)) == repr(torch.nn.RReLU(0.2, 0.4, inplace=True))
    # Training: positives pass, each negative gets its own slope in [lower, upper].
    x = on_test_device(-np.abs(values(4000)) - 0.1, requires_grad=True)
    y = gnn.RReLU(0.1, 0.3)(x)
    slopes = (y / x).detach().cpu().numpy()
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert abs(slopes.mean() - 0.2) < 0.01 and slopes.std() > 0.04
    y.sum().backward()
    assert_close(x.grad, slopes, rtol=1e-5, atol=1e-6)
    pos = on_test_device(np.abs(values(10)))
    assert_close(F.rrelu(pos, training=True), pos.cpu().numpy())


# ============================================================ gumbel-softmax


@pytest.mark.usefixtures("seeded_generators")
def test_gumbel_softmax_soft_and_hard(device):
    gt.manual_seed(3)
    logits = on_test_device(np.log(np.array([[0.1, 0.2, 0.7]] * 3000, dtype=np.float32)),
                            requires_grad=True)  # fmt: skip
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert_close(soft.sum(-1), np.ones(3000, np.float32), rtol=1e-5, atol=1e-5)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    arr = hard.detach().cpu().numpy()
    assert set(np.unique(arr)) <= {0.0, 1.0} and np.all(arr.sum(-1) == 1)
    # The argmax of logits + Gumbel noise is a sample of softmax(logits).
    assert np.abs(arr.mean(0) - [0.1, 0.2, 0.7]).max() < 0.03
    # Straight-through: the gradient is the soft sample's.
    (hard * on_test_device(np.array([1.0, 2.0, 3.0], dtype=np.float32))).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    assert_close(logits.grad.sum(-1), np.zeros(3000, np.float32), atol=1e-5)
