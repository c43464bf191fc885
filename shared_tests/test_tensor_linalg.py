"""matmul/@/mm/bmm/mv/dot with batch broadcasting, cat, stack, softmax and log_softmax."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, assert_same_error, torch
from strategies import layouts, shapes

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.linalg, pytest.mark.usefixtures("default_device")]


@st.composite
def matmul_shapes(draw):
    """Shapes ``(a, b)`` that ``matmul`` accepts: 1-D, 2-D and broadcast batches."""
    n, k, m = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    a_kind, b_kind = (
        draw(st.sampled_from(["vec", "mat", "batch"])),
        draw(st.sampled_from(["vec", "mat", "batch"])),
    )
    batch = draw(shapes(min_dims=1, max_dims=2, max_side=2))
    b_batch = tuple(1 if draw(st.booleans()) else s for s in batch)
    b_batch = b_batch[draw(st.integers(0, len(b_batch))) :]
    a = {"vec": (k,), "mat": (n, k), "batch": batch + (n, k)}[a_kind]
    b = {"vec": (k,), "mat": (k, m), "batch": b_batch + (k, m)}[b_kind]
    return a, b


@given(data=st.data())
def test_matmul_on_layouts(data, device):
    shape_a, shape_b = data.draw(matmul_shapes())
    dtype = data.draw(st.sampled_from(["float32", "float64", "int64"]))
    la, lb = data.draw(layouts(shape_a, dtype)), data.draw(layouts(shape_b, dtype))
    expected = np.matmul(la.array.astype(np.float64), lb.array.astype(np.float64)).astype(dtype)
    a, b = la.build(device=device), lb.build(device=device)
    assert_close(a @ b, expected)
    assert_close(gt.matmul(a, b), expected)
    assert_close(a.matmul(b), expected)
    if torch is not None:
        assert_close(a @ b, la.build(torch) @ lb.build(torch))


@given(data=st.data())
def test_mm_bmm_mv_dot(data, device):
    n, k, m, batch = (data.draw(st.integers(0, 3)) for _ in range(4))
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    a = data.draw(layouts((n, k), dtype))
    b = data.draw(layouts((k, m), dtype))
    v = data.draw(layouts((k,), dtype))
    w = data.draw(layouts((k,), dtype))
    p = data.draw(layouts((batch, n, k), dtype))
    q = data.draw(layouts((batch, k, m), dtype))

    def f64(layout):
        return layout.array.astype(np.float64)

    assert_close(
        gt.mm(a.build(device=device), b.build(device=device)), (f64(a) @ f64(b)).astype(dtype)
    )
    assert_close(a.build(device=device).mm(b.build(device=device)), (f64(a) @ f64(b)).astype(dtype))
    assert_close(
        gt.mv(a.build(device=device), v.build(device=device)), (f64(a) @ f64(v)).astype(dtype)
    )
    assert_close(a.build(device=device).mv(v.build(device=device)), (f64(a) @ f64(v)).astype(dtype))
    assert_close(
        gt.dot(v.build(device=device), w.build(device=device)),
        np.asarray(f64(v) @ f64(w)).astype(dtype),
    )
    assert_close(
        v.build(device=device).dot(w.build(device=device)),
        np.asarray(f64(v) @ f64(w)).astype(dtype),
    )
    assert_close(
        gt.bmm(p.build(device=device), q.build(device=device)),
        np.matmul(f64(p), f64(q)).astype(dtype),
    )
    assert_close(
        p.build(device=device).bmm(q.build(device=device)), np.matmul(f64(p), f64(q)).astype(dtype)
    )


def test_matmul_result_shapes_and_strides():
    assert (gt.ones(3) @ gt.ones(3)).shape == ()
    assert (gt.ones(2, 3) @ gt.ones(3)).shape == (2,)
    assert (gt.ones(3) @ gt.ones(3, 4)).shape == (4,)
    assert (gt.ones(5, 2, 3) @ gt.ones(3)).shape == (5, 2)
    assert (gt.ones(3) @ gt.ones(5, 3, 4)).shape == (5, 4)
    assert (gt.ones(2, 1, 2, 3) @ gt.ones(4, 3, 5)).shape == (2, 4, 2, 5)
    out = gt.ones(2, 3) @ gt.ones(3, 4)
    assert out.stride() == (4, 1)
    assert_close(gt.tensor([[1, 2], [3, 4]]) @ gt.tensor([[1], [1]]), np.array([[3], [7]]))


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda lib: lib.ones(2, 3).mm(lib.ones(2, 3)),
            r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)",
        ),
        (
            lambda lib: lib.ones(2, 3) @ lib.ones(2, 3),
            r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)",
        ),
        (
            lambda lib: lib.ones(4, 1) @ lib.ones(2, 5),
            r"mat1 and mat2 shapes cannot be multiplied \(4x1 and 2x5\)",
        ),
        (
            lambda lib: lib.ones(2, 3).dot(lib.ones(2, 3)),
            "1D tensors expected, but got 2D and 2D tensors",
        ),
        (
            lambda lib: lib.ones(2, 2, 3).bmm(lib.ones(2, 4, 3)),
            "Expected size for first two dimensions of batch2 tensor to be: \\[2, 3\\] but "
            "got: \\[2, 4\\].",
        ),
        (
            lambda lib: lib.ones(2, 3).mv(lib.ones(2)),
            r"size mismatch, got input \(2\), mat \(2x3\), vec \(2\)",
        ),
        (
            lambda lib: lib.ones(2, 2, 3) @ lib.ones(3, 3, 2),
            "The size of tensor a \\(2\\) must match the size of tensor b \\(3\\) at "
            "non-singleton dimension 0",
        ),
        (
            lambda lib: lib.ones(2, 3) @ lib.ones(3, 2, dtype=lib.float64),
            "expected m1 and m2 to have the same dtype, but got: float != double",
        ),
    ],
)
def test_matmul_errors(call, match):
    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=RuntimeError,
        match=match,
    )


# ----------------------------------------------------------------- cat / stack
@given(data=st.data())
def test_cat_on_layouts(data, device):
    shape = data.draw(shapes(min_dims=1, max_dims=3))
    ndim = len(shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    count = data.draw(st.integers(1, 3))
    parts = []
    for _ in range(count):
        part_shape = list(shape)
        part_shape[dim] = data.draw(st.integers(0, 3))
        parts.append(data.draw(layouts(tuple(part_shape), "float32")))
    expected = np.concatenate([p.array for p in parts], axis=dim)
    out = gt.cat([p.build(device=device) for p in parts], dim)
    assert_close(out, expected)
    assert out.is_contiguous()
    assert_close(gt.cat(tuple(p.build(device=device) for p in parts), dim=dim), expected)


@given(data=st.data())
def test_stack_on_layouts(data, device):
    shape = data.draw(shapes(max_dims=3))
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = [data.draw(layouts(shape, "int64")) for _ in range(data.draw(st.integers(1, 3)))]
    expected = np.stack([p.array for p in parts], axis=dim)
    assert_close(gt.stack([p.build(device=device) for p in parts], dim), expected)
    assert_close(gt.stack([p.build(device=device) for p in parts], dim=dim), expected)


def test_cat_stack_defaults_and_promotion():
    a, b = gt.tensor([[1, 2]]), gt.tensor([[3.5, 4.5]])
    assert_close(gt.cat([a, b]), np.array([[1, 2], [3.5, 4.5]], dtype=np.float32))
    assert_close(gt.stack([a, a]), np.array([[[1, 2]], [[1, 2]]]))
    assert_close(
        gt.cat([gt.tensor([True]), gt.tensor([2], dtype=gt.uint8)]),
        np.array([1, 2], dtype=np.uint8),
    )
    x = gt.zeros(2)
    y = gt.cat([x])
    y[0] = 1.0
    assert x[0].item() == 0.0  # cat always copies


@pytest.mark.parametrize(
    "call, exc_type, match",
    [
        (
            lambda lib: lib.cat([lib.ones(2, 2), lib.ones(3, 3)], 1),
            RuntimeError,
            "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 "
            "for tensor number 1 in the list.",
        ),
        (
            lambda lib: lib.stack([lib.ones(2), lib.ones(3)]),
            RuntimeError,
            r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at "
            r"entry 1",
        ),
        (lambda lib: lib.cat([]), ValueError, r"expected a non-empty list of Tensors"),
        (
            lambda lib: lib.cat([lib.ones(2, 2)], 2),
            IndexError,
            r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
        ),
    ],
)
def test_cat_stack_errors(call, exc_type, match):
    assert_same_error(
        lambda: call(gt),
        (lambda: call(torch)) if torch is not None else None,
        exc_type=exc_type,
        match=match,
    )


# ------------------------------------------------------------------- softmax
def _np_softmax(a, dim):
    a = a.astype(np.float64)
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@given(data=st.data())
def test_softmax_log_softmax_on_layouts(data, device):
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    layout = data.draw(layouts(shapes(min_dims=1, min_side=1), dtype))
    ndim = len(layout.shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    expected = _np_softmax(layout.array, dim)
    x = layout.build(device=device)
    assert_close(gt.softmax(x, dim), expected.astype(dtype))
    assert_close(x.softmax(dim), expected.astype(dtype))
    assert_close(gt.log_softmax(x, dim=dim), np.log(expected).astype(dtype))
    assert_close(x.log_softmax(dim), np.log(expected).astype(dtype))


def test_softmax_is_stable_and_takes_dtype():
    x = gt.tensor([[1000.0, 1000.0, -1000.0]])
    assert_close(x.softmax(1), np.array([[0.5, 0.5, 0.0]], dtype=np.float32))
    assert_close(
        x.log_softmax(1), np.array([[-np.log(2), -np.log(2), -2000 - np.log(2)]], dtype=np.float32)
    )
    y = gt.tensor([1.0, 2.0]).softmax(0, dtype=gt.float64)
    assert_close(y, _np_softmax(np.array([1.0, 2.0]), 0))
    assert_close(gt.softmax(gt.zeros(0, 3), 1), np.zeros((0, 3), dtype=np.float32))
