"""Public-style PyTorch programs run unchanged on glasstorch, compared with PyTorch.

Each program in ``shared_tests/programs/`` is ordinary PyTorch code (``import torch``)
in the style of a well-known source: the PyTorch tutorials (quickstart, the 60-minute
blitz), pytorch/examples (mnist, word_language_model), d2l.ai, nn-zero-to-hero's
makemore lectures and nanoGPT. :func:`programs.loader.load` runs the same text once
with ``torch`` meaning glasstorch and once meaning PyTorch; the test gives both the
same weights (copied through ``state_dict``) and compares the losses and results.

Sizes are shrunk through the programs' own constants so the reference tier (pure
Python) stays quick. Random draws (dropout, sampling) differ between the libraries'
generators, so those parts are switched off or checked for their form only.
"""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pytest
from oracle import torch as real_torch
from programs.loader import load

# On a device run the programs that pick their device themselves (quickstart, mnist and
# nanoGPT ask ``torch.cuda.is_available()`` / ``torch.accelerator``) train there; the
# others make their tensors there through the default device (conftest: on_device).
pytestmark = pytest.mark.programs
DEFAULT_DEVICE = pytest.mark.usefixtures("default_device")

#: The programs that share memory with NumPy (``t.numpy()``, ``from_numpy``) on purpose.
NUMPY_SHARING = pytest.mark.cpu_only("the program shows tensors sharing memory with NumPy")

SMALL = {
    "quickstart": {"IMAGE": 6, "HIDDEN": 12, "SAMPLES": 24, "BATCH_SIZE": 8},
    "blitz": {"SAMPLES": 4, "BATCH": 4},
    "mnist": {"IMAGE": 8, "SAMPLES": 4},
    "word_language_model": {
        "NTOKEN": 20,
        "EMSIZE": 8,
        "NHID": 8,
        "BPTT": 5,
        "BATCH": 2,
        "CORPUS": 44,
    },  # fmt: skip
    "d2l": {},
    "makemore": {},
    "nanogpt": {},
}


def _programs(name: str):
    """The program ``name`` on glasstorch, and on PyTorch when it is installed (else None)."""
    mine = load(name, "glasstorch")
    theirs = load(name, "torch") if real_torch is not None else None
    for program in (mine, theirs):
        if program is not None:
            for key, value in SMALL[name].items():
                setattr(program, key, value)
    return mine, theirs


def _as_numpy(value):
    return value.detach().cpu().numpy().copy()


def _same_weights(source, target, library) -> None:
    """Load ``source``'s state dict (a PyTorch module) into ``target`` (a glasstorch module)."""
    state = {key: library.tensor(_as_numpy(value)) for key, value in source.state_dict().items()}
    target.load_state_dict(state)


def _no_dropout(model, library) -> None:
    """Switch off every dropout in ``model`` (the two libraries draw different masks)."""
    for module in model.modules():
        if isinstance(module, library.nn.Dropout):
            module.p = 0.0
        if isinstance(module, library.nn.MultiheadAttention):
            module.dropout = 0.0


def _close(ours, theirs, rtol=2e-4, atol=2e-5) -> None:
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(np.array(ours, float), np.array(theirs, float), rtol=rtol, atol=atol)


def _finite(values) -> None:
    assert values and all(math.isfinite(v) for v in values)


def test_quickstart_trains_saves_and_predicts_like_pytorch(device):
    mine, theirs = _programs("quickstart")
    model = mine.build()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pth")
        if theirs is None:
            _finite(mine.run(model, path=path))
            return
        reference = theirs.build()
        _same_weights(reference, model, mine.torch)
        _close(mine.run(model, path=path), theirs.run(reference, path=path))
        assert mine.device == device and next(model.parameters()).device.type == device


@NUMPY_SHARING
def test_blitz_tensors_autograd_and_cifar_cnn_like_pytorch():
    mine, theirs = _programs("blitz")
    ours = mine.tensors_part()
    assert ours[9:14] == [2.0] * 5  # t.numpy() shares memory: add_ shows through
    assert ours[14:19] == [2.0] * 5  # from_numpy shares memory: np.add(out=) shows through
    assert mine.autograd_part() == [36.0, 81.0, -12.0, -8.0]
    net = mine.build()
    if theirs is None:
        _finite(mine.run(net))
        return
    _close(ours, theirs.tensors_part())
    reference = theirs.build()
    _same_weights(reference, net, mine.torch)
    _close(mine.run(net), theirs.run(reference))


def test_mnist_example_with_adadelta_and_steplr_like_pytorch(device):
    mine, theirs = _programs("mnist")
    argv = ["--batch-size", "4", "--test-batch-size", "8", "--epochs", "2"]
    model = mine.build()
    for dropout in (model.dropout1, model.dropout2):
        dropout.p = 0.0  # the libraries draw different masks
    if theirs is None:
        _finite(mine.run(model, argv))
        return
    reference = theirs.build()
    reference.dropout1.p = reference.dropout2.p = 0.0
    _same_weights(reference, model, mine.torch)
    # On a device the program loads with a worker, pinned memory and shuffling: one
    # batch an epoch (SAMPLES) keeps the losses comparable with PyTorch's CPU run.
    _close(mine.run(model, argv), theirs.run(reference, argv), rtol=1e-3, atol=1e-4)
    assert next(model.parameters()).device.type == device


@pytest.mark.parametrize(
    "kind, tied",
    [
        ("LSTM", True),
        ("GRU", False),
        ("RNN_TANH", True),
        ("RNN_RELU", False),
        ("Transformer", False),
    ],
)
@DEFAULT_DEVICE
def test_word_language_model_like_pytorch(kind, tied, device):
    mine, theirs = _programs("word_language_model")
    model = mine.build(kind, tied)
    assert next(model.parameters()).device.type == device
    if tied:
        assert model.decoder.weight is model.encoder.weight
    if theirs is None:
        _finite(mine.run(model))
        return
    reference = theirs.build(kind, tied)
    _same_weights(reference, model, mine.torch)
    _no_dropout(model, mine.torch)
    _no_dropout(reference, theirs.torch)
    _close(mine.run(model), theirs.run(reference), rtol=1e-3, atol=1e-4)


@NUMPY_SHARING
def test_d2l_chapters_like_pytorch():
    mine, theirs = _programs("d2l")
    g = mine.torch
    features, labels, images, classes = mine.regression_data()
    net = g.nn.Sequential(g.nn.Linear(2, 1))
    w = g.tensor([[0.01], [-0.02]])
    W = g.tensor(np.random.default_rng(1).normal(0, 0.01, (36, 10)), dtype=g.float32)
    ours = [
        mine.preliminaries(),
        mine.shapes(),
        mine.linear_regression_scratch(features, labels, w),
        mine.softmax_regression_scratch(images, classes, W),
    ]
    assert ours[0][5:7] == [False, True]  # Y = Y + X makes a new tensor, X += Y does not
    assert ours[2][-1] < ours[2][0]
    if theirs is None:
        _finite(mine.linear_regression_concise(features, labels, net))
        return
    t = theirs.torch
    reference = t.nn.Sequential(t.nn.Linear(2, 1))
    _same_weights(reference, net, g)
    data = [t.tensor(_as_numpy(x)) for x in (features, labels, images, classes)]
    theirs_out = [
        theirs.preliminaries(),
        theirs.shapes(),
        theirs.linear_regression_scratch(data[0], data[1], t.tensor(_as_numpy(w))),
        theirs.softmax_regression_scratch(data[2], data[3], t.tensor(_as_numpy(W))),
    ]
    assert ours[0][:8] == theirs_out[0][:8] and ours[1] == theirs_out[1]
    _close(ours[0][8:], theirs_out[0][8:])
    _close(ours[2], theirs_out[2])
    _close(ours[3], theirs_out[3])
    _close(
        mine.linear_regression_concise(features, labels, net),
        theirs.linear_regression_concise(data[0], data[1], reference),
    )


@DEFAULT_DEVICE
def test_makemore_lectures_like_pytorch(device):
    mine, theirs = _programs("makemore")
    counts, names = mine.bigram_counts()
    assert all(name.endswith(".") or len(name) > 20 for name in names)
    W = np.random.default_rng(0).standard_normal((mine.vocab_size, mine.vocab_size))
    parameters = mine.mlp_parameters(n_hidden=16)
    model = mine.wavenet(n_embd=4, n_hidden=8)
    assert next(iter(model.parameters())).device.type == device  # a list, in the lectures
    assert len(mine.sample(parameters, count=1)) == 1
    if theirs is None:
        assert all(mine.backprop_ninja(parameters, n=16)[1])
        _finite(mine.one_hot_net(mine.torch.tensor(W, dtype=mine.torch.float32), steps=3))
        return
    t, g = theirs.torch, mine.torch
    _close(counts, theirs.bigram_counts()[0])
    _close(
        mine.one_hot_net(g.tensor(W, dtype=g.float32), steps=3),
        theirs.one_hot_net(t.tensor(W, dtype=t.float32), steps=3),
    )
    reference = theirs.mlp_parameters(n_hidden=16)
    parameters = [g.tensor(_as_numpy(p)) for p in reference]
    loss, checks = mine.backprop_ninja(parameters, n=16)
    assert all(checks)  # every hand-derived gradient agrees with autograd
    _close([loss], [theirs.backprop_ninja(reference, n=16)[0]])
    _close(mine.train_mlp(parameters, steps=3), theirs.train_mlp(reference, steps=3))
    reference_model = theirs.wavenet(n_embd=4, n_hidden=8)
    with g.no_grad():
        for ours_p, theirs_p in zip(model.parameters(), reference_model.parameters()):
            ours_p.copy_(g.tensor(_as_numpy(theirs_p)))
    ours_log, ours_ud = mine.train_wavenet(model, steps=2)
    theirs_log, theirs_ud = theirs.train_wavenet(reference_model, steps=2)
    _close(ours_log, theirs_log)
    _close(ours_ud, theirs_ud, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_trains_and_generates_like_pytorch(flash, device):
    mine, theirs = _programs("nanogpt")
    model = mine.build(flash=flash, bias=not flash)
    if theirs is None:
        _finite(mine.run(model, iters=2, batch_size=2, gradient_accumulation_steps=1))
    else:
        reference = theirs.build(flash=flash, bias=not flash)
        _same_weights(reference, model, mine.torch)
        _close(
            mine.run(model, iters=2, batch_size=2, gradient_accumulation_steps=1),
            theirs.run(reference, iters=2, batch_size=2, gradient_accumulation_steps=1),
            rtol=1e-3,
            atol=1e-4,
        )
    assert next(model.parameters()).device.type == device
    tokens = mine.sample(model, max_new_tokens=4)
    assert len(tokens) == 7 and all(0 <= t < model.config.vocab_size for t in tokens)
    model.crop_block_size(8)
    assert len(mine.sample(model, start=tuple(range(1, 10)), max_new_tokens=2)) == 11
