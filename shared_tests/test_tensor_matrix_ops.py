"""tril/triu, diagonal/diag/trace, outer, repeat/tile, roll, cumprod, log2/log10,
norm/linalg.norm and einsum, against PyTorch on both tiers, with float64 gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compare import RNG, both, floats, same
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.usefixtures("default_device")]


# -- tril/triu, diagonal, outer, repeat/tile, roll, cumprod, log2/log10, norms and einsum


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def _compare(call, *arrays, grad=True):
    """``call(lib, *tensors)`` on glasstorch and PyTorch: values, then gradcheck."""
    ours = call(gt, *[on_test_device(a.copy()) for a in arrays])
    theirs = call(torch, *[torch.from_numpy(a.copy()) for a in arrays])
    assert_close(ours, theirs, atol=1e-12, rtol=1e-10)
    if grad:
        inputs = tuple(on_test_device(a.copy()).requires_grad_() for a in arrays)
        assert gradcheck(lambda *ts: call(gt, *ts), inputs)


LAYOUT_CASES = {
    "tril": lambda m, x: m.tril(x),
    "tril_k": lambda m, x: m.tril(x, 1),
    "triu_k": lambda m, x: x.triu(diagonal=-1),
    "diagonal": lambda m, x: m.diagonal(x, 1),
    "diagonal_dims": lambda m, x: x.diagonal(-1, 1, 0),
    "diag_of_matrix": lambda m, x: m.diag(x, -1),
    "diag_of_vector": lambda m, x: m.diag(x[0], 2),
    "diag_of_vector_below": lambda m, x: m.diag(x[1], -1),
    "trace": lambda m, x: m.trace(x),
    "outer": lambda m, x: m.outer(x[0], x[1]),
    "repeat": lambda m, x: x.repeat(2, 1, 3),
    "repeat_zero": lambda m, x: x.repeat(0, 2),
    "tile": lambda m, x: m.tile(x, (2,)),
    "roll_dims": lambda m, x: m.roll(x, (1, -1), (0, 1)),
    "roll_flat": lambda m, x: x.roll(5),
    "cumprod": lambda m, x: m.cumprod(x, 1),
    "cumprod_dim0": lambda m, x: x.cumprod(dim=0),
    "log2": lambda m, x: m.log2(x.abs() + 0.5),
    "log10": lambda m, x: (x.abs() + 0.5).log10(),
}


@needs_torch
@pytest.mark.linalg
@pytest.mark.parametrize("name", sorted(LAYOUT_CASES))
def test_layout_ops_match_pytorch(name):
    _compare(LAYOUT_CASES[name], *_arrays((3, 4)))


@needs_torch
@pytest.mark.linalg
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_batched_integer_and_in_place(name):
    x = gt.arange(24).reshape(2, 3, 4)
    assert_close(
        getattr(gt, name)(x, 1), getattr(torch, name)(torch.arange(24).reshape(2, 3, 4), 1)
    )
    y, ty = gt.ones(3, 3), torch.ones(3, 3)
    getattr(y, name + "_")(-1)
    getattr(ty, name + "_")(-1)
    assert_close(y, ty)


@needs_torch
@pytest.mark.linalg
def test_cumprod_with_zeros_gradient_and_integer_dtype():
    _compare(lambda m, x: m.cumprod(x, 0), np.array([2.0, 0.0, 3.0, 0.5]))
    assert_close(
        gt.cumprod(gt.tensor([1, 2, 3], dtype=gt.int32), 0),
        torch.cumprod(torch.tensor([1, 2, 3], dtype=torch.int32), 0),
    )


@needs_torch
@pytest.mark.linalg
def test_log2_log10_of_integers_are_float():
    assert_close(gt.log2(gt.tensor([1, 8, 1024])), torch.log2(torch.tensor([1, 8, 1024])))
    assert_close(gt.log10(gt.tensor([1.0, 1000.0])), torch.log10(torch.tensor([1.0, 1000.0])))


@needs_torch
@pytest.mark.linalg
def test_grad_fn_names_that_match_pytorch():
    x, tx = gt.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    for call in (
        lambda m, t: m.diagonal(t),
        lambda m, t: m.log2(t),
        lambda m, t: m.log10(t),
        lambda m, t: m.diag(t[0]),
    ):
        assert call(gt, x).grad_fn.name() == call(torch, tx).grad_fn.name()


@needs_torch
@pytest.mark.linalg
@pytest.mark.errors
@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tril(m.ones(3)),
        lambda m: m.triu(m.ones(3)),
        lambda m: m.ones(2, 3).repeat(2),
        lambda m: m.diag(m.ones(2, 2, 2)),
        lambda m: m.roll(m.ones(2, 2), 1, dims=(0, 1)),
        lambda m: m.outer(m.ones(2, 2), m.ones(3)),
        lambda m: m.trace(m.ones(3)),
    ],
)
def test_layout_errors_match_pytorch(call):
    assert_same_error(lambda: call(gt), lambda: call(torch))


NORM_CASES = {
    "norm": lambda m, x: m.norm(x),
    "norm_p1": lambda m, x: m.norm(x, p=1),
    "norm_dim": lambda m, x: x.norm(dim=1),
    "norm_inf": lambda m, x: m.norm(x, p=math.inf),
    "norm_fro_dims": lambda m, x: m.norm(x, p="fro", dim=(0, 1)),
    "norm_p3_keepdim": lambda m, x: m.norm(x, 3, 0, keepdim=True),
    "linalg": lambda m, x: m.linalg.norm(x),
    "linalg_ord1": lambda m, x: m.linalg.norm(x, ord=1),
    "linalg_ord_inf": lambda m, x: m.linalg.norm(x, ord=math.inf),
    "linalg_ord_minus_inf": lambda m, x: m.linalg.norm(x, ord=-math.inf, keepdim=True),
    "linalg_fro": lambda m, x: m.linalg.norm(x, ord="fro"),
    "linalg_vector": lambda m, x: m.linalg.norm(x[0], ord=1),
    "linalg_dim": lambda m, x: m.linalg.norm(x, dim=1, ord=1),
    "vector_norm_half": lambda m, x: m.linalg.vector_norm(x, 0.5, dim=0),
    "matrix_norm_minus1": lambda m, x: m.linalg.matrix_norm(x, -1),
}


@needs_torch
@pytest.mark.linalg
@pytest.mark.parametrize("name", sorted(NORM_CASES))
def test_norms_match_pytorch(name):
    _compare(NORM_CASES[name], *_arrays((3, 4), seed=1))


@needs_torch
@pytest.mark.linalg
def test_norm_gradient_at_zero_is_zero_and_node_name():
    z, tz = gt.zeros(3, requires_grad=True), torch.zeros(3, requires_grad=True)
    gt.norm(z).backward()
    torch.norm(tz).backward()
    assert_close(z.grad, tz.grad)
    assert gt.norm(z).grad_fn.name() == torch.norm(tz).grad_fn.name()
    assert_close(
        gt.linalg.vector_norm(gt.tensor([0.0, 2.0, -1.0]), 0),
        torch.linalg.vector_norm(torch.tensor([0.0, 2.0, -1.0]), 0),
    )


@needs_torch
@pytest.mark.linalg
@pytest.mark.errors
@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.linalg.norm(m.ones(2, 2, 2), ord=1),
        lambda m: m.linalg.norm(m.ones(3), ord="fro"),
        lambda m: m.norm(m.ones(3, dtype=m.int64)),
    ],
)
def test_norm_errors_match_pytorch(call):
    assert_same_error(lambda: call(gt), lambda: call(torch))


@needs_torch
@pytest.mark.linalg
def test_matrix_norms_that_need_singular_values_say_so():
    with pytest.raises(NotImplementedError, match="singular values"):
        gt.linalg.norm(gt.ones(2, 2), ord=2)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij->...ji", [(2, 3, 4)]),
    ("...j,j", [(2, 3), (3,)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("ij->", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("i j -> j i", [(2, 3)]),
    ("ijk,ikl,lm->ijm", [(2, 2, 3), (2, 3, 2), (2, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


@needs_torch
@pytest.mark.linalg
@pytest.mark.parametrize("equation, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_pytorch(equation, shapes):
    _compare(lambda m, *ts: m.einsum(equation, *ts), *_arrays(*shapes, seed=2))


@needs_torch
@pytest.mark.linalg
def test_einsum_takes_a_list_of_operands():
    a, b = _arrays((2, 3), (3,))
    ours = gt.einsum("ij,j->i", [on_test_device(a), on_test_device(b)])
    assert_close(ours, torch.einsum("ij,j->i", [torch.from_numpy(a), torch.from_numpy(b)]))


@needs_torch
@pytest.mark.linalg
@pytest.mark.errors
@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk", [(2, 3), (2, 3)]),
        ("ij->k", [(2, 3)]),
        ("ij", [(2, 3), (2, 3)]),
        ("ijk", [(2, 3)]),
        ("i,i", [(2,), (3,)]),
    ],
)
def test_einsum_errors_match_pytorch(equation, shapes):
    assert_same_error(
        lambda: gt.einsum(equation, *[gt.ones(s) for s in shapes]),
        lambda: torch.einsum(equation, *[torch.ones(s) for s in shapes]),
        exc_type=RuntimeError,
    )


# -- Matrix products, kron, cross, triangle indices, diag_embed, cov and corrcoef
@needs_torch
@pytest.mark.math
def test_products_match_pytorch(device):
    both(
        lambda T, i, m, v: T.addmv(i, m, v, beta=0.5, alpha=2),
        floats(3),
        floats(3, 4),
        floats(4),
        grad=True,
    )
    both(
        lambda T, i, a, b: T.addbmm(i, a, b),
        floats(2, 3),
        floats(4, 2, 5),
        floats(4, 5, 3),
        grad=True,
    )
    both(
        lambda T, i, a, b: i.addbmm(a, b, beta=0, alpha=3),
        floats(2, 3),
        floats(4, 2, 5),
        floats(4, 5, 3),
    )
    both(lambda T, a, b: T.vdot(a, b), floats(4), floats(4), grad=True)
    both(lambda T, a, b: T.inner(a, b), floats(2, 3, 4), floats(5, 4), grad=True)
    both(lambda T, a, b: a.inner(b), floats(4), floats(4))
    both(lambda T, a, b: T.inner(a, b), np.array(2.0), floats(3))
    both(lambda T, a, b: T.dist(a, b), floats(3, 4), floats(4), grad=True)
    both(lambda T, a, b: a.dist(b, 1), floats(3, 4), floats(4), grad=True)
    both(lambda T, a, b: T.dist(a, b, float("inf")), floats(5), floats(5))
    a, b = floats(3, 4), floats(3, 4)
    both(lambda T, a, b: T.cosine_similarity(a, b, dim=-1), a, b, grad=True)


@needs_torch
@pytest.mark.math
@pytest.mark.parametrize(
    "a_shape, b_shape", [((2,), (3,)), ((2, 3), (2, 2)), ((2, 1, 2), (3, 2)), ((), (2,))]
)
def test_kron_matches_pytorch(device, a_shape, b_shape):
    both(lambda T, a, b: T.kron(a, b), floats(*a_shape), floats(*b_shape), grad=True)
    ints = np.arange(1, 1 + int(np.prod(b_shape))).reshape(b_shape)
    both(lambda T, a, b: a.kron(b), np.full(a_shape, 2, dtype=np.int64), ints)


@needs_torch
@pytest.mark.math
def test_cross_matches_pytorch(device):
    a, b = floats(4, 3), floats(4, 3)
    both(lambda T, a, b: T.cross(a, b, dim=1), a, b, grad=True)
    both(lambda T, a, b: T.linalg.cross(a, b), a, b, grad=True)
    both(lambda T, a, b: a.cross(b, dim=0), floats(3, 2), floats(3, 1), grad=True)
    both(lambda T, a, b: T.linalg.cross(a, b, dim=0), floats(3, 1), floats(3, 4))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        both(lambda T, a, b: T.cross(a, b), floats(3, 3), floats(3, 3))
    x = on_test_device(floats(2, 3), requires_grad=True)
    y = on_test_device(floats(2, 3), requires_grad=True)
    assert gradcheck(lambda x, y: gt.linalg.cross(x, y), (x, y))
    assert_same_error(
        lambda: gt.cross(gt.zeros(2, 2), gt.zeros(2, 2), dim=1),
        lambda: torch.cross(torch.zeros(2, 2), torch.zeros(2, 2), dim=1),
        match="inputs dimension 1 must have length 3. Got 2 and 2",
    )


@needs_torch
@pytest.mark.math
@pytest.mark.parametrize("offset", [-4, -1, 0, 2, 5])
def test_triangle_indices_match_pytorch(device, offset):
    for row, col in [(3, 3), (4, 2), (2, 5), (0, 3)]:
        same(gt.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
        same(gt.triu_indices(row, col, offset), torch.triu_indices(row, col, offset))
    same(gt.tril_indices(3, 4, dtype=gt.int32), torch.tril_indices(3, 4, dtype=torch.int32))


@needs_torch
@pytest.mark.math
@pytest.mark.parametrize("offset, dim1, dim2", [(0, -2, -1), (1, 0, 2), (-2, 1, 0), (0, 2, 0)])
def test_diag_embed_matches_pytorch(device, offset, dim1, dim2):
    both(lambda T, x: T.diag_embed(x, offset, dim1, dim2), floats(2, 3), grad=True)
    both(lambda T, x: x.diag_embed(offset), np.array([1, 2, 3]))
    y = on_test_device(floats(2, 2), requires_grad=True)
    assert gradcheck(lambda y: gt.diag_embed(y, offset, dim1, dim2), (y,))


@needs_torch
@pytest.mark.math
def test_cov_and_corrcoef_match_pytorch(device):
    x = floats(3, 6)
    both(lambda T, x: T.cov(x), x, grad=True)
    both(lambda T, x: x.cov(correction=0), x, grad=True)
    both(lambda T, x: T.cov(x), floats(6))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), RNG.random(6)
    both(lambda T, x, f: T.cov(x, fweights=f), x, fw, grad=True)
    both(lambda T, x, a: T.cov(x, aweights=a), x, aw)
    both(lambda T, x, f, a: T.cov(x, correction=2, fweights=f, aweights=a), x, fw, aw)
    both(lambda T, x: T.corrcoef(x), x, grad=True)
    both(lambda T, x: x.corrcoef(), np.array([[1, 2, 4], [3, 1, 0]]))
    y = on_test_device(floats(2, 4), requires_grad=True)
    assert gradcheck(gt.corrcoef, (y,))
    assert_same_error(
        lambda: gt.cov(gt.zeros(2, 2, 2)),
        lambda: torch.cov(torch.zeros(2, 2, 2)),
        match="expected input to have two or fewer dimensions",
    )


# -- cdist, cartesian_prod and block_diag
@needs_torch
@pytest.mark.math
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
def test_cdist_matches_pytorch(device, p):
    a, b = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    b[0, 1] = a[0, 2]  # a zero distance: its gradient is zero, as in PyTorch
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ag, bg = on_test_device(a, requires_grad=True), on_test_device(b, requires_grad=True)
    want, got = torch.cdist(at, bt, p=p), gt.cdist(ag, bg, p=p)
    assert_close(got, want.detach())
    if p > 0:
        seed = RNG.standard_normal(want.shape)
        want.backward(torch.tensor(seed))
        got.backward(on_test_device(seed))
        assert_close(ag.grad, at.grad, rtol=1e-7, atol=1e-9)
        assert_close(bg.grad, bt.grad, rtol=1e-7, atol=1e-9)


@needs_torch
@pytest.mark.math
@pytest.mark.gradcheck
def test_cdist_gradcheck(device):
    a = on_test_device(RNG.standard_normal((3, 2)), requires_grad=True)
    b = on_test_device(RNG.standard_normal((4, 2)), requires_grad=True)
    for p in (1.5, 2.0):
        assert gradcheck(lambda a, b, p=p: gt.cdist(a, b, p=p), (a, b))


@needs_torch
@pytest.mark.math
@pytest.mark.errors
def test_cdist_errors():
    assert_same_error(
        lambda: gt.cdist(gt.zeros(3), gt.zeros(3)),
        lambda: torch.cdist(torch.zeros(3), torch.zeros(3)),
        match="cdist only supports at least 2D tensors, X1 got: 1D",
    )
    assert_same_error(
        lambda: gt.cdist(gt.zeros(2, 3), gt.zeros(2, 4)),
        lambda: torch.cdist(torch.zeros(2, 3), torch.zeros(2, 4)),
        match="X1 and X2 must have the same number of columns. X1: 3 X2: 4",
    )
    assert_same_error(
        lambda: gt.cdist(gt.zeros(2, 3), gt.zeros(2, 3), p=-1),
        lambda: torch.cdist(torch.zeros(2, 3), torch.zeros(2, 3), p=-1),
        match="cdist only supports non-negative p values",
    )


# =========================================================== constructions


@needs_torch
@pytest.mark.math
def test_cartesian_prod_and_block_diag(device):
    a, b, c = np.array([1, 2]), np.array([3, 4, 5]), np.array([6])
    same(
        gt.cartesian_prod(on_test_device(a), on_test_device(b), on_test_device(c)),
        torch.cartesian_prod(torch.tensor(a), torch.tensor(b), torch.tensor(c)),
    )
    same(gt.cartesian_prod(on_test_device(a)), torch.cartesian_prod(torch.tensor(a)))
    m = RNG.standard_normal((2, 3))
    same(
        gt.block_diag(on_test_device(a), on_test_device(np.array(3.0)), on_test_device(m)),
        torch.block_diag(torch.tensor(a), torch.tensor(3.0, dtype=torch.float64), torch.tensor(m)),
    )
    x = on_test_device(RNG.standard_normal((2, 2)), requires_grad=True)
    y = on_test_device(RNG.standard_normal((1, 3)), requires_grad=True)
    assert gradcheck(gt.block_diag, (x, y))


@needs_torch
@pytest.mark.math
@pytest.mark.errors
def test_construction_errors():
    assert_same_error(
        lambda: gt.block_diag(gt.zeros(2, 2, 2)),
        lambda: torch.block_diag(torch.zeros(2, 2, 2)),
        match="Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions",
    )
    assert_same_error(
        lambda: gt.cartesian_prod(gt.ones(2, 2)),
        lambda: torch.cartesian_prod(torch.ones(2, 2)),
        match=r"Expect a 1D vector, but got shape \[2, 2\]",
    )


# -- einsum's sublist format
@pytest.mark.nn
def test_einsum_sublist_format():
    a, v = gt.arange(6.0).reshape(2, 3), gt.tensor([1.0, 2.0, 3.0])
    assert gt.einsum(a, [0, 1], v, [1], [0]).tolist() == [8.0, 26.0]
    assert gt.einsum(a, [0, 1]).tolist() == a.tolist()  # implicit output: sorted subscripts
    assert gt.einsum(a, [Ellipsis, 1], v, [1], [Ellipsis]).tolist() == [8.0, 26.0]
    with pytest.raises(ValueError, match=r"within the valid range \[0, 52\)"):
        gt.einsum(v, [60], [60])
