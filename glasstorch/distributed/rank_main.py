"""What each rank runs under the launcher: set torchrun's variables, run the script, abort on error.

``mpiexec`` starts ``python -m glasstorch.distributed.rank_main ... -- script.py
args`` once per rank. The MPI launcher tells each process who it is through
its own environment variables (Open MPI: ``OMPI_COMM_WORLD_RANK``; MPICH's
hydra: ``PMI_RANK``; MVAPICH; Slurm's ``srun``: ``SLURM_PROCID``), before MPI
is even initialised. From them this module sets PyTorch's variables:

=====================  =====================================================
``RANK``               the global rank (MPI's)
``WORLD_SIZE``         the number of ranks
``LOCAL_RANK``         the rank on this node: ``RANK % nproc_per_node``
``LOCAL_WORLD_SIZE``   ranks per node
``GROUP_RANK``         the node's rank: ``RANK // nproc_per_node``
``MASTER_ADDR/PORT``   as given to the launcher (MPI does not need them)
=====================  =====================================================

and then runs the script as ``__main__`` (or a module with ``-m``).

If the script raises, the other ranks would wait forever in their next
collective: this module prints the traceback and calls ``MPI_Abort``, which
ends every rank of the job at once with a non-zero exit (as ``python -m
mpi4py`` does). If the script fails before MPI was initialised, the process
just exits non-zero, and mpiexec ends the job itself.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback


def mpi_rank_and_size() -> tuple[int, int]:
    """This process's rank and the job's size, from the MPI launcher's variables."""
    for rank_name, size_name in (
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    ):
        if rank_name in os.environ and size_name in os.environ:
            return int(os.environ[rank_name]), int(os.environ[size_name])
    return 0, 1


def set_environment(nproc_per_node: int, master_addr: str, master_port: int, run_id: str) -> None:
    """PyTorch's per-rank variables (module docstring), from MPI's."""
    rank, size = mpi_rank_and_size()
    values = {
        "RANK": rank,
        "WORLD_SIZE": size,
        "LOCAL_RANK": rank % nproc_per_node,
        "LOCAL_WORLD_SIZE": nproc_per_node,
        "GROUP_RANK": rank // nproc_per_node,
        "ROLE_RANK": rank,
        "ROLE_WORLD_SIZE": size,
        "GROUP_WORLD_SIZE": max(1, size // nproc_per_node),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": master_port,
        "TORCHELASTIC_RUN_ID": run_id,
    }
    for name, value in values.items():
        os.environ[name] = str(value)


def abort_job(code: int) -> None:
    """End every rank: ``MPI_Abort`` if this rank initialised MPI, else exit with ``code``."""
    sys.stdout.flush()
    sys.stderr.flush()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.COMM_WORLD.Abort(code)
    os._exit(code)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m glasstorch.distributed.rank_main")
    parser.add_argument("--nproc-per-node", type=int, required=True)
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, default=29500)
    parser.add_argument("--run-id", default="none")
    parser.add_argument("-m", dest="module", action="store_true")
    parser.add_argument("--no-python", action="store_true")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    set_environment(args.nproc_per_node, args.master_addr, args.master_port, args.run_id)
    # One write per line, so that ranks' lines do not cut into each other, and
    # nothing printed is lost in a buffer when another rank aborts the job.
    sys.stdout.reconfigure(line_buffering=True)
    if args.no_python:
        os.execvp(program[0], program)
    sys.argv = list(program)
    try:
        if args.module:
            runpy.run_module(program[0], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(program[0]))
            runpy.run_path(program[0], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if code:
            if exit_.code is not None and not isinstance(exit_.code, int):
                print(exit_.code, file=sys.stderr)
            abort_job(code)
        raise
    except BaseException as error:
        rank = os.environ.get("RANK", "?")
        sys.stderr.write(f"[rank {rank}] uncaught exception; ending the job:\n")
        print_user_traceback(error)
        abort_job(1)


def print_user_traceback(error: BaseException) -> None:
    """The traceback from the script's frames on (this runner's and runpy's left out)."""
    report = traceback.TracebackException.from_exception(error)
    frames = list(report.stack)
    while frames and (frames[0].filename == __file__ or "runpy" in frames[0].filename):
        frames.pop(0)
    report.stack = traceback.StackSummary.from_list(frames or report.stack)
    sys.stderr.write("".join(report.format()))


if __name__ == "__main__":
    main()
