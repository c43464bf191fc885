"""Interop with NumPy and Python: item, tolist, numpy() (sharing memory), __array__, repr,
len, iteration and bool/float/int conversion."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, gt_dtype, torch
from strategies import ALL_DTYPES

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device): item,
# tolist, len, iteration and the Python conversions copy to the host there.
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("default_device")]

#: numpy() and __array__ share the memory of CPU tensors; on CUDA PyTorch refuses numpy()
#: with a TypeError (test_cuda_device checks it).
NUMPY_MEMORY = pytest.mark.cpu_only("numpy() and __array__ share the memory of CPU tensors")


@pytest.mark.parametrize(
    "dtype, value, python_type",
    [
        ("float32", 1.5, float),
        ("float64", -2.25, float),
        ("int64", 7, int),
        ("int32", -3, int),
        ("uint8", 200, int),
        ("bool", True, bool),
    ],
)
def test_item(dtype, value, python_type):
    x = gt.tensor([value], dtype=gt_dtype(dtype))
    item = x.item()
    assert type(item) is python_type and item == value
    assert type(x[0].item()) is python_type
    assert gt.tensor([[value]], dtype=gt_dtype(dtype)).item() == value


def test_item_rounds_float32_through_double():
    assert gt.tensor(0.1).item() == float(np.float32(0.1))


def test_tolist():
    assert gt.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert gt.tensor(2.5).tolist() == 2.5
    assert gt.tensor([True, False]).tolist() == [True, False]
    assert gt.zeros(2, 0).tolist() == [[], []]
    values = gt.arange(6.0).view(2, 3).t().tolist()
    assert values == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert all(type(v) is float for row in values for v in row)
    assert all(type(v) is int for v in gt.tensor([1, 2], dtype=gt.int32).tolist())


@NUMPY_MEMORY
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_numpy_shares_memory(dtype):
    x = gt.zeros(2, 3, dtype=gt_dtype(dtype))
    a = x.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.dtype(dtype) and a.shape == (2, 3)
    a[1, 1] = 1
    assert x[1, 1].item() == 1
    x[0, 2] = 1
    assert a[0, 2] == 1


@NUMPY_MEMORY
def test_numpy_of_a_view_has_its_strides():
    x = gt.arange(6.0).view(2, 3)
    a = x.t().numpy()
    assert a.strides == (4, 12)
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3).T)
    b = x[:, 1].numpy()
    b[0] = -5.0
    assert x[0, 1].item() == -5.0


@NUMPY_MEMORY
def test_numpy_refuses_requires_grad():
    def call(lib):
        return lib.tensor([1.0], requires_grad=True).numpy()

    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"Can't call numpy\(\) on Tensor that requires grad\. "
        r"Use tensor\.detach\(\)\.numpy\(\) instead\.",
    )
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(w.detach().numpy(), [1.0, 2.0])


@NUMPY_MEMORY
def test_numpy_of_a_tensor_that_requires_grad_under_no_grad_and_with_force():
    # PyTorch refuses only while grad mode is on: a @once_differentiable backward,
    # which runs under no_grad, may hand its saved outputs to NumPy.
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    with gt.no_grad():
        np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(w.numpy(force=True), [1.0, 2.0])
    if torch is not None:
        with torch.no_grad():
            np.testing.assert_array_equal(
                torch.tensor([1.0, 2.0], requires_grad=True).numpy(), [1.0, 2.0]
            )


@NUMPY_MEMORY
def test_array_protocol():
    x = gt.tensor([[1, 2], [3, 4]], dtype=gt.int32)
    a = np.asarray(x)
    assert a.dtype == np.int32
    np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), [[1.0, 2.0], [3.0, 4.0]])
    assert np.add(np.asarray(gt.tensor([1.0])), 1.0)[0] == 2.0
    np.testing.assert_array_equal(np.array(gt.arange(4).view(2, 2).t()), [[0, 2], [1, 3]])


@NUMPY_MEMORY
def test_array_protocol_takes_numpy2_keywords():
    x = gt.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # NumPy 2 passes copy=...
        a = np.asarray(x)
        b = np.array(x, copy=True)
    b[0] = 5.0
    assert a[0] == 1.0 and x[0].item() == 1.0


REPRS = [
    (lambda lib: lib.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (lambda lib: lib.tensor([1, 2]), "tensor([1, 2])"),
    (lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.0]]), "tensor([[1., 2.],\n        [3., 4.]])"),
    (lambda lib: lib.tensor(3.5), "tensor(3.5000)"),
    (lambda lib: lib.tensor(7), "tensor(7)"),
    (lambda lib: lib.tensor([True, False]), "tensor([ True, False])"),
    (
        lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64),
        "tensor([1., 2.], dtype=torch.float64)",
    ),
    (lambda lib: lib.tensor([1, 2], dtype=lib.int32), "tensor([1, 2], dtype=torch.int32)"),
    (lambda lib: lib.tensor([0.1, 2.5]), "tensor([0.1000, 2.5000])"),
    (lambda lib: lib.tensor([-1.25, 10.5]), "tensor([-1.2500, 10.5000])"),
    (lambda lib: lib.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda lib: lib.tensor([]), "tensor([])"),
    (lambda lib: lib.tensor([1.0, float("nan"), float("inf")]), "tensor([1., nan, inf])"),
    (
        lambda lib: lib.tensor([1.5, 2.0], requires_grad=True),
        "tensor([1.5000, 2.0000], requires_grad=True)",
    ),
    (
        lambda lib: lib.zeros(2, 2, 2, dtype=lib.uint8),
        "tensor([[[0, 0],\n         [0, 0]],\n\n        [[0, 0],\n         [0, 0]]], "
        "dtype=torch.uint8)",
    ),
]


@pytest.mark.cpu_only(
    "the expected text is PyTorch's repr of a CPU tensor, without device='cuda:0' "
    "(test_cuda_device checks a CUDA tensor's repr)"
)
@pytest.mark.parametrize("make, text", REPRS, ids=[text for _, text in REPRS])
def test_repr_matches_torch(make, text):
    if torch is not None:
        assert repr(make(torch)) == text  # the expectation is PyTorch's own text
    assert repr(make(gt)) == text
    assert str(make(gt)) == text


def test_len_and_iteration():
    x = gt.arange(6).view(3, 2)
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    assert_close(rows[1], np.array([2, 3]))
    rows[2][0] = 40  # iteration yields views
    assert x[2, 0].item() == 40
    assert [v.item() for v in gt.tensor([1.5, 2.5])] == [1.5, 2.5]
    assert len(gt.zeros(0, 4)) == 0 and list(gt.zeros(0)) == []


@pytest.mark.parametrize(
    "call, exc_type, match",
    [
        (lambda lib: len(lib.tensor(1.0)), TypeError, "len\\(\\) of a 0-d tensor"),
        (lambda lib: iter(lib.tensor(1.0)), TypeError, "iteration over a 0-d tensor"),
        (
            lambda lib: lib.tensor([1.0, 2.0]).item(),
            RuntimeError,
            "a Tensor with 2 elements cannot be converted to Scalar",
        ),
        (
            lambda lib: bool(lib.tensor([1.0, 2.0])),
            RuntimeError,
            "Boolean value of Tensor with more than one value is ambiguous",
        ),
        (
            lambda lib: float(lib.tensor([1.0, 2.0])),
            ValueError,
            "only one element tensors can be converted to Python scalars",
        ),
        (
            lambda lib: int(lib.zeros(0)),
            ValueError,
            "only one element tensors can be converted to Python scalars",
        ),
    ],
)
def test_conversion_errors(call, exc_type, match):
    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=exc_type,
        match=match,
    )


def test_python_conversions():
    assert bool(gt.tensor([0.5])) is True and bool(gt.tensor(0)) is False
    assert float(gt.tensor([[2]])) == 2.0 and type(float(gt.tensor(2))) is float
    assert int(gt.tensor(2.7)) == 2 and int(gt.tensor(-2.7)) == -2
    assert type(int(gt.tensor([3]))) is int
    if gt.tensor([1.0]):
        pass
    else:
        pytest.fail("a one-element non-zero tensor is truthy")
    assert [10, 20, 30][gt.tensor(1)] == 20  # integer tensors are valid Python indices


def test_as_tensor_puts_an_array_on_the_device_asked_for(device):
    array = np.arange(3, dtype=np.float32)
    out = gt.as_tensor(array, dtype=gt.float32, device=device)
    assert out.device.type == device and out.tolist() == [0.0, 1.0, 2.0]
    moved = gt.as_tensor(gt.tensor([1.0, 2.0]), device=device)
    assert moved.device.type == device
    kept = gt.as_tensor(out)  # a tensor keeps its device when none is named
    assert kept is out
    shared = gt.as_tensor(array, device="cpu")
    array[0] = 7.0  # on the CPU with its own dtype the array is shared
    assert shared[0].item() == 7.0
