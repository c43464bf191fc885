"""Reporting: the machine description, the tables, the JSON file and the plot.

The tables are Markdown pipe tables, readable in a terminal and ready to paste
into the docs. Every figure comes from one run, so the ratios compare
measurements taken side by side on the same machine.
"""

from __future__ import annotations

import json
import os
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from glasstorch.bench.workloads import Target

#: Increase when the JSON layout changes incompatibly.
SCHEMA = "glasstorch-bench/1"


# ---------------------------------------------------------------------- machine
def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_mhz() -> float | None:
    """The clock of the first core in MHz, from /proc/cpuinfo's "cpu MHz" (Linux), or None."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


#: float32 lanes of one vector at each level of the fast tier's kernels, and
#: the flops one lane does per instruction (a fused multiply-add is two; plain
#: x86-64 has none, so a multiply and an add are one each).
_LANES = {"AVX512": (16, 2), "AVX2": (8, 2), "DEFAULT": (4, 1)}


def gemm_peak(machine: dict) -> dict | None:
    """The float32 peak of the cores, in GFLOP/s, for the kernels in use, or None.

    cores x clock x vector units x lanes x flops per lane. It assumes two
    vector units per core that each start one full-width multiply-add (or,
    without FMA, a multiply or an add) per cycle, as every AVX2 core since
    Haswell and Zen 2 does; Zen 4 and some Intel cores split a 512-bit
    instruction in two, which halves the AVX-512 figure. The clock is
    /proc/cpuinfo's "cpu MHz": the clock when it was read, often the base
    clock on a virtual machine, while a busy core may run faster (boost), so
    a GEMM may measure above this "peak".
    """
    build = machine.get("fast_build") or {}
    mhz = machine.get("cpu_mhz")
    if "capability" not in build or not mhz or not machine.get("cores"):
        return None
    lanes, flops = _LANES[build["capability"]]
    per_cycle = 2 * lanes * flops
    return {
        "gflops": machine["cores"] * mhz / 1000 * per_cycle,
        "flops_per_cycle": per_cycle,
        "cores": machine["cores"],
        "ghz": mhz / 1000,
        "capability": build["capability"],
    }


def memory_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """The memory bandwidth of this machine in GB/s, measured as STREAM's copy does.

    One array of ``megabytes`` (far larger than any cache) is copied into
    another by NumPy, split among as many threads as there are cores, best of
    ``repeats``; the bytes counted are those read plus those written, as
    STREAM counts them (a core that first reads the line it writes moves a
    third more, so an elementwise kernel can measure a little above this).
    """
    count = megabytes * 2**20 // 8
    source, target = np.ones(count), np.zeros(count)  # both written: their pages exist
    threads = os.cpu_count() or 1
    bounds = [count * i // threads for i in range(threads + 1)]

    def copy_part(i: int) -> None:
        np.copyto(target[bounds[i] : bounds[i + 1]], source[bounds[i] : bounds[i + 1]])

    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(copy_part, range(threads)))
            best = min(best, time.perf_counter() - start)
    return 2 * 8 * count / best / 1e9


def machine_info(torch_threads: int | None = None) -> dict:
    """Where the figures were measured: hardware, software versions, tier, build.

    Call it *before* the run: the load average it records should describe the
    other programs on the machine, not the benchmark itself.
    """
    import glasstorch

    info: dict = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cpu_mhz": cpu_mhz(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": _version("torch"),
        "torch_threads": torch_threads,
        "glasstorch": _version("glasstorch"),
        "tier": glasstorch.tier,
        "threads": glasstorch.get_num_threads(),
        "fast_build": None,
        "load_average": _load_average(),
    }
    try:
        from glasstorch.fast import build_info

        info["fast_build"] = build_info()
    except Exception as error:  # the fast tier's extension may not be built
        info["fast_build"] = {"unavailable": f"{type(error).__name__}: {error}"}
    return info


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (Unix), or ``None``."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def busy_warning(machine: dict) -> str | None:
    """A warning when other programs were competing for the cores during the run.

    The load average counts the processes running or waiting for a core. Above
    the number of cores, the benchmark shared the CPU, and multi-threaded
    backends (PyTorch, OpenMP kernels) suffer most: a thread that loses its core
    makes the others wait for it. Such figures are not comparable.
    """
    load, cores = machine.get("load_average"), machine.get("cores")
    if not load or not cores or load[0] <= 0.5 * cores:
        return None
    return (
        f"WARNING: the machine was busy (load average {load[0]:.1f} on {cores} cores before the run): "
        "other programs competed for the CPU, so these figures are noisy; rerun on an idle machine."
    )


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------- formatting
def format_seconds(seconds: float) -> str:
    """``4.7e-05`` -> ``"47.0 µs"``, ``0.61`` -> ``"610 ms"``, ``2.4`` -> ``"2.40 s"``."""
    if seconds >= 1.0:
        value, unit = seconds, "s"
    elif seconds >= 1e-3:
        value, unit = seconds * 1e3, "ms"
    elif seconds >= 1e-6:
        value, unit = seconds * 1e6, "µs"
    else:
        value, unit = seconds * 1e9, "ns"
    digits = 0 if value >= 100 else (1 if value >= 10 else 2)
    return f"{value:.{digits}f} {unit}"


def format_number(value: float) -> str:
    """Three significant digits: ``231.4`` -> ``"231"``, ``0.0523`` -> ``"0.0523"``."""
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def format_ratio(ratio: float) -> str:
    """A time ratio: ``1.123`` -> ``"1.12x"``, ``18.94`` -> ``"18.9x"``, ``12552.6`` -> ``"12,553x"``."""
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def cell(record: dict | None) -> str:
    """A backend's time cell: the median, or why there is none."""
    if record is None:
        return "-"
    status = record["status"]
    if status == "ok":
        return format_seconds(record["median_s"])
    if status == "skipped":
        return f"skipped ({record['reason']})"
    return status  # "unavailable", "wrong", "error": the reason goes in a note


def _ratio(results: dict, numerator: str, denominator: str) -> float | None:
    a, b = results.get(numerator), results.get(denominator)
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return None
    return a["median_s"] / b["median_s"]


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown pipe table with padded columns (numbers right-aligned)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    right = [i > 1 for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right))
        + "|"
    )
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def _glasstorch_tiers(document: dict) -> list[str]:
    return [name for name in document["backends"] if name in document["tiers"]]


def time_table(document: dict) -> str:
    """Median time per call on each backend, the tiers' time ratios, and the targets.

    A ratio ``fast/torch 1.12x`` is the fast tier's time divided by PyTorch's:
    above 1 the tier is slower, below 1 faster.
    """
    backends = document["backends"]
    tiers = _glasstorch_tiers(document)
    references = [name for name in ("torch", "numpy") if name in backends]
    ratio_columns = [(t, r) for t in tiers for r in references]
    has_targets = any(entry["target"] for entry in document["workloads"])

    header = ["workload", "size", *backends, *(f"{t}/{r}" for t, r in ratio_columns)]
    if has_targets:
        header.append("target: fast/torch time")
    rows = []
    for entry in document["workloads"]:
        results = entry["results"]
        row = [entry["name"], entry["size"], *(cell(results.get(b)) for b in backends)]
        for t, r in ratio_columns:
            ratio = _ratio(results, t, r)
            row.append("-" if ratio is None else format_ratio(ratio))
        if has_targets:
            row.append(_target_cell(entry, results))
        rows.append(row)
    return _markdown(header, rows)


def _target_cell(entry: dict, results: dict) -> str:
    target = entry["target"]
    if not target:
        return ""
    bound = f"<= {target['goal']:.2f}x"
    if target["first_bar"] is not None:
        bound += f" (first bar {target['first_bar']:.2f}x)"
    ratio = _ratio(results, "fast", "torch")
    if ratio is None:
        return f"{bound}: not measured"
    return f"{bound}: {Target(**target).verdict(ratio)}"


def throughput_table(document: dict) -> str:
    """Throughput on each backend, for the workloads where work per call is counted."""
    backends = document["backends"]
    header = ["workload", "unit", *backends]
    rows = []
    for entry in document["workloads"]:
        if not entry["unit"]:
            continue
        row = [entry["name"], entry["unit"]]
        for name in backends:
            record = entry["results"].get(name)
            ok = record and record["status"] == "ok" and record.get("throughput")
            row.append(format_number(record["throughput"]) if ok else "-")
        rows.append(row)
    return _markdown(header, rows)


def gemm_line(document: dict) -> str | None:
    """The fast tier's best matmul throughput against the cores' peak (see gemm_peak)."""
    peak = gemm_peak(document["machine"])
    best = max(
        (
            (record["throughput"], entry["name"])
            for entry in document["workloads"]
            if entry["name"].startswith("matmul")
            for name, record in entry["results"].items()
            if name == "fast" and record["status"] == "ok" and record.get("throughput")
        ),
        default=None,
    )
    if peak is None or best is None:
        return None
    gflops, name = best
    return (
        f"GEMM against the peak: fast {name} {gflops:.0f} GFLOP/s = "
        f"{100 * gflops / peak['gflops']:.0f}% of {peak['gflops']:.0f} GFLOP/s "
        f"({peak['cores']} cores x {peak['ghz']:.2f} GHz x {peak['flops_per_cycle']} float32 "
        f"flops a cycle with {peak['capability']}: two vector units per core assumed; "
        "the clock is /proc/cpuinfo's, which a boosting core may exceed)"
    )


def bandwidth_line(document: dict) -> str | None:
    """The fast tier's throughput on the largest memory-bound workload (the
    most bytes per call, counted in GB/s) against the memory bandwidth
    measured after the run (see memory_bandwidth). Smaller workloads can run
    from the caches, faster than memory allows, so the largest is the fair
    comparison."""
    measured = document["machine"].get("memory_gbps")
    largest = max(
        (
            (entry["work"], entry["name"], record["throughput"])
            for entry in document["workloads"]
            if entry["unit"] == "GB/s"
            for name, record in entry["results"].items()
            if name == "fast" and record["status"] == "ok" and record.get("throughput")
        ),
        default=None,
    )
    if not measured or largest is None:
        return None
    work, name, gbps = largest
    return (
        f"Elementwise against memory: fast {name} ({work / 1e6:.0f} MB a call) {gbps:.1f} GB/s = "
        f"{100 * gbps / measured:.0f}% of {measured:.1f} GB/s (a NumPy copy of 256 MiB on "
        "every core, read plus write bytes, as STREAM counts them)"
    )


def notes(document: dict) -> list[str]:
    """One line per distinct reason a cell holds no time."""
    lines: list[str] = []
    seen = set()
    for entry in document["workloads"]:
        for name, record in entry["results"].items():
            if record["status"] in ("ok", "skipped"):
                continue
            key = (name, record["status"], record["reason"])
            if key in seen:
                continue
            seen.add(key)
            where = entry["name"] if record["status"] in ("wrong", "error") else "all"
            lines.append(f"{name} {record['status']} ({where}): {record['reason']}")
    if any(r["status"] == "skipped" for e in document["workloads"] for r in e["results"].values()):
        lines.append("skipped sizes run with --no-skip (slowly).")
    return lines


def machine_line(machine: dict, isolated: bool = False, interleaved: bool = False) -> str:
    """The machine in one line, for the top of the report."""
    torch = (
        f"torch {machine['torch']} ({machine['torch_threads']} threads)"
        if machine["torch"] and machine["torch_threads"]
        else "torch not run"
    )
    return (
        f"{machine['cpu']}, {machine['cores']} cores | Python {machine['python']}, "
        f"NumPy {machine['numpy']}, {torch} | "
        + (
            "each backend in its own interpreter, taking turns"
            if interleaved
            else "each backend in its own interpreter"
            if isolated
            else f"glasstorch tier in process: {machine['tier']}"
        )
        + (f" | glasstorch threads: {machine['threads']}" if machine.get("threads") else "")
        + capability_text(machine)
    )


def capability_text(machine: dict) -> str:
    """Which instruction set the fast tier's kernels use, for the machine line.

    The level forced by GLASSTORCH_CPU_CAPABILITY (or ATEN_CPU_CAPABILITY) is
    inherited by every interpreter the harness starts, so one line holds for
    all of them.
    """
    build = machine.get("fast_build") or {}
    if "capability" not in build:
        return ""
    forced = (
        ""
        if build["capability"] == build["cpu_supports"]
        else f", forced down from {build['cpu_supports']}"
    )
    return f" | fast kernels: {build['capability']}{forced}"


def render(document: dict) -> str:
    """The full text report: machine, time table, throughput table, notes."""
    settings = document.get("settings", {})
    parts = [
        machine_line(
            document["machine"], settings.get("isolate", False), settings.get("interleave", False)
        )
    ]
    warning = busy_warning(document["machine"])
    if warning:
        parts.append(warning)
    parts += [
        "",
        "Median time per call (ratios: time / time, below 1.00x is faster)",
        "",
        time_table(document),
    ]
    if any(entry["unit"] for entry in document["workloads"]):
        parts += ["", "Throughput (higher is better)", "", throughput_table(document)]
    peak = gemm_line(document)
    if peak:
        parts += ["", peak]
    bandwidth = bandwidth_line(document)
    if bandwidth:
        parts += ["", bandwidth]
    lines = notes(document)
    if lines:
        parts += ["", "Notes:", *(f"- {line}" for line in lines)]
    return "\n".join(parts)


# ------------------------------------------------------------------------- files
def make_document(results: dict, machine: dict, argv: list[str]) -> dict:
    """The JSON document: schema, when, the command, the machine, then the results."""
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": ["python", "-m", "glasstorch.bench", *argv],
        "machine": machine,
        **results,
    }


def write_json(document: dict, path: str | Path) -> Path:
    """Write ``document`` to ``path`` (indented, UTF-8) and return the path."""
    path = Path(path)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_plot(document: dict, path: str | Path) -> str:
    """A bar chart per unit (GFLOP/s, GB/s, µs per call), log scale; returns a message.

    Each group of bars is a workload, each colour a backend. Needs matplotlib;
    without it, nothing is written and the message says so.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # draw to a file, no window
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        return "plot skipped: matplotlib is not installed (pip install 'glasstorch[bench]')"

    backends = document["backends"]
    panels = []  # (title, [(workload, {backend: value})])
    for unit in ("GFLOP/s", "GB/s"):
        rows = []
        for entry in document["workloads"]:
            if entry["unit"] == unit:
                values = {
                    b: r["throughput"]
                    for b, r in entry["results"].items()
                    if r["status"] == "ok" and r.get("throughput")
                }
                rows.append((entry["name"], values))
        if rows:
            panels.append((f"throughput, {unit} (higher is better)", rows))
    overhead = [
        (
            e["name"],
            {b: r["median_s"] * 1e6 for b, r in e["results"].items() if r["status"] == "ok"},
        )
        for e in document["workloads"]
        if not e["unit"]
    ]
    if overhead:
        panels.append(("time per call, µs (lower is better)", overhead))
    if not panels:
        return "plot skipped: no results to plot"

    widths = [max(2, len(rows)) for _, rows in panels]
    figure, axes = plt.subplots(
        1,
        len(panels),
        figsize=(2 + 1.4 * sum(widths), 5),
        gridspec_kw={"width_ratios": widths},
        squeeze=False,
    )
    bar = 0.8 / max(1, len(backends))
    for axis, (title, rows) in zip(axes[0], panels):
        for k, backend in enumerate(backends):
            xs = [
                i + (k - (len(backends) - 1) / 2) * bar
                for i, (_, values) in enumerate(rows)
                if backend in values
            ]
            ys = [values[backend] for _, values in rows if backend in values]
            axis.bar(xs, ys, width=bar, label=backend, color=f"C{k}")
        axis.set_yscale("log")
        axis.set_title(title, fontsize=10)
        axis.set_xticks(
            range(len(rows)), [name for name, _ in rows], rotation=35, ha="right", fontsize=8
        )
        axis.grid(axis="y", which="both", alpha=0.3)
    handles = [Patch(color=f"C{k}", label=b) for k, b in enumerate(backends)]
    figure.legend(handles=handles, loc="upper right", ncols=len(backends))
    figure.suptitle(
        f"glasstorch benchmark: {document['machine']['cpu']}", fontsize=10, x=0.01, ha="left"
    )
    figure.tight_layout(rect=(0, 0, 1, 0.93))
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return f"plot written to {path}"
