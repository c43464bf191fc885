"""The convolutions beyond the course's (test_nn_conv.py) against PyTorch: ConvTranspose1d,
Conv3d, the padding modes (reflect, replicate, circular), and conv2d's double backward; forward and
backward from the same weights, gradcheck and gradgradcheck in float64, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import RNG, close_on_device, copy_parameters, run_both, values
from oracle import assert_close, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- ConvTranspose1d and conv2d's double backward
@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(stride=1),
        dict(stride=2, padding=1, output_padding=1),
        dict(stride=2, dilation=2, groups=2, bias=False),
    ],
)
def test_conv_transpose1d_matches_pytorch(device, kwargs):
    tm = torch.nn.ConvTranspose1d(4, 6, 3, **kwargs)
    gm = copy_weights(gnn.ConvTranspose1d(4, 6, 3, **kwargs), tm, device)
    run_both(gm, tm, [values(2, 4, 7)])
    for (_, p), (_, q) in zip(gm.named_parameters(), tm.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    assert repr(gm) == repr(tm)


@needs_torch
def test_conv_transpose1d_output_size_and_gradcheck(device):
    tm = torch.nn.ConvTranspose1d(2, 3, 3, stride=2)
    gm = copy_weights(gnn.ConvTranspose1d(2, 3, 3, stride=2), tm, device)
    x = values(1, 2, 5)
    got = gm(on_test_device(x), output_size=[12])
    assert_close(got, tm(torch.tensor(x), output_size=[12]).detach(), rtol=1e-5, atol=1e-5)
    xs = on_test_device(values(1, 2, 4, dtype=np.float64), requires_grad=True)
    ws = on_test_device(values(2, 3, 3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), (xs, ws))


# ========================================================= double backward


@needs_torch
@pytest.mark.autograd
@pytest.mark.parametrize(
    "kwargs",
    [dict(padding=1), dict(stride=2, padding=1, dilation=2), dict(groups=2, stride=(1, 2))],
)
def test_conv2d_double_backward_matches_pytorch(device, kwargs):
    """A gradient penalty through conv2d: the gradients of the gradients, as PyTorch."""
    x0, b0 = values(2, 4, 6, 5, dtype=np.float64), values(4, dtype=np.float64)
    w0 = values(4, 4 // kwargs.get("groups", 1), 3, 3, dtype=np.float64)
    results = []
    for lib, make in ((gt, on_test_device), (torch, torch.tensor)):
        x, w, b = (make(a, requires_grad=True) for a in (x0, w0, b0))
        y = lib.nn.functional.conv2d(x, w, b, **kwargs)
        gx, gw = lib.autograd.grad((y**2).sum(), (x, w), create_graph=True)
        (gx.pow(2).sum() + (gw * gw).sum()).backward()
        results.append((x.grad, w.grad, b.grad))
    for got, want in zip(*results):
        assert_close(got, want, rtol=1e-9, atol=1e-9)


@needs_torch
@pytest.mark.gradcheck
def test_conv2d_gradgradcheck(device):
    from glasstorch.autograd import gradgradcheck

    x = on_test_device(values(1, 2, 4, 4, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(3, 2, 2, 2, dtype=np.float64), requires_grad=True)
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=1), (x, w))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, stride=2), (x, w))


@needs_torch
@pytest.mark.autograd
@pytest.mark.errors
def test_conv2d_double_backward_refuses_copied_operands():
    x = gt.randn(1, 2, 5, 4, dtype=gt.float64, requires_grad=True)
    w = gt.randn(3, 2, 3, 3, dtype=gt.float64, requires_grad=True)
    y = F.conv2d(x.transpose(2, 3), w)
    with pytest.raises(RuntimeError, match="need a contiguous input and weight"):
        gt.autograd.grad(y.sum(), x, create_graph=True)


# -- Conv3d
@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=3),
        dict(kernel_size=(2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0), bias=False),
        dict(kernel_size=3, dilation=(2, 1, 1), padding="same", groups=2),
        dict(kernel_size=2, padding=1, padding_mode="circular"),
    ],
)
def test_conv3d_matches_pytorch(device, kwargs):
    tm = torch.nn.Conv3d(4, 6, **kwargs)
    gm = copy_weights(gnn.Conv3d(4, 6, **kwargs), tm, device)
    x = values(2, 4, 5, 4, 5)
    run_both(gm, tm, [x], rtol=1e-4, atol=1e-5)
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-4, atol=1e-4)
    assert repr(gm) == repr(tm)
    run_both(gm, tm, [x[0]], grad=False, rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.gradcheck
def test_conv3d_gradcheck(device):
    x = on_test_device(values(1, 2, 3, 3, 4, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(2, 2, 2, 2, 2, dtype=np.float64), requires_grad=True)
    b = on_test_device(values(2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1), (x, w, b))


# -- Padding modes


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, "same"])
def test_conv_padding_modes_like_pytorch(mode, padding):
    x = RNG.standard_normal((2, 2, 6, 5)).astype(np.float32)
    for dims, name in ((1, "Conv1d"), (2, "Conv2d")):
        torch.manual_seed(0)
        theirs = getattr(torch.nn, name)(2, 3, 3, padding=padding, padding_mode=mode, dilation=2)
        ours = getattr(gt.nn, name)(2, 3, 3, padding=padding, padding_mode=mode, dilation=2)
        copy_parameters(theirs, ours)
        assert repr(ours) == repr(theirs)
        assert ours._reversed_padding_repeated_twice == theirs._reversed_padding_repeated_twice
        data = x[..., 0, :] if dims == 1 else x
        tx, gx = torch.tensor(data, requires_grad=True), gt.tensor(data, requires_grad=True)
        t_out, g_out = theirs(tx), ours(gx)
        close_on_device(g_out, t_out)
        t_out.square().sum().backward()
        g_out.square().sum().backward()
        close_on_device(gx.grad, tx.grad, rtol=1e-4)


@pytest.mark.errors
def test_conv_transpose_refuses_other_padding_modes():
    with pytest.raises(
        ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'
    ):
        gt.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
