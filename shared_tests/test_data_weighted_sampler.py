"""WeightedRandomSampler against PyTorch's: the frequencies it draws, with and without replacement,
reproducibility under a seed, and PyTorch's errors. (The other samplers are the course's:
test_data_samplers.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
from glasstorch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

pytestmark = [pytest.mark.optim, needs_torch, pytest.mark.usefixtures("default_device")]


# -- WeightedRandomSampler


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
