"""Backward is iterative: a graph 100,000 nodes deep backpropagates without
hitting Python's recursion limit (nor overflowing the C stack when it is freed).

On a device the chain is 10,000 nodes deep: still far past the recursion limit,
while each of its operations is a kernel launch (the engine is the same code
whichever device computes, and the CPU run keeps the full depth).
"""

from __future__ import annotations

import sys

import pytest

import glasstorch as gt

pytestmark = pytest.mark.autograd

DEPTH = 100_000
DEVICE_DEPTH = 10_000


def test_chain_of_100_000_ops_backpropagates(device):
    depth = DEPTH if device == "cpu" else DEVICE_DEPTH
    assert sys.getrecursionlimit() < depth  # a recursive engine could not pass
    x = gt.tensor([1.5], requires_grad=True, device=device)
    y = x
    for i in range(depth):
        y = y * 1.0 if i % 2 else y + 0.0
    assert y.grad_fn is not None
    y.sum().backward()
    assert x.grad.tolist() == [1.0]
    del y  # freeing the 100,000-node graph must not recurse either
    x.grad = None
    # and the leaf is still usable afterwards
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0]
