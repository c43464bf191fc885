"""Tensors on the ``cuda`` device: moves, mixing errors, host reads, autograd, modules.

Run under a CUDA driver (``GLASSTORCH_CUDA=simulator``); results on the device
are compared with the same computation on the CPU tier.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from cuda_support import requires_cuda

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F

pytestmark = [pytest.mark.cuda, requires_cuda]

MIXED = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


def _data(*shape, seed=0):
    return gt.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_moves_between_devices_keep_values_and_report_the_device():
    x = _data(3, 4)
    y = x.to("cuda")
    assert y.device == gt.device("cuda:0") and y.is_cuda and y.get_device() == 0
    assert x.device == gt.device("cpu") and not x.is_cuda
    assert y.type() == "torch.cuda.FloatTensor" and x.type() == "torch.FloatTensor"
    assert x.cuda().device.type == "cuda" and y.cuda() is y and x.cpu() is x
    back = y.cpu()
    assert back.device.type == "cpu"
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    z = x.to("cuda", non_blocking=True).to(gt.float64)
    assert z.dtype is gt.float64 and z.is_cuda
    assert x.to(y).is_cuda  # a tensor argument means its device and dtype


def test_strided_views_copy_both_ways():
    x = _data(4, 6)
    y = x.cuda()
    assert all(view.is_cuda for view in (y.t(), y[1:, ::2], y[:, 3]))
    np.testing.assert_array_equal(y.t().cpu().numpy(), x.t().numpy())
    np.testing.assert_array_equal(y[1:, ::2].contiguous().cpu().numpy(), x[1:, ::2].numpy())
    target = gt.zeros(6, 4, device="cuda")
    target.copy_(x.t())  # host to a device tensor
    np.testing.assert_array_equal(target.cpu().numpy(), x.t().numpy())


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64, gt.int64, gt.int32, gt.uint8, gt.bool])
def test_creation_functions_take_device(dtype):
    for make in (
        lambda: gt.zeros(2, 3, dtype=dtype, device="cuda"),
        lambda: gt.ones(2, 3, dtype=dtype, device="cuda"),
        lambda: gt.full((2, 3), 1, dtype=dtype, device="cuda"),
        lambda: gt.empty(2, 3, dtype=dtype, device="cuda"),
        lambda: gt.tensor([[1, 0, 1], [0, 1, 1]], dtype=dtype, device="cuda"),
    ):
        t = make()
        assert t.is_cuda and t.dtype is dtype and t.shape == (2, 3)
    assert (
        gt.ones(2, 3, dtype=dtype, device="cuda").cpu().tolist()
        == gt.ones(2, 3, dtype=dtype).tolist()
    )
    like = gt.zeros_like(gt.ones(2, device="cuda", dtype=dtype))
    assert like.is_cuda and like.cpu().tolist() == [0, 0]


def test_random_creation_on_the_device_matches_the_cpu_stream():
    gt.manual_seed(7)
    on_device = gt.randn(64, 32, device="cuda")
    gt.manual_seed(7)
    on_host = gt.randn(64, 32)
    assert on_device.is_cuda
    np.testing.assert_array_equal(on_device.cpu().numpy(), on_host.numpy())
    assert gt.rand(5, device="cuda").is_cuda and gt.randint(0, 4, (5,), device="cuda").is_cuda


@pytest.mark.errors
def test_mixing_devices_raises_pytorchs_error():
    a, b = gt.ones(3, device="cuda"), gt.ones(3)
    for op in (lambda: a + b, lambda: b + a, lambda: a * b, lambda: gt.matmul(a, b)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            op()
    with pytest.raises(RuntimeError) as info:
        a + b
    assert str(info.value) == MIXED


def test_a_cpu_scalar_tensor_combines_with_a_cuda_tensor():
    a = gt.tensor([0.0, 1.0, 2.0, 3.0], device="cuda")
    out = a * gt.tensor(2.0) + 1
    assert out.is_cuda
    assert out.cpu().tolist() == [1.0, 3.0, 5.0, 7.0]


@pytest.mark.errors
def test_numpy_of_a_cuda_tensor_raises_pytorchs_type_error():
    with pytest.raises(TypeError) as info:
        gt.ones(2, device="cuda").numpy()
    assert str(info.value) == (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
        "to host memory first."
    )


def test_item_tolist_repr_read_through_the_host():
    x = gt.tensor([[1.5, -2.0], [3.0, 4.25]], device="cuda")
    assert x.sum().item() == pytest.approx(6.75)
    assert x.tolist() == [[1.5, -2.0], [3.0, 4.25]]
    assert float(x[0, 0]) == 1.5 and bool(x[1, 1] > 4)
    assert repr(x) == "tensor([[ 1.5000, -2.0000],\n        [ 3.0000,  4.2500]], device='cuda:0')"
    assert repr(gt.ones(2, dtype=gt.int32, device="cuda")) == (
        "tensor([1, 1], device='cuda:0', dtype=torch.int32)"
    )
    assert f"{x.sum():.2f}" == "6.75"


UNARY = [
    "neg",
    "abs",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "relu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "reciprocal",
    "rsqrt",
    "sign",
    "expm1",
    "log1p",
]


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_the_cpu(name):
    x = (
        _data(5, 7, seed=1).abs() + 0.1
        if name in ("log", "sqrt", "rsqrt", "log1p")
        else _data(5, 7, seed=1)
    )
    got = getattr(gt, name)(x.cuda())
    assert got.is_cuda
    np.testing.assert_allclose(
        got.cpu().numpy(), getattr(gt, name)(x).numpy(), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64, gt.int64, gt.int32, gt.uint8])
def test_binary_ops_and_comparisons_match_the_cpu(dtype):
    rng = np.random.default_rng(2)
    a = gt.tensor(rng.integers(1, 9, (4, 5)), dtype=dtype)
    b = gt.tensor(rng.integers(1, 9, (5,)), dtype=dtype)  # broadcast along rows
    ac, bc = a.cuda(), b.cuda()
    for op in (
        gt.add,
        gt.sub,
        gt.mul,
        gt.maximum,
        gt.minimum,
        gt.eq,
        gt.lt,
        gt.ge,
        gt.floor_divide,
        gt.remainder,
    ):
        np.testing.assert_array_equal(op(ac, bc).cpu().numpy(), op(a, b).numpy())
    np.testing.assert_allclose((ac / bc).cpu().numpy(), (a / b).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(
        gt.where(ac > bc, ac, bc).cpu().numpy(), gt.where(a > b, a, b).numpy()
    )


def test_casts_on_the_device_follow_the_cpu_rules():
    x = gt.tensor([-1.7, 0.0, 2.5, 300.0, float("nan")])
    for dtype in (gt.int32, gt.int64, gt.uint8, gt.bool, gt.float64):
        np.testing.assert_array_equal(x.cuda().to(dtype).cpu().numpy(), x.to(dtype).numpy())


@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "all", "any"])
def test_reductions_match_the_cpu(op):
    x = _data(3, 4, 5, seed=3)
    if op in ("all", "any"):
        x = x > 0
    for dims in ((0,), (1, 2), (0, 2), (0, 1, 2)):
        got = getattr(gt, op)(x.cuda(), dim=dims) if op not in ("all", "any") else None
        want = getattr(gt, op)(x, dim=dims) if op not in ("all", "any") else None
        if got is not None:
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    whole = getattr(x.cuda(), op)()
    np.testing.assert_allclose(whole.cpu().numpy(), getattr(x, op)().numpy(), rtol=1e-5)


def test_matmul_matches_the_cpu():
    a, b = _data(2, 19, 23, seed=4), _data(23, 17, seed=5)
    np.testing.assert_allclose(
        (a.cuda() @ b.cuda()).cpu().numpy(), (a @ b).numpy(), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        (a.cuda()[0].t().t() @ b.cuda()).cpu().numpy(), (a[0] @ b).numpy(), rtol=1e-5, atol=1e-5
    )


def test_autograd_on_cuda_gives_gradients_on_the_same_device():
    x = _data(4, 3, seed=6)
    w = _data(3, 2, seed=7)
    xc, wc = x.cuda().requires_grad_(), w.cuda().requires_grad_()
    (xc @ wc).relu().sum().backward()
    x.requires_grad_(), w.requires_grad_()
    (x @ w).relu().sum().backward()
    assert wc.grad.is_cuda and xc.grad.is_cuda
    np.testing.assert_allclose(wc.grad.cpu().numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xc.grad.cpu().numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_the_gradient_of_a_move_moves_back():
    x = _data(3, seed=8).requires_grad_()
    (x.cuda() * 2).sum().backward()
    assert x.grad.device.type == "cpu"
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_module_to_moves_parameters_and_training_matches_the_cpu():
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    twin = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    twin.load_state_dict(model.state_dict())
    params = list(model.parameters())
    assert model.to("cuda") is model
    assert [p is q for p, q in zip(params, model.parameters())] == [True] * 4
    assert all(p.is_cuda for p in model.parameters())
    x, y = _data(10, 6, seed=9), _data(10, 2, seed=10)
    for net, inputs in ((model, (x.cuda(), y.cuda())), (twin, (x, y))):
        for _ in range(2):
            loss = F.mse_loss(net(inputs[0]), inputs[1])
            net.zero_grad()
            loss.backward()
            with gt.no_grad():
                for p in net.parameters():
                    p -= 0.1 * p.grad
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(
            p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6
        )
    model.cpu()
    assert not any(p.is_cuda for p in model.parameters())


def test_optimizer_state_follows_its_parameters_to_the_device():
    p = nn.Parameter(gt.ones(3))
    state = {"momentum_buffer": gt.zeros(3)}
    from glasstorch.optim.optimizer import state_buffer

    p.data = p.data.cuda()
    assert state_buffer(state, "momentum_buffer", p).is_cuda
    opt = gt.optim.SGD([p], lr=0.1, momentum=0.9)
    loaded = opt.state_dict()
    loaded["state"] = {0: {"momentum_buffer": gt.ones(3)}}
    opt.load_state_dict(loaded)
    assert opt.state[p]["momentum_buffer"].is_cuda


def test_pin_memory_and_pickle():
    x = _data(4)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned()
    assert pinned.to("cuda", non_blocking=True).cpu().tolist() == x.tolist()
    y = pickle.loads(pickle.dumps(x.cuda()))
    assert y.is_cuda and y.cpu().tolist() == x.tolist()


def test_set_default_device_cuda_puts_new_tensors_on_the_gpu():
    gt.set_default_device("cuda")
    try:
        assert gt.zeros(2).is_cuda and gt.tensor([1.0]).is_cuda
        assert gt.get_default_device() == gt.device("cuda:0")
    finally:
        gt.set_default_device("cpu")
    assert not gt.zeros(2).is_cuda


def test_indexing_with_a_cuda_tensor_result_stays_on_the_device():
    x = _data(5, 3, seed=11).cuda()
    assert x[2].is_cuda and x[1:3, 0].is_cuda
    np.testing.assert_array_equal(x[2].cpu().numpy(), x.cpu()[2].numpy())


def test_the_device_api_answers():
    assert gt.cuda.is_available() and gt.cuda.device_count() == 1
    assert gt.cuda.current_device() == 0
    gt.cuda.set_device(0)
    name = gt.cuda.get_device_name()
    props = gt.cuda.get_device_properties(0)
    assert props.name == name and props.total_memory > 0
    free, total = gt.cuda.mem_get_info()
    assert 0 <= free <= total == props.total_memory
    gt.cuda.manual_seed(3)
    gt.cuda.manual_seed_all(3)
    gt.cuda.synchronize()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        gt.zeros(1, device="cuda:1")


def test_save_and_load_keep_the_device_or_map_it(tmp_path):
    x = _data(2, 3).cuda()
    path = tmp_path / "x.pt"
    gt.save({"x": x}, path)
    assert gt.load(path)["x"].is_cuda
    on_host = gt.load(path, map_location="cpu")["x"]
    assert not on_host.is_cuda and on_host.tolist() == x.tolist()
    gt.save({"y": x.cpu()}, path)
    assert gt.load(path, map_location="cuda")["y"].is_cuda


@pytest.mark.parametrize("including_emulation", [True, False])
def test_bf16_is_not_supported_so_programs_choose_float32(including_emulation):
    """bfloat16 is a name only in glasstorch: the query nanoGPT makes answers False."""
    assert gt.cuda.is_bf16_supported(including_emulation=including_emulation) is False
    dtype = "bfloat16" if gt.cuda.is_bf16_supported() else "float32"  # nanoGPT's choice
    assert gt.ones(2, device="cuda", dtype=getattr(gt, dtype)).dtype is gt.float32
