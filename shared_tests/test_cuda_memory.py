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
    from glasstorch.fast.cuda_kernels import missing_cuda_kernels

    return sorted(set(names) & set(missing_cuda_kernels()))


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
