"""rand/randn/randint/randperm and their _like forms, and manual_seed reproducibility.

glasstorch draws from its own Philox generator (docs/guide/architecture.md, section 3), so its numbers are
not PyTorch's CPU numbers: these tests check shapes, dtypes, ranges, rough statistics
and that a seed reproduces a stream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from oracle import assert_same_error, dtype_name, gt_dtype, needs_torch, to_numpy, torch

import glasstorch as gt
from glasstorch._tier import complete_tiers

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.random, pytest.mark.usefixtures("default_device")]


# -- rand, randn, randint, randperm, their _like forms and manual_seed


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


# -- Sampling: multinomial, normal and bernoulli by their distributions, seeds and tiers
def _frequencies(samples, categories):
    values = to_numpy(samples).reshape(-1)
    return np.bincount(values, minlength=categories) / values.size


def test_multinomial_with_replacement_follows_the_weights():
    gt.manual_seed(3)
    weights = gt.tensor([1.0, 0.0, 3.0, 6.0])  # not normalised, one impossible category
    samples = gt.multinomial(weights, 4000, replacement=True)
    assert samples.dtype == gt.int64 and samples.shape == (4000,)
    np.testing.assert_allclose(_frequencies(samples, 4), [0.1, 0.0, 0.3, 0.6], atol=0.03)


def test_multinomial_without_replacement_draws_distinct_indices():
    gt.manual_seed(4)
    samples = gt.multinomial(gt.rand(3, 6) + 0.1, 6)
    assert samples.shape == (3, 6)
    for row in samples.tolist():
        assert sorted(row) == list(range(6))
    # The first draw follows the weights; zero weights come after all others.
    firsts = gt.multinomial(gt.tensor([[0.2, 0.8, 0.0]]).expand(2000, 3), 3)
    np.testing.assert_allclose(_frequencies(firsts[:, 0], 3), [0.2, 0.8, 0.0], atol=0.04)
    assert (firsts[:, 2] == 2).all()


def test_multinomial_is_reproducible_and_takes_a_generator():
    probs = gt.tensor([0.3, 0.3, 0.4])
    gt.manual_seed(7)
    first = gt.multinomial(probs, 5, replacement=True)
    gt.manual_seed(7)
    assert gt.equal(first, probs.multinomial(5, replacement=True))
    g = gt.Generator().manual_seed(7)
    assert gt.equal(first, gt.multinomial(probs, 5, True, generator=g))


@needs_torch
@pytest.mark.errors
@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1),
        lambda lib: lib.multinomial(lib.tensor([-1.0, 1.0]), 1),
        lambda lib: lib.multinomial(lib.tensor([float("nan"), 1.0]), 1),
        lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1),
        lambda lib: lib.multinomial(lib.ones(3), 0),
        lambda lib: lib.multinomial(lib.ones(3), 4),
        lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
        lambda lib: lib.normal(lib.zeros(2), -1.0),
        lambda lib: lib.normal(0.0, -1.0, (2,)),
        lambda lib: lib.bernoulli(lib.tensor([2.0])),
    ],
)
def test_sampling_errors_match_pytorch(call):
    assert_same_error(lambda: call(gt), lambda: call(torch))


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.normal(lib.zeros(2, 1), lib.ones(3)),
        lambda lib: lib.normal(lib.zeros(3, dtype=lib.float64), 2.0),
        lambda lib: lib.normal(1.0, lib.ones(4)),
        lambda lib: lib.normal(0.0, 1.0, size=(2, 3)),
        lambda lib: lib.normal(2, 3, (5,)),
        lambda lib: lib.bernoulli(lib.full((3,), 0.5, dtype=lib.float64)),
        lambda lib: lib.zeros(3, dtype=lib.int64).bernoulli_(0.5),
        lambda lib: lib.zeros(4).bernoulli_(lib.full((4,), 0.3)),
    ],
)
def test_sampling_shapes_and_dtypes_match_pytorch(call):
    ours, theirs = call(gt), call(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype)


def test_normal_and_bernoulli_moments():
    gt.manual_seed(5)
    x = gt.normal(gt.full((4000,), 2.0), gt.full((4000,), 3.0))
    assert abs(x.mean().item() - 2.0) < 0.2 and abs(x.std().item() - 3.0) < 0.2
    y = gt.normal(-1.0, 0.5, (4000,), generator=gt.Generator().manual_seed(1))
    assert abs(y.mean().item() + 1.0) < 0.05 and abs(y.std().item() - 0.5) < 0.05
    b = gt.bernoulli(gt.full((4000,), 0.25))
    assert set(b.tolist()) <= {0.0, 1.0}
    assert abs(b.mean().item() - 0.25) < 0.03


@pytest.mark.autograd
def test_normal_gradient_flows_to_mean_and_std():
    mean = gt.zeros(3, requires_grad=True)
    std = gt.ones(3, requires_grad=True)
    gt.manual_seed(0)
    out = gt.normal(mean, std)
    out.sum().backward()
    assert gt.equal(mean.grad, gt.ones(3))
    assert gt.allclose(std.grad, out.detach())  # d(mean + std * z)/d std = z


_PROGRAM = r"""
import json
import glasstorch as torch
torch.manual_seed(99)
print(json.dumps({
    "with": torch.multinomial(torch.tensor([[0.2, 0.5, 0.3], [1.0, 1.0, 0.0]]), 8, True).tolist(),
    "without": torch.multinomial(torch.tensor([0.1, 0.2, 0.3, 0.4]), 4).tolist(),
    "normal": torch.normal(torch.zeros(3), torch.ones(3)).tolist(),
    "bernoulli": torch.bernoulli(torch.full((6,), 0.5)).tolist(),
}))
"""


@pytest.mark.contract
def test_same_seed_same_samples_on_every_tier():
    tiers = complete_tiers()
    results = []
    for tier in tiers:
        env = dict(os.environ, GLASSTORCH_TIER=tier)
        done = subprocess.run(
            [sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert all(result == results[0] for result in results)
