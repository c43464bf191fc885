"""Tensor hooks: ``register_hook`` on leaves and intermediate results, hooks
after a leaf's gradient is accumulated, and callbacks at the end of backward.

A hook sees the gradient flowing into its tensor during backward; returning a
tensor replaces that gradient, returning ``None`` leaves it as it was. The handle
it returns removes the hook again. ``register_post_accumulate_grad_hook`` sees
the leaf once its ``.grad`` is summed; ``Variable._execution_engine.queue_callback``
runs a function when the backward pass ends (the two pieces DistributedDataParallel
is built from).

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


# ------------------------------------------------ post-accumulate-grad hooks
def test_post_accumulate_grad_hook_sees_the_leaf_with_its_summed_grad():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.clone())))
    (x * 2 + x * 3).sum().backward()  # two gradients reach x: one call, after the sum
    assert len(seen) == 1 and seen[0][0]
    assert_close(seen[0][1], np.array([5.0, 5.0]))
    (x * 2).sum().backward()  # the second backward accumulates: the hook sees 5 + 2
    assert_close(seen[1][1], np.array([7.0, 7.0]))


def test_post_accumulate_grad_hook_runs_after_register_hook():
    x = leaf([1.0])
    order = []
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post", t.grad.item())))
    x.register_hook(lambda g: order.append(("pre", g.item())) or g * 10)
    (x * 3).sum().backward()
    assert order == [("pre", 3.0), ("post", 30.0)]


def test_post_accumulate_grad_hooks_skip_what_accumulates_nothing():
    # autograd.grad fills no .grad, and backward(inputs=...) only the inputs'.
    x, w = leaf([2.0]), leaf([3.0])
    calls = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append("x"))
    w.register_post_accumulate_grad_hook(lambda t: calls.append("w"))
    gt.autograd.grad((x * w).sum(), x)
    (x * w).sum().backward(inputs=[w])
    assert calls == ["w"]


def test_post_accumulate_grad_hook_handle_removes_it():
    x = leaf([1.0])
    calls = []
    handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    (x * 2).sum().backward()
    handle.remove()
    (x * 2).sum().backward()
    assert calls == [1]
    assert_close(x.grad, np.array([4.0]))


@pytest.mark.errors
def test_post_accumulate_grad_hook_errors():
    x = leaf([1.0])
    assert_same_error(
        lambda: (x * 2).register_post_accumulate_grad_hook(lambda t: None),
        lambda: (torch.ones(1, requires_grad=True) * 2).register_post_accumulate_grad_hook(
            lambda t: None
        ),
        exc_type=RuntimeError,
        match="post accumulate grad hooks cannot be registered on non-leaf tensors",
    )
    assert_same_error(
        lambda: gt.ones(1).register_post_accumulate_grad_hook(lambda t: None),
        lambda: torch.ones(1).register_post_accumulate_grad_hook(lambda t: None),
        exc_type=RuntimeError,
        match="cannot register a hook on a tensor that doesn't require gradient",
    )


@pytest.mark.errors
def test_post_accumulate_grad_hook_must_return_none():
    def backward_with(module, hook):
        x = module.ones(1, requires_grad=True)
        x.register_post_accumulate_grad_hook(hook)
        (x * 2).sum().backward()

    assert_same_error(
        lambda: backward_with(gt, lambda t: t * 2),
        lambda: backward_with(torch, lambda t: t * 2),
        exc_type=RuntimeError,
        match="Tensor post accumulate grad hooks should return None.",
    )
    assert_same_error(
        lambda: backward_with(gt, lambda t: 5),
        lambda: backward_with(torch, lambda t: 5),
        exc_type=TypeError,
        match="expected Variable, but hook returned 'int'",
    )


# ------------------------------------------------- callbacks at the end of backward
def queue_callback(callback):
    gt.autograd.Variable._execution_engine.queue_callback(callback)


def test_queued_callback_runs_once_backward_has_finished():
    x, w = leaf([1.0]), leaf([2.0])
    seen = []
    # Queued from x's hook (x's gradient arrives first); it must still see w.grad.
    x.register_post_accumulate_grad_hook(
        lambda t: queue_callback(lambda: seen.append((x.grad.item(), w.grad.item())))
    )
    y = x * 5
    (y * w).sum().backward()
    assert seen == [(10.0, 5.0)]


def test_queued_callbacks_run_in_order_and_may_queue_more():
    x = leaf([1.0])
    order = []

    def first():
        order.append("first")
        queue_callback(lambda: order.append("queued by first"))

    def hook(tensor):
        order.append("hook")
        queue_callback(first)
        queue_callback(lambda: order.append("second"))

    x.register_post_accumulate_grad_hook(hook)
    (x * 2).sum().backward()
    assert order == ["hook", "first", "second", "queued by first"]
    order.clear()
    (x * 2).sum().backward()  # each backward starts with no callbacks
    assert order == ["hook", "first", "second", "queued by first"]


def test_queued_callback_runs_in_autograd_grad_too():
    x = leaf([1.0])
    y = x * 2
    ran = []
    y.register_hook(lambda g: queue_callback(lambda: ran.append(True)))
    gt.autograd.grad(y.sum(), x)
    assert ran == [True]


def test_queued_callback_error_propagates_and_the_engine_recovers():
    x = leaf([1.0])
    handle = x.register_post_accumulate_grad_hook(lambda t: queue_callback(lambda: 1 / 0))
    with pytest.raises(ZeroDivisionError):
        (x * 2).sum().backward()
    handle.remove()
    with pytest.raises(RuntimeError, match="only be installed during backward pass"):
        queue_callback(lambda: None)


@pytest.mark.errors
def test_queue_callback_outside_backward():
    assert_same_error(
        lambda: queue_callback(lambda: None),
        lambda: torch.autograd.Variable._execution_engine.queue_callback(lambda: None),
        exc_type=RuntimeError,
        match="Final callbacks can only be installed during backward pass.",
    )
