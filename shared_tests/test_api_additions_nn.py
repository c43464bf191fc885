"""nn layers added for programs copied from tutorials and courses: instance norm, 1-D and
adaptive max pooling, embedding bags, ConvTranspose1d, Bilinear, ParameterList/Dict and the
ranking and embedding losses. Forward and backward against PyTorch from the same inputs and
weights, gradcheck in float64, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(2026)


def values(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def run_both(gt_fn, torch_fn, arrays, grad=True):
    """Call both on the same inputs (glasstorch's on the test device); compare the
    outputs, then the input gradients of one random upstream gradient."""
    xs_t = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    xs_g = [on_test_device(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    yt, yg = torch_fn(*xs_t), gt_fn(*xs_g)
    assert_close(yg, yt.detach(), rtol=1e-5, atol=1e-5)
    if grad:
        seed = values(*yt.shape)
        yt.backward(torch.tensor(seed))
        yg.backward(on_test_device(seed))
        for a, xg, xt in zip(arrays, xs_g, xs_t):
            if xt.grad is None:  # an input the result does not depend on smoothly
                assert xg.grad is None or not xg.grad.abs().sum().item()
            elif a.dtype.kind == "f":
                assert_close(xg.grad, xt.grad, rtol=1e-4, atol=1e-5)
    return yg, yt


# ============================================================ instance norm


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


# ================================================================== pooling


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, ceil_mode=True, count_include_pad=False, padding=1),
    ],
)
def test_avg_pool1d_matches_pytorch(device, kwargs):
    run_both(gnn.AvgPool1d(**kwargs), torch.nn.AvgPool1d(**kwargs), [values(2, 3, 10)])
    assert repr(gnn.AvgPool1d(**kwargs)) == repr(torch.nn.AvgPool1d(**kwargs))


@pytest.mark.parametrize("size", [3, 1, 7])
def test_adaptive_pool1d_matches_pytorch(device, size):
    run_both(gnn.AdaptiveAvgPool1d(size), torch.nn.AdaptiveAvgPool1d(size), [values(2, 3, 10)])
    run_both(gnn.AdaptiveMaxPool1d(size), torch.nn.AdaptiveMaxPool1d(size), [values(3, 10)])


@pytest.mark.parametrize("size", [(2, 3), 1, (None, 4), 5])
def test_adaptive_max_pool2d_matches_pytorch(device, size):
    run_both(gnn.AdaptiveMaxPool2d(size), torch.nn.AdaptiveMaxPool2d(size), [values(2, 3, 7, 9)])


def test_adaptive_max_pool_indices(device):
    x = values(2, 3, 7, 9)
    _, got = F.adaptive_max_pool2d(on_test_device(x), (3, 4), return_indices=True)
    _, want = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (3, 4), return_indices=True)
    assert_close(got, want)
    _, got = gnn.AdaptiveMaxPool1d(4, return_indices=True)(on_test_device(x[0]))
    _, want = torch.nn.AdaptiveMaxPool1d(4, return_indices=True)(torch.tensor(x[0]))
    assert_close(got, want)


@pytest.mark.gradcheck
def test_pooling_gradchecks(device):
    x = on_test_device(values(1, 2, 5, 6, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x: F.adaptive_max_pool2d(x, (2, 4)), (x,))
    y = on_test_device(values(2, 7, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda y: F.avg_pool1d(y, 3, 2, 1), (y,))
    assert gradcheck(lambda y: F.adaptive_max_pool1d(y, 3), (y,))


POOL3D_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", POOL3D_CASES)
def test_pool3d_matches_pytorch(device, kwargs):
    x = values(2, 2, 5, 6, 5)
    run_both(gnn.MaxPool3d(**kwargs), torch.nn.MaxPool3d(**kwargs), [x])
    for include in (True, False):
        run_both(
            gnn.AvgPool3d(**kwargs, count_include_pad=include),
            torch.nn.AvgPool3d(**kwargs, count_include_pad=include),
            [x],
        )
    assert repr(gnn.MaxPool3d(**kwargs)) == repr(torch.nn.MaxPool3d(**kwargs))
    assert repr(gnn.AvgPool3d(**kwargs)) == repr(torch.nn.AvgPool3d(**kwargs))


@pytest.mark.gradcheck
def test_pool3d_gradcheck(device):
    x = on_test_device(values(2, 3, 4, 3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x: F.max_pool3d(x, 2, 1, padding=1), (x,))
    assert gradcheck(lambda x: F.avg_pool3d(x, (2, 2, 3), padding=1, ceil_mode=True), (x,))


@pytest.mark.errors
def test_pooling_errors():
    assert_same_error(
        lambda: F.adaptive_max_pool2d(gt.zeros(2, 3, 4, 5, 6), 2),
        lambda: torch.nn.functional.adaptive_max_pool2d(torch.zeros(2, 3, 4, 5, 6), 2),
        match="Expected 3D or 4D tensor",
    )
    assert_same_error(
        lambda: F.avg_pool1d(gt.zeros(2, 3, 4, 5), 2),
        lambda: torch.nn.functional.avg_pool1d(torch.zeros(2, 3, 4, 5), 2),
        match="Expected 2 to 3 dimensions",
    )


# ============================================================ convolution


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


def test_conv_transpose1d_output_size_and_gradcheck(device):
    tm = torch.nn.ConvTranspose1d(2, 3, 3, stride=2)
    gm = copy_weights(gnn.ConvTranspose1d(2, 3, 3, stride=2), tm, device)
    x = values(1, 2, 5)
    got = gm(on_test_device(x), output_size=[12])
    assert_close(got, tm(torch.tensor(x), output_size=[12]).detach(), rtol=1e-5, atol=1e-5)
    xs = on_test_device(values(1, 2, 4, dtype=np.float64), requires_grad=True)
    ws = on_test_device(values(2, 3, 3, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), (xs, ws))


# ================================================================ embedding


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_matches_pytorch(device, mode):
    tm = torch.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=4)
    gm = copy_weights(gnn.EmbeddingBag(10, 4, mode=mode, padding_idx=4), tm, device)
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])
    got = gm(on_test_device(idx), on_test_device(offsets))
    want = tm(torch.tensor(idx), torch.tensor(offsets))
    assert_close(got, want.detach(), rtol=1e-6, atol=1e-6)
    seed = values(*want.shape)
    got.backward(on_test_device(seed))
    want.backward(torch.tensor(seed))
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-6, atol=1e-6)
    assert repr(gm) == repr(tm)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_last_offset(device, mode):
    weight = values(8, 3)
    idx = np.array([[1, 2, 3], [7, 7, 0]])
    got = F.embedding_bag(on_test_device(idx), on_test_device(weight), mode=mode)
    want = torch.nn.functional.embedding_bag(torch.tensor(idx), torch.tensor(weight), mode=mode)
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    flat, offsets = np.array([1, 2, 3, 7, 6]), np.array([0, 3, 5])
    got = F.embedding_bag(
        on_test_device(flat),
        on_test_device(weight),
        on_test_device(offsets),
        mode=mode,
        include_last_offset=True,
    )
    want = torch.nn.functional.embedding_bag(
        torch.tensor(flat),
        torch.tensor(weight),
        torch.tensor(offsets),
        mode=mode,
        include_last_offset=True,
    )
    assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_embedding_bag_per_sample_weights(device):
    weight, psw = values(6, 3), values(5)
    idx, offsets = np.array([0, 5, 2, 2, 1]), np.array([0, 3])
    got = F.embedding_bag(
        on_test_device(idx),
        on_test_device(weight),
        on_test_device(offsets),
        mode="sum",
        per_sample_weights=on_test_device(psw),
    )
    want = torch.nn.functional.embedding_bag(
        torch.tensor(idx),
        torch.tensor(weight),
        torch.tensor(offsets),
        mode="sum",
        per_sample_weights=torch.tensor(psw),
    )
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    w64 = on_test_device(values(6, 3, dtype=np.float64), requires_grad=True)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(
            lambda w, mode=mode: F.embedding_bag(
                on_test_device(idx), w, on_test_device(offsets), mode=mode
            ),
            (w64,),
        )


@pytest.mark.errors
def test_embedding_bag_errors():
    w = gt.zeros(5, 3)
    tw = torch.zeros(5, 3)
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 2]), w),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 2]), tw),
        match="offsets has to be a 1D Tensor",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([[1, 2]]), w, gt.tensor([0])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([[1, 2]]), tw, torch.tensor([0])),
        match="if input is 2D, then offsets has to be None",
    )
    assert_same_error(
        lambda: F.embedding_bag(
            gt.tensor([1, 2]), w, gt.tensor([0]), per_sample_weights=gt.ones(2)
        ),
        lambda: torch.nn.functional.embedding_bag(
            torch.tensor([1, 2]), tw, torch.tensor([0]), per_sample_weights=torch.ones(2)
        ),
        match="per_sample_weights is only supported for mode='sum'",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 7]), w, gt.tensor([0])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 7]), tw, torch.tensor([0])),
        match=r"Index 1 of input takes value 7 which is not in the valid range \[0, 5\)",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 2]), w, gt.tensor([1])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 2]), tw, torch.tensor([1])),
        match="offsets\\[0\\] has to be 0",
    )


# =================================================================== linear


def test_bilinear_matches_pytorch(device):
    tm = torch.nn.Bilinear(3, 4, 5)
    gm = copy_weights(gnn.Bilinear(3, 4, 5), tm, device)
    run_both(gm, tm, [values(6, 3), values(6, 4)])
    for (_, p), (_, q) in zip(gm.named_parameters(), tm.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    assert repr(gm) == repr(tm)
    a = on_test_device(values(2, 3, dtype=np.float64), requires_grad=True)
    b = on_test_device(values(2, 2, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(4, 3, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(F.bilinear, (a, b, w))


@pytest.mark.errors
def test_bilinear_errors():
    assert_same_error(
        lambda: F.bilinear(gt.zeros(2, 3), gt.zeros(2, 4), gt.zeros(5, 3, 3)),
        lambda: torch.nn.functional.bilinear(
            torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(5, 3, 3)
        ),
        match="input2 size does not match weight size: got 4 but expected 3",
    )


# =============================================================== containers


def test_parameter_list_and_dict(device):
    plist = gnn.ParameterList([gnn.Parameter(gt.ones(2)), gt.zeros(3, 2)])
    plist.append(gt.ones(1))
    assert len(plist) == 3 and isinstance(plist[1], gnn.Parameter)
    assert [tuple(p.shape) for p in plist.parameters()] == [(2,), (3, 2), (1,)]
    assert [name for name, _ in plist.named_parameters()] == ["0", "1", "2"]
    pdict = gnn.ParameterDict({"a": gt.ones(2), "b": gnn.Parameter(gt.zeros(3))})
    pdict["c"] = gt.ones(4)
    assert list(pdict.keys()) == ["a", "b", "c"] and "b" in pdict
    assert isinstance(pdict["c"], gnn.Parameter)

    class Model(gnn.Module):
        def __init__(self):
            super().__init__()
            self.scales = gnn.ParameterDict({"x": gt.ones(2)})
            self.layers = gnn.ParameterList([gt.ones(2), gt.ones(2)])

        def forward(self, x):
            return x * self.scales["x"] * self.layers[0] * self.layers[1]

    model = Model().to(device)
    assert sorted(model.state_dict()) == ["layers.0", "layers.1", "scales.x"]
    model(on_test_device(np.ones(2, dtype=np.float32))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    del pdict["a"]
    assert list(pdict) == ["b", "c"]


# =================================================================== losses


def _target(n):
    return np.where(RNG.random(n) < 0.5, -1.0, 1.0).astype(np.float32)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ranking_and_embedding_losses(device, reduction):
    target = _target(5)
    run_both(
        gnn.MarginRankingLoss(0.3, reduction=reduction),
        torch.nn.MarginRankingLoss(0.3, reduction=reduction),
        [values(5), values(5), target],
    )
    run_both(
        gnn.HingeEmbeddingLoss(0.8, reduction=reduction),
        torch.nn.HingeEmbeddingLoss(0.8, reduction=reduction),
        [np.abs(values(5)), target],
    )
    run_both(
        gnn.CosineEmbeddingLoss(0.1, reduction=reduction),
        torch.nn.CosineEmbeddingLoss(0.1, reduction=reduction),
        [values(5, 4), values(5, 4), target],
    )
    for swap in (False, True):
        run_both(
            gnn.TripletMarginLoss(0.5, p=2, swap=swap, reduction=reduction),
            torch.nn.TripletMarginLoss(0.5, p=2, swap=swap, reduction=reduction),
            [values(5, 4), values(5, 4), values(5, 4)],
        )
    run_both(
        gnn.TripletMarginLoss(1.0, p=1, reduction=reduction),
        torch.nn.TripletMarginLoss(1.0, p=1, reduction=reduction),
        [values(4, 3), values(4, 3), values(4, 3)],
    )


@pytest.mark.gradcheck
def test_loss_gradchecks(device):
    def f64(*shape):
        return on_test_device(values(*shape, dtype=np.float64), requires_grad=True)

    y = on_test_device(_target(4).astype(np.float64))
    a, b, c = f64(4, 3), f64(4, 3), f64(4, 3)
    assert gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, y, 0.1), (a, b))
    assert gradcheck(lambda a, b, c: F.triplet_margin_loss(a, b, c, 2.0, swap=True), (a, b, c))
    s, t = f64(4), f64(4)
    assert gradcheck(lambda s, t: F.margin_ranking_loss(s, t, y, 0.2, reduction="sum"), (s, t))


@pytest.mark.errors
def test_loss_errors():
    assert_same_error(
        lambda: F.margin_ranking_loss(gt.zeros(3), gt.zeros(3, 1), gt.ones(3)),
        lambda: torch.nn.functional.margin_ranking_loss(
            torch.zeros(3), torch.zeros(3, 1), torch.ones(3)
        ),
        match="All input tensors should have same dimension",
    )
    assert_same_error(
        lambda: F.cosine_embedding_loss(gt.zeros(3, 2), gt.zeros(3, 2), gt.ones(3, 1)),
        lambda: torch.nn.functional.cosine_embedding_loss(
            torch.zeros(3, 2), torch.zeros(3, 2), torch.ones(3, 1)
        ),
        exc_type=RuntimeError,
    )
    assert_same_error(
        lambda: F.triplet_margin_loss(gt.zeros(3, 2), gt.zeros(3, 2), gt.zeros(2)),
        lambda: torch.nn.functional.triplet_margin_loss(
            torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(2)
        ),
        match="expected to have the same number of dimensions",
    )


# ========================================================= double backward


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


@pytest.mark.gradcheck
def test_conv2d_gradgradcheck(device):
    from glasstorch.autograd import gradgradcheck

    x = on_test_device(values(1, 2, 4, 4, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(3, 2, 2, 2, dtype=np.float64), requires_grad=True)
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=1), (x, w))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, stride=2), (x, w))


@pytest.mark.autograd
@pytest.mark.errors
def test_conv2d_double_backward_refuses_copied_operands():
    x = gt.randn(1, 2, 5, 4, dtype=gt.float64, requires_grad=True)
    w = gt.randn(3, 2, 3, 3, dtype=gt.float64, requires_grad=True)
    y = F.conv2d(x.transpose(2, 3), w)
    with pytest.raises(RuntimeError, match="need a contiguous input and weight"):
        gt.autograd.grad(y.sum(), x, create_graph=True)


# ============================================================== activations

ACTIVATIONS = [
    ("ReLU6", (), {}),
    ("Hardsigmoid", (), {}),
    ("Hardswish", (), {}),
    ("SELU", (), {}),
    ("CELU", (), dict(alpha=1.7)),
    ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
    ("Softmin", (), dict(dim=1)),
    ("GLU", (), dict(dim=1)),
    ("Hardshrink", (0.3,), {}),
    ("Softshrink", (0.3,), {}),
    ("Threshold", (0.1, 2.0), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), ACTIVATIONS)
def test_activation_matches_pytorch(device, name, args, kwargs):
    x = values(3, 4) * 4
    gm, tm = getattr(gnn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    run_both(gm, tm, [x])
    assert repr(gm) == repr(tm)
    x64 = on_test_device(values(2, 4, dtype=np.float64) * 4, requires_grad=True)
    assert gradcheck(gm, (x64,))


@pytest.mark.parametrize("name", ["ReLU6", "Hardswish", "SELU", "CELU", "Threshold"])
def test_activation_inplace(device, name):
    args = (0.1, 2.0) if name == "Threshold" else ()
    x = values(3, 4) * 4
    gx, tx = on_test_device(x), torch.tensor(x)
    out = getattr(gnn, name)(*args, inplace=True)(gx)
    getattr(torch.nn, name)(*args, inplace=True)(tx)
    assert out is gx
    assert_close(gx, tx, rtol=1e-6, atol=1e-6)


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


@pytest.mark.errors
def test_activation_errors():
    assert_same_error(
        lambda: F.glu(gt.zeros(2, 3), 1),
        lambda: torch.nn.functional.glu(torch.zeros(2, 3), 1),
        match="Halving dimension must be even, but dimension 1 is size 3",
    )
    assert_same_error(
        lambda: F.rms_norm(gt.zeros(2, 3), [4]),
        lambda: torch.nn.functional.rms_norm(torch.zeros(2, 3), [4]),
        match=r"expected input with shape \[\*, 4\]|Given normalized_shape=\[4\]",
    )
    assert_same_error(
        lambda: F.softshrink(gt.zeros(2, 3), -1.0),
        lambda: torch.nn.functional.softshrink(torch.zeros(2, 3), -1.0),
        match="lambda must be in range",
    )
