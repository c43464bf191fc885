"""Tensor functions added for programs copied from tutorials and courses: unique,
unique_consecutive, bincount, histc, searchsorted, bucketize, cdist, cartesian_prod,
block_diag, nan_to_num, logcumsumexp, diff, isinf, isfinite. Each against PyTorch from the
same inputs, gradients and gradcheck where differentiable, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.math, needs_torch, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(1125)


def same(got, want, **kw):
    """Compare a result, or a tuple of results, with PyTorch's."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, **kw)
    else:
        assert_close(got, want, **kw)


# =================================================================== unique

INTS = np.array([3, 1, 2, 3, 1, 5, 5, 0, 2, 2])
FLAGS = [
    {},
    dict(return_inverse=True),
    dict(return_counts=True),
    dict(return_inverse=True, return_counts=True),
]


@pytest.mark.parametrize("flags", FLAGS)
def test_unique_matches_pytorch(device, flags):
    x = INTS.reshape(2, 5)
    same(gt.unique(on_test_device(x), **flags), torch.unique(torch.tensor(x), **flags))
    same(on_test_device(x).unique(sorted=False, **flags), torch.tensor(x).unique(**flags))
    f = RNG.standard_normal(6).astype(np.float32).repeat(2)
    same(gt.unique(on_test_device(f), **flags), torch.unique(torch.tensor(f), **flags))


@pytest.mark.parametrize("flags", FLAGS)
def test_unique_consecutive_matches_pytorch(device, flags):
    same(
        gt.unique_consecutive(on_test_device(INTS), **flags),
        torch.unique_consecutive(torch.tensor(INTS), **flags),
    )


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim_matches_pytorch(device, dim):
    m = np.array([[1, 2, 1], [1, 2, 1], [0, 3, 0], [1, 2, 1]])
    flags = dict(return_inverse=True, return_counts=True)
    same(
        gt.unique(on_test_device(m), dim=dim, **flags),
        torch.unique(torch.tensor(m), dim=dim, **flags),
    )
    same(
        gt.unique_consecutive(on_test_device(m), dim=dim, **flags),
        torch.unique_consecutive(torch.tensor(m), dim=dim, **flags),
    )


def test_unique_of_empty(device):
    e = np.zeros(0, dtype=np.int64)
    same(
        gt.unique(on_test_device(e), return_counts=True),
        torch.unique(torch.tensor(e), return_counts=True),
    )


# ================================================================ counting


def test_bincount_matches_pytorch(device):
    same(gt.bincount(on_test_device(INTS)), torch.bincount(torch.tensor(INTS)))
    same(on_test_device(INTS).bincount(minlength=9), torch.tensor(INTS).bincount(minlength=9))
    for dtype in (np.float32, np.float64, np.int32):
        w = (RNG.random(INTS.size) * 4).astype(dtype)
        same(
            gt.bincount(on_test_device(INTS), on_test_device(w)),
            torch.bincount(torch.tensor(INTS), torch.tensor(w)),
            rtol=1e-6,
        )
    empty = np.zeros(0, dtype=np.int64)
    same(
        gt.bincount(on_test_device(empty), minlength=3),
        torch.bincount(torch.tensor(empty), minlength=3),
    )


@pytest.mark.parametrize(
    "args", [dict(bins=7), dict(bins=5, min=-1, max=1), dict(bins=3, min=2, max=2)]
)
def test_histc_matches_pytorch(device, args):
    x = RNG.standard_normal(40).astype(np.float32)
    x[3] = 1.0  # exactly the upper edge in one case
    same(gt.histc(on_test_device(x), **args), torch.histc(torch.tensor(x), **args))
    same(on_test_device(x).histc(**args), torch.tensor(x).histc(**args))


@pytest.mark.errors
def test_counting_errors():
    assert_same_error(
        lambda: gt.bincount(gt.tensor([-1, 2])),
        lambda: torch.bincount(torch.tensor([-1, 2])),
        match="bincount only supports 1-d non-negative integral inputs",
    )
    assert_same_error(
        lambda: gt.bincount(gt.tensor([[1, 2]])),
        lambda: torch.bincount(torch.tensor([[1, 2]])),
        match="bincount only supports 1-d non-negative integral inputs",
    )
    assert_same_error(
        lambda: gt.bincount(gt.tensor([1.0, 2.0])),
        lambda: torch.bincount(torch.tensor([1.0, 2.0])),
        match="not implemented for 'Float'",
    )
    assert_same_error(
        lambda: gt.bincount(gt.tensor([1, 2]), gt.ones(3)),
        lambda: torch.bincount(torch.tensor([1, 2]), torch.ones(3)),
        match="weights should be 1-d and have the same length as input",
    )
    assert_same_error(
        lambda: gt.bincount(gt.tensor([1, 2]), minlength=-1),
        lambda: torch.bincount(torch.tensor([1, 2]), minlength=-1),
        match="minlength should be >= 0",
    )
    assert_same_error(
        lambda: gt.histc(gt.tensor([1, 2]), bins=4),
        lambda: torch.histc(torch.tensor([1, 2]), bins=4),
        match="not implemented for 'Long'",
    )
    assert_same_error(
        lambda: gt.histc(gt.tensor([1.0, 2.0]), bins=3, min=3, max=1),
        lambda: torch.histc(torch.tensor([1.0, 2.0]), bins=3, min=3, max=1),
        match="max must be larger than min",
    )


# =============================================================== searching


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(device, right):
    s, v = np.array([1, 3, 5, 7, 7, 9]), np.array([[3, 6, 9], [0, 7, 10]])
    same(
        gt.searchsorted(on_test_device(s), on_test_device(v), right=right),
        torch.searchsorted(torch.tensor(s), torch.tensor(v), right=right),
    )
    same(
        gt.bucketize(on_test_device(v), on_test_device(s), right=right, out_int32=True),
        torch.bucketize(torch.tensor(v), torch.tensor(s), right=right, out_int32=True),
    )
    side = "right" if right else "left"
    same(
        gt.searchsorted(on_test_device(s), 7, side=side),
        torch.searchsorted(torch.tensor(s), 7, side=side),
    )
    rows = np.sort(RNG.standard_normal((3, 5)), 1)
    values = RNG.standard_normal((3, 4))
    same(
        gt.searchsorted(on_test_device(rows), on_test_device(values), right=right),
        torch.searchsorted(torch.tensor(rows), torch.tensor(values), right=right),
    )
    shuffled = np.array([7, 1, 9, 3])
    sorter = np.argsort(shuffled)
    same(
        gt.searchsorted(on_test_device(shuffled), on_test_device(v), sorter=on_test_device(sorter)),
        torch.searchsorted(torch.tensor(shuffled), torch.tensor(v), sorter=torch.tensor(sorter)),
    )


@pytest.mark.errors
def test_searching_errors():
    assert_same_error(
        lambda: gt.searchsorted(gt.tensor([[1, 3], [2, 4]]), gt.tensor([3, 6, 9])),
        lambda: torch.searchsorted(torch.tensor([[1, 3], [2, 4]]), torch.tensor([3, 6, 9])),
        match="boundaries tensor should be 1 dimension",
    )
    assert_same_error(
        lambda: gt.bucketize(gt.tensor([3]), gt.tensor([[1, 3]])),
        lambda: torch.bucketize(torch.tensor([3]), torch.tensor([[1, 3]])),
        match="boundaries tensor must be 1 dimension",
    )
    assert_same_error(
        lambda: gt.searchsorted(gt.tensor([1, 3]), gt.tensor([3]), side="middle"),
        lambda: torch.searchsorted(torch.tensor([1, 3]), torch.tensor([3]), side="middle"),
        match="side can only be 'left' or 'right'",
    )


# =============================================================== distances


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_matches_pytorch(device, p):
    a, b = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    b[0, 1] = a[0, 2]  # a zero distance: its gradient is zero, as in PyTorch
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ag, bg = on_test_device(a, requires_grad=True), on_test_device(b, requires_grad=True)
    want, got = torch.cdist(at, bt, p=p), gt.cdist(ag, bg, p=p)
    assert_close(got, want.detach())
    if p > 0:
        seed = RNG.standard_normal(want.shape)
        want.backward(torch.tensor(seed))
        got.backward(on_test_device(seed))
        assert_close(ag.grad, at.grad, rtol=1e-7, atol=1e-9)
        assert_close(bg.grad, bt.grad, rtol=1e-7, atol=1e-9)


@pytest.mark.gradcheck
def test_cdist_gradcheck(device):
    a = on_test_device(RNG.standard_normal((3, 2)), requires_grad=True)
    b = on_test_device(RNG.standard_normal((4, 2)), requires_grad=True)
    for p in (1.5, 2.0):
        assert gradcheck(lambda a, b, p=p: gt.cdist(a, b, p=p), (a, b))


@pytest.mark.errors
def test_cdist_errors():
    assert_same_error(
        lambda: gt.cdist(gt.zeros(3), gt.zeros(3)),
        lambda: torch.cdist(torch.zeros(3), torch.zeros(3)),
        match="cdist only supports at least 2D tensors, X1 got: 1D",
    )
    assert_same_error(
        lambda: gt.cdist(gt.zeros(2, 3), gt.zeros(2, 4)),
        lambda: torch.cdist(torch.zeros(2, 3), torch.zeros(2, 4)),
        match="X1 and X2 must have the same number of columns. X1: 3 X2: 4",
    )
    assert_same_error(
        lambda: gt.cdist(gt.zeros(2, 3), gt.zeros(2, 3), p=-1),
        lambda: torch.cdist(torch.zeros(2, 3), torch.zeros(2, 3), p=-1),
        match="cdist only supports non-negative p values",
    )


# =========================================================== constructions


def test_cartesian_prod_and_block_diag(device):
    a, b, c = np.array([1, 2]), np.array([3, 4, 5]), np.array([6])
    same(
        gt.cartesian_prod(on_test_device(a), on_test_device(b), on_test_device(c)),
        torch.cartesian_prod(torch.tensor(a), torch.tensor(b), torch.tensor(c)),
    )
    same(gt.cartesian_prod(on_test_device(a)), torch.cartesian_prod(torch.tensor(a)))
    m = RNG.standard_normal((2, 3))
    same(
        gt.block_diag(on_test_device(a), on_test_device(np.array(3.0)), on_test_device(m)),
        torch.block_diag(torch.tensor(a), torch.tensor(3.0, dtype=torch.float64), torch.tensor(m)),
    )
    x = on_test_device(RNG.standard_normal((2, 2)), requires_grad=True)
    y = on_test_device(RNG.standard_normal((1, 3)), requires_grad=True)
    assert gradcheck(gt.block_diag, (x, y))


@pytest.mark.errors
def test_construction_errors():
    assert_same_error(
        lambda: gt.block_diag(gt.zeros(2, 2, 2)),
        lambda: torch.block_diag(torch.zeros(2, 2, 2)),
        match="Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions",
    )
    assert_same_error(
        lambda: gt.cartesian_prod(gt.ones(2, 2)),
        lambda: torch.cartesian_prod(torch.ones(2, 2)),
        match=r"Expect a 1D vector, but got shape \[2, 2\]",
    )


# =============================================================== elementwise


def test_nan_to_num_isinf_isfinite(device):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], dtype=np.float32)
    same(gt.nan_to_num(on_test_device(x)), torch.nan_to_num(torch.tensor(x)))
    same(
        on_test_device(x).nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
        torch.tensor(x).nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
    )
    same(
        gt.nan_to_num(on_test_device(x.astype(np.float64))),
        torch.nan_to_num(torch.tensor(x.astype(np.float64))),
    )
    same(gt.isinf(on_test_device(x)), torch.isinf(torch.tensor(x)))
    same(on_test_device(x).isfinite(), torch.tensor(x).isfinite())
    same(gt.isinf(on_test_device(INTS)), torch.isinf(torch.tensor(INTS)))
    same(gt.nan_to_num(on_test_device(INTS)), torch.nan_to_num(torch.tensor(INTS)))
    inplace = on_test_device(x)
    assert gt.nan_to_num_(inplace) is inplace
    same(inplace, torch.nan_to_num(torch.tensor(x)))
    g = on_test_device(np.array([1.0, np.nan, 2.0]), requires_grad=True)
    gt.nan_to_num(g).sum().backward()
    t = torch.tensor([1.0, np.nan, 2.0], dtype=torch.float64, requires_grad=True)
    torch.nan_to_num(t).sum().backward()
    same(g.grad, t.grad)


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
