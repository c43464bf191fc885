"""nn layers and activations: forward values and gradients against PyTorch (with the
same weights copied in), closed forms with NumPy, and gradcheck in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck, gradgradcheck

# Every test makes its inputs on the device under test (conftest: --device).
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(1234)


def from_torch(tensor):
    """A glasstorch copy of a PyTorch tensor (0-d tensors stay 0-d)."""
    return gt.from_numpy(np.array(tensor.detach().numpy(), copy=True)).to(TEST_DEVICE)


def values(*shape, dtype=np.float32, low=-2.0, high=2.0):
    """Random test values away from 0 (where several activations have a kink)."""
    x = RNG.uniform(low, high, size=shape)
    x = np.where(np.abs(x) < 0.05, 0.3, x)
    return x.astype(dtype)


def run_both(gt_layer, torch_layer, x: np.ndarray, *, rtol=None, atol=None):
    """Copy torch's state into gt_layer, run both on ``x``, backprop the same
    random gradient, and compare outputs, input gradients and parameter gradients."""
    gt_layer.to(TEST_DEVICE)
    gt_layer.load_state_dict({k: from_torch(v) for k, v in torch_layer.state_dict().items()})
    xt = torch.tensor(x, requires_grad=x.dtype.kind == "f")
    xg = gt.tensor(x, requires_grad=x.dtype.kind == "f", device=TEST_DEVICE)
    yt, yg = torch_layer(xt), gt_layer(xg)
    assert_close(yg, yt, rtol=rtol, atol=atol)
    seed = RNG.standard_normal(tuple(yt.shape)).astype(np.float64)
    yt.backward(torch.tensor(seed, dtype=yt.dtype))
    yg.backward(gt.tensor(seed, device=TEST_DEVICE).to(yg.dtype))
    if xt.requires_grad:
        assert_close(xg.grad, xt.grad, rtol=rtol, atol=atol)
    torch_params = dict(torch_layer.named_parameters())
    for name, param in gt_layer.named_parameters():
        assert_close(param.grad, torch_params[name].grad, rtol=rtol, atol=atol)
    return yg, yt


# -------------------------------------------------------------------- Linear


def test_linear_default_initialisation_bounds():
    gt.manual_seed(0)
    layer = gnn.Linear(16, 8)
    bound = 1 / math.sqrt(16)
    weight, bias = layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy()
    assert weight.shape == (8, 16) and bias.shape == (8,)
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    assert np.abs(weight).max() > 0.8 * bound  # spread over the whole range
    assert layer.weight.dtype is gt.float32
    assert gnn.Linear(2, 2, dtype=gt.float64).weight.dtype is gt.float64
    assert gnn.Linear(2, 2, bias=False).bias is None


@needs_torch
@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 2, 3)])
def test_linear_matches_torch(shape):
    run_both(gnn.Linear(3, 2), torch.nn.Linear(3, 2), values(*shape))
    run_both(gnn.Linear(3, 2, bias=False), torch.nn.Linear(3, 2, bias=False), values(*shape))


@needs_torch
def test_linear_shape_error_matches_torch(device):
    assert_same_error(
        lambda: gnn.Linear(2, 3)(gt.ones(4, 3, device=device)),
        lambda: torch.nn.Linear(2, 3)(torch.ones(4, 3)),
        match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x3\)",
    )


def test_linear_closed_form_and_gradcheck(device):
    layer = gnn.Linear(3, 2, dtype=gt.float64, device=device)
    x = values(4, 3, dtype=np.float64)
    expected = x @ layer.weight.detach().cpu().numpy().T + layer.bias.detach().cpu().numpy()
    assert_close(layer(gt.tensor(x, device=device)).detach(), expected)
    xg = gt.tensor(x, requires_grad=True, device=device)
    assert gradcheck(lambda a, w, b: F.linear(a, w, b), (xg, layer.weight, layer.bias))


# ------------------------------------------------------------------ Embedding


@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_matches_torch_and_padding_row_gets_no_gradient(padding_idx):
    torch_layer = torch.nn.Embedding(5, 3, padding_idx=padding_idx)
    gt_layer = gnn.Embedding(5, 3, padding_idx=padding_idx)
    indices = np.array([[0, 1, 4], [1, 1, 2]])
    run_both(gt_layer, torch_layer, indices)
    if padding_idx is not None:
        row = padding_idx % 5
        assert gt_layer.weight.grad[row].tolist() == [0.0, 0.0, 0.0]


def test_embedding_initialisation_and_padding_row(device):
    gt.manual_seed(3)
    table = gnn.Embedding(50, 4, padding_idx=2, device=device)
    weight = table.weight.detach().cpu().numpy()
    assert np.all(weight[2] == 0)
    others = np.delete(weight, 2, axis=0)
    assert abs(others.mean()) < 0.25 and 0.7 < others.std() < 1.3  # N(0, 1)
    out = table(gt.tensor([2, 3], device=device))
    assert out.shape == (2, 4) and out[0].tolist() == [0.0] * 4


@needs_torch
def test_embedding_errors_match_torch(device):
    assert_same_error(
        lambda: gnn.Embedding(3, 2, device=device)(gt.tensor([3], device=device)),
        lambda: torch.nn.Embedding(3, 2)(torch.tensor([3])),
        match="index out of range in self",
    )
    gt_error = assert_same_error(
        lambda: gnn.Embedding(3, 2, device=device)(gt.tensor([1.0], device=device)),
        lambda: torch.nn.Embedding(3, 2)(torch.tensor([1.0])),
        match="Expected tensor for argument #1 'indices'",
    )
    assert gt.tensor([1.0], device=device).type() in str(gt_error)  # torch.[cuda.]FloatTensor
    assert_same_error(
        lambda: gnn.Embedding(3, 2, padding_idx=3),
        lambda: torch.nn.Embedding(3, 2, padding_idx=3),
        exc_type=AssertionError,
    )


def test_embedding_from_pretrained_is_frozen(device):
    table = gnn.Embedding.from_pretrained(gt.tensor([[1.0, 2.0], [3.0, 4.0]], device=device))
    assert not table.weight.requires_grad
    assert table(gt.tensor([1], device=device)).tolist() == [[3.0, 4.0]]


# -------------------------------------------------------------------- Dropout


def test_dropout_train_zeroes_and_scales(device):
    gt.manual_seed(0)
    layer = gnn.Dropout(p=0.25)
    x = gt.ones(400, requires_grad=True, device=device)
    out = layer(x)
    kept = out.detach().cpu().numpy() != 0
    assert np.allclose(out.detach().cpu().numpy()[kept], 1 / 0.75)
    assert 0.15 < 1 - kept.mean() < 0.35
    out.sum().backward()
    assert np.allclose(x.grad.cpu().numpy(), np.where(kept, 1 / 0.75, 0.0))


def test_dropout_eval_and_edge_probabilities(device):
    x = gt.ones(3, device=device)
    layer = gnn.Dropout(0.5)
    layer.eval()
    assert layer(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).tolist() == [0.0, 0.0, 0.0]


def test_dropout_is_repeatable_with_manual_seed(device):
    gt.manual_seed(5)
    first = F.dropout(gt.ones(20, device=device)).tolist()
    gt.manual_seed(5)
    assert F.dropout(gt.ones(20, device=device)).tolist() == first


def test_dropout_inplace_writes_into_input(device):
    gt.manual_seed(1)
    x = gt.ones(10, device=device)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x and set(x.tolist()) <= {0.0, 2.0}


@needs_torch
def test_dropout_probability_error_matches_torch():
    assert_same_error(
        lambda: gnn.Dropout(1.5),
        lambda: torch.nn.Dropout(1.5),
        match="dropout probability has to be between 0 and 1, but got 1.5",
    )


# ----------------------------------------------------------------- LayerNorm


@needs_torch
@pytest.mark.parametrize(
    "shape, normalized, kwargs",
    [
        ((4, 3), 3, {}),
        ((2, 3, 4), (3, 4), {"eps": 1e-3}),
        ((2, 5), 5, {"elementwise_affine": False}),
        ((2, 5), 5, {"bias": False}),
    ],
)
def test_layer_norm_matches_torch(shape, normalized, kwargs):
    torch.manual_seed(0)  # the affine parameters below, the same in every run
    torch_layer = torch.nn.LayerNorm(normalized, **kwargs)
    with torch.no_grad():
        for p in torch_layer.parameters():
            p.uniform_(0.5, 1.5)
    run_both(gnn.LayerNorm(normalized, **kwargs), torch_layer, values(*shape), atol=1e-5)


def test_layer_norm_closed_form_and_gradcheck(device):
    x = values(3, 4, dtype=np.float64)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    assert_close(
        gnn.LayerNorm(4, dtype=gt.float64, device=device)(gt.tensor(x, device=device)).detach(),
        expected,
    )
    w = gt.tensor(values(4, dtype=np.float64), requires_grad=True, device=device)
    b = gt.tensor(values(4, dtype=np.float64), requires_grad=True, device=device)
    xg = gt.tensor(x, requires_grad=True, device=device)
    assert gradcheck(lambda a, w, b: F.layer_norm(a, (4,), w, b), (xg, w, b))


@needs_torch
def test_layer_norm_shape_error_matches_torch(device):
    gt_error = assert_same_error(
        lambda: gnn.LayerNorm(3)(gt.ones(4, 2, device=device)),
        lambda: torch.nn.LayerNorm(3)(torch.ones(4, 2)),
    )
    with pytest.raises(RuntimeError) as torch_error:
        torch.nn.LayerNorm(3)(torch.ones(4, 2))
    assert str(gt_error) == str(torch_error.value)


# --------------------------------------------------------------- BatchNorm1d


def test_batch_norm_initial_state():
    bn = gnn.BatchNorm1d(3)
    state = bn.state_dict()
    assert list(state) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert state["weight"].tolist() == [1.0] * 3 and state["bias"].tolist() == [0.0] * 3
    assert state["running_mean"].tolist() == [0.0] * 3
    assert state["running_var"].tolist() == [1.0] * 3
    assert state["num_batches_tracked"].dtype is gt.int64
    assert state["num_batches_tracked"].shape == ()


@needs_torch
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_training_steps_and_eval_match_torch(shape, momentum):
    torch_bn = torch.nn.BatchNorm1d(3, momentum=momentum)
    gt_bn = gnn.BatchNorm1d(3, momentum=momentum)
    with torch.no_grad():
        torch_bn.weight.uniform_(0.5, 1.5)
        torch_bn.bias.uniform_(-0.5, 0.5)
    gt_bn.load_state_dict({k: from_torch(v) for k, v in torch_bn.state_dict().items()})
    for _ in range(2):  # two training steps move the running statistics
        x = values(*shape)
        torch_bn.zero_grad()
        gt_bn.zero_grad()
        run_both(gt_bn, torch_bn, x, atol=1e-5)
        gt_bn_state = gt_bn.state_dict()
        for name, value in torch_bn.state_dict().items():
            assert_close(gt_bn_state[name], value, atol=1e-6)
    torch_bn.eval()
    gt_bn.eval()
    run_both(gt_bn, torch_bn, values(*shape), atol=1e-5)
    assert gt_bn.num_batches_tracked.item() == 2


@needs_torch
def test_batch_norm_without_affine_or_running_stats_matches_torch():
    torch_bn = torch.nn.BatchNorm1d(2, affine=False, track_running_stats=False)
    gt_bn = gnn.BatchNorm1d(2, affine=False, track_running_stats=False)
    assert list(gt_bn.state_dict()) == []
    run_both(gt_bn, torch_bn, values(4, 2))
    torch_bn.eval()
    gt_bn.eval()
    run_both(gt_bn, torch_bn, values(4, 2))  # still batch statistics


@needs_torch
@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 2, 2), (2, 4)])
def test_batch_norm_errors_match_torch(shape, device):
    gt_error = assert_same_error(
        lambda: gnn.BatchNorm1d(3)(gt.ones(*shape, device=device)),
        lambda: torch.nn.BatchNorm1d(3)(torch.ones(*shape)),
    )
    with pytest.raises(Exception) as torch_error:
        torch.nn.BatchNorm1d(3)(torch.ones(*shape))
    assert str(gt_error) == str(torch_error.value)


def test_batch_norm_gradcheck(device):
    x = gt.tensor(values(4, 2, 3, dtype=np.float64), requires_grad=True, device=device)
    w = gt.tensor([1.5, 0.5], dtype=gt.float64, requires_grad=True, device=device)
    b = gt.tensor([0.1, -0.2], dtype=gt.float64, requires_grad=True, device=device)
    assert gradcheck(lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True), (x, w, b))


# ---------------------------------------------------------- shape utilities


def test_flatten_unflatten_identity(device):
    x = gt.arange(24.0, device=device).reshape(2, 3, 4)
    assert gnn.Flatten()(x).shape == (2, 12)
    assert gnn.Flatten(0, 1)(x).shape == (6, 4)
    assert gnn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert gnn.Identity(54, unused="x")(x) is x


# ---------------------------------------------------------------- activations


def _np_erf(x):
    return np.vectorize(math.erf)(x)


#: name -> (glasstorch module, torch module factory or None, NumPy closed form)
ACTIVATIONS = {
    "relu": (lambda nn: nn.ReLU(), lambda x: np.maximum(x, 0)),
    "leaky_relu": (lambda nn: nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "gelu": (lambda nn: nn.GELU(), lambda x: 0.5 * x * (1 + _np_erf(x / math.sqrt(2)))),
    "gelu_tanh": (
        lambda nn: nn.GELU(approximate="tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    "silu": (lambda nn: nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    "elu": (lambda nn: nn.ELU(alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "softplus": (lambda nn: nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    "softplus_beta": (
        lambda nn: nn.Softplus(beta=2.0, threshold=3.0),
        lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2),
    ),
    "tanh": (lambda nn: nn.Tanh(), np.tanh),
    "sigmoid": (lambda nn: nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    "logsigmoid": (lambda nn: nn.LogSigmoid(), lambda x: -np.log1p(np.exp(-x))),
    "softmax": (
        lambda nn: nn.Softmax(dim=1),
        lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True),
    ),
    "log_softmax": (
        lambda nn: nn.LogSoftmax(dim=1),
        lambda x: x - np.log(np.exp(x).sum(1, keepdims=True)),
    ),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_closed_form(name, device):
    factory, formula = ACTIVATIONS[name]
    x = values(3, 4, dtype=np.float64, low=-4, high=4)
    assert_close(factory(gnn)(gt.tensor(x, device=device)), formula(x))


@needs_torch
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_matches_torch(name, dtype):
    factory, _ = ACTIVATIONS[name]
    x = values(3, 4, dtype=dtype, low=-4, high=4)
    yg, yt = run_both(factory(gnn), factory(torch.nn), x)
    assert yg.grad_fn is not None


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck(name, device):
    factory, _ = ACTIVATIONS[name]
    x = gt.tensor(values(2, 3, dtype=np.float64), requires_grad=True, device=device)
    assert gradcheck(factory(gnn), (x,))


@needs_torch
@pytest.mark.parametrize(
    "name, call",
    [
        ("relu", lambda F, x: F.relu(x, inplace=True)),
        ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.1, inplace=True)),
        ("elu", lambda F, x: F.elu(x, inplace=True)),
        ("silu", lambda F, x: F.silu(x, inplace=True)),
    ],
)
def test_inplace_activations_match_torch(name, call, device):
    x = values(2, 3)
    leaf_t = torch.tensor(x, requires_grad=True)
    leaf_g = gt.tensor(x, requires_grad=True, device=device)
    xt, xg = leaf_t * 1, leaf_g * 1
    out_t, out_g = call(torch.nn.functional, xt), call(F, xg)
    assert out_g is xg
    assert_close(xg, out_t)
    out_t.sum().backward()
    out_g.sum().backward()
    assert_close(leaf_g.grad, leaf_t.grad)


@needs_torch
def test_grad_fn_names_match_torch(device):
    x = values(2, 2)
    for call in (
        lambda F, x: F.leaky_relu(x),
        lambda F, x: F.gelu(x),
        lambda F, x: F.silu(x),
        lambda F, x: F.elu(x),
        lambda F, x: F.softplus(x),
        lambda F, x: F.logsigmoid(x),
        lambda F, x: F.relu(x),
    ):
        yt = call(torch.nn.functional, torch.tensor(x, requires_grad=True))
        yg = call(F, gt.tensor(x, requires_grad=True, device=device))
        assert yg.grad_fn.name() == type(yt.grad_fn).__name__


def test_erf_is_accurate_in_float64(device):
    x = np.linspace(-6, 6, 241)
    result = F.erf(gt.tensor(x, device=device)).cpu().numpy()
    np.testing.assert_allclose(result, _np_erf(x), rtol=1e-13, atol=1e-15)
    xg = gt.tensor(
        values(5, dtype=np.float64, low=-3.5, high=3.5), requires_grad=True, device=device
    )
    assert gradcheck(F.erf, (xg,))


def test_softplus_is_linear_above_threshold(device):
    x = gt.tensor([30.0, 100.0], requires_grad=True, device=device)
    y = F.softplus(x)
    assert y.tolist() == [30.0, 100.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_implicit_softmax_dim_warns(device):
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(gt.zeros(2, 2, device=device))
    assert out.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_gelu_rejects_unknown_approximation(device):
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        gnn.GELU("foo")(gt.ones(1, device=device))


def test_one_hot(device):
    encoded = F.one_hot(gt.tensor([0, 2, 1], device=device), 4)
    assert encoded.dtype is gt.int64
    assert encoded.tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    assert F.one_hot(gt.tensor([1, 2], device=device)).shape == (2, 3)


# -------------------------------------------------------- a small model end to end


@needs_torch
def test_mlp_forward_backward_matches_torch():
    def build(nn):
        return nn.Sequential(
            nn.Linear(4, 5), nn.LayerNorm(5), nn.GELU(), nn.Linear(5, 3), nn.LogSoftmax(dim=1)
        )

    run_both(build(gnn), build(torch.nn), values(3, 4), atol=1e-5)


@needs_torch
def test_training_loop_follows_torch_step_by_step(device):
    """A classifier trained with plain gradient steps gives torch's loss curve."""

    def build(nn):
        return nn.Sequential(
            nn.Linear(3, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Dropout(0.0), nn.Linear(6, 3)
        )

    torch_model, gt_model = build(torch.nn), build(gnn).to(device)
    gt_model.load_state_dict({k: from_torch(v) for k, v in torch_model.state_dict().items()})
    x = values(8, 3)
    y = RNG.integers(0, 3, size=8)
    torch_loss_fn, gt_loss_fn = torch.nn.CrossEntropyLoss(), gnn.CrossEntropyLoss()
    for _ in range(15):
        losses = []
        for model, lib, loss_fn in (
            (torch_model, torch, torch_loss_fn),
            (gt_model, gt, gt_loss_fn),
        ):
            model.zero_grad()
            on = {"device": device} if lib is gt else {}
            loss = loss_fn(model(lib.tensor(x, **on)), lib.tensor(y, **on))
            loss.backward()
            with lib.no_grad():
                for p in model.parameters():
                    p -= 0.5 * p.grad
            losses.append(loss)
        assert_close(losses[1].detach(), losses[0].detach(), rtol=1e-4, atol=1e-5)
    torch_model.eval()
    gt_model.eval()
    assert_close(
        gt_model(gt.tensor(x, device=device)).detach(), torch_model(torch.tensor(x)), atol=1e-4
    )


def test_linear_on_a_batch_is_one_addmm_node_with_correct_gradients(device):
    x = gt.tensor(values(4, 3, dtype=np.float64), requires_grad=True, device=device)
    w = gt.tensor(values(2, 3, dtype=np.float64), requires_grad=True, device=device)
    b = gt.tensor(values(2, dtype=np.float64), requires_grad=True, device=device)
    out = F.linear(x, w, b)
    assert type(out.grad_fn).__name__ == "AddmmBackward0"  # PyTorch's name for this node
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))
    if torch is not None:
        tensors = [torch.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (x, w, b)]
        assert type(torch.nn.functional.linear(*tensors).grad_fn).__name__ == "AddmmBackward0"


def test_batch_norm_without_bias_keeps_only_the_weight():
    """bias=False: the output is the normalised input times the weight, nothing added."""
    bn = gnn.BatchNorm1d(2, bias=False)
    assert bn.bias is None and [name for name, _ in bn.named_parameters()] == ["weight"]
    with gt.no_grad():
        bn.weight.copy_(gt.tensor([2.0, 3.0]))
    x = np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 2.0]], dtype=np.float32)
    normalised = (x - x.mean(0)) / np.sqrt(x.var(0) + bn.eps)
    out = bn(gt.tensor(x, device=TEST_DEVICE))
    assert_close(out, (normalised * np.array([2.0, 3.0])).astype(np.float32), rtol=1e-5, atol=1e-5)
