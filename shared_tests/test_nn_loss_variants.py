"""The losses beyond the course's (test_nn_losses.py) against PyTorch: the ranking and embedding
losses (margin ranking, hinge embedding, cosine embedding, triplet margin), the margin losses,
Poisson and Gaussian negative log-likelihood, KL divergence, normalize and cosine similarity;
forward and backward, gradcheck in float64, reprs and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import RNG, close_on_device, run_both, values
from oracle import assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- Ranking and embedding losses
def _target(n):
    return np.where(RNG.random(n) < 0.5, -1.0, 1.0).astype(np.float32)


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ranking_and_embedding_losses(device, reduction):
    target = _target(5)
    run_both(
        gnn.MarginRankingLoss(0.3, reduction=reduction),
        torch.nn.MarginRankingLoss(0.3, reduction=reduction),
        [values(5), values(5), target],
    )
    run_both(
        gnn.HingeEmbeddingLoss(0.8, reduction=reduction),
        torch.nn.HingeEmbeddingLoss(0.8, reduction=reduction),
        [np.abs(values(5)), target],
    )
    run_both(
        gnn.CosineEmbeddingLoss(0.1, reduction=reduction),
        torch.nn.CosineEmbeddingLoss(0.1, reduction=reduction),
        [values(5, 4), values(5, 4), target],
    )
    for swap in (False, True):
        run_both(
            gnn.TripletMarginLoss(0.5, p=2, swap=swap, reduction=reduction),
            torch.nn.TripletMarginLoss(0.5, p=2, swap=swap, reduction=reduction),
            [values(5, 4), values(5, 4), values(5, 4)],
        )
    run_both(
        gnn.TripletMarginLoss(1.0, p=1, reduction=reduction),
        torch.nn.TripletMarginLoss(1.0, p=1, reduction=reduction),
        [values(4, 3), values(4, 3), values(4, 3)],
    )


@needs_torch
@pytest.mark.gradcheck
def test_ranking_and_embedding_loss_gradchecks(device):
    def f64(*shape):
        return on_test_device(values(*shape, dtype=np.float64), requires_grad=True)

    y = on_test_device(_target(4).astype(np.float64))
    a, b, c = f64(4, 3), f64(4, 3), f64(4, 3)
    assert gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, y, 0.1), (a, b))
    assert gradcheck(lambda a, b, c: F.triplet_margin_loss(a, b, c, 2.0, swap=True), (a, b, c))
    s, t = f64(4), f64(4)
    assert gradcheck(lambda s, t: F.margin_ranking_loss(s, t, y, 0.2, reduction="sum"), (s, t))


@needs_torch
@pytest.mark.errors
def test_ranking_and_embedding_loss_errors():
    assert_same_error(
        lambda: F.margin_ranking_loss(gt.zeros(3), gt.zeros(3, 1), gt.ones(3)),
        lambda: torch.nn.functional.margin_ranking_loss(
            torch.zeros(3), torch.zeros(3, 1), torch.ones(3)
        ),
        match="All input tensors should have same dimension",
    )
    assert_same_error(
        lambda: F.cosine_embedding_loss(gt.zeros(3, 2), gt.zeros(3, 2), gt.ones(3, 1)),
        lambda: torch.nn.functional.cosine_embedding_loss(
            torch.zeros(3, 2), torch.zeros(3, 2), torch.ones(3, 1)
        ),
        exc_type=RuntimeError,
    )
    assert_same_error(
        lambda: F.triplet_margin_loss(gt.zeros(3, 2), gt.zeros(3, 2), gt.zeros(2)),
        lambda: torch.nn.functional.triplet_margin_loss(
            torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(2)
        ),
        match="expected to have the same number of dimensions",
    )


# -- Margin losses, Poisson and Gaussian negative log-likelihood
@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_losses_match_pytorch(device, reduction):
    x, sign = values(4, 5), np.sign(values(4, 5)).astype(np.float32)
    run_both(gnn.SoftMarginLoss(reduction=reduction),
             torch.nn.SoftMarginLoss(reduction=reduction), [x, sign], wrt=[0])  # fmt: skip
    labels = (values(4, 5) > 0).astype(np.float32)
    w = np.abs(values(5)) + 0.5
    for weight in (None, w):
        run_both(
            gnn.MultiLabelSoftMarginLoss(
                None if weight is None else gt.tensor(weight), reduction=reduction
            ),
            torch.nn.MultiLabelSoftMarginLoss(
                None if weight is None else torch.tensor(weight), reduction=reduction
            ),
            [x, labels],
            wrt=[0],
        )
    target = RNG.integers(0, 5, size=4)
    for p, margin, weight in ((1, 1.0, None), (2, 0.5, w)):
        gw = None if weight is None else gt.tensor(weight)
        tw = None if weight is None else torch.tensor(weight)
        run_both(gnn.MultiMarginLoss(p, margin, gw, reduction=reduction),
                 torch.nn.MultiMarginLoss(p, margin, tw, reduction=reduction),
                 [x, target])  # fmt: skip
        run_both(lambda a, t, p=p, m=margin, w=gw: F.multi_margin_loss(a, t, p, m, w),
                 lambda a, t, p=p, m=margin, w=tw: torch.nn.functional.multi_margin_loss(
                     a, t, p, m, w),
                 [x[0], target[0]])  # fmt: skip


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize("log_input, full", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_poisson_nll_loss_matches_pytorch(device, log_input, full, reduction):
    x = values(3, 4) if log_input else np.abs(values(3, 4)) + 0.1
    target = RNG.poisson(2.0, size=(3, 4)).astype(np.float32)
    kw = dict(log_input=log_input, full=full, reduction=reduction)
    run_both(gnn.PoissonNLLLoss(**kw), torch.nn.PoissonNLLLoss(**kw), [x, target], wrt=[0])
    assert repr(gnn.PoissonNLLLoss(**kw)) == repr(torch.nn.PoissonNLLLoss(**kw))


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.parametrize("var_shape", [(4, 3), (4, 1), (4,)])
@pytest.mark.parametrize("full, reduction", [(False, "mean"), (True, "sum"), (False, "none")])
def test_gaussian_nll_loss_matches_pytorch(device, var_shape, full, reduction):
    var = np.abs(values(*var_shape)) + 0.1
    var.flat[0] = 1e-8  # below eps: clamped, the gradient passes
    kw = dict(full=full, reduction=reduction)
    run_both(gnn.GaussianNLLLoss(**kw), torch.nn.GaussianNLLLoss(**kw),
             [values(4, 3), values(4, 3), var], rtol=1e-4, wrt=[0, 2])  # fmt: skip
    got = F.gaussian_nll_loss(on_test_device(values(4, 3)), on_test_device(values(4, 3)), 0.5)
    assert got.shape == ()


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.gradcheck
def test_margin_and_nll_loss_gradchecks(device):
    x = on_test_device(values(3, 4, dtype=np.float64), requires_grad=True)
    t = on_test_device(RNG.integers(0, 4, size=3))
    assert gradcheck(lambda x: F.multi_margin_loss(x, t, p=2, margin=0.7), (x,))
    labels = on_test_device((values(3, 4) > 0).astype(np.float64))
    assert gradcheck(lambda x: F.multilabel_soft_margin_loss(x, labels), (x,))
    v = on_test_device(np.abs(values(3, 4, dtype=np.float64)) + 0.5, requires_grad=True)
    y = on_test_device(values(3, 4, dtype=np.float64))
    assert gradcheck(lambda x, v: F.gaussian_nll_loss(x, y, v, full=True), (x, v))
    assert gradcheck(lambda x: F.poisson_nll_loss(x, labels * 3, full=True), (x,))


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
def test_margin_and_nll_loss_reprs():
    for name in ("SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
                 "GaussianNLLLoss"):  # fmt: skip
        assert repr(getattr(gnn, name)()) == repr(getattr(torch.nn, name)())


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
@pytest.mark.errors
def test_margin_and_nll_loss_errors():
    assert_same_error(
        lambda: gnn.MultiMarginLoss(p=3),
        lambda: torch.nn.MultiMarginLoss(p=3),
        match="only p == 1 and p == 2 supported",
    )
    assert_same_error(
        lambda: F.gaussian_nll_loss(gt.zeros(4, 3), gt.zeros(4, 3), gt.ones(4, 2)),
        lambda: torch.nn.functional.gaussian_nll_loss(
            torch.zeros(4, 3), torch.zeros(4, 3), torch.ones(4, 2)
        ),
        match="var is of incorrect size",
    )
    assert_same_error(
        lambda: F.gaussian_nll_loss(gt.zeros(4, 3), gt.zeros(4, 3), -gt.ones(4, 3)),
        lambda: torch.nn.functional.gaussian_nll_loss(
            torch.zeros(4, 3), torch.zeros(4, 3), -torch.ones(4, 3)
        ),
        match="var has negative entry",
    )


# -- KL divergence, normalize and cosine similarity

_A = RNG.standard_normal((3, 4)).astype(np.float32)
_B = RNG.standard_normal((3, 4)).astype(np.float32)
_P = np.abs(RNG.standard_normal((3, 4))).astype(np.float32)
_P /= _P.sum(1, keepdims=True)
_P[0, 0] = 0.0  # a zero probability contributes 0 to the KL divergence

_NN_CASES = {
    "normalize": lambda L, x, y, q: L.nn.functional.normalize(x, dim=1),
    "cosine_similarity": lambda L, x, y, q: L.nn.CosineSimilarity(dim=0)(x, y),
    "kl_div_batchmean": lambda L, x, y, q: L.nn.functional.kl_div(
        x.log_softmax(1), q, reduction="batchmean"
    ),
    "kl_div_log_target": lambda L, x, y, q: L.nn.KLDivLoss(reduction="none", log_target=True)(
        x.log_softmax(1), y.log_softmax(1)
    ),
    "mish": lambda L, x, y, q: L.nn.Mish()(x),
    "hardtanh": lambda L, x, y, q: L.nn.Hardtanh(-0.5, 0.5)(x),
    "prelu_per_channel": lambda L, x, y, q: L.nn.PReLU(4, init=0.1)(x),
    "lerp": lambda L, x, y, q: L.lerp(x, y, 0.3),
    "addmm": lambda L, x, y, q: L.addmm(q[:, :3], x, y.t(), beta=0.5, alpha=2.0),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(_NN_CASES))
def test_program_functions_like_pytorch(name):
    case = _NN_CASES[name]
    tx, gx = torch.tensor(_A, requires_grad=True), gt.tensor(_A, requires_grad=True)
    theirs = case(torch, tx, torch.tensor(_B), torch.tensor(_P))
    ours = case(gt, gx, gt.tensor(_B), gt.tensor(_P))
    close_on_device(ours, theirs, rtol=1e-5, atol=1e-6)
    theirs.sum().backward()
    ours.sum().backward()
    close_on_device(gx.grad, tx.grad, rtol=1e-4, atol=1e-6)
