"""``python -m glasstorch.bench.device``: the GPU runtime seen from a training loop.

Two claims of the PyTorch paper are measured here, on the active CUDA driver
(a GPU through CuPy, or the CUDA simulator with ``GLASSTORCH_CUDA=simulator``):

* **Section 6.2, the caching allocator.** The first training iteration asks the
  device for memory (``cudaMalloc``: ``num_device_alloc`` grows and
  ``reserved_bytes.all.current`` with it); every later iteration, which needs
  the same sizes, is served from the cache: no new device allocation.
* **Section 6.1, asynchronous execution.** The host only *queues* kernels, so
  it finishes each iteration's Python work (``host``) before the device has
  finished running it. The device's time comes from two CUDA events recorded
  around the iteration (``device``), and the time the host then waits in
  ``synchronize`` says how far ahead it ran (``host waited``). The profiler
  adds up the kernels of the last iteration (``device busy``).

Each iteration ends with a synchronize, so its numbers are its own; the loop
never calls ``loss.item()`` inside an iteration, which would wait for the
device in the middle of it.

On the simulator the device is a CPU thread per stream running the kernels'
C++ translation, and it shares the machine's cores with the host: its times
are the simulator's, not a GPU's, and the report says so.

On a real GPU (the ``cupy`` driver) with PyTorch built with CUDA, the report
also compares matmul through cuBLAS with PyTorch's (the target: at least 0.95x
PyTorch's throughput).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from types import ModuleType

from glasstorch.bench.report import format_seconds

#: The paper's target for glasstorch's matmul on a GPU, as a fraction of PyTorch's throughput.
CUBLAS_TARGET = 0.95

SIMULATOR_NOTE = (
    "The device is the CUDA simulator: kernels run on the CPU, one thread per stream, "
    "sharing the cores with the host. Its times are the simulator's, not a GPU's; the "
    "allocator's counts are exactly what a GPU would show."
)


def driver_name() -> str | None:
    """``"simulator"`` or ``"cupy"``, or None when no CUDA driver is active."""
    from glasstorch._gpu import runtime as _runtime

    driver = _runtime.driver
    return None if driver is None else driver.name


def build_training(torch: ModuleType, model: str, batch: int, hidden: int, seed: int):
    """The demo's model, Adam and one random batch of 8 x 8 "digits", on the device.

    Returns:
        ``step``: ``step()`` runs one training iteration (forward, cross-entropy,
        backward, Adam) without waiting for the device.
    """
    from glasstorch.demo import build_model

    torch.manual_seed(seed)
    net = build_model(torch, model, hidden).cuda()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    images = torch.randn(batch, 1, 8, 8, device="cuda")
    labels = torch.randint(0, 10, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(net(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


def measure_iterations(step, iterations: int) -> list[dict]:
    """Run ``step`` ``iterations`` times; per iteration, the times and allocator counters.

    Returns:
        One dict per iteration: ``host_s`` (the host's time to queue it),
        ``device_s`` (between two events recorded around it), ``host_waited_s``
        (the synchronize at its end), ``num_device_alloc`` and
        ``reserved_bytes`` (after it), ``new_device_allocs`` (during it), and
        ``allocated_bytes`` (after it: what live tensors hold).
    """
    import glasstorch as torch

    torch.cuda.synchronize()
    allocs = torch.cuda.memory_stats()["num_device_alloc"]
    rows = []
    for number in range(1, iterations + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began = time.perf_counter()
        start.record()
        step()
        end.record()
        queued = time.perf_counter()
        end.synchronize()
        finished = time.perf_counter()
        stats = torch.cuda.memory_stats()
        rows.append(
            {
                "iteration": number,
                "host_s": queued - began,
                "device_s": start.elapsed_time(end) / 1e3,
                "host_waited_s": finished - queued,
                "new_device_allocs": stats["num_device_alloc"] - allocs,
                "num_device_alloc": stats["num_device_alloc"],
                "reserved_bytes": stats["reserved_bytes.all.current"],
                "allocated_bytes": stats["allocated_bytes.all.current"],
            }
        )
        allocs = stats["num_device_alloc"]
    return rows


def device_busy(step) -> dict:
    """Profile one more iteration: the device time of its kernels and copies, and counts."""
    from glasstorch.profiler import DeviceType, ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
    device = [e for e in prof.events() if e.device_type is DeviceType.CUDA]
    return {
        "busy_s": sum(e.duration_us for e in device) / 1e6,
        "kernels": sum(e.category == "kernel" for e in device),
        "copies": sum(e.category == "gpu_memcpy" for e in device),
    }


def matmul_against_torch(n: int = 4096, repeats: int = 20) -> dict | None:
    """On a real GPU: matmul through glasstorch (cuBLAS) and PyTorch, in GFLOP/s.

    Returns None (with nothing run) unless the driver is ``cupy`` and PyTorch
    with CUDA is installed. Unverified on hardware in the session that wrote it.
    """
    if driver_name() != "cupy":
        return None
    try:
        import torch as real_torch
    except ImportError:
        return None
    if not real_torch.cuda.is_available():
        return None
    import glasstorch as gt

    def timed(lib, a, b) -> float:
        for _ in range(3):
            a @ b
        lib.cuda.synchronize()
        start = lib.cuda.Event(enable_timing=True)
        end = lib.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            a @ b
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / repeats

    flops = 2.0 * n**3
    ours = timed(gt, gt.randn(n, n, device="cuda"), gt.randn(n, n, device="cuda"))
    theirs = timed(
        real_torch, real_torch.randn(n, n, device="cuda"), real_torch.randn(n, n, device="cuda")
    )
    ratio = (flops / ours) / (flops / theirs)
    return {
        "n": n,
        "glasstorch_gflops": flops / ours / 1e9,
        "torch_gflops": flops / theirs / 1e9,
        "ratio": ratio,
        "target": CUBLAS_TARGET,
        "met": ratio >= CUBLAS_TARGET,
    }


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


def render(document: dict) -> str:
    """The report as text: a table of iterations and what it shows."""
    rows = document["iterations"]
    out = [
        f"glasstorch device benchmark: {document['workload']}",
        f"device: {document['device']} (driver {document['driver']})",
    ]
    if document["driver"] == "simulator":
        out.append(SIMULATOR_NOTE)
    out.append("")
    header = (
        f"{'iteration':>9}  {'host':>9}  {'device':>9}  {'host waited':>11}  "
        f"{'new cudaMalloc':>14}  {'num_device_alloc':>16}  {'reserved':>10}  {'allocated':>10}"
    )
    out += [header, "-" * len(header)]
    setup = document["setup"]
    out.append(
        f"{'setup':>9}  {'':>9}  {'':>9}  {'':>11}  {setup['new_device_allocs']:>14}  {'':>16}  "
        f"{_mib(setup['reserved_bytes']):>10}  {_mib(setup['allocated_bytes']):>10}"
    )
    for row in rows:
        out.append(
            f"{row['iteration']:>9}  {format_seconds(row['host_s']):>9}  "
            f"{format_seconds(row['device_s']):>9}  {format_seconds(row['host_waited_s']):>11}  "
            f"{row['new_device_allocs']:>14}  {row['num_device_alloc']:>16}  "
            f"{_mib(row['reserved_bytes']):>10}  {_mib(row['allocated_bytes']):>10}"
        )
    out.append("")
    first, later = rows[0], rows[1:]
    if later:
        again = sum(row["new_device_allocs"] for row in later)
        out.append(
            f"Section 6.2: iteration 1 made {first['new_device_allocs']} device allocation(s) "
            f"(reserved {_mib(first['reserved_bytes'])}); iterations 2-{rows[-1]['iteration']} "
            f"made {again}"
            + (": every later request was served from the cache." if again == 0 else ".")
        )
        host = sum(row["host_s"] for row in later) / len(later)
        device = sum(row["device_s"] for row in later) / len(later)
        waited = sum(row["host_waited_s"] for row in later) / len(later)
        out.append(
            f"Section 6.1: after iteration 1, the host queued an iteration in "
            f"{format_seconds(host)} on average, the device took {format_seconds(device)}, and "
            f"the host then waited {format_seconds(waited)} for it"
            + (
                ": the host ran ahead of the device."
                if waited > 0.1 * device
                else ": the device kept up with the host (the host is the bottleneck)."
            )
        )
    busy = document.get("profiled")
    if busy:
        out.append(
            f"Profiled iteration: {busy['kernels']} kernels and {busy['copies']} copies kept the "
            f"device busy for {format_seconds(busy['busy_s'])}."
        )
    matmul = document.get("matmul")
    if matmul is None:
        out.append(
            "matmul through cuBLAS against PyTorch: not run (needs a real GPU: the cupy "
            "driver and PyTorch built with CUDA)."
        )
    else:
        verdict = "met" if matmul["met"] else "missed"
        out.append(
            f"matmul {matmul['n']} x {matmul['n']}: glasstorch (cuBLAS) "
            f"{matmul['glasstorch_gflops']:.0f} GFLOP/s, PyTorch {matmul['torch_gflops']:.0f} "
            f"GFLOP/s, ratio {matmul['ratio']:.2f} (target {matmul['target']}x: {verdict})."
        )
    return "\n".join(out)


def run(
    model: str = "cnn", iterations: int = 4, batch: int = 512, hidden: int = 512, seed: int = 0
) -> dict:
    """Measure the training loop and return the report as a dict (see :func:`render`).

    The demo's CNN needs convolution kernels on the device; while the CUDA tier
    lacks one, the demo's MLP runs instead and the report names it.
    """
    import glasstorch as torch

    note = None
    try:
        # A first model compiles (or loads) every kernel the loop uses, so no
        # compiling is timed; then it goes, and the cache is emptied.
        build_training(torch, model, batch, hidden, seed)()
    except NotImplementedError as error:
        if model == "mlp":
            raise
        note = f"the demo's {model} cannot run on the device yet ({error}); using its MLP"
        model = "mlp"
        build_training(torch, model, batch, hidden, seed)()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_stats()["num_device_alloc"]
    step = build_training(torch, model, batch, hidden, seed)  # parameters and the batch
    stats = torch.cuda.memory_stats()
    setup = {
        "new_device_allocs": stats["num_device_alloc"] - before,
        "reserved_bytes": stats["reserved_bytes.all.current"],
        "allocated_bytes": stats["allocated_bytes.all.current"],
    }
    rows = measure_iterations(step, iterations)
    width = f", hidden {hidden}" if model == "mlp" else ""
    return {
        "workload": f"the demo's {model.upper()}{width}, batch {batch}, cross-entropy, Adam",
        "note": note,
        "device": torch.cuda.get_device_name(),
        "driver": driver_name(),
        "setup": setup,
        "iterations": rows,
        "profiled": device_busy(step),
        "matmul": matmul_against_torch(),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m glasstorch.bench.device [--iterations N] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.bench.device",
        description="Allocator counts and host/device times of a training loop on the device.",
    )
    parser.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=512, help="the MLP's hidden width")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    args = parser.parse_args(argv)
    if args.iterations < 2:
        parser.error("--iterations must be at least 2 (the first iteration is compared to later)")
    if driver_name() is None:
        print(
            "no CUDA driver is active: run on a GPU (pip install cupy) or on the simulator "
            "with GLASSTORCH_CUDA=simulator python -m glasstorch.bench.device",
            file=sys.stderr,
        )
        return 1
    document = run(args.model, args.iterations, args.batch, args.hidden, args.seed)
    if document["note"]:
        print(f"note: {document['note']}")
    print(render(document))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(document, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
