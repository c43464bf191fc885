"""Attention: F.scaled_dot_product_attention, nn.MultiheadAttention, the Transformer
encoder, GELU's tanh form and nn.utils.rnn.pad_sequence.

Everything is compared with PyTorch from the same weights (state dicts copied
across through NumPy), forward and backward; gradcheck runs in float64 on tiny
shapes, so that the pure-Python reference tier runs the file in seconds.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from compare import close_on_device, copy_parameters
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(7)
TOL = {"rtol": 1e-4, "atol": 1e-5}


def from_torch(tensor):
    return gt.from_numpy(np.array(tensor.detach().numpy(), copy=True)).to(TEST_DEVICE)


def values(*shape, dtype=np.float32):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def leaf_pair(array: np.ndarray):
    return gt.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def copy_weights(ours, theirs):
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})


def backprop_same(out_gt, out_t):
    weights = RNG.standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out_gt * gt.tensor(weights)).sum().backward()
    (out_t * torch.tensor(weights)).sum().backward()


def compare_parameter_grads(ours, theirs):
    theirs_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        assert_close(param.grad, theirs_params[name].grad, **TOL)


# ------------------------------------------------ scaled_dot_product_attention


def bool_mask(*shape):
    mask = RNG.uniform(size=shape) > 0.3
    mask[..., 0] = True  # every query keeps at least one key
    return mask


SDPA_CASES = {
    "plain": {},
    "bool-mask": {"attn_mask": "bool"},
    "float-mask": {"attn_mask": "float"},
    "causal": {"is_causal": True},
    "scale": {"scale": 0.3},
}


@needs_torch
@pytest.mark.parametrize("case", list(SDPA_CASES))
@pytest.mark.parametrize("lengths", [(3, 3), (2, 4), (4, 2)], ids=["L=S", "L<S", "L>S"])
def test_sdpa_matches_torch(case, lengths):
    target, source = lengths
    kwargs = dict(SDPA_CASES[case])
    if kwargs.get("attn_mask") == "bool":
        mask = bool_mask(target, source)
        kwargs_gt = {"attn_mask": gt.tensor(mask)}
        kwargs_t = {"attn_mask": torch.tensor(mask)}
    elif kwargs.get("attn_mask") == "float":
        mask = values(2, 1, target, source)
        kwargs_gt = {"attn_mask": gt.tensor(mask)}
        kwargs_t = {"attn_mask": torch.tensor(mask)}
    else:
        kwargs_gt = kwargs_t = kwargs
    pairs = [
        leaf_pair(values(2, 2, target, 4)),
        leaf_pair(values(2, 2, source, 4)),
        leaf_pair(values(2, 2, source, 3)),
    ]
    out_gt = F.scaled_dot_product_attention(*(p[0] for p in pairs), **kwargs_gt)
    out_t = torch.nn.functional.scaled_dot_product_attention(*(p[1] for p in pairs), **kwargs_t)
    assert_close(out_gt, out_t, **TOL)
    backprop_same(out_gt, out_t)
    for g, t in pairs:
        assert_close(g.grad, t.grad, **TOL)


@needs_torch
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_rows_give_zeros_like_torch(kind):
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    if kind == "float":
        mask = np.where(mask, 0.0, -np.inf).astype(np.float32)
    q, k, v = leaf_pair(values(3, 2)), leaf_pair(values(4, 2)), leaf_pair(values(4, 2))
    out_gt = F.scaled_dot_product_attention(q[0], k[0], v[0], attn_mask=gt.tensor(mask))
    out_t = torch.nn.functional.scaled_dot_product_attention(
        q[1], k[1], v[1], attn_mask=torch.tensor(mask)
    )
    assert_close(out_gt, out_t, **TOL)
    assert np.all(out_gt.detach().cpu().numpy()[1] == 0)
    backprop_same(out_gt, out_t)
    for g, t in (q, k, v):
        assert np.all(np.isfinite(g.grad.cpu().numpy()))
        assert_close(g.grad, t.grad, **TOL)


@needs_torch
def test_sdpa_grouped_query_attention_matches_torch():
    q, k, v = values(1, 4, 3, 2), values(1, 2, 3, 2), values(1, 2, 3, 2)
    out_gt = F.scaled_dot_product_attention(
        gt.tensor(q), gt.tensor(k), gt.tensor(v), enable_gqa=True
    )
    out_t = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), enable_gqa=True
    )
    assert_close(out_gt, out_t, **TOL)


def test_sdpa_dropout_uses_the_generator():
    q = gt.tensor(values(4, 6, 3))
    plain = F.scaled_dot_product_attention(q, q, q)
    gt.manual_seed(5)
    first = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    gt.manual_seed(5)
    again = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert np.array_equal(first.cpu().numpy(), again.cpu().numpy())
    assert not np.allclose(first.cpu().numpy(), plain.cpu().numpy())
    dropped = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    assert np.all(dropped.cpu().numpy() == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("triangle", ["out", "a", "a_transposed"])
@pytest.mark.parametrize("m, n, k", [(13, 11, 17), (12, 40, 9), (70, 3, 70)])
def test_causal_matmul_leaves_out_only_what_the_mask_zeroes(triangle, m, n, k, dtype):
    """The contract's ``causal_matmul`` against NumPy in float64: ``"out"`` is the
    product on and below the diagonal and zeros above it; ``"a"`` and
    ``"a_transposed"`` take ``a`` as zero above (below) its diagonal, which here it
    is, so they equal the full product. Strided operands (a transposed ``b``, a
    sliced ``a``), a batch of two."""
    from glasstorch._tier import kernels

    rows, cols = np.indices((m, k))
    a_values = values(2, m, k + 5, dtype=dtype)[..., :k]  # rows k + 5 apart
    if triangle == "a":
        a_values = np.where(cols <= rows, a_values, 0).astype(dtype)
    elif triangle == "a_transposed":
        a_values = np.where(cols >= rows, a_values, 0).astype(dtype)
    b_values = values(2, n, k, dtype=dtype)
    a = gt.tensor(np.ascontiguousarray(values(2, m, k + 5, dtype=dtype)))[..., :k]
    a.copy_(gt.tensor(a_values))
    b = gt.tensor(b_values).transpose(-2, -1)  # (2, k, n), columns contiguous
    out = gt.full((2, m, n), float("nan"), dtype=a.dtype)
    kernels.causal_matmul(out._strided(), a._strided(), b._strided(), triangle)
    want = np.asarray(a_values, np.float64) @ np.asarray(b_values, np.float64).swapaxes(-1, -2)
    if triangle == "out":
        want = np.where(np.indices((m, n))[1] <= np.indices((m, n))[0], want, 0.0)
    atol = 1e-5 * k if dtype == np.float32 else 1e-12 * k
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=0, atol=atol)


@needs_torch
def test_causal_attention_is_one_node_named_as_pytorch():
    q = values(2, 3, 5, 4)
    ours = F.scaled_dot_product_attention(*(leaf_pair(q)[0] for _ in range(3)), is_causal=True)
    theirs = torch.nn.functional.scaled_dot_product_attention(
        *(leaf_pair(q)[1] for _ in range(3)), is_causal=True
    )
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


@needs_torch
def test_causal_attention_of_split_heads_is_laid_out_as_pytorch():
    """Heads split from one (B, L, 3C) projection, as in a GPT block: the output is
    laid out (B, L, H, E) as PyTorch's, so transposing the heads back needs no copy;
    values and the projection's gradient match PyTorch's."""
    ours, theirs = leaf_pair(values(2, 5, 36))

    def heads(lib_qkv):
        return [z.view(2, 5, 3, 4).transpose(1, 2) for z in lib_qkv.split(12, 2)]

    out = F.scaled_dot_product_attention(*heads(ours), is_causal=True)
    expected = torch.nn.functional.scaled_dot_product_attention(*heads(theirs), is_causal=True)
    assert out.stride() == expected.stride()
    assert out.transpose(1, 2).is_contiguous()
    assert_close(out, expected, **TOL)
    backprop_same(out, expected)
    assert_close(ours.grad, theirs.grad, **TOL)


@needs_torch
def test_causal_attention_of_a_broadcast_query_with_a_broadcast_gradient():
    """A query expanded over the heads (stride 0) and ``sum().backward()``'s
    broadcast gradient: values, layout and gradients as PyTorch's."""
    (q, tq), (k, tk) = leaf_pair(values(2, 1, 6, 4)), leaf_pair(values(2, 3, 6, 4))
    out = F.scaled_dot_product_attention(q.expand(2, 3, 6, 4), k, k, is_causal=True)
    expected = torch.nn.functional.scaled_dot_product_attention(
        tq.expand(2, 3, 6, 4), tk, tk, is_causal=True
    )
    assert out.stride() == expected.stride()
    assert_close(out, expected, **TOL)
    out.sum().backward()
    expected.sum().backward()
    assert_close(q.grad, tq.grad, **TOL)
    assert_close(k.grad, tk.grad, **TOL)


@pytest.mark.gradcheck
def test_causal_sdpa_gradgradcheck():
    """Second derivatives through the fused causal node (its recorded backward)."""
    from glasstorch.autograd import gradgradcheck

    q, k, v = (
        gt.tensor(values(1, 2, 3, 2, dtype=np.float64), requires_grad=True) for _ in range(3)
    )

    def run(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    assert gradgradcheck(run, (q, k, v))


@pytest.mark.gradcheck
@pytest.mark.parametrize("case", ["plain", "bool-mask", "causal"])
def test_sdpa_gradcheck(case):
    q = gt.tensor(values(1, 3, 2, dtype=np.float64), requires_grad=True)
    k = gt.tensor(values(1, 4, 2, dtype=np.float64), requires_grad=True)
    v = gt.tensor(values(1, 4, 2, dtype=np.float64), requires_grad=True)
    mask = gt.tensor(bool_mask(3, 4)) if case == "bool-mask" else None

    def run(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case == "causal")

    assert gradcheck(run, (q, k, v))


@needs_torch
@pytest.mark.errors
def test_sdpa_errors_match_torch():
    q, k = np.zeros((2, 3, 4), np.float32), np.zeros((2, 5, 4), np.float32)
    sdpa_t = torch.nn.functional.scaled_dot_product_attention
    assert_same_error(
        lambda: F.scaled_dot_product_attention(
            gt.tensor(q), gt.tensor(k), gt.tensor(k), gt.ones(3, 5).bool(), is_causal=True
        ),
        lambda: sdpa_t(
            torch.tensor(q),
            torch.tensor(k),
            torch.tensor(k),
            torch.ones(3, 5).bool(),
            is_causal=True,
        ),
        match="Explicit attn_mask should not be set when is_causal=True",
    )
    assert_same_error(
        lambda: F.scaled_dot_product_attention(
            gt.tensor(q[0, 0]), gt.tensor(k[0]), gt.tensor(k[0])
        ),
        lambda: sdpa_t(torch.tensor(q[0, 0]), torch.tensor(k[0]), torch.tensor(k[0])),
        match=re.escape("to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 2"),
    )
    assert_same_error(
        lambda: F.scaled_dot_product_attention(gt.tensor(q).double(), gt.tensor(k), gt.tensor(k)),
        lambda: sdpa_t(torch.tensor(q).double(), torch.tensor(k), torch.tensor(k)),
        match=re.escape("query.dtype: double key.dtype: float and value.dtype: float"),
    )


# --------------------------------------------------------- MultiheadAttention


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"bias": False}, {"kdim": 3, "vdim": 5}, {"kdim": 3, "vdim": 5, "bias": False}],
    ids=["default", "no-bias", "kdim-vdim", "kdim-vdim-no-bias"],
)
def test_mha_parameters_and_repr_match_torch(kwargs):
    theirs = torch.nn.MultiheadAttention(8, 2, **kwargs)
    ours = gnn.MultiheadAttention(8, 2, **kwargs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    assert ours.head_dim == 4 and ours._qkv_same_embed_dim == theirs._qkv_same_embed_dim


def test_mha_initialisation():
    gt.manual_seed(0)
    layer = gnn.MultiheadAttention(16, 4)
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform_ on the (48, 16) stacked weight
    weight = layer.in_proj_weight.detach().cpu().numpy()
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.8 * bound
    assert np.all(layer.in_proj_bias.detach().cpu().numpy() == 0)
    assert np.all(layer.out_proj.bias.detach().cpu().numpy() == 0)


def make_mha_pair(*args, **kwargs):
    theirs = torch.nn.MultiheadAttention(*args, **kwargs)
    ours = gnn.MultiheadAttention(*args, **kwargs)
    copy_weights(ours, theirs)
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_mha_self_attention_matches_torch(batch_first, average):
    ours, theirs = make_mha_pair(6, 2, batch_first=batch_first)
    x_gt, x_t = leaf_pair(values(3, 2, 6))
    out_gt, w_gt = ours(x_gt, x_gt, x_gt, average_attn_weights=average)
    out_t, w_t = theirs(x_t, x_t, x_t, average_attn_weights=average)
    assert_close(out_gt, out_t, **TOL)
    assert_close(w_gt, w_t, **TOL)
    backprop_same(out_gt, out_t)
    assert_close(x_gt.grad, x_t.grad, **TOL)
    compare_parameter_grads(ours, theirs)


@needs_torch
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_cross_attention_with_masks_matches_torch(need_weights):
    ours, theirs = make_mha_pair(4, 2, kdim=3, vdim=5)
    q, k, v = leaf_pair(values(2, 2, 4)), leaf_pair(values(3, 2, 3)), leaf_pair(values(3, 2, 5))
    padding = np.array([[0.0, 0.0, -np.inf], [0.0, -np.inf, -np.inf]], dtype=np.float32)
    mask = values(2, 3)
    out_gt, w_gt = ours(
        q[0],
        k[0],
        v[0],
        key_padding_mask=gt.tensor(padding),
        attn_mask=gt.tensor(mask),
        need_weights=need_weights,
    )
    out_t, w_t = theirs(
        q[1],
        k[1],
        v[1],
        key_padding_mask=torch.tensor(padding),
        attn_mask=torch.tensor(mask),
        need_weights=need_weights,
    )
    assert_close(out_gt, out_t, **TOL)
    if need_weights:
        assert_close(w_gt, w_t, **TOL)
    else:
        assert w_gt is None and w_t is None
    backprop_same(out_gt, out_t)
    for g, t in (q, k, v):
        assert_close(g.grad, t.grad, **TOL)
    compare_parameter_grads(ours, theirs)


@needs_torch
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_causal_bool_mask_matches_torch(need_weights):
    """A bool ``attn_mask`` marks the positions to leave out (True), with the is_causal hint."""
    ours, theirs = make_mha_pair(4, 2, batch_first=True)
    x = values(2, 3, 4)
    causal = np.triu(np.ones((3, 3), dtype=bool), k=1)
    out_gt, _ = ours(
        gt.tensor(x),
        gt.tensor(x),
        gt.tensor(x),
        attn_mask=gt.tensor(causal),
        is_causal=True,
        need_weights=need_weights,
    )
    out_t, _ = theirs(
        torch.tensor(x),
        torch.tensor(x),
        torch.tensor(x),
        attn_mask=torch.tensor(causal),
        is_causal=True,
        need_weights=need_weights,
    )
    assert_close(out_gt, out_t, **TOL)


@needs_torch
def test_mha_unbatched_and_eval_match_torch():
    ours, theirs = make_mha_pair(4, 2)
    x = values(3, 4)
    padding = np.array([False, True, False])
    out_gt, w_gt = ours(gt.tensor(x), gt.tensor(x), gt.tensor(x), gt.tensor(padding))
    out_t, w_t = theirs(torch.tensor(x), torch.tensor(x), torch.tensor(x), torch.tensor(padding))
    assert tuple(out_gt.shape) == (3, 4) and tuple(w_gt.shape) == (3, 3)
    assert_close(out_gt, out_t, **TOL)
    assert_close(w_gt, w_t, **TOL)
    ours.eval()
    theirs.eval()
    x = values(3, 2, 4)
    with gt.no_grad():
        out_gt, _ = ours(gt.tensor(x), gt.tensor(x), gt.tensor(x), need_weights=False)
    with torch.no_grad():
        out_t, _ = theirs(torch.tensor(x), torch.tensor(x), torch.tensor(x), need_weights=False)
    assert_close(out_gt, out_t, **TOL)


def test_mha_dropout_only_in_training():
    gt.manual_seed(1)
    layer = gnn.MultiheadAttention(4, 2, dropout=0.5)
    x = gt.tensor(values(5, 1, 4))
    trained = layer(x, x, x)[0].detach().cpu().numpy()
    layer.eval()
    first, second = layer(x, x, x)[0], layer(x, x, x)[0]
    assert np.array_equal(first.detach().cpu().numpy(), second.detach().cpu().numpy())
    assert not np.allclose(first.detach().cpu().numpy(), trained)


@pytest.mark.gradcheck
def test_mha_gradcheck():
    gt.manual_seed(2)
    layer = gnn.MultiheadAttention(4, 2, dtype=gt.float64)
    x = gt.tensor(values(2, 1, 4, dtype=np.float64), requires_grad=True)
    mask = gt.tensor(np.array([[False, True], [False, False]]))

    def run(x, *weights):
        return layer(x, x, x, attn_mask=mask)[0]

    assert gradcheck(run, (x, *layer.parameters()))


@needs_torch
@pytest.mark.errors
def test_mha_errors_match_torch():
    assert_same_error(
        lambda: gnn.MultiheadAttention(8, 3),
        lambda: torch.nn.MultiheadAttention(8, 3),
        match="embed_dim must be divisible by num_heads",
    )
    x_gt, x_t = gt.zeros(4, 2, 8), torch.zeros(4, 2, 8)
    ours, theirs = make_mha_pair(8, 2)
    assert_same_error(
        lambda: ours(x_gt, x_gt, x_gt, is_causal=True),
        lambda: theirs(x_t, x_t, x_t, is_causal=True),
        match="Need attn_mask if specifying the is_causal hint",
    )
    assert_same_error(
        lambda: ours(x_gt, x_gt, x_gt, attn_mask=gt.zeros(3, 4)),
        lambda: theirs(x_t, x_t, x_t, attn_mask=torch.zeros(3, 4)),
        match=re.escape(
            "The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (4, 4)."
        ),
    )
    assert_same_error(
        lambda: ours(x_gt[:, :, :5], x_gt, x_gt),
        lambda: theirs(x_t[:, :, :5], x_t, x_t),
        match="was expecting embedding dimension of 8, but got 5",
    )
    assert_same_error(
        lambda: ours(x_gt[0], x_gt, x_gt),
        lambda: theirs(x_t[0], x_t, x_t),
        match=re.escape("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D"),
    )
    assert_same_error(
        lambda: ours(x_gt, x_gt, x_gt, attn_mask=gt.zeros(4, 4).long()),
        lambda: theirs(x_t, x_t, x_t, attn_mask=torch.zeros(4, 4).long()),
        match="only bool and floating types of attn_mask are supported",
    )


# ------------------------------------------------------ the Transformer encoder


def make_encoder_layer_pair(*args, **kwargs):
    theirs = torch.nn.TransformerEncoderLayer(*args, **kwargs)
    ours = gnn.TransformerEncoderLayer(*args, **kwargs)
    copy_weights(ours, theirs)
    return ours, theirs


@needs_torch
def test_encoder_layer_structure_matches_torch():
    ours, theirs = make_encoder_layer_pair(8, 2, 16)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    ours, theirs = make_encoder_layer_pair(8, 2, 16, activation=torch.nn.GELU(), bias=False)
    ours = gnn.TransformerEncoderLayer(8, 2, 16, activation=gnn.GELU(), bias=False)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


ENCODER_CONFIGS = [
    pytest.param({}, id="post-norm-relu"),
    pytest.param(
        {"norm_first": True, "activation": "gelu", "batch_first": True}, id="pre-norm-gelu"
    ),
    pytest.param({"layer_norm_eps": 1e-3, "bias": False}, id="no-bias-eps"),
]


@needs_torch
@pytest.mark.parametrize("config", ENCODER_CONFIGS)
def test_encoder_layer_matches_torch(config):
    ours, theirs = make_encoder_layer_pair(4, 2, 6, dropout=0.0, **config)
    shape = (2, 3, 4) if config.get("batch_first") else (3, 2, 4)  # N = 2, S = 3
    x_gt, x_t = leaf_pair(values(*shape))
    padding = np.array([[False, False, True], [False, False, False]])
    out_gt = ours(x_gt, src_key_padding_mask=gt.tensor(padding))
    out_t = theirs(x_t, src_key_padding_mask=torch.tensor(padding))
    assert_close(out_gt, out_t, **TOL)
    backprop_same(out_gt, out_t)
    assert_close(x_gt.grad, x_t.grad, **TOL)
    compare_parameter_grads(ours, theirs)


@needs_torch
def test_encoder_stack_with_causal_mask_and_final_norm_matches_torch():
    layer_t = torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    theirs = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(4))
    layer_g = gnn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    ours = gnn.TransformerEncoder(layer_g, 2, norm=gnn.LayerNorm(4))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_weights(ours, theirs)
    assert ours.layers[0].linear1.weight is not ours.layers[1].linear1.weight
    mask = torch.nn.Transformer.generate_square_subsequent_mask(3)
    assert_close(gnn.modules.transformer.generate_square_subsequent_mask(3), mask)
    x_gt, x_t = leaf_pair(values(2, 3, 4))
    out_gt = ours(x_gt, mask=from_torch(mask), is_causal=True)
    out_t = theirs(x_t, mask=mask, is_causal=True)
    assert_close(out_gt, out_t, **TOL)
    backprop_same(out_gt, out_t)
    assert_close(x_gt.grad, x_t.grad, **TOL)
    compare_parameter_grads(ours, theirs)
    ours.eval()
    theirs.eval()
    x = values(2, 3, 4)
    with gt.no_grad():
        out_gt = ours(gt.tensor(x))
    with torch.no_grad():
        out_t = theirs(torch.tensor(x))
    assert_close(out_gt, out_t, **TOL)


@needs_torch
@pytest.mark.errors
def test_encoder_layer_activation_error_matches_torch():
    assert_same_error(
        lambda: gnn.TransformerEncoderLayer(4, 2, activation="tanh"),
        lambda: torch.nn.TransformerEncoderLayer(4, 2, activation="tanh"),
        match="activation should be relu/gelu, not tanh",
    )


@pytest.mark.gradcheck
def test_encoder_layer_gradcheck():
    gt.manual_seed(6)
    layer = gnn.TransformerEncoderLayer(
        4, 2, 3, dropout=0.0, norm_first=True, activation="gelu", dtype=gt.float64
    )
    x = gt.tensor(values(2, 1, 4, dtype=np.float64), requires_grad=True)

    def run(x, *weights):
        return layer(x)

    assert gradcheck(run, (x, *layer.parameters()))


# --------------------------------------------------------------- GELU (tanh)


@needs_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_approximations_match_torch(approximate):
    x = values(7) * 4
    x_gt, x_t = leaf_pair(x)
    out_gt = gnn.GELU(approximate=approximate)(x_gt)
    out_t = torch.nn.GELU(approximate=approximate)(x_t)
    assert repr(gnn.GELU(approximate=approximate)) == repr(torch.nn.GELU(approximate=approximate))
    assert_close(out_gt, out_t, **TOL)
    assert_close(F.gelu(gt.tensor(x), approximate=approximate), out_t.detach(), **TOL)
    backprop_same(out_gt, out_t)
    assert_close(x_gt.grad, x_t.grad, **TOL)


@pytest.mark.gradcheck
def test_gelu_tanh_gradcheck():
    x = gt.tensor(values(5, dtype=np.float64) * 3, requires_grad=True)
    assert gradcheck(lambda x: F.gelu(x, approximate="tanh"), (x,))


# -------------------------------------------------------------- pad_sequence


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    from torch.nn.utils.rnn import pad_sequence as pad_t

    from glasstorch.nn.utils.rnn import pad_sequence

    arrays = [values(3, 2), values(1, 2), values(2, 2)]
    pairs = [leaf_pair(a) for a in arrays]
    kwargs = {"batch_first": batch_first, "padding_value": -1.5, "padding_side": padding_side}
    out_gt = pad_sequence([p[0] for p in pairs], **kwargs)
    out_t = pad_t([p[1] for p in pairs], **kwargs)
    assert_close(out_gt, out_t)
    backprop_same(out_gt, out_t)
    for g, t in pairs:
        assert_close(g.grad, t.grad, **TOL)
    ints = [np.array([1, 2, 3]), np.array([4])]
    assert_close(
        gnn.utils.rnn.pad_sequence([gt.tensor(a) for a in ints]),
        pad_t([torch.tensor(a) for a in ints]),
    )


@needs_torch
@pytest.mark.errors
def test_pad_sequence_errors_match_torch():
    from torch.nn.utils.rnn import pad_sequence as pad_t

    from glasstorch.nn.utils.rnn import pad_sequence

    assert_same_error(
        lambda: pad_sequence([gt.zeros(2)], padding_side="top"),
        lambda: pad_t([torch.zeros(2)], padding_side="top"),
        match="Expected padding_side to be one of left or right, but got top.",
    )
    assert_same_error(
        lambda: pad_sequence([]),
        lambda: pad_t([]),
        match="received an empty list of sequences",
    )


# -- nn.Transformer


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_like_pytorch(norm_first):
    torch.manual_seed(0)
    options = dict(
        d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16,
        dropout=0.0, norm_first=norm_first, batch_first=True,
    )  # fmt: skip
    theirs, ours = torch.nn.Transformer(**options), gt.nn.Transformer(**options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_parameters(theirs, ours)
    src = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    tgt = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    mask = gt.nn.Transformer.generate_square_subsequent_mask(4)
    t_src, g_src = torch.tensor(src, requires_grad=True), gt.tensor(src, requires_grad=True)
    t_out = theirs(t_src, torch.tensor(tgt), tgt_mask=torch.tensor(mask.cpu().numpy()))
    g_out = ours(g_src, gt.tensor(tgt), tgt_mask=mask)
    close_on_device(g_out, t_out, rtol=1e-4)
    t_out.sum().backward()
    g_out.sum().backward()
    close_on_device(g_src.grad, t_src.grad, rtol=1e-3, atol=1e-4)


@pytest.mark.errors
def test_transformer_batch_mismatch_error():
    model = gt.nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(gt.zeros(5, 2, 8), gt.zeros(4, 3, 8))
