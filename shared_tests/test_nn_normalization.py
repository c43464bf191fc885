"""Normalisation layers and functions against PyTorch: instance norm, RMS norm, local response
norm, BatchNorm3d, and the hook-based weight and spectral normalisations; forward and backward from
the same inputs and weights, gradcheck in float64, reprs and PyTorch's errors. (BatchNorm1d/2d,
LayerNorm and GroupNorm are the course's: test_nn_layers.py and test_nn_conv.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compare import run_both, values
from oracle import assert_close, assert_same_error, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


# -- Instance norm, RMS norm
@pytest.mark.parametrize("shape", [(2, 3, 7), (3, 5)])
def test_instance_norm1d_matches_pytorch(device, shape):
    run_both(gnn.InstanceNorm1d(3), torch.nn.InstanceNorm1d(3), [values(*shape)])


def test_instance_norm2d_affine_and_running_stats(device):
    tm = torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-1, 1)
    gm = copy_weights(gnn.InstanceNorm2d(4, affine=True, track_running_stats=True), tm, device)
    x = values(2, 4, 5, 6) * 3 + 1
    run_both(gm, tm, [x])
    assert_close(gm.running_mean, tm.running_mean, rtol=1e-5, atol=1e-6)
    assert_close(gm.running_var, tm.running_var, rtol=1e-5, atol=1e-6)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(2, 4, 5, 6)])
    assert repr(gm) == repr(tm)


def test_instance_norm_functional_and_gradcheck(device):
    run_both(
        lambda x: F.instance_norm(x, eps=1e-3),
        lambda x: torch.nn.functional.instance_norm(x, eps=1e-3),
        [values(2, 3, 4, 4)],
    )
    x = on_test_device(values(2, 2, 5, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.instance_norm(x, weight=w), (x, w))


@pytest.mark.errors
def test_instance_norm_errors():
    assert_same_error(
        lambda: gnn.InstanceNorm1d(3)(gt.zeros(2, 3, 4, 5)),
        lambda: torch.nn.InstanceNorm1d(3)(torch.zeros(2, 3, 4, 5)),
        match="expected 2D or 3D input",
    )
    assert_same_error(
        lambda: gnn.InstanceNorm1d(4, affine=True)(gt.zeros(2, 3, 5)),
        lambda: torch.nn.InstanceNorm1d(4, affine=True)(torch.zeros(2, 3, 5)),
        match="to match num_features",
    )
    assert_same_error(
        lambda: F.instance_norm(gt.zeros(2, 3, 1)),
        lambda: torch.nn.functional.instance_norm(torch.zeros(2, 3, 1)),
        match="Expected more than 1 spatial element",
    )


def test_rms_norm_and_pairwise_distance(device):
    tm = torch.nn.RMSNorm([3, 4], eps=1e-5)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
    gm = copy_weights(gnn.RMSNorm([3, 4], eps=1e-5), tm, device)
    run_both(gm, tm, [values(2, 3, 4)])
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-4, atol=1e-5)
    assert repr(gm) == repr(tm)
    run_both(
        gnn.RMSNorm(4, elementwise_affine=False),
        torch.nn.RMSNorm(4, elementwise_affine=False),
        [values(5, 4)],
    )
    run_both(
        lambda x: F.rms_norm(x, (4,)),
        lambda x: torch.nn.functional.rms_norm(x, (4,)),
        [values(2, 4)],
    )
    for p, keepdim in ((2.0, False), (1.0, True), (3.0, False)):
        run_both(
            gnn.PairwiseDistance(p, keepdim=keepdim),
            torch.nn.PairwiseDistance(p, keepdim=keepdim),
            [values(4, 5), values(4, 5)],
        )
    x = on_test_device(values(2, 4, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x: F.rms_norm(x, (4,)), (x,))


# -- Local response norm, BatchNorm3d, weight and spectral normalisation
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize("shape, size", [((2, 6, 3, 4), 3), ((2, 5, 7), 4), ((1, 4, 2, 3, 2), 2)])
def test_local_response_norm_matches_pytorch(device, shape, size):
    kw = dict(alpha=0.1, beta=0.6, k=2.0)
    run_both(gnn.LocalResponseNorm(size, **kw), torch.nn.LocalResponseNorm(size, **kw),
             [values(*shape) * 2])  # fmt: skip
    assert repr(gnn.LocalResponseNorm(size)) == repr(torch.nn.LocalResponseNorm(size))


@pytest.mark.usefixtures("seeded_generators")
def test_batch_norm3d_matches_pytorch(device):
    tm = torch.nn.BatchNorm3d(3)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-1, 1)
    gm = copy_weights(gnn.BatchNorm3d(3), tm, device)
    run_both(gm, tm, [values(2, 3, 2, 3, 4) * 2 + 1], rtol=1e-4)
    assert_close(gm.running_mean, tm.running_mean, rtol=1e-5, atol=1e-6)
    assert_close(gm.running_var, tm.running_var, rtol=1e-5, atol=1e-6)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(2, 3, 2, 3, 4)], rtol=1e-4)
    assert repr(gm) == repr(tm)
    assert_same_error(
        lambda: gnn.BatchNorm3d(3)(gt.zeros(2, 3, 4, 4)),
        lambda: torch.nn.BatchNorm3d(3)(torch.zeros(2, 3, 4, 4)),
        match="expected 5D input",
    )


# ====================================================== weight and spectral norm


@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_pytorch(device, dim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Conv2d(2, 3, 2), dim=dim)
        gm = gnn.utils.weight_norm(gnn.Conv2d(2, 3, 2), dim=dim)
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert gm.weight_g.shape == tm.weight_g.shape
    gm = copy_weights(gm, tm, device)
    run_both(gm, tm, [values(2, 2, 4, 4)])
    assert_close(gm.weight_g.grad, tm.weight_g.grad, rtol=1e-4, atol=1e-5)
    assert_close(gm.weight_v.grad, tm.weight_v.grad, rtol=1e-4, atol=1e-5)
    gnn.utils.remove_weight_norm(gm)
    torch.nn.utils.remove_weight_norm(tm)
    assert sorted(gm.state_dict()) == sorted(tm.state_dict())
    assert_close(gm.weight, tm.weight.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("seeded_generators")
def test_spectral_norm_matches_pytorch(device):
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4), n_power_iterations=2)
    gm = gnn.utils.spectral_norm(gnn.Linear(5, 4), n_power_iterations=2)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert_close(gm.weight_u.norm(), np.float32(1.0), rtol=1e-5)
    gm = copy_weights(gm, tm, device)
    for _ in range(2):  # training: power iteration refines u and v in place
        run_both(gm, tm, [values(3, 5)], rtol=1e-4)
        assert_close(gm.weight_u, tm.weight_u, rtol=1e-4, atol=1e-5)
        assert_close(gm.weight_v, tm.weight_v, rtol=1e-4, atol=1e-5)
        assert_close(gm.weight_orig.grad, tm.weight_orig.grad, rtol=1e-4, atol=1e-5)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(3, 5)], rtol=1e-4)
    # weight = weight_orig / (u . W v), with the stored u and v.
    w, u, v = (t.detach().cpu().numpy() for t in (gm.weight_orig, gm.weight_u, gm.weight_v))
    assert_close(gm.weight, w / (u @ w @ v), rtol=1e-5, atol=1e-6)
    # Power iteration converges: the normalised weight's largest singular value nears 1.
    gm.train()
    with gt.no_grad():
        for _ in range(30):
            gm(on_test_device(values(1, 5)))
    sigma = np.linalg.svd(gm.weight.detach().cpu().numpy(), compute_uv=False)[0]
    assert abs(sigma - 1) < 1e-3
    gnn.utils.remove_spectral_norm(gm)
    assert sorted(n for n, _ in gm.named_parameters()) == ["bias", "weight"]


@pytest.mark.usefixtures("seeded_generators")
def test_spectral_norm_transposed_conv_uses_dim_1(device):
    tm = torch.nn.utils.spectral_norm(torch.nn.ConvTranspose2d(3, 5, 2))
    gm = gnn.utils.spectral_norm(gnn.ConvTranspose2d(3, 5, 2))
    assert gm.weight_u.shape == tm.weight_u.shape == (5,)
    gm = copy_weights(gm, tm, device)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(1, 3, 3, 3)], rtol=1e-4)


@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.errors
def test_norm_hook_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert_same_error(
            lambda: gnn.utils.weight_norm(gnn.utils.weight_norm(gnn.Linear(2, 2))),
            lambda: torch.nn.utils.weight_norm(torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))),
            match="Cannot register two weight_norm hooks",
        )
    assert_same_error(
        lambda: gnn.utils.spectral_norm(gnn.Linear(2, 2), n_power_iterations=0),
        lambda: torch.nn.utils.spectral_norm(torch.nn.Linear(2, 2), n_power_iterations=0),
        match="Expected n_power_iterations to be positive",
    )
    assert_same_error(
        lambda: gnn.utils.remove_spectral_norm(gnn.Linear(2, 2)),
        lambda: torch.nn.utils.remove_spectral_norm(torch.nn.Linear(2, 2)),
        match="spectral_norm of 'weight' not found",
    )


# -- bias=False: an affine weight without a bias (PyTorch 2.13's keyword)
@pytest.mark.parametrize(
    "name, shape",
    [("BatchNorm1d", (6, 3)), ("BatchNorm2d", (4, 3, 2, 5)), ("InstanceNorm2d", (2, 3, 4, 4))],
)
def test_norm_without_bias_matches_pytorch(device, name, shape):
    tm = getattr(torch.nn, name)(3, affine=True, bias=False)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
    gm = copy_weights(getattr(gnn, name)(3, affine=True, bias=False), tm, device)
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert repr(gm) == repr(tm)
    run_both(gm, tm, [values(*shape)])
