"""Memory safety, sizes and overflow: a mistake is a Python exception, never a crash.

Each class of defect has its cases here, run on the
active tier, with PyTorch's exception type and wording (checked against
PyTorch itself when it is installed):

* views that would reach outside their storage (``as_strided``);
* index values read by kernels: out of range, negative (never wrapped), and
  changed by another thread while the kernel runs (run in a subprocess, so a
  crash fails the test instead of ending the run);
* negative sizes, element counts and byte counts beyond int64;
* up to 64 dimensions on every tier;
* integers that do not fit the dtype they are created in.

Every test makes its tensors on the device under test (conftest's
``default_device``), so a device run checks the CUDA kernels' own bounds
checks and error reporting. Where PyTorch's CUDA kernels stop at a device-side
assert for an index out of range (which leaves the CUDA context unusable),
glasstorch's report the first bad index and raise the CPU's error, as
docs/guide/gpu.md says: these tests expect the CPU's wording on every device.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from oracle import assert_same_error, torch

import glasstorch as gt
from glasstorch._shape import check_view_geometry

pytestmark = [pytest.mark.errors, pytest.mark.usefixtures("default_device")]


def _exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _check(call, exc_type, match):
    """``call(lib)`` raises ``exc_type`` matching ``match`` on glasstorch and on PyTorch."""
    return assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=exc_type,
        match=match,
    )


# ------------------------------------------------------------ 1. view geometry

VIEW_CASES = {
    "negative-stride-read": (
        lambda lib: lib.zeros(1).as_strided((2,), (-(2**40),), 0).sum(),
        _exact(
            "as_strided: Negative strides are not supported at the moment, got strides: "
            "[-1099511627776]"
        ),
    ),
    "negative-stride-write": (
        lambda lib: lib.zeros(4).as_strided((2,), (-3,), 2).fill_(7),
        _exact("as_strided: Negative strides are not supported at the moment, got strides: [-3]"),
    ),
    "past-the-end": (
        lambda lib: lib.zeros(4).as_strided((2,), (1,), 3),
        _exact(
            "setStorage: sizes [2], strides [1], storage offset 3, and itemsize 4 requiring a "
            "storage size of 20 are out of bounds for storage of size 16"
        ),
    ),
    "past-the-end-2d": (
        lambda lib: lib.zeros(2, 3, dtype=lib.float64).as_strided((2, 3), (3, 2), 0),
        _exact(
            "setStorage: sizes [2, 3], strides [3, 2], storage offset 0, and itemsize 8 requiring"
            " a storage size of 64 are out of bounds for storage of size 48"
        ),
    ),
    "negative-offset": (
        lambda lib: lib.zeros(4).as_strided((2,), (1,), -1),
        _exact("Tensor: invalid storage offset -1"),
    ),
    "overflowing-extent": (
        lambda lib: lib.zeros(4).as_strided((2,), (2**62,), 0),
        _exact(
            "Storage size calculation overflowed with sizes=[2] and strides=[4611686018427387904]"
        ),
    ),
}


@pytest.mark.views
@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_as_strided_stays_inside_its_storage(case):
    call, match = VIEW_CASES[case]
    _check(call, RuntimeError, match)


@pytest.mark.views
def test_as_strided_inside_the_storage_still_works():
    a = gt.arange(6.0)
    assert a.as_strided((2, 2), (3, 1), 1).tolist() == [[1.0, 2.0], [4.0, 5.0]]
    assert a.as_strided((0, 9), (100, 100), 6).shape == (0, 9)  # no element: reads nothing
    assert a[2:].as_strided((2,), (2,), 0).tolist() == [0.0, 2.0]  # the offset is the storage's


@pytest.mark.views
def test_check_view_geometry_is_reusable():
    check_view_geometry((2, 3), (3, 1), 0, 4, 6)  # exactly fits
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 20"):
        check_view_geometry((2, 3), (3, 1), 0, 4, 5)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        check_view_geometry((2, 3), (1,), 0, 4, 6)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        check_view_geometry((-1,), (1,), 0, 4, 6)


# ---------------------------------------------- 2 and 3. indices read by kernels

INDEX_CASES = {
    "gather-too-big": (
        lambda lib: lib.gather(lib.tensor([1.0, 2.0, 3.0]), 0, lib.tensor([5])),
        RuntimeError,
        _exact("index 5 is out of bounds for dimension 0 with size 3"),
    ),
    "gather-negative": (
        lambda lib: lib.gather(lib.tensor([1.0, 2.0, 3.0]), 0, lib.tensor([-1])),
        RuntimeError,
        _exact("index -1 is out of bounds for dimension 0 with size 3"),
    ),
    "gather-2d": (
        lambda lib: lib.zeros(2, 3).gather(1, lib.tensor([[0], [-4]])),
        RuntimeError,
        _exact("index -4 is out of bounds for dimension 1 with size 3"),
    ),
    "gather-0d-input": (
        lambda lib: lib.gather(lib.tensor(5.0), 0, lib.tensor([0, 1])),
        RuntimeError,
        _exact("index 1 is out of bounds for dimension 0 with size 1"),
    ),
    "scatter-negative": (
        lambda lib: lib.zeros(3).scatter(0, lib.tensor([-1]), lib.ones(1)),
        RuntimeError,
        _exact("index -1 is out of bounds for dimension 0 with size 3"),
    ),
    "scatter-value-negative": (
        lambda lib: lib.zeros(3).scatter(0, lib.tensor([-1]), 1.0),
        RuntimeError,
        _exact("index -1 is out of bounds for dimension 0 with size 3"),
    ),
    "scatter_add-too-big": (
        lambda lib: lib.zeros(3).scatter_add(0, lib.tensor([4]), lib.ones(1)),
        RuntimeError,
        _exact("index 4 is out of bounds for dimension 0 with size 3"),
    ),
    "scatter_add_-negative": (
        lambda lib: lib.zeros(3).scatter_add_(0, lib.tensor([-2]), lib.ones(1)),
        RuntimeError,
        _exact("index -2 is out of bounds for dimension 0 with size 3"),
    ),
    "index_select-negative": (
        lambda lib: lib.tensor([1.0, 2.0, 3.0]).index_select(0, lib.tensor([-1])),
        IndexError,
        _exact("index out of range in self"),
    ),
    "index_select-too-big": (
        lambda lib: lib.zeros(3, 2).index_select(0, lib.tensor([3])),
        IndexError,
        _exact("index out of range in self"),
    ),
    "index_select-0d": (
        lambda lib: lib.tensor(1.0).index_select(0, lib.tensor([1])),
        IndexError,
        _exact("index out of range in self"),
    ),
    "index_add_-negative": (
        lambda lib: lib.zeros(3).index_add_(0, lib.tensor([-1]), lib.ones(1)),
        IndexError,
        _exact("index out of range in self"),
    ),
    "index_add_-2d": (
        lambda lib: lib.zeros(2, 3).index_add_(1, lib.tensor([3]), lib.ones(2, 1)),
        RuntimeError,
        _exact("index 3 is out of bounds for dimension 1 with size 3"),
    ),
    "index_copy_-negative": (
        lambda lib: lib.zeros(3).index_copy_(0, lib.tensor([-1]), lib.ones(1)),
        IndexError,
        _exact("index_copy_(): index -1 is out of bounds for dimension 0 with size 3"),
    ),
    "index_copy-2d": (
        lambda lib: lib.zeros(2, 3).index_copy(1, lib.tensor([3]), lib.ones(2, 1)),
        IndexError,
        _exact("index_copy_(): index 3 is out of bounds for dimension 1 with size 3"),
    ),
    "embedding-negative": (
        lambda lib: lib.nn.functional.embedding(lib.tensor([0, -1]), lib.ones(3, 2)),
        IndexError,
        _exact("index out of range in self"),
    ),
    "embedding-too-big": (
        lambda lib: lib.nn.functional.embedding(lib.tensor([[3]]), lib.ones(3, 2)),
        IndexError,
        _exact("index out of range in self"),
    ),
    "cross_entropy-negative": (
        lambda lib: lib.nn.functional.cross_entropy(lib.zeros(2, 3), lib.tensor([0, -1])),
        IndexError,
        _exact("Target -1 is out of bounds."),
    ),
    "getitem-too-big": (
        lambda lib: lib.zeros(3)[lib.tensor([3])],
        IndexError,
        _exact("index 3 is out of bounds for dimension 0 with size 3"),
    ),
}


@pytest.mark.indexing
@pytest.mark.parametrize("case", list(INDEX_CASES))
def test_kernels_refuse_indices_out_of_range(case):
    call, exc_type, match = INDEX_CASES[case]
    _check(call, exc_type, match)


@pytest.mark.indexing
def test_in_place_index_errors_leave_the_tensor_untouched():
    x = gt.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        x.scatter_(0, gt.tensor([0, 5]), gt.tensor([9.0, 9.0]))
    with pytest.raises(IndexError):
        x.index_add_(0, gt.tensor([0, -1]), gt.tensor([9.0, 9.0]))
    assert x.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.indexing
def test_zero_dim_index_picks_its_element():
    a = gt.tensor([1.0, 2.0, 3.0])
    assert gt.gather(a, 0, gt.tensor(2)).item() == 3.0
    assert gt.zeros(3).scatter(0, gt.tensor(2), gt.tensor(5.0)).tolist() == [0.0, 0.0, 5.0]
    assert gt.zeros(3).scatter_add(0, gt.tensor(1), gt.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]
    assert gt.gather(gt.tensor(5.0), 0, gt.tensor([0, 0])).tolist() == [5.0, 5.0]


# A program that calls one index-reading operation in a loop while another
# thread keeps rewriting the index tensor between a valid index (0) and
# invalid ones. Each call must either succeed with the values index 0 picks
# or raise IndexError/RuntimeError; a crash, a hang or any other result fails.
_RACE_PROGRAM = textwrap.dedent(
    """
    import sys, threading, time
    import glasstorch as gt
    import glasstorch.nn.functional as F

    n = int(sys.argv[1])
    seconds = float(sys.argv[2])
    sys.setswitchinterval(1e-5)  # let the threads take turns often
    index = gt.zeros(n, dtype=gt.int64)
    raw = index.numpy()  # written from the other thread, bypassing every check
    a = gt.tensor([10.0, 20.0, 30.0])
    table = gt.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    rows = gt.tensor([[10.0, 20.0, 30.0], [10.0, 20.0, 30.0]])

    def only_first(values, first):
        assert all(v == first for v in values), values

    OPS = {
        "gather": lambda: only_first(gt.gather(a, 0, index).tolist(), 10.0),
        "scatter": lambda: gt.zeros(3).scatter(0, index, gt.ones(n)),
        "scatter_add": lambda: gt.zeros(3).scatter_add(0, index, gt.ones(n)),
        "index_select": lambda: only_first(a.index_select(0, index).tolist(), 10.0),
        "index_add": lambda: gt.zeros(3).index_add(0, index, gt.ones(n)),
        "index_copy": lambda: gt.zeros(3).index_copy(0, index, gt.ones(n)),
        "embedding": lambda: only_first(F.embedding(index, table).tolist(), [1.0, 2.0]),
        "embedding_backward": lambda: F.embedding(index, table.requires_grad_()).sum().backward(),
        "cross_entropy": lambda: F.cross_entropy(gt.zeros(n, 3), index),
        "nll_loss": lambda: F.nll_loss(gt.zeros(n, 3), index),
        "getitem": lambda: only_first(a[index].tolist(), 10.0),
        "getitem_dim1": lambda: only_first(rows[:, index].reshape(-1).tolist(), 10.0),
        "setitem": lambda: a.clone().__setitem__(index, 1.0),
    }

    stop = False

    def rewrite():
        values = (0, 2**40, 0, -4, 0, -(2**40), 0, 3)  # bad even for a[index]
        k = 0
        while not stop:
            raw[:] = values[k % len(values)]
            k += 1

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for name, op in OPS.items():
            calls = errors = 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                calls += 1
                try:
                    op()
                except (IndexError, RuntimeError):
                    errors += 1
            print(name, calls, errors, flush=True)
    finally:
        stop = True
        writer.join()
    """
)


@pytest.mark.indexing
@pytest.mark.cpu_only("another thread rewrites the index through NumPy's view of host memory")
def test_index_written_by_another_thread_never_crashes():
    """Each kernel reads each index once, checks it and uses what it checked."""
    n = 4000 if gt.tier == "fast" else 300  # the reference tier loops in Python
    result = subprocess.run(
        [sys.executable, "-c", _RACE_PROGRAM, str(n), "0.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, GLASSTORCH_TIER=gt.tier),
    )
    assert result.returncode == 0, (
        f"the race program ended with {result.returncode}:\n{result.stdout}\n"
        f"{result.stderr[-3000:]}"
    )
    done = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    assert len(done) == 13 and all(int(calls) > 0 for calls, _ in done.values()), done


# ------------------------------------------- 4. dimensions, 5 and 6. sizes

SIZE_CASES = {
    "eye-negative": (
        lambda lib: lib.eye(-1),
        _exact("n must be greater or equal to 0, got -1"),
    ),
    "eye-negative-m": (
        lambda lib: lib.eye(2, -1),
        _exact("m must be greater or equal to 0, got -1"),
    ),
    "ones-negative": (
        lambda lib: lib.ones(2, -1),
        _exact("Trying to create tensor with negative dimension -1: [2, -1]"),
    ),
    "zeros-negative": (
        lambda lib: lib.zeros(-1),
        _exact("zeros: Dimension size must be non-negative."),
    ),
    "empty-negative": (
        lambda lib: lib.empty(-1),
        _exact("Trying to create tensor with negative dimension -1: [-1]"),
    ),
    "full-negative": (
        lambda lib: lib.full((-1,), 1.0),
        _exact("Trying to create tensor with negative dimension -1: [-1]"),
    ),
    "rand-negative": (
        lambda lib: lib.rand(3, -2),
        _exact("Trying to create tensor with negative dimension -2: [3, -2]"),
    ),
    "randn-negative": (
        lambda lib: lib.randn(-1),
        _exact("Trying to create tensor with negative dimension -1: [-1]"),
    ),
    "randint-negative": (
        lambda lib: lib.randint(3, (-1,)),
        _exact("Trying to create tensor with negative dimension -1: [-1]"),
    ),
    "randperm-negative": (
        lambda lib: lib.randperm(-1),
        _exact("Trying to create tensor with negative dimension -1: [-1]"),
    ),
    "view-negative": (
        lambda lib: lib.ones(4).view(-2, -2),
        _exact("invalid shape dimension -2 at index 0 of shape [-2, -2]"),
    ),
    "reshape-negative": (
        lambda lib: lib.ones(4).reshape(2, -4),
        _exact("invalid shape dimension -4 at index 1 of shape [2, -4]"),
    ),
    "expand-negative": (
        lambda lib: lib.ones(1).expand(-2),
        _exact("numel: integer multiplication overflow"),
    ),
    "expand-overflow": (
        lambda lib: lib.ones(1).expand(2**62, 4).sum(),
        "numel: integer multiplication overflow",
    ),
    "expand-overflow-max": (
        lambda lib: lib.ones(1).expand(2**62, 4).max(0),
        "numel: integer multiplication overflow",
    ),
    "zeros-overflow": (
        lambda lib: lib.zeros(2**62, 4),
        _exact("Storage size calculation overflowed with sizes=[4611686018427387904, 4]"),
    ),
    "empty-byte-overflow": (
        lambda lib: lib.empty(2**61, 2, dtype=lib.float64),
        _exact("Storage size calculation overflowed with sizes=[2305843009213693952, 2]"),
    ),
    "arange-infinite": (
        lambda lib: lib.arange(0, float("inf")),
        _exact("unsupported range: 0 -> inf"),
    ),
    "arange-overflow": (
        lambda lib: lib.arange(0, 2**62),
        _exact("Storage size calculation overflowed with sizes=[4611686018427387904]"),
    ),
}


@pytest.mark.creation
@pytest.mark.parametrize("case", list(SIZE_CASES))
def test_sizes_are_checked(case):
    call, match = SIZE_CASES[case]
    _check(call, RuntimeError, match)


@pytest.mark.views
def test_sixty_four_dimensions_work_on_every_tier():
    x = gt.ones([1] * 17)
    assert x.sum().item() == 1.0
    y = gt.ones([1] * 63 + [2])
    assert (y + 1).sum(5).shape == (1,) * 62 + (2,)
    assert y.permute(*reversed(range(64))).contiguous().shape == (2,) + (1,) * 63
    assert gt.gather(y, 63, gt.zeros([1] * 64, dtype=gt.int64)).shape == (1,) * 64


@pytest.mark.views
def test_more_than_sixty_four_dimensions_are_refused():
    message = _exact("only tensors with up to 64 dims are supported")
    with pytest.raises(RuntimeError, match=message):
        gt.ones([1] * 65)
    with pytest.raises(RuntimeError, match=message):
        gt.ones(1).view([1] * 65)
    with pytest.raises(RuntimeError, match=message):
        gt.ones([1] * 64).unsqueeze(0)
    if torch is not None:  # PyTorch's own reductions stop at 64 dimensions with this message
        with pytest.raises(RuntimeError, match=message):
            torch.ones([1] * 65).sum(3)


# ------------------------------------------------- 7. values that fit their dtype

VALUE_CASES = {
    "tensor-beyond-int64": (
        lambda lib: lib.tensor([2**63]),
        ValueError,
        _exact("Overflow when unpacking long long"),
    ),
    "tensor-far-beyond-int64": (
        lambda lib: lib.tensor([[1], [2**64]]),
        ValueError,
        _exact("Overflow when unpacking long long"),
    ),
    "tensor-uint8": (
        lambda lib: lib.tensor([1, 256], dtype=lib.uint8),
        RuntimeError,
        _exact("value cannot be converted to type uint8 without overflow"),
    ),
    "tensor-int32": (
        lambda lib: lib.tensor([2**40], dtype=lib.int32),
        RuntimeError,
        _exact("value cannot be converted to type int32 without overflow"),
    ),
    "tensor-nan-int64": (
        lambda lib: lib.tensor([float("nan")], dtype=lib.int64),
        RuntimeError,
        _exact("value cannot be converted to type int64 without overflow"),
    ),
    "full-int32": (
        lambda lib: lib.full((2,), 2**40, dtype=lib.int32),
        RuntimeError,
        _exact("value cannot be converted to type int without overflow"),
    ),
    "full-int64": (
        lambda lib: lib.full((2,), 2**63),
        RuntimeError,
        _exact("value cannot be converted to type int64_t without overflow"),
    ),
    "full-float32": (
        lambda lib: lib.full((2,), 1e300, dtype=lib.float32),
        RuntimeError,
        _exact("value cannot be converted to type float without overflow"),
    ),
    "full_like-uint8": (
        lambda lib: lib.full_like(lib.zeros(2, dtype=lib.uint8), 300.0),
        RuntimeError,
        _exact("value cannot be converted to type uint8_t without overflow"),
    ),
    "randint-uint8-high": (
        lambda lib: lib.randint(0, 300, (4,), dtype=lib.uint8),
        RuntimeError,
        _exact("to - 1 is out of bounds for unsigned char"),
    ),
    "randint-uint8-low": (
        lambda lib: lib.randint(-1, 5, (4,), dtype=lib.uint8),
        RuntimeError,
        _exact("from is out of bounds for unsigned char"),
    ),
    "randint-int32": (
        lambda lib: lib.randint(0, 2**40, (4,), dtype=lib.int32),
        RuntimeError,
        _exact("to - 1 is out of bounds for int"),
    ),
    "randint-beyond-int64": (
        lambda lib: lib.randint(0, 2**63, (4,)),
        ValueError,
        _exact("Overflow when unpacking long long"),
    ),
    "arange-step-truncated-to-zero": (
        lambda lib: lib.arange(0, 1, 0.3, dtype=lib.int64),
        ValueError,
        _exact("step must be nonzero"),
    ),
    "arange-beyond-int64": (
        lambda lib: lib.arange(2**63 - 2, 2**63),
        RuntimeError,
        _exact("value cannot be converted to type int64_t without overflow"),
    ),
}


@pytest.mark.creation
@pytest.mark.parametrize("case", list(VALUE_CASES))
def test_values_that_do_not_fit_are_refused(case):
    call, exc_type, match = VALUE_CASES[case]
    _check(call, exc_type, match)


@pytest.mark.creation
def test_values_that_fit_follow_pytorch():
    """Where PyTorch converts rather than refuses, glasstorch gives its numbers."""
    cases = {
        "negative-uint8-wraps": lambda lib: lib.tensor([-1, -129], dtype=lib.uint8),
        "full-negative-uint8": lambda lib: lib.full((2,), -1, dtype=lib.uint8),
        "full-truncates": lambda lib: lib.full((2,), 2.5, dtype=lib.int64),
        "float32-overflow-is-inf": lambda lib: lib.tensor([1e300], dtype=lib.float32),
        "big-int-as-float": lambda lib: lib.tensor([2**64, 1.0]),
        "big-int-as-bool": lambda lib: lib.tensor([2**63, 0], dtype=lib.bool),
        "arange-truncates-ends": lambda lib: lib.arange(0.5, 3.7, 1.2, dtype=lib.int64),
        "arange-truncates-step": lambda lib: lib.arange(0, 5, 1.5, dtype=lib.int64),
        "arange-uint8-wraps": lambda lib: lib.arange(250, 260, dtype=lib.uint8),
    }
    expected = {
        "negative-uint8-wraps": [255, 127],
        "full-negative-uint8": [255, 255],
        "full-truncates": [2, 2],
        "float32-overflow-is-inf": [float("inf")],
        "big-int-as-float": [float(2**64), 1.0],
        "big-int-as-bool": [True, False],
        "arange-truncates-ends": [0, 1, 2],
        "arange-truncates-step": [0, 1, 2, 3, 4],
        "arange-uint8-wraps": [250, 251, 252, 253, 254, 255, 0, 1, 2, 3],
    }
    for name, call in cases.items():
        assert call(gt).tolist() == expected[name], name
        if torch is not None:
            assert call(torch).tolist() == expected[name], name
