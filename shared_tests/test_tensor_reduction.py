"""Reductions: sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, logsumexp,
all/any and cumsum, over dims given as None, an int, a tuple or negative, with keepdim."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import assert_close, assert_same_error, dtype_name, gt_dtype, needs_torch, torch
from strategies import ALL_DTYPES, layouts, shapes

import glasstorch as gt

pytestmark = pytest.mark.reduction


@st.composite
def dims_for(draw, ndim):
    """``None``, one dim or a tuple of distinct dims (either sign) of an ``ndim``-d tensor."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1]))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(d - ndim if draw(st.booleans()) else d for d in chosen)


def _np_axis(dim, ndim):
    if dim is None or ndim == 0:
        return None
    return tuple(d % ndim for d in dim) if isinstance(dim, tuple) else dim % ndim


def _call(x, name, dim, keepdim, **kwargs):
    if dim is None:
        return getattr(x, name)(**kwargs)
    return getattr(x, name)(dim, keepdim=keepdim, **kwargs)


def _logsumexp(a, axis, keepdims):
    return np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims))


REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "amax": np.amax,
    "amin": np.amin,
    "logsumexp": _logsumexp,
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@given(data=st.data())
def test_float_reductions_on_layouts(name, data, device):
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    layout = data.draw(layouts(dtype=dtype))
    ndim = len(layout.shape)
    dim = data.draw(dims_for(ndim))
    if name == "prod" and isinstance(dim, tuple):
        dim = dim[0]  # prod takes one dim
    if name == "logsumexp" and dim is None:
        dim = tuple(range(ndim))  # logsumexp needs dims
    keepdim = data.draw(st.booleans())
    axis = _np_axis(dim, ndim)
    reduced = range(ndim) if axis is None else np.atleast_1d(axis)
    x = layout.build(device=device)
    if name in ("amax", "amin") and any(layout.shape[d] == 0 for d in reduced):
        # PyTorch refuses to take the maximum of nothing: so must glasstorch
        assert_same_error(
            lambda: _call(x, name, dim, keepdim),
            lambda: _call(layout.build(torch), name, dim, keepdim),
            exc_type=RuntimeError if dim is None else IndexError,
            match="Expected reduction dim",
        )
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
        keep = keepdim and dim is not None
        expected = REDUCTIONS[name](layout.array.astype(np.float64), axis=axis, keepdims=keep)
    actual = _call(x, name, dim, keepdim)
    assert_close(actual, np.asarray(expected).astype(dtype), rtol=1e-4 if name == "prod" else None)


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data())
def test_var_std_with_correction(name, data, device):
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    layout = data.draw(layouts(shapes(min_side=1), dtype=dtype))
    ndim = len(layout.shape)
    dim = data.draw(dims_for(ndim))
    keepdim = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0, 1, 2, None]))
    axis = _np_axis(dim, ndim)
    n = layout.array.size // max(np.asarray(layout.array).sum(axis=axis, keepdims=True).size, 1)
    assume(n > (1 if correction is None else correction))
    kwargs = {} if correction is None else {"correction": correction}
    expected = getattr(np, name)(
        layout.array.astype(np.float64),
        axis=axis,
        ddof=1 if correction is None else correction,
        keepdims=keepdim and dim is not None,
    ).astype(dtype)
    tolerance = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}
    x = layout.build(device=device)
    if dim is None:
        actual = getattr(x, name)(**kwargs)
        function_form = getattr(gt, name)(x, **kwargs)
    else:
        actual = getattr(x, name)(dim, keepdim=keepdim, **kwargs)
        function_form = getattr(gt, name)(x, dim=dim, keepdim=keepdim, **kwargs)
    assert_close(actual, expected, **tolerance)
    assert_close(function_form, expected, **tolerance)


def test_var_unbiased_keyword(device):
    x = gt.tensor([[1.0, 2.0, 4.0], [0.0, 3.0, 9.0]], device=device)
    a = np.array([[1.0, 2.0, 4.0], [0.0, 3.0, 9.0]])
    assert_close(x.var(), np.float32(a.var(ddof=1)))
    assert_close(x.var(unbiased=False), np.float32(a.var()))
    assert_close(x.std(1, unbiased=True), a.std(1, ddof=1).astype(np.float32))
    assert_close(
        x.var(dim=0, correction=0, keepdim=True), a.var(0, keepdims=True).astype(np.float32)
    )


@pytest.mark.parametrize("name", ["max", "min"])
@given(data=st.data())
def test_max_min_with_dim_named_tuple(name, data, device):
    layout = data.draw(
        layouts(shapes(min_dims=1, min_side=1), dtype=st.sampled_from(["float32", "int64"]))
    )
    ndim = len(layout.shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    keepdim = data.draw(st.booleans())
    a = layout.array
    if a.dtype == np.int64:  # distinct values, so the index is unambiguous
        a = np.random.default_rng(0).permutation(a.size).reshape(a.shape).astype(np.int64)
        layout = type(layout)("contiguous", layout.shape, a)
    x = layout.build(device=device)
    result = getattr(x, name)(dim, keepdim=keepdim)
    values, indices = result
    assert values is result.values and indices is result.indices
    assert result[0] is result.values
    np_arg = np.argmax if name == "max" else np.argmin
    np_val = np.max if name == "max" else np.min
    assert_close(result.values, np_val(a, axis=dim, keepdims=keepdim))
    assert_close(result.indices, np_arg(a, axis=dim, keepdims=keepdim))
    r2 = getattr(gt, name)(x, dim=dim, keepdim=keepdim)
    assert_close(r2.values, np_val(a, axis=dim, keepdims=keepdim))
    assert_close(getattr(x, name)(), np_val(a))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argmax_argmin(name, data, device):
    layout = data.draw(layouts(shapes(min_side=1), dtype="float32"))
    ndim = len(layout.shape)
    x = layout.build(device=device)
    fn = getattr(np, name)
    assert_close(getattr(x, name)(), np.asarray(fn(layout.array)))
    if ndim:
        dim = data.draw(st.integers(-ndim, ndim - 1))
        keepdim = data.draw(st.booleans())
        assert_close(
            getattr(gt, name)(x, dim=dim, keepdim=keepdim),
            fn(layout.array, axis=dim, keepdims=keepdim),
        )


def test_max_min_binary_and_ties(device):
    a, b = gt.tensor([1.0, 5.0], device=device), gt.tensor([3.0, 2.0], device=device)
    assert_close(gt.max(a, b), np.array([3.0, 5.0], dtype=np.float32))
    assert_close(gt.min(a, b), np.array([1.0, 2.0], dtype=np.float32))
    x = gt.tensor([[2.0, 7.0, 7.0], [1.0, 1.0, 0.0]], device=device)
    assert_close(x.argmax(), np.array(1))  # the first of equal maxima
    assert_close(x.argmax(dim=1), np.array([1, 0]))
    assert_close(x.max(), np.float32(7.0))
    assert x.max(dim=0).indices.dtype == gt.int64


@given(data=st.data())
def test_all_any(data, device):
    dtype = data.draw(st.sampled_from(["bool", "float32", "int64"]))
    layout = data.draw(layouts(dtype=dtype))
    ndim = len(layout.shape)
    x = layout.build(device=device)
    for name in ("all", "any"):
        fn = getattr(np, name)
        assert_close(getattr(x, name)(), np.asarray(fn(layout.array)))
        assert_close(getattr(gt, name)(x), np.asarray(fn(layout.array)))
        if ndim:
            dim = data.draw(st.integers(-ndim, ndim - 1))
            keepdim = data.draw(st.booleans())
            assert_close(
                getattr(x, name)(dim, keepdim=keepdim), fn(layout.array, axis=dim, keepdims=keepdim)
            )


@given(data=st.data())
def test_cumsum(data, device):
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64", "int32", "bool"]))
    layout = data.draw(layouts(shapes(min_dims=1), dtype=dtype))
    ndim = len(layout.shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    out_dtype = dtype if dtype in ("float32", "float64") else "int64"
    expected = np.cumsum(layout.array.astype(np.float64), axis=dim).astype(out_dtype)
    x = layout.build(device=device)
    assert_close(x.cumsum(dim), expected)
    assert_close(gt.cumsum(x, dim=dim), expected)


@pytest.mark.parametrize(
    "dtype, name, expected",
    [
        ("int32", "sum", "int64"),
        ("uint8", "sum", "int64"),
        ("bool", "sum", "int64"),
        ("int32", "prod", "int64"),
        ("bool", "prod", "int64"),
        ("float32", "sum", "float32"),
        ("float64", "prod", "float64"),
        ("int64", "amax", "int64"),
        ("uint8", "amin", "uint8"),
        ("float32", "all", "bool"),
        ("int64", "any", "bool"),
        ("uint8", "all", "uint8"),  # PyTorch keeps uint8 for all/any
        ("uint8", "any", "uint8"),
        ("int32", "argmax", "int64"),
    ],
)
def test_reduction_dtypes(dtype, name, expected, device):
    x = gt.tensor([[1, 2], [3, 1]], dtype=gt_dtype(dtype), device=device)
    assert dtype_name(getattr(x, name)().dtype) == expected
    assert dtype_name(getattr(x, name)(0).dtype) == expected


def test_sum_with_dtype_and_mean_of_ints(device):
    x = gt.tensor([1, 2, 4], device=device)
    assert_close(x.sum(dtype=gt.float64), np.float64(7.0))
    assert_close(x.float().mean(), np.float32(7 / 3))
    assert_close(x.mean(dtype=gt.float32), np.float32(7 / 3))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_empty_reductions(dtype, device):
    x = gt.zeros(0, 3, dtype=gt_dtype(dtype), device=device)
    acc = dtype if dtype in ("float32", "float64") else "int64"  # sum/prod accumulate in int64
    assert_close(x.sum(0), np.zeros(3, dtype=acc))
    assert_close(x.sum(), np.zeros((), dtype=acc))
    assert_close(x.prod(0), np.ones(3, dtype=acc))
    if dtype in ("float32", "float64"):
        assert_close(x.mean(0), np.full(3, np.nan, dtype=dtype))
        assert_close(x.logsumexp(0), np.full(3, -np.inf, dtype=dtype))
    logical = "uint8" if dtype == "uint8" else "bool"
    assert_close(x.all(0), np.ones(3, dtype=logical))
    assert_close(x.any(0), np.zeros(3, dtype=logical))
    assert x.amax(1).shape == (0,)


def test_logsumexp_is_stable(device):
    x = gt.tensor([[1000.0, 1000.0], [-1000.0, -1000.0]], device=device)
    expected = np.array([1000.0 + np.log(2.0), -1000.0 + np.log(2.0)], dtype=np.float32)
    assert_close(x.logsumexp(1), expected)
    assert_close(gt.logsumexp(x, dim=1), expected)
    assert_close(
        gt.tensor([float("-inf"), float("-inf")], device=device).logsumexp(0), np.float32(-np.inf)
    )


@pytest.mark.usefixtures("default_device")  # its tensors on the device under test
@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.ones(0, 3).amax(0),
        lambda lib: lib.ones(0, 3).max(0),
        lambda lib: lib.ones(0).argmax(),
        lambda lib: lib.ones(0).max(),
        lambda lib: lib.tensor([1, 2]).mean(),
        lambda lib: lib.ones(2, 3).sum(2),
        lambda lib: lib.ones(2, 3).sum((0, 0)),
    ],
)
def test_reduction_errors_match_torch(call):
    assert_same_error(lambda: call(gt), lambda: call(torch))
