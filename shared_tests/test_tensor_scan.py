"""Scans along a dim against PyTorch: cumsum's in-place form, cummax and cummin, logcumsumexp and
diff (values, dtypes, gradients and gradcheck, and PyTorch's errors)."""

from __future__ import annotations

import numpy as np
import pytest
from compare import RNG, both, floats, same
from oracle import assert_close, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.usefixtures("default_device")]


# -- In-place cumsum
@pytest.mark.reduction
def test_cumsum_inplace():
    x = gt.tensor([[3, -3, 4]])
    x.cumsum_(1)
    assert_close(x, np.array([[3, 0, 4]]))


# -- cummax and cummin
@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_match_pytorch(device, name, dim):
    x = floats(4, 5)
    got = both(lambda T, x: getattr(T, name)(x, dim), x, grad=True)
    assert type(got).__name__ == name and got.values is got[0]
    ties = np.array([[1, 3, 2, 3, 0], [5, 5, 1, 5, 6]])  # a tie takes the later index
    both(lambda T, x: getattr(x, name)(dim), ties)
    with_nan = x.copy()
    with_nan[1, 2] = with_nan[2, 3] = np.nan
    both(lambda T, x: getattr(T, name)(x, dim), with_nan)
    both(lambda T, x: getattr(T, name)(x, 0), np.array([True, False, True]))
    both(lambda T, x: getattr(T, name)(x, 0), np.array(3.0))


@pytest.mark.math
@needs_torch
@pytest.mark.gradcheck
def test_cummax_gradcheck(device):
    x = on_test_device(floats(3, 4), requires_grad=True)
    assert gradcheck(lambda x: gt.cummax(x, 1).values, (x,))
    assert gradcheck(lambda x: gt.cummin(x, 0).values, (x,))


# -- logcumsumexp and diff
@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_matches_pytorch(device, dim):
    x = RNG.standard_normal((3, 5)) * 40  # wide range: a naive exp would overflow
    xt, xg = torch.tensor(x, requires_grad=True), on_test_device(x, requires_grad=True)
    want, got = torch.logcumsumexp(xt, dim), gt.logcumsumexp(xg, dim)
    assert_close(got, want.detach())
    seed = RNG.standard_normal(x.shape)
    want.backward(torch.tensor(seed))
    got.backward(on_test_device(seed))
    assert_close(xg.grad, xt.grad, rtol=1e-7, atol=1e-9)
    y = on_test_device(RNG.standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(lambda y: y.logcumsumexp(1), (y,))
    x[1, 0] = -np.inf  # forward only: a -inf input's row is -inf, not NaN
    same(gt.logcumsumexp(on_test_device(x), dim), torch.logcumsumexp(torch.tensor(x), dim))


@pytest.mark.math
@needs_torch
def test_diff_matches_pytorch(device):
    x = RNG.standard_normal((3, 5))
    for n, dim in ((1, -1), (2, 0), (3, 1)):
        same(gt.diff(on_test_device(x), n=n, dim=dim), torch.diff(torch.tensor(x), n=n, dim=dim))
    pre, post = RNG.standard_normal((3, 1)), RNG.standard_normal((3, 2))
    same(
        on_test_device(x).diff(prepend=on_test_device(pre), append=on_test_device(post)),
        torch.tensor(x).diff(prepend=torch.tensor(pre), append=torch.tensor(post)),
    )
    b = np.array([True, True, False, True])
    same(gt.diff(on_test_device(b)), torch.diff(torch.tensor(b)))
    y = on_test_device(RNG.standard_normal(6), requires_grad=True)
    assert gradcheck(lambda y: gt.diff(y, n=2), (y,))


# -- diff of a higher order than the length
@pytest.mark.nn
def test_diff_of_a_higher_order_than_the_length_is_empty():
    x = gt.tensor([1, 4, 9])
    assert gt.diff(x, n=3).tolist() == []
    assert gt.diff(x, n=2**40).tolist() == []  # at once: no loop of n steps
    assert gt.diff(x, n=2).tolist() == [2]
