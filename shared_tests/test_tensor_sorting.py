"""sort, argsort, topk and msort against PyTorch, on both tiers (the ``sort`` kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from compare import RNG, both, floats, same
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, to_torch, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [needs_torch, pytest.mark.usefixtures("default_device")]


# -- sort, argsort, topk and msort


def _data(shape, dtype="float32", seed=0, ties=False):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, shape) if ties else rng.standard_normal(shape)
    return on_test_device(values.astype(dtype))


@pytest.mark.reduction
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_pytorch_with_ties(dtype, dim, descending):
    x = _data((4, 7), dtype, ties=True)
    ours = gt.sort(x, dim=dim, descending=descending, stable=True)
    theirs = torch.sort(to_torch(x), dim=dim, descending=descending, stable=True)
    assert_close(ours.values, theirs.values)
    assert_close(ours.indices, theirs.indices)
    assert type(ours).__name__ == "sort"
    values, indices = ours  # a named tuple
    assert_close(x.argsort(dim=dim, descending=descending, stable=True), theirs.indices)


@pytest.mark.reduction
def test_sort_nan_is_largest_and_bool_sorts():
    x = gt.tensor([[2.0, float("nan"), -1.0, 5.0]])
    for descending in (False, True):
        ours = x.sort(descending=descending)
        theirs = to_torch(x).sort(descending=descending, stable=True)
        assert_close(ours.values, theirs.values)
        assert_close(ours.indices, theirs.indices)
    b = gt.tensor([True, False, True, False])
    assert_close(gt.sort(b, stable=True).indices, torch.sort(to_torch(b), stable=True).indices)


@pytest.mark.reduction
def test_sort_of_0d_and_empty_and_strided():
    assert_close(gt.sort(gt.tensor(3.0)).values, torch.sort(torch.tensor(3.0)).values)
    assert gt.sort(gt.tensor(3.0)).indices.shape == ()
    assert gt.sort(gt.zeros(0, 3), dim=0).values.shape == (0, 3)
    x = _data((5, 6)).t()  # non-contiguous input
    assert_close(gt.sort(x, dim=1).values, torch.sort(to_torch(x), dim=1).values)
    assert_close(gt.msort(x), torch.msort(to_torch(x)))


@pytest.mark.reduction
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_topk_matches_pytorch(largest, dim):
    x = _data((6, 5), seed=1)
    ours = gt.topk(x, 3, dim=dim, largest=largest)
    theirs = torch.topk(to_torch(x), 3, dim=dim, largest=largest)
    assert_close(ours.values, theirs.values)
    assert_close(ours.indices, theirs.indices)
    assert type(ours).__name__ == "topk"
    assert_close(x.topk(2).values, to_torch(x).topk(2).values)


@pytest.mark.reduction
@pytest.mark.errors
def test_topk_k_out_of_range():
    assert_same_error(
        lambda: gt.topk(gt.ones(3), 4),
        lambda: torch.topk(torch.ones(3), 4),
        exc_type=RuntimeError,
        match="selected index k out of range",
    )


@pytest.mark.reduction
@pytest.mark.autograd
def test_sort_and_topk_grad_fn_names_and_gradients():
    x = _data((3, 4), "float64", seed=2).requires_grad_()
    tx = to_torch(x).requires_grad_()
    assert x.sort().values.grad_fn.name() == tx.sort().values.grad_fn.name()
    assert x.topk(2).values.grad_fn.name() == tx.topk(2).values.grad_fn.name()
    weights = _data((3, 2), "float64", seed=3)
    (x.topk(2, dim=1).values * weights).sum().backward()
    (tx.topk(2, dim=1).values * to_torch(weights)).sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.reduction
@pytest.mark.gradcheck
def test_sort_topk_gradcheck():
    x = _data((3, 4), "float64", seed=4).requires_grad_()
    assert gradcheck(lambda t: gt.sort(t, dim=0, descending=True).values, (x,))
    assert gradcheck(lambda t: gt.topk(t, 2).values, (x,))


# -- Counting and searching: unique, unique_consecutive, bincount, histc, searchsorted, bucketize
INTS = np.array([3, 1, 2, 3, 1, 5, 5, 0, 2, 2])
FLAGS = [
    {},
    dict(return_inverse=True),
    dict(return_counts=True),
    dict(return_inverse=True, return_counts=True),
]


@pytest.mark.math
@pytest.mark.parametrize("flags", FLAGS)
def test_unique_matches_pytorch(device, flags):
    x = INTS.reshape(2, 5)
    same(gt.unique(on_test_device(x), **flags), torch.unique(torch.tensor(x), **flags))
    same(on_test_device(x).unique(sorted=False, **flags), torch.tensor(x).unique(**flags))
    f = RNG.standard_normal(6).astype(np.float32).repeat(2)
    same(gt.unique(on_test_device(f), **flags), torch.unique(torch.tensor(f), **flags))


@pytest.mark.math
@pytest.mark.parametrize("flags", FLAGS)
def test_unique_consecutive_matches_pytorch(device, flags):
    same(
        gt.unique_consecutive(on_test_device(INTS), **flags),
        torch.unique_consecutive(torch.tensor(INTS), **flags),
    )


@pytest.mark.math
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


@pytest.mark.math
def test_unique_of_empty(device):
    e = np.zeros(0, dtype=np.int64)
    same(
        gt.unique(on_test_device(e), return_counts=True),
        torch.unique(torch.tensor(e), return_counts=True),
    )


# ================================================================ counting


@pytest.mark.math
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


@pytest.mark.math
@pytest.mark.parametrize(
    "args", [dict(bins=7), dict(bins=5, min=-1, max=1), dict(bins=3, min=2, max=2)]
)
def test_histc_matches_pytorch(device, args):
    x = RNG.standard_normal(40).astype(np.float32)
    x[3] = 1.0  # exactly the upper edge in one case
    same(gt.histc(on_test_device(x), **args), torch.histc(torch.tensor(x), **args))
    same(on_test_device(x).histc(**args), torch.tensor(x).histc(**args))


@pytest.mark.math
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


@pytest.mark.math
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


@pytest.mark.math
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


# -- Order statistics: aminmax, median, quantile, nanquantile, and the NaN-skipping nansum and nanmean
@pytest.mark.math
def test_aminmax_matches_pytorch(device):
    x = floats(3, 4)
    got = both(lambda T, x: T.aminmax(x), x)
    assert type(got).__name__ == "aminmax" and got.max is got[1]
    both(lambda T, x: T.aminmax(x, dim=1, keepdim=True), x)
    both(lambda T, x: x.aminmax(dim=0), np.array([[3, 1], [2, 5]]))
    both(lambda T, x: T.aminmax(x, keepdim=True), x)


@pytest.mark.math
def test_median_matches_pytorch(device):
    for n in (5, 6):
        x = RNG.permutation(n * 3).astype(np.float64).reshape(3, n)  # distinct: unique indices
        both(lambda T, x: T.median(x), x, grad=True)
        for dim in (0, 1, -1):
            got = both(lambda T, x, dim=dim: T.median(x, dim), x, grad=True)
            assert type(got).__name__ == "median"
            both(lambda T, x, dim=dim: x.median(dim, keepdim=True), x)
            both(lambda T, x, dim=dim: T.nanmedian(x, dim), x)
    both(lambda T, x: T.median(x), np.array([4, 1, 3, 2]))  # lower median of an even count
    both(lambda T, x: (T.median(x, 0), T.median(x)), np.array(3.0))


@pytest.mark.math
def test_median_with_nan_matches_pytorch(device):
    x = RNG.permutation(20).astype(np.float64).reshape(4, 5)
    x[1, 3] = x[2, 0] = x[2, 4] = np.nan
    x[3, :] = np.nan
    both(lambda T, x: (T.median(x), T.nanmedian(x)), x)
    for dim in (0, 1):
        both(lambda T, x, dim=dim: T.median(x, dim), x)
        both(lambda T, x, dim=dim: T.nanmedian(x, dim).values, x)
        # The index within a slice of NaN only is whichever NaN PyTorch's selection
        # leaves in the middle; compare the indices where a number is the median.
        both(lambda T, x, dim=dim: T.nanmedian(x, dim), x[:3])


@pytest.mark.math
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_quantile_matches_pytorch(device, interpolation):
    x = floats(4, 5)
    kw = dict(interpolation=interpolation)
    both(lambda T, x: T.quantile(x, 0.3, **kw), x, grad=interpolation == "linear")
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    for dim, keepdim in [(None, False), (None, True), (0, False), (1, True), (-1, False)]:
        both(lambda T, x, q, d=dim, k=keepdim: T.quantile(x, q, d, k, **kw), x, q, grad=True)
        both(lambda T, x, d=dim, k=keepdim: x.quantile(0.75, dim=d, keepdim=k, **kw), x)
    both(lambda T, x: T.quantile(x, 0.5, **kw), np.array([1.0, 2.0, 3.0, 4.0]))  # nearest: even
    both(lambda T, x: T.quantile(x, 0.5, 0, **kw), floats(1, 3).astype(np.float32))


@pytest.mark.math
def test_nanquantile_matches_pytorch(device):
    x = floats(4, 5)
    x[0, 1] = x[2, 2] = x[2, 3] = np.nan
    x[3, :] = np.nan
    q = np.array([0.1, 0.5, 1.0])
    for dim in (None, 0, 1):
        both(lambda T, x, q, dim=dim: T.quantile(x, q, dim), x, q)
        both(lambda T, x, q, dim=dim: T.nanquantile(x, q, dim), x, q)
        both(lambda T, x, dim=dim: x.nanquantile(0.4, dim, interpolation="higher"), x)


@pytest.mark.math
@pytest.mark.gradcheck
def test_order_statistics_gradcheck(device):
    x = on_test_device(floats(3, 5), requires_grad=True)
    assert gradcheck(lambda x: gt.quantile(x, 0.35, dim=1), (x,))
    assert gradcheck(lambda x: gt.median(x, 0).values, (x,))


@pytest.mark.math
@pytest.mark.errors
def test_order_statistic_errors():
    for fg, match in [
        (lambda T: T.quantile(T.zeros(3), 1.5), r"q must be in the range \[0, 1\] but got 1.5"),
        (lambda T: T.quantile(T.zeros(3, dtype=T.long), 0.5), "must be either float or double"),
        (lambda T: T.quantile(T.zeros(3), 0.5, interpolation="x"), "interpolation must be one of"),
        (lambda T: T.quantile(T.zeros(3), T.tensor([0.5]).double()), "q tensor must be same dtype"),
        (lambda T: T.quantile(T.zeros(0), 0.5), "input tensor must be non-empty"),
        (lambda T: T.median(T.zeros(2, 0), 1), "Expected reduction dim 1 to have non-zero size"),
        (lambda T: T.aminmax(T.zeros(0)), "cannot compute aminmax over an empty dimension"),
    ]:  # fmt: skip
        assert_same_error(lambda fg=fg: fg(gt), lambda fg=fg: fg(torch), match=match)


# ============================================================ NaN-ignoring sums


@pytest.mark.math
def test_nansum_nanmean_match_pytorch(device):
    x = floats(3, 4)
    x[0, 1] = x[2, 2] = np.nan
    for kw in [{}, dict(dim=1), dict(dim=0, keepdim=True), dict(dim=(0, 1))]:
        both(lambda T, x, kw=kw: T.nansum(x, **kw), x, grad=True)
        both(lambda T, x, kw=kw: x.nanmean(**kw), x, grad=True)
    x[1, :] = np.nan  # a row of NaN only: nanmean is NaN there
    for kw in [{}, dict(dim=1), dict(dim=0, keepdim=True)]:
        both(lambda T, x, kw=kw: (T.nansum(x, **kw), x.nanmean(**kw)), x)
    both(lambda T, x: (T.nansum(x), x.nansum(0)), np.array([[1, 2], [3, 4]]))
