"""Indexing with a Python ``range`` and with 0-d integer tensors, as PyTorch does.

A 0-d integer tensor indexes like the int it holds (basic indexing: a view
that shares storage, ``SelectBackward0``); a ``range`` like the list of its values.
"""

from __future__ import annotations

import pytest
from oracle import assert_close, assert_same_error, needs_torch, to_torch, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.indexing, needs_torch, pytest.mark.usefixtures("default_device")]


def _matrix():
    return gt.arange(15.0).reshape(5, 3)


@pytest.mark.parametrize(
    "key",
    [
        lambda m: m.tensor(1),
        lambda m: m.tensor(-2),
        lambda m: m.tensor(2, dtype=m.int32),
        lambda m: (m.tensor(1), m.tensor(2)),
        lambda m: (slice(None), m.tensor(0)),
        lambda m: range(2),
        lambda m: range(1, 5, 2),
        lambda m: (slice(None), range(2)),
        lambda m: (range(3), 0),
        lambda m: m.tensor(True),
        lambda m: m.tensor(1, dtype=m.uint8),
    ],
)
def test_getitem_matches_pytorch(key):
    x = _matrix()
    assert_close(x[key(gt)], to_torch(x)[key(torch)])


def test_a_0d_integer_index_is_a_view_like_pytorch():
    x = _matrix().clone()  # a base tensor, not a view
    ix = gt.tensor(3)
    row = x[ix]
    tx = to_torch(x)
    assert (row._base is x) == (tx[torch.tensor(3)]._base is tx)
    row[0] = -1.0  # writes through the view
    assert x[3, 0].item() == -1.0
    w = gt.ones(4, 2, requires_grad=True)
    tw = torch.ones(4, 2, requires_grad=True)
    assert w[gt.tensor(1)].grad_fn.name() == tw[torch.tensor(1)].grad_fn.name()


def test_setitem_and_inplace_add_with_a_0d_index():
    x, tx = _matrix(), to_torch(_matrix())
    row, trow = gt.ones(3), torch.ones(3)
    x[gt.tensor(2)] += row
    tx[torch.tensor(2)] += trow
    x[gt.tensor(-1)] = 7.0
    tx[torch.tensor(-1)] = 7.0
    x[range(2)] = 0.0
    tx[range(2)] = 0.0
    assert_close(x, tx)


def test_embedding_style_gradient_through_0d_indices():
    C = gt.randn(6, 2, dtype=gt.float64, requires_grad=True)
    tC = to_torch(C.detach()).requires_grad_()
    total, ttotal = 0, 0
    for i in (1, 4, 1):
        total = total + C[gt.tensor(i)].sum()
        ttotal = ttotal + tC[torch.tensor(i)].sum()
    total.backward()
    ttotal.backward()
    assert_close(C.grad, tC.grad)


@pytest.mark.errors
def test_a_0d_index_out_of_range():
    assert_same_error(
        lambda: _matrix()[gt.tensor(7)],
        lambda: to_torch(_matrix())[torch.tensor(7)],
        exc_type=IndexError,
        match="index 7 is out of bounds for dimension 0 with size 5",
    )
