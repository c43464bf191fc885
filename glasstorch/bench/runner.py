"""Putting it together: run every selected workload on every backend.

For each workload the inputs are drawn once, NumPy's result is computed as the
oracle, and then each backend in turn is built, checked and timed
(:func:`run_one`). Other glasstorch tiers run in a subprocess each
(:func:`run_tier_in_subprocess`), since the tier is fixed at import. With
``isolate`` every backend runs in a subprocess of its own
(:func:`run_isolated`); with ``interleave`` too, and the subprocesses take
turns, sample by sample (:func:`run_taking_turns`).

The results form one JSON-ready dictionary (see :func:`run_benchmarks`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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
from glasstorch.bench.timing import (
    FAST_POLICY,
    REFERENCE_POLICY,
    LocalSampler,
    Measurement,
    TimingPolicy,
    measure,
    measure_interleaved,
)
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
        interleave: run every backend in an interpreter of its own, as
            ``isolate`` does, and time them in turns, sample by sample (see
            :func:`run_taking_turns`).
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
    interleave: bool = False
    min_time: float | None = None
    no_skip: bool = False
    torch_threads: int = 2
    threads: int | None = None
    seed: int = 0
    progress: bool = True

    def policy(self, backend: Backend | str) -> TimingPolicy:
        """The timing policy for ``backend`` (or a backend's name): fewer
        repetitions on the reference tier."""
        name = backend if isinstance(backend, str) else backend.name
        base = REFERENCE_POLICY if name == "reference" else FAST_POLICY
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
    ready = prepare(workload, backend, inputs, expected, settings)
    if isinstance(ready, dict):
        return ready
    m = measure(ready.fn, settings.policy(backend), ready.first_s)
    return ready.record(m)


@dataclass
class Prepared:
    """A workload built and checked on one backend, ready to be timed.

    Attributes:
        workload: what is timed.
        fn: the callable that does the work once.
        first_s: how long the first call (the checked one) took.
        max_abs_error: the largest difference between that call's result and
            NumPy's.
    """

    workload: Workload
    fn: Callable[[], object]
    first_s: float
    max_abs_error: float

    def record(self, m: Measurement) -> dict:
        """The JSON-ready record of a timing of :attr:`fn`."""
        return timing_record(self.workload, m, self.max_abs_error)


def timing_record(workload: Workload, m: Measurement, max_abs_error: float) -> dict:
    """The JSON-ready record of a successful timing (see :func:`run_one`)."""
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
        "max_abs_error": max_abs_error,
    }


def prepare(
    workload: Workload,
    backend: Backend,
    inputs: dict[str, np.ndarray],
    expected: list[np.ndarray],
    settings: BenchSettings,
) -> Prepared | dict:
    """Build ``workload`` on ``backend`` and check its first result against NumPy's.

    Returns the :class:`Prepared` callable, or the record of why it will not
    be timed (``"skipped"``, ``"unavailable"``, ``"wrong"`` or ``"error"``).
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
    return Prepared(workload, fn, first_s, _max_error(got, expected))


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


#: The script a child interpreter runs (see its docstring).
CHILD = Path(__file__).with_name("_child.py")


def child_environment(tier: str, backend: str) -> dict[str, str]:
    """The environment of a child that runs ``backend`` with ``GLASSTORCH_TIER=tier``."""
    env = {**os.environ, "GLASSTORCH_TIER": tier}
    if backend != "numpy":
        # The child computes NumPy's result for each workload, to check the
        # backend's against it. NumPy's BLAS threads keep spinning for a
        # moment after a matrix product, on the cores the timed backend is
        # about to use; one BLAS thread leaves them free. (It only slows the
        # check, which is not timed.)
        env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def run_tier_in_subprocess(tier: str, settings: BenchSettings, backend: str = "tier") -> dict:
    """Run the selected workloads on one backend in a fresh interpreter.

    ``backend`` is ``"tier"`` (glasstorch's ``tier``), ``"numpy"`` or
    ``"torch"``; the interpreter has ``GLASSTORCH_TIER=tier`` either way.

    Returns:
        ``{"status": "ok", "document": <the child's JSON>}``, or
        ``{"status": "unavailable" | "error", "reason": ...}``.
    """
    env = child_environment(tier, backend)
    with tempfile.TemporaryDirectory(prefix="glasstorch-bench-") as folder:
        result_path = Path(folder) / f"{backend}.json"
        command = [
            sys.executable,
            str(CHILD),
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


# ------------------------------------------------------------------ taking turns
class Child:
    """A backend in an interpreter of its own that times workloads on request.

    The child is ``_child.py --serve`` (see :func:`serve`): it reads one JSON
    request per line on its stdin and answers each with one JSON line on its
    stdout. While it waits for a request, it runs nothing, so its threads
    leave the cores to whichever child is being timed.
    """

    def __init__(self, tier: str, settings: BenchSettings, backend: str):
        self.backend = backend
        env = child_environment(tier, backend)
        if backend == "numpy":
            # OpenBLAS's threads spin for about 0.1 s after each product before
            # they sleep, on the cores the other children are timed on: let them
            # sleep after 2^22 cycles (about a millisecond) instead.
            env["OPENBLAS_THREAD_TIMEOUT"] = "22"
        command = [
            sys.executable,
            str(CHILD),
            "--serve",
            *child_options(settings, backend),
        ]
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, request: dict) -> dict:
        """Send one request and return the answer.

        Raises:
            RuntimeError: the child has exited (its error is on stderr).
        """
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise RuntimeError(
                f"the {self.backend} subprocess exited with code {self.process.poll()} "
                "(its error is printed above)"
            )
        return json.loads(line)

    def close(self) -> None:
        """Ask the child to quit, and wait for it."""
        if self.process.poll() is None:
            try:
                self.ask({"cmd": "quit"})
            except RuntimeError:
                pass
        self.process.wait()


class ChildSampler:
    """A :class:`~glasstorch.bench.timing.Sampler` for one workload in a :class:`Child`."""

    def __init__(self, child: Child, workload: str):
        self.child, self.workload = child, workload

    def warm_up(self, policy: TimingPolicy) -> tuple[float, int]:
        """Ask the child to warm up (with the policy it was started with)."""
        answer = self.child.ask({"cmd": "warm_up", "workload": self.workload})
        return answer["estimate"], answer["warmup_calls"]

    def sample(self, calls: int) -> float:
        """Ask the child for one untimed call and ``calls`` timed ones."""
        return self.child.ask({"cmd": "sample", "workload": self.workload, "calls": calls})[
            "seconds"
        ]


def run_taking_turns(settings: BenchSettings) -> dict:
    """:func:`run_benchmarks` with each backend in an interpreter of its own,
    the backends taking turns, sample by sample (``--interleave``).

    This combines :func:`run_isolated`'s separation (no two libraries' thread
    pools in one process) with
    :func:`~glasstorch.bench.timing.measure_interleaved`'s fairness: every
    workload is timed on all backends within the same few tenths of a second,
    in alternating samples, so a slower or faster spell of a shared machine
    falls on all of them alike. Other glasstorch tiers (``other_tier``) run
    afterwards, each in a subprocess as usual.
    """
    import glasstorch

    columns = {}
    for backend in settings.backends:
        columns[glasstorch.tier if backend == "tier" else backend] = backend
    workloads = select_workloads(settings.patterns, settings.quick)
    entries = [_describe(workload) | {"results": {}} for workload in workloads]
    children: dict[str, Child] = {}
    progress = Progress(len(workloads), enabled=settings.progress)
    try:
        for column, backend in columns.items():
            children[column] = Child(glasstorch.tier, settings, backend)
        for index, (workload, entry) in enumerate(zip(workloads, entries), start=1):
            progress.start(workload, " and ".join(columns))
            entry["results"] = _take_turns(workload, children, settings)
            progress.done_backend()
            progress.done_workload(index, len(workloads), workload, entry["results"])
    finally:
        progress.close()
        for child in children.values():
            child.close()

    tiers: dict[str, dict] = {}
    if "tier" in settings.backends:
        tiers[glasstorch.tier] = {"status": "ok", "where": "subprocess"}
    names = list(columns)
    _run_other_tiers(settings, entries, tiers, names)
    return {
        "settings": asdict(settings),
        "backends": names,
        "tiers": tiers,
        "workloads": entries,
    }


def _take_turns(workload: Workload, children: dict[str, Child], settings: BenchSettings) -> dict:
    """Prepare ``workload`` in every child, time the ready ones in turns; a record each."""
    results: dict[str, dict] = {}
    samplers: dict[str, ChildSampler] = {}
    errors: dict[str, float] = {}
    for column, child in children.items():
        try:
            answer = child.ask({"cmd": "prepare", "workload": workload.name})
        except RuntimeError as error:
            results[column] = {"status": "error", "reason": str(error)}
            continue
        if answer["status"] == "ok":
            samplers[column] = ChildSampler(child, workload.name)
            errors[column] = answer["max_abs_error"]
        else:
            results[column] = answer
    if samplers:
        try:
            # The children run glasstorch's active tier, NumPy and PyTorch: all
            # fast, none the reference tier.
            measured = measure_interleaved(samplers, settings.policy("fast"))
        except RuntimeError as error:
            measured = {}
            for column in samplers:
                results[column] = {"status": "error", "reason": str(error)}
        for column, m in measured.items():
            results[column] = timing_record(workload, m, errors[column])
    for sampler in samplers.values():
        try:
            sampler.child.ask({"cmd": "finish", "workload": workload.name})
        except RuntimeError:
            pass  # the child has exited: its records above already say so
    return {column: results[column] for column in children}


def serve(settings: BenchSettings, requests, answers) -> int:
    """The child's side of :class:`Child`: answer timing requests until ``quit``.

    Requests (one JSON object per line, from ``requests``) and answers (to
    ``answers``):

    * ``{"cmd": "prepare", "workload": NAME}``: draw the inputs (seeded),
      compute NumPy's result, build the workload on this child's backend and
      check it; answers ``{"status": "ok", "max_abs_error": ...}`` or the
      record of why it will not be timed.
    * ``{"cmd": "warm_up", "workload": NAME}``: answers ``{"estimate": seconds
      per call, "warmup_calls": n}``.
    * ``{"cmd": "sample", "workload": NAME, "calls": n}``: one untimed call,
      then n timed ones; answers ``{"seconds": ...}``.
    * ``{"cmd": "finish", "workload": NAME}``: forget the workload.
    * ``{"cmd": "quit"}``.
    """
    backends, missing = in_process_backends(settings)
    backend = backends[0] if backends else None
    by_name = {w.name: w for w in select_workloads(settings.patterns, settings.quick)}
    ready: dict[str, LocalSampler] = {}
    for line in requests:
        request = json.loads(line)
        command, name = request["cmd"], request.get("workload")
        if command == "quit":
            answer: dict = {}
        elif command == "prepare":
            answer = _serve_prepare(by_name[name], backend, missing, settings, ready)
        elif command == "warm_up":
            estimate, calls = ready[name].warm_up(settings.policy(backend))
            answer = {"estimate": estimate, "warmup_calls": calls}
        elif command == "sample":
            answer = {"seconds": ready[name].sample(request["calls"])}
        elif command == "finish":
            ready.pop(name, None)
            answer = {}
        else:
            answer = {"status": "error", "reason": f"unknown request {command!r}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if command == "quit":
            break
    return 0


def _serve_prepare(
    workload: Workload,
    backend: Backend | None,
    missing: dict[str, str],
    settings: BenchSettings,
    ready: dict[str, LocalSampler],
) -> dict:
    """Answer a ``prepare`` request (see :func:`serve`): on success, the
    workload's sampler goes into ``ready``."""
    if backend is None:
        return {"status": "unavailable", "reason": "; ".join(missing.values())}
    inputs = workload.make_inputs(np.random.default_rng(settings.seed))
    expected = workload.expected(inputs)
    outcome = prepare(workload, backend, inputs, expected, settings)
    if isinstance(outcome, dict):
        return outcome
    ready[workload.name] = LocalSampler(outcome.fn, outcome.first_s)
    return {"status": "ok", "max_abs_error": outcome.max_abs_error}


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

    if settings.interleave:
        return run_taking_turns(settings)
    if settings.isolate:
        return run_isolated(settings)
    workloads = select_workloads(settings.patterns, settings.quick)
    backends, missing = in_process_backends(settings)

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
            expected = workload.expected(inputs)
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

    _run_other_tiers(settings, entries, tiers, columns)
    return {
        "settings": asdict(settings),
        "backends": columns,
        "tiers": tiers,
        "workloads": entries,
    }


def _run_other_tiers(
    settings: BenchSettings, entries: list[dict], tiers: dict, columns: list[str]
) -> None:
    """With ``settings.other_tier``, run every other glasstorch tier in a
    subprocess and merge its results into ``entries``, ``tiers`` and
    ``columns`` (after the active tier's column)."""
    import glasstorch

    if not settings.other_tier:
        return
    for tier in other_tiers(glasstorch.tier):
        print(
            f"running the {tier} tier in a subprocess (GLASSTORCH_TIER={tier})...",
            file=sys.stderr,
            flush=True,
        )
        _merge_tier(tier, run_tier_in_subprocess(tier, settings), entries, tiers)
        columns.insert(1 if "tier" in settings.backends else 0, tier)


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
