"""The caching allocator under real tensors: freeing by reference count, the
statistics of a training loop, and running out of device memory (paper §5.3,
§5.5, §6.2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from cuda_support import driver_name, requires_cuda

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F

pytestmark = [pytest.mark.cuda, requires_cuda]


def test_memory_returns_to_the_cache_when_the_last_reference_goes():
    gt.cuda.synchronize()
    before = gt.cuda.memory_allocated()
    x = gt.empty(1000, device="cuda")  # 4000 bytes, rounded up to 4096
    assert gt.cuda.memory_allocated() == before + 4096
    view = x[10:20]
    del x
    assert gt.cuda.memory_allocated() == before + 4096  # the view keeps the storage
    del view
    assert gt.cuda.memory_allocated() == before
    reserved = gt.cuda.memory_reserved()
    y = gt.empty(1000, device="cuda")  # served from the cache: nothing new reserved
    assert gt.cuda.memory_reserved() == reserved
    del y


def test_training_iterations_after_the_first_allocate_nothing_new():
    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
    x, y = gt.randn(64, 16, device="cuda"), gt.randn(64, 4, device="cuda")
    counts, reserved, peaks = [], [], []
    for _ in range(4):
        gt.cuda.reset_peak_memory_stats()
        loss = F.mse_loss(model(x), y)
        model.zero_grad()
        loss.backward()
        with gt.no_grad():
            for p in model.parameters():
                p -= 0.05 * p.grad
        stats = gt.cuda.memory_stats()
        counts.append(stats["num_device_alloc"])
        reserved.append(stats["reserved_bytes.all.current"])
        peaks.append(gt.cuda.max_memory_allocated())
    assert counts[1:] == [counts[0]] * 3  # later iterations reuse the cache
    assert reserved[1:] == [reserved[0]] * 3
    assert peaks[1] == peaks[2] == peaks[3] >= gt.cuda.memory_allocated()
    stats = gt.cuda.memory_stats()
    for key in (
        "allocated_bytes.all.current",
        "segment.small_pool.current",
        "active_bytes.all.current",
        "num_alloc_retries",
        "num_ooms",
        "num_device_free",
    ):
        assert key in stats
    assert "memory summary, device ID 0" in gt.cuda.memory_summary()


def test_empty_cache_gives_whole_segments_back():
    x = gt.empty(3 * 1024 * 1024, dtype=gt.uint8, device="cuda")  # a large-pool segment
    del x
    held = gt.cuda.memory_reserved()
    gt.cuda.empty_cache()
    assert gt.cuda.memory_reserved() < held
    assert gt.cuda.memory_stats()["num_device_free"] >= 1


@pytest.mark.errors
@pytest.mark.skipif(driver_name() != "simulator", reason="needs the simulator's small arena")
def test_out_of_memory_raises_pytorchs_error_after_a_retry():
    script = textwrap.dedent(
        """
        import glasstorch as torch
        keep = torch.empty(3 * 1024 * 1024, device="cuda")  # 12 MiB of a 16 MiB arena
        cached = torch.empty(1024, device="cuda")
        del cached  # a cached small segment, released by the retry
        try:
            torch.empty(4 * 1024 * 1024, device="cuda")  # 16 MiB more: cannot fit
        except torch.cuda.OutOfMemoryError as error:
            stats = torch.cuda.memory_stats()
            print("RETRIES", stats["num_alloc_retries"], "OOMS", stats["num_ooms"])
            print("RUNTIME", isinstance(error, RuntimeError))
            print("MESSAGE", error)
        """
    )
    env = dict(os.environ, GLASSTORCH_CUDA="simulator", GLASSTORCH_SIM_MEMORY=str(16 * 2**20))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "RETRIES 1 OOMS 1" in result.stdout
    assert "RUNTIME True" in result.stdout
    assert (
        "MESSAGE CUDA out of memory. Tried to allocate 16.00 MiB. GPU 0 has a total capacity of"
        in result.stdout
    )


def _missing(*names: str) -> list[str]:
    from glasstorch._tier import missing_kernels
    from glasstorch.fast.cuda.kernels import CudaKernels

    return sorted(set(names) & set(missing_kernels(CudaKernels.__new__(CudaKernels))))


@pytest.mark.skipif(
    bool(_missing("cross_entropy", "cross_entropy_backward", "sgd_step", "random_normal")),
    reason=f"CUDA kernels not written yet: {_missing('cross_entropy', 'sgd_step')}",
)
def test_a_classifier_trains_on_the_device_as_on_the_cpu_with_a_flat_allocator():
    def train(device):
        gt.manual_seed(1)
        model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 5)).to(device)
        opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = gt.randn(40, 12, device=device)
        y = gt.randint(0, 5, (40,), device=device)
        losses, allocs = [], []
        for _ in range(4):
            opt.zero_grad()
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if device == "cuda":
                allocs.append(gt.cuda.memory_stats()["num_device_alloc"])
        return losses, allocs

    on_device, allocs = train("cuda")
    on_host, _ = train("cpu")
    assert on_device == pytest.approx(on_host, rel=1e-4)
    assert on_device[-1] < on_device[0]
    assert allocs[1:] == [allocs[0]] * 3


# ------------------------------------------------- in-place writes allocate nothing
_MIB = 2**20 // 4  # float32 elements in one MiB


def _run_inplace_on_4_mib(op, history: bool, seed: int | None = None):
    """Run ``op(target, other)`` on a 4 MiB float32 target (with history: a
    non-leaf that has a grad_fn) and measure it: ``(w, target, expected,
    extra, version)``, with ``expected`` the values computed on a copy first,
    ``extra`` the allocator's peak above what was allocated before, and
    ``version`` the target's version before the op. A ``seed`` is set before
    each of the two runs, for ops that draw random numbers."""
    size = 4 * 2**20  # bytes: 4 MiB of float32
    w = gt.randn(size // 4, device="cuda", requires_grad=history)
    target = w * 1.0 if history else w
    other = gt.rand(size // 4, device="cuda") + 0.5
    expected = target.detach().clone()
    if seed is not None:
        gt.manual_seed(seed)
    op(expected, other)
    gt.cuda.synchronize()
    before, version = gt.cuda.memory_allocated(), target._version
    gt.cuda.reset_peak_memory_stats()
    if seed is not None:
        gt.manual_seed(seed)
    op(target, other)
    gt.cuda.synchronize()
    extra = gt.cuda.max_memory_allocated() - before
    return w, target, expected, extra, version


@pytest.mark.parametrize(
    "op, saves_old_values",
    [
        (lambda t, o: t.fill_(2.0), False),
        (lambda t, o: t.zero_(), False),
        (lambda t, o: t.copy_(o), False),
        (lambda t, o: t.view(2, -1).copy_(o.view(2, -1)[0]), False),  # broadcast
        (lambda t, o: t.clamp_(-0.5, 0.5), True),  # its gradient needs the old values
        (lambda t, o: t.add_(o, alpha=2), False),
        (lambda t, o: t.sub_(o, alpha=3), False),
        (lambda t, o: t.mul_(o), False),
        (lambda t, o: t.mul_(3), False),
        (lambda t, o: t.div_(o), False),
        (lambda t, o: t.exp_(), False),
        (lambda t, o: t.relu_(), False),
    ],
)
@pytest.mark.parametrize("history", [False, True])
def test_inplace_ops_allocate_no_bytes_of_the_targets_size(op, saves_old_values, history):
    size = 4 * 2**20
    w, target, expected, extra, version = _run_inplace_on_4_mib(op, history)
    if history and saves_old_values:
        # one copy of the old values for backward, as PyTorch keeps (and the bounds, 0-d)
        assert size <= extra < size + 2**20
    else:
        assert extra < 2**20  # nothing of the target's size
    assert target._version == version + 1
    assert gt.equal(target.detach(), expected)
    if history:
        target.sum().backward()
        assert w.grad.shape == w.shape


@pytest.mark.skipif(driver_name() != "simulator", reason="needs the simulator's small arena")
def test_inplace_writes_succeed_on_a_nearly_full_device():
    script = textwrap.dedent(
        """
        import glasstorch as torch
        a = torch.empty(6 * 2**20, device="cuda")  # 24 MiB
        c = torch.empty(6 * 2**20, device="cuda")  # 24 MiB more: 48 of 64 MiB in use
        c.fill_(2.0)  # a temporary of c's size would not fit
        c.add_(a.zero_(), alpha=2)
        c.clamp_(0.0, 1.0).copy_(a)
        print("OK", c[:2].tolist(), torch.cuda.memory_stats()["num_ooms"])
        """
    )
    env = dict(os.environ, GLASSTORCH_CUDA="simulator", GLASSTORCH_SIM_MEMORY=str(64 * 2**20))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "OK [0.0, 0.0] 0" in result.stdout


_INDEX = [3, 70000, 5, 1_000_000]  # positions written by the indexed ops


def _index(device="cuda"):
    return gt.tensor(_INDEX, device=device)


def _few(device="cuda"):
    return gt.tensor([1.5, -2.0, 0.25, 4.0], device=device)


@pytest.mark.parametrize(
    "op, saves_old_values",
    [
        (lambda t, o: t.pow_(2), True),  # PowBackward0 keeps the old values, as PyTorch
        (lambda t, o: t.pow_(o), True),
        (lambda t, o: t.square_(), True),
        (lambda t, o: t.remainder_(o), False),
        (lambda t, o: t.__imod__(0.75), False),
        (lambda t, o: t.floor_divide_(o), False),
        (lambda t, o: t.neg_(), False),
        (lambda t, o: t.round_(), False),
        (lambda t, o: t.round_(decimals=2), False),
        (lambda t, o: t.sign_(), False),
        (lambda t, o: t.trunc_(), False),
        (lambda t, o: t.view(2, -1).masked_fill_(o.view(2, -1)[0] > 1, 0.5), False),
        (lambda t, o: t.scatter_(0, _index(), _few()), False),
        (lambda t, o: t.scatter_(0, _index(), 2.0), False),
        (lambda t, o: t.scatter_add_(0, _index(), _few()), False),
        (lambda t, o: t.index_add_(0, _index(), _few(), alpha=2), False),
        (lambda t, o: t.index_copy_(0, _index(), _few()), False),
        (lambda t, o: t.index_put_((_index(),), _few(), accumulate=True), False),
        (lambda t, o: t.__setitem__(_index(), _few()), False),
        (lambda t, o: F.relu(t, inplace=True), False),
        (lambda t, o: F.relu6(t, inplace=True), True),  # HardtanhBackward0 keeps the old values
    ],
)
@pytest.mark.parametrize("history", [False, True])
def test_more_inplace_ops_allocate_no_bytes_of_the_targets_size(op, saves_old_values, history):
    size = 4 * 2**20
    w, target, expected, extra, version = _run_inplace_on_4_mib(op, history)
    if history and saves_old_values:
        assert size <= extra < size + 2**20  # one copy of the old values for backward
    else:
        assert extra < 2**20  # nothing of the target's size
    assert target._version == version + 1
    actual = target.detach()
    assert bool(((actual == expected) | (actual.isnan() & expected.isnan())).all())  # NaN: pow
    if history:
        target.sum().backward()
        assert w.grad.shape == w.shape


def _square(t):
    return t.view(1024, 1024)  # 4 MiB of float32 as a matrix


@pytest.mark.parametrize(
    "op, saves_old_values",
    [
        (lambda t, o: t.lerp_(o, 0.3), False),
        (lambda t, o: t.lerp_(o, o), False),  # the weight needs no gradient: no copy
        (lambda t, o: t.addcmul_(o, o, value=0.5), False),
        (lambda t, o: t.addcdiv_(o, o[:1], value=0.5), False),
        (lambda t, o: t.clamp_(o[:1] - 1, o), True),  # ClampBackward0 keeps the old values
        (lambda t, o: t.clamp_min_(o), True),
        (lambda t, o: t.clip_(max=o), True),
        (lambda t, o: t.fmod_(0.75), False),
        (lambda t, o: t.fmod_(o), False),
        (lambda t, o: t.sgn_(), False),
        (lambda t, o: t.frac_(), False),
        (lambda t, o: t.atan2_(o), True),
        (lambda t, o: t.hypot_(o), True),
        (lambda t, o: t.copysign_(o), True),
        (lambda t, o: t.xlogy_(o), True),
        (lambda t, o: t.logit_(0.01), True),
        (lambda t, o: t.log2_(), True),  # NaN below 0
        (lambda t, o: t.nan_to_num_(posinf=1.0), True),
        (lambda t, o: t.deg2rad_(), False),
        (lambda t, o: t.index_fill_(0, _index(), 2.0), False),
        (lambda t, o: _square(t).fill_diagonal_(2.0), False),
        (lambda t, o: _square(t).tril_(), False),
        (lambda t, o: _square(t).triu_(3), False),
        (lambda t, o: F.leaky_relu(t, 0.2, inplace=True), False),  # keeps its result: t
        (lambda t, o: F.elu(t, inplace=True), False),
        (lambda t, o: F.celu(t, 0.5, inplace=True), False),
        (lambda t, o: F.selu(t, inplace=True), False),
        (lambda t, o: F.rrelu(t, inplace=True), False),
        (lambda t, o: F.silu(t, inplace=True), True),  # keeps the old values, as PyTorch
        (lambda t, o: F.hardsigmoid(t, inplace=True), True),
        (lambda t, o: F.hardswish(t, inplace=True), True),
        (lambda t, o: F.mish(t, inplace=True), True),
        (lambda t, o: F.hardtanh(t, inplace=True), True),
        (lambda t, o: F.threshold(t, 0.5, -1.0, inplace=True), True),
        (lambda t, o: nn.LeakyReLU(inplace=True)(t), False),
    ],
)
@pytest.mark.parametrize("history", [False, True])
def test_composed_inplace_ops_allocate_no_bytes_of_the_targets_size(op, saves_old_values, history):
    # Composed from several kernels, these run on pieces of the target
    # (inplace.write_in_pieces): their temporaries stay small.
    size = 4 * 2**20
    w, target, expected, extra, version = _run_inplace_on_4_mib(op, history, seed=2)
    if history and saves_old_values:
        assert size <= extra < size + 2**20  # one copy of the old values for backward
    else:
        assert extra < 2**20  # nothing of the target's size
    assert target._version == version + 1
    actual = target.detach()
    assert bool(((actual == expected) | (actual.isnan() & expected.isnan())).all())
    if history:
        target.sum().backward()
        assert w.grad.shape == w.shape


@pytest.mark.parametrize("history", [False, True])
def test_inplace_dropout_keeps_a_bool_mask_not_a_float_one(history):
    size = 4 * 2**20
    w = gt.randn(size // 4, device="cuda", requires_grad=history)
    target = w * 1.0 if history else w
    gt.manual_seed(4)
    expected = F.dropout(target.detach(), 0.25)
    gt.cuda.synchronize()
    before, version = gt.cuda.memory_allocated(), target._version
    gt.cuda.reset_peak_memory_stats()
    gt.manual_seed(4)
    F.dropout(target, 0.25, inplace=True)
    gt.cuda.synchronize()
    extra = gt.cuda.max_memory_allocated() - before
    assert size // 4 <= extra < size // 4 + 2**20  # the bool mask: a quarter of the target
    assert target._version == version + 1
    assert gt.equal(target.detach(), expected)
    if history:
        target.sum().backward()
        assert gt.equal(w.grad, (expected != 0).float() / 0.75)


@pytest.mark.parametrize(
    "dtype, op",
    [
        (gt.bool, lambda t, o: t.logical_and_(o)),
        (gt.bool, lambda t, o: t.logical_xor_(o)),
        (gt.bool, lambda t, o: t.logical_not_()),
        (gt.bool, lambda t, o: t.eq_(o)),
        (gt.bool, lambda t, o: t.__ior__(o)),
        (gt.int32, lambda t, o: t.bitwise_and_(6)),
        (gt.int32, lambda t, o: t.__ixor__(o)),
        (gt.int32, lambda t, o: t.bitwise_not_()),
        (gt.int32, lambda t, o: t.floor_divide_(3)),
        (gt.int32, lambda t, o: t.remainder_(o)),
        (gt.float32, lambda t, o: t.lt_(0.5)),  # a bool temporary: a quarter of the target
        (gt.float32, lambda t, o: t.uniform_(-1, 1)),
        (gt.float32, lambda t, o: t.normal_(2, 3)),
        (gt.float32, lambda t, o: t.bernoulli_(0.25)),
        (gt.float32, lambda t, o: t.__setitem__(t > 0.5, 0.0)),  # as masked_fill_
        (gt.float32, lambda t, o: F.threshold(t, 0.5, -1.0, inplace=True)),
        (gt.float32, lambda t, o: t.heaviside_(o)),  # no gradient: backward raises
    ],
)
def test_inplace_ops_without_gradients_allocate_no_bytes_of_the_targets_size(dtype, op):
    size = 4 * 2**20
    numel = size // dtype.itemsize
    target = (gt.rand(numel, device="cuda") * 20).to(dtype)
    other = (gt.rand(numel, device="cuda") * 20 + 1).to(dtype)
    gt.manual_seed(5)
    expected = target.clone()
    op(expected, other)
    gt.cuda.synchronize()
    before, version = gt.cuda.memory_allocated(), target._version
    gt.cuda.reset_peak_memory_stats()
    gt.manual_seed(5)
    op(target, other)
    gt.cuda.synchronize()
    extra = gt.cuda.max_memory_allocated() - before
    # A bool temporary (a comparison, a mask, an integer divisor's zero check): a quarter
    allowed = 2**20 if dtype is gt.bool else size // 4 + 2**20
    assert extra < allowed
    assert target._version == version + 1
    assert gt.equal(target, expected)


@pytest.mark.parametrize(
    "op",
    [
        lambda t, o: t.add_(o, alpha=2),
        lambda t, o: t.mul_(o),
        lambda t, o: t.lerp_(o, 0.5),
        lambda t, o: t.lt_(o),  # bools, cast into the float target
    ],
)
@pytest.mark.parametrize("history", [False, True])
def test_a_wider_operand_is_computed_in_pieces_not_in_a_wide_copy(op, history):
    # float32 target, float64 operand: computed in float64 a piece at a time and
    # cast into the target, where a whole float64 result would be twice its size
    size = 4 * 2**20
    w = gt.randn(size // 4, device="cuda", requires_grad=history)
    target = w * 1.0 if history else w
    other = gt.rand(size // 4, device="cuda", dtype=gt.float64) + 0.5
    expected = target.detach().clone()
    op(expected, other)
    gt.cuda.synchronize()
    before, version = gt.cuda.memory_allocated(), target._version
    gt.cuda.reset_peak_memory_stats()
    op(target, other)
    gt.cuda.synchronize()
    extra = gt.cuda.max_memory_allocated() - before
    assert extra < 2**20  # (mul_ keeps its operand for backward, not the target's old values)
    assert target.dtype is gt.float32 and target._version == version + 1
    assert gt.equal(target.detach(), expected)
