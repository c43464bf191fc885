"""Elementwise math: operators with broadcasting (plain, reflected, in place), the unary
functions, pow, clamp, maximum/minimum and the logical ops, on non-contiguous layouts."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, assert_same_error, dtype_name, gt_dtype, needs_torch, torch
from strategies import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    WRITABLE_KINDS,
    broadcastable_shapes,
    layouts,
    shapes,
)

import glasstorch as gt

pytestmark = pytest.mark.math

# name -> (NumPy function computed in float64, elements the domain needs)
UNARY = {
    "neg": (np.negative, "any"),
    "abs": (np.abs, "any"),
    "exp": (np.exp, "any"),
    "log": (np.log, "positive"),
    "log1p": (np.log1p, "unit"),
    "expm1": (np.expm1, "any"),
    "sqrt": (np.sqrt, "positive"),
    "rsqrt": (lambda a: 1.0 / np.sqrt(a), "positive"),
    "sin": (np.sin, "any"),
    "cos": (np.cos, "any"),
    "tanh": (np.tanh, "any"),
    "sigmoid": (lambda a: 1.0 / (1.0 + np.exp(-a)), "any"),
    "relu": (lambda a: np.maximum(a, 0.0), "any"),
    "sign": (np.sign, "any"),
    "floor": (np.floor, "any"),
    "ceil": (np.ceil, "any"),
    "round": (np.round, "any"),
}


@pytest.mark.parametrize("name", list(UNARY))
@given(data=st.data())
def test_unary_on_layouts(name, data, device):
    reference, elements = UNARY[name]
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES))
    layout = data.draw(layouts(dtype=dtype, elements=elements))
    expected = reference(layout.array.astype(np.float64)).astype(dtype)
    x = layout.build(device=device)
    assert_close(getattr(gt, name)(x), expected)
    assert_close(getattr(x, name)(), expected)
    assert_close(x, layout.array)  # out of place
    if layout.kind in WRITABLE_KINDS:
        result = getattr(x, name + "_")()
        assert result is x
        assert_close(x, expected)


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_dtypes_match_torch(name, dtype, device):
    values = [3, 0, 1] if dtype != "bool" else [True, False, True]
    x_gt = gt.tensor(values, dtype=gt_dtype(dtype), device=device)
    x_t = torch.tensor(values, dtype=getattr(torch, dtype))
    try:
        expected = getattr(torch, name)(x_t)
    except NotImplementedError:  # a kernel PyTorch lacks for this dtype: outside the subset
        return
    except Exception:  # PyTorch refuses on purpose (e.g. -bool): so must glasstorch
        assert_same_error(lambda: getattr(gt, name)(x_gt), lambda: getattr(torch, name)(x_t))
        return
    assert_close(getattr(gt, name)(x_gt), expected)


def test_round_half_to_even(device):
    x = gt.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 0.49, -2.51], device=device)
    assert_close(x.round(), np.array([0.0, 2.0, 2.0, -0.0, -2.0, 0.0, -3.0], dtype=np.float32))


def test_special_values(device):
    x = gt.tensor([0.0, -1.0, float("inf"), float("nan")], device=device)
    with np.errstate(all="ignore"):
        expected = np.array([0.0, -1.0, np.inf, np.nan], dtype=np.float32)
        assert_close(x.log(), np.log(expected))
        assert_close(x.sqrt(), np.sqrt(expected))
        assert_close(x.exp(), np.exp(expected))
        assert_close(
            x.sigmoid(), (1 / (1 + np.exp(-expected.astype(np.float64)))).astype(np.float32)
        )
    assert_close(
        gt.tensor([1.0, -1.0, 0.0], device=device) / 0,
        np.array([np.inf, -np.inf, np.nan], dtype=np.float32),
    )
    assert_close(
        gt.tensor([1, 2], device=device) / gt.tensor([0, 0], device=device),
        np.array([np.inf, np.inf], dtype=np.float32),
    )
    assert_close(
        gt.tensor([-1000.0, 1000.0], device=device).sigmoid(),
        np.array([0.0, 1.0], dtype=np.float32),
    )


BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}


@pytest.mark.parametrize("name", list(BINARY))
@given(data=st.data())
def test_binary_operators_broadcast_on_layouts(name, data, device):
    op = BINARY[name]
    shape_a, shape_b = data.draw(broadcastable_shapes())
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64"]))
    la = data.draw(layouts(shape_a, dtype))
    lb = data.draw(layouts(shape_b, dtype, elements="positive" if name == "truediv" else "any"))
    expected = op(la.array.astype(np.float64), lb.array.astype(np.float64))
    if expected.dtype != bool:
        expected = expected.astype("float32" if name == "truediv" and dtype == "int64" else dtype)
    assert_close(op(la.build(device=device), lb.build(device=device)), expected)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@given(data=st.data())
def test_maximum_minimum(name, data, device):
    shape_a, shape_b = data.draw(broadcastable_shapes())
    dtype = data.draw(st.sampled_from(["float32", "int64", "uint8"]))
    la, lb = data.draw(layouts(shape_a, dtype)), data.draw(layouts(shape_b, dtype))
    expected = getattr(np, name)(la.array, lb.array)
    assert_close(getattr(gt, name)(la.build(device=device), lb.build(device=device)), expected)
    assert_close(getattr(la.build(device=device), name)(lb.build(device=device)), expected)


def test_maximum_propagates_nan(device):
    a = gt.tensor([float("nan"), 1.0, 2.0], device=device)
    b = gt.tensor([0.0, float("nan"), 1.0], device=device)
    assert_close(gt.maximum(a, b), np.array([np.nan, np.nan, 2.0], dtype=np.float32))
    assert_close(gt.minimum(a, b), np.array([np.nan, np.nan, 1.0], dtype=np.float32))


@given(data=st.data())
def test_inplace_operators_on_layouts(data, device):
    shape = data.draw(shapes())
    # a shape that broadcasts *to* ``shape``: a suffix with some sizes replaced by 1
    suffix = shape[data.draw(st.integers(0, len(shape))) :]
    other_shape = tuple(1 if data.draw(st.booleans()) else s for s in suffix)
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64"]))
    layout = data.draw(layouts(shape, dtype, kinds=WRITABLE_KINDS))
    lo = data.draw(layouts(other_shape, dtype))
    name = data.draw(st.sampled_from(["iadd", "isub", "imul"]))
    x = layout.build(device=device)
    before = id(x)
    x = getattr(operator, name)(x, lo.build(device=device))
    assert id(x) == before  # in place: the same tensor object
    expected = getattr(operator, name[1:] if name != "iadd" else "add")(layout.array, lo.array)
    assert_close(x, expected.astype(dtype))


def test_inplace_writes_through_views(device):
    base = gt.zeros(3, 4, device=device)
    col = base[:, 1]
    col += 2.0
    row = base[0]
    row *= 3.0
    base.t()[2] -= 1.0
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[:, 1] += 2.0
    expected[0] *= 3.0
    expected.T[2] -= 1.0
    assert_close(base, expected)
    y = gt.tensor([1.0, 2.0], device=device)
    y /= 4
    assert_close(y, np.array([0.25, 0.5], dtype=np.float32))
    z = gt.tensor([1.0, 2.0], device=device)
    assert z.add_(1.0) is z and z.mul_(gt.tensor([2.0, 3.0], device=device)) is z
    assert z.sub_(gt.tensor(1.0, device=device)) is z
    assert_close(z, np.array([3.0, 8.0], dtype=np.float32))


@pytest.mark.usefixtures("default_device")  # its tensors on the device under test
@pytest.mark.parametrize(
    "expression",
    [
        lambda lib, x: 2 - x,
        lambda lib, x: 2.5 / x,
        lambda lib, x: 3 * x,
        lambda lib, x: 1 + x,
        lambda lib, x: 2**x,
        lambda lib, x: x**2,
        lambda lib, x: x**0.5,
        lambda lib, x: -x,
        lambda lib, x: +x,
        lambda lib, x: abs(-x),
        lambda lib, x: 7 // x,
        lambda lib, x: 7 % x,
        lambda lib, x: x // 2,
        lambda lib, x: x % 2,
        lambda lib, x: 1 < x,
        lambda lib, x: 2 == x,
        lambda lib, x: x.add(x, alpha=2),
        lambda lib, x: x.sub(1, alpha=3),
        lambda lib, x: lib.add(x, 1),
        lambda lib, x: lib.mul(2, x),
        lambda lib, x: lib.div(x, 2),
        lambda lib, x: x.div(2),
        lambda lib, x: x.pow(x),
        lambda lib, x: lib.pow(2, x),
        lambda lib, x: x.reciprocal(),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@needs_torch
def test_operator_forms(expression, dtype):
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 0.5]] if dtype == "float32" else [[1, 2, 3], [4, 5, 6]]

    def run(lib):
        return expression(lib, lib.tensor(values))

    assert_close(run(gt), run(torch))


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"min": -1.0, "max": 1.0}, [-1.0, -0.5, 0.0, 0.5, 1.0]),
        ({"min": 0.0}, [0.0, 0.0, 0.0, 0.5, 3.0]),
        ({"max": 0.0}, [-2.0, -0.5, 0.0, 0.0, 0.0]),
    ],
)
def test_clamp(kwargs, expected, device):
    x = gt.tensor([-2.0, -0.5, 0.0, 0.5, 3.0], device=device)
    assert_close(x.clamp(**kwargs), np.array(expected, dtype=np.float32))
    assert_close(gt.clamp(x, **kwargs), np.array(expected, dtype=np.float32))
    assert x.clamp_(**kwargs) is x
    assert_close(x, np.array(expected, dtype=np.float32))


def test_clamp_positional_tensor_bounds_and_ints(device):
    x = gt.tensor([[-2.0, 5.0], [0.5, 1.5]], device=device)
    lo, hi = gt.tensor([0.0, 1.0], device=device), gt.tensor([[1.0], [1.2]], device=device)
    assert_close(
        x.clamp(lo, hi),
        np.clip(np.array([[-2, 5], [0.5, 1.5]]), [0, 1], [[1], [1.2]]).astype(np.float32),
    )
    assert_close(gt.tensor([-3, 0, 9], device=device).clamp(-1, 4), np.array([-1, 0, 4]))
    assert_close(
        gt.tensor([-3, 0, 9], device=device).clamp(min=0.5),
        np.array([0.5, 0.5, 9], dtype=np.float32),
    )


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("dtype", ["bool", "float32", "int64"])
def test_logical_binary(name, dtype, device):
    a = np.array([[1, 0, 2], [0, 0, 3]]).astype(dtype)
    b = np.array([1, 0, 0]).astype(dtype)
    expected = getattr(np, name)(a, b)
    assert_close(
        getattr(gt, name)(gt.tensor(a, device=device), gt.tensor(b, device=device)), expected
    )
    assert_close(getattr(gt.tensor(a, device=device), name)(gt.tensor(b, device=device)), expected)


@pytest.mark.parametrize("dtype", ["bool", "float32", "int64", "uint8"])
def test_logical_not(dtype, device):
    a = np.array([1, 0, 2]).astype(dtype)
    assert_close(gt.logical_not(gt.tensor(a, device=device)), np.logical_not(a))
    assert_close(gt.tensor(a, device=device).logical_not(), np.logical_not(a))


def test_bool_operators(device):
    a = gt.tensor([True, True, False, False], device=device)
    b = gt.tensor([True, False, True, False], device=device)
    assert_close(a & b, np.array([True, False, False, False]))
    assert_close(a | b, np.array([True, True, True, False]))
    assert_close(a ^ b, np.array([False, True, True, False]))
    assert_close(~a, np.array([False, False, True, True]))
    x = gt.tensor([1.0, -2.0, 3.0], device=device)
    assert_close((x > 0) & (x < 2), np.array([True, False, False]))


def test_comparison_with_scalars_and_broadcast(device):
    x = gt.arange(6, device=device).view(2, 3)
    assert_close(x > 2, np.arange(6).reshape(2, 3) > 2)
    assert_close(
        x == gt.tensor([0, 4, 2], device=device), np.arange(6).reshape(2, 3) == np.array([0, 4, 2])
    )
    assert_close(gt.eq(x, 3), np.arange(6).reshape(2, 3) == 3)
    assert_close(x.ne(1), np.arange(6).reshape(2, 3) != 1)
    assert_close(gt.tensor([1.5, 2.0], device=device) >= 2, np.array([False, True]))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sign_and_abs_keep_dtype(dtype, device):
    x = gt.tensor([1, 0, 1], dtype=gt_dtype(dtype), device=device)
    assert dtype_name(x.sign().dtype) == dtype
    if dtype != "bool":
        assert dtype_name(x.abs().dtype) == dtype


def _layout_strides(tensor):
    """Strides of the dims that matter for memory layout (size-1 dims are free)."""
    return tuple(s for s, n in zip(tensor.stride(), tensor.shape, strict=True) if n != 1)


@needs_torch
@pytest.mark.parametrize(
    "op",
    [lambda x: x.exp(), lambda x: -x, lambda x: x * 2, lambda x: 1 - x, lambda x: x + x],
    ids=["exp", "neg", "mul-scalar", "rsub-scalar", "add-self"],
)
@given(layout=layouts(dtype="float32", kinds=WRITABLE_KINDS))
def test_elementwise_result_keeps_input_layout(op, layout, device):
    # PyTorch lays an elementwise result out in the memory order of its input, so
    # ``(x.t() + 1).stride() == (1, 3)`` for a contiguous 3x2 ``x``.
    x, x_torch = layout.build(device=device), layout.build(torch)
    result, expected = op(x), op(x_torch)
    assert_close(result, expected)
    if result.numel() > 0:
        assert _layout_strides(result) == _layout_strides(expected)
        assert result.is_contiguous() == expected.is_contiguous()
