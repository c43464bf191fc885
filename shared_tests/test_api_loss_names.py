"""Fused losses carry PyTorch's node names (``loss.grad_fn``) and its gradients."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, needs_torch, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


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


@pytest.mark.gradcheck
@pytest.mark.parametrize(
    "name", ["mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits"]
)
def test_named_losses_gradcheck_both_arguments(name):
    x, t, c = _inputs(gt, seed=1)
    x.requires_grad_()
    t.requires_grad_()
    assert gradcheck(lambda a, b: LOSSES[name](gt.nn.functional, gt, a, b, c, "mean"), (x, t))


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
