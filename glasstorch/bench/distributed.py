"""``python -m glasstorch.bench.distributed``: all-reduce latency and bus bandwidth on N ranks.

Examples::

    python -m glasstorch.bench.distributed                 # 2 ranks, 1 KB to 100 MB, vs gloo
    python -m glasstorch.bench.distributed --quick         # fewer samples
    python -m glasstorch.bench.distributed --sizes 4KB 64MB --nproc 4 --json allreduce.json

It starts one job of ``--nproc`` ranks with glasstorch's launcher (MPI) and,
when PyTorch is installed, one with ``torchrun`` (PyTorch's gloo backend), and
runs the same measurement in each (this module with ``--worker``):

* for every size, a float32 tensor of that many bytes is all-reduced (SUM)
  after a few warm-up calls; each sample is one all-reduce between two
  barriers, timed on every rank, and a sample's time is the slowest rank's
  (a collective is over when its last rank is done); the table shows the
  median sample;
* **bus bandwidth** is nccl-tests' measure: ``size / time * 2 (p - 1) / p``.
  A ring all-reduce sends and receives ``2 (p - 1) / p`` times the buffer on
  every rank whatever ``p`` is, so bus bandwidth compares with the link's
  (here: the machine's memory bandwidth, since the ranks share one host),
  where ``size / time`` would fall as ranks are added;
* glasstorch is timed twice: ``async_op=False`` (the call runs on the calling
  thread when the queue is empty) and ``async_op=True`` followed by
  ``wait()`` (through the communication thread: the difference is the
  price of the thread hand-over, paid once per collective).

The jobs run in turn, ``--rounds`` times, and each keeps its best median, so
that a spell in which the shared machine is busy falls on both alike. The
table goes to stdout and, with ``--json``, to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SIZES = ["1KB", "1MB", "25MB", "100MB"]
UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def parse_size(text: str) -> int:
    """``"25MB"`` -> bytes (binary units: 1 MB = 2**20 bytes)."""
    text = text.upper().strip()
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


def samples_for(nbytes: int, quick: bool) -> int:
    """How many timed all-reduces: many for small messages, a few for 100 MB."""
    count = (
        200 if nbytes <= 1 << 16 else 50 if nbytes <= 1 << 22 else 12 if nbytes <= 1 << 25 else 6
    )
    return max(3, count // 4) if quick else count


# ------------------------------------------------------------------ in each rank
def measure(library: str, sizes: list[int], quick: bool) -> dict:
    """Time all-reduce at each size in this rank's job; return ``{variant: {size: seconds}}``."""
    if library == "torch":
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        variants = {"torch gloo": False}
    else:
        import glasstorch as torch
        import glasstorch.distributed as dist

        dist.init_process_group("mpi")
        variants = {"glasstorch mpi": False, "glasstorch mpi async": True}
    world = dist.get_world_size()
    results: dict[str, dict[int, float]] = {name: {} for name in variants}
    for nbytes in sizes:
        tensor = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        for name, async_op in variants.items():
            for _ in range(3):  # warm-up: buffers, connections, the thread
                _all_reduce(dist, tensor, async_op)
            times = []
            for _ in range(samples_for(nbytes, quick)):
                dist.barrier()
                start = time.perf_counter()
                _all_reduce(dist, tensor, async_op)
                times.append(time.perf_counter() - start)
            slowest = torch.tensor(times, dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # a sample lasts until its last rank
            results[name][nbytes] = statistics.median(slowest.tolist())
    results["world_size"] = world
    dist.destroy_process_group()
    return results


def _all_reduce(dist, tensor, async_op: bool) -> None:
    if async_op:
        dist.all_reduce(tensor, async_op=True).wait()
    else:
        dist.all_reduce(tensor)


# ------------------------------------------------------------------ the parent
def run_job(library: str, nproc: int, sizes: list[str], quick: bool) -> dict:
    """Start one job of ``nproc`` ranks on ``library`` and return rank 0's results."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        launcher = "torch.distributed.run" if library == "torch" else "glasstorch.distributed.run"
        command = [sys.executable, "-m", launcher, "--nproc-per-node", str(nproc)]
        if library == "torch":
            command += ["--master-port", str(29400 + os.getpid() % 500)]
        command += ["-m", "glasstorch.bench.distributed", "--worker", library, "--out", str(out)]
        command += ["--sizes", *sizes] + (["--quick"] if quick else [])
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def bus_bandwidth(nbytes: int, seconds: float, world: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce, in GB/s (10**9 bytes)."""
    return nbytes / seconds * 2 * (world - 1) / world / 1e9


def format_table(results: dict, sizes: list[int], world: int) -> str:
    """The table: one row per size; per variant the median time and the bus bandwidth."""
    names = [name for name in results if name != "world_size"]
    width = 24
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"all-reduce, float32, SUM, {world} ranks on {os.cpu_count()} cores "
        f"(load average {load:.1f}); median sample, slowest rank",
        f"{'size':>8}  " + "".join(f"{name:>{width - 4}}    " for name in names),
        f"{'':>8}  " + "".join(f"{'time':>10} {'bus GB/s':>9}    " for _ in names),
    ]
    for nbytes in sizes:
        cells = ""
        for name in names:
            seconds = results[name][nbytes]
            bandwidth = bus_bandwidth(nbytes, seconds, world)
            cells += f"{_human_time(seconds):>10} {bandwidth:>9.2f}    "
        lines.append(f"{_human_bytes(nbytes):>8}  {cells}")
    return "\n".join(lines)


def _human_time(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def _human_bytes(nbytes: int) -> str:
    for unit in ("GB", "MB", "KB"):
        if nbytes >= UNITS[unit] and nbytes % UNITS[unit] == 0:
            return f"{nbytes // UNITS[unit]} {unit}"
    return f"{nbytes} B"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m glasstorch.bench.distributed", description=__doc__)
    p.add_argument("--sizes", nargs="+", default=DEFAULT_SIZES, help="message sizes (1KB, 25MB)")
    p.add_argument("--nproc", type=int, default=2, help="ranks (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=2, help="jobs per library, best median kept")
    p.add_argument("--quick", action="store_true", help="fewer samples")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch's gloo")
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument("--worker", choices=["glasstorch", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    sizes = [parse_size(s) for s in args.sizes]
    if args.worker:  # inside a rank
        results = measure(args.worker, sizes, args.quick)
        if int(os.environ.get("RANK", "0")) == 0:
            Path(args.out).write_text(json.dumps(results))
        return 0
    libraries = ["glasstorch"]
    if not args.no_torch:
        try:
            import torch.distributed  # noqa: F401

            libraries.append("torch")
        except ImportError:
            print("PyTorch is not installed: timing glasstorch only", file=sys.stderr)
    best: dict = {}
    for _ in range(args.rounds):
        for library in libraries:
            for name, by_size in run_job(library, args.nproc, args.sizes, args.quick).items():
                if name == "world_size":
                    continue
                kept = best.setdefault(name, {})
                for size, seconds in by_size.items():
                    kept[int(size)] = min(seconds, kept.get(int(size), float("inf")))
    print(format_table(best, sizes, args.nproc))
    if args.json:
        rows = [
            {
                "variant": name,
                "bytes": nbytes,
                "seconds": seconds,
                "bus_gb_per_s": bus_bandwidth(nbytes, seconds, args.nproc),
            }
            for name, by_size in best.items()
            for nbytes, seconds in sorted(by_size.items())
        ]
        Path(args.json).write_text(
            json.dumps({"world_size": args.nproc, "results": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
