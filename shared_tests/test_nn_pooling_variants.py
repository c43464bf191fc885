"""The pooling layers beyond the course's (test_nn_pooling.py) against PyTorch: 1-D and 3-D
pooling, adaptive max pooling and its indices, max-unpooling, power-average (LP) pooling and 3-D
adaptive pooling; forward and backward, gradcheck in float64, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import run_both, values
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, needs_torch, pytest.mark.usefixtures("default_device")]


# -- 1-D, 3-D and adaptive max pooling
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


# -- Max-unpooling, power-average and 3-D adaptive pooling
@pytest.mark.usefixtures("seeded_generators")
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


@pytest.mark.usefixtures("seeded_generators")
def test_max_unpool1d_matches_pytorch(device):
    x = values(2, 3, 8)
    p, i = torch.nn.functional.max_pool1d(torch.tensor(x), 2, return_indices=True)
    got = gnn.MaxUnpool1d(2)(on_test_device(p.numpy()), gt.tensor(i.numpy()))
    assert_close(got, torch.nn.MaxUnpool1d(2)(p, i))
    assert repr(gnn.MaxUnpool1d(2)) == repr(torch.nn.MaxUnpool1d(2))


@pytest.mark.usefixtures("seeded_generators")
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


@pytest.mark.usefixtures("seeded_generators")
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


@pytest.mark.usefixtures("seeded_generators")
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


@pytest.mark.usefixtures("seeded_generators")
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
