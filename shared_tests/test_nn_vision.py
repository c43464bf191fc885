"""The vision layers against PyTorch: the upsampling modules and the deprecated F.upsample, the
padding layers and pixel shuffle. (interpolate, pad, unfold and fold are the course's:
test_nn_conv.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compare import RNG, run_both, values
from oracle import TEST_DEVICE, assert_close, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- The upsampling modules
@pytest.fixture
def _seeded():
    """Seed both generators, so PyTorch's initial weights and glasstorch's draws repeat."""
    torch.manual_seed(0)
    gt.manual_seed(0)


@needs_torch
@pytest.mark.usefixtures("_seeded")
def test_upsampling_modules_match_pytorch(device):
    x = values(1, 2, 3, 4)
    for kwargs in (dict(scale_factor=2), dict(size=(5, 7))):
        run_both(gnn.UpsamplingNearest2d(**kwargs), torch.nn.UpsamplingNearest2d(**kwargs), [x])
        run_both(gnn.UpsamplingBilinear2d(**kwargs), torch.nn.UpsamplingBilinear2d(**kwargs), [x])
        assert repr(gnn.UpsamplingBilinear2d(**kwargs)) == repr(
            torch.nn.UpsamplingBilinear2d(**kwargs)
        )
        assert repr(gnn.UpsamplingNearest2d(**kwargs)) == repr(
            torch.nn.UpsamplingNearest2d(**kwargs)
        )


@needs_torch
@pytest.mark.usefixtures("_seeded")
def test_upsample_is_a_deprecated_interpolate(device):
    x = values(1, 2, 3, 4)
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        got = F.upsample(on_test_device(x), scale_factor=2, mode="bilinear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.nn.functional.upsample(torch.tensor(x), scale_factor=2, mode="bilinear")
        assert_close(F.upsample_bilinear(on_test_device(x), (6, 5)),
                     torch.nn.functional.upsample_bilinear(torch.tensor(x), (6, 5)),
                     rtol=1e-5, atol=1e-6)  # fmt: skip
        assert_close(F.upsample_nearest(on_test_device(x), scale_factor=3),
                     torch.nn.functional.upsample_nearest(torch.tensor(x), scale_factor=3))  # fmt: skip
    assert_close(got, want, rtol=1e-5, atol=1e-6)


# -- The padding layers and pixel shuffle


def _close(ours, theirs, rtol=1e-5, atol=1e-5) -> None:
    """Compare on the host; ``ours`` must have been computed on the device under test."""
    if isinstance(ours, gt.Tensor):
        assert ours.device.type == TEST_DEVICE, f"result on {ours.device}, expected {TEST_DEVICE}"
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=rtol, atol=atol
    )


@needs_torch
@pytest.mark.parametrize(
    "name, args",
    [
        ("ZeroPad2d", ((1, 2, 1, 0),)),
        ("ConstantPad2d", (1, 0.5)),
        ("ReflectionPad2d", (1,)),
        ("ReplicationPad2d", ((2, 0, 1, 1),)),
        ("CircularPad2d", (1,)),
        ("ReflectionPad1d", (2,)),
        ("PixelShuffle", (2,)),
        ("PixelUnshuffle", (3,)),
    ],
)
def test_padding_and_pixel_shuffle_layers_like_pytorch(name, args):
    x = RNG.standard_normal((2, 8, 3, 3)).astype(np.float32)
    x = x[0] if name.endswith("1d") else x
    theirs, ours = getattr(torch.nn, name)(*args), getattr(gt.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    tx, gx = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    t_out, g_out = theirs(tx), ours(gx)
    _close(g_out, t_out)
    (t_out * t_out).sum().backward()
    (g_out * g_out).sum().backward()
    _close(gx.grad, tx.grad)
