"""torch.distributions (Normal, Categorical, ...) against PyTorch: samples' shapes, log_prob and entropy."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import TEST_DEVICE, needs_torch, torch

import glasstorch as gt

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- torch.distributions against PyTorch
def _close(ours, theirs, rtol=1e-5, atol=1e-5) -> None:
    """Compare on the host; ``ours`` must have been computed on the device under test."""
    if isinstance(ours, gt.Tensor):
        assert ours.device.type == TEST_DEVICE, f"result on {ours.device}, expected {TEST_DEVICE}"
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=rtol, atol=atol
    )


@needs_torch
def test_distributions_like_pytorch():
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], np.float32)
    results = []
    for lib in (torch, gt):
        weights = lib.tensor(probs, requires_grad=True)
        dist = lib.distributions.Categorical(probs=weights)
        assert tuple(dist.sample().shape) == (2,) and tuple(dist.sample((4,)).shape) == (4, 2)
        log_prob = dist.log_prob(lib.tensor([1, 0]))
        (log_prob.sum() + dist.entropy().sum()).backward()
        loc = lib.tensor([0.5, -1.0], requires_grad=True)
        normal = lib.distributions.Normal(loc, lib.tensor([1.5, 0.5]))
        assert tuple(normal.rsample((3,)).shape) == (3, 2)
        kl = lib.distributions.kl_divergence(normal, lib.distributions.Normal(0.0, 1.0))
        (normal.log_prob(lib.tensor([0.0, 0.0])).sum() + kl.sum()).backward()
        results.append([log_prob, dist.entropy(), weights.grad, normal.entropy(), kl, loc.grad])
    for theirs, ours in zip(*results):
        _close(ours, theirs)
