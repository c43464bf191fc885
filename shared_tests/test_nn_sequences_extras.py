"""Packed sequences, LSTM projections, convolution padding modes, nn.Transformer, and the
small API pieces public programs use (``axis=``, ``size=``, ``new_*``, einsum sublists,
``torch.amp``, the half-precision dtype names), each compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_same_error, needs_torch, torch

import glasstorch as gt
import glasstorch.nn.functional as F
from glasstorch.nn.utils import rnn as gt_rnn

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3, 4)).astype(np.float32)


def _copy(source, target) -> None:
    target.load_state_dict(
        {k: gt.tensor(v.detach().cpu().numpy()) for k, v in source.state_dict().items()}
    )


def _close(ours, theirs, rtol=1e-5, atol=1e-5) -> None:
    """Compare on the host; ``ours`` must have been computed on the device under test."""
    if isinstance(ours, gt.Tensor):
        assert ours.device.type == TEST_DEVICE, f"result on {ours.device}, expected {TEST_DEVICE}"
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=rtol, atol=atol
    )


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
    _close(ours.data, theirs.data)
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    assert ours.sorted_indices.tolist() == theirs.sorted_indices.tolist()
    assert ours.unsorted_indices.tolist() == theirs.unsorted_indices.tolist()
    a, la = gt_rnn.pad_packed_sequence(ours, batch_first, total_length=6)
    b, lb = torch.nn.utils.rnn.pad_packed_sequence(theirs, batch_first, total_length=6)
    _close(a, b)
    assert la.tolist() == lb.tolist() and la.dtype == gt.int64


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_on_packed_input_like_pytorch(kind):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    ours = getattr(gt.nn, kind)(4, 5, num_layers=2, bidirectional=True)
    _copy(theirs, ours)
    h0 = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    th = (torch.tensor(h0), torch.tensor(-h0)) if kind == "LSTM" else torch.tensor(h0)
    gh = (gt.tensor(h0), gt.tensor(-h0)) if kind == "LSTM" else gt.tensor(h0)
    tx, gx = torch.tensor(X, requires_grad=True), gt.tensor(X, requires_grad=True)
    t_out, t_last = theirs(torch.nn.utils.rnn.pack_padded_sequence(tx, [2, 5, 3], False, False), th)
    g_out, g_last = ours(gt_rnn.pack_padded_sequence(gx, [2, 5, 3], False, False), gh)
    assert isinstance(g_out, gt_rnn.PackedSequence)
    _close(g_out.data, t_out.data)
    t_last = t_last if isinstance(t_last, tuple) else (t_last,)
    g_last = g_last if isinstance(g_last, tuple) else (g_last,)
    for a, b in zip(g_last, t_last):
        _close(a, b)
    (t_out.data.sum() + t_last[0].square().sum()).backward()
    (g_out.data.sum() + g_last[0].square().sum()).backward()
    _close(gx.grad, tx.grad, rtol=1e-4)
    _close(ours.weight_hh_l1_reverse.grad, theirs.weight_hh_l1_reverse.grad, rtol=1e-4)


# ------------------------------------------------------------- LSTM projections
@needs_torch
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_proj_size_like_pytorch(bias):
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, bias=bias)
    ours = gt.nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, bias=bias)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy(theirs, ours)
    tx, gx = torch.tensor(X, requires_grad=True), gt.tensor(X, requires_grad=True)
    t_out, (t_h, t_c) = theirs(tx)
    g_out, (g_h, g_c) = ours(gx)
    assert tuple(g_h.shape) == (4, 3, 3) and tuple(g_c.shape) == (4, 3, 6)
    for a, b in ((g_out, t_out), (g_h, t_h), (g_c, t_c)):
        _close(a, b)
    (t_out.sum() + t_c.sum()).backward()
    (g_out.sum() + g_c.sum()).backward()
    _close(gx.grad, tx.grad, rtol=1e-4)
    _close(ours.weight_hr_l1.grad, theirs.weight_hr_l1.grad, rtol=1e-4)


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


# ------------------------------------------------------ convolution padding modes
@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, "same"])
def test_conv_padding_modes_like_pytorch(mode, padding):
    x = RNG.standard_normal((2, 2, 6, 5)).astype(np.float32)
    for dims, name in ((1, "Conv1d"), (2, "Conv2d")):
        torch.manual_seed(0)
        theirs = getattr(torch.nn, name)(2, 3, 3, padding=padding, padding_mode=mode, dilation=2)
        ours = getattr(gt.nn, name)(2, 3, 3, padding=padding, padding_mode=mode, dilation=2)
        _copy(theirs, ours)
        assert repr(ours) == repr(theirs)
        assert ours._reversed_padding_repeated_twice == theirs._reversed_padding_repeated_twice
        data = x[..., 0, :] if dims == 1 else x
        tx, gx = torch.tensor(data, requires_grad=True), gt.tensor(data, requires_grad=True)
        t_out, g_out = theirs(tx), ours(gx)
        _close(g_out, t_out)
        t_out.square().sum().backward()
        g_out.square().sum().backward()
        _close(gx.grad, tx.grad, rtol=1e-4)


@pytest.mark.errors
def test_conv_transpose_refuses_other_padding_modes():
    with pytest.raises(
        ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'
    ):
        gt.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")


# ------------------------------------------------------------------ Transformer
@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_like_pytorch(norm_first):
    torch.manual_seed(0)
    options = dict(
        d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16,
        dropout=0.0, norm_first=norm_first, batch_first=True,
    )  # fmt: skip
    theirs, ours = torch.nn.Transformer(**options), gt.nn.Transformer(**options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy(theirs, ours)
    src = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    tgt = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    mask = gt.nn.Transformer.generate_square_subsequent_mask(4)
    t_src, g_src = torch.tensor(src, requires_grad=True), gt.tensor(src, requires_grad=True)
    t_out = theirs(t_src, torch.tensor(tgt), tgt_mask=torch.tensor(mask.cpu().numpy()))
    g_out = ours(g_src, gt.tensor(tgt), tgt_mask=mask)
    _close(g_out, t_out, rtol=1e-4)
    t_out.sum().backward()
    g_out.sum().backward()
    _close(g_src.grad, t_src.grad, rtol=1e-3, atol=1e-4)


@pytest.mark.errors
def test_transformer_batch_mismatch_error():
    model = gt.nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(gt.zeros(5, 2, 8), gt.zeros(4, 3, 8))


# ------------------------------------------------------------ small API pieces
def test_numpy_spellings_axis_and_keepdims():
    a = gt.arange(6.0).reshape(2, 3)
    assert a.sum(axis=1, keepdims=True).tolist() == [[3.0], [12.0]]
    assert gt.sum(a, axis=0).tolist() == [3.0, 5.0, 7.0]
    assert a.argmax(axis=1).tolist() == [2, 2]
    assert a.cumsum(axis=1)[1].tolist() == [3.0, 7.0, 12.0]
    assert gt.cat([a, a], axis=0).shape == (4, 3)
    with pytest.raises(TypeError, match="alias"):
        a.sum(dim=0, axis=1)


def test_factories_take_size_keyword_and_new_methods():
    assert gt.rand(size=(2, 3)).shape == (2, 3)
    assert gt.randn(size=[4]).shape == (4,)
    assert gt.zeros(size=(1, 2)).tolist() == [[0.0, 0.0]]
    x = gt.ones(2, dtype=gt.float64)
    assert x.new_zeros(2, 3).dtype == gt.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(2).tolist() == [1.0, 1.0]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_tensor([1, 2]).dtype == gt.float64
    assert x.new_empty(3, dtype=gt.int64).dtype == gt.int64


def test_einsum_sublist_format():
    a, v = gt.arange(6.0).reshape(2, 3), gt.tensor([1.0, 2.0, 3.0])
    assert gt.einsum(a, [0, 1], v, [1], [0]).tolist() == [8.0, 26.0]
    assert gt.einsum(a, [0, 1]).tolist() == a.tolist()  # implicit output: sorted subscripts
    assert gt.einsum(a, [Ellipsis, 1], v, [1], [Ellipsis]).tolist() == [8.0, 26.0]
    with pytest.raises(ValueError, match=r"within the valid range \[0, 52\)"):
        gt.einsum(v, [60], [60])


@pytest.mark.errors
def test_half_precision_names_exist_but_make_no_tensors():
    assert repr(gt.float16) == "torch.float16" and gt.half is gt.float16
    assert repr(gt.bfloat16) == "torch.bfloat16"
    with pytest.raises(TypeError, match="no torch.float16 tensors"):
        gt.zeros(2, dtype=gt.float16)


def test_amp_autocast_and_grad_scaler():
    w = gt.tensor([1.0, -2.0], requires_grad=True)
    optimizer = gt.optim.SGD([w], lr=0.5)
    scaler = gt.amp.GradScaler(init_scale=4.0, growth_interval=1)
    with gt.autocast(device_type="cpu", dtype=gt.bfloat16):
        loss = (w * w).sum()
    scaler.scale(loss).backward()
    assert w.grad.tolist() == [8.0, -16.0]  # scaled by 4
    scaler.step(optimizer)  # unscales first: the step uses 2w
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 8.0
    w.grad = gt.tensor([float("inf"), 0.0])
    scaler.step(optimizer)  # skipped
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 4.0
    off = gt.amp.GradScaler(enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0


# ------------------------------------------- more names public programs call
_A = RNG.standard_normal((3, 4)).astype(np.float32)
_B = RNG.standard_normal((3, 4)).astype(np.float32)
_P = np.abs(RNG.standard_normal((3, 4))).astype(np.float32)
_P /= _P.sum(1, keepdims=True)
_P[0, 0] = 0.0  # a zero probability contributes 0 to the KL divergence

_NN_CASES = {
    "normalize": lambda L, x, y, q: L.nn.functional.normalize(x, dim=1),
    "cosine_similarity": lambda L, x, y, q: L.nn.CosineSimilarity(dim=0)(x, y),
    "kl_div_batchmean": lambda L, x, y, q: L.nn.functional.kl_div(
        x.log_softmax(1), q, reduction="batchmean"
    ),
    "kl_div_log_target": lambda L, x, y, q: L.nn.KLDivLoss(reduction="none", log_target=True)(
        x.log_softmax(1), y.log_softmax(1)
    ),
    "mish": lambda L, x, y, q: L.nn.Mish()(x),
    "hardtanh": lambda L, x, y, q: L.nn.Hardtanh(-0.5, 0.5)(x),
    "prelu_per_channel": lambda L, x, y, q: L.nn.PReLU(4, init=0.1)(x),
    "lerp": lambda L, x, y, q: L.lerp(x, y, 0.3),
    "addmm": lambda L, x, y, q: L.addmm(q[:, :3], x, y.t(), beta=0.5, alpha=2.0),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(_NN_CASES))
def test_program_functions_like_pytorch(name):
    case = _NN_CASES[name]
    tx, gx = torch.tensor(_A, requires_grad=True), gt.tensor(_A, requires_grad=True)
    theirs = case(torch, tx, torch.tensor(_B), torch.tensor(_P))
    ours = case(gt, gx, gt.tensor(_B), gt.tensor(_P))
    _close(ours, theirs, rtol=1e-5, atol=1e-6)
    theirs.sum().backward()
    ours.sum().backward()
    _close(gx.grad, tx.grad, rtol=1e-4, atol=1e-6)


def test_constants_limits_meshgrid_and_inference_mode():
    assert gt.pi == np.pi and gt.inf == float("inf") and gt.e == np.e
    assert gt.finfo(gt.float32).eps == float(np.finfo(np.float32).eps)
    assert gt.iinfo(gt.int32).max == 2**31 - 1
    x, y = gt.meshgrid(gt.arange(2), gt.arange(3), indexing="xy")
    assert x.tolist() == [[0, 1]] * 3 and y.tolist() == [[0, 0], [1, 1], [2, 2]]
    i, j = gt.meshgrid(gt.arange(2), gt.arange(3), indexing="ij")
    assert i.shape == (2, 3) and j[1].tolist() == [0, 1, 2]
    w = gt.ones(2, requires_grad=True)
    with gt.inference_mode():
        assert gt.is_inference_mode_enabled()
        assert not (w * 2).requires_grad
    assert not gt.is_inference_mode_enabled() and (w * 2).requires_grad
    assert gt.ones(2, 3, dtype=gt.int64).type("torch.FloatTensor").dtype == gt.float32
    assert gt.ones(3).nbytes == 12
    std, mean = gt.std_mean(gt.tensor([1.0, 2.0, 4.0]))
    assert abs(mean.item() - 7 / 3) < 1e-6 and abs(std.item() - np.std([1, 2, 4], ddof=1)) < 1e-6


@needs_torch
def test_distributions_like_pytorch():
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], np.float32)
    results = []
    for lib in (torch, gt):
        weights = lib.tensor(probs, requires_grad=True)
        dist = lib.distributions.Categorical(probs=weights)
        assert tuple(dist.sample().shape) == (2,) and tuple(dist.sample((4,)).shape) == (4, 2)
        log_prob = dist.log_prob(lib.tensor([1, 0]))
        (log_prob.sum() + dist.entropy().sum()).backward()
        loc = lib.tensor([0.5, -1.0], requires_grad=True)
        normal = lib.distributions.Normal(loc, lib.tensor([1.5, 0.5]))
        assert tuple(normal.rsample((3,)).shape) == (3, 2)
        kl = lib.distributions.kl_divergence(normal, lib.distributions.Normal(0.0, 1.0))
        (normal.log_prob(lib.tensor([0.0, 0.0])).sum() + kl.sum()).backward()
        results.append([log_prob, dist.entropy(), weights.grad, normal.entropy(), kl, loc.grad])
    for theirs, ours in zip(*results):
        _close(ours, theirs)


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


@needs_torch
@pytest.mark.parametrize(
    "name, args",
    [
        ("ZeroPad2d", ((1, 2, 1, 0),)),
        ("ConstantPad2d", (1, 0.5)),
        ("ReflectionPad2d", (1,)),
        ("ReplicationPad2d", ((2, 0, 1, 1),)),
        ("CircularPad2d", (1,)),
        ("ReflectionPad1d", (2,)),
        ("PixelShuffle", (2,)),
        ("PixelUnshuffle", (3,)),
    ],
)
def test_padding_and_pixel_shuffle_layers_like_pytorch(name, args):
    x = RNG.standard_normal((2, 8, 3, 3)).astype(np.float32)
    x = x[0] if name.endswith("1d") else x
    theirs, ours = getattr(torch.nn, name)(*args), getattr(gt.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    tx, gx = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    t_out, g_out = theirs(tx), ours(gx)
    _close(g_out, t_out)
    (t_out * t_out).sum().backward()
    (g_out * g_out).sum().backward()
    _close(gx.grad, tx.grad)


def _host_refuses_8_tib() -> bool:
    """Whether this machine's allocator refuses 8 TiB at once (not with memory overcommit on)."""
    try:
        np.empty(2**40, dtype=np.int64)
    except MemoryError:
        return True
    return False


@pytest.mark.errors
def test_repeat_interleave_too_large_fails_at_once():
    # The counts are never turned into a Python list: the result's allocation fails first.
    # On the CPU, whose allocator's words these are (a GPU says "CUDA out of memory").
    x = gt.tensor([1.0, 2.0], device="cpu")
    tx = torch.tensor([1.0, 2.0]) if torch is not None else None
    if _host_refuses_8_tib():
        for counts, nbytes in ((2**40, 8796093022208), ([2**40, 1], 8796093022216)):

            def ours(counts=counts):
                repeats = counts if isinstance(counts, int) else gt.tensor(counts, device="cpu")
                return gt.repeat_interleave(x, repeats)

            def theirs(counts=counts):
                repeats = counts if isinstance(counts, int) else torch.tensor(counts)
                return torch.repeat_interleave(tx, repeats)

            assert_same_error(
                ours,
                theirs if torch is not None else None,
                exc_type=RuntimeError,
                match=f"can't allocate memory: you tried to allocate {nbytes} bytes",
            )
    # Past int64 the size check words it, on any machine.
    assert_same_error(
        lambda: gt.repeat_interleave(gt.ones(1), 2**62),
        (lambda: torch.repeat_interleave(torch.ones(1), 2**62)) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"Storage size calculation overflowed with sizes=\[1, 4611686018427387904\]",
    )
    assert_same_error(
        lambda: gt.repeat_interleave(gt.tensor([2**62])),
        (lambda: torch.repeat_interleave(torch.tensor([2**62]))) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"Storage size calculation overflowed with sizes=\[4611686018427387904\]",
    )
    for bad, message in (
        (gt.tensor([-1, 1]), "repeats can not be negative"),
        (-1, "Repeats must be non-negative"),
        (gt.tensor([1, 2, 3]), r"repeats must have the same size as input along dim"),
        (gt.tensor([[1, 2]]), "repeats must be 0-dim or 1-dim tensor"),
    ):
        with pytest.raises(RuntimeError, match=message):
            gt.repeat_interleave(x, bad)


def test_repeat_interleave_counts_and_layout():
    # Empty rows anywhere, a one-element count, a 0-d input and a permuted one.
    assert gt.repeat_interleave(gt.tensor([0, 2, 0, 1, 0])).tolist() == [1, 1, 3]
    assert gt.repeat_interleave(gt.tensor([0, 0])).tolist() == []
    x = gt.tensor([[1, 2], [3, 4]])
    assert gt.repeat_interleave(x, gt.tensor([3]), dim=1).tolist() == [
        [1, 1, 1, 2, 2, 2],
        [3, 3, 3, 4, 4, 4],
    ]
    assert gt.repeat_interleave(gt.tensor(5), 3).tolist() == [5, 5, 5]
    y = gt.repeat_interleave(x.t(), 1, dim=0)
    assert y.tolist() == [[1, 3], [2, 4]] and y.stride() == (2, 1)
    assert y.data_ptr() != x.data_ptr()  # always a copy, as in PyTorch
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 4 but got 3"):
        gt.repeat_interleave(gt.tensor([1, 2]), 2, output_size=3)
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    gt.repeat_interleave(w, gt.tensor([2, 3])).sum().backward()
    assert w.grad.tolist() == [2.0, 3.0]


@pytest.mark.errors
def test_embedding_bag_offsets_past_the_input():
    weight = gt.arange(12.0).reshape(4, 3)
    tweight = torch.arange(12.0).reshape(4, 3) if torch is not None else None
    for offsets in ([0, 5], [0, 2**40], [0, 1, 5]):
        assert_same_error(
            lambda o=offsets: F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor(o)),
            (
                lambda o=offsets: torch.nn.functional.embedding_bag(
                    torch.tensor([0, 1, 2]), tweight, torch.tensor(o)
                )
            )
            if torch is not None
            else None,
            exc_type=RuntimeError,
            match=f"offsets\\[-1\\] can not be greater than input's length 3 but got "
            f"offsets\\[-1\\] of {offsets[-1]}",
        )
    with pytest.raises(RuntimeError, match="offsets must not decrease"):
        F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor([0, 2, 1]))
    # An offset equal to the length is an empty last bag, as in PyTorch.
    got = F.embedding_bag(gt.tensor([0, 1, 2]), weight, gt.tensor([0, 3]), mode="sum")
    assert got.tolist() == [[9.0, 12.0, 15.0], [0.0, 0.0, 0.0]]


def test_diff_of_a_higher_order_than_the_length_is_empty():
    x = gt.tensor([1, 4, 9])
    assert gt.diff(x, n=3).tolist() == []
    assert gt.diff(x, n=2**40).tolist() == []  # at once: no loop of n steps
    assert gt.diff(x, n=2).tolist() == [2]


def test_repeat_interleave_and_take_along_dim():
    x = gt.arange(6).reshape(2, 3)
    assert gt.repeat_interleave(x, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert x.repeat_interleave(gt.tensor([1, 2]), dim=0).tolist() == [[0, 1, 2], [3, 4, 5]] * 1 + [
        [3, 4, 5]
    ]
    assert gt.repeat_interleave(gt.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert gt.take_along_dim(x, gt.tensor([[2], [0]]), 1).tolist() == [[2], [3]]
    assert gt.take_along_dim(x, gt.tensor([5, 0])).tolist() == [5, 0]
