"""Recurrent layers and cells: RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell.

Each layer is compared with PyTorch from the same weights (the state dict copied
across through NumPy): outputs, final states, and the gradients of the input,
the initial states and every parameter. Shapes are tiny, so that the pure-Python
reference tier runs the file in seconds; gradcheck runs in float64.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from compare import close_on_device, copy_parameters
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as gnn
from glasstorch.autograd import gradcheck
from glasstorch.nn.utils import rnn as gt_rnn

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(2024)
TOL = {"rtol": 1e-4, "atol": 1e-5}

# Each kind: glasstorch's and PyTorch's constructors, and extra keyword arguments.
KINDS = {
    "rnn_tanh": ("RNN", {}),
    "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
    "lstm": ("LSTM", {}),
    "gru": ("GRU", {}),
}


def from_torch(tensor):
    return gt.from_numpy(np.array(tensor.detach().numpy(), copy=True)).to(TEST_DEVICE)


def values(*shape, dtype=np.float32):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def make_pair(kind: str, *args, **kwargs):
    """The same layer in glasstorch and PyTorch, with PyTorch's weights in both."""
    name, extra = KINDS[kind]
    theirs = getattr(torch.nn, name)(*args, **extra, **kwargs)
    ours = getattr(gnn, name)(*args, **extra, **kwargs)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


def leaf_pair(array: np.ndarray):
    return gt.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def compare_grads(ours, theirs, leaves):
    """Compare the gradients of the given leaf pairs and of every parameter."""
    for g, t in leaves:
        assert_close(g.grad, t.grad, **TOL)
    theirs_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        assert_close(param.grad, theirs_params[name].grad, **TOL)


def backprop_same(outputs_gt, outputs_torch):
    """Backpropagate the same random weighting of every output through both."""
    total_gt, total_torch = 0, 0
    for g, t in zip(outputs_gt, outputs_torch):
        weights = RNG.standard_normal(tuple(t.shape)).astype(np.float32)
        total_gt = total_gt + (g * gt.tensor(weights)).sum()
        total_torch = total_torch + (t * torch.tensor(weights)).sum()
    total_gt.backward()
    total_torch.backward()


# ------------------------------------------------------------- parameters


@needs_torch
@pytest.mark.parametrize("kind", list(KINDS))
def test_parameter_names_shapes_and_repr_match_torch(kind):
    ours, theirs = make_pair(kind, 3, 4, 2, bias=False, batch_first=True, bidirectional=True)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert repr(ours) == repr(theirs)
    ours, theirs = make_pair(kind, 3, 4, 2, dropout=0.25)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    assert len(ours.all_weights) == 2 and len(ours.all_weights[0]) == 4


@pytest.mark.parametrize("name, gates", [("RNN", 1), ("LSTM", 4), ("GRU", 3)])
def test_default_initialisation_is_uniform_in_one_over_sqrt_hidden(name, gates):
    gt.manual_seed(0)
    layer = getattr(gnn, name)(5, 16)
    bound = 1 / math.sqrt(16)
    assert tuple(layer.weight_ih_l0.shape) == (gates * 16, 5)
    assert tuple(layer.weight_hh_l0.shape) == (gates * 16, 16)
    for param in layer.parameters():
        data = param.detach().cpu().numpy()
        assert np.abs(data).max() <= bound
        assert np.abs(data).max() > 0.7 * bound
    assert getattr(gnn, name)(2, 3, dtype=gt.float64).weight_hh_l0.dtype is gt.float64


# ------------------------------------------------------- against PyTorch


CONFIGS = [
    pytest.param({}, True, id="one-layer-with-h0"),
    pytest.param({"num_layers": 2, "bidirectional": True}, True, id="two-layers-bidirectional"),
    pytest.param({"batch_first": True, "bias": False}, False, id="batch-first-no-bias"),
]


@needs_torch
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("config, with_state", CONFIGS)
def test_layer_matches_torch_forward_and_backward(kind, config, with_state):
    steps, batch, features, hidden = 3, 2, 3, 4
    ours, theirs = make_pair(kind, features, hidden, **config)
    shape = (batch, steps, features) if config.get("batch_first") else (steps, batch, features)
    x_gt, x_t = leaf_pair(values(*shape))
    leaves = [(x_gt, x_t)]
    states_gt = states_t = None
    if with_state:
        layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
        pairs = [
            leaf_pair(values(layers, batch, hidden)) for _ in range(2 if kind == "lstm" else 1)
        ]
        leaves += pairs
        states_gt = tuple(p[0] for p in pairs) if kind == "lstm" else pairs[0][0]
        states_t = tuple(p[1] for p in pairs) if kind == "lstm" else pairs[0][1]
    out_gt, last_gt = ours(x_gt, states_gt)
    out_t, last_t = theirs(x_t, states_t)
    last_gt = last_gt if kind == "lstm" else (last_gt,)
    last_t = last_t if kind == "lstm" else (last_t,)
    assert_close(out_gt, out_t, **TOL)
    for g, t in zip(last_gt, last_t):
        assert_close(g, t, **TOL)
    backprop_same([out_gt, *last_gt], [out_t, *last_t])
    compare_grads(ours, theirs, leaves)


@needs_torch
@pytest.mark.parametrize("kind", list(KINDS))
def test_unbatched_input_matches_torch(kind):
    ours, theirs = make_pair(kind, 3, 2, bidirectional=True)
    x_gt, x_t = leaf_pair(values(4, 3))
    out_gt, last_gt = ours(x_gt)
    out_t, last_t = theirs(x_t)
    assert tuple(out_gt.shape) == (4, 4)
    assert_close(out_gt, out_t, **TOL)
    first_gt = last_gt[0] if kind == "lstm" else last_gt
    first_t = last_t[0] if kind == "lstm" else last_t
    assert tuple(first_gt.shape) == (2, 2)
    assert_close(first_gt, first_t, **TOL)
    backprop_same([out_gt, first_gt], [out_t, first_t])
    compare_grads(ours, theirs, [(x_gt, x_t)])


@needs_torch
def test_unbatched_lstm_with_initial_state_matches_torch():
    ours, theirs = make_pair("lstm", 2, 3)
    x = values(3, 2)
    h0, c0 = values(1, 3), values(1, 3)
    out_gt, (h_gt, c_gt) = ours(gt.tensor(x), (gt.tensor(h0), gt.tensor(c0)))
    out_t, (h_t, c_t) = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    assert_close(out_gt, out_t, **TOL)
    assert_close(c_gt, c_t, **TOL)


@needs_torch
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_dropout_between_layers(kind):
    """Dropout acts on every layer's output but the last's, and only in training:
    with p = 1 the second layer sees zeros, in glasstorch as in PyTorch."""
    ours, theirs = make_pair(kind, 3, 2, num_layers=2, dropout=1.0)
    x = values(3, 2, 3)
    out_gt, _ = ours(gt.tensor(x))
    out_t, _ = theirs(torch.tensor(x))
    assert_close(out_gt, out_t, **TOL)
    ours.eval()
    theirs.eval()
    assert_close(ours(gt.tensor(x))[0], theirs(torch.tensor(x))[0], **TOL)
    assert not np.allclose(
        ours(gt.tensor(x))[0].detach().cpu().numpy(), out_gt.detach().cpu().numpy()
    )


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        gnn.LSTM(2, 3, dropout=0.5)


def test_gru_candidate_applies_reset_gate_to_hidden_bias():
    """PyTorch's GRU: ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, checked by hand."""
    cell = gnn.GRUCell(1, 1)
    with gt.no_grad():
        cell.weight_ih.copy_(gt.tensor([[0.5], [-0.25], [1.0]]))
        cell.weight_hh.copy_(gt.tensor([[0.3], [0.2], [-0.7]]))
        cell.bias_ih.copy_(gt.tensor([0.1, 0.2, 0.3]))
        cell.bias_hh.copy_(gt.tensor([-0.1, 0.4, 0.6]))
    x, h = 0.8, -0.5
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    r = sig(0.5 * x + 0.1 + 0.3 * h - 0.1)
    z = sig(-0.25 * x + 0.2 + 0.2 * h + 0.4)
    n = math.tanh(1.0 * x + 0.3 + r * (-0.7 * h + 0.6))
    expected = (1 - z) * n + z * h
    got = cell(gt.tensor([[x]]), gt.tensor([[h]]))
    assert abs(got.item() - expected) < 1e-6


# ------------------------------------------------------------------ cells


CELLS = {
    "RNNCell": {},
    "RNNCell-relu": {"nonlinearity": "relu"},
    "LSTMCell": {},
    "GRUCell": {},
}


def make_cell_pair(key: str, *args, **kwargs):
    name = key.split("-")[0]
    extra = CELLS[key]
    theirs = getattr(torch.nn, name)(*args, **extra, **kwargs)
    ours = getattr(gnn, name)(*args, **extra, **kwargs)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("key", list(CELLS))
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch(key, batched):
    ours, theirs = make_cell_pair(key, 3, 4)
    assert repr(ours) == repr(theirs)
    shape = (2,) if batched else ()
    x_gt, x_t = leaf_pair(values(*shape, 3))
    state_pairs = [leaf_pair(values(*shape, 4)) for _ in range(2 if key == "LSTMCell" else 1)]
    if key == "LSTMCell":
        out_gt = ours(x_gt, tuple(p[0] for p in state_pairs))
        out_t = theirs(x_t, tuple(p[1] for p in state_pairs))
    else:
        out_gt, out_t = (ours(x_gt, state_pairs[0][0]),), (theirs(x_t, state_pairs[0][1]),)
    for g, t in zip(out_gt, out_t):
        assert_close(g, t, **TOL)
    backprop_same(list(out_gt), list(out_t))
    compare_grads(ours, theirs, [(x_gt, x_t), *state_pairs])


@needs_torch
@pytest.mark.parametrize("key", list(CELLS))
def test_cell_without_state_or_bias_matches_torch(key):
    ours, theirs = make_cell_pair(key, 3, 2, bias=False)
    assert ours.bias_ih is None and ours.bias_hh is None
    x = values(2, 3)
    out_gt, out_t = ours(gt.tensor(x)), theirs(torch.tensor(x))
    if key != "LSTMCell":
        out_gt, out_t = (out_gt,), (out_t,)
    for g, t in zip(out_gt, out_t):
        assert_close(g, t, **TOL)


# -------------------------------------------------------------- gradcheck


@pytest.mark.gradcheck
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_layer_gradcheck(name):
    gt.manual_seed(3)
    layer = getattr(gnn, name)(2, 2, bidirectional=True, dtype=gt.float64)
    x = gt.tensor(values(2, 1, 2, dtype=np.float64), requires_grad=True)
    h0 = gt.tensor(values(2, 1, 2, dtype=np.float64), requires_grad=True)
    params = list(layer.parameters())

    def run(x, h0, *weights):
        state = (h0, h0 * 0.5) if name == "LSTM" else h0
        out, _ = layer(x, state)
        return out

    assert gradcheck(run, (x, h0, *params))


@pytest.mark.gradcheck
@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_gradcheck(name):
    gt.manual_seed(4)
    cell = getattr(gnn, name)(2, 3, dtype=gt.float64)
    x = gt.tensor(values(2, 2, dtype=np.float64), requires_grad=True)
    h = gt.tensor(values(2, 3, dtype=np.float64), requires_grad=True)

    def run(x, h, *weights):
        if name == "LSTMCell":
            return cell(x, (h, h.tanh()))[1]
        return cell(x, h)

    assert gradcheck(run, (x, h, *cell.parameters()))


# ------------------------------------------------------------------ errors


@needs_torch
@pytest.mark.errors
def test_layer_errors_match_torch():
    for name in ("LSTM", "GRU", "RNN"):
        assert_same_error(
            lambda name=name: getattr(gnn, name)(4, 3)(gt.zeros(2, 2, 2, 4)),
            lambda name=name: getattr(torch.nn, name)(4, 3)(torch.zeros(2, 2, 2, 4)),
            match=re.escape(f"{name}: Expected input to be 2D or 3D, got 4D")
            + ("( tensor)? instead"),
        )
        assert_same_error(
            lambda name=name: getattr(gnn, name)(4, 3)(gt.zeros(2, 2, 5)),
            lambda name=name: getattr(torch.nn, name)(4, 3)(torch.zeros(2, 2, 5)),
            match=re.escape("input.size(-1) must be equal to input_size. Expected 4, got 5"),
        )
    assert_same_error(
        lambda: gnn.GRU(4, 3)(gt.zeros(2, 2, 4), gt.zeros(1, 3, 3)),
        lambda: torch.nn.GRU(4, 3)(torch.zeros(2, 2, 4), torch.zeros(1, 3, 3)),
        match=re.escape("Expected hidden size (1, 2, 3), got [1, 3, 3]"),
    )
    assert_same_error(
        lambda: gnn.LSTM(4, 3)(gt.zeros(2, 2, 4), (gt.zeros(1, 2, 3), gt.zeros(1, 3, 3))),
        lambda: torch.nn.LSTM(4, 3)(
            torch.zeros(2, 2, 4), (torch.zeros(1, 2, 3), torch.zeros(1, 3, 3))
        ),
        match=re.escape("Expected hidden[1] size (1, 2, 3), got [1, 3, 3]"),
    )
    assert_same_error(
        lambda: gnn.RNN(4, 3)(gt.zeros(2, 4), gt.zeros(1, 1, 3)),
        lambda: torch.nn.RNN(4, 3)(torch.zeros(2, 4), torch.zeros(1, 1, 3)),
        match=re.escape("For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    )
    assert_same_error(
        lambda: gnn.LSTM(4, 3)(gt.zeros(3, 2, 4), (gt.zeros(2, 3), gt.zeros(2, 3))),
        lambda: torch.nn.LSTM(4, 3)(torch.zeros(3, 2, 4), (torch.zeros(2, 3), torch.zeros(2, 3))),
        match=re.escape(
            "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors"
        ),
    )


@needs_torch
@pytest.mark.errors
def test_constructor_errors_match_torch():
    cases = [
        (("RNN", (4, 3), {"nonlinearity": "foo"}), "Unknown nonlinearity 'foo'"),
        (("LSTM", (4, 3), {"dropout": 2}), "dropout should be a number in range"),
        (("GRU", (4, 0), {}), "hidden_size must be greater than zero"),
        (("LSTM", (4, 3), {"num_layers": 0}), "num_layers must be greater than zero"),
        (("RNN", (4.0, 3), {}), "input_size should be of type int, got: float"),
    ]
    for case, message in cases:
        assert_same_error(
            lambda case=case: getattr(gnn, case[0])(*case[1], **case[2]),
            lambda case=case: getattr(torch.nn, case[0])(*case[1], **case[2]),
            match=re.escape(message),
        )


@needs_torch
@pytest.mark.errors
def test_cell_errors_match_torch():
    assert_same_error(
        lambda: gnn.LSTMCell(4, 3)(gt.zeros(2, 2, 4)),
        lambda: torch.nn.LSTMCell(4, 3)(torch.zeros(2, 2, 4)),
        match=re.escape("LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    )
    assert_same_error(
        lambda: gnn.GRUCell(4, 3)(gt.zeros(2, 5)),
        lambda: torch.nn.GRUCell(4, 3)(torch.zeros(2, 5)),
        match=re.escape("input has inconsistent input_size: got 5 expected 4"),
    )
    assert_same_error(
        lambda: gnn.LSTMCell(4, 3)(gt.zeros(2, 4), (gt.zeros(3, 3), gt.zeros(3, 3))),
        lambda: torch.nn.LSTMCell(4, 3)(torch.zeros(2, 4), (torch.zeros(3, 3), torch.zeros(3, 3))),
        match=re.escape("Input batch size 2 doesn't match hidden0 batch size 3"),
    )
    assert_same_error(
        lambda: gnn.RNNCell(4, 3)(gt.zeros(2, 4), gt.zeros(2, 2)),
        lambda: torch.nn.RNNCell(4, 3)(torch.zeros(2, 4), torch.zeros(2, 2)),
        match=re.escape("hidden0 has inconsistent hidden_size: got 2, expected 3"),
    )
    assert_same_error(
        lambda: gnn.GRUCell(4, 3)(gt.zeros(2, 4), gt.zeros(2, 3, 1)),
        lambda: torch.nn.GRUCell(4, 3)(torch.zeros(2, 4), torch.zeros(2, 3, 1)),
        match=re.escape("GRUCell: Expected hidden to be 1D or 2D, got 3D instead"),
    )


# ------------------------------------------------------------ a small program


@needs_torch
def test_char_lstm_training_steps_match_torch():
    """An embedding, a 2-layer LSTM and a linear head trained for two SGD steps,
    as in a character-level language model, from the same weights."""

    def build(lib):
        class CharModel(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(5, 3)
                self.lstm = lib.nn.LSTM(3, 4, num_layers=2, batch_first=True)
                self.head = lib.nn.Linear(4, 5)

            def forward(self, tokens):
                out, _ = self.lstm(self.embed(tokens))
                return self.head(out)

        return CharModel()

    theirs, ours = build(torch), build(gt)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    tokens = RNG.integers(0, 5, size=(2, 4))
    targets = RNG.integers(0, 5, size=(2, 4))
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.5)
    opt_g = gt.optim.SGD(ours.parameters(), lr=0.5)
    for _ in range(2):
        for lib, model, opt in ((torch, theirs, opt_t), (gt, ours, opt_g)):
            opt.zero_grad()
            logits = model(lib.tensor(tokens))
            loss = lib.nn.functional.cross_entropy(
                logits.reshape(-1, 5), lib.tensor(targets).reshape(-1)
            )
            loss.backward()
            opt.step()
        for p_t, p_g in zip(theirs.parameters(), ours.parameters()):
            assert_close(p_g, p_t, **TOL)


@pytest.mark.errors
def test_lstm_second_derivatives_are_refused_clearly():
    layer = gnn.LSTM(2, 2)
    out, _ = layer(gt.tensor(values(2, 1, 2)))
    with pytest.raises(RuntimeError, match="does not support second derivatives"):
        out.sum().backward(create_graph=True)


@pytest.mark.errors
@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_output_changed_in_place_before_backward_is_reported(batch_first):
    # The layer keeps its outputs for the backward pass (as oneDNN's does), so
    # changing them in place first is reported, never a silent wrong gradient;
    # the final states are copies and may be changed. (A bidirectional layer's
    # output is a new tensor, the two directions joined, so there it is allowed.)
    def run(T, nn, change):
        layer = nn.LSTM(2, 3, batch_first=batch_first)
        out, (h, c) = layer(T.tensor(values(2, 4, 2)))
        change(out, h)
        (out.sum() + h.sum()).backward()

    for lib, nn in ((gt, gnn), (torch, torch.nn)):
        run(lib, nn, lambda out, h: h.add_(1))
    assert_same_error(
        lambda: run(gt, gnn, lambda out, h: out.mul_(2)),
        lambda: run(torch, torch.nn, lambda out, h: out.mul_(2)),
        match="modified by an inplace operation",
    )


def test_lstm_backward_twice_needs_retain_graph():
    layer = gnn.LSTM(2, 3)
    out, _ = layer(gt.tensor(values(4, 1, 2)))
    loss = out.sum()
    loss.backward(retain_graph=True)
    first = np.array(layer.weight_hh_l0.grad.tolist())
    loss.backward()
    np.testing.assert_allclose(layer.weight_hh_l0.grad.tolist(), 2 * first, rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


# -- Packed sequences and LSTM projections
X = RNG.standard_normal((5, 3, 4)).astype(np.float32)


# ------------------------------------------------------------- packed sequences
def test_pack_sequence_layout():
    packed = gt_rnn.pack_sequence([gt.tensor([1, 2, 3]), gt.tensor([4, 5])])
    assert packed.data.tolist() == [1, 4, 2, 5, 3]
    assert packed.batch_sizes.tolist() == [2, 2, 1] and packed.sorted_indices is None
    padded, lengths = gt_rnn.pad_packed_sequence(packed, batch_first=True, padding_value=-1)
    assert padded.tolist() == [[1, 2, 3], [4, 5, -1]] and lengths.tolist() == [3, 2]


@pytest.mark.errors
def test_pack_padded_sequence_unsorted_lengths_error():
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        gt_rnn.pack_padded_sequence(gt.tensor(X), [2, 5, 3])
    with pytest.raises(ValueError, match="total_length=2"):
        gt_rnn.pad_packed_sequence(
            gt_rnn.pack_padded_sequence(gt.tensor(X), [5, 3, 2]), total_length=2
        )


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_roundtrip_like_pytorch(batch_first):
    x = X.transpose(1, 0, 2).copy() if batch_first else X
    ours = gt_rnn.pack_padded_sequence(gt.tensor(x), [2, 5, 3], batch_first, False)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), [2, 5, 3], batch_first, False)
    close_on_device(ours.data, theirs.data)
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    assert ours.sorted_indices.tolist() == theirs.sorted_indices.tolist()
    assert ours.unsorted_indices.tolist() == theirs.unsorted_indices.tolist()
    a, la = gt_rnn.pad_packed_sequence(ours, batch_first, total_length=6)
    b, lb = torch.nn.utils.rnn.pad_packed_sequence(theirs, batch_first, total_length=6)
    close_on_device(a, b)
    assert la.tolist() == lb.tolist() and la.dtype == gt.int64


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_on_packed_input_like_pytorch(kind):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    ours = getattr(gt.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    copy_parameters(theirs, ours)
    h0 = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    th = (torch.tensor(h0), torch.tensor(-h0)) if kind == "LSTM" else torch.tensor(h0)
    gh = (gt.tensor(h0), gt.tensor(-h0)) if kind == "LSTM" else gt.tensor(h0)
    tx, gx = torch.tensor(X, requires_grad=True), gt.tensor(X, requires_grad=True)
    t_out, t_last = theirs(torch.nn.utils.rnn.pack_padded_sequence(tx, [2, 5, 3], False, False), th)
    g_out, g_last = ours(gt_rnn.pack_padded_sequence(gx, [2, 5, 3], False, False), gh)
    assert isinstance(g_out, gt_rnn.PackedSequence)
    close_on_device(g_out.data, t_out.data)
    t_last = t_last if isinstance(t_last, tuple) else (t_last,)
    g_last = g_last if isinstance(g_last, tuple) else (g_last,)
    for a, b in zip(g_last, t_last):
        close_on_device(a, b)
    (t_out.data.sum() + t_last[0].square().sum()).backward()
    (g_out.data.sum() + g_last[0].square().sum()).backward()
    close_on_device(gx.grad, tx.grad, rtol=1e-4)
    close_on_device(ours.weight_hh_l1_reverse.grad, theirs.weight_hh_l1_reverse.grad, rtol=1e-4)


# ------------------------------------------------------------- LSTM projections
@needs_torch
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_proj_size_like_pytorch(bias):
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, bias=bias)
    ours = gt.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, bias=bias)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_parameters(theirs, ours)
    tx, gx = torch.tensor(X, requires_grad=True), gt.tensor(X, requires_grad=True)
    t_out, (t_h, t_c) = theirs(tx)
    g_out, (g_h, g_c) = ours(gx)
    assert tuple(g_h.shape) == (4, 3, 3) and tuple(g_c.shape) == (4, 3, 6)
    for a, b in ((g_out, t_out), (g_h, t_h), (g_c, t_c)):
        close_on_device(a, b)
    (t_out.sum() + t_c.sum()).backward()
    (g_out.sum() + g_c.sum()).backward()
    close_on_device(gx.grad, tx.grad, rtol=1e-4)
    close_on_device(ours.weight_hr_l1.grad, theirs.weight_hr_l1.grad, rtol=1e-4)


@pytest.mark.errors
def test_lstm_proj_size_errors():
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        gt.nn.LSTM(4, 6, proj_size=6)
    with pytest.raises(ValueError, match="positive integer or zero"):
        gt.nn.LSTM(4, 6, proj_size=-1)
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 3\), got \[1, 3, 6\]"
    ):
        gt.nn.LSTM(4, 6, proj_size=3)(gt.zeros(5, 3, 4), (gt.zeros(1, 3, 6), gt.zeros(1, 3, 6)))
