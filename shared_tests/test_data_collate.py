"""default_collate and default_convert, compared with PyTorch's outputs."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from oracle import TEST_DEVICE, needs_torch, torch

import glasstorch as gt
from glasstorch.utils.data import default_collate, default_convert

# Every test makes its tensors on the device under test (conftest: --device): the
# factory functions allocate there.
pytestmark = [pytest.mark.data, pytest.mark.usefixtures("default_device")]

Point = collections.namedtuple("Point", ["x", "y"])


def describe(value):
    """A library-neutral picture of a collated value: types, dtypes, shapes and values."""
    if isinstance(value, gt.Tensor) or (torch is not None and isinstance(value, torch.Tensor)):
        return ("tensor", str(value.dtype).rsplit(".", 1)[-1], tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return (type(value).__name__, {k: describe(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [describe(v) for v in value])
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.name, value.tolist())
    return (type(value).__name__, value)


# Each case builds a batch with a given tensor library (glasstorch or torch).
CASES = {
    "tensors": lambda T: [T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])],
    "int_tensors_0d": lambda T: [T.tensor(1), T.tensor(2), T.tensor(3)],
    "ints": lambda T: [1, 2, 3],
    "floats": lambda T: [0.5, 1.5],
    "bools": lambda T: [True, False, True],
    "strings": lambda T: ["a", "bc"],
    "bytes": lambda T: [b"a", b"b"],
    "numpy_float32": lambda T: [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "numpy_int64": lambda T: [np.arange(3), np.arange(3, 6)],
    "numpy_scalars_f64": lambda T: [np.float64(1.5), np.float64(2.5)],
    "numpy_scalars_f32": lambda T: [np.float32(1.5), np.float32(2.5)],
    "numpy_scalars_i64": lambda T: [np.int64(4), np.int64(5)],
    "numpy_scalars_bool": lambda T: [np.bool_(True), np.bool_(False)],
    "pairs": lambda T: [(T.tensor([1, 2]), 0), (T.tensor([3, 4]), 1)],
    "lists": lambda T: [[1, 2.0], [3, 4.0]],
    "dicts": lambda T: [
        {"x": T.tensor([1.0]), "label": 1, "name": "a"},
        {"x": T.tensor([2.0]), "label": 0, "name": "b"},
    ],
    "namedtuples": lambda T: [Point(T.tensor(1.0), 2), Point(T.tensor(3.0), 4)],
    "nested": lambda T: [
        {"pair": (1, [0.5, T.tensor([1])]), "meta": {"id": 7}},
        {"pair": (2, [1.5, T.tensor([2])]), "meta": {"id": 8}},
    ],
}


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_default_collate_like_torch(case):
    ours = default_collate(CASES[case](gt))
    theirs = torch.utils.data.default_collate(CASES[case](torch))
    assert describe(ours) == describe(theirs)
    if isinstance(ours, gt.Tensor) and not case.startswith("numpy"):
        assert ours.device.type == TEST_DEVICE  # device samples stack on their device


def test_namedtuple_type_is_kept():
    out = default_collate([Point(gt.tensor(1.0), 2), Point(gt.tensor(3.0), 4)])
    assert type(out) is Point
    assert out.x.tolist() == [1.0, 3.0] and out.y.dtype == gt.int64
    assert out.x.device.type == TEST_DEVICE


def test_collate_dtypes():
    assert default_collate([1, 2]).dtype == gt.int64
    assert default_collate([1.0, 2.0]).dtype == gt.float64
    assert default_collate([True, False]).dtype == gt.bool
    stacked = default_collate([gt.zeros(2, 3), gt.ones(2, 3)])
    assert stacked.shape == (2, 2, 3) and stacked.dtype == gt.float32


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda T: [object(), object()],
        lambda T: [None, None],
        lambda T: [[1, 2], [3]],
        lambda T: [np.array(["a"]), np.array(["b"])],
        lambda T: [T.zeros(3), T.zeros(4)],
    ],
    ids=["object", "none", "ragged_lists", "string_array", "unequal_tensors"],
)
def test_collate_errors_like_torch(make):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.default_collate(make(torch))
    with pytest.raises(type(theirs.value)) as ours:
        default_collate(make(gt))
    assert str(ours.value).replace("glasstorch", "torch") == str(theirs.value)


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        lambda T: np.arange(4.0),
        lambda T: np.float32(2.5),
        lambda T: {"a": np.arange(2), "b": "text"},
        lambda T: (np.int64(1), [np.zeros(2)]),
        lambda T: Point(np.arange(2), 3),
        lambda T: np.array(["s"]),
        lambda T: T.tensor([1, 2]),
        lambda T: 5,
    ],
)
def test_default_convert_like_torch(make):
    ours = default_convert(make(gt))
    theirs = torch.utils.data.default_convert(make(torch))
    assert describe(ours) == describe(theirs)


@pytest.mark.cpu_only("NumPy arrays collate into CPU tensors over their memory")
def test_collate_numpy_shares_memory_before_stacking():
    # Each array becomes a tensor over the same memory; only the stack copies.
    arrays = [np.arange(3, dtype=np.int64), np.arange(3, 6, dtype=np.int64)]
    out = default_collate(arrays)
    assert out.tolist() == [[0, 1, 2], [3, 4, 5]]
    arrays[0][0] = 100
    assert out[0, 0].item() == 0  # the batch is a new tensor
