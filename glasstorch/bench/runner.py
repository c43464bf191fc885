"""Putting it together: run every selected workload on every backend.

For each workload the inputs are drawn once, NumPy's result is computed as the
oracle, and then each backend in turn is built, checked and timed
(:func:`run_one`). Other glasstorch tiers run in a subprocess each
(:func:`run_tier_in_subprocess`), since the tier is fixed at import.

The results form one JSON-ready dictionary (see :func:`run_benchmarks`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from glasstorch.bench.backends import (
    Backend,
    as_numpy,
    glasstorch_backend,
    numpy_backend,
    torch_backend,
)
from glasstorch.bench.timing import FAST_POLICY, REFERENCE_POLICY, TimingPolicy, measure
from glasstorch.bench.workloads import BackendUnavailable, Workload, select_workloads

#: Backend selectors for ``--backends``: the active tier, NumPy, PyTorch.
BACKEND_CHOICES = ("tier", "numpy", "torch")


@dataclass
class BenchSettings:
    """What to run and how (the command-line options, as data).

    Attributes:
        patterns: run the workloads whose name contains one of these (all if empty).
        quick: small sizes and short timings.
        backends: which of ``"tier"``, ``"numpy"``, ``"torch"`` to run in this process.
        other_tier: also run the other glasstorch tier(s), in a subprocess.
        isolate: run every backend in a fresh interpreter of its own, so that no
            two libraries' thread pools share the cores (see :func:`run_isolated`).
        rounds: with ``isolate``, run every backend this many times, in turn,
            and keep each workload's best median (for a machine shared with
            other jobs).
        min_time: seconds to spend timing each workload on each backend.
        no_skip: run every size on the reference tier too, however slow.
        torch_threads: PyTorch's thread count.
        threads: glasstorch's thread count (``None``: the tier's default).
        seed: seed of the NumPy generator that draws the inputs.
        progress: show progress on stderr.
    """

    patterns: list[str] = field(default_factory=list)
    quick: bool = False
    backends: tuple[str, ...] = BACKEND_CHOICES
    other_tier: bool = False
    isolate: bool = False
    rounds: int = 1
    min_time: float | None = None
    no_skip: bool = False
    torch_threads: int = 2
    threads: int | None = None
    seed: int = 0
    progress: bool = True

    def policy(self, backend: Backend) -> TimingPolicy:
        """The timing policy for ``backend``: fewer repetitions on the reference tier."""
        base = REFERENCE_POLICY if backend.name == "reference" else FAST_POLICY
        min_time = self.min_time if self.min_time is not None else (0.05 if self.quick else 0.2)
        policy = replace(base, min_time=min_time)
        if self.quick:
            policy = replace(policy, warmup_time=min(policy.warmup_time, 0.01))
            policy = replace(policy, max_samples=min(policy.max_samples, 200))
        return policy


# ------------------------------------------------------------------- one result
def _check(workload: Workload, got: list[np.ndarray], expected: list[np.ndarray]) -> str | None:
    """Why ``got`` is not NumPy's ``expected`` result, or ``None`` when it matches."""
    if len(got) != len(expected):
        return f"returned {len(got)} values, NumPy returned {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if g.shape != e.shape:
            return f"value {i}: shape {g.shape}, NumPy's is {e.shape}"
        if not np.allclose(g, e, rtol=workload.rtol, atol=workload.atol):
            error = float(np.max(np.abs(g.astype(np.float64) - e)))
            return f"value {i}: differs from NumPy's by up to {error:.3g}"
    return None


def _max_error(got: list[np.ndarray], expected: list[np.ndarray]) -> float:
    return max(
        (
            float(np.max(np.abs(g.astype(np.float64) - e), initial=0.0))
            for g, e in zip(got, expected)
        ),
        default=0.0,
    )


def run_one(
    workload: Workload,
    backend: Backend,
    inputs: dict[str, np.ndarray],
    expected: list[np.ndarray],
    settings: BenchSettings,
) -> dict:
    """Build, check and time ``workload`` on ``backend``; a JSON-ready record.

    The record's ``status`` is ``"ok"`` (with the timings), ``"skipped"``,
    ``"unavailable"``, ``"wrong"`` (the result did not match NumPy's, so it was
    not timed) or ``"error"`` (it raised); the last four carry a ``reason``.
    """
    if backend.name == "reference" and not workload.reference_ok and not settings.no_skip:
        return {"status": "skipped", "reason": "too slow on reference"}
    try:
        fn = workload.build(backend, inputs)
        start = time.perf_counter()
        first = fn()  # the first call: checked against NumPy, and the first warm-up
        first_s = time.perf_counter() - start
        got = as_numpy(first)
    except BackendUnavailable as error:
        return {"status": "unavailable", "reason": str(error)}
    except Exception as error:
        return {"status": "error", "reason": f"{type(error).__name__}: {error}"}

    problem = _check(workload, got, expected)
    if problem is not None:
        return {"status": "wrong", "reason": problem}

    m = measure(fn, settings.policy(backend), first_s)
    return {
        "status": "ok",
        "median_s": m.median_s,
        "min_s": m.min_s,
        "max_s": m.max_s,
        "samples": m.samples,
        "calls_per_sample": m.calls_per_sample,
        "calls": m.calls,
        "warmup_calls": m.warmup_calls,
        "throughput": workload.throughput(m.median_s),
        "max_abs_error": _max_error(got, expected),
    }


# --------------------------------------------------------------------- progress
class Progress:
    """Shows progress on stderr: a tqdm bar when tqdm is installed, else one line per workload."""

    def __init__(self, total: int, enabled: bool = True):
        self.bar = None
        self.enabled = enabled
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=total, unit="run", file=sys.stderr, leave=False)

    def start(self, workload: Workload, backend: str) -> None:
        if self.bar is not None:
            self.bar.set_description(f"{workload.name} on {backend}")

    def done_backend(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def done_workload(self, index: int, count: int, workload: Workload, results: dict) -> None:
        if not self.enabled or self.bar is not None:
            return
        from glasstorch.bench.report import cell

        parts = ", ".join(f"{name} {cell(record)}" for name, record in results.items())
        print(f"[{index}/{count}] {workload.name}: {parts}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ------------------------------------------------------------------- subprocess
def other_tiers(active: str) -> list[str]:
    """The glasstorch tiers other than ``active``."""
    from glasstorch._tier import TIERS

    return [name for name in TIERS if name != active]


def child_options(settings: BenchSettings, backend: str = "tier") -> list[str]:
    """The command-line options that make a child run the same workloads on one backend."""
    options = ["--backends", backend, "--no-table", "--seed", str(settings.seed)]
    if backend == "torch":
        options += ["--torch-threads", str(settings.torch_threads)]
    if backend == "tier" and settings.threads is not None:
        options += ["--threads", str(settings.threads)]
    if settings.quick:
        options.append("--quick")
    if settings.no_skip:
        options.append("--no-skip")
    if not settings.progress:
        options.append("--no-progress")
    if settings.min_time is not None:
        options += ["--min-time", str(settings.min_time)]
    if settings.patterns:
        options += ["--workloads", *settings.patterns]
    return options


def run_tier_in_subprocess(tier: str, settings: BenchSettings, backend: str = "tier") -> dict:
    """Run the selected workloads on one backend in a fresh interpreter.

    ``backend`` is ``"tier"`` (glasstorch's ``tier``), ``"numpy"`` or
    ``"torch"``; the interpreter has ``GLASSTORCH_TIER=tier`` either way.

    Returns:
        ``{"status": "ok", "document": <the child's JSON>}``, or
        ``{"status": "unavailable" | "error", "reason": ...}``.
    """
    child = Path(__file__).with_name("_child.py")
    env = {**os.environ, "GLASSTORCH_TIER": tier}
    if backend != "numpy":
        # The child computes NumPy's result for each workload, to check the
        # backend's against it. NumPy's BLAS threads keep spinning for a
        # moment after a matrix product, on the cores the timed backend is
        # about to use; one BLAS thread leaves them free. (It only slows the
        # check, which is not timed.)
        env["OPENBLAS_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="glasstorch-bench-") as folder:
        result_path = Path(folder) / f"{backend}.json"
        command = [
            sys.executable,
            str(child),
            str(result_path),
            *child_options(settings, backend),
        ]
        # stdout and stderr pass through: the child's progress shows as it runs.
        completed = subprocess.run(command, env=env, check=False)
        if not result_path.exists():
            return {
                "status": "error",
                "reason": f"the subprocess exited with code {completed.returncode} "
                "and wrote no results (its error is printed above)",
            }
        document = json.loads(result_path.read_text(encoding="utf-8"))
    if "unavailable" in document:
        return {"status": "unavailable", "reason": document["unavailable"]}
    return {"status": "ok", "document": document}


# ------------------------------------------------------------------------ all
def in_process_backends(settings: BenchSettings) -> tuple[list[Backend], dict[str, str]]:
    """The backends to run here, and the reason for each one left out."""
    backends, missing = [], {}
    if "tier" in settings.backends:
        backends.append(glasstorch_backend(settings.threads))
    if "numpy" in settings.backends:
        backends.append(numpy_backend())
    if "torch" in settings.backends:
        torch = torch_backend(settings.torch_threads)
        if torch is None:
            missing["torch"] = "PyTorch is not installed"
        else:
            backends.append(torch)
    return backends, missing


def run_isolated(settings: BenchSettings) -> dict:
    """:func:`run_benchmarks` with every backend in an interpreter of its own.

    In one process, the fast tier's OpenMP threads and PyTorch's own keep
    spinning for a while after each parallel region, waiting for more work;
    on a machine with few cores the two pools then take turns on the same
    cores and both slow down. Here each backend runs alone. With
    ``settings.rounds`` above 1 the backends take turns that many times and
    each workload keeps its best median on each backend: other jobs on a
    shared machine can only make a run slower, never faster.
    """
    import glasstorch

    tiers_to_run = [glasstorch.tier] if "tier" in settings.backends else []
    if settings.other_tier:
        tiers_to_run += other_tiers(glasstorch.tier)
    jobs = [(tier, "tier", tier) for tier in tiers_to_run]  # (column, backend, tier)
    jobs += [(b, b, glasstorch.tier) for b in settings.backends if b != "tier"]

    workloads = select_workloads(settings.patterns, settings.quick)
    entries = [_describe(workload) | {"results": {}} for workload in workloads]
    tiers: dict[str, dict] = {}
    for round_number in range(1, settings.rounds + 1):
        for column, backend, tier in jobs:
            print(
                f"round {round_number}/{settings.rounds}: {column} in a fresh interpreter...",
                file=sys.stderr,
                flush=True,
            )
            outcome = run_tier_in_subprocess(tier, settings, backend)
            _merge_best(column, outcome, entries)
            if backend == "tier":
                tiers[column] = {"status": outcome["status"], "where": "subprocess"}
                if outcome["status"] != "ok":
                    tiers[column]["reason"] = outcome["reason"]
    return {
        "settings": asdict(settings),
        "backends": [column for column, _, _ in jobs],
        "tiers": tiers,
        "workloads": entries,
    }


def _merge_best(column: str, outcome: dict, entries: list[dict]) -> None:
    """Put one child's results into ``entries`` under ``column``, keeping the faster
    of what is there and what came (by median time)."""
    if outcome["status"] != "ok":
        for entry in entries:
            entry["results"].setdefault(
                column, {"status": outcome["status"], "reason": outcome["reason"]}
            )
        return
    document = outcome["document"]
    by_name = {}
    for workload in document["workloads"]:
        records = list(workload["results"].values())
        by_name[workload["name"]] = records[0] if records else None
    for entry in entries:
        new = by_name.get(entry["name"]) or {
            "status": "error",
            "reason": "the subprocess returned no result for it",
        }
        old = entry["results"].get(column)
        if old is None or old.get("status") != "ok":
            entry["results"][column] = new
        elif new.get("status") == "ok" and new["median_s"] < old["median_s"]:
            entry["results"][column] = new


def run_benchmarks(settings: BenchSettings) -> dict:
    """Run the selected workloads on every backend; the results as a JSON-ready dict.

    The dictionary has ``settings``, ``backends`` (column names, in order),
    ``tiers`` (for each glasstorch tier: ``status`` and, if not run, ``reason``;
    for a tier run in a subprocess also its ``machine`` entry) and
    ``workloads``: one entry per workload with its description and ``results``,
    a record (see :func:`run_one`) for each backend.
    """
    import glasstorch

    if settings.isolate:
        return run_isolated(settings)
    workloads = select_workloads(settings.patterns, settings.quick)
    backends, missing = in_process_backends(settings)
    numpy = numpy_backend()

    tiers: dict[str, dict] = {}
    if "tier" in settings.backends:
        tiers[glasstorch.tier] = {"status": "ok", "where": "in process"}
    columns = [b.name for b in backends] + list(missing)

    entries = []
    progress = Progress(len(workloads) * len(backends), enabled=settings.progress)
    try:
        for index, workload in enumerate(workloads, start=1):
            # Same inputs for every backend, drawn once; NumPy's result is the oracle.
            inputs = workload.make_inputs(np.random.default_rng(settings.seed))
            expected = as_numpy(workload.build(numpy, inputs)())
            results: dict[str, dict] = {}
            for backend in backends:
                progress.start(workload, backend.name)
                results[backend.name] = run_one(workload, backend, inputs, expected, settings)
                progress.done_backend()
            for name, reason in missing.items():
                results[name] = {"status": "unavailable", "reason": reason}
            progress.done_workload(index, len(workloads), workload, results)
            entries.append(_describe(workload) | {"results": results})
    finally:
        progress.close()

    if settings.other_tier:
        for tier in other_tiers(glasstorch.tier):
            print(
                f"running the {tier} tier in a subprocess (GLASSTORCH_TIER={tier})...",
                file=sys.stderr,
                flush=True,
            )
            outcome = run_tier_in_subprocess(tier, settings)
            _merge_tier(tier, outcome, entries, tiers)
            columns.insert(1 if "tier" in settings.backends else 0, tier)

    return {
        "settings": asdict(settings),
        "backends": columns,
        "tiers": tiers,
        "workloads": entries,
    }


def _describe(workload: Workload) -> dict:
    """The JSON description of a workload (everything but its code)."""
    target = workload.target
    return {
        "name": workload.name,
        "family": workload.family,
        "size": workload.size,
        "description": workload.description,
        "work": workload.work,
        "unit": workload.unit,
        "target": None if target is None else asdict(target),
    }


def _merge_tier(tier: str, outcome: dict, entries: list[dict], tiers: dict) -> None:
    """Put a subprocess's results for ``tier`` into ``entries``, workload by workload,
    and its status into ``tiers``."""
    if outcome["status"] != "ok":
        tiers[tier] = {
            "status": outcome["status"],
            "reason": outcome["reason"],
            "where": "subprocess",
        }
    else:
        machine = outcome["document"].get("machine")
        tiers[tier] = {"status": "ok", "where": "subprocess", "machine": machine}
    _merge_best(tier, outcome, entries)  # the column is still empty: its results go in as they are
