"""The demo programs run end to end on the active tier and learn what they should."""

from __future__ import annotations

import pytest
from cuda_support import requires_cuda

import glasstorch
from glasstorch import demo, polynomial

pytestmark = pytest.mark.demo


def test_digit_classifier_learns(capsys, device):
    # A shortened run of `make demo --model mlp`: fewer epochs and a narrower layer, same code.
    accuracy = demo.run(
        glasstorch, epochs=3, batch_size=64, hidden=32, lr=1e-2, seed=0, model="mlp", device=device
    )
    assert accuracy >= 0.85
    printed = capsys.readouterr().out
    assert "test accuracy" in printed
    assert "same accuracy" in printed  # the saved and reloaded weights score the same
    assert (f"device: {device}" in printed) == (device != "cpu")  # the demo names a GPU
    if glasstorch.tier == "reference":
        assert "reference tier runs every kernel as a Python loop" in printed


def test_convolutional_digit_classifier_learns(capsys, device):
    # A shortened run of `make demo` (the CNN): one epoch of the same program.
    accuracy = demo.run(glasstorch, epochs=1, batch_size=32, lr=1e-2, seed=0, device=device)
    assert accuracy >= 0.85
    printed = capsys.readouterr().out
    assert "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in printed
    assert "MaxPool2d" in printed
    assert "same accuracy" in printed


def test_demo_model_choice(device):
    with pytest.raises(ValueError, match="'cnn' or 'mlp'"):
        demo.build_model(glasstorch, "resnet")
    mlp = demo.build_model(glasstorch, "mlp", hidden=8)
    assert isinstance(mlp[1], glasstorch.nn.Linear) and mlp[1].out_features == 8
    cnn = demo.build_model(glasstorch, "cnn").to(device)
    assert isinstance(cnn[0], glasstorch.nn.Conv2d)
    out = cnn(glasstorch.zeros(2, 1, 8, 8, device=device))
    assert tuple(out.shape) == (2, 10) and out.device.type == device


@pytest.mark.usefixtures(
    "default_device"
)  # the program's tensors are made on the device under test
def test_polynomial_fit_matches_the_taylor_shape(capsys):
    a, b, c, d = polynomial.run(glasstorch, steps=400, lr=0.8, points=200)
    # sin is odd: the even coefficients vanish, the odd ones sit near 0.86 and -0.093
    # (the least-squares cubic on [-pi, pi], not the Taylor one).
    assert abs(a) < 1e-3 and abs(c) < 1e-3
    assert b == pytest.approx(0.856, abs=0.01)
    assert d == pytest.approx(-0.093, abs=0.003)
    assert "loss" in capsys.readouterr().out


@pytest.mark.cuda
@requires_cuda
def test_the_demo_trains_on_the_device_as_on_the_cpu(capsys):
    # `make demo` picks "cuda" when torch.cuda.is_available(); a short run of it on
    # the device reaches the CPU's accuracy and ends with the allocator's figures.
    settings = dict(epochs=1, batch_size=64, hidden=32, lr=1e-2, seed=0, model="mlp")
    on_cpu = demo.run(glasstorch, device="cpu", **settings)
    assert "CUDA caching allocator" not in capsys.readouterr().out
    on_device = demo.run(glasstorch, **settings)  # the default device: cuda
    printed = capsys.readouterr().out
    assert on_device == on_cpu
    assert "device: cuda" in printed and "same accuracy" in printed
    assert "CUDA caching allocator" in printed and "num_device_alloc" in printed
