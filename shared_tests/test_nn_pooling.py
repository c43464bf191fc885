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


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _pool_windows(size, kernel, stride, padding, dilation, ceil_mode):
    """For one spatial dimension: each output's window, as the input positions it
    covers (from ``-padding``), and where its padded range ends (PyTorch's rules)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1  # the last window would start in the right padding
    starts = [o * stride - padding for o in range(out)]
    return [[s + k * dilation for k in range(kernel)] for s in starts], [
        min(s + (kernel - 1) * dilation + 1, size + padding) for s in starts
    ]


def numpy_pool2d(x, mode, grad_out=None, kernel_size=1, stride=None, padding=0,
                 dilation=1, ceil_mode=False, count_include_pad=True, divisor_override=None):  # fmt: skip
    """The NumPy oracle of max_pool2d / avg_pool2d on ``(..., H, W)``: the output, the
    flat indices of the maxima (the first of a tie, a NaN first of all) and, with
    ``grad_out``, the input's gradient."""
    (kh, kw), (dh, dw) = _pair(kernel_size), _pair(dilation)
    (sh, sw), (ph, pw) = _pair(stride or kernel_size), _pair(padding)
    height, width = x.shape[-2:]
    rows, row_ends = _pool_windows(height, kh, sh, ph, dh, ceil_mode)
    cols, col_ends = _pool_windows(width, kw, sw, pw, dw, ceil_mode)
    lead = x.shape[:-2]
    flat = x.reshape(-1, height, width).astype(np.float64)
    out = np.zeros((flat.shape[0], len(rows), len(cols)))
    index = np.zeros(out.shape, dtype=np.int64)
    grad = None if grad_out is None else grad_out.reshape(out.shape).astype(np.float64)
    grad_in = np.zeros_like(flat)
    for i, (window_rows, row_end) in enumerate(zip(rows, row_ends, strict=True)):
        for j, (window_cols, col_end) in enumerate(zip(cols, col_ends, strict=True)):
            inside = [(r, c) for r in window_rows for c in window_cols
                      if 0 <= r < height and 0 <= c < width]  # fmt: skip
            taken = np.array([flat[:, r, c] for r, c in inside])  # (window, batch)
            if mode == "max":
                nan = np.isnan(taken)
                best = np.where(nan.any(0), nan.argmax(0), np.nanargmax(
                    np.where(nan, -np.inf, taken), axis=0))  # fmt: skip
                for b, k in enumerate(best):
                    r, c = inside[k]
                    out[b, i, j], index[b, i, j] = flat[b, r, c], r * width + c
                    if grad is not None:
                        grad_in[b, r, c] += grad[b, i, j]
                continue
            if divisor_override:
                divisor = divisor_override
            elif count_include_pad:
                first_row, first_col = window_rows[0], window_cols[0]
                divisor = (row_end - first_row) * (col_end - first_col)
            else:
                divisor = len(inside)
            out[:, i, j] = taken.sum(0) / divisor
            if grad is not None:
                for r, c in inside:
                    grad_in[:, r, c] += grad[:, i, j] / divisor
    shape = lead + out.shape[1:]
    return out.reshape(shape), index.reshape(shape), grad_in.reshape(x.shape)


def compare_numpy(gt_fn, x, mode, **kwargs):
    """Without PyTorch: ``gt_fn`` on ``x`` and its input gradient against the NumPy oracle."""
    rng = np.random.default_rng(5)  # its own draws: RNG's sequence stays PyTorch's cases'
    xg = gt.tensor(x, requires_grad=True)
    y = gt_fn(xg)
    seed = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(gt.tensor(seed))
    out, index, grad = numpy_pool2d(x, mode, seed, **kwargs)
    assert_close(y, out, check_dtype=False)
    assert_close(xg.grad, grad, check_dtype=False)
    return index


MAX_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
    dict(kernel_size=2, stride=3, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_POOL_CASES)
def test_max_pool2d_matches_torch(kwargs):
    if torch is not None:
        compare(gnn.MaxPool2d(**kwargs), torch.nn.MaxPool2d(**kwargs), values(2, 2, 7, 6))
        x = values(2, 5, 5)  # unbatched
        _, gi = F.max_pool2d(gt.tensor(x), return_indices=True, **kwargs)
        _, ti = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
        assert np.array_equal(gi.cpu().numpy(), ti.cpu().numpy())
        assert gi.dtype is gt.int64
    # and against the NumPy oracle, which needs no PyTorch
    x = np.random.default_rng(6).standard_normal((2, 2, 7, 6)).astype(np.float32)
    compare_numpy(gnn.MaxPool2d(**kwargs), x, "max", **kwargs)
    _, gi = F.max_pool2d(gt.tensor(x[0]), return_indices=True, **kwargs)  # unbatched
    assert gi.dtype is gt.int64
    assert np.array_equal(gi.cpu().numpy(), numpy_pool2d(x[0], "max", **kwargs)[1])


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
    if torch is not None:
        compare(gnn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), values(2, 2, 7, 6))
        compare(gnn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), values(2, 5, 5))
    # and against the NumPy oracle, which needs no PyTorch
    rng = np.random.default_rng(8)
    for shape in ((2, 2, 7, 6), (2, 5, 5)):
        x = rng.standard_normal(shape).astype(np.float32)
        compare_numpy(gnn.AvgPool2d(**kwargs), x, "avg", **kwargs)


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
