"""Gradients through non-contiguous inputs, drawn by hypothesis.

Each input is a view (permuted, sliced with a step, expanded, or plain) of a
float64 leaf. Gradients must flow back through the view into the leaf's storage
layout, summing over broadcast and expanded dimensions, exactly as in PyTorch.
Shapes include size-0 and size-1 dimensions. glasstorch's leaves live on the
device under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, needs_torch, torch
from strategies import Layout, broadcastable_shapes, layouts, shapes

import glasstorch as gt

pytestmark = [pytest.mark.autograd, needs_torch]


def leaf_and_view(layout: Layout, lib, device="cpu"):
    """The leaf holding ``layout.base`` (on ``device`` for glasstorch) and the view of it
    that ``layout`` describes."""
    base = lib.from_numpy(layout.base.copy())
    if lib is gt:
        base = base.to(device)
    base.requires_grad_()
    if layout.kind == "permuted":
        view = base.permute(*layout.perm)
    elif layout.kind == "sliced":
        view = base[(slice(None),) * layout.dim + (slice(layout.start, None, 2),)]
    elif layout.kind == "expanded":
        view = base.expand(*layout.shape)
    else:
        view = base
    return base, view


def weighted_loss(out, lib):
    shape = tuple(out.shape)
    weight = np.cos(np.arange(int(np.prod(shape, dtype=np.int64))) * 0.9 + 0.3).reshape(shape)
    return (out * lib.from_numpy(weight).to(out.device)).sum()


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: a.where(a > 0, b),
}

UNARY = {
    "exp": lambda x: x.exp(),
    "tanh": lambda x: x.tanh(),
    "square": lambda x: x * x,
    "sum": lambda x: x.sum(),
    "sum_last_keepdim": lambda x: x.sum(-1, keepdim=True),
    "softmax_last": lambda x: x.softmax(-1),
    "cumsum_first": lambda x: x.cumsum(0),
    "clone": lambda x: x.clone(),
    "contiguous_flat": lambda x: x.reshape(-1),
}
NEEDS_DIM = {"sum_last_keepdim", "softmax_last", "cumsum_first"}


def run_binary(name, layout_a, layout_b, lib, device="cpu"):
    base_a, a = leaf_and_view(layout_a, lib, device)
    base_b, b = leaf_and_view(layout_b, lib, device)
    weighted_loss(BINARY[name](a, b), lib).backward()
    return base_a.grad, base_b.grad


@st.composite
def binary_case(draw):
    name = draw(st.sampled_from(sorted(BINARY)))
    shape_a, shape_b = draw(broadcastable_shapes(num_shapes=2, max_dims=3))
    elements_b = "positive" if name == "div" else "any"
    layout_a = draw(layouts(shape_a, "float64"))
    layout_b = draw(layouts(shape_b, "float64", elements=elements_b))
    return name, layout_a, layout_b


@given(case=binary_case())
def test_binary_op_gradients_through_layouts(case, device):
    name, layout_a, layout_b = case
    grads = run_binary(name, layout_a, layout_b, gt, device)
    expected = run_binary(name, layout_a, layout_b, torch)
    for grad, ref in zip(grads, expected, strict=True):
        assert_close(grad, ref, rtol=1e-9, atol=1e-12)


@st.composite
def unary_case(draw):
    name = draw(st.sampled_from(sorted(UNARY)))
    min_dims = 1 if name in NEEDS_DIM else 0
    shape = draw(shapes(min_dims=min_dims, max_dims=3, max_numel=24))
    return name, draw(layouts(shape, "float64"))


@given(case=unary_case())
def test_unary_op_gradients_through_layouts(case, device):
    name, layout = case

    def run(lib):
        base, view = leaf_and_view(layout, lib, device)
        weighted_loss(UNARY[name](view), lib).backward()
        return base.grad

    assert_close(run(gt), run(torch), rtol=1e-9, atol=1e-12)
