"""Public-style PyTorch programs run unchanged on glasstorch, compared with PyTorch.

Each program in ``shared_tests/programs/`` is ordinary PyTorch code (``import torch``)
in the style of a well-known source: the PyTorch tutorials (quickstart, the 60-minute
blitz, the spatial transformer network, custom autograd Functions, saving and
loading), pytorch/examples (mnist, word_language_model, the GCN, the VAE, DCGAN,
time-sequence prediction), d2l.ai, nn-zero-to-hero's makemore lectures and nanoGPT. :func:`programs.loader.load` runs the same text once
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
    "spatial_transformer": {"BATCH": 8},
    "gcn": {"NODES": 24, "EPOCHS": 3},
    "vae": {"HIDDEN": 16},
    "custom_function": {"POINTS": 50, "STEPS": 200},
    "save_whole_model": {},
    "dcgan": {},
    "time_sequence": {"T": 12, "N": 5, "HIDDEN": 6},
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


def _digits(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` bundled 8x8 digits (pixel values 0..16) and their labels."""
    from glasstorch.datasets.digits import load_digits_arrays

    images, labels = load_digits_arrays()
    return images[:count].astype(np.int64), labels[:count].astype(np.int64)


@DEFAULT_DEVICE
def test_spatial_transformer_network_trains_like_pytorch(device):
    mine, theirs = _programs("spatial_transformer")
    images, labels = _digits(32)
    model = mine.build()
    loaders = mine.make_loaders(images, labels)
    g = mine.torch
    batch = next(iter(loaders[1]))[0].to(device)
    for mode, padding, corners in [
        ("bilinear", "zeros", False),
        ("nearest", "border", True),
        ("bilinear", "reflection", True),
    ]:
        warped = mine.warp(batch, 0.3, 0.9, mode, padding, corners)
        assert warped.shape == batch.shape and warped.device.type == device
    # theta starts as the identity: the transformer gives its input back
    same = mine.visualize_stn(model, loaders[1])
    np.testing.assert_allclose(_as_numpy(same[1]), _as_numpy(same[0]), rtol=1e-5, atol=1e-5)
    if theirs is None:
        _finite(mine.run(model, *loaders))
        return
    t = theirs.torch
    for mode, padding, corners in [
        ("bilinear", "zeros", False),
        ("nearest", "border", True),
        ("bilinear", "reflection", True),
    ]:
        np.testing.assert_allclose(
            _as_numpy(mine.warp(batch, 0.3, 0.9, mode, padding, corners)),
            _as_numpy(theirs.warp(t.tensor(_as_numpy(batch)), 0.3, 0.9, mode, padding, corners)),
            rtol=1e-4,
            atol=1e-4,
        )
    reference = theirs.build()
    _same_weights(reference, model, g)
    for net, library in ((model, g), (reference, t)):
        net.conv2_drop.p = 0.0  # the libraries draw different masks
        # Off the identity: there every sampling point sits exactly on a pixel centre,
        # where bilinear sampling has a kink and the one-sided gradient PyTorch takes
        # depends on the last bit of every value that reaches the grid (the fast tier
        # follows PyTorch there, linspace included; the reference tier drifts off it).
        with library.no_grad():
            net.fc_loc[2].bias.copy_(library.tensor([1.0, 0.02, 0.013, -0.03, 1.0, -0.021]))
    model.forward = _without_functional_dropout(model, g)
    reference.forward = _without_functional_dropout(reference, t)
    theirs_loaders = theirs.make_loaders(images, labels)
    _close(mine.run(model, *loaders), theirs.run(reference, *theirs_loaders), rtol=1e-3, atol=1e-4)
    ours, theirs_stn = (
        mine.visualize_stn(model, loaders[1]),
        theirs.visualize_stn(reference, theirs_loaders[1]),
    )
    np.testing.assert_allclose(_as_numpy(ours[1]), _as_numpy(theirs_stn[1]), rtol=1e-3, atol=1e-4)


def _without_functional_dropout(model, library):
    """The program's forward with its ``F.dropout`` call at p=0 (the masks differ by library)."""
    F = library.nn.functional

    def forward(x):
        x = model.stn(x)
        x = F.relu(F.max_pool2d(model.conv1(x), 2))
        x = F.relu(F.max_pool2d(model.conv2_drop(model.conv2(x)), 2))
        x = x.view(-1, 12 * 2 * 2)
        x = F.relu(model.fc1(x))
        return F.log_softmax(model.fc2(x), dim=1)

    return forward


@pytest.mark.parametrize("use_bias", [True, False])
def test_gcn_with_a_sparse_adjacency_trains_like_pytorch(use_bias, device):
    mine, theirs = _programs("gcn")
    model = mine.build(use_bias=use_bias)
    model.dropout.p = 0.0  # the libraries draw different masks
    sparse_out, dense_out, grad, adj = mine.dense_check(mine.build())
    assert adj.is_sparse and adj.device.type == device
    np.testing.assert_allclose(_as_numpy(sparse_out), _as_numpy(dense_out), rtol=1e-5, atol=1e-5)
    dense = _as_numpy(adj.to_dense())
    np.testing.assert_allclose(dense, dense.T, rtol=1e-6)  # D^-1/2 (A + I) D^-1/2 is symmetric
    assert np.all(np.diag(dense) > 0)
    if theirs is None:
        _finite(mine.run(model))
        return
    reference = theirs.build(use_bias=use_bias)
    reference.dropout.p = 0.0
    _same_weights(reference, model, mine.torch)
    _close(mine.run(model), theirs.run(reference), rtol=1e-4, atol=1e-5)
    checker = theirs.build()
    theirs_check = theirs.dense_check(checker)
    mine_checker = mine.build()
    _same_weights(checker, mine_checker, mine.torch)
    ours_check = mine.dense_check(mine_checker)
    for ours_value, theirs_value in zip(ours_check[:3], theirs_check[:3]):
        np.testing.assert_allclose(
            _as_numpy(ours_value), _as_numpy(theirs_value), rtol=1e-4, atol=1e-5
        )
    np.testing.assert_allclose(
        _as_numpy(ours_check[3].to_dense()), _as_numpy(theirs_check[3].to_dense()), rtol=1e-6
    )
    assert ours_check[3]._nnz() == theirs_check[3]._nnz()
    assert ours_check[3].is_coalesced() == theirs_check[3].is_coalesced()


@pytest.fixture
def pytorch_stream(device):
    """PyTorch's CPU random stream for the test (Philox again afterwards); CUDA keeps Philox."""
    import glasstorch

    if device == "cpu":
        glasstorch.random.set_stream("pytorch")
    yield device == "cpu"
    glasstorch.random.set_stream("philox")


@DEFAULT_DEVICE
def test_vae_on_digits_trains_like_pytorch(device, pytorch_stream):
    mine, theirs = _programs("vae")
    images, _ = _digits(64)
    model = mine.build()
    loaders = mine.make_loaders(images)
    before = mine.test(model, loaders[1])[0]
    if theirs is None:
        log, samples = mine.run(model, *loaders)
        _finite(log)
        assert log[-1] < before and samples.shape == (8, 1, 8, 8)
        return
    reference = theirs.build()
    _same_weights(reference, model, mine.torch)
    theirs_loaders = theirs.make_loaders(images)
    _close([mine.test(model, loaders[1])[0]], [theirs.test(reference, theirs_loaders[1])[0]])
    log, samples = mine.run(model, *loaders)
    theirs_log, theirs_samples = theirs.run(reference, *theirs_loaders)
    if pytorch_stream:  # the same shuffles, the same eps and the same samples as PyTorch
        _close(log, theirs_log, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(samples.numpy(), theirs_samples.numpy(), rtol=1e-3, atol=1e-4)
    else:  # other random draws: it trains as PyTorch does
        _finite(log)
        assert log[-1] < before
        _close(log, theirs_log, rtol=0.1, atol=0.0)


@DEFAULT_DEVICE
def test_custom_autograd_functions_like_pytorch(device):
    mine, theirs = _programs("custom_function")
    g = mine.torch
    x = g.tensor(np.random.default_rng(0).normal(0, 2, (16, 6)), dtype=g.float32)
    y = x.sum(1, keepdim=True)
    grad, error = mine.second_derivative_of_soft_clip(x)
    assert (
        error
        == "trying to differentiate twice a function that was marked with @once_differentiable"
    )
    np.testing.assert_allclose(  # d/dx (2 tanh(x/2))^2 = 4 tanh(x/2) (1 - tanh(x/2)^2)
        _as_numpy(grad),
        4 * np.tanh(_as_numpy(x) / 2) * (1 - np.tanh(_as_numpy(x) / 2) ** 2),
        rtol=1e-4,
        atol=1e-5,
    )
    assert g.autograd.gradcheck(
        mine.LegendrePolynomial3.apply, (g.randn(5, dtype=g.float64, requires_grad=True),)
    )
    fit = mine.fit_sine(-0.1, -0.9, 0.0, 0.3)
    model = mine.SoftClipNet()
    if theirs is None:
        _finite(fit)
        _finite(mine.train_soft_clip(model, x, y))
        return
    t = theirs.torch
    _close(fit, theirs.fit_sine(-0.1, -0.9, 0.0, 0.3), rtol=1e-4, atol=1e-4)
    reference = theirs.SoftClipNet()
    _same_weights(reference, model, g)
    x_t, y_t = t.tensor(_as_numpy(x)), t.tensor(_as_numpy(y))
    _close(mine.train_soft_clip(model, x, y), theirs.train_soft_clip(reference, x_t, y_t))
    assert theirs.second_derivative_of_soft_clip(x_t)[1] == error


def test_saving_a_whole_model_and_a_checkpoint_like_pytorch():
    mine, theirs = _programs("save_whole_model")
    rng = np.random.default_rng(0)
    x_np, y_np = rng.standard_normal((8, 1, 8, 8)).astype(np.float32), rng.integers(0, 4, 8)
    g = mine.torch
    x, y = g.tensor(x_np), g.tensor(y_np)
    model = mine.build()
    with tempfile.TemporaryDirectory() as folder:
        outputs, name, refusal = mine.whole_model(model, folder, x)
        assert name == "TheModelClass"
        assert refusal.startswith("Weights only load failed.")
        assert f"GLOBAL {mine.__name__}.TheModelClass was not an allowed global" in refusal
        for output in outputs[1:]:
            assert output.tolist() == outputs[0].tolist()
        log, after, again, epoch, metrics = mine.checkpoint_and_resume(mine.build(), folder, x, y)
        assert epoch == 3 and isinstance(metrics, np.ndarray) and metrics.tolist() == log
        assert again == after  # resuming from the checkpoint continues the same run
        array = mine.save_numpy(folder)
        assert isinstance(array, np.ndarray) and array.tolist() == [[0, 1, 2], [3, 4, 5]]
        if theirs is None:
            return
        t = theirs.torch
        reference = theirs.build()
        _same_weights(reference, model, g)
        x_t, y_t = t.tensor(x_np), t.tensor(y_np)
        outputs = mine.whole_model(model, folder, x)[0]
        theirs_outputs, _, theirs_refusal = theirs.whole_model(reference, folder, x_t)
        assert refusal == theirs_refusal.replace(theirs.__name__, mine.__name__)
        _close(_as_numpy(outputs[1]).ravel(), _as_numpy(theirs_outputs[1]).ravel())
        fresh, theirs_fresh = mine.build(), theirs.build()
        _same_weights(theirs_fresh, fresh, g)
        ours_run = mine.checkpoint_and_resume(fresh, folder, x, y)
        theirs_run = theirs.checkpoint_and_resume(theirs_fresh, folder, x_t, y_t)
        for ours_losses, theirs_losses in zip(ours_run[:3], theirs_run[:3]):
            _close(ours_losses, theirs_losses)


@DEFAULT_DEVICE
def test_dcgan_step_like_pytorch(device):
    mine, theirs = _programs("dcgan")
    rng = np.random.default_rng(0)
    batches_np = [rng.uniform(-1, 1, (4, 1, 16, 16)).astype(np.float32) for _ in range(2)]
    noises_np = [rng.standard_normal((4, mine.nz, 1, 1)).astype(np.float32) for _ in range(2)]
    g = mine.torch
    netG, netD = mine.build()
    conv = _as_numpy(netG.main[0].weight)
    assert abs(conv.mean()) < 0.01 and 0.015 < conv.std() < 0.025  # weights_init's N(0, 0.02)
    batches = [g.tensor(b) for b in batches_np]
    noises = [g.tensor(n) for n in noises_np]
    if theirs is None:
        log, fixed = mine.train(netG, netD, batches, noises)
        _finite(log)
        assert fixed.shape == (4, 1, 16, 16) and float(fixed.abs().max()) <= 1.0
        return
    t = theirs.torch
    theirs_G, theirs_D = theirs.build()
    _same_weights(theirs_G, netG, g)
    _same_weights(theirs_D, netD, g)
    log, fixed = mine.train(netG, netD, batches, noises)
    theirs_log, theirs_fixed = theirs.train(
        theirs_G, theirs_D, [t.tensor(b) for b in batches_np], [t.tensor(n) for n in noises_np]
    )
    _close(log, theirs_log, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(fixed.numpy(), theirs_fixed.numpy(), rtol=1e-3, atol=1e-4)


def test_time_sequence_lstm_cells_with_lbfgs_like_pytorch():
    mine, theirs = _programs("time_sequence")
    data = mine.make_data()
    seq = mine.build()
    if theirs is None:
        log, prediction = mine.run(seq, data, steps=1)
        _finite(log)
        assert prediction.shape == (3, mine.T - 1 + mine.FUTURE)
        return
    reference = theirs.build()
    _same_weights(reference, seq, mine.torch)
    log, prediction = mine.run(seq, data, steps=1)
    theirs_log, theirs_prediction = theirs.run(reference, data, steps=1)
    _close(log, theirs_log, rtol=1e-7, atol=1e-9)  # float64 throughout
    np.testing.assert_allclose(prediction, theirs_prediction, rtol=1e-7, atol=1e-9)
