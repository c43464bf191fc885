"""Elementwise functions against PyTorch: the comparison, logical and bitwise methods and their
in-place forms, erf, atan2, hypot, logaddexp, fmod, xlogy and the other binary and unary
functions, lerp and the interpolations, nan_to_num/isinf/isfinite: values, dtypes, special
values, gradients and gradcheck, and PyTorch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compare import RNG, both, floats, same
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.usefixtures("default_device")]


# -- In-place comparison, logical and bitwise methods keep self's dtype
# (method, Python function of two numbers) for the in-place comparisons.
COMPARISONS = {
    "eq_": lambda a, b: a == b,
    "ne_": lambda a, b: a != b,
    "lt_": lambda a, b: a < b,
    "le_": lambda a, b: a <= b,
    "gt_": lambda a, b: a > b,
    "ge_": lambda a, b: a >= b,
    "greater_": lambda a, b: a > b,
    "greater_equal_": lambda a, b: a >= b,
    "less_": lambda a, b: a < b,
    "less_equal_": lambda a, b: a <= b,
    "not_equal_": lambda a, b: a != b,
}


@pytest.mark.math
@pytest.mark.parametrize("name", list(COMPARISONS))
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_inplace_comparison_keeps_dtype(name, dtype):
    left, right = [0, 1, 2, 3], [2, 1, 0, 3]
    x = gt.tensor(left, dtype=getattr(gt, dtype))
    out = getattr(x, name)(gt.tensor(right))
    assert out is x
    expected = np.array([COMPARISONS[name](a, b) for a, b in zip(left, right)], dtype=dtype)
    assert_close(x, expected)


@pytest.mark.math
def test_inplace_comparison_with_number_and_broadcast():
    x = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    x.lt_(gt.tensor([2.0, 4.0]))
    assert_close(x, np.array([[1.0, 1.0], [0.0, 0.0]], dtype="float32"))
    y = gt.tensor([1.0, 2.0, 3.0])
    y.ge_(2)
    assert_close(y, np.array([0.0, 1.0, 1.0], dtype="float32"))


@pytest.mark.autograd
def test_inplace_comparison_gives_zero_gradient():
    w = gt.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    a = w * 2
    a.ge_(0)
    assert a.grad_fn.name() == "GeBackward0"
    a.sum().backward()
    assert_close(w.grad, np.zeros(3, dtype="float32"))


@pytest.mark.math
def test_inplace_logical_keeps_dtype():
    x = gt.tensor([0.0, 2.0, 3.0])
    x.logical_xor_(gt.tensor([1, 1, 0]))
    assert_close(x, np.array([1.0, 0.0, 1.0], dtype="float32"))
    y = gt.tensor([0, 5, 7])
    y.logical_and_(gt.tensor([1.5, 1.5, 0.0]))
    assert_close(y, np.array([0, 1, 0]))


@pytest.mark.math
@pytest.mark.parametrize(
    "name, function",
    [
        ("bitwise_and_", np.bitwise_and),
        ("bitwise_or_", np.bitwise_or),
        ("bitwise_xor_", np.bitwise_xor),
    ],
)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "bool"])
def test_inplace_bitwise(name, function, dtype):
    left = np.array([0, 1, 6, 5], dtype=dtype)
    right = np.array([1, 1, 3, 0], dtype=dtype)
    x = gt.tensor(left.tolist(), dtype=getattr(gt, dtype))
    getattr(x, name)(gt.tensor(right.tolist(), dtype=getattr(gt, dtype)))
    assert_close(x, function(left, right))


@pytest.mark.math
def test_inplace_bitwise_not_and_negative():
    x = gt.tensor([0, 5, -3])
    x.bitwise_not_()
    assert_close(x, np.array([-1, -6, 2]))
    x.negative_()
    assert_close(x, np.array([1, 6, -2]))


@pytest.mark.math
def test_erf_method_and_inplace():
    values = [-1.5, 0.0, 0.5, 3.0]
    expected = np.array([math.erf(v) for v in values], dtype="float32")
    assert_close(gt.tensor(values).erf(), expected)
    x = gt.tensor(values)
    assert x.erf_() is x
    assert_close(x, expected)
    assert_close(gt.tensor([0, 1]).erf(), np.array([0.0, math.erf(1.0)], dtype="float32"))


@pytest.mark.math
def test_equal_spellings_as_methods():
    x = gt.tensor([1, 2, 3])
    assert_close(x.greater_equal(2), np.array([False, True, True]))
    assert_close(x.less_equal(2), np.array([True, True, False]))
    assert_close(x.not_equal(2), np.array([True, False, True]))


# -- Binary and unary functions, interpolations and edge values
@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


@pytest.mark.math
@needs_torch
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


# ================================================================ edge cases


@pytest.mark.math
@needs_torch
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


# -- nan_to_num, isinf and isfinite
INTS = np.array([3, 1, 2, 3, 1, 5, 5, 0, 2, 2])


@pytest.mark.math
@needs_torch
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
