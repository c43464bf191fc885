"""Sparse COO tensors: sparse_coo_tensor, to_sparse/to_dense, coalesce, the sparse-dense
products (torch.sparse.mm, spmm, mm, matmul, @) with their gradients, and printing."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, needs_torch, on_test_device, to_numpy, torch

import glasstorch as gt

pytestmark = [
    pytest.mark.linalg,
    pytest.mark.filterwarnings("ignore:Sparse invariant checks"),  # PyTorch's, not ours
]

# A 3 x 4 matrix with a duplicated position, (0, 2), stored twice.
INDICES = [[0, 1, 0, 2, 2], [2, 0, 2, 3, 1]]
VALUES = [1.5, -2.0, 0.5, 3.0, 4.0]
SIZE = (3, 4)


def _dense_of(indices, values, size) -> np.ndarray:
    """The dense matrix NumPy builds from COO parts (duplicates add up)."""
    out = np.zeros(size, dtype=np.float32)
    np.add.at(out, tuple(np.asarray(indices)), np.asarray(values, dtype=np.float32))
    return out


def _sparse(lib=gt, dtype=None, device="cpu"):
    """The test matrix, built by ``lib`` on ``device``."""
    return lib.sparse_coo_tensor(
        lib.tensor(INDICES), lib.tensor(VALUES, dtype=dtype), SIZE, device=device
    )


def test_metadata_and_to_dense(device):
    s = _sparse(device=device)
    assert s.is_sparse and s.layout is gt.sparse_coo and isinstance(s, gt.Tensor)
    assert gt.zeros(2).layout is gt.strided and not gt.zeros(2).is_sparse
    assert s.shape == SIZE and s.dim() == 2 and s.dtype is gt.float32
    assert s._nnz() == 5 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert not s.is_coalesced()
    assert s.device.type == device
    assert_close(s.to_dense(), _dense_of(INDICES, VALUES, SIZE))


def test_coalesce_sums_duplicates_and_sorts(device):
    s = _sparse(device=device).coalesce()
    assert s.is_coalesced() and s._nnz() == 4
    indices, values = to_numpy(s.indices()), to_numpy(s.values())
    positions = indices[0] * SIZE[1] + indices[1]
    assert list(positions) == sorted(set(positions))  # sorted, each once
    dense = _dense_of(INDICES, VALUES, SIZE)
    np.testing.assert_allclose(values, dense[tuple(indices)])
    assert_close(s.to_dense(), dense)


@needs_torch
def test_coalesce_matches_pytorch(device):
    ours, theirs = _sparse(device=device).coalesce(), _sparse(torch).coalesce()
    assert_close(ours.indices(), theirs.indices())
    assert_close(ours.values(), theirs.values())


def test_indices_and_values_need_coalesced(device):
    s = _sparse(device=device)
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced tensor, please call .coalesce"):
        s.values()
    assert_close(s._indices(), np.array(INDICES))
    assert_close(s._values(), np.array(VALUES, dtype=np.float32))


def test_size_inferred_and_checked():
    s = gt.sparse_coo_tensor([[0, 3, 1]], [1.0, 2.0, 3.0])
    assert s.shape == (4,)
    with pytest.raises(RuntimeError, match="must have same nnz"):
        gt.sparse_coo_tensor([[0, 1, 1]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        gt.sparse_coo_tensor([[0, 1, 3]], [1.0, 2.0, 3.0], (3,))
    with pytest.raises(RuntimeError, match="len\\(size\\) == sparse_dim \\+ dense_dim"):
        gt.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2, 2, 3))


@pytest.mark.parametrize("sparse_dim", [None, 1])
def test_to_sparse_round_trip(sparse_dim, device):
    dense = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, -3.0]], dtype=np.float32)
    args = () if sparse_dim is None else (sparse_dim,)
    s = on_test_device(dense).to_sparse(*args)
    assert s.is_coalesced() and s.sparse_dim() == (sparse_dim or 2)
    assert s._nnz() == (3 if sparse_dim is None else 2)  # nonzero entries, or nonzero rows
    assert_close(s.to_dense(), dense)
    if torch is not None:
        theirs = torch.from_numpy(dense).to_sparse(*args)
        assert_close(s.indices(), theirs.indices())
        assert_close(s.values(), theirs.values())


def test_dense_to_dense_is_itself():
    x = gt.ones(2)
    assert x.to_dense() is x


@pytest.mark.parametrize("product", ["sparse.mm", "spmm", "mm", "matmul", "@"])
def test_sparse_dense_product(product, device):
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((4, 5)).astype(np.float32)
    s, d = _sparse(device=device), on_test_device(dense)
    call = {
        "sparse.mm": gt.sparse.mm,
        "spmm": gt.spmm,
        "mm": gt.mm,
        "matmul": gt.matmul,
        "@": lambda a, b: a @ b,
    }[product]
    out = call(s, d)
    assert not out.is_sparse
    assert_close(out, _dense_of(INDICES, VALUES, SIZE) @ dense, rtol=1e-5, atol=1e-5)


def test_dense_sparse_product_and_sum(device):
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((2, 3)).astype(np.float32)
    expected = _dense_of(INDICES, VALUES, SIZE)
    assert_close(
        on_test_device(dense) @ _sparse(device=device), dense @ expected, rtol=1e-5, atol=1e-5
    )
    ones = on_test_device(np.ones(SIZE, dtype=np.float32))
    assert_close(ones + _sparse(device=device), 1 + expected)
    assert_close(gt.sparse.sum(_sparse(device=device)), expected.sum(), rtol=1e-6, atol=1e-6)
    assert_close(
        gt.sparse.sum(_sparse(device=device), 1).to_dense(), expected.sum(1), rtol=1e-6, atol=1e-6
    )
    assert_close((_sparse(device=device) * 2).to_dense(), 2 * expected)
    assert_close((_sparse(device=device) + _sparse(device=device)).to_dense(), 2 * expected)


def _gcn_layer(lib, features, adjacency, weight):
    """One GCN layer as programs write it: relu(A @ (X @ W))."""
    support = lib.mm(features, weight)
    return lib.relu(lib.spmm(adjacency, support))


def test_gcn_layer_gradients_reach_dense_operands(device):
    """Forward and backward of a GCN layer; the gradients follow from A^T G W^T and X^T A^T G."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    a = _dense_of(INDICES, VALUES, SIZE)[:, :4]
    adjacency = _sparse(device=device)
    xs, ws = on_test_device(x, requires_grad=True), on_test_device(w, requires_grad=True)
    out = _gcn_layer(gt, xs, adjacency, ws)
    out.sum().backward()
    pre = a @ x @ w
    g = (pre > 0).astype(np.float32)  # d relu(pre).sum() / d pre
    assert_close(out, np.maximum(pre, 0), rtol=1e-5, atol=1e-5)
    assert_close(ws.grad, x.T @ a.T @ g, rtol=1e-4, atol=1e-5)
    assert_close(xs.grad, a.T @ g @ w.T, rtol=1e-4, atol=1e-5)


@needs_torch
def test_gcn_layer_matches_pytorch(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    ours = [on_test_device(v, requires_grad=True) for v in (x, w)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, w)]
    out = _gcn_layer(gt, ours[0], _sparse(device=device), ours[1])
    expected = _gcn_layer(torch, theirs[0], _sparse(torch), theirs[1])
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    for mine, real in zip(ours, theirs, strict=True):
        assert_close(mine.grad, real.grad, rtol=1e-4, atol=1e-5)


@needs_torch
def test_values_gradient_matches_pytorch(device):
    """Values that require grad get PyTorch's gradient through torch.sparse.mm."""
    rng = np.random.default_rng(4)
    dense = rng.standard_normal((4, 2)).astype(np.float32)
    coalesced = [[0, 1, 2, 2], [2, 0, 1, 3]]
    ours = on_test_device([1.0, -2.0, 4.0, 3.0], requires_grad=True)
    theirs = torch.tensor([1.0, -2.0, 4.0, 3.0], requires_grad=True)
    out = gt.sparse.mm(gt.sparse_coo_tensor(coalesced, ours, SIZE), on_test_device(dense))
    expected = torch.sparse.mm(
        torch.sparse_coo_tensor(coalesced, theirs, SIZE), torch.from_numpy(dense)
    )
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-5)


def test_sparse_leaf_gradient_is_sparse(device):
    rng = np.random.default_rng(5)
    dense = rng.standard_normal((4, 2)).astype(np.float32)
    s = _sparse(device=device).coalesce().detach().requires_grad_()
    gt.sparse.mm(s, on_test_device(dense)).sum().backward()
    assert s.grad.is_sparse
    rows, cols = to_numpy(s.indices())
    assert_close(s.grad._values(), dense.sum(1)[cols], rtol=1e-5, atol=1e-6)  # d/dA_rc = sum_j D_cj
    assert rows.shape == cols.shape


@needs_torch
def test_printing_matches_pytorch():
    for ours, theirs in [
        (_sparse(device="cpu"), _sparse(torch)),
        (_sparse(dtype=gt.float64, device="cpu"), _sparse(torch, dtype=torch.float64)),
        (
            gt.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse(1),
            torch.tensor([[0.0, 1], [2, 0]]).to_sparse(1),
        ),
        (gt.zeros(2, 3).to_sparse(), torch.zeros(2, 3).to_sparse()),
    ]:
        assert repr(ours) == repr(theirs)


def test_printing_shape_without_torch():
    text = repr(gt.sparse_coo_tensor([[0, 1, 1]], [1.0, 2.0, 3.0], (3,)))
    assert text == (
        "tensor(indices=tensor([[0, 1, 1]]),\n"
        "       values=tensor([1., 2., 3.]),\n"
        "       size=(3,), nnz=3, layout=torch.sparse_coo)"
    )


def test_unsupported_operations_say_so(device):
    s = _sparse(device=device)
    with pytest.raises(NotImplementedError, match="not supported for sparse COO.*to_dense"):
        s.exp()
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        s + gt.ones(SIZE)
    with pytest.raises(NotImplementedError, match="two sparse tensors"):
        gt.sparse.mm(s, s.t())
    with pytest.raises(RuntimeError, match="Expected dim 0 size 4, got 3"):
        gt.sparse.mm(s, gt.ones(3, 2, device=device))


def test_to_device_and_dtype(device):
    s = _sparse(device=device).to(gt.float64)
    assert s.dtype is gt.float64 and s.is_sparse and s._values().dtype is gt.float64
    assert s.cpu().device.type == "cpu"
    assert_close(
        s.cpu().to_dense(), _dense_of(INDICES, VALUES, SIZE), check_dtype=False, check_device=False
    )
