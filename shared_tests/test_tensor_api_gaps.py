"""Small API gaps closed by the hardening pass: methods PyTorch has, and its 0-d errors.

* ``erf``/``erf_``, ``greater_equal``/``less_equal``/``not_equal`` as methods;
* the in-place comparison, logical and bitwise methods, whose result keeps
  ``self``'s dtype (``x.ge_(y)`` writes 1.0/0.0 into a float ``x``);
* ``fill_(number)``/``zero_()`` on an expanded tensor (PyTorch allows it);
* functions taking a dim on a 0-d tensor raise PyTorch's error, not an
  ``IndexError: tuple index out of range`` from inside glasstorch;
* ``cat`` skips the legacy empty tensor of shape (0,) next to tensors of any rank.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = pytest.mark.usefixtures("default_device")

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


@pytest.mark.reduction
def test_cumsum_inplace():
    x = gt.tensor([[3, -3, 4]])
    x.cumsum_(1)
    assert_close(x, np.array([[3, 0, 4]]))


@pytest.mark.views
def test_fill_and_zero_on_expanded_tensor():
    base = gt.arange(6.0).view(3, 2)
    expanded = base[1:, :1].expand(2, 5)
    assert expanded.fill_(7.0) is expanded
    assert_close(base, np.array([[0.0, 1.0], [7.0, 3.0], [7.0, 5.0]], dtype="float32"))
    assert_close(expanded, np.full((2, 5), 7.0, dtype="float32"))
    expanded.zero_()
    assert_close(base, np.array([[0.0, 1.0], [0.0, 3.0], [0.0, 5.0]], dtype="float32"))


@pytest.mark.linalg
def test_cat_skips_legacy_empty_tensor():
    out = gt.cat([gt.zeros(0), gt.ones(2, 3), gt.zeros(0, dtype=gt.int64)], 1)
    assert_close(out, np.ones((2, 3), dtype="float32"))
    out = gt.cat([gt.ones(2, 3), gt.zeros(0)], -1)
    assert_close(out, np.ones((2, 3), dtype="float32"))


@pytest.mark.views
def test_flip_of_0d_tensor_and_softmax_of_empty_int_tensor():
    assert_close(gt.flip(gt.tensor(2.0), (0,)), 2.0)
    out = gt.softmax(gt.ones(0, 3, dtype=gt.int64), 0)
    assert_close(out, np.ones((0, 3), dtype="int64"))


@pytest.mark.indexing
def test_index_add_on_0d_tensor():
    assert_close(gt.tensor(1.0).index_add(0, gt.tensor([0]), gt.tensor(3.0), alpha=2), 7.0)
    assert_close(gt.tensor(1.0).index_copy(0, gt.tensor([0]), gt.tensor(5.0)), 5.0)


def _exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _dim_out_of_range(dim: int) -> str:
    return _exact(f"Dimension out of range (expected to be in range of [-1, 0], but got {dim})")


#: Calls PyTorch refuses, with its exception class and wording.
ERRORS = {
    "split-0d": (
        lambda lib: lib.split(lib.tensor(1.0), 1),
        RuntimeError,
        _exact("split expects at least a 1-dimensional tensor"),
    ),
    "split-sizes-0d": (
        lambda lib: lib.tensor(1.0).split([1]),
        RuntimeError,
        _exact("split expects at least a 1-dimensional tensor"),
    ),
    "chunk-0d": (
        lambda lib: lib.chunk(lib.tensor(1.0), 2),
        RuntimeError,
        _exact("chunk expects at least a 1-dimensional tensor"),
    ),
    "narrow-0d": (
        lambda lib: lib.narrow(lib.tensor(0), 0, 0, 2),
        RuntimeError,
        _exact("narrow() cannot be applied to a 0-dim tensor."),
    ),
    "unbind-0d": (
        lambda lib: lib.tensor(1.0).unbind(0),
        IndexError,
        _exact("Dimension specified as 0 but tensor has no dimensions"),
    ),
    "unbind-0d-dim": (lambda lib: lib.tensor(1.0).unbind(1), IndexError, _dim_out_of_range(1)),
    "cumsum-0d": (lambda lib: lib.tensor(1.0).cumsum(1), IndexError, _dim_out_of_range(1)),
    "softmax-0d": (lambda lib: lib.tensor(1.0).softmax(1), IndexError, _dim_out_of_range(1)),
    "log-softmax-0d": (
        lambda lib: lib.tensor(1.0).log_softmax(-2),
        IndexError,
        _dim_out_of_range(-2),
    ),
    "flatten-0d": (lambda lib: lib.tensor(1.0).flatten(0, 1), IndexError, _dim_out_of_range(1)),
    "unflatten-0d": (
        lambda lib: lib.tensor(1.0).unflatten(0, (1,)),
        RuntimeError,
        "Dimension specified as 0 but tensor has no dimensions",
    ),
    "index-select-0d": (
        lambda lib: lib.tensor(1.0).index_select(1, lib.tensor([0])),
        IndexError,
        _dim_out_of_range(1),
    ),
    "index-add-0d-source": (
        lambda lib: lib.tensor(1.0).index_add(0, lib.tensor([0]), lib.tensor([1.0])),
        RuntimeError,
        _exact(
            "source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = [] source.shape = [1]"
        ),
    ),
    "cat-0d-position": (
        lambda lib: lib.cat([lib.ones(2), lib.tensor(1.0)]),
        RuntimeError,
        _exact("zero-dimensional tensor (at position 1) cannot be concatenated"),
    ),
    "cat-legacy-empty-dim": (
        lambda lib: lib.cat([lib.zeros(0), lib.ones(2, 3)], 2),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "fill-expanded-tensor-value": (
        lambda lib: lib.zeros(3, 1).expand(3, 4).fill_(lib.tensor(5.0)),
        RuntimeError,
        "more than one element of the written-to tensor refers to a single memory location",
    ),
    "inplace-compare-broadcast": (
        lambda lib: lib.tensor([1, 2]).ge_(lib.zeros(2, 2)),
        RuntimeError,
        _exact("output with shape [2] doesn't match the broadcast shape [2, 2]"),
    ),
    "bitwise-float": (
        lambda lib: lib.tensor([1.0, 2.0]).bitwise_and_(lib.tensor([1, 0])),
        NotImplementedError,
        _exact("\"bitwise_and_cpu\" not implemented for 'Float'"),
    ),
    "bitwise-double": (
        lambda lib: lib.bitwise_or(lib.tensor([1.0], dtype=lib.float64), 1),
        NotImplementedError,
        _exact("\"bitwise_or_cpu\" not implemented for 'Double'"),
    ),
    "bitwise-inplace-cast": (
        lambda lib: lib.tensor([1, 2]).bitwise_or_(1.5),
        RuntimeError,
        _exact("result type Float can't be cast to the desired output type Long"),
    ),
    "bitwise-not-float": (
        lambda lib: lib.tensor([1.5]).bitwise_not_(),
        NotImplementedError,
        _exact("\"bitwise_not_cpu\" not implemented for 'Float'"),
    ),
    "invert-float": (
        lambda lib: ~lib.tensor([1.5]),
        TypeError,
        _exact("~ (operator.invert) is only implemented on integer and Boolean-type tensors"),
    ),
    "erf-inplace-int": (
        lambda lib: lib.tensor([1, 0]).erf_(),
        RuntimeError,
        _exact("result type Float can't be cast to the desired output type Long"),
    ),
    "flip-0d-dim": (lambda lib: lib.flip(lib.tensor(1.0), (1,)), IndexError, _dim_out_of_range(1)),
    "flip-repeated-dim": (
        lambda lib: lib.flip(lib.ones(2, 2), (0, -2)),
        RuntimeError,
        _exact("dim 0 appears multiple times in the list of dims"),
    ),
    "narrow-negative-length": (
        lambda lib: lib.narrow(lib.ones(3), 0, 5, -1),
        RuntimeError,
        _exact("narrow(): length must be non-negative."),
    ),
    "narrow-start-at-end": (
        lambda lib: lib.narrow(lib.ones(3), 0, 3, 2),
        RuntimeError,
        _exact("start (3) + length (2) exceeds dimension size (3)."),
    ),
    "view-float-size": (lambda lib: lib.ones(2, 3).view(2.5), TypeError, "float"),
    "permute-none": (lambda lib: lib.ones(2).permute(None), TypeError, "NoneType"),
    "cumsum-inplace-bad-dim-first": (
        lambda lib: lib.tensor([True]).cumsum_(1),
        IndexError,
        _dim_out_of_range(1),
    ),
    "split-negative-size": (
        lambda lib: lib.split(lib.ones(3), -1, 4),
        RuntimeError,
        _exact("split expects split_size be non-negative, but got split_size=-1"),
    ),
    "stack-bad-dim-first": (
        lambda lib: lib.stack([lib.ones(2), lib.ones(3)], 5),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ),
    "softmax-int-lastdim": (
        lambda lib: lib.softmax(lib.ones(2, 3, dtype=lib.int64), 1),
        NotImplementedError,
        _exact("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ),
    "log-softmax-int-other-dim": (
        lambda lib: lib.log_softmax(lib.ones(2, 3, dtype=lib.int32), 0),
        NotImplementedError,
        _exact("\"log_softmax_kernel_impl\" not implemented for 'Int'"),
    ),
    "softmax-bad-dim-before-dtype": (
        lambda lib: lib.softmax(lib.ones(2, 3, dtype=lib.int64), 2),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "cumsum-inplace-bool": (
        lambda lib: lib.tensor([True]).cumsum_(0),
        NotImplementedError,
        _exact("\"cumsum_out_cpu\" not implemented for 'Bool'"),
    ),
}


@pytest.mark.errors
@pytest.mark.parametrize("case", list(ERRORS))
def test_error_type_and_wording(case):
    call, exc_type, match = ERRORS[case]
    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=exc_type,
        match=match,
    )
