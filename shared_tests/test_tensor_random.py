"""rand/randn/randint/randperm and their _like forms, and manual_seed reproducibility.

glasstorch draws from its own Philox generator (docs/guide/architecture.md, section 3), so its numbers are
not PyTorch's CPU numbers: these tests check shapes, dtypes, ranges, rough statistics
and that a seed reproduces a stream.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import dtype_name, gt_dtype, to_numpy

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.random, pytest.mark.usefixtures("default_device")]


def test_rand_shape_dtype_range():
    gt.manual_seed(0)
    x = gt.rand(4, 5)
    assert x.shape == (4, 5) and x.dtype == gt.float32 and x.stride() == (5, 1)
    values = to_numpy(x)
    assert ((values >= 0) & (values < 1)).all()
    assert len(np.unique(values)) == 20
    assert gt.rand((2, 3), dtype=gt.float64).dtype == gt.float64
    assert gt.rand(0).shape == (0,)
    assert gt.rand(()).shape == ()


def test_randn_shape_and_statistics():
    gt.manual_seed(1)
    values = to_numpy(gt.randn(400, dtype=gt.float64))
    assert values.dtype == np.float64
    assert abs(values.mean()) < 0.25
    assert 0.8 < values.std() < 1.2
    assert gt.randn(2, 3).dtype == gt.float32
    assert gt.randn((1, 2)).shape == (1, 2)


def test_rand_is_roughly_uniform():
    gt.manual_seed(2)
    values = to_numpy(gt.rand(400))
    counts, _ = np.histogram(values, bins=4, range=(0, 1))
    assert (counts > 60).all()


@pytest.mark.parametrize(
    "args, kwargs, low, high",
    [((10, (3, 4)), {}, 0, 10), ((-5, 5, (50,)), {}, -5, 5), ((0, 2, (30,)), {}, 0, 2)],
)
def test_randint(args, kwargs, low, high):
    gt.manual_seed(3)
    x = gt.randint(*args, **kwargs)
    assert x.dtype == gt.int64
    values = to_numpy(x)
    assert values.min() >= low and values.max() < high
    assert len(np.unique(values)) > 1


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_randint_dtype(dtype):
    x = gt.randint(0, 7, (20,), dtype=gt_dtype(dtype))
    assert dtype_name(x.dtype) == dtype
    values = to_numpy(x)
    assert (values == np.floor(values)).all() and values.min() >= 0 and values.max() < 7


@pytest.mark.parametrize("n", [0, 1, 2, 10, 37])
def test_randperm(n):
    x = gt.randperm(n)
    assert x.dtype == gt.int64 and x.shape == (n,)
    assert sorted(to_numpy(x).tolist()) == list(range(n))
    assert gt.randperm(n, dtype=gt.int32).dtype == gt.int32


def test_randperm_shuffles():
    gt.manual_seed(4)
    assert to_numpy(gt.randperm(20)).tolist() != list(range(20))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_like_forms(dtype):
    x = gt.zeros(2, 3, dtype=gt_dtype(dtype))
    for fn in (gt.rand_like, gt.randn_like):
        y = fn(x)
        assert y.shape == (2, 3) and y.dtype == x.dtype
    r = gt.rand_like(x)
    assert ((to_numpy(r) >= 0) & (to_numpy(r) < 1)).all()
    i = gt.randint_like(x, 5)
    assert i.dtype == x.dtype and i.shape == x.shape
    assert to_numpy(i).max() < 5
    j = gt.randint_like(gt.zeros(10, dtype=gt.int64), 3, 6)
    assert j.dtype == gt.int64 and 3 <= to_numpy(j).min() and to_numpy(j).max() < 6
    assert gt.rand_like(x, dtype=gt.float64).dtype == gt.float64


def _draw_everything():
    return [
        to_numpy(gt.rand(3)),
        to_numpy(gt.randn(2, 2, dtype=gt.float64)),
        to_numpy(gt.randint(0, 100, (5,))),
        to_numpy(gt.randperm(6)),
        to_numpy(gt.rand_like(gt.zeros(2))),
    ]


def test_manual_seed_reproduces_the_stream():
    gt.manual_seed(1234)
    first = _draw_everything()
    gt.manual_seed(1234)
    second = _draw_everything()
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    gt.manual_seed(1235)
    third = _draw_everything()
    assert not all(np.array_equal(a, b) for a, b in zip(first, third, strict=True))


def test_successive_draws_differ():
    gt.manual_seed(7)
    a, b = to_numpy(gt.rand(8)), to_numpy(gt.rand(8))
    assert not np.array_equal(a, b)
