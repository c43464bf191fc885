"""Pooling: max (with indices, ceil_mode, padding, dilation), average (ceil_mode,
count_include_pad, divisor_override) and adaptive average pooling, forward and
backward against PyTorch, with its errors, and gradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(77)


def values(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def compare(gt_fn, torch_fn, x: np.ndarray):
    """Run both on ``x``, compare outputs, then the input gradients of one random seed."""
    xt, xg = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    yt, yg = torch_fn(xt), gt_fn(xg)
    assert tuple(yg.shape) == tuple(yt.shape)
    assert_close(yg, yt)
    seed = values(*yt.shape)
    yt.backward(torch.tensor(seed))
    yg.backward(gt.tensor(seed))
    assert_close(xg.grad, xt.grad)


MAX_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
    dict(kernel_size=2, stride=3, ceil_mode=True),
]


@needs_torch
@pytest.mark.parametrize("kwargs", MAX_POOL_CASES)
def test_max_pool2d_matches_torch(kwargs):
    compare(gnn.MaxPool2d(**kwargs), torch.nn.MaxPool2d(**kwargs), values(2, 2, 7, 6))
    x = values(2, 5, 5)  # unbatched
    _, gi = F.max_pool2d(gt.tensor(x), return_indices=True, **kwargs)
    _, ti = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
    assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())
    assert gi.dtype is gt.int64


@needs_torch
def test_max_pool2d_ties_and_nan_follow_torch():
    x = np.zeros((1, 1, 4, 4), np.float32)  # every window is a tie: the first wins
    x[0, 0, 3, 3] = np.nan
    _, gi = F.max_pool2d(gt.tensor(x), 2, 1, return_indices=True)
    _, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
    assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())
    assert np.isnan(F.max_pool2d(gt.tensor(x), 2).cpu().numpy()[0, 0, 1, 1])


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=3, stride=1, padding=1, dilation=2, return_indices=True),
    ],
)
def test_max_pool1d_matches_torch(kwargs):
    def first(result):
        return result[0] if isinstance(result, tuple) else result

    x = values(2, 3, 9)
    compare(
        lambda t: first(gnn.MaxPool1d(**kwargs)(t)),
        lambda t: first(torch.nn.MaxPool1d(**kwargs)(t)),
        x,
    )
    if kwargs.get("return_indices"):
        _, gi = gnn.MaxPool1d(**kwargs)(gt.tensor(x[0]))
        _, ti = torch.nn.MaxPool1d(**kwargs)(torch.tensor(x[0]))
        assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), count_include_pad=False),
        dict(kernel_size=3, divisor_override=2),
    ],
)
def test_avg_pool2d_matches_torch(kwargs):
    compare(gnn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), values(2, 2, 7, 6))
    compare(gnn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), values(2, 5, 5))


@needs_torch
@pytest.mark.parametrize("size", [1, (1, 1), (2, 3), (3, None), (5, 4)])
def test_adaptive_avg_pool2d_matches_torch(size):
    layer, expected = gnn.AdaptiveAvgPool2d(size), torch.nn.AdaptiveAvgPool2d(size)
    compare(layer, expected, values(2, 3, 6, 4))
    compare(layer, expected, values(3, 5, 7))
    assert repr(layer) == repr(expected)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.MaxPool2d(2),
        lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True),
        lambda nn: nn.MaxPool1d(4, dilation=2),
        lambda nn: nn.AvgPool2d(2),
        lambda nn: nn.AvgPool2d((2, 3), stride=1, padding=1),
    ],
)
def test_pooling_repr_matches_torch(make):
    assert repr(make(gnn)) == repr(make(torch.nn))


@needs_torch
@pytest.mark.errors
@pytest.mark.parametrize(
    "call",
    [
        lambda t, F: F.max_pool2d(t.ones(1, 1, 4, 4), 3, padding=2),
        lambda t, F: F.max_pool2d(t.ones(1, 1, 2, 2), 3),
        lambda t, F: F.max_pool2d(t.ones(4, 4), 2),
        lambda t, F: F.avg_pool2d(t.ones(1, 1, 4, 4), 3, padding=2),
        lambda t, F: F.avg_pool2d(t.ones(1, 1, 2, 2), 3),
    ],
)
def test_pooling_errors_match_torch(call):
    assert_same_error(lambda: call(gt, F), lambda: call(torch, torch.nn.functional))


@pytest.mark.gradcheck
def test_pooling_gradchecks():
    # distinct values, so no tie sits on a kink of max pooling
    x = gt.tensor(RNG.permutation(48).reshape(1, 3, 4, 4) / 7.0, requires_grad=True)
    assert gradcheck(lambda x: F.max_pool2d(x, 2, 1, padding=1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (x,))
    assert gradcheck(lambda x: F.max_pool1d(x.reshape(1, 3, 16), 3, 2), (x,))
