"""``python -m glasstorch.bench.ddp``: a DistributedDataParallel training step on 2 ranks.

For the demo's CNN and for GPT-mini, each rank training on its half of a
batch, this measures with glasstorch (over MPI, through its launcher) and with
PyTorch (over gloo, through ``torchrun``) when it is installed. Times are in
milliseconds, medians over the steps on rank 0:

* **step**: one DDP training step (zero_grad, forward, loss, backward with its
  overlapped all-reduces, optimizer step);
* **no overlap**: the same step with every bucket held until backward has
  produced the last gradient, then reduced: glasstorch's ``reducer.overlap =
  False``; for PyTorch a communication hook that holds the buckets and sends
  them from a callback at the end of backward (:func:`_hold_until_backward_ends`);
* **compute**: the step under ``no_sync()`` (no gradient is sent), then a
  barrier: a real step cannot finish before the slower rank has computed its
  gradients either, and on a shared machine the ranks often differ;
* **comm**: the gradients' all-reduces alone, bucket by bucket as DDP makes
  them, with nothing else running (for reference);
* **exposed**: ``step - compute``: what the step still pays for communicating;
* **hidden**: the share of the communication's cost that overlapping removed,
  ``(no overlap - step) / (no overlap - compute)``, clipped to [0, 1]: 1 when
  the step costs no more than its computation, 0 when overlapping saved
  nothing (or, on a machine without a spare core, cost more than it saved).

The variants are measured in turn, step after step, so that a slower moment of
a shared machine touches them alike. Each rank pins its math to one thread
(``OMP_NUM_THREADS=1``), as ``torchrun`` does.

Usage::

    python -m glasstorch.bench.ddp                   # both models, both frameworks
    python -m glasstorch.bench.ddp --models cnn --steps 20 --json ddp.json

One run launches 2 ranks per framework; the ranks run this same module with
``--rank-side`` and rank 0 writes its figures to a JSON file.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

WORLD = 2
MIB = 1024 * 1024

#: Per model: (what the table calls it, batch per rank).
MODELS = {
    "cnn": ("demo CNN (conv 16x3x3, pool, linear), batch 64 per rank", 64),
    "gpt": ("GPT-mini (4 layers, width 128, context 64), batch 8 per rank", 8),
}


# ------------------------------------------------------------------ rank side
def _build(lib, model: str):
    """The model, a loss function and one batch for this rank (seeded by rank)."""
    from glasstorch.bench.workloads import VOCABULARY, gpt_mini_model
    from glasstorch.demo import build_model

    functional = importlib.import_module(f"{lib.__name__}.nn.functional")
    rng = np.random.default_rng(
        1 + importlib.import_module(f"{lib.__name__}.distributed").get_rank()
    )
    batch = MODELS[model][1]
    if model == "cnn":
        network = build_model(lib, "cnn")
        x = lib.from_numpy(rng.standard_normal((batch, 1, 8, 8)).astype(np.float32))
        y = lib.from_numpy(rng.integers(0, 10, batch))

        def loss_of(net):
            return functional.cross_entropy(net(x), y)

        return network, loss_of
    network = gpt_mini_model(lib, layers=4, heads=4, width=128, context=64)
    tokens = rng.integers(0, VOCABULARY, (batch, 65))
    x, y = lib.from_numpy(tokens[:, :-1].copy()), lib.from_numpy(tokens[:, 1:].copy())

    def loss_of(net):
        logits = net(x)
        return functional.cross_entropy(logits.view(-1, VOCABULARY), y.reshape(-1))

    return network, loss_of


def _bucket_sizes(lib, params) -> list[int]:
    """The number of elements of each bucket DDP makes (reverse order, 1 MiB then 25 MiB)."""
    backward_order = list(reversed(params))
    limits = [MIB, 25 * MIB]
    if lib.__name__ == "torch":
        buckets = lib.distributed._compute_bucket_assignment_by_size(backward_order, limits)[0]
    else:
        from glasstorch.nn.parallel.reducer import assign_buckets

        buckets = assign_buckets(backward_order, limits)
    return [sum(backward_order[i].numel() for i in bucket) for bucket in buckets]


def _hold_until_backward_ends(lib, dist, ddp) -> None:
    """PyTorch DDP without overlap: a communication hook that holds every bucket until the
    end of backward (a queued callback), then averages them one after the other."""
    held = []

    def send_all():
        for buffer, future in held:
            buffer.div_(dist.get_world_size())
            dist.all_reduce(buffer)
            future.set_result(buffer)
        held.clear()

    def hook(state, bucket):
        if not held:  # the first bucket of this backward: send them all when it ends
            lib.autograd.Variable._execution_engine.queue_callback(send_all)
        future = lib.futures.Future()
        held.append((bucket.buffer(), future))
        return future

    ddp.register_comm_hook(None, hook)


def _measure(lib, dist, model: str, steps: int, warmup: int) -> dict:
    """The medians of one model's step variants on this rank (see the module docstring)."""
    lib.manual_seed(0)
    network, loss_of = _build(lib, model)
    ddp = lib.nn.parallel.DistributedDataParallel(network)
    optimizer = lib.optim.SGD(ddp.parameters(), lr=0.01)
    buffers = [lib.zeros(size) for size in _bucket_sizes(lib, list(network.parameters()))]
    if lib.__name__ == "torch":  # a second DDP over the same model, with the holding hook
        held_ddp = lib.nn.parallel.DistributedDataParallel(network)
        _hold_until_backward_ends(lib, dist, held_ddp)

    def step():
        optimizer.zero_grad()
        loss_of(ddp).backward()
        optimizer.step()

    def no_overlap():
        optimizer.zero_grad()
        if lib.__name__ == "torch":
            loss_of(held_ddp).backward()
        else:
            ddp.reducer.overlap = False
            loss_of(ddp).backward()
            ddp.reducer.overlap = True
        optimizer.step()

    def compute():
        with ddp.no_sync():
            step()
        dist.barrier()  # and wait for the slower rank, as a step's all-reduce must

    def comm():
        for buffer in buffers:
            dist.all_reduce(buffer)

    runs = {"step": step, "no_overlap": no_overlap, "compute": compute, "comm": comm}
    times = {name: [] for name in runs}
    for index in range(warmup + steps):
        for name, run in runs.items():
            dist.barrier()  # both ranks start together
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            if index >= warmup:
                times[name].append(elapsed)
    medians = {name: statistics.median(values) for name, values in times.items()}
    cost = medians["no_overlap"] - medians["compute"]  # communication, nothing hidden
    saved = medians["no_overlap"] - medians["step"]
    return {
        **{f"{name}_ms": 1e3 * value for name, value in medians.items()},
        "exposed_ms": 1e3 * (medians["step"] - medians["compute"]),
        "hidden": min(1.0, max(0.0, saved / cost)) if cost > 0 else 1.0,
        "buckets": len(buffers),
        "gradient_mb": sum(buffer.numel() for buffer in buffers) * 4 / 1e6,
    }


def _rank_side(framework: str, models: list[str], steps: int, warmup: int, out: str) -> None:
    lib = importlib.import_module(framework)
    lib.set_num_threads(1)
    dist = importlib.import_module(f"{framework}.distributed")
    dist.init_process_group(backend="gloo" if framework == "torch" else None)
    results = {model: _measure(lib, dist, model, steps, warmup) for model in models}
    if dist.get_rank() == 0:
        with open(out, "w", encoding="utf-8") as file:
            json.dump(results, file)
    dist.destroy_process_group()


# ---------------------------------------------------------------- parent side
def _launch(framework: str, models: list[str], steps: int, warmup: int) -> dict | str:
    """Run the rank side on 2 ranks; its figures, or the error text."""
    if framework == "torch":
        launcher = [sys.executable, "-m", "torch.distributed.run"]
    else:
        launcher = [sys.executable, "-m", "glasstorch.distributed.run"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    environment["PYTHONPATH"] = os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "rank0.json")
        command = [
            *launcher,
            "--nproc-per-node",
            str(WORLD),
            "-m",  # run this module by name, as python -m does (both launchers take the flag)
            "glasstorch.bench.ddp",
            "--rank-side",
            framework,
            "--models",
            ",".join(models),
            "--steps",
            str(steps),
            "--warmup",
            str(warmup),
            "--out",
            out,
        ]
        done = subprocess.run(command, capture_output=True, text=True, env=environment)
        if done.returncode != 0:
            return (done.stdout + done.stderr)[-2000:]
        with open(out, encoding="utf-8") as file:
            return json.load(file)


COLUMNS = ["step", "no overlap", "compute", "exposed", "comm", "hidden", "buckets", "grads MB"]


def _cells(figures: dict) -> list[str]:
    """One row's figures, in the order of :data:`COLUMNS` (times in ms)."""
    return [
        f"{figures['step_ms']:.2f}",
        f"{figures['no_overlap_ms']:.2f}",
        f"{figures['compute_ms']:.2f}",
        f"{figures['exposed_ms']:.2f}",
        f"{figures['comm_ms']:.2f}",
        f"{100 * figures['hidden']:.0f}%",
        str(figures["buckets"]),
        f"{figures['gradient_mb']:.2f}",
    ]


def _table(results: dict) -> str:
    """The figures as a Markdown table, one row per model and framework."""
    lines = [
        "| model | framework | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---:|" * len(COLUMNS),
    ]
    for model, (title, _) in MODELS.items():
        for framework, figures in results.items():
            if isinstance(figures, dict) and model in figures:
                lines.append(
                    f"| {title} | {framework} | " + " | ".join(_cells(figures[model])) + " |"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.bench.ddp", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--models", default="cnn,gpt", help="comma-separated: cnn, gpt")
    parser.add_argument("--steps", type=int, default=10, help="measured steps per model")
    parser.add_argument("--warmup", type=int, default=3, help="steps before measuring")
    parser.add_argument("--frameworks", default="glasstorch,torch", help="glasstorch, torch")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--rank-side", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    models = [name for name in args.models.split(",") if name]
    unknown = [name for name in models if name not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {sorted(MODELS)}")
    if args.rank_side:
        _rank_side(args.rank_side, models, args.steps, args.warmup, args.out)
        return {}
    results = {}
    for framework in args.frameworks.split(","):
        if framework == "torch" and importlib.util.find_spec("torch") is None:
            print("PyTorch is not installed: its column is left out")
            continue
        results[framework] = _launch(framework, models, args.steps, args.warmup)
        if isinstance(results[framework], str):
            print(f"{framework} failed:\n{results[framework]}")
    print(_table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)
    return results


if __name__ == "__main__":
    main()
