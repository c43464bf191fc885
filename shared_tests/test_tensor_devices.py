"""Device queries answer truthfully on a machine without a GPU, as PyTorch's do.

Programs from PyTorch's tutorials pick their device with
``"cuda" if torch.cuda.is_available() else "cpu"`` or through
``torch.accelerator``; on glasstorch without a CUDA driver (``GLASSTORCH_CUDA``)
they must pick the CPU. The tests of that absence skip when a driver is active.
"""

from __future__ import annotations

import pytest
from cuda_support import requires_cuda, requires_no_cuda
from oracle import assert_same_error, torch

import glasstorch as gt
import glasstorch.nn.functional as F

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


# ------------------------------------------------- operands on two devices
#
# PyTorch's rule: every tensor of an operation on one device, except that a CPU
# tensor with no dimensions may join an elementwise operation on the GPU, as a
# Python number would. These run with a CUDA driver (GLASSTORCH_CUDA=simulator).

MIXED = "Expected all tensors to be on the same device"


def on_two_devices(test):
    """Mark a test that mixes the CPU and a CUDA device (skipped, visibly, without CUDA)."""
    return pytest.mark.cuda(pytest.mark.errors(requires_cuda(test)))


def _cuda(values, **kwargs):
    return gt.tensor(values, device="cuda", **kwargs)


@on_two_devices
@pytest.mark.parametrize(
    "call",
    [
        lambda c: c + gt.ones(1),  # one element, but one dimension: not a scalar
        lambda c: gt.ones(1, device="cuda") * gt.ones(1),
        lambda c: gt.ones(3) + gt.tensor(2.0, device="cuda"),  # a CUDA scalar is no CPU scalar
        lambda c: c.clone().mul_(gt.ones(1)),
        lambda c: gt.tensor(1.0).add_(gt.tensor(1.0, device="cuda")),  # the written tensor
        lambda c: gt.where(c > 0, c, gt.zeros(1)),
        lambda c: c.masked_fill(gt.tensor([True, False, True]), 0.0),
        lambda c: c.clone().index_fill_(0, gt.tensor([0]), 1.0),
        lambda c: c.clone().index_put_((_cuda([0, 1]),), gt.ones(2)),
        lambda c: gt.zeros(3).index_put_((gt.tensor([0, 1]),), c[:2]),
        lambda c: gt.mm(c.reshape(3, 1), gt.ones(1, 3)),
        lambda c: gt.cat([c, gt.ones(3)]),
    ],
)
def test_mixing_devices_raises_pytorchs_error(call):
    with pytest.raises(RuntimeError, match=MIXED):
        call(gt.ones(3, device="cuda"))


@on_two_devices
def test_cpu_scalars_join_cuda_elementwise_ops():
    c = gt.tensor([1.0, 2.0, 3.0], device="cuda")
    for result, expected in (
        (c + gt.tensor(2.0), [3.0, 4.0, 5.0]),
        (c * 2, [2.0, 4.0, 6.0]),
        (gt.where(c > 1, c, gt.tensor(0.0)), [0.0, 2.0, 3.0]),
        (c.clone().add_(gt.tensor(1.0)), [2.0, 3.0, 4.0]),
        (gt.tensor(1.0) + gt.tensor(2.0, device="cuda"), 3.0),
    ):
        assert result.device == gt.device("cuda:0")
        assert result.tolist() == expected


@on_two_devices
@pytest.mark.parametrize(
    ("call", "argument", "method"),
    [
        (lambda c: c.take(gt.tensor([0])), "index", "wrapper_CUDA__take"),
        (lambda c: c.masked_select(gt.tensor([True, False, True])), "mask", "masked_select"),
        (lambda c: c.index_select(0, gt.tensor(1)), "index", "index_select"),  # even a 0-d one
        (lambda c: F.embedding(gt.tensor(1), c.reshape(3, 1)), "index", "index_select"),
        (
            lambda c: F.embedding_bag(_cuda([0, 1]), c.reshape(3, 1), gt.tensor([0])),
            "offsets",
            "embedding_bag",
        ),
    ],
)
def test_operations_that_are_not_elementwise_name_the_argument(call, argument, method):
    with pytest.raises(RuntimeError, match=MIXED) as raised:
        call(gt.ones(3, device="cuda"))
    assert f"got {argument} is on cpu, different from other tensors on cuda:0" in str(raised.value)
    assert method in str(raised.value)


@on_two_devices
def test_indexing_a_cpu_tensor_with_cuda_indices():
    x = gt.tensor([10.0, 20.0, 30.0])
    for key in (_cuda([0, 2]), _cuda([True, False, True])):
        with pytest.raises(IndexError) as raised:
            x[key]
        assert str(raised.value) == (
            "indices should be either on cpu or on the same device as the indexed tensor (cpu)"
        )
    # The other way round is allowed: CPU indices address a CUDA tensor.
    c = x.cuda()
    assert c[gt.tensor([0, 2])].tolist() == [10.0, 30.0]
    assert c[gt.tensor([True, False, True])].device == gt.device("cuda:0")
    # Writing: indices move to the written tensor, as does a 0-d value.
    y = x.clone()
    y[_cuda([1])] = gt.tensor(5.0, device="cuda")
    assert y.tolist() == [10.0, 5.0, 30.0]
    c[gt.tensor([0])] = gt.tensor(7.0)
    assert c.tolist() == [7.0, 20.0, 30.0]


@on_two_devices
def test_out_on_another_device():
    c = gt.ones(3, device="cuda")
    for call in (
        lambda: gt.add(c, c, out=gt.empty(3)),
        lambda: gt.add(gt.ones(3), gt.ones(3), out=gt.empty(3, device="cuda")),
        lambda: gt.sum(c.reshape(3, 1), 0, out=gt.empty(1)),
        lambda: gt.matmul(c.reshape(1, 3), c.reshape(3, 1), out=gt.empty(1, 1)),
    ):
        with pytest.raises(RuntimeError, match=MIXED):
            call()
    out = gt.empty(3, device="cuda")
    assert gt.add(c, c, out=out) is out
    assert out.tolist() == [2.0, 2.0, 2.0]


@on_two_devices
def test_assigning_a_grad_on_another_device():
    w = gt.nn.Parameter(gt.ones(3, device="cuda"))
    with pytest.raises(RuntimeError) as raised:
        w.grad = gt.ones(3)
    assert str(raised.value) == (
        "attempting to assign a gradient with device type 'cpu' to a tensor with device type "
        "'cuda'. Please ensure that the gradient and the tensor are on the same device"
    )
    assert w.grad is None
    w.grad = gt.ones(3, device="cuda")
    assert w.grad.device == gt.device("cuda:0")


@pytest.mark.autograd
@pytest.mark.errors
def test_assigning_a_grad_of_another_size_or_type(device):
    w = gt.ones(3, device=device, requires_grad=True)
    tw = torch.ones(3, requires_grad=True) if torch is not None else None
    assert_same_error(
        lambda: setattr(w, "grad", gt.ones(4, device=device)),
        (lambda: setattr(tw, "grad", torch.ones(4))) if tw is not None else None,
        exc_type=RuntimeError,
        match=r"attempting to assign a gradient of size '\[4\]' to a tensor of size '\[3\]'",
    )
    assert_same_error(
        lambda: setattr(w, "grad", "hello"),
        (lambda: setattr(tw, "grad", "hello")) if tw is not None else None,
        exc_type=TypeError,
        match="assigned grad expected to be a Tensor or None but got grad of type str",
    )
    w.grad = gt.full((3,), 2.0, device=device)
    w.sum().backward()  # accumulates into the assigned gradient
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


@on_two_devices
def test_backward_with_a_gradient_on_another_device():
    x = gt.ones(3, device="cuda", requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError) as raised:
        y.backward(gt.ones(3))
    assert str(raised.value) == "invalid gradient at index 0 - expected device cuda:0 but got cpu"
    assert x.grad is None
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        gt.autograd.grad(y, x, gt.ones(3))
    # A 0-d gradient is a scalar: it moves to the output's device.
    s = (x * 3).sum()
    s.backward(gt.tensor(1.0))
    assert x.grad.device == gt.device("cuda:0")
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


@on_two_devices
def test_set_stream_refuses_what_is_not_a_stream():
    with pytest.raises(TypeError, match=r"set_stream\(\): expected a torch.cuda.Stream"):
        gt.cuda.set_stream("hello")
    with pytest.raises(AttributeError):  # the class PyTorch raises, for code written for it
        gt.cuda.set_stream("hello")
    with pytest.raises(TypeError, match="expected a torch.cuda.Event"):
        gt.cuda.current_stream().wait_event("hello")
    with pytest.raises(TypeError, match="expected a torch.cuda.Stream"):
        with gt.cuda.stream("hello"):
            pass
    gt.cuda.set_stream(None)  # PyTorch ignores None
    assert (gt.ones(2, device="cuda") + 1).tolist() == [2.0, 2.0]  # CUDA still works
    stream = gt.cuda.Stream()
    gt.cuda.set_stream(stream)
    try:
        assert gt.cuda.current_stream() == stream
    finally:
        gt.cuda.set_stream(gt.cuda.default_stream())


@on_two_devices
def test_convolution_parameters_on_another_device():
    x = gt.ones(1, 1, 3, 3, device="cuda")
    with pytest.raises(RuntimeError) as raised:
        F.conv2d(x, gt.ones(1, 1, 2, 2))
    assert str(raised.value) == (
        "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"
    )
    with pytest.raises(RuntimeError, match=r"and bias type \(torch.FloatTensor\)"):
        F.conv2d(x, gt.ones(1, 1, 2, 2, device="cuda"), gt.ones(1))


@pytest.mark.cuda
@pytest.mark.nn
@requires_cuda
def test_clip_grad_norm_over_parameters_on_two_devices():
    a = gt.nn.Parameter(gt.ones(1, device="cuda"))
    b = gt.nn.Parameter(gt.ones(1))
    a.grad, b.grad = gt.tensor([6.0], device="cuda"), gt.tensor([8.0])
    total = gt.nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.device == gt.device("cuda:0")  # the first gradient's device, as in PyTorch
    assert abs(total.item() - 10.0) < 1e-4  # sqrt(6 ** 2 + 8 ** 2)
    assert a.grad.device == gt.device("cuda:0") and b.grad.device == gt.device("cpu")
    assert abs(a.grad.item() - 0.6) < 1e-4 and abs(b.grad.item() - 0.8) < 1e-4


@requires_cuda
def test_as_tensor_moves_to_the_device_asked_for():
    """as_tensor(t, device=...) is t.to(device): itself where nothing changes, else a copy."""
    import numpy as np

    host = gt.tensor([1.0, 2.0])
    moved = gt.as_tensor(host, device="cuda")
    assert moved.device == gt.device("cuda:0") and moved.tolist() == [1.0, 2.0]
    assert gt.as_tensor(moved, device="cuda") is moved
    assert gt.as_tensor(host, device="cpu") is host
    array = gt.as_tensor(np.array([3.0, 4.0], dtype=np.float32), device="cuda")
    assert array.device == gt.device("cuda:0") and array.tolist() == [3.0, 4.0]
    leaf = gt.tensor([1.0, 2.0], requires_grad=True)
    gt.as_tensor(leaf, device="cuda").sum().backward()  # the copy is recorded
    assert leaf.grad.tolist() == [1.0, 1.0]
