"""Grad mode: ``no_grad``, ``enable_grad`` and ``set_grad_enabled`` as context
managers and as decorators, ``is_grad_enabled``, ``requires_grad_`` and ``detach``.

Every test makes its tensors on the device under test (conftest's
``default_device``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, torch

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    """Every test starts, and must leave the process, with grad mode on."""
    assert gt.is_grad_enabled()
    yield
    enabled = gt.is_grad_enabled()
    gt.set_grad_enabled(True)
    assert enabled, "the test left grad mode off"


def leaf(values):
    return gt.tensor(values, dtype=gt.float64, requires_grad=True)


def test_no_grad_context():
    x = leaf([1.0, 2.0])
    with gt.no_grad():
        assert not gt.is_grad_enabled()
        y = x * 2
    assert gt.is_grad_enabled()
    assert not y.requires_grad
    assert y.grad_fn is None
    assert (x * 2).requires_grad


def test_no_grad_decorator():
    x = leaf([1.0, 2.0])

    @gt.no_grad()
    def double(t):
        """Docstring kept."""
        assert not gt.is_grad_enabled()
        return t * 2

    y = double(x)
    assert not y.requires_grad
    assert gt.is_grad_enabled()
    assert double.__name__ == "double"
    assert double.__doc__ == "Docstring kept."


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with gt.no_grad():
        with gt.enable_grad():
            assert gt.is_grad_enabled()
            y = x * 2
        assert not gt.is_grad_enabled()
        z = x * 2
    assert y.requires_grad and not z.requires_grad


def test_enable_grad_decorator():
    x = leaf([1.0])

    @gt.enable_grad()
    def double(t):
        return t * 2

    with gt.no_grad():
        y = double(x)
        assert not gt.is_grad_enabled()
    assert y.requires_grad


def test_set_grad_enabled_context():
    x = leaf([1.0])
    with gt.set_grad_enabled(False):
        assert not gt.is_grad_enabled()
        y = x * 2
        with gt.set_grad_enabled(True):
            assert gt.is_grad_enabled()
            z = x * 2
        assert not gt.is_grad_enabled()
    assert gt.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad


def test_set_grad_enabled_decorator():
    x = leaf([1.0])

    @gt.set_grad_enabled(False)
    def double(t):
        return t * 2

    y = double(x)
    assert gt.is_grad_enabled()
    assert not y.requires_grad
    assert double.__name__ == "double"


def test_set_grad_enabled_as_a_plain_call():
    x = leaf([1.0])
    gt.set_grad_enabled(False)
    try:
        assert not gt.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        gt.set_grad_enabled(True)
    assert gt.is_grad_enabled()
    assert (x * 2).requires_grad


def test_nesting_three_deep():
    states = []
    with gt.no_grad():
        states.append(gt.is_grad_enabled())
        with gt.enable_grad():
            states.append(gt.is_grad_enabled())
            with gt.no_grad():
                states.append(gt.is_grad_enabled())
                with gt.set_grad_enabled(True):
                    states.append(gt.is_grad_enabled())
                states.append(gt.is_grad_enabled())
            states.append(gt.is_grad_enabled())
        states.append(gt.is_grad_enabled())
    states.append(gt.is_grad_enabled())
    assert states == [False, True, False, True, False, True, False, True]


def test_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with gt.no_grad():
            raise ValueError("boom")
    assert gt.is_grad_enabled()

    @gt.no_grad()
    def fails():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        fails()
    assert gt.is_grad_enabled()


def test_no_grad_update_of_leaf_is_allowed():
    # The optimizer step: an in-place update of a leaf under no_grad.
    w = leaf([1.0, 2.0])
    (w * w).sum().backward()
    version = w._version
    with gt.no_grad():
        w -= 0.1 * w.grad
        w.add_(1.0)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version == version + 2
    assert_close(w.detach(), np.array([1.8, 2.6]))


def test_backward_works_on_graph_built_before_no_grad():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    with gt.no_grad():
        y.backward()
    assert_close(x.grad, np.array([2.0, 4.0]))


# -------------------------------------------------------------- requires_grad_
def test_requires_grad_underscore():
    x = gt.tensor([1.0, 2.0])
    out = x.requires_grad_()
    assert out is x
    assert x.requires_grad and x.is_leaf
    (x * 2).sum().backward()
    assert_close(x.grad, np.array([2.0, 2.0], dtype=np.float32))
    x.requires_grad_(False)
    assert not x.requires_grad
    assert not (x * 2).requires_grad


@pytest.mark.errors
def test_requires_grad_on_integer_tensor_raises():
    assert_same_error(
        lambda: gt.tensor([1, 2]).requires_grad_(),
        lambda: torch.tensor([1, 2]).requires_grad_(),
        exc_type=RuntimeError,
        match="only Tensors of floating point dtype can require gradients",
    )
    assert_same_error(
        lambda: gt.tensor([1, 2], requires_grad=True),
        lambda: torch.tensor([1, 2], requires_grad=True),
        exc_type=RuntimeError,
        match="Only Tensors of floating point and complex dtype can require gradients",
    )


@pytest.mark.errors
def test_requires_grad_false_on_non_leaf_raises():
    def program(T):
        x = T.tensor([1.0], requires_grad=True)
        (x * 2).requires_grad_(False)

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="you can only change requires_grad flags of leaf variables",
    )


# ----------------------------------------------------------------------- detach
def test_detach_shares_storage_and_stops_gradient():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    d[0] = 10.0
    assert y[0].item() == 10.0
    (d * x).sum().backward()
    assert_close(x.grad, np.array([10.0, 4.0]))


def test_detach_shares_version_counter():
    x = leaf([1.0, 2.0])
    y = x.exp()
    d = y.detach()
    before = y._version
    d.zero_()
    assert y._version == before + 1
    assert d._version == y._version
