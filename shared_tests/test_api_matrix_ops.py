"""tril/triu, diagonal/diag/trace, outer, repeat/tile, roll, cumprod, log2/log10,
norm/linalg.norm and einsum, against PyTorch on both tiers, with float64 gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.linalg, needs_torch, pytest.mark.usefixtures("default_device")]


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


@pytest.mark.parametrize("name", sorted(LAYOUT_CASES))
def test_layout_ops_match_pytorch(name):
    _compare(LAYOUT_CASES[name], *_arrays((3, 4)))


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


def test_cumprod_with_zeros_gradient_and_integer_dtype():
    _compare(lambda m, x: m.cumprod(x, 0), np.array([2.0, 0.0, 3.0, 0.5]))
    assert_close(
        gt.cumprod(gt.tensor([1, 2, 3], dtype=gt.int32), 0),
        torch.cumprod(torch.tensor([1, 2, 3], dtype=torch.int32), 0),
    )


def test_log2_log10_of_integers_are_float():
    assert_close(gt.log2(gt.tensor([1, 8, 1024])), torch.log2(torch.tensor([1, 8, 1024])))
    assert_close(gt.log10(gt.tensor([1.0, 1000.0])), torch.log10(torch.tensor([1.0, 1000.0])))


def test_grad_fn_names_that_match_pytorch():
    x, tx = gt.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    for call in (
        lambda m, t: m.diagonal(t),
        lambda m, t: m.log2(t),
        lambda m, t: m.log10(t),
        lambda m, t: m.diag(t[0]),
    ):
        assert call(gt, x).grad_fn.name() == call(torch, tx).grad_fn.name()


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


@pytest.mark.parametrize("name", sorted(NORM_CASES))
def test_norms_match_pytorch(name):
    _compare(NORM_CASES[name], *_arrays((3, 4), seed=1))


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


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_pytorch(equation, shapes):
    _compare(lambda m, *ts: m.einsum(equation, *ts), *_arrays(*shapes, seed=2))


def test_einsum_takes_a_list_of_operands():
    a, b = _arrays((2, 3), (3,))
    ours = gt.einsum("ij,j->i", [on_test_device(a), on_test_device(b)])
    assert_close(ours, torch.einsum("ij,j->i", [torch.from_numpy(a), torch.from_numpy(b)]))


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
