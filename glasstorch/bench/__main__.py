"""``python -m glasstorch.bench``: the command line of the benchmark harness.

Examples::

    python -m glasstorch.bench                      # every workload, this tier, NumPy, PyTorch
    python -m glasstorch.bench --other-tier         # ... and the other tier, in a subprocess
    python -m glasstorch.bench --isolate --rounds 3 # each backend alone, best of 3 turns
    python -m glasstorch.bench --interleave         # each backend alone, taking turns
    python -m glasstorch.bench --quick --workloads matmul add
    python -m glasstorch.bench --list
"""

from __future__ import annotations

import argparse
import sys

from glasstorch.bench.report import (
    machine_info,
    make_document,
    memory_bandwidth,
    render,
    write_json,
    write_plot,
)
from glasstorch.bench.runner import BACKEND_CHOICES, BenchSettings, run_benchmarks
from glasstorch.bench.workloads import select_workloads, workload_registry


def parser() -> argparse.ArgumentParser:
    """The harness's options."""
    p = argparse.ArgumentParser(
        prog="python -m glasstorch.bench",
        description=(
            "Time the same workloads on the active glasstorch tier, NumPy and PyTorch "
            "(and the other tier with --other-tier); print a table, write JSON and a plot."
        ),
    )
    p.add_argument(
        "--workloads",
        nargs="+",
        metavar="NAME",
        default=[],
        help="run only workloads whose name contains one of these (see --list)",
    )
    p.add_argument(
        "--quick", action="store_true", help="small sizes and short timings (seconds in all)"
    )
    p.add_argument(
        "--other-tier",
        action="store_true",
        help="also run the other glasstorch tier, in a subprocess",
    )
    p.add_argument(
        "--isolate",
        action="store_true",
        help="run every backend in a fresh interpreter of its own, so that their thread "
        "pools never compete for the cores",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        metavar="N",
        help="with --isolate: run the backends N times in turn and keep each one's best "
        "median (for a machine shared with other jobs; default: %(default)s)",
    )
    p.add_argument(
        "--interleave",
        action="store_true",
        help="run every backend in a fresh interpreter of its own (as --isolate does) and "
        "time them in turns, sample by sample, so that the machine's faster and slower "
        "spells fall on all of them alike (for a machine shared with other jobs)",
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        default="bench-results.json",
        help="write the results here (default: %(default)s)",
    )
    p.add_argument("--plot", metavar="PATH", help="write a PNG bar chart here (needs matplotlib)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument(
        "--backends",
        nargs="+",
        choices=BACKEND_CHOICES,
        default=list(BACKEND_CHOICES),
        help="what to run in this process: the active tier, NumPy, PyTorch (default: all)",
    )
    p.add_argument(
        "--min-time",
        type=float,
        metavar="SECONDS",
        help="seconds of timing per workload and backend (default: 0.2, --quick: 0.05)",
    )
    p.add_argument(
        "--no-skip",
        action="store_true",
        help="run the big sizes on the reference tier too (minutes each)",
    )
    p.add_argument(
        "--torch-threads",
        type=int,
        default=2,
        metavar="N",
        help="PyTorch's thread count (default: %(default)s)",
    )
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="glasstorch's thread count, for both tiers (default: the tier's, all cores)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for the inputs (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="do not show progress")
    p.add_argument("--no-table", action="store_true", help="do not print the tables")
    return p


def list_workloads(quick: bool) -> str:
    """The registry as a table: name, size, unit, reference tier, target."""
    lines = []
    for w in workload_registry(quick):
        reference = "" if w.reference_ok else "  [skipped on reference]"
        target = f"  [target: {w.target.text}]" if w.target else ""
        lines.append(f"{w.name:28} {w.size:26} {w.unit or 'time':8}{reference}{target}")
        lines.append(f"{'':28} {w.description}")
    return "\n".join(lines)


def settings_from(args: argparse.Namespace) -> BenchSettings:
    """The :class:`BenchSettings` that parsed options describe."""
    return BenchSettings(
        patterns=args.workloads,
        quick=args.quick,
        backends=tuple(args.backends),
        other_tier=args.other_tier,
        isolate=args.isolate,
        rounds=args.rounds,
        interleave=args.interleave,
        min_time=args.min_time,
        no_skip=args.no_skip,
        torch_threads=args.torch_threads,
        threads=args.threads,
        seed=args.seed,
        progress=not args.no_progress,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the harness with command-line ``argv``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    if args.list:
        print(list_workloads(args.quick))
        return 0
    if args.threads is not None and args.threads < 1:
        print("error: --threads takes a number >= 1", file=sys.stderr)
        return 2
    if args.rounds < 1 or (args.rounds > 1 and not args.isolate):
        print(
            "error: --rounds takes a number >= 1, and more than 1 needs --isolate", file=sys.stderr
        )
        return 2
    if args.interleave and (args.isolate or args.rounds > 1):
        print(
            "error: --interleave already runs each backend in its own interpreter, "
            "taking turns: it takes neither --isolate nor --rounds",
            file=sys.stderr,
        )
        return 2
    try:
        select_workloads(args.workloads, args.quick)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    settings = settings_from(args)
    if args.threads is not None:
        import glasstorch

        glasstorch.set_num_threads(args.threads)  # before machine_info, which records it
    torch_threads = args.torch_threads if "torch" in args.backends else None
    machine = machine_info(torch_threads)  # before the run: the load average is of others
    results = run_benchmarks(settings)
    if _times_memory_bound_work(results):
        machine["memory_gbps"] = memory_bandwidth()  # after the run: what the kernels compete with
    document = make_document(results, machine, argv)

    if not args.no_table:
        print(render(document))
        print()
    path = write_json(document, args.json)
    if not args.no_table:
        print(f"results written to {path}")
    if args.plot:
        print(write_plot(document, args.plot))
    return 0


def _times_memory_bound_work(results: dict) -> bool:
    """Whether the fast tier timed a workload counted in GB/s (then the report
    compares it with the memory bandwidth)."""
    return any(
        entry["unit"] == "GB/s" and entry["results"].get("fast", {}).get("status") == "ok"
        for entry in results["workloads"]
    )


if __name__ == "__main__":
    sys.exit(main())
