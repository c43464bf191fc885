"""The whole-layer LSTM kernels (``lstm_forward``, ``lstm_backward``,
``lstm_weight_grad``) against NumPy and the reference tier.

The fast tier runs a layer's loop over time in C (``fast/csrc/rnn.c``): threads
own ranges of hidden units, W_hh is packed once per call, the product of each
step is cut into the micro-kernel's tiles. So the sizes here are chosen to
cross those lines: batch and hidden sizes that are not multiples of the
register tile, a hidden size whose backward product (K = 4H) takes more than
one KC block, steps big enough to share between threads, and thread counts of
1, 2 and 3 (more threads than slivers of units). Every buffer has spare
elements before and after the view, full of a sentinel, so a write outside
the view shows; the initial state's slot must come back unchanged.

The oracle is the contract's loop written in NumPy, in float64.

``lstm_weight_grad`` (two products sharing ``d_gates^T``) takes one pass over
the shared operand in the fast tier when the products are large (their packed
operands past 8 MiB) and the input width is a whole number of register tiles,
and two products otherwise: shapes on both sides of those lines.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided
from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_rnn = pytest.importorskip(
    "glasstorch.fast.rnn", reason="the fast tier's C extension is not built", exc_type=ImportError
)
fast_threads = pytest.importorskip("glasstorch.fast.threads", exc_type=ImportError)
fast_matmul = pytest.importorskip("glasstorch.fast.linalg", exc_type=ImportError)

FAST = kernels_under_test(fast_rnn.LSTMCellKernels())
REFERENCE = ReferenceKernels()
SPARE = 3  # sentinel elements before and after each buffer's view

#: (steps, batch, hidden): tiny; not multiples of the tile; K = 4H over one KC
#: block (H = 150); big enough per step to share the units between threads; a
#: batch of 8 (AVX2's 6-row tile and 2 rows more, run as two 4-row tiles).
SHAPES = ((1, 1, 1), (3, 5, 7), (2, 10, 82), (3, 33, 70), (2, 3, 150), (2, 8, 20))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def oracle_forward(inputs, bias, w_hh, h0, c0, reverse):
    """hs, cs, activations, tanh_c of the contract's loop, in float64."""
    steps, batch, gate_size = inputs.shape
    hidden = gate_size // 4
    hs, cs = np.zeros((steps + 1, batch, hidden)), np.zeros((steps + 1, batch, hidden))
    act, tanh_c = np.zeros((steps, batch, gate_size)), np.zeros((steps, batch, hidden))
    first = steps if reverse else 0
    hs[first], cs[first] = h0, c0
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        before, after = (t + 1, t) if reverse else (t, t + 1)
        gates = inputs[t] + hs[before] @ w_hh.T + (0 if bias is None else bias)
        i, f, g, o = np.split(gates, 4, axis=1)
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        act[t] = np.concatenate([i, f, g, o], axis=1)
        cs[after] = f * cs[before] + i * g
        tanh_c[t] = np.tanh(cs[after])
        hs[after] = o * tanh_c[t]
    return hs, cs, act, tanh_c


def oracle_backward(d_h, d_c, d_outputs, act, tanh_c, cs, w_hh, reverse):
    """d_inputs and the initial state's d_h, d_c of the contract's loop, in float64."""
    steps, batch, gate_size = act.shape
    d_inputs = np.zeros((steps, batch, gate_size))
    d_h, d_c = d_h.astype(np.float64), d_c.astype(np.float64)
    for t in range(steps) if reverse else range(steps - 1, -1, -1):
        before = t + 1 if reverse else t
        if d_outputs is not None:
            d_h = d_h + d_outputs[t]
        i, f, g, o = np.split(act[t], 4, axis=1)
        dc = d_c + d_h * o * (1 - tanh_c[t] ** 2)
        d_inputs[t] = np.concatenate(
            [
                dc * g * i * (1 - i),
                dc * cs[before] * f * (1 - f),
                dc * i * (1 - g * g),
                d_h * tanh_c[t] * o * (1 - o),
            ],
            axis=1,
        )
        d_c = dc * f
        d_h = d_inputs[t] @ w_hh
    return d_inputs, d_h, d_c


def padded(values: np.ndarray) -> Strided:
    """A contiguous view of a copy of ``values`` with sentinel elements around it."""
    base = np.full(values.size + 2 * SPARE, _sentinel(values.dtype), values.dtype)
    base[SPARE : SPARE + values.size] = values.reshape(-1)
    strides, step = [], 1
    for size in reversed(values.shape):
        strides.insert(0, step)
        step *= size
    return Strided(base, values.shape, tuple(strides), SPARE)


def _sentinel(dtype):
    return np.nan if np.dtype(dtype).kind == "f" else -77


def contents(view: Strided) -> np.ndarray:
    """The view's values (checking that the spare elements kept their sentinel)."""
    base = view.buffer
    spare = np.concatenate([base[:SPARE], base[base.size - SPARE :]])
    np.testing.assert_array_equal(spare, np.full(2 * SPARE, _sentinel(base.dtype), base.dtype))
    return base[SPARE : base.size - SPARE].reshape(view.shape)


def problem(steps, batch, hidden, dtype, seed, with_bias, with_outputs):
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(hidden)
    return {
        "inputs": rng.normal(0, 1.0, (steps, batch, 4 * hidden)).astype(dtype),
        "bias": rng.normal(0, 0.5, 4 * hidden).astype(dtype) if with_bias else None,
        "w_hh": rng.uniform(-scale, scale, (4 * hidden, hidden)).astype(dtype),
        "h0": rng.normal(0, 0.5, (batch, hidden)).astype(dtype),
        "c0": rng.normal(0, 0.5, (batch, hidden)).astype(dtype),
        "d_h": rng.normal(0, 1.0, (batch, hidden)).astype(dtype),
        "d_c": rng.normal(0, 1.0, (batch, hidden)).astype(dtype),
        "d_outputs": (
            rng.normal(0, 1.0, (steps, batch, hidden)).astype(dtype) if with_outputs else None
        ),
    }


def run_layer(kernels, p, reverse):
    """Forward then backward through ``kernels``: every buffer they wrote, as arrays."""
    steps, batch, gate_size = p["inputs"].shape
    hidden, dtype = gate_size // 4, p["inputs"].dtype
    first = steps if reverse else 0
    hs0 = np.zeros((steps + 1, batch, hidden), dtype)
    cs0 = np.zeros((steps + 1, batch, hidden), dtype)
    hs0[first], cs0[first] = p["h0"], p["c0"]
    hs, cs = padded(hs0), padded(cs0)
    act = padded(np.zeros((steps, batch, gate_size), dtype))
    tanh_c = padded(np.zeros((steps, batch, hidden), dtype))
    bias = None if p["bias"] is None else padded(p["bias"])
    w_hh = padded(p["w_hh"])
    kernels.lstm_forward(hs, cs, act, tanh_c, padded(p["inputs"]), bias, w_hh, reverse)
    d_inputs = padded(np.zeros((steps, batch, gate_size), dtype))
    d_h, d_c = padded(p["d_h"]), padded(p["d_c"])
    d_outputs = None if p["d_outputs"] is None else padded(p["d_outputs"])
    kernels.lstm_backward(d_inputs, d_h, d_c, d_outputs, act, tanh_c, cs, w_hh, reverse)
    return [contents(v) for v in (hs, cs, act, tanh_c, d_inputs, d_h, d_c)]


def expected(p, reverse):
    as64 = {k: None if v is None else v.astype(np.float64) for k, v in p.items()}
    hs, cs, act, tanh_c = oracle_forward(
        as64["inputs"], as64["bias"], as64["w_hh"], as64["h0"], as64["c0"], reverse
    )
    d_inputs, d_h, d_c = oracle_backward(
        as64["d_h"], as64["d_c"], as64["d_outputs"], act, tanh_c, cs, as64["w_hh"], reverse
    )
    return [hs, cs, act, tanh_c, d_inputs, d_h, d_c]


NAMES = ("hs", "cs", "activations", "tanh_c", "d_inputs", "d_h", "d_c")


def assert_close(got, want, dtype):
    tolerance = 2e-4 if dtype == "float32" else 1e-10
    for name, g, w in zip(NAMES, got, want):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance, err_msg=name)


@pytest.mark.parametrize("threads", (1, 2, 3))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("reverse", (False, True), ids=("forward", "reverse"))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_layer_kernels_match_numpy(shape, reverse, dtype, threads, device):
    """Outputs, saved buffers and gradients of the fast (or CUDA) kernels against NumPy."""
    p = problem(*shape, dtype, seed=sum(shape), with_bias=True, with_outputs=True)
    counter = fast_threads.ThreadKernels()
    before = counter.get_num_threads()
    counter.set_num_threads(threads)
    try:
        got = run_layer(FAST, p, reverse)
    finally:
        counter.set_num_threads(before)
    assert_close(got, expected(p, reverse), dtype)


@pytest.mark.parametrize("with_bias", (False, True), ids=("no-bias", "bias"))
@pytest.mark.parametrize("with_outputs", (False, True), ids=("no-d_outputs", "d_outputs"))
@pytest.mark.parametrize("kernels", (FAST, REFERENCE), ids=("fast", "reference"))
def test_optional_bias_and_output_gradient(kernels, with_bias, with_outputs, device):
    """``bias=None`` means no bias and ``d_outputs=None`` zeros, in both tiers."""
    p = problem(3, 4, 6, "float64", 5, with_bias, with_outputs)
    for reverse in (False, True):
        assert_close(run_layer(kernels, p, reverse), expected(p, reverse), "float64")


@pytest.mark.parametrize("shape", ((2, 3, 5), (1, 2, 9)), ids=("2x3x5", "1x2x9"))
def test_reference_and_fast_agree(shape, device):
    """The two tiers' float32 results agree with each other as with NumPy."""
    p = problem(*shape, "float32", 9, with_bias=True, with_outputs=True)
    for reverse in (False, True):
        fast, reference = run_layer(FAST, p, reverse), run_layer(REFERENCE, p, reverse)
        assert_close(fast, reference, "float32")


def test_fast_kernels_refuse_integer_dtypes():
    """The C kernels take float32 and float64; anything else is a clear TypeError."""
    p = problem(2, 2, 3, "float32", 1, with_bias=False, with_outputs=False)
    p = {k: None if v is None else v.astype(np.int64) for k, v in p.items()}
    with pytest.raises(TypeError, match="lstm_forward"):
        run_layer(fast_rnn.LSTMCellKernels(), p, False)


#: (rows N = T * B, hidden, input, dtype) for lstm_weight_grad: tiny; an input
#: width that is not a whole number of tiles; two large enough for the fast
#: tier's one pass (input 32: whole tiles at every instruction-set level).
WEIGHT_GRAD_SHAPES = (
    (1, 1, 1, "float64"),
    (37, 5, 7, "float32"),
    (600, 24, 36, "float64"),
    (4000, 64, 32, "float64"),
    (8192, 64, 32, "float32"),
)


def weight_grad_problem(rows, hidden, input_size, dtype, seed):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(0, 1.0, shape).astype(dtype)
        for shape in ((rows, 4 * hidden), (rows, input_size), (rows, hidden))
    ]


def run_weight_grad(kernels, d_gates, inputs, h_prev):
    gate_size, dtype = d_gates.shape[1], d_gates.dtype
    d_w_ih = padded(np.zeros((gate_size, inputs.shape[1]), dtype))
    d_w_hh = padded(np.zeros((gate_size, h_prev.shape[1]), dtype))
    kernels.lstm_weight_grad(d_w_ih, d_w_hh, padded(d_gates), padded(inputs), padded(h_prev))
    return contents(d_w_ih), contents(d_w_hh)


@pytest.mark.parametrize("threads", (1, 2, 3))
@pytest.mark.parametrize("shape", WEIGHT_GRAD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_weight_grad_matches_numpy(shape, threads, device):
    """Both weight gradients against NumPy's two products in float64."""
    *sizes, dtype = shape
    d_gates, inputs, h_prev = weight_grad_problem(*sizes, dtype, seed=sum(sizes))
    counter = fast_threads.ThreadKernels()
    before = counter.get_num_threads()
    counter.set_num_threads(threads)
    try:
        d_w_ih, d_w_hh = run_weight_grad(FAST, d_gates, inputs, h_prev)
    finally:
        counter.set_num_threads(before)
    d_t = d_gates.astype(np.float64).T
    # float32 products over N rows: the rounding error grows with sqrt(N)
    tolerance = 1e-5 * np.sqrt(sizes[0]) if dtype == "float32" else 1e-10
    np.testing.assert_allclose(d_w_ih, d_t @ inputs, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(d_w_hh, d_t @ h_prev, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("shape", WEIGHT_GRAD_SHAPES[3:], ids=lambda s: "x".join(map(str, s)))
def test_weight_grad_in_one_pass_equals_two_matmuls(shape):
    """The fast tier's one pass over ``d_gates^T`` sums every element as its
    matmul does (same blocks, same order): the same bits as two products."""
    *sizes, dtype = shape
    d_gates, inputs, h_prev = weight_grad_problem(*sizes, dtype, seed=3)
    d_w_ih, d_w_hh = run_weight_grad(fast_rnn.LSTMCellKernels(), d_gates, inputs, h_prev)
    matmul = fast_matmul.LinalgKernels().matmul
    d_t = padded(d_gates)
    d_t = d_t._replace(shape=d_t.shape[::-1], strides=d_t.strides[::-1])
    for got, operand in ((d_w_ih, inputs), (d_w_hh, h_prev)):
        want = padded(np.zeros(got.shape, got.dtype))
        matmul(want, d_t, padded(operand))
        np.testing.assert_array_equal(got, contents(want))


def test_weight_grad_reference_and_fast_agree(device):
    """The two tiers' float32 weight gradients agree (the reference's are two
    matmuls, the contract's definition)."""
    d_gates, inputs, h_prev = weight_grad_problem(37, 5, 7, "float32", seed=4)
    fast = run_weight_grad(FAST, d_gates, inputs, h_prev)
    reference = run_weight_grad(REFERENCE, d_gates, inputs, h_prev)
    for f, r in zip(fast, reference):
        np.testing.assert_allclose(f, r, rtol=1e-5, atol=1e-5)


def test_fast_weight_grad_refuses_mismatched_shapes():
    """Rows that do not line up are a clear error, not a read past a buffer."""
    d_gates, inputs, h_prev = weight_grad_problem(6, 2, 3, "float32", seed=1)
    with pytest.raises(ValueError, match="lstm_weight_grad: shapes do not line up"):
        run_weight_grad(fast_rnn.LSTMCellKernels(), d_gates, inputs[:5], h_prev)


def test_fast_weight_grad_refuses_integer_dtypes():
    d_gates, inputs, h_prev = weight_grad_problem(6, 2, 3, "float32", seed=1)
    with pytest.raises(TypeError, match="lstm_weight_grad"):
        run_weight_grad(
            fast_rnn.LSTMCellKernels(), *(a.astype(np.int64) for a in (d_gates, inputs, h_prev))
        )
