"""Errors and results at the edges, as PyTorch gives them: one class of fuzzer finding per section.

Each class has its cases here, run on the active tier against PyTorch (when it
is installed) or against the behaviour PyTorch documents:

* ``index_add`` into an empty tensor of two or more dims: nothing to add to,
  the indices are not checked;
* ``index_add``'s bounds error: PyTorch's wording depends on the dim;
* ``tensor(data, dtype=<integer>)`` of data that mixes ints and floats: each
  value is checked and converted by its own Python type;
* (with ``--device=cuda``) results with no element made on the inputs' device,
  and joins of tensors on two devices refused;
* numerics at the edges: float32 var/std, gradients at ties, NaN and zeros (first
  and second), x86's float-to-int conversion, loss dtypes, cat's empty gradients.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, default_device, needs_torch, torch

import glasstorch as gt

pytestmark = pytest.mark.errors


def _on(device, call):
    """``call(gt)`` with glasstorch's factory functions allocating on ``device``."""
    with default_device(device):
        return call(gt)


def _same_outcome_as_torch(call, device="cpu") -> None:
    """``call(lib)`` on glasstorch (its tensors made on ``device``) does what it does on
    PyTorch: the same error (class and message), or a result close to PyTorch's."""
    try:
        expected = call(torch)
    except Exception as error:  # noqa: BLE001 - PyTorch's error is the expectation
        assert_same_error(
            lambda: _on(device, call), lambda: call(torch), match=re.escape(str(error))
        )
        return
    assert_close(_on(device, call), expected)


def _index_add(lib, shape, dim, index, inplace=False):
    """``index_add`` of ones into zeros of ``shape`` at ``index`` along ``dim``."""
    source_shape = list(shape)
    source_shape[dim] = len(index)
    x = lib.zeros(shape)
    args = (dim, lib.tensor(index, dtype=lib.int64), lib.ones(source_shape))
    return x.index_add_(*args) if inplace else lib.index_add(x, *args)


# ------------------------------------------------ 1. index_add into an empty tensor

EMPTY_CASES = [
    ((2, 0), 1, [3, 0]),
    ((1, 0), -1, [0, 0]),
    ((0, 3), 0, [7]),
    ((2, 2, 0, 2), -2, [0, -1]),
]


@pytest.mark.indexing
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("shape, dim, index", EMPTY_CASES)
def test_index_add_into_empty_checks_no_index(shape, dim, index, inplace, device):
    out = _on(device, lambda lib: _index_add(lib, shape, dim, index, inplace))
    expected = _index_add(torch, shape, dim, index, inplace) if torch else np.zeros(shape)
    assert_close(out, expected, check_dtype=torch is not None)


@pytest.mark.indexing
def test_index_add_into_empty_one_dim_still_checks(device):
    assert_same_error(
        lambda: _on(device, lambda lib: _index_add(lib, (0,), 0, [7])),
        (lambda: _index_add(torch, (0,), 0, [7])) if torch else None,
        exc_type=IndexError,
        match="^index out of range in self$",
    )


# ---------------------------------------------------- 2. index_add's bounds error

MIDDLE = "^index out of range in self$"

BOUNDS_CASES = [
    ((3, 2), 0, [7], RuntimeError, "index 7 is out of bounds for dimension 0 with size 3"),
    ((3, 2), 1, [-1], RuntimeError, "index -1 is out of bounds for dimension 1 with size 2"),
    ((2, 3, 2), 2, [0, 9], RuntimeError, "index 9 is out of bounds for dimension 2 with size 2"),
    ((2, 3, 2), 1, [9], IndexError, MIDDLE),
    ((2, 2, 1, 2), 1, [0, -1, 1], IndexError, MIDDLE),
    ((2, 2, 1, 2), 2, [5], IndexError, MIDDLE),
    ((4,), 0, [4], IndexError, MIDDLE),
]


@pytest.mark.indexing
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("shape, dim, index, exc_type, match", BOUNDS_CASES)
def test_index_add_bounds_error_as_pytorch(shape, dim, index, exc_type, match, inplace, device):
    if not match.startswith("^"):
        match = "^" + re.escape(match) + "$"
    assert_same_error(
        lambda: _on(device, lambda lib: _index_add(lib, shape, dim, index, inplace)),
        (lambda: _index_add(torch, shape, dim, index, inplace)) if torch else None,
        exc_type=exc_type,
        match=match,
    )


# ------------------------------------ 3. tensor() of mixed ints and floats, integer dtype

MIXED_VALUES = [
    ([[-2, 5], [True, 2.0], [2.0, True]], "uint8", [[254, 5], [1, 2], [2, 1]]),
    ([-2, 2.0], "uint8", [254, 2]),
    ([-129, 2.0], "uint8", [127, 2]),
    ([-3.7, 2], "int32", [-3, 2]),
    ([[True], [-2.5]], "int64", [[1], [-2]]),
]


@pytest.mark.creation
@pytest.mark.parametrize("data, dtype, values", MIXED_VALUES)
def test_tensor_mixed_ints_and_floats(data, dtype, values, device):
    out = gt.tensor(data, dtype=getattr(gt, dtype), device=device)
    expected = torch.tensor(data, dtype=getattr(torch, dtype)) if torch else None
    assert_close(out, expected if torch else np.array(values, dtype=dtype))


MIXED_OVERFLOWS = [
    ([300, 2.0], "uint8"),
    ([-2.5, 1], "uint8"),
    ([-256, 1.0], "uint8"),
    ([-256], "uint8"),
    ([255.5, 1], "uint8"),
    ([float("inf"), 1], "int32"),
]


@pytest.mark.creation
@pytest.mark.parametrize("data, dtype", MIXED_OVERFLOWS)
def test_tensor_mixed_overflow(data, dtype, device):
    assert_same_error(
        lambda: gt.tensor(data, dtype=getattr(gt, dtype), device=device),
        (lambda: torch.tensor(data, dtype=getattr(torch, dtype))) if torch else None,
        exc_type=RuntimeError,
        match=f"^value cannot be converted to type {dtype} without overflow$",
    )


# ----------------------------------------- 4. arange of an integer dtype smaller than int64

ARANGE_CASES = [
    (0, 0, 0.5),
    (0, 1, 0.5),
    (0, 10, 1.5),
    (0.5, 5.5, 1.5),
    (-2.5, 3, 0.7),
    (2.5, 0, -0.5),
    (0, 3.5, 1),
    (1.5, 7, 2.5),
]


@needs_torch
@pytest.mark.creation
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
@pytest.mark.parametrize("start, end, step", ARANGE_CASES)
def test_arange_integer_dtypes(start, end, step, dtype, device):
    """int64 counts from the truncated ends and step; smaller dtypes from those given."""
    gt_call = lambda: gt.arange(start, end, step, dtype=getattr(gt, dtype), device=device)  # noqa: E731
    torch_call = lambda: torch.arange(start, end, step, dtype=getattr(torch, dtype))  # noqa: E731
    try:
        expected = torch_call()
    except ValueError:
        assert_same_error(gt_call, torch_call, exc_type=ValueError, match="^step must be nonzero$")
        return
    assert_close(gt_call(), expected)


@needs_torch
@pytest.mark.creation
def test_arange_sign_error_wording(device):
    assert_same_error(
        lambda: gt.arange(1, 0, 0.5, device=device),
        lambda: torch.arange(1, 0, 0.5),
        exc_type=RuntimeError,
        match="^upper bound and lower bound inconsistent with step sign$",
    )


# ------------------------------------------- 5. linspace of integer dtypes; bool ranges

LINSPACE_CASES = [
    ((-2.5, 3.5, 5), "int64"),
    ((-2.5, 3.5, 5), "int32"),
    ((-3, 3, 7), "uint8"),
    ((-255, 3, 5), "uint8"),
    ((-3, 300, 1), "uint8"),
    ((-1.5, 3, 1), "int32"),
    ((2.5, 3, 1), "bool"),
    ((0, 3, 0), "bool"),
]


@needs_torch
@pytest.mark.creation
@pytest.mark.parametrize("args, dtype", LINSPACE_CASES)
def test_linspace_integer_dtypes(args, dtype, device):
    """An integer linspace spaces its ends converted to the dtype (PyTorch's rule)."""
    expected = torch.linspace(*args, dtype=getattr(torch, dtype))
    assert_close(gt.linspace(*args, dtype=getattr(gt, dtype), device=device), expected)


CREATION_ERRORS = [
    ("linspace", (-2.5, 3.5, 5), "uint8", RuntimeError, "type uint8_t without overflow"),
    ("linspace", (-3, 300, 2), "uint8", RuntimeError, "type uint8_t without overflow"),
    ("linspace", (-(2**40), 3, 5), "int32", RuntimeError, "type int without overflow"),
    ("linspace", (1.5, 3, 2), "bool", NotImplementedError, "linspace_cpu"),
    ("arange", (0, 3), "bool", NotImplementedError, "arange_cpu"),
    ("arange", (2.5, 0, 0.5), "bool", NotImplementedError, "arange_cpu"),
    ("full", ((1,), -256), "uint8", RuntimeError, "type uint8_t without overflow"),
]


@pytest.mark.creation
@pytest.mark.parametrize("name, args, dtype, exc_type, match", CREATION_ERRORS)
def test_creation_errors_as_pytorch(name, args, dtype, exc_type, match, device):
    assert_same_error(
        lambda: getattr(gt, name)(*args, dtype=getattr(gt, dtype), device=device),
        (lambda: getattr(torch, name)(*args, dtype=getattr(torch, dtype))) if torch else None,
        exc_type=exc_type,
        match=match,
    )


# ---------------------------------------------------- 6. index_select's bounds error

INDEX_SELECT_CASES = [
    ((1, 2, 1), -2, [1, 0, -1]),
    ((2, 3, 2), 1, [5]),
    ((2, 3, 2), 2, [5]),
    ((2, 3), 0, [2]),
    ((3, 2), 1, [-1]),
    ((0, 3), 1, [5]),
    ((0, 3, 2), 2, [0, 7]),
    ((3, 0), 0, [-1]),
    ((2, 0), 1, [0]),
    ((0,), 0, [5]),
    ((), 0, [0, 7]),
    ((), 0, []),
]


@needs_torch
@pytest.mark.indexing
@pytest.mark.parametrize("shape, dim, index", INDEX_SELECT_CASES)
def test_index_select_bounds_error_as_pytorch(shape, dim, index, device):
    def call(lib):
        return lib.index_select(lib.zeros(shape), dim, lib.tensor(index, dtype=lib.int64))

    try:
        call(torch)
    except Exception as error:  # noqa: BLE001 - PyTorch's error is the expectation
        assert_same_error(
            lambda: _on(device, call), lambda: call(torch), match=re.escape(str(error))
        )
    else:
        pytest.fail("PyTorch accepted an index out of range")


# --------------------------------------------- 7. cumsum/cumprod: in-place and bool

RUNNING_CASES = [
    "T.tensor(False).cumsum_(-1)",
    "T.tensor(True).cumprod_(0)",
    "T.tensor([], dtype=T.bool).cumsum_(0)",
    "T.tensor([3, 100], dtype=T.uint8).cumprod_(0)",
    "T.tensor([200, 100], dtype=T.uint8).cumsum_(0)",
    "T.tensor(False).cumsum(-1, dtype=T.bool)",
    "T.tensor([True, False]).cumsum(0)",
    "T.tensor([True, False]).cumsum(0, dtype=T.bool)",
    "T.tensor([True, False]).cumprod(0, dtype=T.bool)",
    "T.tensor([True, True]).cumsum_(0)",
    "T.tensor([True, True]).cumprod_(0)",
    "T.tensor([2.5]).cumsum_(0, dtype=T.int64)",
    "T.tensor([2]).cumprod_(0, dtype=T.float32)",
    "T.tensor(1.0).cumprod_(0, dtype=T.int64)",
    "T.tensor([1.0]).cumsum_(3, dtype=T.int64)",
]


@needs_torch
@pytest.mark.reduction
@pytest.mark.parametrize("expr", RUNNING_CASES)
def test_running_sum_and_product_as_pytorch(expr, device):
    def call(lib):
        return eval(expr, {"T": lib})  # noqa: S307 - a fixed expression from the list above

    _same_outcome_as_torch(call, device)


# ------------------------------------------------ 8. rand/randn of a non-float dtype

RANDOM_CASES = [
    "T.randn((2, 4), dtype=T.int64)",
    "T.randn((2,), dtype=T.bool)",
    "T.randn((0, 3, 4), dtype=T.int64)",
    "T.rand((2, 4), dtype=T.int32)",
    "T.rand((0,), dtype=T.uint8)",
    "T.rand(-1, dtype=T.int64)",
]


@needs_torch
@pytest.mark.random
@pytest.mark.parametrize("expr", RANDOM_CASES)
def test_random_of_non_float_dtype_as_pytorch(expr, device):
    def call(lib):
        return eval(expr, {"T": lib})  # noqa: S307 - a fixed expression from the list above

    _same_outcome_as_torch(call, device)


# ----------------------------------------------------------- 9. int32 index tensors

INDEX_DTYPE_CASES = [
    "T.gather(x, 1, i.reshape(1, 2))",
    "T.scatter(x, 1, i.reshape(1, 2), 5.0)",
    "T.scatter_add(x, 1, i.reshape(1, 2), T.ones(1, 2))",
    "T.index_select(x, 1, i)",
    "T.index_add(x, 1, i, T.ones(2, 2))",
    "T.index_copy(x, 1, i, T.ones(2, 2))",
    "T.index_select(x, 5, i)",
    "T.gather(x, 5, i.reshape(1, 2))",
    "T.scatter_add(x, 5, i.reshape(1, 2), T.ones(1, 2))",
    "T.index_add(x, 0, i + 7, T.ones(2, 3))",
    "T.gather(x, 1, i[:0].reshape(0, 1))",
    "T.scatter(x, 1, i[:0].reshape(0, 1), -1.5)",
    "T.index_select(x, 1, i[:0])",
]


@needs_torch
@pytest.mark.indexing
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "bool"])
@pytest.mark.parametrize("expr", INDEX_DTYPE_CASES)
def test_index_tensor_dtypes_as_pytorch(expr, dtype, device):
    def call(lib):
        x, i = lib.arange(6.0).reshape(2, 3), lib.tensor([0, 1], dtype=getattr(lib, dtype))
        return eval(expr, {"T": lib, "x": x, "i": i})  # noqa: S307 - a fixed expression

    _same_outcome_as_torch(call, device)


# ------------------------------------------------- 10. logical_* take tensors only

LOGICAL_CASES = [
    "T.logical_and(x, True)",
    "T.logical_and(1, x)",
    "T.logical_or(x, 0)",
    "T.logical_xor(x, 1.5)",
    "T.logical_not(1)",
]


@needs_torch
@pytest.mark.math
@pytest.mark.parametrize("expr", LOGICAL_CASES)
def test_logical_ops_refuse_numbers(expr, device):
    def call(lib):
        return eval(expr, {"T": lib, "x": lib.tensor([0.0, 2.0])})  # noqa: S307 - fixed

    error = assert_same_error(lambda: _on(device, call), lambda: call(torch), exc_type=TypeError)
    assert "must be Tensor, not" in str(error)


# ------------------------------------------- 11. take's index; argmax/argmin of bool

TAKE_AND_ARG_CASES = [
    "T.take(x, T.tensor([0, 1], dtype=T.int32))",
    "T.take(x, T.tensor([0.0, 1.0]))",
    "T.take(x, T.tensor([True]))",
    "T.take(x, T.tensor([[3, -7, 9]]))",
    "T.take(x, T.tensor([-1, 4]))",
    "T.take(T.zeros(0), T.tensor([0]))",
    "T.argmax(T.tensor([True, False]))",
    "T.argmin(T.tensor([True, False]), 0)",
    "T.argmax(T.tensor([], dtype=T.bool))",
    "T.argmax(T.tensor([True]), 5)",
]


@needs_torch
@pytest.mark.indexing
@pytest.mark.parametrize("expr", TAKE_AND_ARG_CASES)
def test_take_and_arg_extremes_as_pytorch(expr, device):
    def call(lib):
        return eval(expr, {"T": lib, "x": lib.arange(6.0).reshape(2, 3)})  # noqa: S307 - fixed

    _same_outcome_as_torch(call, device)


# ------------------------------------------------ 12. index_add's argument checks

INDEX_ADD_CHECKS = [
    "T.index_add(T.tensor(0.0), -1, T.tensor([], dtype=T.int64), T.tensor(2.0))",
    "T.index_add(T.zeros(2, 3), 0, T.tensor([0]), T.ones(2, 3))",
    "T.index_add(T.zeros(2, 3), 1, T.tensor([0, 1]), T.ones(3, 2))",
    "T.index_add(T.zeros(2, 3), 0, T.tensor([0]), T.ones(3))",
    "T.index_add(T.zeros(3), 0, T.tensor([0]), T.tensor(1.0))",
    "T.index_add(T.zeros(2, 3), 0, T.tensor([[0]]), T.ones(1, 3))",
    "T.index_add(T.zeros(3), 0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.index_add(T.zeros(3, 2), 1, T.tensor([0]), T.ones(3))",
    "T.index_add(T.tensor(1.0), 0, T.tensor(0), T.tensor(2.0))",
    "T.index_add(T.zeros(3, 2), 1, T.tensor([1, 0], dtype=T.int32), T.ones(3, 2), alpha=2)",
]


@needs_torch
@pytest.mark.indexing
@pytest.mark.parametrize("expr", INDEX_ADD_CHECKS)
def test_index_add_checks_as_pytorch(expr, device):
    def call(lib):
        return eval(expr, {"T": lib})  # noqa: S307 - a fixed expression from the list above

    _same_outcome_as_torch(call, device)


# ------------------------------------------------ 13. flip: repeats named in turn

FLIP_CASES = [(0, -3, 5), (5, 0, 0), (1, 0, -3), (2, -1)]


@pytest.mark.views
@pytest.mark.parametrize("dims", FLIP_CASES)
def test_flip_dim_errors_in_order(dims, device):
    def call(lib):
        return lib.flip(lib.zeros(3, 4, 3), dims)

    expected_error = None
    try:
        call(torch) if torch else None
    except Exception as error:  # noqa: BLE001 - PyTorch's error is the expectation
        expected_error = error
    assert expected_error is not None or torch is None
    match = re.escape(str(expected_error)) if expected_error else "appears multiple times|range"
    assert_same_error(
        lambda: _on(device, call), (lambda: call(torch)) if torch else None, match=match
    )


# ------------------------------------- 14. the fuzzer's own comparison of numbers


@pytest.mark.errors
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1.5, 7])
def test_fuzzer_compares_equal_numbers_as_equal(value):
    from fuzz_driver import same

    assert same(("scalar", value), ("scalar", value)) is None
    assert same(("scalar", float("inf")), ("scalar", float("-inf"))) is not None


# --------------------------------- 15. clamp of an integer tensor with a float bound

CLAMP_CASES = [
    "T.clamp(x, -5, 1.0)",
    "T.clamp(x, -5.5, 3)",
    "T.clamp(x, None, 2.5)",
    "T.clamp(x, -5)",
    "T.clamp(x.int(), -5, 1.5)",
]


@needs_torch
@pytest.mark.math
@pytest.mark.parametrize("expr", CLAMP_CASES)
def test_clamp_integer_input_in_result_dtype(expr, device):
    def call(lib):
        x = lib.tensor([2, 1, 6, 7, 0, 12], dtype=lib.uint8)
        return eval(expr, {"T": lib, "x": x})  # noqa: S307 - a fixed expression

    assert_close(_on(device, call), call(torch))


# ------------------------------- 16. results on the device of the inputs (--device cuda)

EMPTY_RESULT_CASES = [
    "T.cat([T.tensor([])])",
    "T.cat([T.tensor([]), T.tensor([], dtype=T.int64)], -1)",
    "T.cat(T.split(T.tensor([], dtype=T.int64), 1, -1), -1)",
    "T.index_select(T.zeros(0, 4)[::2], 1, T.tensor([3]))",
    "T.index_select(T.zeros(2, 0, 2), 2, T.tensor([], dtype=T.int64))",
    "T.flip(T.zeros(4, 1, 0), (-2,))",
    "T.flip(T.tensor([]), (0,))",
]


@needs_torch
@pytest.mark.views
@pytest.mark.parametrize("expr", EMPTY_RESULT_CASES)
def test_empty_results_are_made_on_the_inputs_device(expr, device):
    """With no element to compute, no kernel runs to place the result: it is made there."""

    def call(lib):
        return eval(expr, {"T": lib})  # noqa: S307 - a fixed expression from the list above

    _same_outcome_as_torch(call, device)  # assert_close checks the device too


def test_gradient_of_cumsum_over_nothing_stays_on_the_device(device):
    x = gt.zeros(0, dtype=gt.float64, requires_grad=True, device=device)
    x.cumsum(0).sum().backward()  # CumsumBackward0 flips the (empty) gradient
    assert x.grad.device.type == device and tuple(x.grad.shape) == (0,)


@pytest.mark.parametrize("name", ["cat", "stack"])
def test_joining_tensors_of_two_devices_is_an_error(name, device):
    if device == "cpu":
        pytest.skip("needs a second device: runs with --device=cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        getattr(gt, name)([gt.ones(2, device=device), gt.ones(2)])


@pytest.mark.parametrize("name", ["logical_and_", "logical_or_", "logical_xor_"])
def test_logical_inplace_checks_the_argument_type_before_the_overlap(name, device):
    """A number as ``other`` is a TypeError, even on an expanded tensor (fuzz seed 372912505)."""
    expanded = gt.tensor([2.637], dtype=gt.float64, device=device).expand(2)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 1\) must be"):
        getattr(expanded, name)(True)
    x = gt.tensor([1.0, 0.0, 2.0], device=device)
    getattr(x, name)(gt.tensor([0.0, 0.0, 3.0], device=device))
    assert x.device.type == device
    expected = {"logical_and_": [0.0, 0.0, 1.0], "logical_or_": [1.0, 0.0, 1.0]}
    expected["logical_xor_"] = [1.0, 0.0, 0.0]
    assert x.tolist() == expected[name]


@needs_torch
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
@pytest.mark.parametrize("divisor", [-6, 6, -1, 7])
def test_integer_trunc_division_divides_as_the_dtype_holds_the_numbers(dtype, divisor, device):
    """``div(..., rounding_mode="trunc")`` on integers is exact integer division of the
    operands converted to the result dtype (-6 as uint8 is 250; fuzz seed 7, case 656)."""
    values = [0, 5, 6, 7, 100, 200, 255] if dtype == "uint8" else [-100, -7, -6, -5, 0, 5, 6, 7]

    for tensor_divisor in (False, True):

        def call(lib, tensor_divisor=tensor_divisor):
            x = lib.tensor(values, dtype=getattr(lib, dtype))
            return x.div(lib.tensor(divisor) if tensor_divisor else divisor, rounding_mode="trunc")

        _same_outcome_as_torch(call, device)


@needs_torch
def test_integer_trunc_division_by_zero(device):
    assert_same_error(
        lambda: gt.tensor([5, -7], device=device).div(0, rounding_mode="trunc"),
        lambda: torch.tensor([5, -7]).div(0, rounding_mode="trunc"),
        match="ZeroDivisionError",
        exc_type=RuntimeError,
    )


INDEXED_WRITES = {
    "index_add_": lambda lib, x: x.index_add_(2, lib.tensor([0]), lib.ones(2, 1)),
    "index_copy_": lambda lib, x: x.index_copy_(3, lib.tensor([0]), lib.ones(2, 1)),
    "scatter_": lambda lib, x: x.scatter_(4, lib.tensor([[0]]), 1.0),
    "scatter_add_": lambda lib, x: x.scatter_add_(-3, lib.tensor([[0]]), lib.ones(1, 1)),
}


@needs_torch
@pytest.mark.parametrize("name", INDEXED_WRITES)
def test_indexed_writes_check_the_dim_before_the_overlap(name, device):
    """On an expanded tensor a bad dim is PyTorch's IndexError, not the overlap error
    (fuzz seeds 7 and 4567)."""

    def call(lib, on=None):
        x = lib.zeros(3, **({"device": on} if on else {})).expand(2, 3)
        return INDEXED_WRITES[name](lib, x)

    assert_same_error(
        lambda: call(gt, device),
        lambda: call(torch),
        match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got -?\d\)$",
        exc_type=IndexError,
    )


# ------------------------------ 17. var and std of float32: squares summed in float64
# (std near 3e38 gave inf, and 1e-30 gave 0, where PyTorch gives a number)

VARIANCE_CASES = [
    ([3e38, 1.0, -2.0], None),  # one distance of 3e38: its square overflows float32
    ([[3e38, 3.1e38, 2.9e38], [1.0, 2.0, 4.0]], 1),
    ([[2e20, -1e20], [1.0, 3.0], [0.5, 0.5]], 1),
    ([1e-30, 2e-30, 3e-30], 0),  # squares of 1e-30 underflow to 0 in float32
    ([[1e-25, -1e-25, 3e-25, 0.0]], (0, 1)),
]


def _variance_expected(values, dim, name):
    """float64 two-pass variance (or std) of the float32 values, rounded to float32."""
    data = np.array(values, dtype=np.float32).astype(np.float64)
    axis = None if dim is None else dim
    var = data.var(axis=axis, ddof=1)
    return np.asarray(np.sqrt(var) if name == "std" else var).astype(np.float32)


@pytest.mark.reduction
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize(("values", "dim"), VARIANCE_CASES)
def test_float32_variance_accumulates_in_float64(name, values, dim, device):
    x = gt.tensor(values, dtype=gt.float32, device=device)
    actual = getattr(gt, name)(x) if dim is None else getattr(gt, name)(x, dim)
    with np.errstate(over="ignore"):
        expected = _variance_expected(values, dim, name)
    assert_close(actual, expected)
    if torch is not None:
        t = torch.tensor(values, dtype=torch.float32)
        assert_close(
            actual, getattr(torch, name)(t) if dim is None else getattr(torch, name)(t, dim)
        )


@pytest.mark.reduction
def test_float32_variance_of_one_result_keeps_a_float32_mean(device):
    """A whole-tensor std takes the mean in float32 first (as PyTorch), so a mean
    that overflows float32 makes it inf; with a dim the mean stays in float64."""
    values = [[3e38, 3e38], [3e38, 3e38]]
    x = gt.tensor(values, dtype=gt.float32, device=device)
    assert float(x.std()) == float("inf")
    assert_close(x.std(0), np.zeros(2, dtype=np.float32))
    if torch is not None:
        t = torch.tensor(values, dtype=torch.float32)
        assert_close(x.std(0), t.std(0))
        assert float(t.std()) == float("inf")


# ------------------------------------------ 18. gradients of std, maximum, clamp, prod


def _grads(lib, make, function, create_graph):
    """First (and with ``create_graph``, second) derivatives of ``function`` at ``make``."""
    inputs = make(lib)
    out = function(lib, *inputs)
    weights = lib.arange(1, out.numel() + 1, dtype=lib.float64).reshape(out.shape)
    first = lib.autograd.grad((out * weights).sum(), inputs, create_graph=create_graph)
    if not create_graph:
        return list(first)
    total = sum((g * g).sum() for g in first)
    if not total.requires_grad:  # a piecewise-linear function: no second derivative
        return list(first) + [None] * len(inputs)
    return list(first) + list(lib.autograd.grad(total, inputs, allow_unused=True))


def _tensors(*rows):
    return lambda lib: [lib.tensor(r, dtype=lib.float64, requires_grad=True) for r in rows]


NAN = float("nan")
GRADIENT_CASES = {
    # std of a constant slice is 0: PyTorch's gradient there is 0, not grad / 0
    "std-constant": (_tensors([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]), lambda T, a: a.std(1)),
    "std-whole": (_tensors([2.0, 2.0]), lambda T, a: a.std()),
    # maximum/minimum: ties share the gradient, a NaN sends it to both operands
    "maximum-ties-nan": (
        _tensors([1.0, 2.0, NAN, 3.0, 0.5], [1.0, 3.0, 1.0, NAN, 0.5]),
        lambda T, a, b: T.maximum(a, b),
    ),
    "minimum-ties-nan": (
        _tensors([1.0, 2.0, NAN, 3.0], [1.0, 3.0, 1.0, NAN]),
        lambda T, a, b: T.minimum(a, b),
    ),
    "maximum-ties-nan-squared": (
        _tensors([1.0, 2.0, NAN, 3.0], [1.0, 3.0, 1.0, NAN]),
        lambda T, a, b: T.maximum(a, b) ** 2,
    ),
    "maximum-squared": (
        _tensors([1.0, 2.0, -1.0], [1.0, 1.5, 2.0]),
        lambda T, a, b: T.maximum(a, b) ** 2,
    ),
    # clamp: an input outside the bounds (or NaN) gets exactly 0, even from an inf grad
    "clamp-nan": (_tensors([NAN, 0.5, 3.0, -2.0]), lambda T, a: a.clamp(-1.0, 1.0)),
    "clamp-inf-grad": (_tensors([1e308, 0.5, 3.0]), lambda T, a: (a * 10).clamp(max=1.0)),
    # prod: zeros, two zeros (the second derivative is not 0), along a dim and whole
    "prod-one-zero": (_tensors([2.0, 0.0, 3.0, 4.0]), lambda T, a: a.prod()),
    "prod-two-zeros": (_tensors([0.0, 0.0, 3.0]), lambda T, a: a.prod()),
    "prod-dim-zeros": (
        _tensors([[1.0, 2.0, 0.0], [2.0, 0.0, 0.0], [3.0, 4.0, 5.0]]),
        lambda T, a: a.prod(1),
    ),
    "prod-dim-keepdim": (
        _tensors([[1.5, 0.0], [2.0, -1.0]]),
        lambda T, a: a.prod(0, keepdim=True),
    ),
}

#: The gradients with ``create_graph`` (first and second), worked by hand, for the
#: cases a NumPy user can check without PyTorch: ``d/da`` of ``sum(w * f)``.
HAND_WORKED = {
    # std of [1,1,1] has gradient 0; maximum ties share 1/2, NaN rows send w to both
    "maximum-ties-nan": [[0.5, 0.0, 3.0, 4.0, 2.5], [0.5, 2.0, 3.0, 4.0, 2.5]],
    "clamp-nan": [[0.0, 2.0, 0.0, 0.0]],
    # prod of [0, 0, 3]: the products of the others are [0, 0, 0]
    "prod-two-zeros": [[0.0, 0.0, 0.0]],
}


@pytest.mark.autograd
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", list(GRADIENT_CASES))
def test_gradients_at_ties_nan_and_zeros(name, create_graph, device):
    make, function = GRADIENT_CASES[name]
    with default_device(device):
        actual = _grads(gt, make, function, create_graph)
    if name in HAND_WORKED:
        for got, want in zip(actual, HAND_WORKED[name]):
            assert_close(got, np.array(want))
    if name == "std-constant":
        assert_close(actual[0][0], np.zeros(3))  # the constant row
    if torch is not None:
        expected = _grads(torch, make, function, create_graph)
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected):
            if want is None or got is None:  # None and zeros are the same gradient
                present = got if want is None else want
                assert present is None or not np.any(np.nan_to_num(present.detach().cpu().numpy()))
            else:
                assert_close(got, want)


@pytest.mark.autograd
def test_second_derivative_of_a_product_with_two_zeros(device):
    """d2 prod(a) / da0 da1 at [0, 0, 3] is 3, though every first derivative is 0."""
    a = gt.tensor([0.0, 0.0, 3.0], dtype=gt.float64, requires_grad=True, device=device)
    (first,) = gt.autograd.grad(a.prod(), a, create_graph=True)
    (second,) = gt.autograd.grad(first[0], a)
    assert_close(second, np.array([0.0, 3.0, 0.0]))


# --------------------------------------- 19. float -> int32/int64 as x86 converts them

CAST_VALUES = [
    NAN, float("inf"), float("-inf"), 2.0**31, -(2.0**31) - 1, -(2.0**31) - 0.5,
    2.0**32 + 257, 3e10, -3e10, 2.0**63, 1e19, -1e19, -(2.0**63), 1e30,
    2.7, -2.7, 300.0, -1.0,
]  # fmt: skip


def _x86_cast(value: float, bits: int) -> int:
    """What cvttsd2si gives: the truncated value if it fits, else the type's minimum."""
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)
    if value != value or not (low - 1 < value < high):
        return low
    return int(value)


@pytest.mark.dtype
@pytest.mark.parametrize("source", ["float32", "float64"])
@pytest.mark.parametrize(("method", "bits"), [("long", 64), ("int", 32), ("byte", 8)])
def test_out_of_range_floats_convert_as_x86(source, method, bits, device):
    x = gt.tensor(CAST_VALUES, dtype=getattr(gt, source), device=device)
    stored = [float(np.array(v, dtype=source)) for v in CAST_VALUES]  # float32 rounds first
    if bits == 8:  # uint8 goes through int64, then keeps its low 8 bits
        expected = [_x86_cast(v, 64) % 256 for v in stored]
    else:
        expected = [_x86_cast(v, bits) for v in stored]
    assert getattr(x, method)().cpu().tolist() == expected
    if torch is not None:
        t = torch.tensor(CAST_VALUES, dtype=getattr(torch, source))
        assert getattr(x, method)().cpu().tolist() == getattr(t, method)().tolist()


# --------------------------------------------- 20. loss dtypes with a target of another float

LOSS_DTYPE_CASES = [
    # (loss, input dtype, target dtype, result dtype as PyTorch gives it)
    ("huber_loss", "float32", "float64", "float32"),
    ("huber_loss", "float64", "float32", "float64"),
    ("soft_margin_loss", "float32", "float64", "float32"),
    ("binary_cross_entropy_with_logits", "float32", "float64", "float64"),
    ("binary_cross_entropy_with_logits", "float64", "float32", "float32"),
    ("mse_loss", "float32", "float64", "float64"),
]


@pytest.mark.nn
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize(("loss", "input_dtype", "target_dtype", "result"), LOSS_DTYPE_CASES)
def test_loss_result_dtype_with_mixed_float_target(
    loss, input_dtype, target_dtype, result, reduction, device
):
    def call(lib):
        x = lib.tensor([0.2, -0.7, 2.4], dtype=getattr(lib, input_dtype))
        y = lib.tensor([0.5, 0.1, 0.4], dtype=getattr(lib, target_dtype))
        return getattr(lib.nn.functional, loss)(x, y, reduction=reduction)

    actual = _on(device, call)
    assert actual.dtype is getattr(gt, result)
    if torch is not None:
        assert_close(actual, call(torch))


@pytest.mark.nn
def test_binary_cross_entropy_refuses_a_target_of_another_dtype(device):
    x = gt.tensor([0.2, 0.7], device=device)
    y = gt.tensor([0.5, 0.1], dtype=gt.float64, device=device)
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        gt.nn.functional.binary_cross_entropy(x, y)


# ------------------------------------------------ 21. cat of empty tensors: their gradient


@pytest.mark.autograd
@pytest.mark.parametrize(("empty_shape", "dim"), [((0,), 0), ((0,), 1), ((2, 0), 1), ((0, 3), 0)])
def test_cat_gives_empty_inputs_an_empty_gradient(empty_shape, dim, device):
    """PyTorch's gradient of an empty input (the legacy ``(0,)`` one too) is an
    empty tensor of its shape, not None."""
    empty = gt.zeros(empty_shape, dtype=gt.float64, requires_grad=True, device=device)
    full = gt.ones((2, 3), dtype=gt.float64, requires_grad=True, device=device)
    gt.cat([empty, full], dim).sum().backward()
    assert empty.grad is not None and tuple(empty.grad.shape) == empty_shape
    assert empty.grad.dtype is gt.float64
    assert_close(full.grad, np.ones((2, 3)))


# ------------------------------- 22. layer/group/batch norm of extreme float32 inputs
# PyTorch takes a float32 row's mean and variance in float32 (Welford in 8 lanes,
# reference/moments.py): a squared deviation of 1e30 overflows, the variance is inf,
# rstd is 0 and the row's outputs are 0; a row without a remainder past its 8-lane
# vectors turns a huge lane-0 mean into NaN. float64 keeps finite statistics.

SIXTEEN_WITH_HUGE_LAST = [1.0] * 15 + [1e30]
EIGHT_WITH_HUGE_FIRST = [1e30] + [1.0] * 7


def _layer_norm(lib, values, dtype, affine=False):
    x = lib.tensor([values], dtype=getattr(lib, dtype))
    n = len(values)
    weight = lib.linspace(0.5, 1.5, n, dtype=x.dtype) if affine else None
    bias = lib.linspace(-1.0, 1.0, n, dtype=x.dtype) if affine else None
    return lib.nn.functional.layer_norm(x, (n,), weight, bias)


@pytest.mark.nn
def test_layer_norm_float32_row_with_an_overflowing_square_is_zero(device):
    out = _on(device, lambda lib: _layer_norm(lib, SIXTEEN_WITH_HUGE_LAST, "float32"))
    assert_close(out, np.zeros((1, 16), dtype=np.float32))


@pytest.mark.nn
def test_layer_norm_float32_huge_value_in_lane_zero_is_nan(device):
    out = _on(device, lambda lib: _layer_norm(lib, EIGHT_WITH_HUGE_FIRST, "float32"))
    assert np.isnan(out.cpu().numpy()).all()


@pytest.mark.nn
def test_layer_norm_float64_keeps_finite_statistics(device):
    out = _on(device, lambda lib: _layer_norm(lib, SIXTEEN_WITH_HUGE_LAST, "float64"))
    expected = np.array([[-1 / np.sqrt(15)] * 15 + [np.sqrt(15)]])  # (x - mean) / std by hand
    assert_close(out, expected)


def _norm_grid_cases():
    cases = []
    for n in (1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 33, 40):
        for position in sorted({0, n // 2, n - 1}):
            for huge in (1e30, -3e38, float("inf")):
                cases.append((n, position, huge))
    return cases


@needs_torch
@pytest.mark.nn
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_extreme_grid_matches_torch(dtype, affine, device):
    """Rows of 1..40 values with one extreme at the start, middle or end."""
    for n, position, huge in _norm_grid_cases():
        values = [round(0.37 * k - 1.1, 3) for k in range(n)]
        values[position] = huge
        expected = _layer_norm(torch, values, dtype, affine)
        actual = _on(device, lambda lib, v=values: _layer_norm(lib, v, dtype, affine))
        assert_close(actual, expected)


def _batch_norm(lib, dtype, training, layout, huge=1e30):
    values = np.array([[0.5, -1.25, 2.0, 0.75], [1.5, 0.5, huge, 0.25], [2.5, 1.0, -2.0, 0.0]])
    x = lib.tensor(values.tolist(), dtype=getattr(lib, dtype)).reshape(3, 2, 2)
    if layout == "strided":
        x = lib.tensor(values.T.tolist(), dtype=x.dtype).t().reshape(3, 2, 2)
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    mean = lib.tensor([0.5, -0.5], dtype=x.dtype)
    var = lib.tensor([1.0, 2.0], dtype=x.dtype)
    bias = lib.tensor([0.25, -0.75], dtype=x.dtype)
    out = lib.nn.functional.batch_norm(x, mean, var, None, bias, training, 0.1, 1e-5)
    return out, mean, var


@pytest.mark.nn
def test_batch_norm_float32_channel_with_an_overflowing_square_gives_its_bias(device):
    out, _, var = _on(device, lambda lib: _batch_norm(lib, "float32", True, "contiguous"))
    channel = out.cpu().numpy()[:, 1]
    assert (channel == np.float32(-0.75)).all()  # invstd = 1 / sqrt(inf) = 0
    assert np.isinf(var.cpu().numpy()[1])


@pytest.mark.nn
def test_batch_norm_strided_input_squares_in_double(device):
    """PyTorch's strided path squares in double: a finite variance."""
    out, _, _ = _on(device, lambda lib: _batch_norm(lib, "float32", True, "strided"))
    assert np.isfinite(out.cpu().numpy()).all()
    assert np.abs(out.cpu().numpy()[:, 1]).max() > 1.0  # the 1e30 stands out


@needs_torch
@pytest.mark.nn
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("huge", [1e30, -3e38, float("inf"), 2.0])
def test_batch_norm_extremes_match_torch(dtype, training, layout, huge, device):
    expected = _batch_norm(torch, dtype, training, layout, huge)
    actual = _on(device, lambda lib: _batch_norm(lib, dtype, training, layout, huge))
    for a, e in zip(actual, expected):
        assert_close(a, e)


def _group_norm(lib, dtype, huge, affine):
    values = [[0.5, -1.5, 2.0], [1.0, huge, 0.25], [2.0, 2.0, 2.0], [-0.5, 0.75, 1.0]]
    x = lib.tensor(values, dtype=getattr(lib, dtype)).reshape(2, 2, 3)
    weight = lib.tensor([1.5, -0.75], dtype=x.dtype) if affine else None
    bias = lib.tensor([0.5, 2.0], dtype=x.dtype) if affine else None
    return lib.nn.functional.group_norm(x, 2, weight, bias)


@pytest.mark.nn
def test_group_norm_float32_short_group_with_a_huge_value_is_nan(device):
    """3 values, fewer than the 8 lanes: the zero-weight lane merge turns the
    huge mean's overflowing square into NaN, as in PyTorch; float64 stays finite."""
    out = _on(device, lambda lib: _group_norm(lib, "float32", 1e30, False))
    assert np.isnan(out.cpu().numpy()[0, 1]).all()
    assert np.isfinite(out.cpu().numpy()[1]).all()
    wide = _on(device, lambda lib: _group_norm(lib, "float64", 1e30, False))
    assert np.isfinite(wide.cpu().numpy()).all()


@needs_torch
@pytest.mark.nn
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("huge", [1e30, -3e38, float("nan"), 2.0])
def test_group_norm_matches_torch_with_extremes_and_constant_groups(dtype, affine, huge, device):
    """A constant group (variance 0) exposes the rounding of PyTorch's fused
    multiply-add: its outputs are ``bias`` plus a residue of ``scale * x``."""
    assert_close(
        _on(device, lambda lib: _group_norm(lib, dtype, huge, affine)),
        _group_norm(torch, dtype, huge, affine),
    )


@pytest.mark.nn
def test_group_norm_of_one_value_per_group_is_refused(device):
    x = gt.tensor([[2.0]], device=device)
    with pytest.raises(ValueError, match=re.escape("got input size [1, 1]")):
        gt.nn.functional.group_norm(x, 1)


# ------------------------ 23. cross_entropy: float32 input, float64 probability target


@pytest.mark.nn
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_with_float64_probabilities_of_a_float32_input(reduction, device):
    def call(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.5]], dtype=lib.float32)
        p = lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=lib.float64)
        return lib.nn.functional.cross_entropy(x, p, reduction=reduction), x, p

    actual, x, p = _on(device, call)
    assert actual.dtype is gt.float64
    # PyTorch's path: log_softmax in float32, then the product and sum in float64
    per_sample = -(gt.log_softmax(x, 1).to(gt.float64) * p).sum(1)
    reduced = {"none": per_sample, "sum": per_sample.sum(), "mean": per_sample.mean()}
    assert_close(actual, reduced[reduction].cpu().numpy())
    if torch is not None:  # a float32 log's last bit apart: float32's tolerance
        assert_close(actual, call(torch)[0], rtol=1e-5, atol=1e-6)


# ----------------------------- 24. losses: broadcast promotion, target checks, kl_div


@pytest.mark.nn
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss"])
def test_loss_with_a_zero_dim_float64_target_is_float64(loss, device):
    """PyTorch broadcasts first, so the 0-dim target promotes like a full one."""
    x = gt.tensor([-1.733, 0.613, -1.5], device=device)
    y = gt.tensor(-2.959, dtype=gt.float64, device=device)
    with pytest.warns(UserWarning):
        out = getattr(gt.nn.functional, loss)(x, y)
    assert out.dtype is gt.float64
    difference = np.array([-1.733, 0.613, -1.5], dtype=np.float32).astype(np.float64) + 2.959
    expected = {"mse_loss": (difference**2).mean(), "l1_loss": np.abs(difference).mean()}
    if loss in expected:
        assert_close(out, np.float64(expected[loss]))


@pytest.mark.nn
@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_class_target_of_int32_is_refused(name, device):
    x = gt.zeros((2, 3), device=device)
    target = gt.tensor([0, 1], dtype=gt.int32, device=device)
    with pytest.raises(
        RuntimeError, match="^expected target dtype to be Long or Byte, but got Int$"
    ):
        getattr(gt.nn.functional, name)(x, target)


@pytest.mark.nn
def test_binary_cross_entropy_checks_its_target_range_and_nan(device):
    bce = gt.nn.functional.binary_cross_entropy
    with pytest.raises(RuntimeError, match="^all elements of target should be between 0 and 1$"):
        bce(gt.tensor([0.5], device=device), gt.tensor([1.5], device=device))
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        bce(gt.tensor([float("nan")], device=device), gt.tensor([0.5], device=device))


@pytest.mark.nn
def test_kl_div_of_zero_and_negative_targets(device):
    """``xlogy(t, t) - t * x``: 0 where t is 0, NaN where t is negative."""
    x = gt.tensor([-0.985, -2.738, 0.204], dtype=gt.float64, device=device)
    t = gt.tensor([-0.313, 0.0, 0.5], dtype=gt.float64, device=device)
    out = gt.nn.functional.kl_div(x, t, reduction="none").cpu().numpy()
    assert np.isnan(out[0]) and out[1] == 0
    assert out[2] == pytest.approx(0.5 * (np.log(0.5) - 0.204))


# ---------------------------------------------- 25. second derivative of a norm


@pytest.mark.autograd
def test_second_derivative_through_vector_norm(device):
    """``sum((x / |x|) ** 2)`` is 1 everywhere: its gradient is 0."""
    x = gt.tensor([2.0, -2.575, -0.321, 0.21, 2.0], dtype=gt.float64, device=device)
    x.requires_grad_()
    (first,) = gt.autograd.grad(x.norm(), [x], create_graph=True)
    (second,) = gt.autograd.grad((first * first).sum(), [x])
    assert_close(second, np.zeros(5), atol=1e-12)


# ---------------------------------------------- 26. the fuzzer reaches these classes


@pytest.mark.errors
def test_fuzzer_generates_the_new_families():
    from fuzz_driver import generate

    families = {generate(11, i).op.split("/")[0] for i in range(400)}
    assert {"loss", "norm", "double_backward", "cast"} <= families
    programs = "\n".join(generate(11, i).program() for i in range(2000))
    for text in ("e+38", "e+30", "1e-30", "create_graph=True", ".long()", "group_norm"):
        assert text in programs


@pytest.mark.errors
def test_fuzzer_class_and_float32_tolerances():
    from fuzz_driver import same

    a = ("tensor", (2,), "float64", np.array([1.0, np.inf]))
    b = ("tensor", (2,), "float64", np.array([2.0, np.nan]))
    assert same(a, b, "class") is None  # finite where finite, non-finite where not
    assert same(a, ("tensor", (2,), "float64", np.array([np.inf, 1.0])), "class")
    near = ("tensor", (1,), "float64", np.array([1.0]))
    off = ("tensor", (1,), "float64", np.array([1.0 + 5e-8]))
    assert same(near, off) and same(near, off, "float32") is None


@pytest.mark.nn
def test_bce_with_logits_pos_weight_product_keeps_the_input_dtype(device):
    """PyTorch multiplies in place into ``logsigmoid(input)``: float32, so -3e38 * 2.2 is -inf."""
    x = gt.tensor([[0.5, 0.0, -2.523, -1.5]], device=device)
    t = gt.tensor([[2.201, -0.896, 2.655, -0.0]], dtype=gt.float64, device=device)
    weight = gt.tensor([-3e38], dtype=gt.float64, device=device).expand(4)
    loss = gt.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=weight)
    assert loss.dtype is gt.float64 and loss.item() == float("-inf")


@pytest.mark.nn
def test_nll_loss_skips_ignored_samples_holding_nan(device):
    x = gt.tensor([[float("nan"), 0.78], [1.738, -1.5]], dtype=gt.float64, device=device)
    target = gt.tensor([0, 1], device=device)
    for reduction, expected in (("none", [0.0, 1.5]), ("sum", 1.5), ("mean", 1.5)):
        out = gt.nn.functional.nll_loss(x, target, reduction=reduction, ignore_index=0)
        assert_close(out, np.array(expected))


@pytest.mark.nn
@pytest.mark.cpu_only("a CUDA block adds a channel's partial sums in a tree, for parallelism")
def test_batch_norm_sums_a_channel_in_order(device):
    """1e30 + small terms - 1e30: the order of the double sum decides what is absorbed;
    PyTorch adds (n, l) in order, so the small terms before -1e30 vanish."""
    channel = [1e30, 1.5, 2.5, 0.5, -1e30, 2.0, 1.0, 3.0]
    x = gt.tensor(channel, device=device).reshape(2, 1, 4)
    mean = gt.zeros(1, device=device)
    gt.nn.functional.batch_norm(x, mean, gt.ones(1, device=device), training=True, momentum=1.0)
    assert mean.item() == pytest.approx((2.0 + 1.0 + 3.0) / 8)


@needs_torch
@pytest.mark.nn
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_smoothing_skips_ignored_samples_with_infinite_logits(reduction, device):
    def call(lib):
        x = lib.tensor([-2.962, 2.426, 0.5, 1.924, 0.5, 0.345, -0.634, float("-inf")])
        target = lib.tensor([[2], [0]])
        return lib.nn.functional.cross_entropy(
            x.reshape(2, 4, 1), target, reduction=reduction, ignore_index=0, label_smoothing=0.1
        )

    assert_close(_on(device, call), call(torch))


@pytest.mark.autograd
def test_relu_second_derivative_is_zeros_not_missing(device):
    """ThresholdBackwardBackward0 gives its saved output a zero gradient, as
    PyTorch does, so relu's second derivative is zeros (was None)."""
    x = gt.tensor([-2.328, 0.94, 0.5], dtype=gt.float64, device=device, requires_grad=True)
    (first,) = gt.autograd.grad(gt.relu(x).sum(), [x], create_graph=True)
    assert first.tolist() == [0.0, 1.0, 1.0]
    (second,) = gt.autograd.grad((first * first).sum(), [x], allow_unused=True)
    assert second is not None and second.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.nn
def test_cross_entropy_weighted_mean_is_the_ratio_of_float32_sums(device):
    """PyTorch's weighted mean divides the sums in the loss's dtype: float32 sums
    past 3.4e38 are infinite and their ratio NaN (was inf, from double sums)."""
    x = gt.tensor([[0.5, 1.0, -1.0], [0.2, 0.3, 0.1], [1.0, 2.0, 3.0]], device=device)
    weight = gt.tensor([-3e38, -3e38, 1.0], device=device)
    target = gt.tensor([0, 1, 0], device=device)
    assert gt.nn.functional.cross_entropy(x, target, weight=weight).isnan().item()
    # Ordinary weights: the same mean as the sums' ratio computed by hand.
    weight = gt.tensor([0.5, 2.0, 1.0], device=device)
    losses = gt.nn.functional.cross_entropy(x, target, weight=weight, reduction="none")
    expected = losses.sum().item() / (0.5 + 0.5 + 2.0)
    mean = gt.nn.functional.cross_entropy(x, target, weight=weight).item()
    assert mean == pytest.approx(expected, rel=1e-6)


@pytest.mark.nn
def test_batch_norm_of_a_strided_input_normalises_step_by_step(device):
    """PyTorch's strided batch norm computes ((x - mean) * invstd) * w + b, so a
    constant channel of an expanded input comes out as exactly its bias (the
    fused x * scale + shift of a contiguous input leaves a rounding residue)."""
    x = gt.tensor([-0.531, 2.634, -1.5, 0.25], device=device).reshape(1, 4).expand(3, 4)
    weight = gt.tensor([-2.41, -1.67, 2.696, -0.994], device=device)
    bias = gt.tensor([2.301, 0.319, -0.159, -1.975], device=device)
    out = gt.nn.functional.batch_norm(x, None, None, weight, bias, training=True)
    assert out.tolist() == [bias.tolist()] * 3
    torch = pytest.importorskip("torch")
    base = np.random.default_rng(3).standard_normal((4, 7)).astype(np.float32) * 30
    w = np.random.default_rng(4).standard_normal(4).astype(np.float32) * 10
    b = np.random.default_rng(5).standard_normal(4).astype(np.float32)
    ours = gt.nn.functional.batch_norm(
        gt.tensor(base, device=device).t(), None, None, gt.tensor(w, device=device),
        gt.tensor(b, device=device), training=True,
    )  # fmt: skip
    theirs = torch.nn.functional.batch_norm(
        torch.tensor(base).t(), None, None, torch.tensor(w), torch.tensor(b), training=True
    )
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.nn
def test_cross_entropy_of_huge_equal_logits_keeps_the_log_of_the_count(device):
    """log_probs = (x - max) - log(sum): with max = 1e30, max + log(3) is 1e30
    again, so x - (max + log(sum)) lost the log(3) PyTorch keeps."""
    logits = gt.full((2, 3), 1e30, device=device)
    loss = gt.nn.functional.cross_entropy(logits, gt.tensor([1, 2], device=device))
    assert loss.item() == pytest.approx(math.log(3), rel=1e-6)
    log_probs = gt.nn.functional.log_softmax(logits, dim=1)
    assert log_probs.flatten().tolist() == pytest.approx([-math.log(3)] * 6, rel=1e-6)


@pytest.mark.nn
def test_bce_with_logits_rounds_each_in_place_step_to_the_targets_dtype(device):
    """PyTorch computes (1 - t).mul_(x).sub_(...) in the float32 target's
    storage: a product past 3.4e38 is inf there even with a float64 input."""
    x = gt.tensor([-2.083, 0.5], dtype=gt.float64, device=device)
    t = gt.tensor([-3e38, 0.5], device=device)
    loss = gt.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert loss.dtype == gt.float32
    assert loss[0].item() == -math.inf and math.isfinite(loss[1].item())


@pytest.mark.errors
def test_scatter_and_index_fill_refuse_a_value_their_integer_dtype_cannot_hold(device):
    target = gt.zeros(2, dtype=gt.int64, device=device)
    index = gt.tensor([0], device=device)
    message = "value cannot be converted to type int64_t without overflow"
    with pytest.raises(RuntimeError, match=message):
        target.scatter_(0, index, -3e38)
    with pytest.raises(RuntimeError, match=message):
        target.index_fill_(0, index, 3e38)
    assert target.tolist() == [0, 0]  # nothing was written
    assert target.scatter_(0, index, 7).tolist() == [7, 0]


@pytest.mark.errors
def test_integer_division_by_zero_of_an_empty_tensor_divides_nothing(device):
    empty = gt.zeros(0, 3, dtype=gt.int32, device=device)
    zero = gt.tensor(0, dtype=gt.int32, device=device)
    assert empty.div(zero, rounding_mode="floor").shape == (0, 3)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        gt.ones(2, dtype=gt.int32, device=device).div(zero, rounding_mode="floor")


@pytest.mark.errors
def test_scatter_of_an_empty_index_converts_no_value(device):
    """PyTorch converts the scattered number only when it writes one: with an
    empty index, even -inf into int64 is no error."""
    target = gt.tensor([[-3], [0]], device=device)
    empty = gt.zeros(1, 0, dtype=gt.int64, device=device)
    assert gt.scatter(target, 1, empty, float("-inf")).tolist() == [[-3], [0]]
    assert target.scatter_(1, empty, float("nan")).tolist() == [[-3], [0]]


@pytest.mark.errors
@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean", "nansum"])
def test_var_std_and_nansum_name_a_repeated_dim_before_a_bad_one(name, device):
    x = gt.zeros(2, 2, 2, 2, device=device)
    with pytest.raises(RuntimeError, match="dim 2 appears multiple times in the list of dims"):
        getattr(gt, name)(x, (2, 2, 5))
    with pytest.raises(IndexError, match="Dimension out of range"):
        gt.sum(x, (2, 2, 5))  # sum checks every dim's range first, as PyTorch
