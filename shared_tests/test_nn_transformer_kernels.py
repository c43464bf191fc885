"""The fused transformer kernels (``layer_norm``, ``gelu``, ``attention_softmax``,
``softmax_backward`` and their gradients) through the functions that run them:
``F.layer_norm``, ``F.gelu``, ``F.scaled_dot_product_attention`` and ``F.linear``
on batches of rows.

Each is compared with PyTorch forward and backward in float32 and float64, on odd
shapes and on non-contiguous inputs; gradcheck and gradgradcheck run in float64
on tiny shapes (double backward goes through the plain formulas).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, needs_torch, torch

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.nn

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64]


def tol(dtype) -> dict:
    return {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-11}


def values(*shape, dtype=np.float64):
    return RNG.uniform(-2.0, 2.0, size=shape).astype(dtype)


def pair(array: np.ndarray, device: str):
    """The same leaf for glasstorch (on ``device``) and PyTorch."""
    return (
        gt.tensor(array, requires_grad=True, device=device),
        torch.tensor(array, requires_grad=True),
    )


def backprop_same(out_gt, out_t, device: str) -> None:
    """Backward from the same random cotangent on both sides."""
    weights = RNG.standard_normal(tuple(out_t.shape)).astype(out_t.detach().numpy().dtype)
    out_gt.backward(gt.tensor(weights, device=device))
    out_t.backward(torch.tensor(weights))


def compare_grads(pairs, dtype) -> None:
    for ours, theirs in pairs:
        if theirs.grad is None:
            assert ours.grad is None
        else:
            assert_close(ours.grad, theirs.grad, **tol(dtype))


# ---------------------------------------------------------------- LayerNorm


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, normalized", [((3, 5, 7), (7,)), ((1, 1), (1,)), ((4, 2, 3), (2, 3)), ((9,), (9,))]
)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_matches_torch(shape, normalized, affine, dtype, device):
    x, tx = pair(values(*shape, dtype=dtype), device)
    w, tw = pair(values(*normalized, dtype=dtype), device)
    b, tb = pair(values(*normalized, dtype=dtype), device)
    if affine != "both":
        b, tb = None, None
    if affine == "none":
        w, tw = None, None
    out = F.layer_norm(x, normalized, w, b, eps=1e-4)
    expected = torch.nn.functional.layer_norm(tx, normalized, tw, tb, eps=1e-4)
    assert_close(out, expected, **tol(dtype))
    assert type(out.grad_fn).__name__ == type(expected.grad_fn).__name__
    backprop_same(out, expected, device)
    compare_grads([(x, tx)] + [(p, q) for p, q in ((w, tw), (b, tb)) if p is not None], dtype)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [7, 128, 1000])
def test_layer_norm_of_many_rows_is_each_row_alone(width, dtype, device):
    """11 rows (the fast tier takes the moments of four rows at once, then three
    alone), some extreme (a huge value, a constant row): every row comes out bit
    for bit as it does normalized on its own, and matches PyTorch's."""
    rows = values(11, width, dtype=dtype) * 100 + 3
    rows[2, -1] = 1e30  # a square that overflows in float32
    rows[5] = 0.25  # zero variance
    rows[9, 0] = -1e20
    w_values, b_values = values(width, dtype=dtype), values(width, dtype=dtype)
    w, b = gt.tensor(w_values, device=device), gt.tensor(b_values, device=device)
    together = F.layer_norm(gt.tensor(rows, device=device), (width,), w, b).cpu().numpy()
    for r in range(len(rows)):
        alone = F.layer_norm(gt.tensor(rows[r : r + 1], device=device), (width,), w, b)
        np.testing.assert_array_equal(together[r : r + 1], alone.cpu().numpy(), err_msg=f"row {r}")
    expected = torch.nn.functional.layer_norm(
        torch.tensor(rows), (width,), torch.tensor(w_values), torch.tensor(b_values)
    )
    assert_close(together, expected.numpy(), **tol(dtype))


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_of_a_non_contiguous_input(dtype, device):
    base, tbase = pair(values(6, 4, 3, dtype=dtype), device)
    w, tw = pair(values(6, dtype=dtype), device)
    out = F.layer_norm(base.transpose(0, 2), (6,), w)  # rows of stride 12
    expected = torch.nn.functional.layer_norm(tbase.transpose(0, 2), (6,), tw)
    assert_close(out, expected, **tol(dtype))
    backprop_same(out, expected, device)
    compare_grads([(base, tbase), (w, tw)], dtype)


@needs_torch
def test_layer_norm_only_the_input_needs_a_gradient(device):
    x, tx = pair(values(5, 8), device)
    w_values, b_values = values(8), values(8)
    w, b = gt.tensor(w_values, device=device), gt.tensor(b_values, device=device)
    out = F.layer_norm(x, (8,), w, b)
    expected = torch.nn.functional.layer_norm(
        tx, (8,), torch.tensor(w_values), torch.tensor(b_values)
    )
    backprop_same(out, expected, device)
    assert_close(x.grad, tx.grad, **tol(np.float64))
    assert w.grad is None and b.grad is None


def test_layer_norm_gradcheck(device):
    x = gt.tensor(values(2, 3), requires_grad=True, device=device)
    w = gt.tensor(values(3), requires_grad=True, device=device)
    b = gt.tensor(values(3), requires_grad=True, device=device)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (3,), w, b), (x, w, b))


def test_layer_norm_gradgradcheck(device):
    x = gt.tensor(values(2, 3), requires_grad=True, device=device)
    w = gt.tensor(values(3), requires_grad=True, device=device)
    assert gradgradcheck(lambda x, w: F.layer_norm(x, (3,), w), (x, w))


# --------------------------------------------------------------------- GELU


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 2), (0, 4)])
def test_gelu_matches_torch(shape, approximate, dtype, device):
    x, tx = pair(values(*shape, dtype=dtype) * 3, device)
    out = F.gelu(x, approximate=approximate)
    expected = torch.nn.functional.gelu(tx, approximate=approximate)
    assert_close(out, expected, **tol(dtype))
    backprop_same(out, expected, device)
    compare_grads([(x, tx)], dtype)


@needs_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_a_non_contiguous_input(approximate, device):
    x, tx = pair(values(4, 6, dtype=np.float32), device)
    out = F.gelu(x.t()[::2], approximate=approximate)
    expected = torch.nn.functional.gelu(tx.t()[::2], approximate=approximate)
    assert_close(out, expected, **tol(np.float32))
    backprop_same(out, expected, device)
    compare_grads([(x, tx)], np.float32)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradcheck_and_gradgradcheck(approximate, device):
    x = gt.tensor(values(2, 3), requires_grad=True, device=device)
    assert gradcheck(lambda x: F.gelu(x, approximate=approximate), (x,))
    assert gradgradcheck(lambda x: F.gelu(x, approximate=approximate), (x,))


# ---------------------------------------------------------------- attention


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sizes", [(5, 5), (3, 6), (6, 3), (1, 1)])
def test_attention_matches_torch(sizes, causal, dtype, device):
    length, keys = sizes
    q, tq = pair(values(2, 3, length, 4, dtype=dtype), device)
    k, tk = pair(values(2, 3, keys, 4, dtype=dtype), device)
    v, tv = pair(values(2, 3, keys, 5, dtype=dtype), device)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.7)
    expected = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, is_causal=causal, scale=0.7
    )
    assert_close(out, expected, **tol(dtype))
    backprop_same(out, expected, device)
    compare_grads([(q, tq), (k, tk), (v, tv)], dtype)


@needs_torch
@pytest.mark.parametrize("causal", [False, True])
def test_attention_over_head_views_as_in_a_gpt(causal, device):
    """q, k, v as a GPT makes them: one (B, T, 3C) projection split and transposed."""
    qkv, tqkv = pair(values(2, 5, 3 * 8, dtype=np.float32), device)

    def heads(lib_qkv):
        q, k, v = lib_qkv.split(8, dim=2)
        return [z.view(2, 5, 2, 4).transpose(1, 2) for z in (q, k, v)]

    out = F.scaled_dot_product_attention(*heads(qkv), is_causal=causal)
    expected = torch.nn.functional.scaled_dot_product_attention(*heads(tqkv), is_causal=causal)
    assert_close(out, expected, **tol(np.float32))
    backprop_same(out, expected, device)
    compare_grads([(qkv, tqkv)], np.float32)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradcheck_and_gradgradcheck(causal, device):
    q, k, v = (gt.tensor(values(1, 3, 2), requires_grad=True, device=device) for _ in range(3))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    assert gradcheck(attend, (q, k, v))
    assert gradgradcheck(attend, (q, k, v))


def test_causal_attention_weights_are_zero_above_the_diagonal(device):
    q = gt.tensor(values(1, 4, 3), device=device)
    v = gt.eye(4, dtype=gt.float64, device=device).unsqueeze(0)  # the output is the weights
    weights = F.scaled_dot_product_attention(q, q, v, is_causal=True).cpu().numpy()[0]
    assert np.all(weights[np.triu_indices(4, 1)] == 0)
    np.testing.assert_allclose(weights.sum(1), np.ones(4))


# ------------------------------------------------------------------- Linear


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_on_a_batch_of_sequences(bias, dtype, device):
    x, tx = pair(values(3, 4, 5, dtype=dtype), device)
    w, tw = pair(values(6, 5, dtype=dtype), device)
    b, tb = pair(values(6, dtype=dtype), device) if bias else (None, None)
    out = F.linear(x.transpose(0, 1), w, b)  # a non-contiguous input: reshaped by a copy
    expected = torch.nn.functional.linear(tx.transpose(0, 1), tw, tb)
    assert_close(out, expected, **tol(dtype))
    backprop_same(out, expected, device)
    compare_grads([(x, tx), (w, tw)] + ([(b, tb)] if bias else []), dtype)


@needs_torch
def test_matmul_of_a_batch_by_a_matrix_folds_and_errors_like_torch():
    with pytest.raises(RuntimeError) as ours:
        gt.randn(2, 3, 4) @ gt.randn(5, 3)
    with pytest.raises(RuntimeError) as theirs:
        torch.randn(2, 3, 4) @ torch.randn(5, 3)
    assert str(ours.value) == str(theirs.value)


@needs_torch
@pytest.mark.parametrize("shape", [(5, 2, 0), (0, 2, 4), (2, 0, 4)])
def test_linear_and_batched_matmul_on_empty_shapes(shape, device):
    x, tx = pair(values(*shape), device)
    w, tw = pair(values(3, shape[-1]), device)
    b, tb = pair(values(3), device)
    out, expected = F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb)
    assert_close(out, expected)
    backprop_same(out, expected, device)
    compare_grads([(x, tx), (w, tw), (b, tb)], np.float64)
    assert_close(x @ w.t(), tx @ tw.t())
