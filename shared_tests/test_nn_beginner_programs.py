"""PyTorch's beginner programs, run on glasstorch and on PyTorch from the same weights.

Each program is written once, as a function of the library (``glasstorch`` or
``torch``), so the two runs are the same text; the losses must agree step by step.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pytest
from oracle import needs_torch, torch

import glasstorch

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


def _copy_weights(source, target, lib) -> None:
    """Give ``target`` (a module of ``lib``) the parameters of ``source`` (a torch module)."""
    state = {k: lib.tensor(v.detach().cpu().numpy().copy()) for k, v in source.state_dict().items()}
    target.load_state_dict(state)


def polynomial_with_nn_and_optim(lib, model, steps: int = 60) -> list[float]:
    """Fit sin(x) with a Linear layer over (x, x^2, x^3), as PyTorch's nn tutorial does."""
    x = lib.linspace(-math.pi, math.pi, 200)
    y = lib.sin(x)
    features = lib.stack([x, x**2, x**3], dim=1) / math.pi**2
    loss_fn = lib.nn.MSELoss(reduction="sum")
    optimizer = lib.optim.RMSprop(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(features).flatten(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def classifier_with_dataloader(lib, model, workers: int, device: str = "cpu") -> list[float]:
    """A classifier fed by a DataLoader (with worker processes), then saved and reloaded.

    The dataset lives on the CPU, as a program's does, and each batch moves to ``device``.
    """
    rng = np.random.default_rng(0)
    images = rng.standard_normal((96, 12)).astype(np.float32)
    labels = (images[:, 0] + images[:, 1] > 0).astype(np.int64) + (images[:, 2] > 1)
    dataset = lib.utils.data.TensorDataset(
        lib.tensor(images, device="cpu"), lib.tensor(labels, device="cpu")
    )
    loader = lib.utils.data.DataLoader(dataset, batch_size=16, num_workers=workers)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    for _ in range(3):
        for batch, target in loader:
            batch, target = batch.to(device), target.to(device)
            loss = loss_fn(model(batch), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pt")
        lib.save(model.state_dict(), path)
        model.load_state_dict(lib.load(path))
    with lib.no_grad():
        losses.append(loss_fn(model(lib.tensor(images)), lib.tensor(labels)).item())
    return losses


def test_polynomial_fit_matches_pytorch_step_by_step():
    torch.manual_seed(0)  # the initial weights, the same in every run
    reference = torch.nn.Linear(3, 1)
    mine = glasstorch.nn.Linear(3, 1)
    _copy_weights(reference, mine, glasstorch)
    theirs = polynomial_with_nn_and_optim(torch, reference)
    ours = polynomial_with_nn_and_optim(glasstorch, mine)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=1e-5)
    assert ours[-1] < ours[0] / 2  # it learned


def test_dataloader_classifier_with_workers_matches_pytorch(device):
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(12, 16), lib.nn.Tanh(), lib.nn.Linear(16, 3))

    torch.manual_seed(0)
    reference = build(torch)
    mine = build(glasstorch)
    _copy_weights(reference, mine, glasstorch)
    theirs = classifier_with_dataloader(torch, reference, workers=0)
    ours = classifier_with_dataloader(glasstorch, mine, workers=2, device=device)
    assert next(mine.parameters()).device.type == device
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    assert ours[-1] < ours[0]
