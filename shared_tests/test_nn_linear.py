"""Bilinear and the lazy layers against PyTorch (nn.Linear itself is the course's:
test_nn_layers.py)."""

from __future__ import annotations

import numpy as np
import pytest
from compare import run_both, values
from oracle import assert_close, assert_same_error, copy_weights, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck, gradgradcheck

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- Linear on a non-contiguous (*, in) input
@needs_torch
@pytest.mark.parametrize(
    "shape, dims, width",
    [((5, 2, 4), (1, 0, 2), 3), ((3, 2, 4, 6), (2, 0, 1, 3), 5), ((5, 2, 4), (1, 0, 2), 7)],
)
def test_linear_of_a_permuted_batch_matches_pytorch(device, shape, dims, width):
    # A batch_first LSTM's output seen as (B, T, H) is such an input: the
    # product reads its rows in memory order (when the output is no wider).
    tm = torch.nn.Linear(shape[-1], width)
    gm = copy_weights(gnn.Linear(shape[-1], width), tm, device)
    got, _ = run_both(
        lambda x: gm(x.permute(*dims)), lambda x: tm(x.permute(*dims)), [values(*shape)]
    )
    assert got.is_contiguous()  # as PyTorch's
    for (_, p), (_, q) in zip(gm.named_parameters(), tm.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


def test_linear_of_a_transposed_batch_has_second_derivatives(device):
    x = on_test_device(values(3, 2, 4, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(3, 4, dtype=np.float64), requires_grad=True)
    b = on_test_device(values(3, dtype=np.float64), requires_grad=True)
    assert gradgradcheck(lambda x, w, b: F.linear(x.transpose(0, 1), w, b), (x, w, b))


# -- Bilinear
@needs_torch
def test_bilinear_matches_pytorch(device):
    tm = torch.nn.Bilinear(3, 4, 5)
    gm = copy_weights(gnn.Bilinear(3, 4, 5), tm, device)
    run_both(gm, tm, [values(6, 3), values(6, 4)])
    for (_, p), (_, q) in zip(gm.named_parameters(), tm.named_parameters()):
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    assert repr(gm) == repr(tm)
    a = on_test_device(values(2, 3, dtype=np.float64), requires_grad=True)
    b = on_test_device(values(2, 2, dtype=np.float64), requires_grad=True)
    w = on_test_device(values(4, 3, 2, dtype=np.float64), requires_grad=True)
    assert gradcheck(F.bilinear, (a, b, w))


@needs_torch
@pytest.mark.errors
def test_bilinear_errors():
    assert_same_error(
        lambda: F.bilinear(gt.zeros(2, 3), gt.zeros(2, 4), gt.zeros(5, 3, 3)),
        lambda: torch.nn.functional.bilinear(
            torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(5, 3, 3)
        ),
        match="input2 size does not match weight size: got 4 but expected 3",
    )


# -- Lazy layers take their size from the first input
def test_lazy_layers_take_their_size_from_the_first_input():
    net = gt.nn.Sequential(
        gt.nn.LazyConv2d(6, kernel_size=5, padding=2),
        gt.nn.LazyBatchNorm2d(),
        gt.nn.Flatten(),
        gt.nn.LazyLinear(10),
        gt.nn.LazyLinear(3, bias=False),
    )
    before = list(net.parameters())
    optimizer = gt.optim.SGD(net.parameters(), lr=0.1)  # made before the sizes are known
    out = net(gt.randn(2, 1, 4, 4))
    assert tuple(out.shape) == (2, 3)
    assert [type(m).__name__ for m in net] == [
        "Conv2d", "BatchNorm2d", "Flatten", "Linear", "Linear"
    ]  # fmt: skip
    assert all(a is b for a, b in zip(before, net.parameters()))
    assert tuple(net[3].weight.shape) == (10, 96) and net[4].bias is None
    out.sum().backward()
    old = net[3].weight.detach().clone()
    optimizer.step()
    assert not bool((net[3].weight == old).all())
