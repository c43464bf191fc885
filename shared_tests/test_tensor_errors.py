"""Common mistakes get PyTorch's exception type and wording (docs/guide/architecture.md, section 3).

Each case names the exception class and a pattern of PyTorch's message. When PyTorch is
installed the same call is made on it too, so the expectation cannot drift from PyTorch.
"""

from __future__ import annotations

import re

import pytest
from oracle import assert_same_error, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = pytest.mark.usefixtures("default_device")


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
