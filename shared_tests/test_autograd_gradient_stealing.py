"""AccumulateGrad's first gradient: taken without a copy when nobody else holds it.

A custom Function records the address of the gradient its backward returns
(the address only, so the test itself holds no reference). When nothing else
holds that tensor, the leaf's ``.grad`` is the very same memory; when
something does (the Function keeps it, a hook keeps it, a view shares its
storage), ``.grad`` is a copy. Either way the values are the gradient.

Every test makes its tensors on the device under test (conftest's
``default_device``).
"""

from __future__ import annotations

import pytest

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


class Double(gt.autograd.Function):
    """y = 2x, whose backward can keep its result or return a view of it."""

    addresses: list[int] = []
    kept: list = []
    keep = False
    as_view = False

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        out = grad * 2
        Double.addresses.append(out.data_ptr())
        if Double.keep:
            Double.kept.append(out)
        return out.view(out.shape) if Double.as_view else out


@pytest.fixture(autouse=True)
def reset():
    Double.addresses, Double.kept, Double.keep, Double.as_view = [], [], False, False


def run():
    x = gt.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    return x, Double.addresses[-1]


def test_an_unshared_gradient_is_taken_as_it_is():
    x, address = run()
    assert x.grad.data_ptr() == address


def test_a_gradient_someone_keeps_is_copied():
    Double.keep = True
    x, address = run()
    assert x.grad.data_ptr() != address
    Double.kept[0].add_(1)  # the kept tensor and .grad are independent
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_a_view_is_copied():
    Double.as_view = True
    x, address = run()
    assert x.grad.data_ptr() != address


def test_a_hook_that_keeps_the_gradient_gets_a_copy():
    seen = []
    x = gt.ones(3, requires_grad=True)
    x.register_hook(lambda grad: seen.append(grad))
    Double.apply(x).sum().backward()
    assert x.grad.data_ptr() != seen[0].data_ptr()


def test_later_gradients_are_added_in_place():
    x, _ = run()
    grad = x.grad
    Double.apply(x).sum().backward()
    assert x.grad is grad and grad.tolist() == [4.0, 4.0, 4.0]


def test_create_graph_keeps_the_history_of_grad():
    x = gt.ones(2, requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None and x.grad.tolist() == [2.0, 2.0]
