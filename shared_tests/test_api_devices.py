"""Device queries answer truthfully on a machine without a GPU, as PyTorch's do.

Programs from PyTorch's tutorials pick their device with
``"cuda" if torch.cuda.is_available() else "cpu"`` or through
``torch.accelerator``; on glasstorch without a CUDA driver (``GLASSTORCH_CUDA``)
they must pick the CPU. The tests of that absence skip when a driver is active.
"""

from __future__ import annotations

import pytest
from cuda_support import requires_no_cuda
from oracle import assert_same_error, torch

import glasstorch as gt

pytestmark = pytest.mark.tensor


@requires_no_cuda
def test_cuda_reports_no_device():
    assert gt.cuda.is_available() is False
    assert gt.cuda.device_count() == 0
    assert gt.cuda.is_initialized() is False
    gt.cuda.manual_seed(0)  # accepted, as PyTorch without CUDA accepts it
    gt.cuda.manual_seed_all(0)


@pytest.mark.errors
@requires_no_cuda
def test_cuda_calls_that_need_a_device_raise_like_pytorch():
    for name in ("current_device", "synchronize", "get_device_name"):
        assert_same_error(
            getattr(gt.cuda, name),
            getattr(torch.cuda, name) if torch is not None else None,
            exc_type=AssertionError,
            match="not compiled with CUDA",
        )


@requires_no_cuda
def test_accelerator_and_mps_report_none():
    assert gt.accelerator.is_available() is False
    assert gt.accelerator.current_accelerator() is None
    assert gt.accelerator.device_count() == 0
    assert gt.backends.mps.is_available() is False
    assert gt.backends.mps.is_built() is False
    assert gt.backends.cudnn.is_available() is False


@requires_no_cuda
def test_the_tutorial_idioms_pick_the_cpu():
    device = "cuda" if gt.cuda.is_available() else "cpu"
    accel = gt.accelerator.current_accelerator()
    device2 = accel.type if accel is not None else "cpu"
    mps = "mps" if gt.backends.mps.is_available() else "cpu"
    assert device == device2 == mps == "cpu"
    x = gt.ones(2, device=device).to(device)
    assert x.device == gt.device("cpu")


def test_cudnn_flags_can_be_set():
    old = gt.backends.cudnn.deterministic, gt.backends.cudnn.benchmark
    try:
        gt.backends.cudnn.deterministic = True
        gt.backends.cudnn.benchmark = False
        assert gt.backends.cudnn.deterministic is True
    finally:
        gt.backends.cudnn.deterministic, gt.backends.cudnn.benchmark = old


@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:0", "cuda:1"])
def test_device_parse_repr_str_type_index(spec):
    d = gt.device(spec)
    assert str(d) == spec
    if torch is not None:
        t = torch.device(spec)
        assert repr(d) == repr(t)
        assert (d.type, d.index) == (t.type, t.index)
    assert d == gt.device(spec)
    assert d == spec


def test_device_equality(device):
    assert gt.device("cuda", 0) == gt.device("cuda:0")
    assert gt.device("cuda") != gt.device("cuda:0")
    assert gt.device("cpu") != gt.device("cuda")
    assert gt.ones(1).device == gt.device("cpu")
    on = gt.ones(1, device=device).device
    assert on == gt.device("cpu" if device == "cpu" else "cuda:0")


@pytest.mark.errors
@pytest.mark.parametrize("spec", ["cuda:x", "cuda:-1"])
def test_device_bad_string(spec):
    assert_same_error(
        lambda: gt.device(spec),
        (lambda: torch.device(spec)) if torch is not None else None,
        exc_type=RuntimeError,
        match="Invalid device string",
    )


def test_set_default_device_cpu(device):
    gt.set_default_device(device)
    assert gt.zeros(2).device.type == device
    gt.set_default_device("cpu")
    gt.set_default_device(None)
    assert gt.get_default_device() == gt.device("cpu")
    assert gt.zeros(2).device == gt.device("cpu")


@pytest.mark.errors
@requires_no_cuda
def test_set_default_device_cuda_says_no_cuda_device():
    with pytest.raises(RuntimeError, match="no CUDA device is available"):
        gt.set_default_device("cuda")
    assert gt.get_default_device() == gt.device("cpu")
