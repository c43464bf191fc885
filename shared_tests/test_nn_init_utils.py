"""nn.init (distributions, bounds, orthogonality; glasstorch's Philox numbers differ
from PyTorch's, so no exact values) and nn.utils (against PyTorch and closed forms)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
from glasstorch.nn import init

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# ---------------------------------------------------------------------- init


def test_calculate_gain_values():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    if torch is not None:
        for name in ("linear", "tanh", "relu", "leaky_relu", "selu", "conv2d"):
            assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda nn, lib: nn.init.xavier_uniform_(lib.ones(3)),
        lambda nn, lib: nn.init.calculate_gain("foo"),
        lambda nn, lib: nn.init.kaiming_uniform_(lib.ones(3, 2), mode="x"),
    ],
)
def test_init_errors_match_torch(call):
    gt_error = assert_same_error(lambda: call(gnn, gt), lambda: call(torch.nn, torch))
    with pytest.raises(ValueError) as torch_error:
        call(torch.nn, torch)
    assert str(gt_error) == str(torch_error.value)


def test_constant_fills_under_no_grad_and_return_the_tensor():
    p = gnn.Parameter(gt.empty(2, 3))
    assert init.zeros_(p) is p and p.tolist() == [[0.0] * 3] * 2
    assert init.ones_(p) is p and p.tolist() == [[1.0] * 3] * 2
    assert init.constant_(p, 2.5) is p and p.tolist() == [[2.5] * 3] * 2
    assert p.is_leaf and p.grad_fn is None
    assert init.eye_(p).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def _sample(fill, shape=(60, 50)):
    gt.manual_seed(11)
    p = gnn.Parameter(gt.empty(*shape))
    assert fill(p) is p and p.is_leaf
    return p.detach().cpu().numpy().astype(np.float64)


def test_uniform_and_normal():
    values = _sample(lambda p: init.uniform_(p, -0.5, 1.5))
    assert values.min() >= -0.5 and values.max() < 1.5
    assert abs(values.mean() - 0.5) < 0.05 and abs(values.var() - 4 / 12) < 0.03
    values = _sample(lambda p: init.normal_(p, 2.0, 0.5))
    assert abs(values.mean() - 2.0) < 0.03 and abs(values.std() - 0.5) < 0.03


def test_uniform_is_repeatable_with_a_generator():
    first = init.uniform_(gt.empty(5), generator=gt.Generator().manual_seed(4)).tolist()
    second = init.uniform_(gt.empty(5), generator=gt.Generator().manual_seed(4)).tolist()
    assert first == second


@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(gain):
    fan_in, fan_out = 50, 60
    std = gain * math.sqrt(2 / (fan_in + fan_out))
    values = _sample(lambda p: init.xavier_uniform_(p, gain=gain))
    assert np.abs(values).max() <= math.sqrt(3) * std
    assert abs(values.std() - std) < 0.05 * std
    values = _sample(lambda p: init.xavier_normal_(p, gain=gain))
    assert abs(values.std() - std) < 0.05 * std and abs(values.mean()) < 0.1 * std


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming(mode):
    fan = 50 if mode == "fan_in" else 60
    std = math.sqrt(2) / math.sqrt(fan)
    values = _sample(lambda p: init.kaiming_uniform_(p, mode=mode, nonlinearity="relu"))
    assert np.abs(values).max() <= math.sqrt(3) * std
    assert abs(values.std() - std) < 0.05 * std
    values = _sample(lambda p: init.kaiming_normal_(p, mode=mode, nonlinearity="relu"))
    assert abs(values.std() - std) < 0.05 * std


def test_kaiming_on_an_empty_tensor_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(gt.empty(0, 2))


def test_fans_include_the_receptive_field():
    values = _sample(lambda p: init.kaiming_uniform_(p, a=math.sqrt(5)), shape=(8, 4, 3))
    assert np.abs(values).max() <= 1 / math.sqrt(12)


def test_trunc_normal_stays_in_bounds():
    values = _sample(lambda p: init.trunc_normal_(p, mean=0.5, std=1.0, a=-0.5, b=1.0))
    assert values.min() >= -0.5 and values.max() <= 1.0
    assert values.min() < -0.45 and values.max() > 0.95
    values = _sample(lambda p: init.trunc_normal_(p))
    # N(0, 1) cut at +-2 has standard deviation 0.8796.
    assert np.abs(values).max() <= 2 and abs(values.std() - 0.8796) < 0.03


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 2)])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_orthogonal(shape, gain):
    gt.manual_seed(2)
    p = gnn.Parameter(gt.empty(*shape, dtype=gt.float64))
    init.orthogonal_(p, gain=gain)
    matrix = p.detach().cpu().numpy().reshape(shape[0], -1)
    rows, cols = matrix.shape
    product = matrix @ matrix.T if rows <= cols else matrix.T @ matrix
    np.testing.assert_allclose(product, gain**2 * np.eye(min(rows, cols)), atol=1e-12)


def test_default_layer_initialisation_uses_the_generator():
    gt.manual_seed(7)
    first = gnn.Linear(3, 2).weight.tolist()
    gt.manual_seed(7)
    assert gnn.Linear(3, 2).weight.tolist() == first


# --------------------------------------------------------------------- utils


def _grads_pair(norm_type):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    gt_params = [gnn.Parameter(gt.tensor(a)) for a in arrays]
    torch_params = [torch.nn.Parameter(torch.tensor(a)) for a in arrays] if torch else None
    grads = [rng.standard_normal(a.shape) * 3 for a in arrays]
    for i, g in enumerate(grads):
        gt_params[i].grad = gt.tensor(g)
        if torch_params:
            torch_params[i].grad = torch.tensor(g)
    return gt_params, torch_params, grads


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_closed_form(norm_type, max_norm):
    params, _, grads = _grads_pair(norm_type)
    flat = np.concatenate([g.ravel() for g in grads])
    expected = np.abs(flat).max() if norm_type == math.inf else np.linalg.norm(flat, norm_type)
    total = gnn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert_close(total, expected)
    scale = min(1.0, max_norm / (expected + 1e-6))
    for param, grad in zip(params, grads):
        assert_close(param.grad, grad * scale)


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    gt_params, torch_params, _ = _grads_pair(norm_type)
    total = gnn.utils.clip_grad_norm_(gt_params, 1.0, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(torch_params, 1.0, norm_type=norm_type)
    assert_close(total, expected)
    for p, tp in zip(gt_params, torch_params):
        assert_close(p.grad, tp.grad)


@needs_torch
def test_clip_grad_norm_nonfinite_error_matches_torch():
    def attempt(nn, lib):
        p = nn.Parameter(lib.ones(2))
        p.grad = lib.tensor([float("inf"), 1.0])
        return nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)

    gt_error = assert_same_error(lambda: attempt(gnn, gt), lambda: attempt(torch.nn, torch))
    assert "non-finite" in str(gt_error)


def test_clip_grad_norm_skips_missing_grads_and_accepts_one_tensor():
    p = gnn.Parameter(gt.ones(2))
    assert gnn.utils.clip_grad_norm_([p], 1.0).item() == 0.0
    p.grad = gt.tensor([3.0, 4.0])
    assert gnn.utils.clip_grad_norm_(p, 10.0).item() == pytest.approx(5.0)


def test_clip_grad_value():
    params, _, grads = _grads_pair(2.0)
    gnn.utils.clip_grad_value_(params, 0.7)
    for param, grad in zip(params, grads):
        assert_close(param.grad, np.clip(grad, -0.7, 0.7))


def test_parameters_to_vector_and_back():
    layer = gnn.Linear(2, 3)
    vector = gnn.utils.parameters_to_vector(layer.parameters())
    expected = np.concatenate(
        [layer.weight.detach().cpu().numpy().ravel(), layer.bias.detach().cpu().numpy()]
    )
    assert_close(vector.detach(), expected)
    gnn.utils.vector_to_parameters(gt.arange(9.0), layer.parameters())
    assert layer.weight.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert layer.bias.tolist() == [6.0, 7.0, 8.0]
    assert isinstance(layer.weight, gnn.Parameter)


@needs_torch
def test_parameters_to_vector_matches_torch_and_errors():
    torch_layer = torch.nn.Linear(2, 2)
    gt_layer = gnn.Linear(2, 2)
    gt_layer.load_state_dict(
        {k: gt.tensor(v.detach().cpu().numpy()) for k, v in torch_layer.state_dict().items()}
    )
    assert_close(
        gnn.utils.parameters_to_vector(gt_layer.parameters()).detach(),
        torch.nn.utils.parameters_to_vector(torch_layer.parameters()),
    )
    gt_error = assert_same_error(
        lambda: gnn.utils.vector_to_parameters(3, [gt_layer.weight]),
        lambda: torch.nn.utils.vector_to_parameters(3, [torch_layer.weight]),
        exc_type=TypeError,
    )
    assert str(gt_error) == "expected torch.Tensor, but got: int"


def test_legacy_reduction_arguments_are_translated():
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert gnn.MSELoss(size_average=False).reduction == "sum"
        assert gnn.L1Loss(None, False).reduction == "none"
        assert gnn.CrossEntropyLoss(None, True).reduction == "mean"
