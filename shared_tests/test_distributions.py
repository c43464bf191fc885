"""torch.distributions (Normal, Categorical, ...) against PyTorch: samples' shapes, log_prob and entropy."""

from __future__ import annotations

import numpy as np
import pytest
from compare import close_on_device
from oracle import needs_torch, torch

import glasstorch as gt

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- torch.distributions against PyTorch


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
        close_on_device(ours, theirs)
