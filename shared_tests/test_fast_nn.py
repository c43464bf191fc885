"""The fast tier's fused cross-entropy (``fast/csrc/nn.c``) against the reference tier.

Logits come in every layout (contiguous, offset, transposed, sliced,
broadcast), with NaN and infinities sometimes, far-apart values (so the
max-shift matters) and targets that hit ``ignore_index``; the loss and
log-probability buffers start full of NaN and are compared whole.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_views import kernels_under_test
from test_fast_reductions import (
    FLOAT_DTYPES,
    INPUT_KINDS,
    OUTPUT_KINDS,
    assert_same,
    lay_out,
    output_pair,
    random_values,
)

from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_nn = pytest.importorskip(
    "glasstorch.fast.nn", reason="the fast tier's C extension is not built", exc_type=ImportError
)

FAST = kernels_under_test(fast_nn.NNKernels())
REFERENCE = ReferenceKernels()


def check_cross_entropy(n, c, dtype, seed, kind, out_kind, ignore_index, scale=1.0):
    rng = np.random.default_rng(seed)
    values = (random_values(rng, (n, c), dtype, (np.nan, np.inf, -np.inf)) * scale).astype(dtype)
    logits, _ = lay_out(values, kind, rng)
    labels = rng.integers(0, max(c, 1), (n,))
    labels[rng.random(n) < 0.3] = ignore_index
    if c == 0:
        labels[:] = ignore_index
    target, _ = lay_out(labels, "sliced" if n else "contiguous", rng)
    weight = None
    if c and rng.random() < 0.5:  # class weights, half of the time
        weight, _ = lay_out(rng.random(c).astype(dtype) + 0.5, "sliced", rng)
    fast_loss, ref_loss = output_pair((n,), dtype, out_kind, seed)
    fast_rw, ref_rw = output_pair((n,), dtype, out_kind, seed + 2)
    fast_totals, ref_totals = output_pair((3,), dtype, out_kind, seed + 4)
    fast_lp, ref_lp = output_pair((n, c), dtype, out_kind, seed + 1)
    fast_args = (fast_loss, fast_rw, fast_totals, fast_lp, logits, target, weight, ignore_index)
    ref_args = (ref_loss, ref_rw, ref_totals, ref_lp, logits, target, weight, ignore_index)
    assert FAST.cross_entropy(*fast_args) == -1
    assert REFERENCE.cross_entropy(*ref_args) == -1
    assert_same(fast_loss.buffer, ref_loss.buffer)
    assert_same(fast_rw.buffer, ref_rw.buffer)
    assert_same(fast_totals.buffer, ref_totals.buffer)
    assert_same(fast_lp.buffer, ref_lp.buffer)

    # The gradient, from those log-probabilities and one gradient per row
    # (or one value broadcast to every row, as after a reduction).
    grads = rng.standard_normal(max(n, 1)).astype(dtype)
    grad_losses, _ = lay_out(grads[:n], "contiguous", rng)
    if rng.random() < 0.5:
        grad_losses = grad_losses._replace(buffer=grads[:1].copy(), strides=(0,), offset=0)
    fast_grad, ref_grad = output_pair((n, c), dtype, out_kind, seed + 3)
    FAST.cross_entropy_backward(fast_grad, ref_lp, target, weight, grad_losses, ignore_index)
    REFERENCE.cross_entropy_backward(ref_grad, ref_lp, target, weight, grad_losses, ignore_index)
    assert_same(fast_grad.buffer, ref_grad.buffer)


@given(
    n=st.integers(0, 5),
    c=st.integers(0, 40),
    dtype=st.sampled_from(FLOAT_DTYPES),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    ignore_index=st.sampled_from((-100, 0, 2)),
    scale=st.sampled_from((1.0, 30.0)),
)
def test_cross_entropy_matches_reference(
    n, c, dtype, seed, kind, out_kind, ignore_index, scale, device
):
    check_cross_entropy(n, c, dtype, seed, kind, out_kind, ignore_index, scale)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", ("contiguous", "permuted"))
def test_cross_entropy_large(dtype, kind, device):
    """400 x 120 logits: rows spread across threads."""
    check_cross_entropy(400, 120, dtype, 11, kind, "contiguous", -100, 4.0)


@pytest.mark.parametrize("kernels", (FAST, REFERENCE), ids=("fast", "reference"))
def test_cross_entropy_reports_the_first_bad_label_and_writes_nothing(kernels, device):
    rng = np.random.default_rng(3)
    logits, _ = lay_out(rng.standard_normal((4, 3)).astype(np.float32), "contiguous", rng)
    target, _ = lay_out(np.array([0, -100, 7, -1]), "contiguous", rng)
    loss, _ = output_pair((4,), np.float32, "contiguous", 1)
    row_weights, _ = output_pair((4,), np.float32, "contiguous", 2)
    totals, _ = output_pair((3,), np.float32, "contiguous", 4)
    log_probs, _ = output_pair((4, 3), np.float32, "contiguous", 3)
    before = log_probs.buffer.copy()
    args = (loss, row_weights, totals, log_probs, logits, target, None, -100)
    assert kernels.cross_entropy(*args) == 2
    assert_same(log_probs.buffer, before)
