"""Tensor hooks: ``register_hook`` on leaves and intermediate results.

A hook sees the gradient flowing into its tensor during backward; returning a
tensor replaces that gradient, returning ``None`` leaves it as it was. The handle
it returns removes the hook again.

Every test makes its tensors on the device under test (conftest's
``default_device``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, torch

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


def leaf(values):
    return gt.tensor(values, dtype=gt.float64, requires_grad=True)


def test_hook_on_leaf_sees_and_replaces_grad():
    x = leaf([1.0, 2.0])
    seen = []

    def double(grad):
        seen.append(grad.clone())
        return grad * 2

    x.register_hook(double)
    (x * 3).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], np.array([3.0, 3.0]))
    assert_close(x.grad, np.array([6.0, 6.0]))


def test_hook_returning_none_leaves_grad_unchanged():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda grad: seen.append(grad.clone()))
    (x * x).sum().backward()
    assert_close(seen[0], np.array([2.0, 4.0]))
    assert_close(x.grad, np.array([2.0, 4.0]))


def test_hook_on_non_leaf_changes_what_flows_upstream():
    x = leaf([1.0, 2.0])
    y = x * 3
    seen = []

    def times_ten(grad):
        seen.append(grad.clone())
        return grad * 10

    y.register_hook(times_ten)
    (y * y).sum().backward()
    assert_close(seen[0], np.array([6.0, 12.0]))  # 2 * y
    assert_close(x.grad, np.array([180.0, 360.0]))  # 3 * 10 * 2y


def test_hook_on_non_leaf_sees_summed_gradient_once():
    x = leaf([1.0, 2.0])
    y = x * 2
    calls = []
    y.register_hook(lambda grad: calls.append(grad.clone()))
    (y * 3 + y.exp()).sum().backward()
    assert len(calls) == 1
    assert_close(calls[0], 3 + np.exp(np.array([2.0, 4.0])))


def test_hooks_run_in_registration_order_and_chain():
    x = leaf([1.0])
    order = []

    def first(grad):
        order.append("first")
        return grad + 1

    def second(grad):
        order.append("second")
        assert_close(grad, np.array([3.0]))  # sees the first hook's result
        return grad * 2

    x.register_hook(first)
    x.register_hook(second)
    (x * 2).sum().backward()
    assert order == ["first", "second"]
    assert_close(x.grad, np.array([6.0]))


def test_handle_remove():
    x = leaf([1.0, 2.0])
    calls = []
    handle = x.register_hook(lambda grad: calls.append(1) or grad * 100)
    (x * 1).sum().backward()
    assert_close(x.grad, np.array([100.0, 100.0]))
    handle.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert_close(x.grad, np.array([1.0, 1.0]))
    assert len(calls) == 1


def test_handle_remove_on_non_leaf():
    x = leaf([1.0])
    y = x * 2
    handle = y.register_hook(lambda grad: grad * 0)
    handle.remove()
    y.sum().backward()
    assert_close(x.grad, np.array([2.0]))


def test_hook_fires_for_autograd_grad_too():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda grad: grad * 5)
    (g,) = gt.autograd.grad(y.sum(), x)
    assert_close(g, np.array([10.0, 10.0]))


def test_hook_with_retain_grad_sees_modified_grad():
    # PyTorch: retain_grad's stored .grad reflects hooks registered before it ran.
    x = leaf([1.0])
    y = x * 2
    y.register_hook(lambda grad: grad * 3)
    y.retain_grad()
    (y * 4).sum().backward()
    assert_close(y.grad, np.array([12.0]))
    assert_close(x.grad, np.array([24.0]))


@pytest.mark.errors
def test_register_hook_on_tensor_without_grad():
    assert_same_error(
        lambda: gt.ones(2).register_hook(lambda g: g),
        lambda: torch.ones(2).register_hook(lambda g: g),
        exc_type=RuntimeError,
        match="cannot register a hook on a tensor that doesn't require gradient",
    )
