"""dtypes, PyTorch's type promotion (Python scalars and 0-d tensors included) and conversions."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, dtype_name, gt_dtype, needs_torch, torch
from strategies import ALL_DTYPES

import glasstorch as gt

# -- dtypes, promotion and conversions
#: Small values per dtype, chosen so that every operator below is defined
#: (no zero divisors, nothing that overflows).
LEFT = {
    "float32": [1.5, -2.0, 3.25],
    "float64": [1.5, -2.0, 3.25],
    "int64": [7, -3, 2],
    "int32": [7, -3, 2],
    "uint8": [7, 3, 2],
    "bool": [True, False, True],
}
RIGHT = {
    "float32": [0.5, 4.0, -1.5],
    "float64": [0.5, 4.0, -1.5],
    "int64": [2, 5, -3],
    "int32": [2, 5, -3],
    "uint8": [2, 5, 3],
    "bool": [True, True, True],
}

BINARY_OPERATORS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "lt": operator.lt,
    "eq": operator.eq,
    "ge": operator.ge,
}


def _make(lib, values, dtype: str, zero_dim: bool, device: str = "cpu"):
    if lib is gt:
        t = gt.tensor(values, dtype=gt_dtype(dtype), device=device)
    else:
        t = lib.tensor(values, dtype=getattr(lib, dtype))
    return t[1] if zero_dim else t


def _check_binary(a_gt, b_gt, a_torch, b_torch) -> None:
    """Every operator on glasstorch operands gives PyTorch's dtype, values and errors."""
    for name, op in BINARY_OPERATORS.items():
        try:
            expected = op(a_torch, b_torch)
        except NotImplementedError:  # a kernel PyTorch lacks for a dtype, outside the subset
            continue
        except Exception:  # PyTorch refuses (e.g. bool - bool): so must glasstorch
            assert_same_error(lambda op=op: op(a_gt, b_gt), lambda op=op: op(a_torch, b_torch))
            continue
        actual = op(a_gt, b_gt)
        assert dtype_name(actual.dtype) == dtype_name(expected.dtype), (
            f"{name}: {a_torch!r} , {b_torch!r}"
        )
        assert_close(actual, expected, atol=1e-6)


@pytest.mark.dtype
@needs_torch
@pytest.mark.parametrize("zero_dim", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("left, right", list(itertools.product(ALL_DTYPES, ALL_DTYPES)))
def test_tensor_tensor_promotion_matches_torch(left, right, zero_dim, device):
    a_gt, b_gt = (
        _make(gt, LEFT[left], left, zero_dim[0], device),
        _make(gt, RIGHT[right], right, zero_dim[1], device),
    )
    a_t, b_t = (
        _make(torch, LEFT[left], left, zero_dim[0]),
        _make(torch, RIGHT[right], right, zero_dim[1]),
    )
    _check_binary(a_gt, b_gt, a_t, b_t)


@pytest.mark.dtype
@needs_torch
@pytest.mark.parametrize("scalar", [2, -1.5, True], ids=["int", "float", "bool"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("zero_dim", [False, True], ids=["1d", "0d"])
def test_tensor_scalar_promotion_matches_torch(dtype, scalar, zero_dim, device):
    if dtype == "uint8" and scalar == -1.5:
        scalar = 1.5
    a_gt = _make(gt, LEFT[dtype], dtype, zero_dim, device)
    a_t = _make(torch, LEFT[dtype], dtype, zero_dim)
    _check_binary(a_gt, scalar, a_t, scalar)  # tensor op scalar
    b_gt, b_t = (
        _make(gt, RIGHT[dtype], dtype, zero_dim, device),
        _make(torch, RIGHT[dtype], dtype, zero_dim),
    )
    _check_binary(scalar, b_gt, scalar, b_t)  # reflected: scalar op tensor


# Hard-coded cases, so promotion is checked even where PyTorch is not installed.
@pytest.mark.dtype
@pytest.mark.parametrize(
    "left, right, expected",
    [
        (("int64", False), ("float32", False), "float32"),
        (("int32", False), ("int64", False), "int64"),
        (("uint8", False), ("int32", False), "int32"),
        (("bool", False), ("uint8", False), "uint8"),
        (("float32", False), ("float64", False), "float64"),
        (("float32", False), ("float64", True), "float32"),  # 0-d of same category loses
        (("int32", False), ("int64", True), "int32"),
        (("uint8", False), ("int64", True), "uint8"),
        (("int32", False), ("float64", True), "float64"),  # higher category: 0-d's dtype
        (("bool", False), ("int32", True), "int32"),
        (("int64", True), ("float64", True), "float64"),  # two 0-d tensors: ordinary rules
        (("float32", False), (2.5, None), "float32"),
        (("int32", False), (2, None), "int32"),
        (("uint8", False), (2, None), "uint8"),
        (("int64", False), (2.5, None), "float32"),
        (("bool", False), (2, None), "int64"),
        (("bool", False), (2.5, None), "float32"),
        (("bool", False), (True, None), "bool"),
        (("float64", False), (2, None), "float64"),
    ],
)
def test_promotion_table(left, right, expected, device):
    def operand(spec):
        value, zero_dim = spec
        if zero_dim is None:  # a Python scalar
            return value
        return gt.ones(() if zero_dim else (2,), dtype=gt_dtype(value), device=device)

    a, b = operand(left), operand(right)
    for result in (a + b, b + a):
        assert dtype_name(result.dtype) == expected
        assert result.device.type == device


@pytest.mark.dtype
def test_default_dtype_is_float32(device):
    made = [
        gt.tensor([1.0, 2.0], device=device),
        gt.zeros(2, device=device),
        gt.ones(2, 3, device=device),
        gt.rand(2, device=device),
        gt.tensor(1.5, device=device),
        gt.arange(3.0, device=device),
    ]
    for x in made:
        assert x.dtype == gt.float32
        assert x.device.type == device


@pytest.mark.dtype
def test_int_division_is_true_division(device):
    x = gt.tensor([1, 2, 3], device=device)
    assert_close(x / 2, np.array([0.5, 1.0, 1.5], dtype=np.float32))
    divisor = gt.tensor([2, 4, 8], device=device)
    assert_close(x / divisor, np.array([0.5, 0.5, 0.375], dtype=np.float32))
    assert_close(x // 2, np.array([0, 1, 1]))
    pair = gt.tensor([-7, 7], device=device)
    assert_close(pair // 2, np.array([-4, 3]))  # floor, like Python
    assert_close(pair % 3, np.array([2, 1]))  # sign of the divisor


@pytest.mark.dtype
@pytest.mark.parametrize(
    "alias, name",
    [("float", "float32"), ("double", "float64"), ("long", "int64"), ("int", "int32")],
)
def test_dtype_aliases(alias, name):
    assert getattr(gt, alias) == getattr(gt, name)


@pytest.mark.dtype
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtype_properties(name, device):
    dtype = gt_dtype(name)
    assert dtype.is_floating_point == (name in ("float32", "float64"))
    x = gt.zeros(2, dtype=dtype, device=device)
    assert x.dtype == dtype
    assert x.is_floating_point() == (name in ("float32", "float64"))
    assert x.element_size() == np.dtype(name).itemsize


SOURCE_VALUES = {
    "float32": [0.0, 1.5, -2.75, 3.0],
    "float64": [0.0, 1.5, -2.75, 3.0],
    "int64": [0, 1, -2, 3],
    "int32": [0, 1, -2, 3],
    "uint8": [0, 1, 200, 3],
    "bool": [False, True, True, False],
}


@pytest.mark.dtype
@pytest.mark.parametrize("target", ALL_DTYPES)
@pytest.mark.parametrize("source", ALL_DTYPES)
def test_to_dtype(source, target, device):
    values = SOURCE_VALUES[source]
    if target == "uint8" and source in ("float32", "float64"):
        values = [abs(v) for v in values]  # negative float -> uint8 is undefined in C
    array = np.array(values, dtype=source)
    x = gt.tensor(values, dtype=gt_dtype(source), device=device)
    y = x.to(gt_dtype(target))
    assert_close(y, array.astype(target))  # C casts: truncate toward zero, wrap integers
    if source == target:
        assert y is x  # .to() returns self when nothing changes, as in PyTorch
    else:
        y[0] = 1  # a copy: the source is untouched
        assert_close(x, array)


@pytest.mark.dtype
@pytest.mark.parametrize(
    "method, name",
    [
        ("float", "float32"),
        ("double", "float64"),
        ("long", "int64"),
        ("int", "int32"),
        ("bool", "bool"),
    ],
)
def test_conversion_methods(method, name, device):
    x = gt.tensor([0.0, -1.5, 2.5], device=device)
    y = getattr(x, method)()
    assert_close(y, np.array([0.0, -1.5, 2.5]).astype(name))


@pytest.mark.dtype
def test_to_accepts_keyword_and_tensor(device):
    x = gt.tensor([1, 2], device=device)
    assert x.to(dtype=gt.float64).dtype == gt.float64
    like = x.to(gt.zeros(1, dtype=gt.float32, device=device))
    assert like.dtype == gt.float32 and like.device.type == device
    assert x.to(device).dtype == gt.int64
    assert x.to(device) is x


@pytest.mark.dtype
@pytest.mark.parametrize(
    "dtype, other, message",
    [
        ("int64", 1.5, "result type Float can't be cast to the desired output type Long"),
        ("int32", 0.5, "result type Float can't be cast to the desired output type Int"),
        ("bool", 1, "result type Long can't be cast to the desired output type Bool"),
        ("uint8", 2.5, "result type Float can't be cast to the desired output type Byte"),
    ],
)
def test_inplace_result_that_cannot_be_cast_raises(dtype, other, message, device):
    def attempt(lib):
        on = {"device": device} if lib is gt else {}
        x = lib.tensor([1, 0, 1], dtype=getattr(lib, dtype), **on)
        x += other

    assert_same_error(
        lambda: attempt(gt),
        (lambda: attempt(torch)) if torch else None,
        exc_type=RuntimeError,
        match=message,
    )


@pytest.mark.dtype
def test_inplace_with_tensor_of_higher_category_raises(device):
    def attempt(lib):
        on = {"device": device} if lib is gt else {}
        x = lib.tensor([1, 2], **on)
        x.mul_(lib.tensor([0.5, 0.5], **on))

    assert_same_error(
        lambda: attempt(gt),
        (lambda: attempt(torch)) if torch else None,
        exc_type=RuntimeError,
        match="result type Float can't be cast to the desired output type Long",
    )


@pytest.mark.dtype
@pytest.mark.parametrize(
    "dtype, other, expected",
    [
        ("float32", ("float64", [0.25, 0.5]), [1.25, 2.5]),  # same category: cast down, allowed
        ("int32", ("int64", [3, 4]), [4, 6]),
        ("float32", ("int64", [3, 4]), [4.0, 6.0]),
        ("int64", ("bool", [True, False]), [2, 2]),
    ],
)
def test_inplace_keeps_self_dtype(dtype, other, expected, device):
    x = gt.tensor([1, 2], dtype=gt_dtype(dtype), device=device)
    x += gt.tensor(other[1], dtype=gt_dtype(other[0]), device=device)
    assert_close(x, np.array(expected, dtype=dtype))


# -- Half-precision names and torch.amp
@pytest.mark.nn
@pytest.mark.usefixtures("default_device")
@pytest.mark.errors
def test_half_precision_names_exist_but_make_no_tensors():
    assert repr(gt.float16) == "torch.float16" and gt.half is gt.float16
    assert repr(gt.bfloat16) == "torch.bfloat16"
    with pytest.raises(TypeError, match="no torch.float16 tensors"):
        gt.zeros(2, dtype=gt.float16)


@pytest.mark.nn
@pytest.mark.usefixtures("default_device")
def test_amp_autocast_and_grad_scaler():
    w = gt.tensor([1.0, -2.0], requires_grad=True)
    optimizer = gt.optim.SGD([w], lr=0.5)
    scaler = gt.amp.GradScaler(init_scale=4.0, growth_interval=1)
    with gt.autocast(device_type="cpu", dtype=gt.bfloat16):
        loss = (w * w).sum()
    scaler.scale(loss).backward()
    assert w.grad.tolist() == [8.0, -16.0]  # scaled by 4
    scaler.step(optimizer)  # unscales first: the step uses 2w
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 8.0
    w.grad = gt.tensor([float("inf"), 0.0])
    scaler.step(optimizer)  # skipped
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 4.0
    off = gt.amp.GradScaler(enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0
