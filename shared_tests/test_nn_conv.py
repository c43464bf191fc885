"""Convolution layers, batch and group normalisation, padding, resampling and
unfold/fold: forward values and gradients against PyTorch from the same weights,
PyTorch's init, repr and errors, and gradcheck in float64 on small shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, to_numpy, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(2024)


def values(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def from_torch(tensor):
    return gt.from_numpy(np.array(tensor.detach().numpy(), copy=True)).to(TEST_DEVICE)


def run_both(gt_layer, torch_layer, x: np.ndarray, *, rtol=None, atol=None):
    """Copy torch's state into gt_layer, run both on ``x``, backprop one random
    gradient, and compare outputs, input gradients and parameter gradients."""
    gt_layer.load_state_dict({k: from_torch(v) for k, v in torch_layer.state_dict().items()})
    xt, xg = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    yt, yg = torch_layer(xt), gt_layer(xg)
    assert tuple(yg.shape) == tuple(yt.shape)
    assert_close(yg, yt, rtol=rtol, atol=atol)
    seed = RNG.standard_normal(tuple(yt.shape)).astype(x.dtype)
    yt.backward(torch.tensor(seed))
    yg.backward(gt.tensor(seed))
    assert_close(xg.grad, xt.grad, rtol=rtol, atol=atol)
    torch_params = dict(torch_layer.named_parameters())
    for name, param in gt_layer.named_parameters():
        assert_close(param.grad, torch_params[name].grad, rtol=rtol, atol=atol)
    return yg, yt


# ------------------------------------------------------------------- Conv2d

CONV2D_CASES = [
    # in, out, kernel, stride, padding, dilation, groups, bias, input (N, H, W)
    (2, 3, 3, 1, 0, 1, 1, True, (2, 5, 5)),
    (2, 4, 3, 1, 1, 1, 1, True, (1, 4, 6)),
    (4, 4, (3, 2), (2, 1), (1, 0), (1, 2), 2, True, (2, 6, 5)),
    (3, 2, 1, 1, 0, 1, 1, False, (2, 3, 4)),  # pointwise: the input is its own im2col
    (2, 2, 1, 2, 0, 1, 2, True, (1, 5, 5)),  # 1x1 with stride: skips rows and columns
    (2, 3, 2, 3, 1, 1, 1, True, (2, 5, 4)),  # stride larger than the kernel
    (1, 2, 3, 1, "same", 2, 1, True, (1, 5, 6)),
    (1, 2, 4, 1, "same", 1, 1, False, (1, 5, 5)),  # even kernel: uneven "same" padding
    (2, 2, 3, 1, "valid", 1, 1, True, (1, 4, 4)),
    (3, 3, 3, 1, 1, 1, 3, True, (1, 4, 4)),  # depthwise
    # Stride 1 and an output as large as the input: whole taps in one copy in
    # im2col and col2im, and the input gradient run as a forward convolution
    # with the flipped weight (conv.c)
    (4, 6, 3, 1, 1, 1, 2, True, (3, 5, 7)),  # grouped
    (2, 3, (3, 1), 1, (1, 0), 1, 1, False, (2, 5, 6)),  # one axis unpadded
    (2, 2, 5, 1, 4, 2, 1, True, (1, 6, 6)),  # dilated
    (2, 3, 3, 1, 2, 2, 1, True, (2, 1, 1)),  # padding wider than the image
    # Stride 2 with an output half as wide as the input: im2col copies whole
    # taps out of the input's four phase planes (even/odd rows and columns)
    (3, 4, 3, 2, 1, 1, 1, True, (2, 7, 8)),  # odd height: phases of 4 and 3 rows
    (2, 3, 1, 2, 0, 1, 1, False, (2, 6, 6)),  # 1x1, ResNet's projection shortcut
    (4, 2, 4, 2, 1, 1, 2, True, (1, 6, 8)),  # even kernel, grouped
    (2, 3, 5, 2, 2, 1, 1, True, (1, 9, 10)),  # taps two phase rows up and down
]

# Stride 1 on the fast tier's wide grid (conv.c: the GEMM reads its rows
# straight out of the padded input), and a shape it leaves to im2col. Their
# weight gradients sum a few hundred float32 products per element, in another
# order than PyTorch's, hence the wider tolerance.
WIDE_GRID_CASES = [
    # 12 output channels end in a partial row sliver, and 9 rows of 11 + 2
    # columns in a partial column sliver
    (8, 12, 3, 1, 1, 1, 1, True, (2, 9, 11)),
    (6, 4, 5, 1, 0, 1, 1, True, (3, 9, 9)),  # valid: no padding to add
    (4, 6, 3, 1, 2, 2, 2, False, (2, 7, 6)),  # dilated and grouped
    # 64 output channels on 8 x 8: the wide grid would waste a third of the
    # forward pass's work (80 columns a sample, rounded up to 96), so the
    # forward pass runs through im2col (the weight gradient wastes nothing)
    (16, 64, 3, 1, 1, 1, 1, True, (4, 8, 8)),
]


def run_conv2d_case(case, **tolerance):
    """One row of the case tables: the same Conv2d in both libraries, compared."""
    cin, cout, k, s, p, d, g, bias, (n, h, w) = case
    torch.manual_seed(0)
    layer = torch.nn.Conv2d(cin, cout, k, s, p, d, g, bias)
    run_both(gnn.Conv2d(cin, cout, k, s, p, d, g, bias), layer, values(n, cin, h, w), **tolerance)


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def numpy_conv2d(x, weight, bias, stride, padding, dilation, groups, grad_out=None):
    """The NumPy oracle: ``conv2d`` in float64, and with ``grad_out`` its three gradients.

    The windows of the padded input are gathered as ``cols[n, c, kh, kw, i, j]``; the
    output contracts them with the weight group by group, and the gradients are the
    same contraction with ``grad_out`` (the input's scattered back onto the windows).
    """
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    out_c, group_c, kh, kw = weight.shape
    if padding == "same":  # PyTorch: the odd one of an uneven padding goes after
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in ((dh, kh), (dw, kw))]
    else:
        pads = [(p, p) for p in _pair(0 if padding == "valid" else padding)]
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    n, c, hp, wp = xp.shape
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1

    def window(a, b):
        return (slice(None), slice(None), slice(a * dh, a * dh + sh * (ho - 1) + 1, sh),
                slice(b * dw, b * dw + sw * (wo - 1) + 1, sw))  # fmt: skip

    cols = np.stack([np.stack([xp[window(a, b)] for b in range(kw)], 2) for a in range(kh)], 2)
    cols = cols.reshape(n, groups, group_c, kh, kw, ho, wo)
    w = weight.reshape(groups, out_c // groups, group_c, kh, kw)
    out = np.einsum("ngcabij,gocab->ngoij", cols, w).reshape(n, out_c, ho, wo)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    if grad_out is None:
        return out
    grad = grad_out.astype(np.float64).reshape(n, groups, out_c // groups, ho, wo)
    grad_w = np.einsum("ngcabij,ngoij->gocab", cols, grad).reshape(weight.shape)
    grad_cols = np.einsum("gocab,ngoij->ngcabij", w, grad).reshape(n, c, kh, kw, ho, wo)
    grad_xp = np.zeros_like(xp)
    for a in range(kh):
        for b in range(kw):
            grad_xp[window(a, b)] += grad_cols[:, :, a, b]
    grad_x = grad_xp[:, :, pads[0][0] : hp - pads[0][1], pads[1][0] : wp - pads[1][1]]
    return out, grad_x, grad_w, grad_out.sum(axis=(0, 2, 3))


@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_matches_torch(case):
    if torch is not None:
        run_conv2d_case(case)
    # and without PyTorch, against the NumPy oracle, from the layer's own weights
    cin, cout, k, s, p, d, g, bias, (n, h, w) = case
    rng = np.random.default_rng(7)  # its own draws: RNG's sequence stays PyTorch's cases'
    layer = gnn.Conv2d(cin, cout, k, s, p, d, g, bias)
    x = rng.standard_normal((n, cin, h, w)).astype(np.float32)
    xg = gt.tensor(x, requires_grad=True)
    y = layer(xg)
    seed = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(gt.tensor(seed))
    b = to_numpy(layer.bias) if bias else None
    out, grad_x, grad_w, grad_b = numpy_conv2d(x, to_numpy(layer.weight), b, s, p, d, g, seed)
    tolerance = {"rtol": 1e-4, "atol": 1e-5, "check_dtype": False}
    assert_close(y, out, **tolerance)
    assert_close(xg.grad, grad_x, **tolerance)
    assert_close(layer.weight.grad, grad_w, **tolerance)
    if bias:
        assert_close(layer.bias.grad, grad_b, **tolerance)


@needs_torch
@pytest.mark.parametrize("case", WIDE_GRID_CASES)
def test_stride_one_conv2d_on_the_wide_grid_and_off_it_matches_torch(case):
    run_conv2d_case(case, rtol=1e-4, atol=1e-5)


@needs_torch
def test_conv2d_with_several_tiles_per_image_matches_torch():
    # 16 channels, 24 x 24 outputs with stride 2: the C tier cuts each image's
    # im2col into two tiles. The weight gradient sums 1,152 float32 products
    # per element, in another order than PyTorch's, hence the wider tolerance.
    torch.manual_seed(0)
    layer = torch.nn.Conv2d(16, 4, 3, stride=2, padding=1, bias=False)
    run_both(gnn.Conv2d(16, 4, 3, stride=2, padding=1, bias=False), layer,
             values(2, 16, 48, 48), rtol=1e-4, atol=1e-4)  # fmt: skip


@needs_torch
def test_conv2d_unbatched_and_functional_match_torch():
    torch.manual_seed(1)
    run_both(gnn.Conv2d(2, 3, 3, padding=1), torch.nn.Conv2d(2, 3, 3, padding=1), values(2, 4, 4))
    x, w, b = values(1, 2, 5, 5), values(4, 2, 2, 2), values(4)
    out = F.conv2d(gt.tensor(x), gt.tensor(w), gt.tensor(b), stride=2, padding=1)
    expected = torch.nn.functional.conv2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2, padding=1
    )
    assert_close(out, expected)


@needs_torch
def test_conv2d_on_a_non_contiguous_input_matches_torch():
    x = values(2, 5, 5, 3)  # channels last, permuted to (N, C, H, W)
    w = values(4, 3, 3, 3)
    xt = torch.tensor(x).permute(0, 3, 1, 2)
    xg = gt.tensor(x).permute(0, 3, 1, 2)
    expected = torch.nn.functional.conv2d(xt, torch.tensor(w), padding=1)
    assert_close(F.conv2d(xg, gt.tensor(w), padding=1), expected)


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=3),
        dict(kernel_size=3, stride=2, padding=2, dilation=2, groups=2),
        dict(kernel_size=4, padding="same"),
        dict(kernel_size=1, bias=False),
    ],
)
def test_conv1d_matches_torch(kwargs):
    torch.manual_seed(2)
    run_both(gnn.Conv1d(2, 4, **kwargs), torch.nn.Conv1d(2, 4, **kwargs), values(2, 2, 9))


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=3),
        dict(kernel_size=3, stride=2, padding=1, output_padding=1),
        dict(kernel_size=(2, 3), stride=(2, 1), dilation=(1, 2), groups=2, bias=False),
    ],
)
def test_conv_transpose2d_matches_torch(kwargs):
    torch.manual_seed(3)
    layer = torch.nn.ConvTranspose2d(2, 4, **kwargs)
    run_both(gnn.ConvTranspose2d(2, 4, **kwargs), layer, values(2, 2, 3, 4))


@needs_torch
def test_conv_transpose2d_output_size_matches_torch():
    torch.manual_seed(4)
    tl, gl = torch.nn.ConvTranspose2d(1, 1, 3, stride=2), gnn.ConvTranspose2d(1, 1, 3, stride=2)
    gl.load_state_dict({k: from_torch(v) for k, v in tl.state_dict().items()})
    x = values(1, 1, 3, 3)
    expected = tl(torch.tensor(x), output_size=[8, 8])
    assert_close(gl(gt.tensor(x), output_size=[8, 8]), expected)


def test_conv_default_initialisation_bounds():
    gt.manual_seed(0)
    layer = gnn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 3 * 3)  # kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), ..)
    weight, bias = layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy()
    assert weight.shape == (8, 4, 3, 3) and bias.shape == (8,)
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    assert np.abs(weight).max() > 0.8 * bound
    grouped = gnn.Conv2d(4, 8, 3, groups=2, bias=False)
    assert tuple(grouped.weight.shape) == (8, 2, 3, 3) and grouped.bias is None
    assert tuple(gnn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape) == (4, 3, 3, 3)
    assert tuple(gnn.Conv1d(3, 5, 2).weight.shape) == (5, 3, 2)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.Conv2d(3, 4, 3),
        lambda nn: nn.Conv2d(3, 4, (3, 5), stride=2, padding=1, dilation=2, bias=False),
        lambda nn: nn.Conv2d(4, 4, 3, padding="same", groups=2),
        lambda nn: nn.Conv1d(2, 4, 3, padding="same"),
        lambda nn: nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1),
        lambda nn: nn.BatchNorm2d(3),
        lambda nn: nn.GroupNorm(2, 4),
        lambda nn: nn.Dropout2d(0.3),
        lambda nn: nn.Upsample(scale_factor=2),
        lambda nn: nn.Upsample(size=(4, 4), mode="bilinear", align_corners=True),
    ],
)
def test_repr_matches_torch(make):
    assert repr(make(gnn)) == repr(make(torch.nn))


@needs_torch
@pytest.mark.errors
@pytest.mark.parametrize(
    "call",
    [
        lambda t, F: F.conv2d(t.ones(2, 3, 5), t.ones(4, 3, 3, 3)),  # unbatched, wrong channels
        lambda t, F: F.conv2d(t.ones(1, 2, 3, 5, 5), t.ones(4, 3, 3, 3)),
        lambda t, F: F.conv2d(t.ones(2, 2, 5, 5), t.ones(4, 3, 3, 3)),
        lambda t, F: F.conv2d(t.ones(2, 3, 2, 2), t.ones(4, 3, 3, 3)),
        lambda t, F: F.conv2d(t.ones(2, 4, 5, 5), t.ones(4, 3, 3, 3), groups=2),
        lambda t, F: F.conv2d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3, 3), stride=2, padding="same"),
        lambda t, F: F.conv2d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3, 3), padding="foo"),
        lambda t, F: F.conv2d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3, 3), t.ones(5)),
        lambda t, F: F.conv2d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3, 3), stride=0),
        lambda t, F: F.conv2d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3, 3), padding=-1),
        lambda t, F: F.conv1d(t.ones(2, 3, 5, 5), t.ones(4, 3, 3)),
        lambda t, F: t.nn.Conv2d(3, 4, 3)(t.ones(5, 5)),
        lambda t, F: t.nn.Conv2d(3, 4, 3, groups=2),
        lambda t, F: t.nn.Conv2d(4, 3, 3, groups=2),
        lambda t, F: t.nn.Conv2d(4, 4, 3, padding="same", stride=2),
        lambda t, F: t.nn.BatchNorm2d(3)(t.ones(2, 3, 4)),
        lambda t, F: t.nn.BatchNorm2d(3)(t.ones(2, 4, 4, 4)),
        lambda t, F: F.pad(t.ones(2, 3), (1, 2, 3)),
        lambda t, F: F.pad(t.ones(1, 2, 3, 3), (1, 1), mode="reflect"),
    ],
)
def test_errors_match_torch(call):
    assert_same_error(lambda: call(gt, F), lambda: call(torch, torch.nn.functional))


@pytest.mark.gradcheck
def test_conv_gradchecks():
    x = gt.tensor(values(2, 2, 4, 4, dtype=np.float64), requires_grad=True)
    w = gt.tensor(values(4, 1, 2, 3, dtype=np.float64), requires_grad=True)
    b = gt.tensor(values(4, dtype=np.float64), requires_grad=True)
    assert gradcheck(
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
        (x, w, b),
    )
    wt = gt.tensor(values(2, 3, 2, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), (x, wt))
    x1 = gt.tensor(values(1, 2, 5, dtype=np.float64), requires_grad=True)
    w1 = gt.tensor(values(3, 2, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding="same"), (x1, w1))


# -------------------------------------------------------------- BatchNorm2d


@needs_torch
def test_batch_norm2d_training_and_eval_match_torch():
    torch.manual_seed(5)
    tl, gl = torch.nn.BatchNorm2d(3, momentum=0.3), gnn.BatchNorm2d(3, momentum=0.3)
    with torch.no_grad():
        tl.weight.uniform_(0.5, 1.5)
        tl.bias.uniform_(-0.5, 0.5)
    for _ in range(2):  # two steps: the running statistics move twice
        run_both(gl, tl, values(4, 3, 3, 2))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(gl, name), getattr(tl, name))
    tl.eval()
    gl.eval()
    run_both(gl, tl, values(2, 3, 2, 2))


@needs_torch
def test_batch_norm2d_without_affine_or_running_stats_matches_torch():
    for kwargs in (dict(affine=False), dict(track_running_stats=False), dict(momentum=None)):
        tl, gl = torch.nn.BatchNorm2d(2, **kwargs), gnn.BatchNorm2d(2, **kwargs)
        run_both(gl, tl, values(3, 2, 2, 3))
        run_both(gl, tl, values(3, 2, 2, 3))
        tl.eval()
        gl.eval()
        run_both(gl, tl, values(1, 2, 2, 2))


@pytest.mark.gradcheck
def test_batch_norm_gradcheck():
    x = gt.tensor(values(3, 2, 2, 2, dtype=np.float64), requires_grad=True)
    w = gt.tensor(values(2, dtype=np.float64), requires_grad=True)
    b = gt.tensor(values(2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    mean, var = gt.tensor([0.1, -0.2], dtype=gt.float64), gt.tensor([0.5, 2.0], dtype=gt.float64)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b), (x, w, b))


# ------------------------------------------------- GroupNorm, Dropout2d, pad


@needs_torch
def test_group_norm_matches_torch():
    tl, gl = torch.nn.GroupNorm(2, 4), gnn.GroupNorm(2, 4)
    with torch.no_grad():
        tl.weight.uniform_(0.5, 1.5)
        tl.bias.uniform_(-0.5, 0.5)
    run_both(gl, tl, values(2, 4, 3, 2))
    run_both(
        gnn.GroupNorm(1, 3, affine=False), torch.nn.GroupNorm(1, 3, affine=False), values(2, 3, 4)
    )


def test_dropout2d_zeroes_whole_channels():
    gt.manual_seed(0)
    x = gt.ones(4, 8, 3, 3)
    y = gnn.Dropout2d(0.5)(x).cpu().numpy()
    per_channel = y.reshape(4, 8, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0 < (per_channel == 0).all(-1).sum() < 32
    layer = gnn.Dropout2d(0.5)
    layer.eval()
    assert np.array_equal(layer(x).cpu().numpy(), x.cpu().numpy())


@needs_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch(mode):
    x = values(1, 2, 4, 5)
    # PyTorch pads the last two dimensions of a 4-D input in the non-constant modes
    cases = [(1, 2), (1, 2, 2, 1), (2, 0, -1, 1)] if mode == "constant" else [(1, 2, 2, 1)]
    for pads in cases:
        xt, xg = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
        yt, yg = torch.nn.functional.pad(xt, pads, mode=mode), F.pad(xg, pads, mode=mode)
        assert_close(yg, yt)
        yt.sum().backward()
        yg.sum().backward()
        assert_close(xg.grad, xt.grad)
    expected = torch.nn.functional.pad(torch.tensor(x), (1, 1), value=2.5)
    assert_close(F.pad(gt.tensor(x), (1, 1), value=2.5), expected)


# ------------------------------------------------ interpolate, unfold, fold


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(scale_factor=2),
        dict(scale_factor=1.5),
        dict(size=(3, 7)),
        dict(size=(5, 7), mode="bilinear"),
        dict(size=(5, 7), mode="bilinear", align_corners=True),
        dict(scale_factor=2, mode="bilinear"),
        dict(scale_factor=0.5, mode="bilinear", align_corners=True),
    ],
)
def test_interpolate_matches_torch(kwargs):
    x = values(1, 2, 4, 4)
    xt, xg = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    yt, yg = torch.nn.functional.interpolate(xt, **kwargs), F.interpolate(xg, **kwargs)
    assert_close(yg, yt)
    seed = values(*yt.shape)
    yt.backward(torch.tensor(seed))
    yg.backward(gt.tensor(seed))
    assert_close(xg.grad, xt.grad)
    assert_close(gnn.Upsample(**kwargs)(gt.tensor(x)), torch.nn.Upsample(**kwargs)(torch.tensor(x)))


@needs_torch
def test_interpolate_1d_modes_match_torch():
    x = values(2, 3, 5)
    for kwargs in (dict(scale_factor=2), dict(size=8, mode="linear", align_corners=False)):
        expected = torch.nn.functional.interpolate(torch.tensor(x), **kwargs)
        assert_close(F.interpolate(gt.tensor(x), **kwargs), expected)


@needs_torch
def test_unfold_and_fold_match_torch():
    x = values(2, 2, 5, 4)
    for kwargs in (dict(kernel_size=2), dict(kernel_size=(2, 3), padding=1, stride=2, dilation=1)):
        xt, xg = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
        yt, yg = torch.nn.functional.unfold(xt, **kwargs), F.unfold(xg, **kwargs)
        assert_close(yg, yt)
        seed = values(*yt.shape)
        yt.backward(torch.tensor(seed))
        yg.backward(gt.tensor(seed))
        assert_close(xg.grad, xt.grad)
        cols = values(*yt.shape)
        ct, cg = torch.tensor(cols, requires_grad=True), gt.tensor(cols, requires_grad=True)
        zt = torch.nn.functional.fold(ct, (5, 4), **kwargs)
        zg = F.fold(cg, (5, 4), **kwargs)
        assert_close(zg, zt)
        zt.sum().backward()
        zg.sum().backward()
        assert_close(cg.grad, ct.grad)


@pytest.mark.gradcheck
def test_unfold_fold_interpolate_pad_gradchecks():
    x = gt.tensor(values(1, 2, 3, 4, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=(1, 2)), (x,))
    cols = gt.tensor(values(1, 8, 6, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda c: F.fold(c, (3, 4), 2), (cols,))
    assert gradcheck(lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), (x,))
    assert gradcheck(lambda x: F.pad(x, (1, 2, 1, 0), mode="reflect"), (x,))
