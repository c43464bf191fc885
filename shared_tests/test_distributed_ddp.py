"""DistributedDataParallel on 2 ranks, through the launcher, asserting values.

One launch (``distributed/ddp_checks.py`` on 2 ranks, about a second to start) runs every
check and leaves each rank's observations in a JSON file; the tests below read
them. What is asserted:

* construction broadcasts rank 0's weights; the ``state_dict`` keys carry the
  ``module.`` prefix;
* averaged gradients, and the weights after 3 SGD steps, equal one process
  training on the whole batch, with the default buckets, with many small
  buckets, and with ``gradient_as_bucket_view``;
* ``no_sync`` accumulates locally and the next synchronised backward reduces
  the sum;
* ``find_unused_parameters``: a parameter unused on one rank gets the average
  of the others' gradients, one unused everywhere keeps ``grad`` None;
* without it, an unused parameter gives PyTorch's error at the next forward,
  naming the parameters;
* ``broadcast_buffers``: every forward starts from rank 0's running statistics;
* ``DistributedSampler`` takes its rank and world size from the process group
  and, with the DataLoader, deals disjoint shares;
* the same training and ``no_sync`` checks with the model on (simulated) CUDA,
  whose tensors travel through host memory;
* a program written for ``torchrun`` (``programs/ddp_training.py``: model,
  optimizer, DistributedSampler) gives PyTorch's loss history and final weights
  (PyTorch over gloo under ``torchrun``, glasstorch over MPI under its launcher).

Needs mpi4py and an MPI (``pip install glasstorch[distributed]``); skipped,
visibly, without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from cuda_support import requires_cuda
from oracle import assert_same_error, needs_torch, torch, torchrun

pytestmark = pytest.mark.distributed
#: The launched job makes its own tensors (the cuda variant at the end covers devices), and the
#: one-process tests check bookkeeping, not kernels.
cpu_only = pytest.mark.cpu_only("the ranks make their own tensors; a cuda variant covers devices")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORLD = 2


def launch(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``script`` on 2 ranks with glasstorch's launcher (as ``torchrun`` would)."""
    pytest.importorskip("mpi4py", reason="the distributed tests need mpi4py and an MPI")
    command = [sys.executable, "-m", "glasstorch.distributed.run", "--nproc-per-node", str(WORLD)]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]), **(env or {}))
    return subprocess.run(
        [*command, script, *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=environment,
        check=False,
    )


def run_checks(tmp_path_factory, device: str) -> list[dict]:
    """Every rank's observations from one launch of ``distributed/ddp_checks.py``."""
    out = tmp_path_factory.mktemp(f"ddp-{device}")
    done = launch(os.path.join(HERE, "distributed", "ddp_checks.py"), str(out), device)
    assert done.returncode == 0, done.stdout + done.stderr
    results = []
    for rank in range(WORLD):
        with open(out / f"rank{rank}.json", encoding="utf-8") as file:
            results.append(json.load(file))
    return results


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    return run_checks(tmp_path_factory, "cpu")


@pytest.fixture(scope="module")
def cuda_ranks(tmp_path_factory) -> list[dict]:
    return run_checks(tmp_path_factory, "cuda")


def close(ours, theirs, atol=1e-6) -> None:
    """Nested lists of numbers (or None) equal within float32 rounding."""
    if ours is None or theirs is None:
        assert ours is None and theirs is None
        return
    np.testing.assert_allclose(
        np.array(ours, dtype=float), np.array(theirs, dtype=float), atol=atol, rtol=1e-5
    )


@cpu_only
def test_construction_broadcasts_rank_0s_weights(ranks):
    checks = [rank["construction_and_training"] for rank in ranks]
    assert ranks[0]["world_size"] == WORLD
    assert checks[0]["initial"] != checks[1]["initial"]  # seeded apart on purpose
    for check in checks:
        for ours, rank0 in zip(check["after_broadcast"], checks[0]["initial"]):
            close(ours, rank0, atol=0)
    assert checks[0]["state_dict_keys"][:2] == ["module.0.weight", "module.0.bias"]


VARIANTS = ["buckets None view False", "buckets 0.0005 view False", "buckets 0.0005 view True"]


def assert_full_batch_training(ranks: list[dict], variant: str) -> None:
    runs = [rank["construction_and_training"][variant] for rank in ranks]
    if variant == "buckets None view False":
        assert runs[0]["bucket_sizes"] == [6]  # 2 KiB of parameters: one bucket
    else:
        assert len(runs[0]["bucket_sizes"]) > 1 and sum(runs[0]["bucket_sizes"]) == 6
    for run in runs:
        for step in run["history"]:
            for ddp_grad, single_grad in zip(step["ddp"], step["single"]):
                close(ddp_grad, single_grad)
        for ours, single in zip(run["ddp_weights"], run["single_weights"]):
            close(ours, single)
    for ours, theirs in zip(runs[0]["ddp_weights"], runs[1]["ddp_weights"]):
        close(ours, theirs, atol=0)  # the copies stay identical


def assert_no_sync_accumulation(ranks: list[dict]) -> None:
    checks = [rank["no_sync"] for rank in ranks]
    # Under no_sync nothing was communicated: the ranks' gradients differ.
    assert not np.allclose(np.array(checks[0]["local"][0]), np.array(checks[1]["local"][0]))
    for check in checks:
        for ours, single in zip(check["ddp"], check["single"]):
            close(ours, single)


@cpu_only
@pytest.mark.parametrize("variant", VARIANTS)
def test_averaged_gradients_and_steps_equal_full_batch_training(ranks, variant):
    assert_full_batch_training(ranks, variant)


@cpu_only
def test_no_sync_accumulates_locally_then_reduces_the_sum(ranks):
    assert_no_sync_accumulation(ranks)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("variant", VARIANTS)
def test_simulated_cuda_model_trains_as_full_batch(cuda_ranks, variant):
    assert_full_batch_training(cuda_ranks, variant)


@pytest.mark.cuda
@requires_cuda
def test_simulated_cuda_no_sync_accumulates(cuda_ranks):
    assert_no_sync_accumulation(cuda_ranks)


@cpu_only
def test_find_unused_parameters_averages_what_was_used(ranks):
    checks = [rank["find_unused_parameters"] for rank in ranks]
    local = [check["local"] for check in checks]
    for check in checks:
        for iteration in check["ddp"]:
            for name in ("trunk.weight", "trunk.bias"):  # used everywhere: the mean
                close(iteration[name], (np.array(local[0][name]) + np.array(local[1][name])) / 2)
            for name in ("sometimes.weight", "sometimes.bias"):  # rank 0 only: rank 1 adds 0
                assert local[1][name] is None
                close(iteration[name], np.array(local[0][name]) / 2)
            assert iteration["never.weight"] is None and iteration["never.bias"] is None


@cpu_only
def test_unused_parameter_without_find_unused_parameters_is_named_at_the_next_forward(ranks):
    for rank, result in enumerate(ranks):
        message = result["unused_parameter_error"]["error"]
        assert message is not None
        assert message.startswith(
            "Expected to have finished reduction in the prior iteration before starting a new one."
        )
        assert "find_unused_parameters=True" in message
        assert f"Parameter indices which did not receive grad for rank {rank}: 2 3 4 5" in message
        names = "sometimes.weight, sometimes.bias, never.weight, never.bias"
        assert f"Parameters which did not receive grad for rank {rank}: {names}" in message


@cpu_only
def test_buffers_are_broadcast_from_rank_0_before_each_forward(ranks):
    steps = [rank["buffers"]["steps"] for rank in ranks]
    momentum = 0.1  # BatchNorm1d's default
    # The first forward: both start from zeros (broadcast), each adds its own batch.
    for rank in range(WORLD):
        close(steps[rank][0]["running_mean"], momentum * np.array(steps[rank][0]["batch_mean"]))
    assert not np.allclose(steps[0][0]["running_mean"], steps[1][0]["running_mean"])
    # The second: both start from rank 0's statistics, then add their own batch.
    for rank in range(WORLD):
        expected = (1 - momentum) * np.array(steps[0][0]["running_mean"]) + momentum * np.array(
            steps[rank][1]["batch_mean"]
        )
        close(steps[rank][1]["running_mean"], expected)


@cpu_only
def test_distributed_sampler_and_dataloader_deal_disjoint_shares(ranks):
    from glasstorch.utils.data import DistributedSampler

    checks = [rank["sampler_and_loader"] for rank in ranks]
    for rank, check in enumerate(checks):
        assert (check["num_replicas"], check["rank"]) == (WORLD, rank)
    for epoch in range(2):
        shares = [[i for batch in check["epochs"][epoch] for i in batch] for check in checks]
        assert [len(share) for share in shares] == [11, 11]  # 21 padded to 22
        assert set(shares[0]) | set(shares[1]) == set(range(21))
        for rank, share in enumerate(shares):  # what a sampler told its rank gives
            sampler = DistributedSampler(range(21), num_replicas=WORLD, rank=rank, seed=3)
            sampler.set_epoch(epoch)
            assert share == list(sampler)
    assert checks[0]["epochs"][0] != checks[0]["epochs"][1]


@cpu_only
@needs_torch
def test_torchrun_program_gives_pytorchs_loss_history_and_final_weights(tmp_path):
    """``programs/ddp_training.py`` under torchrun (PyTorch, gloo) and under glasstorch's launcher."""
    loader = os.path.join(HERE, "programs", "loader.py")
    ours, theirs = tmp_path / "glasstorch.json", tmp_path / "torch.json"
    done = launch(
        loader,
        "ddp_training",
        "glasstorch",
        env={"DDP_TRAINING_OUTPUT": str(ours), "GLASSTORCH_RNG": "pytorch"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # --standalone: torchrun's own rendezvous on a free port, not 29500, which
    # another job on the machine may hold.
    done = torchrun(
        ["--standalone", "--nproc-per-node", str(WORLD), loader, "ddp_training", "torch"],
        timeout=240,
        env=dict(os.environ, DDP_TRAINING_OUTPUT=str(theirs), OMP_NUM_THREADS="1"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    mine, reference = (json.loads(path.read_text()) for path in (ours, theirs))
    assert (
        len(mine["losses"]) == len(reference["losses"]) == 3 * 6
    )  # 45 samples a rank, batches of 8
    close(mine["losses"], reference["losses"], atol=1e-5)
    assert mine["weights"].keys() == reference["weights"].keys()
    for name, value in reference["weights"].items():
        close(mine["weights"][name], value, atol=1e-5)


# ------------------------------------------- the reducer in one process (no MPI needed)
class RecordingGroup:
    """Stands in for ``glasstorch.distributed`` with a world of one: records each collective.

    Each all-reduce is logged with the number of gradients that were ready
    when it started, which shows whether communication began during backward.
    """

    def __init__(self):
        self.log: list[tuple] = []
        self.ready_so_far = 0

    def is_available(self):
        return True

    def get_world_size(self, group=None):
        return 1

    def get_rank(self, group=None):
        return 0

    def broadcast(self, tensor, src=None, group=None, async_op=False, group_src=None):
        self.log.append(("broadcast", tuple(tensor.shape)))

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        self.log.append(("all_reduce", tensor.numel(), self.ready_so_far))
        if async_op:
            return self

    def wait(self):  # the Work of an all_reduce: already complete
        self.log.append(("wait",))
        return True


@pytest.fixture
def group(monkeypatch):
    import glasstorch

    fake = RecordingGroup()
    monkeypatch.setitem(sys.modules, "glasstorch.distributed", fake)
    monkeypatch.setattr(glasstorch, "distributed", fake, raising=False)
    return fake


def layers(sizes, gt):
    return gt.nn.Sequential(*[gt.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])


@cpu_only
def test_buckets_follow_pytorchs_assignment_in_reverse_registration_order(group):
    import glasstorch as gt
    from glasstorch.nn.parallel.reducer import assign_buckets

    pytest.importorskip("torch")
    sizes = [(70_000, "float32"), (100, "float64"), (300_000, "float32"), (5, "float64")] * 3
    limits = [1 << 20, 2 << 20]
    ours = assign_buckets([gt.zeros(n, dtype=getattr(gt, d)) for n, d in sizes], limits)
    theirs = torch.distributed._compute_bucket_assignment_by_size(
        [torch.zeros(n, dtype=getattr(torch, d)) for n, d in sizes], limits
    )[0]
    assert ours == theirs
    model = layers([600, 600, 600, 10], gt)  # 6 parameters, 2.9 MB in all
    ddp = gt.nn.parallel.DistributedDataParallel(model)
    params = list(model.parameters())
    order = [param for bucket in ddp.reducer.buckets for param in bucket.params]
    assert [id(p) for p in order] == [id(p) for p in reversed(params)]
    # The first bucket closes once it passes 1 MiB: the last layer and the middle one.
    assert [len(bucket.params) for bucket in ddp.reducer.buckets] == [4, 2]
    buffer = ddp.reducer.buckets[0].buffer
    assert buffer.is_contiguous() and buffer.numel() == sum(p.numel() for p in order[:4])
    assert [entry[0] for entry in group.log] == ["broadcast"] * 6  # every parameter from rank 0


@cpu_only
def test_each_bucket_is_sent_during_backward_once_full(group):
    import glasstorch as gt

    model = layers([4, 64, 64, 64, 3], gt)
    ddp = gt.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.01)  # 10 KiB buckets
    sizes = [len(bucket.params) for bucket in ddp.reducer.buckets]
    assert len(sizes) >= 3

    def count_ready(param):
        group.ready_so_far += 1

    for param in model.parameters():  # registered after DDP's hook: runs after it
        param.register_post_accumulate_grad_hook(count_ready)
    group.log.clear()
    ddp(gt.randn(2, 4)).sum().backward()
    reduces = [entry for entry in group.log if entry[0] == "all_reduce"]
    assert len(reduces) == len(sizes)
    # Bucket k starts when its last gradient is ready: sizes[0] + ... + sizes[k] of them
    # (counted before that gradient's own counting hook), well before backward ends.
    expected = [sum(sizes[: k + 1]) - 1 for k in range(len(sizes))]
    assert [ready for _, _, ready in reduces] == expected
    assert group.log.index(("wait",)) > group.log.index(reduces[-1])  # waits come at the end


@cpu_only
def test_no_sync_and_no_grad_forward_send_nothing(group):
    import glasstorch as gt

    model = layers([3, 5, 2], gt)
    ddp = gt.nn.parallel.DistributedDataParallel(model)
    group.log.clear()
    with ddp.no_sync():
        ddp(gt.randn(2, 3)).sum().backward()
    with gt.no_grad():
        ddp(gt.randn(2, 3))
    assert group.log == []
    assert ddp.require_backward_grad_sync


@cpu_only
@pytest.mark.errors
def test_ddp_needs_a_parameter_that_requires_grad(group):
    import glasstorch as gt

    model = gt.nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="DistributedDataParallel is not needed when a module"):
        gt.nn.parallel.DistributedDataParallel(model)


def two_heads(gt):
    """A module whose forward uses ``used`` and skips ``skipped``."""

    class TwoHeads(gt.nn.Module):
        def __init__(self):
            super().__init__()
            self.used = gt.nn.Linear(3, 2)
            self.skipped = gt.nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    return TwoHeads()


@cpu_only
def test_find_unused_parameters_in_one_process(group):
    import glasstorch as gt

    model = two_heads(gt)
    ddp = gt.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    x = gt.randn(4, 3)
    for _ in range(2):
        ddp(x).sum().backward()
    assert model.skipped.weight.grad is None and model.skipped.bias.grad is None
    np.testing.assert_allclose(model.used.bias.grad.tolist(), [8.0, 8.0])  # 4 rows, 2 passes
    assert [entry[0] for entry in group.log].count("all_reduce") == 2 * 2  # a bucket, a used-map


@cpu_only
@pytest.mark.errors
def test_unused_parameter_error_in_one_process(group):
    import glasstorch as gt

    ddp = gt.nn.parallel.DistributedDataParallel(two_heads(gt))
    x = gt.randn(4, 3)
    ddp(x).sum().backward()  # the bucket waits for skipped's gradients: never sent
    assert [entry[0] for entry in group.log].count("all_reduce") == 0
    with pytest.raises(RuntimeError) as error:
        ddp(x)
    message = str(error.value)
    assert "Expected to have finished reduction in the prior iteration" in message
    assert "Parameter indices which did not receive grad for rank 0: 2 3" in message
    assert (
        "Parameters which did not receive grad for rank 0: skipped.weight, skipped.bias" in message
    )
    ddp(x)  # reported once: the next iteration starts afresh


@cpu_only
@pytest.mark.errors
def test_sampler_and_ddp_without_a_process_group_fail_as_pytorch():
    import glasstorch as gt

    message = "Default process group has not been initialized, please make sure to call init_process_group."
    assert_same_error(
        lambda: gt.utils.data.DistributedSampler(range(4)),
        lambda: torch.utils.data.DistributedSampler(range(4)),
        exc_type=ValueError,
        match=message,
    )
    assert_same_error(
        lambda: gt.nn.parallel.DistributedDataParallel(gt.nn.Linear(2, 2)),
        lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)),
        exc_type=ValueError,
        match=message,
    )
