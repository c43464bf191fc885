"""The random dropout layers checked by their statistics and structure: channel dropout (whole
channels zeroed), alpha and feature-alpha dropout (mean and variance kept), Dropout3d on other
ranks, and PyTorch's errors. (nn.Dropout itself is the course's: test_nn_layers.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


# -- Channel and alpha dropouts
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize(
    "gt_cls, torch_cls, shape",
    [
        (gnn.Dropout1d, torch.nn.Dropout1d, (50, 40, 3)),
        (gnn.Dropout1d, torch.nn.Dropout1d, (400, 5)),
        (gnn.Dropout3d, torch.nn.Dropout3d, (40, 50, 2, 2, 2)),
        (gnn.Dropout3d, torch.nn.Dropout3d, (400, 2, 2, 2)),
    ],
)
def test_channel_dropout_zeroes_whole_channels(device, gt_cls, torch_cls, shape):
    gt.manual_seed(0)
    x = gt.ones(*shape)
    y = gt_cls(p=0.3)(x).cpu().numpy()
    lead = int(np.prod(shape[: 2 if len(shape) in (3, 5) else 1]))
    per_channel = y.reshape(lead, -1)
    # Each channel is all zeros or all 1 / (1 - p).
    assert np.all(np.ptp(per_channel, axis=1) == 0)
    assert np.all(np.isclose(per_channel, 0) | np.isclose(per_channel, 1 / 0.7))
    assert abs((per_channel[:, 0] == 0).mean() - 0.3) < 0.06
    m = gt_cls(p=0.3)
    m.eval()
    assert_close(m(x), x.cpu().numpy())
    assert repr(gt_cls(0.2, inplace=True)) == repr(torch_cls(0.2, inplace=True))


@pytest.mark.usefixtures("seeded_generators")
def test_alpha_dropout_keeps_mean_and_variance(device):
    gt.manual_seed(1)
    x = gt.randn(200, 100)
    y = F.alpha_dropout(x, 0.2, training=True)
    arr = y.cpu().numpy()
    assert abs(arr.mean()) < 0.03 and abs(arr.var() - 1.0) < 0.05
    # Dropped elements all take one value, a * (-alpha') + b.
    a = 1 / np.sqrt((1.7580993408473766**2 * 0.2 + 1) * 0.8)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.2
    share = np.isclose(arr, dropped, atol=1e-6).mean()
    assert abs(share - 0.2) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    m = gnn.AlphaDropout(0.2)
    m.eval()
    assert m(x) is x
    assert repr(gnn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))
    assert repr(gnn.FeatureAlphaDropout()) == repr(torch.nn.FeatureAlphaDropout())


@pytest.mark.usefixtures("seeded_generators")
def test_feature_alpha_dropout_drops_whole_channels(device):
    gt.manual_seed(2)
    y = gnn.FeatureAlphaDropout(0.5)(gt.zeros(30, 20, 3, 3)).cpu().numpy().reshape(600, 9)
    assert np.all(np.ptp(y, axis=1) == 0)
    assert len(np.unique(y.round(5))) == 2


@pytest.mark.usefixtures("seeded_generators")
def test_dropout3d_of_other_ranks_warns_and_takes_one_sample(device):
    gt.manual_seed(4)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        y = F.dropout3d(gt.ones(300, 4, 5), 0.5).cpu().numpy()
    # Unbatched: one draw per entry of the first dimension (the channels).
    assert np.all(np.ptp(y.reshape(300, -1), axis=1) == 0)
    assert 0.35 < (y[:, 0, 0] == 0).mean() < 0.65


@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.errors
def test_dropout_errors():
    assert_same_error(
        lambda: gnn.Dropout1d(1.5),
        lambda: torch.nn.Dropout1d(1.5),
        match="dropout probability has to be between 0 and 1",
    )
    assert_same_error(
        lambda: F.dropout1d(gt.zeros(2, 3, 4, 5)),
        lambda: torch.nn.functional.dropout1d(torch.zeros(2, 3, 4, 5)),
        match="dropout1d: Expected 2D or 3D input, but received a 4D input",
    )
