"""Resources are given back: memory by reference counting alone, files and shared memory always.

* Autograd: a graph must not hold itself in a reference cycle, or its memory
  waits for Python's cyclic garbage collector. Each test here turns the
  collector off and watches a tensor's storage through a weak reference: once
  the last name for the graph is gone, the storage must be gone too.
"""

from __future__ import annotations

import contextlib
import gc
import weakref

import pytest
from oracle import needs_torch, torch

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F


@contextlib.contextmanager
def cycle_collector_off():
    """Run the block with Python's cyclic garbage collector switched off.

    Objects that exist already are frozen (``gc.freeze``): a ``gc.collect()``
    inside the block then looks at the block's own objects only, which keeps
    it fast, and what it finds are cycles the block made.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def leaf(*shape):
    return (gt.rand(*shape) + 0.1).requires_grad_()


class SavesItsOutput(gt.autograd.Function):
    """A user Function that keeps its own result for backward, as ``exp`` does."""

    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y / x


class SavesBothOutputs(gt.autograd.Function):
    """A user Function with two outputs, both saved."""

    @staticmethod
    def forward(ctx, x):
        a, b = x * 2, x * 3
        ctx.save_for_backward(a, b)
        return a, b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        a, b = ctx.saved_tensors
        return grad_a * 2 + grad_b * 3


def _module_with_hooks(x):
    layer = nn.Linear(3, 3)
    layer.register_forward_pre_hook(lambda module, args: None)
    layer.register_forward_hook(lambda module, args, output: None)
    return layer(x).tanh()


def _with_tensor_hook(x):
    y = x.exp()
    y.register_hook(lambda grad: grad * 2)
    return y


def _with_retain_grad(x):
    y = x.sigmoid()
    y.retain_grad()
    return y


def _inplace_exp(x):
    y = x * 1
    y.exp_()
    return y


#: name -> program: from a leaf of shape (2, 3), an output whose storage is watched.
PROGRAMS = {
    "exp": lambda x: x.exp(),
    "expm1": lambda x: x.expm1(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sqrt": lambda x: x.sqrt(),
    "rsqrt": lambda x: x.rsqrt(),
    "reciprocal": lambda x: x.reciprocal(),
    "relu": lambda x: x.relu(),
    "pow_tensor_tensor": lambda x: x.pow(x),
    "pow_number_tensor": lambda x: 2.0**x,
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(1),
    "prod": lambda x: x.prod(1),
    "amax": lambda x: x.amax(1),
    "max": lambda x: x.max(),
    "std": lambda x: x.std(1),
    "logsumexp": lambda x: x.logsumexp(1),
    "layer_norm": lambda x: F.layer_norm(x, (3,)),
    "gelu": lambda x: F.gelu(x),
    "silu": lambda x: F.silu(x),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(x.sigmoid(), gt.ones(2, 3) / 2),
    "cross_entropy_label_smoothing": lambda x: F.cross_entropy(
        x, gt.tensor([0, 2]), label_smoothing=0.1
    ),
    "function_saving_its_output": SavesItsOutput.apply,
    "function_saving_two_outputs": lambda x: SavesBothOutputs.apply(x)[1],
    "module_with_hooks": _module_with_hooks,
    "tensor_hook": _with_tensor_hook,
    "retain_grad": _with_retain_grad,
    "inplace_exp_": _inplace_exp,
}


@pytest.mark.autograd
@pytest.mark.parametrize("backward", ["no backward", "backward", "backward, retain_graph"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_is_freed_by_reference_counting(name, backward):
    with cycle_collector_off():
        x = leaf(2, 3)
        out = PROGRAMS[name](x)
        storage = weakref.ref(out._storage)
        loss = out.sum()
        del out
        if backward != "no backward":
            loss.backward(retain_graph=backward.endswith("retain_graph"))
            assert x.grad is not None
        del loss
        assert storage() is None, f"{name}: the output's storage outlived its graph"
        assert gc.collect() == 0, f"{name}: the graph left objects in reference cycles"


@pytest.mark.autograd
def test_saved_output_keeps_its_storage_while_the_graph_lives():
    with cycle_collector_off():
        x = leaf(4)
        y = x.exp()
        storage = weakref.ref(y._storage)
        loss = y.sum() * 1
        grad_fn = y.grad_fn
        del y
        assert storage() is not None  # ExpBackward0 still needs exp(x)
        loss.backward()
        assert gt.allclose(x.grad, x.detach().exp())
        del loss, grad_fn
        assert storage() is None


@pytest.mark.autograd
@needs_torch
def test_unpacked_saved_output_is_a_new_tensor_with_the_node_as_grad_fn():
    seen = {}

    def program(T):
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                seen[T] = (y.grad_fn is ctx, y.requires_grad, y.is_leaf, x.grad_fn is None)
                return grad * 2

        x = T.ones(3, requires_grad=True)
        y = Double.apply(x)
        same_object = y.grad_fn.saved_tensors[1] is y
        y.sum().backward()
        return same_object

    assert program(gt) == program(torch) is False
    assert seen[gt] == seen[torch] == (True, True, False, True)


@pytest.mark.autograd
@pytest.mark.errors
def test_inplace_change_of_a_saved_output_is_still_caught():
    x = leaf(3)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(
        RuntimeError, match="which is output 0 of SigmoidBackward0, is at version 1"
    ):
        y.sum().backward()


@pytest.mark.autograd
@pytest.mark.errors
def test_second_backward_through_a_saved_output_is_still_refused():
    x = leaf(3)
    loss = x.tanh().sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


@pytest.mark.autograd
@needs_torch
def test_double_backward_through_saved_outputs():
    def program(T):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = (x.tanh() * x.sigmoid() + x.exp()).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        return gg.tolist()

    assert program(gt) == pytest.approx(program(torch), rel=1e-5)
