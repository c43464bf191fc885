"""More tensor functions for programs copied from tutorials and courses (ops/more_math.py):
movedim, hstack and friends, tensor_split, rot90, Tensor.unfold, atan2, logaddexp, fmod, xlogy,
cummax, median, quantile, kron, cross, cov, ... Each against PyTorch from the same inputs:
values, dtypes and shapes, gradients (and gradcheck) where differentiable, views' strides and
storage, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.math, needs_torch, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(2613)


def same(got, want, **kw):
    """Compare a result, or a tuple of results, with PyTorch's."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, **kw)
    else:
        assert_close(got, want.detach() if hasattr(want, "detach") else want, **kw)


def both(f, *arrays, grad=False, **kw):
    """Run ``f(module, *tensors)`` on glasstorch and on PyTorch and compare, gradients too.

    With ``grad``, float arrays require grad; a random seed is sent back
    through the first result and the inputs' gradients are compared.
    """
    mine = [on_test_device(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    got, want = f(gt, *mine), f(torch, *theirs)
    same(got, want, **kw)
    if grad:
        first_got = got[0] if isinstance(got, tuple) else got
        first_want = want[0] if isinstance(want, tuple) else want
        seed = RNG.standard_normal(tuple(first_want.shape))
        first_want.backward(torch.tensor(seed, dtype=first_want.dtype))
        first_got.backward(on_test_device(seed, dtype=first_got.dtype))
        for m, t in zip(mine, theirs):
            if not t.requires_grad:
                continue
            if t.grad is None or t.grad._is_zerotensor():  # PyTorch: no gradient flows
                assert m.grad is None or not m.grad.any().item()
            elif m.grad is None:  # glasstorch: no gradient flows, PyTorch's is zero
                assert not t.grad.any().item()
            else:
                assert_close(m.grad, t.grad, rtol=1e-6, atol=1e-9)
    return got


def floats(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# ======================================================================= views


@pytest.mark.parametrize(
    "source, destination", [(0, -1), (-1, 0), ((0, 1), (2, 0)), ([1], [1]), ((0, 2), (1, 0))]
)
def test_movedim_is_a_view_like_pytorch(device, source, destination):
    x = floats(2, 3, 4)
    got = both(lambda T, x: T.movedim(x, source, destination), x, grad=True)
    mine = on_test_device(x)
    view = gt.moveaxis(mine, source, destination)
    assert view.stride() == torch.tensor(x).moveaxis(source, destination).stride()
    assert view.data_ptr() == mine.data_ptr()
    assert got.grad_fn.name() == "PermuteBackward0"


@pytest.mark.parametrize("dimension, size, step", [(0, 2, 1), (1, 2, 2), (-1, 3, 1), (1, 1, 3)])
def test_unfold_is_a_view_like_pytorch(device, dimension, size, step):
    x = floats(3, 5)
    both(lambda T, x: x.unfold(dimension, size, step), x, grad=True)
    mine, theirs = on_test_device(x), torch.tensor(x)
    view, want = mine.unfold(dimension, size, step), theirs.unfold(dimension, size, step)
    assert view.stride() == want.stride() and view.storage_offset() == want.storage_offset()
    mine[0, 0] = 100.0  # shares storage
    assert view.flatten()[0].item() == 100.0
    y = on_test_device(floats(2, 6), requires_grad=True)
    assert gradcheck(lambda y: y.unfold(1, 3, 2), (y,))  # windows overlapping at one column
    z = on_test_device(floats(7), requires_grad=True)
    assert gradcheck(lambda z: z.unfold(0, 3, 1), (z,))


def test_unfold_of_a_non_contiguous_tensor_and_a_scalar(device):
    x = floats(4, 6)
    both(lambda T, x: x.t().unfold(1, 2, 1), x, grad=True)
    both(lambda T, x: x.unfold(0, 1, 1), np.array(2.5))


# ======================================================================= joins


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacks_match_pytorch(device, name):
    for shapes in ([(3,), (3,)], [(2, 3), (2, 3)], [(), ()], [(2, 1, 3), (2, 1, 3)]):
        arrays = [floats(*s) for s in shapes]
        both(lambda T, *xs: getattr(T, name)(list(xs)), *arrays, grad=True)
    ints = [np.array([1, 2]), np.array([3, 4])]
    both(lambda T, *xs: getattr(T, name)(xs), *ints)


@pytest.mark.parametrize("split", [1, 2, 3, 4, 6, [1, 3], [0, 2, 2, 5], [-1], (4, 1)])
def test_tensor_split_matches_pytorch(device, split):
    x = floats(5, 2)
    both(lambda T, x: T.tensor_split(x, split), x, grad=True)
    mine = on_test_device(x)
    for part in mine.tensor_split(split):  # the parts are views covering the tensor
        part.fill_(9.0)
    assert (mine == 9.0).all().item()
    both(lambda T, x: x.tensor_split(split, dim=1), floats(2, 5))
    both(lambda T, x: x.tensor_split(T.tensor(2)), x)
    both(lambda T, x: x.tensor_split(T.tensor([1, 3])), x)


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
def test_rot90_and_flips(device, k):
    x = floats(2, 3, 4)
    both(lambda T, x: T.rot90(x, k), x, grad=True)
    both(lambda T, x: x.rot90(k, [2, 0]), x)
    both(lambda T, x: (T.fliplr(x), x.flipud()), x)


@pytest.mark.errors
def test_layout_errors():
    for fg, match in [
        (lambda T: T.movedim(T.zeros(2, 3), (0, 1), (0,)), "should contain the same"),
        (lambda T: T.movedim(T.zeros(2, 3), (0, 0), (0, 1)), r"repeated dim in `source`"),
        (lambda T: T.zeros(2, 3).unfold(1, 4, 1), "maximum size for tensor at dimension"),
        (lambda T: T.zeros(2, 3).unfold(1, 2, 0), "step is 0 but must be > 0"),
        (lambda T: T.rot90(T.zeros(2, 2), 1, [0]), "expected total rotation dims == 2"),
        (lambda T: T.rot90(T.zeros(2, 2), 1, [0, 0]), "rotation dims to be different"),
        (lambda T: T.rot90(T.zeros(2), 1, [0, 1]), "expected total dims >= 2"),
        (lambda T: T.fliplr(T.zeros(2)), "Input must be >= 2-d."),
        (lambda T: T.tensor_split(T.zeros(4), 0), "number of sections must be larger"),
    ]:
        assert_same_error(lambda fg=fg: fg(gt), lambda fg=fg: fg(torch), match=match)


# ================================================================= elementwise


def test_atan2_matches_pytorch(device):
    y = floats(40) * 10.0 ** RNG.integers(-3, 4, 40)
    x = floats(40) * 10.0 ** RNG.integers(-3, 4, 40)
    got = both(lambda T, y, x: T.atan2(y, x), y, x, grad=True, rtol=1e-14, atol=1e-15)
    assert got.grad_fn.name() == "Atan2Backward0"
    both(lambda T, y, x: T.arctan2(y, x), y.astype(np.float32), x.astype(np.float32), grad=True)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0])
    ys, xs = np.meshgrid(edges, edges)
    both(lambda T, y, x: T.atan2(y, x), ys, xs)
    both(lambda T, y, x: y.atan2(x), np.array([1, -2, 0]), np.array([3, 0, -1]))  # int -> float
    both(lambda T, y, x: T.atan2(y, x), floats(2, 1), floats(3), grad=True)  # broadcast
    mine = on_test_device(y.copy())
    assert mine.atan2_(on_test_device(x)) is mine
    assert_close(mine, torch.atan2(torch.tensor(y), torch.tensor(x)))
    a = on_test_device(floats(3), requires_grad=True)
    b = on_test_device(floats(3), requires_grad=True)
    assert gradcheck(gt.atan2, (a, b))


@pytest.mark.parametrize("name", ["logaddexp", "hypot", "copysign", "fmod", "xlogy", "atan2"])
def test_binary_functions_match_pytorch(device, name):
    a, b = floats(3, 4) * 3, floats(4) * 2
    if name == "xlogy":
        a[0, :2] = 0.0
        b = np.abs(b) + 0.1
    both(lambda T, a, b: getattr(T, name)(a, b), a, b, grad=True, rtol=1e-12)
    both(lambda T, a, b: getattr(a, name)(b), a.astype(np.float32), b.astype(np.float32))
    x, y = (
        on_test_device(floats(2, 3), requires_grad=True),
        on_test_device(np.abs(floats(3)) + 0.5, requires_grad=True),
    )
    assert gradcheck(getattr(gt, name), (x, y))


def test_special_values_of_binary_functions(device):
    inf, nan = np.inf, np.nan
    a = np.array([inf, -inf, inf, 0.0, -0.0, nan, 1.0, -5.5, 7.0])
    b = np.array([inf, -inf, -inf, 0.0, -1.0, 0.0, nan, 2.0, -3.0])
    for name in ["logaddexp", "copysign", "fmod", "xlogy", "hypot"]:
        both(lambda T, a, b, name=name: getattr(T, name)(a, b), a, b)
    ints = np.array([7, -7, 5, -5]), np.array([3, 3, -2, -2])
    both(lambda T, a, b: (T.fmod(a, b), T.fmod(a, 2), T.fmod(a, 2.5)), *ints)
    both(lambda T, a, b: (T.copysign(a, b), T.xlogy(a, b.abs())), *ints)
    both(lambda T, a: T.fmod(a, -1.5), np.array([4.0, -4.0, 0.5]))


def test_unary_functions_match_pytorch(device):
    x = floats(3, 4) * 4
    x[0, 0] = 0.0
    for name in ["frac", "sgn", "deg2rad", "rad2deg"]:
        both(lambda T, x, name=name: getattr(T, name)(x), x, grad=True)
        both(lambda T, x, name=name: getattr(x, name)(), x.astype(np.float32))
    ints = np.array([-3, 0, 4])
    for name in ["sgn", "deg2rad", "rad2deg", "signbit"]:
        both(lambda T, x, name=name: getattr(T, name)(x), ints)
    special = np.array([-0.0, 0.0, -1.0, 2.0, -np.inf, np.inf])
    both(lambda T, x: T.signbit(x), special)
    p = RNG.random(7)
    p[0], p[1] = 0.0, 1.0
    both(lambda T, p: T.logit(p), p)
    both(lambda T, p: T.logit(p, eps=0.1), p, grad=True)
    q = on_test_device(RNG.random(4) * 0.8 + 0.1, requires_grad=True)
    assert gradcheck(lambda q: gt.logit(q, 1e-3), (q,))
    v = np.array([-1.5, 0.0, 2.0, 0.0])
    both(lambda T, v, w: T.heaviside(v, w), v, np.array([0.5, 0.5, 0.5, 7.0]))
    both(lambda T, v, w: v.heaviside(w), v, np.array(0.25))


def test_interpolations_match_pytorch(device):
    a, b, c = floats(3, 4), floats(4), np.abs(floats(3, 1)) + 0.5
    both(lambda T, a, b, c: T.addcmul(a, b, c, value=0.5), a, b, c, grad=True)
    both(lambda T, a, b, c: a.addcdiv(b, c, value=-2), a, b, c, grad=True)
    both(lambda T, a, b, c: T.addcdiv(a, b, c), a, b, c, grad=True)
    both(lambda T, a, b: T.lerp(a, b, 0.3), a, floats(3, 4), grad=True)
    both(lambda T, a, b, w: T.lerp(a, b, w), a, floats(3, 4), RNG.random(4), grad=True)
    for name, args in [
        ("addcmul_", (b, c)),
        ("addcdiv_", (b, c)),
        ("lerp_", (floats(3, 4), 0.25)),
    ]:
        mine, theirs = on_test_device(a.copy()), torch.tensor(a)
        converted = [on_test_device(v) if isinstance(v, np.ndarray) else v for v in args]
        assert getattr(mine, name)(*converted) is mine
        getattr(theirs, name)(*[torch.tensor(v) if isinstance(v, np.ndarray) else v for v in args])
        assert_close(mine, theirs)
    x = on_test_device(floats(2, 3), requires_grad=True)
    y = on_test_device(floats(3), requires_grad=True)
    z = on_test_device(np.abs(floats(2, 1)) + 0.5, requires_grad=True)
    assert gradcheck(lambda x, y, z: gt.addcdiv(x, y, z, value=0.7), (x, y, z))


def test_inplace_elementwise_forms(device):
    x, y = floats(5) * 4, floats(5) * 2
    for name in ["fmod_", "copysign_", "hypot_", "xlogy_"]:
        mine, theirs = on_test_device(x.copy()), torch.tensor(x)
        other = np.abs(y) + 0.1
        assert getattr(mine, name)(on_test_device(other)) is mine
        getattr(theirs, name)(torch.tensor(other))
        assert_close(mine, theirs)
    for name in ["frac_", "sgn_", "deg2rad_", "rad2deg_"]:
        mine, theirs = on_test_device(x.copy()), torch.tensor(x)
        assert getattr(mine, name)() is mine
        getattr(theirs, name)()
        assert_close(mine, theirs)


@pytest.mark.errors
def test_elementwise_errors():
    assert_same_error(
        lambda: gt.addcdiv(gt.zeros(2), gt.ones(2, dtype=gt.long), gt.ones(2, dtype=gt.long)),
        lambda: torch.addcdiv(
            torch.zeros(2), torch.ones(2, dtype=torch.long), torch.ones(2, dtype=torch.long)
        ),
        match="Integer division with addcdiv is no longer supported",
    )
    assert_same_error(
        lambda: gt.heaviside(gt.zeros(3), gt.zeros(3, dtype=gt.float64)),
        lambda: torch.heaviside(torch.zeros(3), torch.zeros(3, dtype=torch.float64)),
        match="heaviside is not yet implemented for tensors with different dtypes",
    )
    assert_same_error(
        lambda: gt.hypot(gt.tensor([1]), gt.tensor([2])),
        lambda: torch.hypot(torch.tensor([1]), torch.tensor([2])),
        match="not implemented for 'Long'",
    )
    assert_same_error(
        lambda: gt.fmod(gt.tensor([1]), 0),
        lambda: torch.fmod(torch.tensor([1]), 0),
        match="ZeroDivisionError",
    )


# ============================================================ running extremes


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


@pytest.mark.gradcheck
def test_cummax_gradcheck(device):
    x = on_test_device(floats(3, 4), requires_grad=True)
    assert gradcheck(lambda x: gt.cummax(x, 1).values, (x,))
    assert gradcheck(lambda x: gt.cummin(x, 0).values, (x,))


def test_aminmax_matches_pytorch(device):
    x = floats(3, 4)
    got = both(lambda T, x: T.aminmax(x), x)
    assert type(got).__name__ == "aminmax" and got.max is got[1]
    both(lambda T, x: T.aminmax(x, dim=1, keepdim=True), x)
    both(lambda T, x: x.aminmax(dim=0), np.array([[3, 1], [2, 5]]))
    both(lambda T, x: T.aminmax(x, keepdim=True), x)


# ============================================================ order statistics


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


QS = [0.0, 0.3, 0.5, 1.0]


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


def test_nanquantile_matches_pytorch(device):
    x = floats(4, 5)
    x[0, 1] = x[2, 2] = x[2, 3] = np.nan
    x[3, :] = np.nan
    q = np.array([0.1, 0.5, 1.0])
    for dim in (None, 0, 1):
        both(lambda T, x, q, dim=dim: T.quantile(x, q, dim), x, q)
        both(lambda T, x, q, dim=dim: T.nanquantile(x, q, dim), x, q)
        both(lambda T, x, dim=dim: x.nanquantile(0.4, dim, interpolation="higher"), x)


@pytest.mark.gradcheck
def test_order_statistics_gradcheck(device):
    x = on_test_device(floats(3, 5), requires_grad=True)
    assert gradcheck(lambda x: gt.quantile(x, 0.35, dim=1), (x,))
    assert gradcheck(lambda x: gt.median(x, 0).values, (x,))


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


# ============================================================ linear algebra


def test_products_match_pytorch(device):
    both(
        lambda T, i, m, v: T.addmv(i, m, v, beta=0.5, alpha=2),
        floats(3),
        floats(3, 4),
        floats(4),
        grad=True,
    )
    both(
        lambda T, i, a, b: T.addbmm(i, a, b),
        floats(2, 3),
        floats(4, 2, 5),
        floats(4, 5, 3),
        grad=True,
    )
    both(
        lambda T, i, a, b: i.addbmm(a, b, beta=0, alpha=3),
        floats(2, 3),
        floats(4, 2, 5),
        floats(4, 5, 3),
    )
    both(lambda T, a, b: T.vdot(a, b), floats(4), floats(4), grad=True)
    both(lambda T, a, b: T.inner(a, b), floats(2, 3, 4), floats(5, 4), grad=True)
    both(lambda T, a, b: a.inner(b), floats(4), floats(4))
    both(lambda T, a, b: T.inner(a, b), np.array(2.0), floats(3))
    both(lambda T, a, b: T.dist(a, b), floats(3, 4), floats(4), grad=True)
    both(lambda T, a, b: a.dist(b, 1), floats(3, 4), floats(4), grad=True)
    both(lambda T, a, b: T.dist(a, b, float("inf")), floats(5), floats(5))
    a, b = floats(3, 4), floats(3, 4)
    both(lambda T, a, b: T.cosine_similarity(a, b, dim=-1), a, b, grad=True)


@pytest.mark.parametrize(
    "a_shape, b_shape", [((2,), (3,)), ((2, 3), (2, 2)), ((2, 1, 2), (3, 2)), ((), (2,))]
)
def test_kron_matches_pytorch(device, a_shape, b_shape):
    both(lambda T, a, b: T.kron(a, b), floats(*a_shape), floats(*b_shape), grad=True)
    ints = np.arange(1, 1 + int(np.prod(b_shape))).reshape(b_shape)
    both(lambda T, a, b: a.kron(b), np.full(a_shape, 2, dtype=np.int64), ints)


def test_cross_matches_pytorch(device):
    a, b = floats(4, 3), floats(4, 3)
    both(lambda T, a, b: T.cross(a, b, dim=1), a, b, grad=True)
    both(lambda T, a, b: T.linalg.cross(a, b), a, b, grad=True)
    both(lambda T, a, b: a.cross(b, dim=0), floats(3, 2), floats(3, 1), grad=True)
    both(lambda T, a, b: T.linalg.cross(a, b, dim=0), floats(3, 1), floats(3, 4))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        both(lambda T, a, b: T.cross(a, b), floats(3, 3), floats(3, 3))
    x = on_test_device(floats(2, 3), requires_grad=True)
    y = on_test_device(floats(2, 3), requires_grad=True)
    assert gradcheck(lambda x, y: gt.linalg.cross(x, y), (x, y))
    assert_same_error(
        lambda: gt.cross(gt.zeros(2, 2), gt.zeros(2, 2), dim=1),
        lambda: torch.cross(torch.zeros(2, 2), torch.zeros(2, 2), dim=1),
        match="inputs dimension 1 must have length 3. Got 2 and 2",
    )


@pytest.mark.parametrize("offset", [-4, -1, 0, 2, 5])
def test_triangle_indices_match_pytorch(device, offset):
    for row, col in [(3, 3), (4, 2), (2, 5), (0, 3)]:
        same(gt.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
        same(gt.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    same(gt.tril_indices(3, 4, dtype=gt.int32), torch.tril_indices(3, 4, dtype=torch.int32))


@pytest.mark.parametrize("offset, dim1, dim2", [(0, -2, -1), (1, 0, 2), (-2, 1, 0), (0, 2, 0)])
def test_diag_embed_matches_pytorch(device, offset, dim1, dim2):
    both(lambda T, x: T.diag_embed(x, offset, dim1, dim2), floats(2, 3), grad=True)
    both(lambda T, x: x.diag_embed(offset), np.array([1, 2, 3]))
    y = on_test_device(floats(2, 2), requires_grad=True)
    assert gradcheck(lambda y: gt.diag_embed(y, offset, dim1, dim2), (y,))


def test_cov_and_corrcoef_match_pytorch(device):
    x = floats(3, 6)
    both(lambda T, x: T.cov(x), x, grad=True)
    both(lambda T, x: x.cov(correction=0), x, grad=True)
    both(lambda T, x: T.cov(x), floats(6))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), RNG.random(6)
    both(lambda T, x, f: T.cov(x, fweights=f), x, fw, grad=True)
    both(lambda T, x, a: T.cov(x, aweights=a), x, aw)
    both(lambda T, x, f, a: T.cov(x, correction=2, fweights=f, aweights=a), x, fw, aw)
    both(lambda T, x: T.corrcoef(x), x, grad=True)
    both(lambda T, x: x.corrcoef(), np.array([[1, 2, 4], [3, 1, 0]]))
    y = on_test_device(floats(2, 4), requires_grad=True)
    assert gradcheck(gt.corrcoef, (y,))
    assert_same_error(
        lambda: gt.cov(gt.zeros(2, 2, 2)),
        lambda: torch.cov(torch.zeros(2, 2, 2)),
        match="expected input to have two or fewer dimensions",
    )


# ============================================================ in-place writes


def test_index_fill_matches_pytorch(device):
    x = floats(3, 4)
    for dim, index in [(0, [0, 2]), (1, [3]), (-1, [1, 1, 0])]:
        mine, theirs = on_test_device(x.copy()), torch.tensor(x)
        assert mine.index_fill_(dim, on_test_device(np.array(index)), -1.5) is mine
        theirs.index_fill_(dim, torch.tensor(index), -1.5)
        assert_close(mine, theirs)
        idx = np.array(index)
        both(lambda T, x, i, dim=dim: x.index_fill(dim, i, 7.0), x, idx, grad=True)
    both(lambda T, x, i: x.index_fill(0, i, T.tensor(2)), np.arange(4), np.array([1]))
    assert_same_error(
        lambda: gt.zeros(3, 4).index_fill_(0, gt.tensor([0], dtype=gt.int32), 1.0),
        lambda: torch.zeros(3, 4).index_fill_(0, torch.tensor([0], dtype=torch.int32), 1.0),
        match="Expected dtype int64 for index",
    )


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (7, 3), (3, 3, 3)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_pytorch(device, shape, wrap):
    x = floats(*shape)
    mine, theirs = on_test_device(x.copy()), torch.tensor(x)
    assert mine.fill_diagonal_(5.0, wrap=wrap) is mine
    theirs.fill_diagonal_(5.0, wrap=wrap)
    assert_close(mine, theirs)


@pytest.mark.errors
def test_fill_diagonal_errors():
    assert_same_error(
        lambda: gt.zeros(3).fill_diagonal_(1),
        lambda: torch.zeros(3).fill_diagonal_(1),
        match="dimensions must larger than 1",
    )
    assert_same_error(
        lambda: gt.zeros(2, 3, 4).fill_diagonal_(1),
        lambda: torch.zeros(2, 3, 4).fill_diagonal_(1),
        match="all dimensions of input must be of equal length",
    )


# ================================================================ edge cases


def test_edge_cases_match_pytorch(device):
    both(lambda T, x: (T.cummax(x, 0), T.cummin(x, 1)), np.zeros((0, 3)))
    both(lambda T, x: (T.median(x, 0), T.nanmedian(x, 1)), np.array([[3, 1], [2, 2]]))
    both(lambda T, x: T.quantile(x, 0.5, dim=0, keepdim=True), np.array(2.0))
    both(lambda T, x: T.quantile(x, T.tensor(0.5, dtype=T.float64)), np.array([1.0, 2.0, 4.0]))
    both(lambda T, x: T.hypot(x, x), np.array([1e200, -3e-200, np.inf, 0.0]))
    both(lambda T, x: T.hypot(x, x * 0 + np.nan), np.array([np.inf, 1.0]))
    both(lambda T, x: T.logaddexp(x, x), np.array([1e3, -1e3, 0.0], dtype=np.float32))
    both(lambda T, x: x.tensor_split([3, 1]), np.arange(5))
    both(lambda T, x: T.kron(x, x), np.array(2.0))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        both(lambda T, x: (T.cov(x), T.corrcoef(x)), np.array(2.0))
    both(lambda T, x: x.unfold(0, 1, 1), np.array(2.0))
    both(lambda T, x: x.unfold(0, 0, 2), np.arange(5.0))


@pytest.mark.errors
def test_argument_errors():
    for fg, match in [
        (lambda T: T.frac(T.tensor([1, 2])), "\"frac_cpu\" not implemented for 'Long'"),
        (lambda T: T.tensor_split(T.arange(5), T.tensor([1.0])), "to have dtype of long"),
        (lambda T: T.tensor_split(T.arange(5), T.tensor([[1]])), "zero-dimensional or one-dim"),
        (lambda T: T.linalg.cross(T.zeros(3), T.zeros(2, 3)), "same number of dimensions"),
        (lambda T: T.vdot(T.zeros(2).double(), T.zeros(2)), "expected both vectors to have same dtype"),
        (lambda T: T.vdot(T.zeros(2, 2), T.zeros(2, 2)), "1D tensors expected, but got 2D and 2D"),
        (lambda T: T.dist(T.tensor([1]), T.tensor([2])), "input dtype should be either floating"),
        (lambda T: T.atan2(T.zeros(2), 2.0), r"argument 'other' \(position 2\) must be Tensor"),
        (lambda T: T.hypot(T.zeros(2), 2.0), r"argument 'other' \(position 2\) must be Tensor"),
        (lambda T: T.logaddexp(T.zeros(2), 2.0), "must be Tensor, not float"),
        (lambda T: T.heaviside(T.zeros(2), 2.0), r"argument 'values' \(position 2\) must be Tensor"),
        (lambda T: T.logaddexp(T.tensor([1]), T.tensor([2])), "not implemented for 'Long'"),
        (lambda T: T.tril_indices(3, 3, dtype=T.float32), "not implemented for 'Float'"),
    ]:  # fmt: skip
        assert_same_error(lambda fg=fg: fg(gt), lambda fg=fg: fg(torch), match=match)
