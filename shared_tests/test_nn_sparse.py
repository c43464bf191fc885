"""EmbeddingBag against PyTorch: offsets, 2-D input, per-sample weights, offsets past the input,
and PyTorch's errors. (nn.Embedding itself is the course's: test_nn_layers.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from compare import values
from oracle import assert_close, assert_same_error, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck, gradgradcheck

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- EmbeddingBag
@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_matches_pytorch(device, mode):
    tm = torch.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=4)
    gm = copy_weights(gnn.EmbeddingBag(10, 4, mode=mode, padding_idx=4), tm, device)
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5])
    got = gm(on_test_device(idx), on_test_device(offsets))
    want = tm(torch.tensor(idx), torch.tensor(offsets))
    assert_close(got, want.detach(), rtol=1e-6, atol=1e-6)
    seed = values(*want.shape)
    got.backward(on_test_device(seed))
    want.backward(torch.tensor(seed))
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-6, atol=1e-6)
    assert repr(gm) == repr(tm)


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_last_offset(device, mode):
    weight = values(8, 3)
    idx = np.array([[1, 2, 3], [7, 7, 0]])
    got = F.embedding_bag(on_test_device(idx), on_test_device(weight), mode=mode)
    want = torch.nn.functional.embedding_bag(torch.tensor(idx), torch.tensor(weight), mode=mode)
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    flat, offsets = np.array([1, 2, 3, 7, 6]), np.array([0, 3, 5])
    got = F.embedding_bag(
        on_test_device(flat),
        on_test_device(weight),
        on_test_device(offsets),
        mode=mode,
        include_last_offset=True,
    )
    want = torch.nn.functional.embedding_bag(
        torch.tensor(flat),
        torch.tensor(weight),
        torch.tensor(offsets),
        mode=mode,
        include_last_offset=True,
    )
    assert_close(got, want, rtol=1e-6, atol=1e-6)


@needs_torch
def test_embedding_bag_per_sample_weights(device):
    weight, psw = values(6, 3), values(5)
    idx, offsets = np.array([0, 5, 2, 2, 1]), np.array([0, 3])
    got = F.embedding_bag(
        on_test_device(idx),
        on_test_device(weight),
        on_test_device(offsets),
        mode="sum",
        per_sample_weights=on_test_device(psw),
    )
    want = torch.nn.functional.embedding_bag(
        torch.tensor(idx),
        torch.tensor(weight),
        torch.tensor(offsets),
        mode="sum",
        per_sample_weights=torch.tensor(psw),
    )
    assert_close(got, want, rtol=1e-6, atol=1e-6)
    w64 = on_test_device(values(6, 3, dtype=np.float64), requires_grad=True)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(
            lambda w, mode=mode: F.embedding_bag(
                on_test_device(idx), w, on_test_device(offsets), mode=mode
            ),
            (w64,),
        )


@needs_torch
@pytest.mark.errors
def test_embedding_bag_errors():
    w = gt.zeros(5, 3)
    tw = torch.zeros(5, 3)
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 2]), w),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 2]), tw),
        match="offsets has to be a 1D Tensor",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([[1, 2]]), w, gt.tensor([0])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([[1, 2]]), tw, torch.tensor([0])),
        match="if input is 2D, then offsets has to be None",
    )
    assert_same_error(
        lambda: F.embedding_bag(
            gt.tensor([1, 2]), w, gt.tensor([0]), per_sample_weights=gt.ones(2)
        ),
        lambda: torch.nn.functional.embedding_bag(
            torch.tensor([1, 2]), tw, torch.tensor([0]), per_sample_weights=torch.ones(2)
        ),
        match="per_sample_weights is only supported for mode='sum'",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 7]), w, gt.tensor([0])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 7]), tw, torch.tensor([0])),
        match=r"Index 1 of input takes value 7 which is not in the valid range \[0, 5\)",
    )
    assert_same_error(
        lambda: F.embedding_bag(gt.tensor([1, 2]), w, gt.tensor([1])),
        lambda: torch.nn.functional.embedding_bag(torch.tensor([1, 2]), tw, torch.tensor([1])),
        match="offsets\\[0\\] has to be 0",
    )


# -- Offsets past the input
@pytest.mark.errors
def test_embedding_bag_offsets_past_the_input():
    weight = gt.arange(12.0).reshape(4, 3)
    tweight = torch.arange(12.0).reshape(4, 3) if torch is not None else None
    for offsets in ([0, 5], [0, 2**40], [0, 1, 5]):
        assert_same_error(
            lambda o=offsets: F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor(o)),
            (
                lambda o=offsets: torch.nn.functional.embedding_bag(
                    torch.tensor([0, 1, 2]), tweight, torch.tensor(o)
                )
            )
            if torch is not None
            else None,
            exc_type=RuntimeError,
            match=f"offsets\\[-1\\] can not be greater than input's length 3 but got "
            f"offsets\\[-1\\] of {offsets[-1]}",
        )
    with pytest.raises(RuntimeError, match="offsets must not decrease"):
        F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor([0, 2, 1]))
    # An offset equal to the length is an empty last bag, as in PyTorch.
    got = F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor([0, 3]), mode="sum")
    assert got.tolist() == [[9.0, 12.0, 15.0], [0.0, 0.0, 0.0]]


@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_gradient_arriving_transposed_matches_pytorch(device, padding_idx):
    # As behind a batch_first LSTM: the gradient reaching the embedding is a
    # transposed view, which the backward reads in its memory order.
    tm = torch.nn.Embedding(7, 5, padding_idx=padding_idx)
    gm = copy_weights(gnn.Embedding(7, 5, padding_idx=padding_idx), tm, device)
    tokens = np.random.default_rng(3).integers(0, 7, (4, 6))
    seed = values(6, 4, 5)
    (tm(torch.tensor(tokens)).transpose(0, 1) * torch.tensor(seed)).sum().backward()
    out = gm(on_test_device(tokens)).transpose(0, 1) * on_test_device(seed)
    out.sum().backward()
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-5, atol=1e-6)


def test_embedding_gradient_arriving_transposed_has_second_derivatives(device):
    tokens = on_test_device(np.array([[0, 2, 1], [2, 2, 0]]))
    weight = on_test_device(values(3, 4, dtype=np.float64), requires_grad=True)
    assert gradgradcheck(lambda w: F.embedding(tokens, w).transpose(0, 1) ** 2, (weight,))
