"""sort, argsort, topk and msort against PyTorch, on both tiers (the ``sort`` kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, to_torch, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.reduction, needs_torch, pytest.mark.usefixtures("default_device")]


def _data(shape, dtype="float32", seed=0, ties=False):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, shape) if ties else rng.standard_normal(shape)
    return on_test_device(values.astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_pytorch_with_ties(dtype, dim, descending):
    x = _data((4, 7), dtype, ties=True)
    ours = gt.sort(x, dim=dim, descending=descending, stable=True)
    theirs = torch.sort(to_torch(x), dim=dim, descending=descending, stable=True)
    assert_close(ours.values, theirs.values)
    assert_close(ours.indices, theirs.indices)
    assert type(ours).__name__ == "sort"
    values, indices = ours  # a named tuple
    assert_close(x.argsort(dim=dim, descending=descending, stable=True), theirs.indices)


def test_sort_nan_is_largest_and_bool_sorts():
    x = gt.tensor([[2.0, float("nan"), -1.0, 5.0]])
    for descending in (False, True):
        ours = x.sort(descending=descending)
        theirs = to_torch(x).sort(descending=descending, stable=True)
        assert_close(ours.values, theirs.values)
        assert_close(ours.indices, theirs.indices)
    b = gt.tensor([True, False, True, False])
    assert_close(gt.sort(b, stable=True).indices, torch.sort(to_torch(b), stable=True).indices)


def test_sort_of_0d_and_empty_and_strided():
    assert_close(gt.sort(gt.tensor(3.0)).values, torch.sort(torch.tensor(3.0)).values)
    assert gt.sort(gt.tensor(3.0)).indices.shape == ()
    assert gt.sort(gt.zeros(0, 3), dim=0).values.shape == (0, 3)
    x = _data((5, 6)).t()  # non-contiguous input
    assert_close(gt.sort(x, dim=1).values, torch.sort(to_torch(x), dim=1).values)
    assert_close(gt.msort(x), torch.msort(to_torch(x)))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_topk_matches_pytorch(largest, dim):
    x = _data((6, 5), seed=1)
    ours = gt.topk(x, 3, dim=dim, largest=largest)
    theirs = torch.topk(to_torch(x), 3, dim=dim, largest=largest)
    assert_close(ours.values, theirs.values)
    assert_close(ours.indices, theirs.indices)
    assert type(ours).__name__ == "topk"
    assert_close(x.topk(2).values, to_torch(x).topk(2).values)


@pytest.mark.errors
def test_topk_k_out_of_range():
    assert_same_error(
        lambda: gt.topk(gt.ones(3), 4),
        lambda: torch.topk(torch.ones(3), 4),
        exc_type=RuntimeError,
        match="selected index k out of range",
    )


@pytest.mark.autograd
def test_sort_and_topk_grad_fn_names_and_gradients():
    x = _data((3, 4), "float64", seed=2).requires_grad_()
    tx = to_torch(x).requires_grad_()
    assert x.sort().values.grad_fn.name() == tx.sort().values.grad_fn.name()
    assert x.topk(2).values.grad_fn.name() == tx.topk(2).values.grad_fn.name()
    weights = _data((3, 2), "float64", seed=3)
    (x.topk(2, dim=1).values * weights).sum().backward()
    (tx.topk(2, dim=1).values * to_torch(weights)).sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.gradcheck
def test_sort_topk_gradcheck():
    x = _data((3, 4), "float64", seed=4).requires_grad_()
    assert gradcheck(lambda t: gt.sort(t, dim=0, descending=True).values, (x,))
    assert gradcheck(lambda t: gt.topk(t, 2).values, (x,))
