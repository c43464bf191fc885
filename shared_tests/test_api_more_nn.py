"""nn layers and functions from tutorials and courses: local response norm, channel and alpha
dropouts, Softmax2d, the upsampling aliases, channel shuffle, RReLU, five more losses,
Gumbel-softmax, max-unpooling, power-average and 3-D adaptive pooling, Conv3d, BatchNorm3d
and the hook-based weight and spectral normalisations. Forward and backward against PyTorch
from the same inputs and weights, repr, PyTorch's errors, gradcheck in float64; the random
layers by their statistics and structure."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(2027)


@pytest.fixture(autouse=True)
def _seeded():
    """Seed both generators, so PyTorch's initial weights and glasstorch's draws repeat."""
    torch.manual_seed(0)
    gt.manual_seed(0)


def values(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def run_both(gt_fn, torch_fn, arrays, grad=True, rtol=1e-5, atol=1e-5, wrt=None):
    """Call both on the same inputs (glasstorch's on the test device); compare the
    outputs, then the gradients of one random upstream gradient with respect to the
    float inputs (those at the positions ``wrt``, if given)."""
    wants = [
        grad and a.dtype.kind == "f" and (wrt is None or i in wrt) for i, a in enumerate(arrays)
    ]
    xs_t = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    xs_g = [on_test_device(a, requires_grad=w) for a, w in zip(arrays, wants)]
    yt, yg = torch_fn(*xs_t), gt_fn(*xs_g)
    assert_close(yg, yt.detach(), rtol=rtol, atol=atol)
    if grad:
        seed = values(*yt.shape)
        yt.backward(torch.tensor(seed))
        yg.backward(on_test_device(seed))
        for want, xg, xt in zip(wants, xs_g, xs_t):
            if want:
                assert_close(xg.grad, xt.grad, rtol=1e-4, atol=1e-5)
    return yg, yt


# ===================================================== normalisation, activations


@pytest.mark.parametrize("shape, size", [((2, 6, 3, 4), 3), ((2, 5, 7), 4), ((1, 4, 2, 3, 2), 2)])
def test_local_response_norm_matches_pytorch(device, shape, size):
    kw = dict(alpha=0.1, beta=0.6, k=2.0)
    run_both(gnn.LocalResponseNorm(size, **kw), torch.nn.LocalResponseNorm(size, **kw),
             [values(*shape) * 2])  # fmt: skip
    assert repr(gnn.LocalResponseNorm(size)) == repr(torch.nn.LocalResponseNorm(size))


def test_softmax2d_and_channel_shuffle(device):
    run_both(gnn.Softmax2d(), torch.nn.Softmax2d(), [values(2, 3, 4, 5)])
    run_both(gnn.Softmax2d(), torch.nn.Softmax2d(), [values(3, 4, 5)])
    run_both(gnn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), [values(2, 6, 2, 3)])
    run_both(lambda x: F.channel_shuffle(x, 2), lambda x: torch.nn.functional.channel_shuffle(x, 2),
             [values(2, 4, 5)], grad=False)  # fmt: skip
    assert repr(gnn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    assert repr(gnn.Softmax2d()) == repr(torch.nn.Softmax2d())


def test_rrelu_eval_matches_pytorch_and_training_draws_slopes(device):
    gm, tm = gnn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(3, 7)])
    run_both(lambda x: F.rrelu(x), lambda x: torch.nn.functional.rrelu(x), [values(4, 5)])
    assert repr(gnn.RReLU()) == repr(torch.nn.RReLU())
    assert repr(gnn.RReLU(0.2, 0.4, inplace=True)) == repr(torch.nn.RReLU(0.2, 0.4, inplace=True))
    # Training: positives pass, each negative gets its own slope in [lower, upper].
    x = on_test_device(-np.abs(values(4000)) - 0.1, requires_grad=True)
    y = gnn.RReLU(0.1, 0.3)(x)
    slopes = (y / x).detach().cpu().numpy()
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert abs(slopes.mean() - 0.2) < 0.01 and slopes.std() > 0.04
    y.sum().backward()
    assert_close(x.grad, slopes, rtol=1e-5, atol=1e-6)
    pos = on_test_device(np.abs(values(10)))
    assert_close(F.rrelu(pos, training=True), pos.cpu().numpy())


# ================================================================== dropout


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


def test_feature_alpha_dropout_drops_whole_channels(device):
    gt.manual_seed(2)
    y = gnn.FeatureAlphaDropout(0.5)(gt.zeros(30, 20, 3, 3)).cpu().numpy().reshape(600, 9)
    assert np.all(np.ptp(y, axis=1) == 0)
    assert len(np.unique(y.round(5))) == 2


def test_dropout3d_of_other_ranks_warns_and_takes_one_sample(device):
    gt.manual_seed(4)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        y = F.dropout3d(gt.ones(300, 4, 5), 0.5).cpu().numpy()
    # Unbatched: one draw per entry of the first dimension (the channels).
    assert np.all(np.ptp(y.reshape(300, -1), axis=1) == 0)
    assert 0.35 < (y[:, 0, 0] == 0).mean() < 0.65


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


# =============================================================== resampling


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


# =================================================================== losses


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_losses_match_pytorch(device, reduction):
    x, sign = values(4, 5), np.sign(values(4, 5)).astype(np.float32)
    run_both(gnn.SoftMarginLoss(reduction=reduction),
             torch.nn.SoftMarginLoss(reduction=reduction), [x, sign], wrt=[0])  # fmt: skip
    labels = (values(4, 5) > 0).astype(np.float32)
    w = np.abs(values(5)) + 0.5
    for weight in (None, w):
        run_both(
            gnn.MultiLabelSoftMarginLoss(
                None if weight is None else gt.tensor(weight), reduction=reduction
            ),
            torch.nn.MultiLabelSoftMarginLoss(
                None if weight is None else torch.tensor(weight), reduction=reduction
            ),
            [x, labels],
            wrt=[0],
        )
    target = RNG.integers(0, 5, size=4)
    for p, margin, weight in ((1, 1.0, None), (2, 0.5, w)):
        gw = None if weight is None else gt.tensor(weight)
        tw = None if weight is None else torch.tensor(weight)
        run_both(gnn.MultiMarginLoss(p, margin, gw, reduction=reduction),
                 torch.nn.MultiMarginLoss(p, margin, tw, reduction=reduction),
                 [x, target])  # fmt: skip
        run_both(lambda a, t, p=p, m=margin, w=gw: F.multi_margin_loss(a, t, p, m, w),
                 lambda a, t, p=p, m=margin, w=tw: torch.nn.functional.multi_margin_loss(
                     a, t, p, m, w),
                 [x[0], target[0]])  # fmt: skip


@pytest.mark.parametrize("log_input, full", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_poisson_nll_loss_matches_pytorch(device, log_input, full, reduction):
    x = values(3, 4) if log_input else np.abs(values(3, 4)) + 0.1
    target = RNG.poisson(2.0, size=(3, 4)).astype(np.float32)
    kw = dict(log_input=log_input, full=full, reduction=reduction)
    run_both(gnn.PoissonNLLLoss(**kw), torch.nn.PoissonNLLLoss(**kw), [x, target], wrt=[0])
    assert repr(gnn.PoissonNLLLoss(**kw)) == repr(torch.nn.PoissonNLLLoss(**kw))


@pytest.mark.parametrize("var_shape", [(4, 3), (4, 1), (4,)])
@pytest.mark.parametrize("full, reduction", [(False, "mean"), (True, "sum"), (False, "none")])
def test_gaussian_nll_loss_matches_pytorch(device, var_shape, full, reduction):
    var = np.abs(values(*var_shape)) + 0.1
    var.flat[0] = 1e-8  # below eps: clamped, the gradient passes
    kw = dict(full=full, reduction=reduction)
    run_both(gnn.GaussianNLLLoss(**kw), torch.nn.GaussianNLLLoss(**kw),
             [values(4, 3), values(4, 3), var], rtol=1e-4, wrt=[0, 2])  # fmt: skip
    got = F.gaussian_nll_loss(on_test_device(values(4, 3)), on_test_device(values(4, 3)), 0.5)
    assert got.shape == ()


@pytest.mark.gradcheck
def test_loss_gradchecks(device):
    x = on_test_device(values(3, 4, dtype=np.float64), requires_grad=True)
    t = on_test_device(RNG.integers(0, 4, size=3))
    assert gradcheck(lambda x: F.multi_margin_loss(x, t, p=2, margin=0.7), (x,))
    labels = on_test_device((values(3, 4) > 0).astype(np.float64))
    assert gradcheck(lambda x: F.multilabel_soft_margin_loss(x, labels), (x,))
    v = on_test_device(np.abs(values(3, 4, dtype=np.float64)) + 0.5, requires_grad=True)
    y = on_test_device(values(3, 4, dtype=np.float64))
    assert gradcheck(lambda x, v: F.gaussian_nll_loss(x, y, v, full=True), (x, v))
    assert gradcheck(lambda x: F.poisson_nll_loss(x, labels * 3, full=True), (x,))


def test_loss_reprs():
    for name in ("SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
                 "GaussianNLLLoss"):  # fmt: skip
        assert repr(getattr(gnn, name)()) == repr(getattr(torch.nn, name)())


@pytest.mark.errors
def test_loss_errors():
    assert_same_error(
        lambda: gnn.MultiMarginLoss(p=3),
        lambda: torch.nn.MultiMarginLoss(p=3),
        match="only p == 1 and p == 2 supported",
    )
    assert_same_error(
        lambda: F.gaussian_nll_loss(gt.zeros(4, 3), gt.zeros(4, 3), gt.ones(4, 2)),
        lambda: torch.nn.functional.gaussian_nll_loss(
            torch.zeros(4, 3), torch.zeros(4, 3), torch.ones(4, 2)
        ),
        match="var is of incorrect size",
    )
    assert_same_error(
        lambda: F.gaussian_nll_loss(gt.zeros(4, 3), gt.zeros(4, 3), -gt.ones(4, 3)),
        lambda: torch.nn.functional.gaussian_nll_loss(
            torch.zeros(4, 3), torch.zeros(4, 3), -torch.ones(4, 3)
        ),
        match="var has negative entry",
    )


# ============================================================ gumbel-softmax


def test_gumbel_softmax_soft_and_hard(device):
    gt.manual_seed(3)
    logits = on_test_device(np.log(np.array([[0.1, 0.2, 0.7]] * 3000, dtype=np.float32)),
                            requires_grad=True)  # fmt: skip
    soft = F.gumbel_softmax(logits, tau=0.5)
    assert_close(soft.sum(-1), np.ones(3000, np.float32), rtol=1e-5, atol=1e-5)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    arr = hard.detach().cpu().numpy()
    assert set(np.unique(arr)) <= {0.0, 1.0} and np.all(arr.sum(-1) == 1)
    # The argmax of logits + Gumbel noise is a sample of softmax(logits).
    assert np.abs(arr.mean(0) - [0.1, 0.2, 0.7]).max() < 0.03
    # Straight-through: the gradient is the soft sample's.
    (hard * on_test_device(np.array([1.0, 2.0, 3.0], dtype=np.float32))).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    assert_close(logits.grad.sum(-1), np.zeros(3000, np.float32), atol=1e-5)


# ================================================================== pooling


@pytest.mark.parametrize(
    "kwargs, shape, output_size",
    [
        (dict(kernel_size=2), (2, 3, 4, 6), None),
        (dict(kernel_size=3, stride=2, padding=1), (1, 2, 7, 6), (7, 6)),
        (dict(kernel_size=2), (2, 5, 7), (5, 7)),
    ],
)
def test_max_unpool2d_matches_pytorch(device, kwargs, shape, output_size):
    x = values(*shape)
    _, t_idx = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
    pooled = values(*t_idx.shape)

    def gt_fn(p):
        return gnn.MaxUnpool2d(**kwargs)(p, gt.tensor(t_idx.numpy()), output_size)

    def torch_fn(p):
        return torch.nn.MaxUnpool2d(**kwargs)(p, t_idx, output_size)

    run_both(gt_fn, torch_fn, [pooled])
    assert repr(gnn.MaxUnpool2d(**kwargs)) == repr(torch.nn.MaxUnpool2d(**kwargs))
    # With glasstorch's own pooling indices.
    pooled_g, idx_g = gnn.MaxPool2d(return_indices=True, **kwargs)(on_test_device(x))
    got = F.max_unpool2d(pooled_g, idx_g, output_size=output_size, **kwargs)
    want = torch.nn.functional.max_unpool2d(
        *torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kwargs),
        output_size=output_size, **kwargs,
    )  # fmt: skip
    assert_close(got, want)


def test_max_unpool1d_matches_pytorch(device):
    x = values(2, 3, 8)
    p, i = torch.nn.functional.max_pool1d(torch.tensor(x), 2, return_indices=True)
    got = gnn.MaxUnpool1d(2)(on_test_device(p.numpy()), gt.tensor(i.numpy()))
    assert_close(got, torch.nn.MaxUnpool1d(2)(p, i))
    assert repr(gnn.MaxUnpool1d(2)) == repr(torch.nn.MaxUnpool1d(2))


@pytest.mark.parametrize(
    "norm_type, kwargs",
    [(2, dict(kernel_size=2)), (3, dict(kernel_size=(2, 3), stride=1)),
     (1.5, dict(kernel_size=3, stride=2, ceil_mode=True))],
)  # fmt: skip
def test_lp_pool_matches_pytorch(device, norm_type, kwargs):
    x = np.abs(values(2, 3, 6, 7)) + 0.1
    run_both(gnn.LPPool2d(norm_type, **kwargs), torch.nn.LPPool2d(norm_type, **kwargs), [x],
             rtol=1e-4)  # fmt: skip
    assert repr(gnn.LPPool2d(norm_type, **kwargs)) == repr(torch.nn.LPPool2d(norm_type, **kwargs))
    k = kwargs["kernel_size"]
    k = k if isinstance(k, int) else k[0]
    run_both(gnn.LPPool1d(norm_type, k), torch.nn.LPPool1d(norm_type, k), [x[0]], rtol=1e-4)


@pytest.mark.parametrize("size", [(1, 1, 1), 2, (3, None, 2)])
def test_adaptive_pool3d_matches_pytorch(device, size):
    x = values(2, 3, 5, 4, 6)
    run_both(gnn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), [x])
    run_both(gnn.AdaptiveMaxPool3d(size), torch.nn.AdaptiveMaxPool3d(size), [x])
    run_both(gnn.AdaptiveAvgPool3d(size), torch.nn.AdaptiveAvgPool3d(size), [x[0]])
    _, got = F.adaptive_max_pool3d(on_test_device(x[0]), size, return_indices=True)
    _, want = torch.nn.functional.adaptive_max_pool3d(torch.tensor(x[0]), size, return_indices=True)
    assert_close(got, want)
    assert repr(gnn.AdaptiveMaxPool3d(size)) == repr(torch.nn.AdaptiveMaxPool3d(size))
    assert repr(gnn.AdaptiveAvgPool3d(size)) == repr(torch.nn.AdaptiveAvgPool3d(size))


@pytest.mark.gradcheck
def test_pool_gradchecks(device):
    x = on_test_device(np.abs(values(1, 2, 4, 5, dtype=np.float64)) + 0.2, requires_grad=True)
    assert gradcheck(lambda x: F.lp_pool2d(x, 2, 2, 1), (x,))
    _, idx = F.max_pool2d(x.detach(), 2, return_indices=True)
    y = on_test_device(values(1, 2, 2, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda y: F.max_unpool2d(y, idx, 2, output_size=(4, 5)), (y,))
    z = on_test_device(values(2, 6, 3, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda z: F.local_response_norm(z, 3, alpha=0.5, k=1.5), (z,))
    v = on_test_device(values(1, 2, 3, 4, 3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda v: F.adaptive_avg_pool3d(v, (2, 3, 2)), (v,))
    assert gradcheck(lambda v: F.adaptive_max_pool3d(v, (2, 2, 2)), (v,))


@pytest.mark.errors
def test_pooling_and_shuffle_errors():
    _, idx = F.max_pool2d(gt.zeros(1, 1, 4, 4), 2, return_indices=True)
    assert_same_error(
        lambda: F.max_unpool2d(gt.zeros(1, 1, 2, 2), idx, 2, output_size=(9, 9)),
        lambda: torch.nn.functional.max_unpool2d(
            torch.zeros(1, 1, 2, 2), torch.tensor(idx.cpu().numpy()), 2, output_size=(9, 9)
        ),
        match="invalid output_size",
    )
    assert_same_error(
        lambda: F.channel_shuffle(gt.zeros(1, 5, 2, 2), 2),
        lambda: torch.nn.functional.channel_shuffle(torch.zeros(1, 5, 2, 2), 2),
        match="Number of channels must be divisible by groups",
    )
    assert_same_error(
        lambda: F.local_response_norm(gt.zeros(2, 3), 2),
        lambda: torch.nn.functional.local_response_norm(torch.zeros(2, 3), 2),
        match="Expected 3D or higher dimensionality",
    )
    assert_same_error(
        lambda: F.adaptive_avg_pool3d(gt.zeros(2, 3, 4), 2),
        lambda: torch.nn.functional.adaptive_avg_pool3d(torch.zeros(2, 3, 4), 2),
        match=r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[2, 3, 4\]",
    )
    assert_same_error(
        lambda: F.adaptive_max_pool3d(gt.zeros(2, 3, 4), 2),
        lambda: torch.nn.functional.adaptive_max_pool3d(torch.zeros(2, 3, 4), 2),
        match=r"adaptive_max_pool3d\(\): Expected 4D or 5D tensor",
    )
    assert_same_error(
        lambda: gnn.Softmax2d()(gt.zeros(2, 3)),
        lambda: torch.nn.Softmax2d()(torch.zeros(2, 3)),
        match="Softmax2d: expected input to be 3D or 4D",
    )


# ==================================================== conv3d and batchnorm3d


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


@pytest.mark.gradcheck
def test_conv3d_gradcheck(device):
    x = on_test_device(values(1, 2, 3, 3, 4, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(2, 2, 2, 2, 2, dtype=np.float64), requires_grad=True)
    b = on_test_device(values(2, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1), (x, w, b))


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


def test_spectral_norm_transposed_conv_uses_dim_1(device):
    tm = torch.nn.utils.spectral_norm(torch.nn.ConvTranspose2d(3, 5, 2))
    gm = gnn.utils.spectral_norm(gnn.ConvTranspose2d(3, 5, 2))
    assert gm.weight_u.shape == tm.weight_u.shape == (5,)
    gm = copy_weights(gm, tm, device)
    gm.eval(), tm.eval()
    run_both(gm, tm, [values(1, 3, 3, 3)], rtol=1e-4)


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
