"""glasstorch.distributed on 2 ranks: every collective, async work, errors, the launcher.

The checks that need a running job live in ``distributed/checks.py``: one job
of 2 ranks runs them all (starting a job costs about a second), and each
check becomes one test here. The failure modes (a rank that raises,
mismatched collectives in detail mode, a collective that times out) need a
job each, started from a small program in ``distributed/``. Every job runs
under a safety timeout, so a bug shows as a failure, never as a hung suite.

Skipped, with the reason, only when mpi4py is not installed (``make install``
installs it with the ``distributed`` extra).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_support import requires_cuda
from oracle import needs_torch, torchrun

pytest.importorskip(
    "mpi4py", reason="mpi4py is not installed: pip install -e '.[distributed]' (make install does)"
)

import glasstorch.distributed as dist  # noqa: E402
from glasstorch.distributed import run as launcher  # noqa: E402

pytestmark = pytest.mark.distributed

HERE = Path(__file__).parent / "distributed"
CHECKS = HERE / "checks.py"
SAFETY = 240  # seconds: no job here should come near this, even on a loaded machine
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
import checks  # noqa: E402

CHECK_NAMES = list(checks.CHECKS)


def launch(*arguments: str, nproc: int = 2, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m glasstorch.distributed.run --nproc-per-node nproc arguments...``."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [environment.get("PYTHONPATH")])]
    )
    command = [sys.executable, "-m", "glasstorch.distributed.run"]
    command += ["--nproc-per-node", str(nproc), *arguments]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=SAFETY, env=environment, cwd=ROOT
    )


def run_checks(tmp_path_factory, device: str) -> dict:
    out = tmp_path_factory.mktemp(f"distributed-{device}")
    job = launch(str(CHECKS), str(out), device)
    assert job.returncode == 0, job.stdout + job.stderr
    return {rank: json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)}


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory):
    return run_checks(tmp_path_factory, "cpu")


@pytest.fixture(scope="module")
def cuda_results(tmp_path_factory):
    return run_checks(tmp_path_factory, "cuda")


def assert_passed(results: dict, name: str) -> None:
    for rank in (0, 1):
        assert results[rank][name] == "ok", f"rank {rank}:\n{results[rank][name]}"


@pytest.mark.cpu_only("the ranks make their own tensors; the cuda variant below covers devices")
@pytest.mark.parametrize("name", CHECK_NAMES)
def test_two_ranks(cpu_results, name):
    assert_passed(cpu_results, name)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("name", CHECK_NAMES)
def test_two_ranks_simulated_cuda_tensors_through_host_memory(cuda_results, name):
    assert_passed(cuda_results, name)


# ------------------------------------------------------------ failing jobs
cpu_only = pytest.mark.cpu_only("a job of its own, started from the host")


@cpu_only
def test_a_rank_that_raises_ends_the_whole_job_with_its_traceback():
    job = launch(str(HERE / "raise_on_rank_one.py"))
    assert job.returncode != 0
    assert "ValueError: rank 1 gives up" in job.stderr
    assert "[rank 1] uncaught exception; ending the job" in job.stderr
    assert "rank 0 should never get here" not in job.stdout


@cpu_only
@pytest.mark.parametrize(
    ("kind", "difference"),
    [
        ("shape", "tensor shapes: [[4]] vs [[3]]"),
        ("op", "op type: all_reduce vs broadcast"),
        ("missing", "op type: all_reduce vs destroy_process_group"),
    ],
)
def test_detail_mode_names_the_ranks_and_what_differs(kind, difference):
    job = launch(
        str(HERE / "mismatched_collectives.py"), kind, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
    )
    assert job.returncode != 0
    assert "Detected mismatch between collectives on ranks." in job.stderr
    assert "Rank 0 is running collective" in job.stderr
    assert "but Rank 1 is running collective" in job.stderr
    assert "sequence number=2" in job.stderr  # the first all_reduce agreed
    assert difference in job.stderr
    assert "no mismatch was detected" not in job.stdout


@cpu_only
def test_a_collective_past_its_timeout_prints_every_ranks_stack_and_ends_the_job():
    job = launch(str(HERE / "collective_timeout.py"))
    assert job.returncode != 0
    assert "[Rank 0] Watchdog caught collective operation timeout: all_reduce" in job.stderr
    assert "[Rank 0] Python stack of every thread" in job.stderr
    assert "[Rank 1] Python stack of every thread" in job.stderr
    assert "in rank_one_is_busy" in job.stderr  # where the missing rank was


# ------------------------------------------------- without a job: API and launcher
@cpu_only
def test_errors_before_init_process_group():
    assert not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="Unknown backend type foo"):
        dist.init_process_group("foo")
    if not dist.is_nccl_available():
        with pytest.raises(RuntimeError, match="backend 'nccl' needs NCCL and a real GPU"):
            dist.init_process_group("nccl")
    assert not dist.is_initialized()


@cpu_only
def test_names_as_pytorch_spells_them():
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.MPI == "mpi"
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert [op.name for op in dist.ReduceOp.RedOpType][:5] == [
        "SUM",
        "AVG",
        "PRODUCT",
        "MIN",
        "MAX",
    ]
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.default_pg_timeout.total_seconds() == 1800
    assert not dist.is_gloo_available() and dist.is_mpi_available()


@cpu_only
def test_launcher_accepts_torchruns_flags_in_both_spellings():
    dashed = launcher.parse_args(["--nproc-per-node", "3", "--master-port", "1234", "t.py", "-x"])
    underscored = launcher.parse_args(["--nproc_per_node=3", "--master_port=1234", "t.py", "-x"])
    for args in (dashed, underscored):
        assert args.nproc_per_node == 3 and args.master_port == 1234
        assert args.script == "t.py" and args.script_args == ["-x"]
    assert launcher.parse_args(["--nnodes", "1:2", "t.py"]).nnodes == 2
    endpoint = launcher.parse_args(["--rdzv-endpoint", "node7:4000", "t.py"])
    assert (endpoint.master_addr, endpoint.master_port) == ("node7", 4000)


@cpu_only
def test_launcher_command_line_for_open_mpi():
    args = launcher.parse_args(["--nproc-per-node", "2", "--hosts", "a,b", "train.py", "--lr", "1"])
    command = launcher.mpiexec_command(args, launcher.host_list(args), "/x/mpiexec", "openmpi")
    assert command[:3] == ["/x/mpiexec", "-n", "4"]
    assert "--oversubscribe" in command and command[command.index("--bind-to") + 1] == "none"
    assert command[command.index("--host") + 1] == "a:2,b:2"
    assert command[-4:] == ["--", "train.py", "--lr", "1"]
    assert "glasstorch.distributed.rank_main" in command
    many = launcher.parse_args(["--nproc-per-node", str((os.cpu_count() or 1) + 1), "t.py"])
    assert "--oversubscribe" in launcher.mpiexec_command(many, None, "/x/mpiexec", "openmpi")
    assert "--oversubscribe" not in launcher.mpiexec_command(many, None, "/x/mpiexec", "mpich")
    environment = launcher.launcher_environment(total_ranks=64)
    if os.geteuid() == 0:  # root in a container: Open MPI refuses without these
        assert environment["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
        assert environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert environment["OMPI_MCA_mpi_yield_when_idle"] == "1"  # fewer than two cores per rank
    cores = os.cpu_count() or 1
    # one core per rank, or less: the waiting thread must yield
    half_busy = launcher.launcher_environment(total_ranks=cores // 2 + 1)
    assert half_busy.get("OMPI_MCA_mpi_yield_when_idle") == "1"
    if cores >= 2 and "OMPI_MCA_mpi_yield_when_idle" not in os.environ:
        roomy = launcher.launcher_environment(total_ranks=cores // 2)  # two cores per rank: spin
        assert "OMPI_MCA_mpi_yield_when_idle" not in roomy
    assert Path(launcher.find_mpiexec()).name in ("mpiexec", "mpirun")


@cpu_only
def test_torchrun_style_nodes_meet_at_node_zero():
    # Two "nodes" on this machine: the same command with --node-rank 0 and 1.
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    common = ["--nnodes", "2", "--master-port", str(port), "--local-addr", "localhost"]
    script = str(HERE / "report_environment.py")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "glasstorch.distributed.run", "--nproc-per-node", "1"]
    follower = subprocess.Popen(
        [*command, *common, "--node-rank", "1", script],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    leader = launch(*common, "--node-rank", "0", script, nproc=1)
    out, err = follower.communicate(timeout=SAFETY)
    assert leader.returncode == 0 and follower.returncode == 0, leader.stderr + err
    lines = sorted(line for line in leader.stdout.splitlines() if line.startswith("rank"))
    assert lines == [
        f"rank RANK={r} LOCAL_RANK=0 GROUP_RANK={r} WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 sum=1"
        for r in range(2)
    ]


@cpu_only
def test_plain_mpiexec_works_and_a_raising_rank_still_ends_the_job():
    """Without the launcher: init_process_group reads MPI's ranks, and the uncaught
    exception hook it installs aborts the job."""
    mpiexec = launcher.find_mpiexec()
    flags = ["--oversubscribe"] if launcher.mpi_flavour(mpiexec) == "openmpi" else []
    environment = launcher.launcher_environment(total_ranks=2)

    def on_two_ranks(script: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [mpiexec, "-n", "2", *flags, sys.executable, str(HERE / script)],
            capture_output=True,
            text=True,
            timeout=SAFETY,
            env=environment,
            cwd=ROOT,
        )

    ok = on_two_ranks("report_environment.py")
    assert ok.returncode == 0, ok.stderr
    assert sorted(line.split()[-1] for line in ok.stdout.splitlines()) == ["sum=1", "sum=1"]
    failing = on_two_ranks("raise_on_rank_one.py")
    assert failing.returncode != 0
    assert "ValueError: rank 1 gives up" in failing.stderr
    assert "rank 0 should never get here" not in failing.stdout


@cpu_only
def test_processes_started_without_mpi_are_refused_with_a_clear_error():
    # As torchrun starts them (RANK and WORLD_SIZE in the environment), then as
    # multiprocessing.spawn programs do (rank= and world_size= arguments).
    program = (
        "import os, glasstorch.distributed as d\n"
        "for kwargs in ({}, {'rank': 0, 'world_size': 2}):\n"
        "    if kwargs: del os.environ['WORLD_SIZE'], os.environ['RANK']\n"
        "    try: d.init_process_group('gloo', **kwargs)\n"
        "    except RuntimeError as error: print('refused:', error)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "RANK": "0", "WORLD_SIZE": "2"}
    job = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=SAFETY,
        env=environment,
    )
    refusals = [line for line in job.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 2, job.stdout + job.stderr
    for refusal in refusals:
        assert "not started as one of the ranks of an MPI job" in refusal
        assert "python -m glasstorch.distributed.run --nproc-per-node 2 script.py" in refusal


@cpu_only
@needs_torch
def test_a_torchrun_program_gives_pytorchs_losses_and_weights(tmp_path):
    program = str(HERE / "data_parallel_by_hand.py")
    ours = launch(program, "glasstorch", str(tmp_path / "glasstorch.json"))
    assert ours.returncode == 0, ours.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    theirs = torchrun(
        ["--nproc-per-node", "2", "--master-port", str(port), program, "torch"]
        + [str(tmp_path / "torch.json")],
        timeout=SAFETY,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert theirs.returncode == 0, theirs.stderr
    ours, theirs = (
        json.loads((tmp_path / f"{n}.json").read_text()) for n in ("glasstorch", "torch")
    )
    for key in ("losses", "weight", "bias"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6)
