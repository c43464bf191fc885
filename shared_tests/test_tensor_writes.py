"""Writes into a tensor by value, index or pattern against PyTorch: fill_ and zero_ on an expanded
tensor, index_add and index_fill, fill_diagonal_; values and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import both, floats
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt

pytestmark = [pytest.mark.usefixtures("default_device")]


# -- fill_ and zero_ on an expanded tensor, index_add on a 0-d tensor
@pytest.mark.views
def test_fill_and_zero_on_expanded_tensor():
    base = gt.arange(6.0).view(3, 2)
    expanded = base[1:, :1].expand(2, 5)
    assert expanded.fill_(7.0) is expanded
    assert_close(base, np.array([[0.0, 1.0], [7.0, 3.0], [7.0, 5.0]], dtype="float32"))
    assert_close(expanded, np.full((2, 5), 7.0, dtype="float32"))
    expanded.zero_()
    assert_close(base, np.array([[0.0, 1.0], [0.0, 3.0], [0.0, 5.0]], dtype="float32"))


@pytest.mark.indexing
def test_index_add_on_0d_tensor():
    assert_close(gt.tensor(1.0).index_add(0, gt.tensor([0]), gt.tensor(3.0), alpha=2), 7.0)
    assert_close(gt.tensor(1.0).index_copy(0, gt.tensor([0]), gt.tensor(5.0)), 5.0)


# -- index_fill and fill_diagonal_
@pytest.mark.math
@needs_torch
def test_index_fill_matches_pytorch(device):
    x = floats(3, 4)
    for dim, index in [(0, [0, 2]), (1, [3]), (-1, [1, 1, 0])]:
        mine, theirs = on_test_device(x.copy()), torch.tensor(x)
        assert mine.index_fill_(dim, on_test_device(np.array(index)), -1.5) is mine
        theirs.index_fill_(dim, torch.tensor(index), -1.5)
        assert_close(mine, theirs)
        idx = np.array(index)
        both(lambda T, x, i, dim=dim: x.index_fill(dim, i, 7.0), x, idx, grad=True)
    both(lambda T, x, i: x.index_fill(0, i, T.tensor(2)), np.arange(4), np.array([1]))
    assert_same_error(
        lambda: gt.zeros(3, 4).index_fill_(0, gt.tensor([0], dtype=gt.int32), 1.0),
        lambda: torch.zeros(3, 4).index_fill_(0, torch.tensor([0], dtype=torch.int32), 1.0),
        match="Expected dtype int64 for index",
    )


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (7, 3), (3, 3, 3)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_pytorch(device, shape, wrap):
    x = floats(*shape)
    mine, theirs = on_test_device(x.copy()), torch.tensor(x)
    assert mine.fill_diagonal_(5.0, wrap=wrap) is mine
    theirs.fill_diagonal_(5.0, wrap=wrap)
    assert_close(mine, theirs)


@pytest.mark.math
@needs_torch
@pytest.mark.errors
def test_fill_diagonal_errors():
    assert_same_error(
        lambda: gt.zeros(3).fill_diagonal_(1),
        lambda: torch.zeros(3).fill_diagonal_(1),
        match="dimensions must larger than 1",
    )
    assert_same_error(
        lambda: gt.zeros(2, 3, 4).fill_diagonal_(1),
        lambda: torch.zeros(2, 3, 4).fill_diagonal_(1),
        match="all dimensions of input must be of equal length",
    )


# ------------------------------------------------------------------ resize_
@pytest.mark.views
def test_resize_keeps_values_and_makes_strides_contiguous():
    x = gt.arange(6.0)
    assert x.resize_(2, 2) is x
    assert tuple(x.shape) == (2, 2) and x.stride() == (2, 1)
    assert_close(x, np.array([[0.0, 1.0], [2.0, 3.0]], dtype=np.float32))
    x.resize_((3, 3))  # grows: the first six values stay
    assert tuple(x.shape) == (3, 3)
    assert_close(x.flatten()[:6], np.arange(6.0, dtype=np.float32))
    tail = gt.arange(6.0)[2:]
    tail.resize_(2)  # from the view's own offset
    assert_close(tail, np.array([2.0, 3.0], dtype=np.float32))


@pytest.mark.views
@needs_torch
def test_resize_matches_torch():
    for sizes in [(4,), (2, 3), (3, 1), (0,), (7,)]:
        ours, theirs = gt.arange(6.0).view(2, 3), torch.arange(6.0).view(2, 3)
        ours.resize_(*sizes), theirs.resize_(*sizes)
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        kept = min(6, ours.numel())
        assert_close(ours.flatten()[:kept], theirs.flatten()[:kept])
    transposed, theirs = gt.arange(6.0).view(2, 3).t(), torch.arange(6.0).view(2, 3).t()
    transposed.resize_(3, 2), theirs.resize_(3, 2)  # the same shape changes nothing
    assert transposed.stride() == theirs.stride()


@pytest.mark.views
def test_resize_errors_match_torch():
    assert_same_error(
        lambda: gt.ones(2, requires_grad=True).resize_(3),
        lambda: torch.ones(2, requires_grad=True).resize_(3),
        match="cannot resize variables that require grad",
        exc_type=RuntimeError,
    )
