"""Views: new shape and strides over the same storage, never a copy.

Each view is checked three ways: its values against NumPy, its ``stride()`` and
``storage_offset()`` against PyTorch (when installed), and its sharing by writing
through it and looking at the tensor it came from.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, assert_same_error, contiguous_strides, needs_torch, to_numpy, torch
from strategies import WRITABLE_KINDS, Layout, layouts, shapes

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.views, pytest.mark.usefixtures("default_device")]

SENTINEL = 99  # never drawn by strategies.random_values for these dtypes
VIEW_DTYPES = st.sampled_from(["float32", "int64", "uint8"])


# ------------------------------------------------------------ drawn view ops
@st.composite
def basic_indices(draw, shape):
    """A basic index for ``shape``: ints, slices with positive steps, None and Ellipsis."""
    items = []
    for size in shape:
        if size > 0 and draw(st.booleans()):
            items.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 1, size + 1))
            step = st.sampled_from([None, 1, 2, 3])
            items.append(slice(draw(bound), draw(bound), draw(step)))
    if draw(st.booleans()):  # replace a run of items by Ellipsis
        start = draw(st.integers(0, len(items)))
        stop = draw(st.integers(start, len(items)))
        items[start:stop] = [Ellipsis]
    else:  # leave trailing dimensions out: they are taken whole
        items = items[: draw(st.integers(0, len(items)))]
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@st.composite
def reshape_targets(draw, shape):
    """A shape with the same number of elements, possibly with one -1."""
    sizes = list(shape)
    for _ in range(draw(st.integers(1, 3))):
        move = draw(st.sampled_from(["merge", "insert1", "drop1", "split"]))
        if move == "merge" and len(sizes) >= 2:
            i = draw(st.integers(0, len(sizes) - 2))
            sizes[i : i + 2] = [sizes[i] * sizes[i + 1]]
        elif move == "insert1" and len(sizes) < 5:
            sizes.insert(draw(st.integers(0, len(sizes))), 1)
        elif move == "drop1" and 1 in sizes:
            sizes.remove(1)
        elif move == "split" and 4 in sizes:
            i = sizes.index(4)
            sizes[i : i + 1] = [2, 2]
    if sizes and math.prod(sizes) > 0 and draw(st.booleans()):
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return tuple(sizes)


def _np_flatten(a, start, end):
    """NumPy's equivalent of ``flatten(start, end)`` for non-negative dims."""
    if a.ndim == 0:
        return a.reshape(1)
    return a.reshape(a.shape[:start] + (math.prod(a.shape[start : end + 1]),) + a.shape[end + 1 :])


#: View ops drawn by ``view_ops``, with the (min, max) number of dims they accept.
VIEW_KINDS = {
    "index": (0, 4),
    "view": (0, 4),
    "reshape": (0, 4),
    "unsqueeze": (0, 4),
    "squeeze": (0, 4),
    "flatten": (0, 4),
    "t": (0, 2),
    "permute": (1, 4),
    "transpose": (1, 4),
    "narrow": (1, 4),
    "select": (1, 4),
    "squeeze_dim": (1, 4),
    "mT": (2, 4),
}


@st.composite
def view_ops(draw, shape, kind):
    """``(description, op, numpy_op, is_reshape)``: the view op ``kind`` for ``shape``.

    ``op`` takes a glasstorch or PyTorch tensor; ``numpy_op`` computes the values.
    """
    ndim = len(shape)
    dim = st.integers(-ndim, ndim - 1) if ndim else st.sampled_from([0, -1])
    if kind == "index":
        idx = draw(basic_indices(shape))
        return f"x[{idx!r}]", lambda t: t[idx], lambda a: a[idx], False
    if kind in ("view", "reshape"):
        target = draw(reshape_targets(shape))
        return (
            f"x.{kind}{target}",
            lambda t: getattr(t, kind)(*target) if target else getattr(t, kind)(()),
            lambda a: a.reshape(target),
            kind == "reshape",
        )
    if kind == "permute":
        perm = draw(st.permutations(range(ndim)))
        perm = [p - ndim if draw(st.booleans()) else p for p in perm]
        return f"x.permute({perm})", lambda t: t.permute(*perm), lambda a: a.transpose(perm), False
    if kind == "transpose":
        i, j = draw(dim), draw(dim)
        return (
            f"x.transpose({i}, {j})",
            lambda t: t.transpose(i, j),
            lambda a: a.swapaxes(i, j),
            False,
        )
    if kind == "t":
        return "x.t()", lambda t: t.t(), lambda a: a.T, False
    if kind == "mT":
        return "x.mT", lambda t: t.mT, lambda a: a.swapaxes(-1, -2), False
    if kind == "unsqueeze":
        d = draw(st.integers(-ndim - 1, ndim))
        return f"x.unsqueeze({d})", lambda t: t.unsqueeze(d), lambda a: np.expand_dims(a, d), False
    if kind == "squeeze":
        return "x.squeeze()", lambda t: t.squeeze(), lambda a: a.squeeze(), False
    if kind == "squeeze_dim":
        d = draw(dim)
        return (
            f"x.squeeze({d})",
            lambda t: t.squeeze(d),
            lambda a: a.squeeze(d) if a.shape[d] == 1 else a,
            False,
        )
    if kind == "flatten":
        if ndim == 0:
            return "x.flatten()", lambda t: t.flatten(), lambda a: a.reshape(1), False
        s, e = sorted((draw(dim) % ndim, draw(dim) % ndim))
        return (
            f"x.flatten({s}, {e})",
            lambda t: t.flatten(s, e),
            lambda a: _np_flatten(a, s, e),
            False,
        )
    if kind == "narrow":
        d = draw(dim)
        size = shape[d]
        start = draw(st.integers(0, size))
        length = draw(st.integers(0, size - start))
        return (
            f"x.narrow({d}, {start}, {length})",
            lambda t: t.narrow(d, start, length),
            lambda a: a[(slice(None),) * (d % ndim) + (slice(start, start + length),)],
            False,
        )
    # select
    d = draw(dim)
    if shape[d] == 0:
        return "x (size-0 select skipped)", lambda t: t, lambda a: a, False
    i = draw(st.integers(-shape[d], shape[d] - 1))
    return (
        f"x.select({d}, {i})",
        lambda t: t.select(d, i),
        lambda a: a[(slice(None),) * (d % ndim) + (i,)],
        False,
    )


def _written(tensor):
    """How many elements of ``tensor`` now hold SENTINEL."""
    return int((to_numpy(tensor) == SENTINEL).sum())


@pytest.mark.parametrize("kind", list(VIEW_KINDS))
@given(data=st.data())
def test_view_ops_on_layouts(kind, data, device):
    min_dims, max_dims = VIEW_KINDS[kind]
    shape = shapes(min_dims=min_dims, max_dims=max_dims)
    layout = data.draw(layouts(shape, dtype=data.draw(VIEW_DTYPES)))
    description, op, numpy_op, is_reshape = data.draw(view_ops(layout.shape, kind))
    x = layout.build(device=device)
    expected = numpy_op(layout.array)
    x_torch = layout.build(torch) if torch is not None else None
    y_torch = None
    if x_torch is not None:
        try:
            y_torch = op(x_torch)
        except Exception:  # PyTorch refuses this view: glasstorch must too
            assert_same_error(lambda: op(x), lambda: op(layout.build(torch)))
            return
    # Without PyTorch, NumPy says whether the result can share x's memory (a view)
    # or must be a copy: its reshape copies exactly when no strides fit.
    np_result = numpy_op(layout.build(np))
    np_is_view = (
        not isinstance(np_result, np.ndarray)  # a NumPy scalar: a 0-d view in glasstorch
        or np_result.size == 0
        or np.shares_memory(np_result, layout.base)
    )
    if x_torch is None and kind == "view" and not np_is_view:
        with pytest.raises(RuntimeError):
            op(x)
        return
    y = op(x)
    assert_close(y, np.array(expected))
    if y_torch is not None and y.numel() > 0:  # PyTorch's strides of empty tensors vary
        assert y.stride() == y_torch.stride(), description
        assert y.storage_offset() == y_torch.storage_offset(), description
        assert y.is_contiguous() == y_torch.is_contiguous(), description
    if layout.kind in WRITABLE_KINDS and y.numel() > 0:
        y[...] = SENTINEL  # write through the result: a view shows it in x
        written = _written(x)
        if y_torch is not None:
            y_torch[...] = SENTINEL
            assert written == _written(x_torch), description
        else:
            assert written == (y.numel() if np_is_view else 0), description


@given(layout=layouts(dtype="float32"))
def test_reshape_copies_only_when_it_must(layout, device):
    x = layout.build(device=device)
    y = x.reshape(-1) if x.numel() else x.reshape(0)
    assert_close(y, layout.array.reshape(-1))
    if x.numel() == 0:
        return
    y_torch = layout.build(torch).reshape(-1) if torch is not None else None
    if y_torch is not None:
        assert y.stride() == y_torch.stride()
    if layout.kind in WRITABLE_KINDS:
        y[...] = SENTINEL
        if y_torch is not None:
            y_torch[...] = SENTINEL
            x_torch = y_torch._base if y_torch._base is not None else None
            assert (_written(x) > 0) == (x_torch is not None)  # a view of x, or a copy
        elif x.is_contiguous():
            assert _written(x) == x.numel()


@given(layout=layouts(dtype=st.sampled_from(["float32", "int64", "bool"])))
def test_contiguous_clone_detach_on_layouts(layout, device):
    x = layout.build(device=device)
    c = x.contiguous()
    assert_close(c, layout.array)
    assert c.is_contiguous()
    if x.is_contiguous():
        assert c is x
    else:
        assert c.stride() == contiguous_strides(layout.shape)
    cl = x.clone()
    assert_close(cl, layout.array)
    d = x.detach()
    assert_close(d, layout.array)
    assert d.stride() == x.stride() and d.storage_offset() == x.storage_offset()
    if torch is not None and x.numel() > 0:
        xt = layout.build(torch)
        assert x.is_contiguous() == xt.is_contiguous()
        assert cl.stride() == xt.clone().stride()  # clone keeps a dense layout's strides
    if layout.kind in WRITABLE_KINDS and x.numel() > 0:
        cl[...] = True if layout.array.dtype == bool else SENTINEL
        assert_close(x, layout.array)  # clone copied
        c2 = x.contiguous()
        c2[...] = SENTINEL if layout.array.dtype != bool else True
        if not x.is_contiguous():
            assert_close(x, layout.array)


@given(shape=shapes(min_dims=2, min_side=2))
def test_view_of_transposed_tensor_is_refused(shape):
    x = gt.zeros(shape).transpose(0, 1)
    assert_same_error(
        lambda: x.view(-1),
        (lambda: torch.zeros(shape).transpose(0, 1).view(-1)) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"view size is not compatible with input tensor's size and stride \(at least one "
        r"dimension spans across two contiguous subspaces\)\. Use \.reshape\(\.\.\.\) instead\.",
    )


# ------------------------------------------------------------- explicit cases
def test_view_shares_storage_and_data_ptr():
    x = gt.arange(12.0)
    y = x.view(3, 4)
    assert y.stride() == (4, 1) and y.storage_offset() == 0
    assert y.data_ptr() == x.data_ptr()
    y[1, 2] = -1.0
    assert x[6].item() == -1.0
    x[0] = 5.0
    assert y[0, 0].item() == 5.0
    z = x.view(2, -1).t()
    assert z.shape == (6, 2) and z.stride() == (1, 6)
    assert z.data_ptr() == x.data_ptr()


def test_data_ptr_of_offset_view():
    x = gt.arange(6, dtype=gt.int32)
    y = x[2:]
    assert y.storage_offset() == 2
    assert y.data_ptr() == x.data_ptr() + 2 * x.element_size()


@pytest.mark.parametrize(
    "shape, perm, strides",
    [((2, 3, 4), (2, 0, 1), (1, 12, 4)), ((2, 3, 4), (-1, -3, -2), (1, 12, 4)), ((5,), (0,), (1,))],
)
def test_permute_strides(shape, perm, strides):
    x = gt.zeros(shape)
    assert x.permute(*perm).stride() == strides
    assert x.permute(perm).stride() == strides


def test_transpose_t_T_mT():
    x = gt.arange(6).view(2, 3)
    assert x.t().stride() == (1, 3) and x.T.stride() == (1, 3) and x.mT.stride() == (1, 3)
    assert_close(x.transpose(0, 1), np.arange(6).reshape(2, 3).T)
    assert_close(x.transpose(-1, -2), np.arange(6).reshape(2, 3).T)
    v = gt.arange(3)
    assert v.t().shape == (3,) and v.t().stride() == (1,)
    b = gt.zeros(4, 2, 3)
    assert b.mT.shape == (4, 3, 2) and b.mT.stride() == (6, 1, 3)


def test_expand_and_expand_as():
    x = gt.tensor([[1], [2], [3]])
    y = x.expand(3, 4)
    assert y.stride() == (1, 0) and y.storage_offset() == 0
    assert_close(y, np.repeat(np.array([[1], [2], [3]]), 4, axis=1))
    z = x.expand(2, -1, 2)
    assert z.shape == (2, 3, 2) and z.stride() == (0, 1, 0)
    assert x.expand_as(gt.zeros(3, 5)).shape == (3, 5)
    assert gt.tensor(7.0).expand(2, 2).stride() == (0, 0)
    assert x.expand((3, 2)).shape == (3, 2)
    x[0, 0] = 10
    assert y[0, 3].item() == 10  # expand is a view


def test_squeeze_unsqueeze():
    x = gt.zeros(1, 3, 1, 2)
    assert x.squeeze().shape == (3, 2) and x.squeeze().stride() == (2, 1)
    assert x.squeeze(0).shape == (3, 1, 2)
    assert x.squeeze(-2).shape == (1, 3, 2)
    assert x.squeeze(1).shape == (1, 3, 1, 2)  # not size 1: unchanged
    assert x.squeeze((0, 2)).shape == (3, 2)
    y = gt.zeros(2, 3)
    assert y.unsqueeze(0).shape == (1, 2, 3) and y.unsqueeze(0).stride() == (6, 3, 1)
    assert y.unsqueeze(-1).shape == (2, 3, 1) and y.unsqueeze(-1).stride() == (3, 1, 1)
    assert y.unsqueeze(1).stride() == (3, 3, 1)
    assert gt.tensor(1.0).unsqueeze(0).shape == (1,)


def test_flatten_unflatten():
    x = gt.arange(24).view(2, 3, 4)
    assert x.flatten().shape == (24,)
    assert x.flatten(1).shape == (2, 12) and x.flatten(1).stride() == (12, 1)
    assert x.flatten(0, 1).shape == (6, 4)
    assert x.flatten(-2, -1).shape == (2, 12)
    assert gt.tensor(3.0).flatten().shape == (1,)
    assert x.unflatten(2, (2, 2)).shape == (2, 3, 2, 2)
    assert x.unflatten(-1, (2, -1)).stride() == (12, 4, 2, 1)
    assert_close(x.unflatten(1, (3, 1)), np.arange(24).reshape(2, 3, 1, 4))


def test_narrow_select():
    x = gt.arange(20).view(4, 5)
    n = x.narrow(1, 1, 3)
    assert n.shape == (4, 3) and n.stride() == (5, 1) and n.storage_offset() == 1
    assert_close(x.narrow(0, -2, 2), np.arange(20).reshape(4, 5)[2:])
    s = x.select(1, -1)
    assert s.shape == (4,) and s.stride() == (5,) and s.storage_offset() == 4
    assert_close(s, np.array([4, 9, 14, 19]))
    s[0] = 100
    assert x[0, 4].item() == 100


def test_unbind_split_chunk():
    x = gt.arange(10).view(5, 2)
    rows = x.unbind()
    assert isinstance(rows, tuple) and len(rows) == 5
    assert rows[3].storage_offset() == 6
    cols = x.unbind(1)
    assert_close(cols[1], np.array([1, 3, 5, 7, 9]))
    assert cols[1].stride() == (2,)
    parts = x.split(2)
    assert isinstance(parts, tuple)
    assert [tuple(p.shape) for p in parts] == [(2, 2), (2, 2), (1, 2)]
    assert [p.storage_offset() for p in parts] == [0, 4, 8]
    parts = x.split([1, 4])
    assert [tuple(p.shape) for p in parts] == [(1, 2), (4, 2)]
    assert [tuple(p.shape) for p in gt.split(x, 1, dim=1)] == [(5, 1), (5, 1)]
    chunks = x.chunk(3)
    assert [tuple(c.shape) for c in chunks] == [(2, 2), (2, 2), (1, 2)]
    assert [tuple(c.shape) for c in gt.arange(5).chunk(3)] == [(2,), (2,), (1,)]
    assert len(gt.arange(2).chunk(5)) == 2
    assert [tuple(c.shape) for c in gt.arange(6).chunk(4)] == [(2,), (2,), (2,)]
    parts[1][0, 0] = -7
    assert x[1, 0].item() == -7


@pytest.mark.parametrize(
    "index, offset, strides",
    [
        ((1,), 4, (1,)),
        ((-1, -2), 10, ()),
        ((slice(None, None, 2),), 0, (8, 1)),
        ((Ellipsis, 1), 1, (4,)),
        ((None, 1, None), 4, (4, 4, 1)),
        ((slice(1, None), slice(None, None, 3)), 4, (4, 3)),
        ((slice(-2, None), Ellipsis, None), 4, (4, 1, 1)),
    ],
)
def test_basic_indexing_offsets_and_strides(index, offset, strides):
    x = gt.arange(12.0).view(3, 4)
    y = x[index]
    assert y.storage_offset() == offset
    assert_close(y, np.arange(12.0, dtype=np.float32).reshape(3, 4)[index])
    if torch is not None:
        assert y.stride() == torch.arange(12.0).view(3, 4)[index].stride()


def test_slice_assignment_writes_through():
    x = gt.zeros(3, 4)
    x[1] = 1.0
    x[:, ::2] = 2.0
    x[..., -1] = gt.tensor([5.0, 6.0, 7.0])
    x[0, 1:3] = gt.tensor([8.0, 9.0])
    expected = np.zeros((3, 4), dtype=np.float32)
    expected[1] = 1.0
    expected[:, ::2] = 2.0
    expected[..., -1] = [5.0, 6.0, 7.0]
    expected[0, 1:3] = [8.0, 9.0]
    assert_close(x, expected)


def test_contiguous_is_contiguous_clone_detach():
    x = gt.arange(6.0).view(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.t()
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    c[0, 0] = 100.0
    assert x[0, 0].item() == 0.0
    assert gt.zeros(3, 1).expand(3, 1).is_contiguous()
    assert gt.zeros(1, 3).t().is_contiguous()  # size-1 dims do not count
    cl = x.clone()
    cl[0, 0] = -1.0
    assert x[0, 0].item() == 0.0
    w = gt.ones(2, requires_grad=True)
    d = w.detach()
    assert not d.requires_grad and d.data_ptr() == w.data_ptr()
    d[0] = 3.0
    assert w[0].item() == 3.0


@needs_torch
@pytest.mark.parametrize(
    "layout",
    [
        Layout("contiguous", (2, 3), np.zeros((2, 3))),
        Layout("permuted", (2, 3, 2), np.zeros((2, 2, 3)), perm=(0, 2, 1)),
        Layout("sliced", (2, 3, 2), np.zeros((2, 7, 2)), dim=1, start=1),
        Layout("expanded", (2, 3, 2), np.zeros((2, 1, 1))),
    ],
    ids=lambda layout: layout.kind,
)
def test_layout_strides_match_torch(layout, device):
    x, xt = layout.build(device=device), layout.build(torch)
    assert x.stride() == xt.stride() and x.storage_offset() == xt.storage_offset()
    assert_close(x, layout.array)


@given(data=st.data())
def test_split_chunk_unbind_on_layouts(data, device):
    layout = data.draw(layouts(shapes(min_dims=1), dtype=VIEW_DTYPES))
    ndim = len(layout.shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))
    size = layout.shape[dim]
    how = data.draw(st.sampled_from(["split", "chunk", "unbind"]))
    if how == "split":
        arg = data.draw(st.integers(1, 4))
        bounds = list(range(0, size, arg)) + [size]
    elif how == "chunk":
        arg = data.draw(st.integers(1, 4))
        step = -(-size // arg) if size else 1
        bounds = list(range(0, size, step)) + [size]
    else:
        arg = None
        bounds = list(range(size + 1))
    if size == 0 and how != "unbind":
        bounds = [0, 0]

    def run(lib):
        x = layout.build(lib, device=device if lib is gt else None)
        return x.unbind(dim) if how == "unbind" else getattr(x, how)(arg, dim)

    parts = run(gt)
    assert isinstance(parts, tuple)
    numpy_parts = [
        np.take(layout.array, range(lo, hi), axis=dim) for lo, hi in zip(bounds, bounds[1:])
    ]
    if how == "unbind":
        numpy_parts = [p.squeeze(dim) for p in numpy_parts]
    if how == "chunk" and size == 0:
        numpy_parts = numpy_parts[:1] * arg  # PyTorch makes ``arg`` empty chunks
    assert len(parts) == len(numpy_parts)
    for part, expected in zip(parts, numpy_parts, strict=True):
        assert_close(part, expected)
    if torch is not None:
        torch_parts = run(torch)
        assert len(parts) == len(torch_parts)
        for part, expected in zip(parts, torch_parts, strict=True):
            if part.numel():
                assert part.stride() == expected.stride()
                assert part.storage_offset() == expected.storage_offset()


def test_chunk_of_an_empty_dim_gives_every_chunk():
    # Found by hypothesis; pinned here so it fails every run, not by chance.
    assert [tuple(c.shape) for c in gt.zeros(0).chunk(2)] == [(0,), (0,)]
    assert [tuple(c.shape) for c in gt.zeros(3, 0).chunk(3, 1)] == [(3, 0)] * 3


def test_empty_and_ellipsis_index_keep_strides_of_size_one_dims():
    # Found by hypothesis: x[()] and x[...] are aliases with x's own strides.
    x = gt.zeros(2, 1)[::2]
    assert x.stride() == (2, 1)
    assert x[()].stride() == (2, 1)
    assert x[...].stride() == (2, 1)


def test_tensor_split_takes_split_size_by_name():
    """Tensor.split names its size ``split_size``; torch.split names it ``split_size_or_sections``."""
    x = gt.arange(5)
    pieces = x.split(split_size=2)
    assert [p.tolist() for p in pieces] == [[0, 1], [2, 3], [4]]
    assert [p.tolist() for p in gt.split(x, split_size_or_sections=[1, 4])] == [[0], [1, 2, 3, 4]]
    if torch is not None:
        expected = torch.arange(5).split(split_size=2)
        assert [p.tolist() for p in pieces] == [p.tolist() for p in expected]
