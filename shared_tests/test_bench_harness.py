"""The benchmark harness runs end to end and writes valid JSON (docs/guide/architecture.md, section 5).

These tests check that the harness *works*: it runs a tiny workload set on the
active tier, NumPy and PyTorch, checks results, times them and writes its
files. They never assert how fast anything is: speed is reported by the
harness, not tested.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import glasstorch
from glasstorch.bench import TimingPolicy, measure, select_workloads, workload_registry
from glasstorch.bench.__main__ import main
from glasstorch.bench.backends import numpy_backend
from glasstorch.bench.report import format_seconds
from glasstorch.bench.runner import BenchSettings, run_one

pytestmark = [
    pytest.mark.contract,
    pytest.mark.cpu_only("the benchmark harness's processes, JSON and timing bookkeeping"),
]

#: Tiny workloads: one-element add and a small softmax, at --quick sizes.
TINY = ["add-one-element", "softmax"]


def _run(tmp_path, *options: str) -> dict:
    path = tmp_path / "results.json"
    status = main(
        ["--quick", "--min-time", "0.001", "--no-progress", "--json", str(path), *options]
    )
    assert status == 0
    return json.loads(path.read_text(encoding="utf-8"))


def test_quick_run_writes_valid_json(tmp_path, capsys):
    document = _run(tmp_path, "--workloads", *TINY)

    assert document["schema"] == "glasstorch-bench/1"
    machine = document["machine"]
    assert machine["tier"] == glasstorch.tier
    assert machine["cores"] >= 1 and machine["numpy"] == np.__version__
    assert document["tiers"][glasstorch.tier]["status"] == "ok"
    assert document["backends"][:2] == [glasstorch.tier, "numpy"]

    names = [entry["name"] for entry in document["workloads"]]
    assert names == [w.name for w in select_workloads(TINY, quick=True)]
    for entry in document["workloads"]:
        for backend in (glasstorch.tier, "numpy"):
            record = entry["results"][backend]
            assert record["status"] == "ok", record
            assert record["median_s"] > 0 and math.isfinite(record["median_s"])
            assert record["samples"] >= 1 and record["calls"] >= record["samples"]
            assert (record["throughput"] is None) == (entry["unit"] is None)
        assert entry["results"]["torch"]["status"] in ("ok", "unavailable")

    out = capsys.readouterr().out
    assert "| workload" in out and "add-one-element" in out


def test_other_tier_is_reported_even_when_unavailable(tmp_path):
    document = _run(
        tmp_path, "--workloads", "add-one-element", "--backends", "tier", "--other-tier"
    )
    others = [name for name in document["tiers"] if name != glasstorch.tier]
    assert others, "the other tier gets a column"
    for tier in others:
        status = document["tiers"][tier]["status"]
        assert status in ("ok", "unavailable", "error")
        record = document["workloads"][0]["results"][tier]
        assert record["status"] == status or status == "ok"
        if record["status"] != "ok":
            assert record["reason"]


def test_isolated_rounds_run_each_backend_alone_and_keep_the_best(tmp_path, capsys):
    document = _run(
        tmp_path,
        "--workloads",
        "add-one-element",
        "--backends",
        "tier",
        "numpy",
        "--isolate",
        "--rounds",
        "2",
    )
    assert document["settings"]["isolate"] is True
    assert document["backends"] == [glasstorch.tier, "numpy"]
    assert document["tiers"][glasstorch.tier] == {"status": "ok", "where": "subprocess"}
    (entry,) = document["workloads"]
    for backend in (glasstorch.tier, "numpy"):
        record = entry["results"][backend]
        assert record["status"] == "ok", record
        assert record["median_s"] > 0
    captured = capsys.readouterr()
    assert "round 2/2: numpy in a fresh interpreter" in captured.err
    assert "each backend in its own interpreter" in captured.out


def test_rounds_without_isolate_is_refused(tmp_path, capsys):
    assert main(["--rounds", "3", "--json", str(tmp_path / "r.json")]) == 2
    assert "--isolate" in capsys.readouterr().err


def test_plot_or_note(tmp_path, capsys):
    plot = tmp_path / "bench.png"
    _run(tmp_path, "--workloads", "add-one-element", "--backends", "numpy", "--plot", str(plot))
    out = capsys.readouterr().out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out
    else:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_wrong_result_is_reported_not_timed():
    workload = select_workloads(["add-one-element"], quick=True)[0]
    inputs = workload.make_inputs(np.random.default_rng(0))
    wrong = [np.array([12345.0], dtype=np.float32)]
    record = run_one(workload, numpy_backend(), inputs, wrong, BenchSettings(quick=True))
    assert record["status"] == "wrong" and "median_s" not in record


def test_measure_respects_sample_bounds():
    calls = []
    policy = TimingPolicy(min_time=10.0, warmup_time=0.0, min_warmup_calls=2, max_samples=3)
    result = measure(lambda: calls.append(1), policy)
    assert result.warmup_calls == 2 and result.samples == 3
    assert len(calls) == 2 + result.calls


def test_registry_names_are_unique_and_filter_by_substring():
    for quick in (False, True):
        names = [w.name for w in workload_registry(quick)]
        assert len(names) == len(set(names))
    assert {w.family for w in select_workloads(["matmul"])} == {"matmul"}
    with pytest.raises(ValueError, match="no workload name contains"):
        select_workloads(["no-such-workload"])


def test_list_and_bad_filter(capsys):
    assert main(["--list"]) == 0
    assert "mlp-step" in capsys.readouterr().out
    assert main(["--workloads", "no-such-workload"]) == 2


@pytest.mark.parametrize(
    ("seconds", "text"), [(4.7e-05, "47.0 µs"), (0.61, "610 ms"), (2.4, "2.40 s")]
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_machine_line_names_the_cpu_kernels_and_a_forced_level():
    from glasstorch.bench.report import machine_line

    machine = {
        "cpu": "Some CPU",
        "cores": 2,
        "python": "3.11",
        "numpy": "2.0",
        "torch": None,
        "torch_threads": None,
        "tier": "fast",
        "threads": 2,
        "fast_build": {"capability": "AVX2", "cpu_supports": "AVX512"},
    }
    assert machine_line(machine).endswith("| fast kernels: AVX2, forced down from AVX512")
    machine["fast_build"] = {"capability": "AVX512", "cpu_supports": "AVX512"}
    assert machine_line(machine).endswith("| fast kernels: AVX512")
    machine["fast_build"] = {"unavailable": "ImportError: not built"}
    assert "fast kernels" not in machine_line(machine)


def test_gemm_line_compares_the_best_matmul_with_the_peak():
    from glasstorch.bench.report import gemm_line

    def matmul(name, gflops):
        return {"name": name, "results": {"fast": {"status": "ok", "throughput": gflops}}}

    document = {
        "machine": {
            "cores": 2,
            "cpu_mhz": 2000.0,
            "fast_build": {"capability": "AVX2", "cpu_supports": "AVX2"},
        },
        "workloads": [matmul("matmul-128", 40.0), matmul("matmul-1024", 96.0)],
    }
    # 2 cores x 2 GHz x (2 units x 8 lanes x 2 flops) = 128 GFLOP/s
    line = gemm_line(document)
    assert "matmul-1024 96 GFLOP/s = 75% of 128 GFLOP/s" in line
    document["machine"]["cpu_mhz"] = None  # no clock known: no line
    assert gemm_line(document) is None


def test_bandwidth_line_compares_the_largest_memory_bound_workload_with_memory():
    from glasstorch.bench.report import bandwidth_line

    def elementwise(name, megabytes, gbps, unit="GB/s"):
        results = {"fast": {"status": "ok", "throughput": gbps}, "torch": {"status": "ok"}}
        return {"name": name, "work": megabytes * 1e6, "unit": unit, "results": results}

    document = {
        "machine": {"memory_gbps": 40.0},
        "workloads": [
            elementwise("add-4M", 50, 90.0),  # from the caches: faster, but not the fair one
            elementwise("add-16M", 201, 30.0),
            elementwise("matmul-1024", 2147, 400.0, unit="GFLOP/s"),
        ],
    }
    line = bandwidth_line(document)
    assert "add-16M (201 MB a call) 30.0 GB/s = 75% of 40.0 GB/s" in line
    del document["machine"]["memory_gbps"]  # not measured: no line
    assert bandwidth_line(document) is None


def test_memory_bandwidth_is_a_positive_rate():
    from glasstorch.bench.report import memory_bandwidth

    gbps = memory_bandwidth(megabytes=8, repeats=2)
    assert math.isfinite(gbps) and gbps > 0


def test_merge_best_keeps_the_fastest_successful_run():
    from glasstorch.bench.runner import _merge_best

    entries = [{"name": "w", "results": {}}]

    def outcome(record):
        return {
            "status": "ok",
            "document": {"workloads": [{"name": "w", "results": {"x": record}}]},
        }

    _merge_best("fast", {"status": "error", "reason": "crashed"}, entries)
    assert entries[0]["results"]["fast"]["status"] == "error"
    _merge_best("fast", outcome({"status": "ok", "median_s": 2.0}), entries)
    _merge_best("fast", outcome({"status": "ok", "median_s": 1.0}), entries)
    _merge_best("fast", outcome({"status": "ok", "median_s": 3.0}), entries)
    _merge_best("fast", outcome({"status": "error", "reason": "flaky"}), entries)
    assert entries[0]["results"]["fast"] == {"status": "ok", "median_s": 1.0}


def test_threads_option_sets_glasstorch_threads_here_and_in_children(tmp_path):
    from glasstorch.bench.runner import child_options

    before = glasstorch.get_num_threads()
    try:
        document = _run(
            tmp_path, "--workloads", "add-one-element", "--backends", "tier", "--threads", "1"
        )
        assert document["machine"]["threads"] == 1
        assert document["workloads"][0]["results"][glasstorch.tier]["status"] == "ok"
    finally:
        glasstorch.set_num_threads(before)
    options = child_options(BenchSettings(threads=3), "tier")
    assert options[options.index("--threads") + 1] == "3"
    assert "--threads" not in child_options(BenchSettings(threads=3), "torch")


def test_the_pytorch_oracle_leaves_the_thread_counts_as_they_were():
    # PyTorch checks the model workloads on one thread, and it shares one
    # OpenMP runtime with the fast tier: the backends timed after the check
    # must still run on the threads they were given.
    torch = pytest.importorskip("torch")
    from glasstorch.bench.workloads import expected_result

    (workload,) = select_workloads(["lstm-char-step-h32"], quick=True)
    assert workload.oracle == "torch"
    before = glasstorch.get_num_threads(), torch.get_num_threads()
    try:
        glasstorch.set_num_threads(2)
        torch.set_num_threads(2)
        expected = expected_result(workload, workload.make_inputs(np.random.default_rng(0)))
        assert all(np.isfinite(array).all() for array in expected)
        assert glasstorch.get_num_threads() == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before[1])
        glasstorch.set_num_threads(before[0])


@pytest.mark.parametrize("backend", ["tier", "torch", "numpy"])
def test_children_keep_numpys_blas_to_one_thread_unless_numpy_is_timed(monkeypatch, backend):
    # NumPy computes every workload's expected result in the child, just before
    # the timed backend runs; its BLAS threads must not spin on the same cores.
    from glasstorch.bench import runner

    seen = {}

    def fake_run(command, env, check):
        seen["env"] = env
        return runner.subprocess.CompletedProcess(command, 1)  # and writes no results

    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    outcome = runner.run_tier_in_subprocess(glasstorch.tier, BenchSettings(), backend)
    assert outcome["status"] == "error"
    assert seen["env"]["GLASSTORCH_TIER"] == glasstorch.tier
    if backend == "numpy":
        assert "OPENBLAS_NUM_THREADS" not in seen["env"]
    else:
        assert seen["env"]["OPENBLAS_NUM_THREADS"] == "1"


def test_interleave_runs_each_backend_alone_taking_turns(tmp_path, capsys):
    document = _run(
        tmp_path,
        "--workloads",
        "add-one-element",
        "softmax",
        "--backends",
        "tier",
        "numpy",
        "--interleave",
    )
    assert document["settings"]["interleave"] is True
    assert document["backends"] == [glasstorch.tier, "numpy"]
    assert document["tiers"][glasstorch.tier] == {"status": "ok", "where": "subprocess"}
    for entry in document["workloads"]:
        for backend in (glasstorch.tier, "numpy"):
            record = entry["results"][backend]
            assert record["status"] == "ok", record
            assert record["median_s"] > 0 and record["samples"] >= 5
            assert record["max_abs_error"] <= 1e-5
    assert "each backend in its own interpreter, taking turns" in capsys.readouterr().out


def test_interleave_takes_neither_isolate_nor_rounds(tmp_path, capsys):
    for extra in (["--isolate"], ["--isolate", "--rounds", "2"]):
        assert main(["--interleave", *extra, "--json", str(tmp_path / "r.json")]) == 2
        assert "--interleave" in capsys.readouterr().err


def test_measure_interleaved_takes_turns_in_rotating_order():
    from glasstorch.bench.timing import LocalSampler, measure_interleaved

    order = []
    samplers = {
        name: LocalSampler(lambda name=name: order.append(name), first_call_s=1e-3)
        for name in ("a", "b", "c")
    }
    policy = TimingPolicy(min_time=0.0, warmup_time=0.0, min_warmup_calls=0, min_samples=3)
    measured = measure_interleaved(samplers, policy, pause=0.0, turn_time=0.0)
    assert {name: m.samples for name, m in measured.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(m.calls_per_sample == 1 and m.median_s >= 0 for m in measured.values())
    # Each sample is one untimed call and one timed call; the first of each
    # turn rotates: a b c, then b c a, then c a b.
    firsts = [order[i] for i in range(0, len(order), 2)]
    assert firsts == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_serve_answers_the_requests_of_taking_turns():
    import io

    from glasstorch.bench.runner import serve

    requests = [
        {"cmd": "prepare", "workload": "add-one-element"},
        {"cmd": "warm_up", "workload": "add-one-element"},
        {"cmd": "sample", "workload": "add-one-element", "calls": 7},
        {"cmd": "finish", "workload": "add-one-element"},
        {"cmd": "no such thing"},
        {"cmd": "quit"},
        {"cmd": "prepare", "workload": "add-one-element"},  # after quit: never read
    ]
    answers = io.StringIO()
    settings = BenchSettings(quick=True, backends=("numpy",), patterns=["add-one-element"])
    lines = [json.dumps(r) + "\n" for r in requests]
    assert serve(settings, iter(lines), answers) == 0
    prepared, warmed, sampled, finished, unknown, quit_ = map(
        json.loads, answers.getvalue().splitlines()
    )
    assert prepared == {"status": "ok", "max_abs_error": 0.0}
    assert warmed["estimate"] > 0 and warmed["warmup_calls"] >= 1
    assert sampled["seconds"] > 0
    assert finished == {} and quit_ == {}
    assert unknown["status"] == "error" and "no such thing" in unknown["reason"]


def test_a_child_whose_tier_cannot_load_answers_unavailable():
    from glasstorch.bench.runner import Child

    child = Child("no-such-tier", BenchSettings(quick=True), "tier")
    try:
        answer = child.ask({"cmd": "prepare", "workload": "add-one-element"})
        assert answer["status"] == "unavailable"
        assert "no-such-tier" in answer["reason"]
    finally:
        child.close()
    assert child.process.returncode == 0


def test_a_child_that_exits_while_taking_turns_is_an_error_not_a_crash():
    from glasstorch.bench.runner import _take_turns

    class ExitsWhenTimed:
        """A stand-in for runner.Child that dies at its first sample."""

        def __init__(self):
            self.alive = True

        def ask(self, request):
            if not self.alive:
                raise RuntimeError("the tier subprocess exited with code -9")
            if request["cmd"] == "prepare":
                return {"status": "ok", "max_abs_error": 0.0}
            if request["cmd"] == "warm_up":
                return {"estimate": 1e-3, "warmup_calls": 1}
            self.alive = False
            raise RuntimeError("the tier subprocess exited with code -9")

    workload = select_workloads(["add-one-element"], quick=True)[0]
    results = _take_turns(workload, {"fast": ExitsWhenTimed()}, BenchSettings(quick=True))
    assert results == {
        "fast": {"status": "error", "reason": "the tier subprocess exited with code -9"}
    }
