"""Common mistakes get PyTorch's exception type and wording (docs/guide/architecture.md, section 3).

Each case names the exception class and a pattern of PyTorch's message. When PyTorch is
installed the same call is made on it too, so the expectation cannot drift from PyTorch.
"""

from __future__ import annotations

import re

import pytest
from oracle import assert_same_error, needs_torch, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = pytest.mark.usefixtures("default_device")


# -- Common mistakes: PyTorch's exception class and wording


def _inplace_broadcast(lib):
    y = lib.ones(3)
    y += lib.ones(2, 3)


def _exact(message):
    return re.escape(message) + "$"


ERRORS = {
    "broadcast": (
        lambda lib: lib.ones(2, 3) + lib.ones(2, 4),
        RuntimeError,
        _exact(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 1"
        ),
    ),
    "broadcast-1d": (
        lambda lib: lib.ones(3) * lib.ones(4),
        RuntimeError,
        _exact(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 0"
        ),
    ),
    "broadcast-where": (
        lambda lib: lib.where(lib.ones(3) > 0, lib.ones(2), 0.0),
        RuntimeError,
        _exact(
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
            "dimension 0"
        ),
    ),
    "inplace-broadcast": (
        _inplace_broadcast,
        RuntimeError,
        _exact("output with shape [3] doesn't match the broadcast shape [2, 3]"),
    ),
    "index-too-big": (
        lambda lib: lib.ones(3)[5],
        IndexError,
        _exact("index 5 is out of bounds for dimension 0 with size 3"),
    ),
    "index-too-negative": (
        lambda lib: lib.ones(3)[-4],
        IndexError,
        _exact("index -4 is out of bounds for dimension 0 with size 3"),
    ),
    "index-second-dim": (
        lambda lib: lib.ones(2, 3)[0, 3],
        IndexError,
        _exact("index 3 is out of bounds for dimension 1 with size 3"),
    ),
    "index-write": (
        lambda lib: lib.ones(2, 3).__setitem__((2, 0), 1.0),
        IndexError,
        _exact("index 2 is out of bounds for dimension 0 with size 2"),
    ),
    "index-tensor": (
        lambda lib: lib.ones(2, 3)[lib.tensor([0, 5])],
        IndexError,
        _exact("index 5 is out of bounds for dimension 0 with size 2"),
    ),
    "too-many-indices": (
        lambda lib: lib.ones(2, 3)[0, 0, 0],
        IndexError,
        _exact("too many indices for tensor of dimension 2"),
    ),
    "dim-sum": (
        lambda lib: lib.ones(2, 3).sum(2),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "dim-transpose": (
        lambda lib: lib.ones(2, 3).transpose(0, 2),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "dim-unsqueeze": (
        lambda lib: lib.ones(2, 3).unsqueeze(3),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ),
    "dim-softmax": (
        lambda lib: lib.ones(2, 3).softmax(-3),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ),
    "dim-flatten": (
        lambda lib: lib.ones(2, 3).flatten(2),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "dim-max": (
        lambda lib: lib.ones(2, 3).max(dim=-3),
        IndexError,
        _exact("Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ),
    "view-numel": (
        lambda lib: lib.ones(2, 3).view(4, 2),
        RuntimeError,
        _exact("shape '[4, 2]' is invalid for input of size 6"),
    ),
    "view-infer": (
        lambda lib: lib.ones(2, 3).view(-1, 4),
        RuntimeError,
        _exact("shape '[-1, 4]' is invalid for input of size 6"),
    ),
    "reshape-two-minus-ones": (
        lambda lib: lib.ones(2, 3).reshape(-1, -1),
        RuntimeError,
        _exact("only one dimension can be inferred"),
    ),
    "expand": (
        lambda lib: lib.ones(2, 3).expand(2, 4),
        RuntimeError,
        _exact(
            "The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
            "dimension 1.  Target sizes: [2, 4].  Tensor sizes: [2, 3]"
        ),
    ),
    "expand-fewer-dims": (
        lambda lib: lib.ones(2, 3).expand(3),
        RuntimeError,
        re.escape(
            "the number of sizes provided (1) must be greater or equal to the number of "
            "dimensions in the tensor (2)"
        ),
    ),
    "permute-length": (
        lambda lib: lib.ones(2, 3).permute(0),
        RuntimeError,
        re.escape(
            "number of dimensions in the tensor input does not match the length of the desired "
            "ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"
        ),
    ),
    "permute-duplicate": (
        lambda lib: lib.ones(2, 3).permute(0, 0),
        RuntimeError,
        _exact("permute(): duplicate dims are not allowed."),
    ),
    "int-negative-power": (
        lambda lib: lib.tensor([2]) ** -1,
        RuntimeError,
        _exact("Integers to negative integer powers are not allowed."),
    ),
    "bool-subtraction": (
        lambda lib: lib.tensor([True]) - lib.tensor([True]),
        RuntimeError,
        _exact(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        ),
    ),
    "bool-negation": (
        lambda lib: -lib.tensor([True]),
        RuntimeError,
        re.escape("Negation, the `-` operator, on a bool tensor is not supported."),
    ),
    "int-floor-divide-by-zero": (
        lambda lib: lib.tensor([1, 2]) // 0,
        RuntimeError,
        "ZeroDivisionError",
    ),
    "mean-of-ints": (
        lambda lib: lib.tensor([1, 2]).mean(),
        RuntimeError,
        re.escape(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            "or complex dtype. Got: Long"
        ),
    ),
    "negative-size": (
        lambda lib: lib.zeros(-1),
        RuntimeError,
        "negative",
    ),
    "randint-empty-range": (
        lambda lib: lib.randint(5, 2, (3,)),
        RuntimeError,
        _exact("random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    ),
    "gather-index": (
        lambda lib: lib.ones(2, 3).gather(1, lib.tensor([[5]])),
        RuntimeError,
        _exact("index 5 is out of bounds for dimension 1 with size 3"),
    ),
    "narrow": (
        lambda lib: lib.ones(2, 3).narrow(1, 2, 2),
        RuntimeError,
        _exact("start (2) + length (2) exceeds dimension size (3)."),
    ),
    "select": (
        lambda lib: lib.ones(2, 3).select(1, 3),
        IndexError,
        _exact("select(): index 3 out of range for tensor of size [2, 3] at dimension 1"),
    ),
    "index-select": (
        lambda lib: lib.ones(2, 3).index_select(0, lib.tensor([2])),
        IndexError,
        _exact("index out of range in self"),
    ),
    "masked-fill-float-mask": (
        lambda lib: lib.ones(3).masked_fill(lib.ones(3), 0.0),
        RuntimeError,
        _exact("masked_fill_ only supports boolean masks, but got mask with dtype float"),
    ),
    "ragged-list": (
        lambda lib: lib.tensor([[1, 2], [3]]),
        ValueError,
        _exact("expected sequence of length 2 at dim 1 (got 1)"),
    ),
    "chunk-zero": (
        lambda lib: lib.ones(2, 3).chunk(0),
        RuntimeError,
        _exact("chunk expects `chunks` to be greater than 0, got: 0"),
    ),
    "unflatten": (
        lambda lib: lib.ones(2, 3).unflatten(1, (2, 2)),
        RuntimeError,
        _exact(
            "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in "
            "the input tensor"
        ),
    ),
    "inplace-on-expanded": (
        lambda lib: lib.zeros(3, 1).expand(3, 4).add_(1),
        RuntimeError,
        _exact(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        ),
    ),
    "mm": (
        lambda lib: lib.ones(2, 3) @ lib.ones(2, 3),
        RuntimeError,
        _exact("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ),
    "item": (
        lambda lib: lib.ones(2).item(),
        RuntimeError,
        _exact("a Tensor with 2 elements cannot be converted to Scalar"),
    ),
    "inplace-cast": (
        lambda lib: lib.tensor([1, 2]).add_(0.5),
        RuntimeError,
        _exact("result type Float can't be cast to the desired output type Long"),
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


@pytest.mark.errors
def test_errors_leave_tensors_untouched():
    x = gt.ones(3)
    with pytest.raises(RuntimeError):
        x += gt.ones(2, 3)
    assert x.tolist() == [1.0, 1.0, 1.0]
    y = gt.tensor([1, 2])
    with pytest.raises(RuntimeError):
        y += 0.5
    assert y.tolist() == [1, 2]


# -- Argument errors of the elementwise, splitting and linear-algebra functions
@pytest.mark.math
@needs_torch
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


# -- A dim on a 0-d tensor: PyTorch's error, not an IndexError from inside glasstorch
def _exact_message(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _dim_out_of_range(dim: int) -> str:
    return _exact_message(
        f"Dimension out of range (expected to be in range of [-1, 0], but got {dim})"
    )


#: Calls PyTorch refuses, with its exception class and wording.
DIM_OF_0D_ERRORS = {
    "split-0d": (
        lambda lib: lib.split(lib.tensor(1.0), 1),
        RuntimeError,
        _exact_message("split expects at least a 1-dimensional tensor"),
    ),
    "split-sizes-0d": (
        lambda lib: lib.tensor(1.0).split([1]),
        RuntimeError,
        _exact_message("split expects at least a 1-dimensional tensor"),
    ),
    "chunk-0d": (
        lambda lib: lib.chunk(lib.tensor(1.0), 2),
        RuntimeError,
        _exact_message("chunk expects at least a 1-dimensional tensor"),
    ),
    "narrow-0d": (
        lambda lib: lib.narrow(lib.tensor(0), 0, 0, 2),
        RuntimeError,
        _exact_message("narrow() cannot be applied to a 0-dim tensor."),
    ),
    "unbind-0d": (
        lambda lib: lib.tensor(1.0).unbind(0),
        IndexError,
        _exact_message("Dimension specified as 0 but tensor has no dimensions"),
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
        _exact_message(
            "source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = [] source.shape = [1]"
        ),
    ),
    "cat-0d-position": (
        lambda lib: lib.cat([lib.ones(2), lib.tensor(1.0)]),
        RuntimeError,
        _exact_message("zero-dimensional tensor (at position 1) cannot be concatenated"),
    ),
    "cat-legacy-empty-dim": (
        lambda lib: lib.cat([lib.zeros(0), lib.ones(2, 3)], 2),
        IndexError,
        _exact_message("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "fill-expanded-tensor-value": (
        lambda lib: lib.zeros(3, 1).expand(3, 4).fill_(lib.tensor(5.0)),
        RuntimeError,
        "more than one element of the written-to tensor refers to a single memory location",
    ),
    "inplace-compare-broadcast": (
        lambda lib: lib.tensor([1, 2]).ge_(lib.zeros(2, 2)),
        RuntimeError,
        _exact_message("output with shape [2] doesn't match the broadcast shape [2, 2]"),
    ),
    "bitwise-float": (
        lambda lib: lib.tensor([1.0, 2.0]).bitwise_and_(lib.tensor([1, 0])),
        NotImplementedError,
        _exact_message("\"bitwise_and_cpu\" not implemented for 'Float'"),
    ),
    "bitwise-double": (
        lambda lib: lib.bitwise_or(lib.tensor([1.0], dtype=lib.float64), 1),
        NotImplementedError,
        _exact_message("\"bitwise_or_cpu\" not implemented for 'Double'"),
    ),
    "bitwise-inplace-cast": (
        lambda lib: lib.tensor([1, 2]).bitwise_or_(1.5),
        RuntimeError,
        _exact_message("result type Float can't be cast to the desired output type Long"),
    ),
    "bitwise-not-float": (
        lambda lib: lib.tensor([1.5]).bitwise_not_(),
        NotImplementedError,
        _exact_message("\"bitwise_not_cpu\" not implemented for 'Float'"),
    ),
    "invert-float": (
        lambda lib: ~lib.tensor([1.5]),
        TypeError,
        _exact_message(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        ),
    ),
    "erf-inplace-int": (
        lambda lib: lib.tensor([1, 0]).erf_(),
        RuntimeError,
        _exact_message("result type Float can't be cast to the desired output type Long"),
    ),
    "flip-0d-dim": (lambda lib: lib.flip(lib.tensor(1.0), (1,)), IndexError, _dim_out_of_range(1)),
    "flip-repeated-dim": (
        lambda lib: lib.flip(lib.ones(2, 2), (0, -2)),
        RuntimeError,
        _exact_message("dim 0 appears multiple times in the list of dims"),
    ),
    "narrow-negative-length": (
        lambda lib: lib.narrow(lib.ones(3), 0, 5, -1),
        RuntimeError,
        _exact_message("narrow(): length must be non-negative."),
    ),
    "narrow-start-at-end": (
        lambda lib: lib.narrow(lib.ones(3), 0, 3, 2),
        RuntimeError,
        _exact_message("start (3) + length (2) exceeds dimension size (3)."),
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
        _exact_message("split expects split_size be non-negative, but got split_size=-1"),
    ),
    "stack-bad-dim-first": (
        lambda lib: lib.stack([lib.ones(2), lib.ones(3)], 5),
        IndexError,
        _exact_message("Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ),
    "softmax-int-lastdim": (
        lambda lib: lib.softmax(lib.ones(2, 3, dtype=lib.int64), 1),
        NotImplementedError,
        _exact_message("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ),
    "log-softmax-int-other-dim": (
        lambda lib: lib.log_softmax(lib.ones(2, 3, dtype=lib.int32), 0),
        NotImplementedError,
        _exact_message("\"log_softmax_kernel_impl\" not implemented for 'Int'"),
    ),
    "softmax-bad-dim-before-dtype": (
        lambda lib: lib.softmax(lib.ones(2, 3, dtype=lib.int64), 2),
        IndexError,
        _exact_message("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ),
    "cumsum-inplace-bool": (
        lambda lib: lib.tensor([True]).cumsum_(0),
        NotImplementedError,
        _exact_message("\"cumsum_out_cpu\" not implemented for 'Bool'"),
    ),
}


@pytest.mark.errors
@pytest.mark.parametrize("case", list(DIM_OF_0D_ERRORS))
def test_dim_of_a_0d_tensor_error_type_and_wording(case):
    call, exc_type, match = DIM_OF_0D_ERRORS[case]
    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=exc_type,
        match=match,
    )
