"""Advanced indexing (integer tensors and lists, boolean masks) for reading and writing, and
gather, scatter, scatter_add, index_select, index_add_, masked_fill and where."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, assert_same_error, needs_torch, to_numpy, to_torch, torch
from strategies import WRITABLE_KINDS, broadcastable_shapes, layouts, random_values, shapes

import glasstorch as gt

pytestmark = pytest.mark.indexing

BASE = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _base(lib=gt):
    return lib.arange(24.0).view(2, 3, 4)


def _index_for(lib, index):
    """Turn the ``("T", list)`` markers of an index spec into ``lib`` tensors."""
    if isinstance(index, tuple) and len(index) == 2 and index[0] == "T":
        return lib.tensor(index[1])
    if isinstance(index, tuple):
        return tuple(_index_for(lib, i) for i in index)
    return index


def _index_for_numpy(index):
    if isinstance(index, tuple) and len(index) == 2 and index[0] == "T":
        return np.array(index[1])
    if isinstance(index, tuple):
        return tuple(_index_for_numpy(i) for i in index)
    return index


ADVANCED_INDICES = [
    ("T", [1, 0, 1]),
    ("T", [-1]),
    [0, 1, 0],
    ("T", [[0, 1], [1, 1]]),
    (slice(None), ("T", [2, 0])),
    (slice(None), [0, 2], slice(1, None, 2)),
    (("T", [0, 1]), slice(None), ("T", [1, 3])),  # separated advanced indices go first
    (slice(None), ("T", [0, 2]), ("T", [1, 3])),
    (("T", [[0], [1]]), ("T", [0, 2])),  # index tensors broadcast together
    (Ellipsis, ("T", [3, 0])),
    (None, ("T", [1])),
    (1, ("T", [2, 2, 0])),
    ("T", [True, False]),
    ([True, True],),
    (slice(None), ("T", [True, False, True])),
    ("T", [[True, False, True], [False, False, True]]),
    (("T", [True, False]), slice(None), 1),
    [],
]


@pytest.mark.usefixtures("default_device")  # its tensors on the device under test
@pytest.mark.parametrize(
    "index", ADVANCED_INDICES, ids=[str(i) for i in range(len(ADVANCED_INDICES))]
)
def test_advanced_indexing_read(index):
    y = _base()[_index_for(gt, index)]
    expected = BASE[_index_for_numpy(index)]
    assert_close(y, expected)
    if torch is not None:
        assert_close(y, _base(torch)[_index_for(torch, index)])
    base = _base()
    y = base[_index_for(gt, index)]
    y[...] = -1.0  # advanced indexing copies: the base is untouched
    assert_close(base, BASE)


@pytest.mark.parametrize(
    "index, value",
    [
        (("T", [0, 2]), 5.0),
        ([1], ("T", [1.0, 2.0, 3.0, 4.0])),  # broadcast over the selected rows
        ((slice(None), ("T", [1, 3])), ("T", [[7.0], [8.0], [9.0]])),
        ((("T", [0, 2]), ("T", [1, 3])), ("T", [10.0, 20.0])),
        ((("T", [[0], [2]]), ("T", [1, 3])), ("T", [1.0, 2.0])),
        (("T", [True, False, True]), 0.0),
        (("T", [True, False, True]), ("T", [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])),
        (("T", [[True, False, False, True]] * 3), -1.0),
        ((Ellipsis, ("T", [0])), ("T", [[4.0], [5.0], [6.0]])),
        ((1, ("T", [0, 0])), ("T", [3.0, 3.0])),  # repeated index, equal values
    ],
)
def test_advanced_indexing_write(index, value, device):
    x = gt.arange(12.0, device=device).view(3, 4)
    values = _index_for(gt, value)
    if isinstance(values, gt.Tensor):
        # The values live with x: PyTorch moves only a 0-d value across devices
        # (the indices may stay on the CPU).
        values = values.to(device)
    x[_index_for(gt, index)] = values
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[_index_for_numpy(index)] = _index_for_numpy(value)
    assert_close(x, expected)


def test_mask_write_through_comparison(device):
    x = gt.tensor([[1.0, -2.0], [-3.0, 4.0]], device=device)
    x[x < 0] = 0.0
    assert_close(x, np.array([[1.0, 0.0], [0.0, 4.0]], dtype=np.float32))
    y = gt.tensor([3, 1, 2], device=device)
    y[y > 1] += 10
    assert_close(y, np.array([13, 1, 12]))


def test_write_to_view_via_advanced_index(device):
    x = gt.zeros(3, 4, device=device)
    col = x[:, 1]
    col[[0, 2]] = 5.0
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[[0, 2], 1] = 5.0
    assert_close(x, expected)


@given(data=st.data())
def test_integer_index_on_layouts(data, device):
    layout = data.draw(
        layouts(shapes(min_dims=1, min_side=1), dtype=st.sampled_from(["float32", "int64"]))
    )
    size = layout.shape[0]
    index_shape = data.draw(shapes(max_dims=2, max_side=3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    index = rng.integers(-size, size, index_shape)
    x = layout.build(device=device)
    assert_close(x[gt.tensor(index, device=device)], layout.array[index])
    if layout.kind in WRITABLE_KINDS:
        x[gt.tensor(index, device=device)] = 42
        expected = layout.array.copy()
        expected[index] = 42
        assert_close(x, expected)


@given(data=st.data())
def test_mask_on_layouts(data, device):
    layout = data.draw(layouts(dtype=st.sampled_from(["float32", "int32", "bool"])))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    ndim = data.draw(st.integers(min(1, len(layout.shape)), len(layout.shape)))
    mask = random_values(rng, layout.shape[:ndim], "bool")
    x = layout.build(device=device)
    assert_close(x[gt.tensor(mask, device=device)], layout.array[mask])
    if layout.kind in WRITABLE_KINDS:
        x[gt.from_numpy(mask).to(device)] = 0
        expected = layout.array.copy()
        expected[mask] = 0
        assert_close(x, expected)


# ----------------------------------------------------------- gather / scatter
def _gather_reference(a, dim, index):
    out = np.empty(index.shape, dtype=a.dtype)
    for pos in itertools.product(*map(range, index.shape)):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = a[tuple(src)]
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim, device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([[0, 2], [1, 1]]) if dim == 0 else np.array([[3, 0, 0], [1, 2, 1], [0, 0, 0]])
    expected = _gather_reference(a, dim % 2, index)
    x = gt.from_numpy(a.copy()).to(device)
    assert_close(gt.gather(x, dim, gt.tensor(index, device=device)), expected)
    assert_close(x.gather(dim, gt.tensor(index, device=device)), expected)
    assert_close(x.t().contiguous().t().gather(dim, gt.tensor(index, device=device)), expected)


@pytest.mark.parametrize("reduce_add", [False, True], ids=["scatter", "scatter_add"])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_and_scatter_add(dim, reduce_add, device):
    src = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    if dim == 0:
        index = (
            np.array([[0, 1, 2], [2, 0, 1]]) if not reduce_add else np.array([[0, 0, 2], [0, 0, 1]])
        )
    else:
        index = (
            np.array([[3, 0, 1], [2, 1, 0]]) if not reduce_add else np.array([[3, 3, 1], [0, 0, 0]])
        )
    expected = np.zeros((3, 4), dtype=np.float32)
    for pos in itertools.product(range(2), range(3)):
        dst = list(pos)
        dst[dim] = index[pos]
        if reduce_add:
            expected[tuple(dst)] += src[pos]
        else:
            expected[tuple(dst)] = src[pos]
    name = "scatter_add" if reduce_add else "scatter"
    x = gt.zeros(3, 4, device=device)
    out = getattr(x, name)(dim, gt.tensor(index, device=device), gt.tensor(src, device=device))
    assert_close(out, expected)
    assert_close(x, np.zeros((3, 4), dtype=np.float32))  # out of place
    assert_close(
        getattr(gt, name)(x, dim, gt.tensor(index, device=device), gt.tensor(src, device=device)),
        expected,
    )
    r = getattr(x, name + "_")(dim, gt.tensor(index, device=device), gt.tensor(src, device=device))
    assert r is x
    assert_close(x, expected)


def test_scatter_value(device):
    x = gt.zeros(2, 3, device=device)
    y = x.scatter(1, gt.tensor([[2], [0]], device=device), 1.5)
    assert_close(y, np.array([[0, 0, 1.5], [1.5, 0, 0]], dtype=np.float32))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dim, device):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    index = np.array([2, 0, 2])
    expected = np.take(a, index, axis=dim)
    x = gt.from_numpy(a.copy()).to(device)
    assert_close(x.index_select(dim, gt.tensor(index, device=device)), expected)
    assert_close(
        gt.index_select(x.t(), dim, gt.tensor(index, device=device)), np.take(a.T, index, axis=dim)
    )


@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_(dim, device):
    a = np.ones((3, 4), dtype=np.float32)
    index = np.array([0, 2, 0])
    source = np.arange(12 if dim == 0 else 9, dtype=np.float32).reshape(
        (3, 4) if dim == 0 else (3, 3)
    )
    expected = a.copy()
    for i, j in enumerate(index):
        if dim == 0:
            expected[j] += source[i]
        else:
            expected[:, j] += source[:, i]
    x = gt.from_numpy(a.copy()).to(device)
    r = x.index_add_(dim, gt.tensor(index, device=device), gt.from_numpy(source).to(device))
    assert r is x
    assert_close(x, expected)
    y = (
        gt.from_numpy(a.copy())
        .to(device)
        .index_add_(dim, gt.tensor(index, device=device), gt.from_numpy(source).to(device), alpha=2)
    )
    assert_close(y, a + 2 * (expected - a))


@pytest.mark.parametrize("mask_shape", [(2, 3), (3,), (2, 1), ()])
def test_masked_fill(mask_shape, device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    mask = np.asarray(rng.random(mask_shape) < 0.5)
    expected = np.where(mask, np.float32(-1.0), a)
    x = gt.from_numpy(a.copy()).to(device)
    assert_close(x.masked_fill(gt.tensor(mask, device=device), -1.0), expected)
    assert_close(x, a)
    assert_close(
        gt.masked_fill(x, gt.tensor(mask, device=device), gt.tensor(-1.0, device=device)), expected
    )
    assert x.masked_fill_(gt.tensor(mask, device=device), -1.0) is x
    assert_close(x, expected)
    i = gt.tensor([1, 2, 3], device=device).masked_fill(
        gt.tensor([True, False, True], device=device), 0
    )
    assert_close(i, np.array([0, 2, 0]))


@given(shapes_=broadcastable_shapes(num_shapes=3), data=st.data())
def test_where_broadcasts(shapes_, data, device):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    cond = random_values(rng, shapes_[0], "bool")
    a = random_values(rng, shapes_[1], "float32")
    b = random_values(rng, shapes_[2], "float32")
    actual = gt.where(
        gt.tensor(cond, device=device), gt.tensor(a, device=device), gt.tensor(b, device=device)
    )
    assert_close(actual, np.where(cond, a, b))
    assert_close(
        gt.tensor(a, device=device).where(
            gt.tensor(cond, device=device), gt.tensor(b, device=device)
        ),
        np.where(cond, a, b),
    )


@pytest.mark.usefixtures("default_device")  # its tensors on the device under test
@pytest.mark.parametrize(
    "x, y, dtype",
    [
        ([1, 2], 1.5, "float32"),
        ([1, 2], 3, "int64"),
        (1.0, 0, "float32"),
        ([1.0, 2.0], ("float64", [3.0, 4.0]), "float64"),
        ([1, 2], ("int32", [3, 4]), "int64"),
    ],
)
def test_where_promotes(x, y, dtype):
    cond = [True, False]

    def call(lib):
        def make(v):
            if isinstance(v, tuple):
                return lib.tensor(v[1], dtype=getattr(lib, v[0]))
            return lib.tensor(v) if isinstance(v, list) else v

        return lib.where(lib.tensor(cond), make(x), make(y))

    result = call(gt)
    assert to_numpy(result).dtype.name == dtype
    if torch is not None:
        assert_close(result, call(torch))


@needs_torch
def test_index_errors_match_torch(device):
    assert_same_error(
        lambda: _base(gt).to(device)[gt.tensor([0, 2], device=device)],
        lambda: _base(torch)[torch.tensor([0, 2])],
        exc_type=IndexError,
        match="index 2 is out of bounds for dimension 0 with size 2",
    )
    assert_same_error(
        lambda: _base(gt).to(device)[gt.tensor([True, False, True], device=device)],
        lambda: _base(torch)[torch.tensor([True, False, True])],
        exc_type=IndexError,
        match="The shape of the mask \\[3\\] at index 0 does not match the shape of the indexed "
        "tensor \\[2, 3, 4\\] at index 0",
    )
    assert_same_error(
        lambda: _base(gt).to(device)[gt.tensor([0.0], device=device)],
        lambda: _base(torch)[torch.tensor([0.0])],
        exc_type=IndexError,
        match="tensors used as indices must be long, int, byte or bool tensors",
    )


@given(data=st.data())
def test_mixed_advanced_index_on_layouts(data, device):
    layout = data.draw(layouts(shapes(min_dims=1, min_side=1), dtype="float32"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    index_shape = data.draw(shapes(max_dims=2, max_side=3))
    items = []
    for size in layout.shape:
        kind = data.draw(st.sampled_from(["slice", "int", "tensor"]))
        if kind == "slice":
            items.append(slice(data.draw(st.integers(0, size)), None, data.draw(st.integers(1, 2))))
        elif kind == "int":
            items.append(data.draw(st.integers(-size, size - 1)))
        else:
            items.append(rng.integers(-size, size, index_shape))
    # PyTorch applies integers as basic indexing (select) before the index tensors;
    # NumPy would treat them as advanced indices. So NumPy takes the two steps apart.
    basic = tuple(i if isinstance(i, (int, slice)) else slice(None) for i in items)
    advanced = tuple(
        i if isinstance(i, np.ndarray) else slice(None) for i in items if not isinstance(i, int)
    )

    def to_lib(lib):
        return tuple(lib.tensor(i) if isinstance(i, np.ndarray) else i for i in items)

    x = layout.build(device=device)
    assert_close(x[to_lib(gt)], layout.array[basic][advanced])
    if torch is not None:
        assert_close(x[to_lib(gt)], layout.build(torch)[to_lib(torch)])
    if layout.kind in WRITABLE_KINDS:
        x[to_lib(gt)] = -42.0
        expected = layout.array.copy()
        if advanced:
            expected[basic][advanced] = -42.0  # expected[basic] is a view of expected
        else:
            expected[basic] = -42.0
        assert_close(x, expected)


@given(data=st.data())
def test_gather_on_layouts(data, device):
    layout = data.draw(layouts(shapes(min_dims=1, min_side=1), dtype="int64"))
    ndim = len(layout.shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    index_shape = tuple(data.draw(st.integers(0, s)) for s in layout.shape)
    index_layout = data.draw(layouts(index_shape, "int64", kinds=("contiguous", "permuted")))
    index = index_layout.array % layout.shape[dim]  # Python's %: never negative
    expected = _gather_reference(layout.array, dim % ndim, index)
    assert_close(layout.build(device=device).gather(dim, gt.tensor(index, device=device)), expected)
    index_view = (
        index_layout.build(device=device) % layout.shape[dim]
    )  # a non-contiguous index, too
    assert_close(gt.gather(layout.build(device=device), dim, index_view), expected)


@pytest.mark.parametrize("key", [1, "tensor", (slice(0, 2), 1)], ids=["int", "0-d", "slices"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_augmented_assignment_through_a_key(key, requires_grad, device):
    """``x[key] += v`` adds in place and writes back; versions and gradients as PyTorch's."""

    def run(lib, on):
        x = lib.arange(6.0, device=on).reshape(3, 2)
        w = lib.ones(3, 2, device=on, requires_grad=requires_grad)
        y = x * w if requires_grad else x
        before = y._version
        k = lib.tensor(1, device=on) if key == "tensor" else key
        y[k] += lib.tensor(30.0, device=on)
        if requires_grad:
            (y * lib.arange(6.0, device=on).reshape(3, 2)).sum().backward()
            return y, y._version - before, w.grad
        return y, y._version - before, None

    y, bumps, grad = run(gt, device)
    expected = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    expected[(1 if key == "tensor" else key)] += 30.0
    assert_close(y, expected)
    if torch is not None:
        t_y, t_bumps, t_grad = run(torch, "cpu")
        assert bumps == t_bumps
        if requires_grad:
            assert_close(grad, t_grad)


# -- Keys: a Python range and 0-d integer tensors index as PyTorch does
def _matrix():
    return gt.arange(15.0).reshape(5, 3)


@needs_torch
@pytest.mark.usefixtures("default_device")
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


@needs_torch
@pytest.mark.usefixtures("default_device")
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


@needs_torch
@pytest.mark.usefixtures("default_device")
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


@needs_torch
@pytest.mark.usefixtures("default_device")
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


@needs_torch
@pytest.mark.usefixtures("default_device")
@pytest.mark.errors
def test_a_0d_index_out_of_range():
    assert_same_error(
        lambda: _matrix()[gt.tensor(7)],
        lambda: to_torch(_matrix())[torch.tensor(7)],
        exc_type=IndexError,
        match="index 7 is out of bounds for dimension 0 with size 5",
    )
