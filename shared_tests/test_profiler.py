"""glasstorch.profiler: operation spans, record_function, key_averages, tables, Chrome traces.

Profiles are checked by their structure (names, nesting, counts, ordering),
never by how long anything took. The device tests drive the CUDA simulator
directly and report its work to the profiler as a CUDA driver does (through
``glasstorch._gpu.trace.observers``), so they need a C and a C++ compiler.
"""

from __future__ import annotations

import json
import shutil
import threading

import numpy as np
import pytest
from cuda_support import EXAMPLES_CU, requires_cuda

import glasstorch as torch
from glasstorch._gpu import trace as _trace
from glasstorch.autograd import function as autograd_function
from glasstorch.profiler import (
    DeviceType,
    ProfilerAction,
    ProfilerActivity,
    _record,
    profile,
    record_function,
    schedule,
    supported_activities,
)

pytestmark = pytest.mark.profiler

CPU = [ProfilerActivity.CPU]


def names(prof) -> list[str]:
    return [event.name for event in prof.events()]


def by_name(prof, name: str) -> list:
    return [event for event in prof.events() if event.name == name]


# ------------------------------------------------------------------ host spans


def test_operations_are_named_as_pytorch_names_them():
    a, b = torch.ones(3, 3), torch.ones(3, 3)
    with profile(activities=CPU) as prof:
        (a + b).relu().sum()
        a @ b
        torch.nn.functional.max_pool2d(torch.ones(1, 1, 4, 4), 2)
        a[0]  # indexing without autograd takes a shortcut that must still be recorded
    recorded = set(names(prof))
    names_expected = ("aten::add", "aten::relu", "aten::sum", "aten::mm", "aten::max_pool2d")
    for name in (*names_expected, "aten::select"):
        assert name in recorded


def test_a_users_function_keeps_its_class_name():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad

    with profile(activities=CPU) as prof:
        Square.apply(torch.ones(2))
    (square,) = by_name(prof, "Square")
    assert [child.name for child in square.cpu_children] == ["aten::mul"]


def test_key_averages_counts_calls():
    x = torch.ones(4)
    with profile(activities=CPU) as prof:
        for _ in range(3):
            x = x + 1
        x.exp()
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["aten::add"].count == 3
    assert rows["aten::exp"].count == 1


def test_record_function_is_the_parent_of_the_operations_inside():
    x = torch.ones(4)
    with profile(activities=CPU) as prof:
        with record_function("block"):
            y = x * 2
            y.sum()
        x.neg()
    (block,) = by_name(prof, "block")
    assert block.is_user_annotation and block.cpu_parent is None
    assert [child.name for child in block.cpu_children] == ["aten::mul", "aten::sum"]
    (neg,) = by_name(prof, "aten::neg")
    assert neg.cpu_parent is None
    for child in block.cpu_children:
        assert block.time_range.start <= child.time_range.start
        assert child.time_range.end <= block.time_range.end


def test_self_time_is_total_time_minus_the_childrens():
    x = torch.ones(4)
    with profile(activities=CPU) as prof:
        with record_function("outer"):
            with record_function("inner"):
                x + x
            x * x
    (outer,) = by_name(prof, "outer")
    children = sum(child.cpu_time_total for child in outer.cpu_children)
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - children)
    assert 0 <= outer.self_cpu_time_total <= outer.cpu_time_total
    # Self times count every microsecond once: they add up to the top-level spans.
    events = prof.events()
    top = sum(event.cpu_time_total for event in events if event.cpu_parent is None)
    assert events.self_cpu_time_total == pytest.approx(top)


def test_record_function_as_a_decorator_and_its_autograd_alias():
    @record_function("step")
    def step(x):
        return x + 1

    with profile(activities=CPU) as prof:
        step(torch.ones(2))
        with torch.autograd.profiler.record_function("alias"):
            step(torch.ones(2))
    assert torch.autograd.profiler.record_function is record_function
    steps = by_name(prof, "step")
    assert len(steps) == 2
    assert steps[1].cpu_parent.name == "alias"
    assert [child.name for child in steps[0].cpu_children] == ["aten::add"]


def test_backward_nodes_are_spans_with_their_operations_inside():
    x = torch.ones(3, requires_grad=True)
    with profile(activities=CPU) as prof:
        (x * x).sum().backward()
    recorded = names(prof)
    assert "MulBackward0" in recorded and "SumBackward0" in recorded
    (mul_backward,) = by_name(prof, "MulBackward0")
    assert mul_backward.cpu_children, "the backward formula's operations run inside its node"
    assert all(child.name.startswith("aten::") for child in mul_backward.cpu_children)
    assert recorded.index("aten::mul") < recorded.index("MulBackward0")


def test_record_shapes_and_grouping_by_input_shape():
    with profile(activities=CPU, record_shapes=True) as prof:
        torch.ones(2, 3) + torch.ones(2, 3)
        torch.ones(4) + torch.ones(4)
        torch.ones(4) + torch.ones(4)
    adds = by_name(prof, "aten::add")
    assert [event.input_shapes[:2] for event in adds] == [[[2, 3], [2, 3]], [[4], [4]], [[4], [4]]]
    grouped = [
        row for row in prof.key_averages(group_by_input_shape=True) if row.key == "aten::add"
    ]
    assert sorted(row.count for row in grouped) == [1, 2]
    assert all(row.input_shapes for row in grouped)
    (merged,) = [row for row in prof.key_averages() if row.key == "aten::add"]
    assert merged.count == 3


def test_shapes_are_not_recorded_unless_asked():
    with profile(activities=CPU) as prof:
        torch.ones(2) + 1
    assert by_name(prof, "aten::add")[0].input_shapes == []


def test_other_threads_are_recorded_on_their_own_track():
    done = []

    def work():
        torch.ones(2).exp()
        done.append(threading.get_native_id())

    with profile(activities=CPU) as prof:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        torch.ones(2).neg()
    (exp,) = by_name(prof, "aten::exp")
    (neg,) = by_name(prof, "aten::neg")
    assert exp.thread == done[0] != neg.thread == threading.get_native_id()


def test_an_operation_that_raises_closes_its_span():
    with profile(activities=CPU) as prof:
        with pytest.raises(RuntimeError):
            torch.ones(2) + torch.ones(3)
        torch.ones(2).neg()
    (failed,) = by_name(prof, "aten::add")
    (neg,) = by_name(prof, "aten::neg")
    assert neg.cpu_parent is None and failed.time_range.end <= neg.time_range.start


# ------------------------------------------------------------ control and API


def test_nothing_is_hooked_outside_a_profile():
    assert autograd_function.profiler_hook is None
    with record_function("unobserved"):  # no profiler: does nothing, raises nothing
        torch.ones(2) + 1
    prof = profile(activities=CPU)
    prof.start()
    assert autograd_function.profiler_hook is not None
    prof.stop()
    assert autograd_function.profiler_hook is None and _trace.observers == []


def test_an_exception_in_the_block_still_stops_the_profiler():
    with pytest.raises(ValueError):
        with profile(activities=CPU):
            raise ValueError("boom")
    assert autograd_function.profiler_hook is None


def test_one_profile_records_at_a_time():
    with profile(activities=CPU):
        with pytest.raises(RuntimeError, match="already recording"):
            with profile(activities=CPU):
                pass
    with profile(activities=CPU) as again:  # the first one's stop freed the slot
        torch.ones(1).neg()
    assert "aten::neg" in names(again)


def test_results_before_the_end_are_an_error():
    with profile(activities=CPU) as prof:
        with pytest.raises(RuntimeError, match="no results yet"):
            prof.key_averages()


def test_schedule_actions():
    steps = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    actions = [steps(i) for i in range(11)]
    N, W, R, S = (  # noqa: N806
        ProfilerAction.NONE,
        ProfilerAction.WARMUP,
        ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE,
    )
    assert actions == [N, N, W, R, S, N, W, R, S, N, N]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_a_schedule_records_the_active_steps_and_hands_each_cycle_over():
    ready = []

    def on_trace_ready(prof):
        ready.append([e.name for e in prof.events() if e.name.startswith("ProfilerStep#")])

    x = torch.ones(2)
    with profile(
        activities=CPU,
        schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
        on_trace_ready=on_trace_ready,
    ) as prof:
        for _ in range(10):
            x.neg()
            prof.step()
    assert ready == [
        ["ProfilerStep#2", "ProfilerStep#3"],
        ["ProfilerStep#6", "ProfilerStep#7"],
    ]
    step = by_name(prof, "ProfilerStep#7")[0]
    assert [child.name for child in step.cpu_children] == ["aten::neg"]


def test_start_stop_without_with_and_on_trace_ready_at_stop():
    seen = []
    prof = profile(activities=CPU, on_trace_ready=seen.append)
    prof.start()
    torch.ones(2).neg()
    prof.stop()
    assert seen == [prof] and "aten::neg" in names(prof)


def test_cuda_activity_without_a_driver_warns_and_profiles_the_host(monkeypatch):
    monkeypatch.setattr(_record, "cuda_clock", lambda: None)
    with pytest.warns(UserWarning, match="no CUDA driver is active"):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            torch.ones(2).neg()
    assert names(prof) == ["aten::neg"]


def test_optimizer_steps_are_labelled_as_pytorch_labels_them():
    w = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    with profile(activities=CPU) as prof:
        optimizer.step()
        optimizer.zero_grad()
    (step,) = by_name(prof, "Optimizer.step#SGD.step")
    assert step.is_user_annotation
    assert by_name(prof, "Optimizer.zero_grad#SGD.zero_grad")
    assert w.grad is None


# ---------------------------------------------------------------- the table


def test_table_layout_follows_pytorch():
    x = torch.ones(4)
    with profile(activities=CPU) as prof:
        with record_function("loop"):
            for _ in range(3):
                x = x + 1
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=1)
    lines = table.splitlines()
    assert lines[0] == lines[2] == lines[4] and set(lines[0]) == {"-", " "}
    assert lines[1].split() == (
        "Name Self CPU % Self CPU CPU total % CPU total CPU time avg # of Calls".split()
    )
    assert lines[3].split()[0] == "loop" and lines[3].split()[-1] == "1"  # the largest total
    assert lines[3].split()[3] == "100.00%"  # the loop holds all the time
    assert lines[5].startswith("Self CPU time total: ")
    assert len(lines) == 6 and table.endswith("\n")


def test_table_sorts_by_count_and_cuts_long_names():
    x = torch.ones(4)
    long_name = "a-block-with-a-rather-long-name-" * 3
    with profile(activities=CPU) as prof:
        with record_function(long_name):
            for _ in range(3):
                x = x + 1
            x.neg()
    rows = prof.key_averages().table(sort_by="count").splitlines()[3:-2]
    assert rows[0].split()[0] == "aten::add" and rows[0].split()[-1] == "3"
    cut = [row for row in rows if "..." in row]
    assert len(cut) == 1 and cut[0].split()[0] == long_name[:52] + "..."
    titled = prof.key_averages().table(header="my profile").splitlines()
    assert titled[1] == "my profile" and set(titled[0]) == {"="}


# ------------------------------------------------------------ the Chrome trace


def test_chrome_trace_of_the_host(tmp_path):
    x = torch.ones(4)
    with profile(activities=CPU, record_shapes=True) as prof:
        with record_function("block"):
            x * 2
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    slices = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
    block, mul = slices["block"], slices["aten::mul"]
    assert block["cat"] == "user_annotation" and mul["cat"] == "cpu_op"
    assert block["pid"] == mul["pid"] and block["tid"] == mul["tid"] == threading.get_native_id()
    assert block["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= block["ts"] + block["dur"] + 1e-3
    assert mul["args"]["Input Dims"] == [[4], []]
    thread_names = [
        e for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"
    ]
    assert [e["tid"] for e in thread_names] == [mul["tid"]]


# ------------------------------------------------------- the device (simulator)

SPIN_KERNELS = r"""
// Waits until the host sets *flag (a guard ends the wait after 2^34 reads).
extern "C" __global__ void wait_for_flag(const volatile int *flag, int *out) {
    for (long long spins = 0; *flag == 0; spins++) {
        if (spins == (1LL << 34)) break;
    }
    *out = 1;
}

extern "C" __global__ void set_one(int *out) { *out = 1; }
"""

needs_compilers = pytest.mark.skipif(
    shutil.which("c++") is None or shutil.which("cc") is None,
    reason="the CUDA simulator needs a C and a C++ compiler (cc, c++)",
)


@pytest.fixture
def simulated_driver(monkeypatch):
    """The simulator, with the profiler's device clock over it, and a ``launch``
    that queues a kernel between two events and tells the observers, as the
    CUDA driver does."""
    from glasstorch.fast.cuda.simulator.simulator import Event, Stream, get_simulator

    sim = get_simulator()
    monkeypatch.setattr(
        _record, "cuda_clock", lambda: _record.DeviceClock(sim.synchronize, lambda: Event(sim))
    )
    module = sim.load_source(SPIN_KERNELS, filename="profiler_test_kernels.cu")
    pointers, streams = [], []

    class Driver:
        def __init__(self):
            self.sim = sim

        def malloc_int(self) -> int:
            ptr = sim.malloc(4)
            pointers.append(ptr)
            sim.memset(ptr, 0, 4)
            sim.synchronize()
            return ptr

        def stream(self) -> Stream:
            streams.append(Stream(sim))
            return streams[-1]

        def launch(self, name: str, args: tuple, stream: Stream) -> None:
            start, end = Event(sim), Event(sim)
            start.record(stream)
            module.get_function(name)(1, 1, args, stream=stream)
            end.record(stream)
            for observer in list(_trace.observers):
                observer("kernel", name, stream, start, end)

    yield Driver()
    sim.synchronize()
    for stream in streams:
        stream.close()
    for ptr in pointers:
        sim.free(ptr)


@pytest.mark.cuda
@needs_compilers
def test_device_spans_sit_on_their_streams_after_their_launch(simulated_driver, tmp_path):
    driver = simulated_driver
    flag, out = driver.malloc_int(), driver.malloc_int()
    waiting, other = driver.stream(), driver.stream()
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities) as prof:
        with record_function("launch and run ahead"):
            driver.launch("wait_for_flag", (flag, out), waiting)
        # The host is already here while the kernel waits: it ran ahead. It
        # releases the kernel through a copy on another stream.
        driver.sim.copy_from_host(flag, np.array([1], dtype=np.int32), stream=other)
        with record_function("second"):
            driver.launch("set_one", (out,), other)
    events = prof.events()
    (op,) = by_name(prof, "launch and run ahead")
    (kernel,) = by_name(prof, "wait_for_flag")
    (launch,) = [e for e in op.cpu_children if e.name == "cudaLaunchKernel"]
    assert kernel.device_type is DeviceType.CUDA and kernel.category == "kernel"
    assert kernel.launch is launch and op.kernels == [kernel]
    assert launch.time_range.start <= kernel.time_range.end
    assert op.time_range.end < kernel.time_range.end, "the host ran ahead of the device"
    (second,) = by_name(prof, "set_one")
    assert second.thread != kernel.thread  # one track per stream
    assert op.self_device_time_total == op.device_time_total == kernel.duration_us
    assert events.use_device

    table = prof.key_averages().table(sort_by="cuda_time_total")
    titles = table.splitlines()[1]
    for title in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls"):
        assert title in titles
    assert table.splitlines()[-1].startswith("Self CUDA time total: ")

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    (kernel_slice,) = [e for e in trace if e.get("name") == "wait_for_flag"]
    (launch_slice,) = [
        e for e in trace if e.get("name") == "cudaLaunchKernel" and e["ts"] <= kernel_slice["ts"]
    ][:1]
    assert kernel_slice["cat"] == "kernel" and kernel_slice["pid"] == 0
    assert launch_slice["cat"] == "cuda_runtime"
    flows = {e["ph"]: e for e in trace if e.get("cat") == "ac2g" and e["id"] == kernel.id}
    assert flows["s"]["ts"] == launch_slice["ts"] and flows["s"]["tid"] == launch_slice["tid"]
    assert flows["f"]["ts"] == kernel_slice["ts"] and flows["f"]["tid"] == kernel_slice["tid"]
    streams = {e["tid"]: e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    assert streams[kernel_slice["tid"]].startswith("stream ")
    assert _trace.observers == []


@pytest.mark.cuda
@needs_compilers
def test_a_cuda_only_profile_keeps_the_device_work_and_launches(simulated_driver):
    driver = simulated_driver
    out = driver.malloc_int()
    stream = driver.stream()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.ones(2).neg()
        driver.launch("set_one", (out,), stream)
    assert names(prof) == ["cudaLaunchKernel", "set_one"]
    (launch,) = by_name(prof, "cudaLaunchKernel")
    assert launch.time_range.start <= by_name(prof, "set_one")[0].time_range.end


# ------------------------------------------- the device, end to end (a driver is active)


@pytest.mark.cuda
@requires_cuda
def test_every_kernel_of_a_training_step_is_linked_to_its_operation(tmp_path):
    x = torch.randn(16, 8, device="cuda")
    w = torch.randn(8, 4, device="cuda", requires_grad=True)
    assert ProfilerActivity.CUDA in supported_activities()
    with profile() as prof:  # by default: CPU, and CUDA since a driver is active
        with record_function("step"):
            (x @ w).relu().sum().backward()
    events = prof.events()
    device = [e for e in events if e.device_type is DeviceType.CUDA]
    assert {"matmul_f32"} <= {e.name for e in device}
    for kernel in device:
        launch = kernel.launch
        assert launch.name in ("cudaLaunchKernel", "cudaMemcpyAsync")
        assert launch.cpu_parent is not None  # launched inside an operation or the block
        assert launch.time_range.start <= kernel.time_range.start <= kernel.time_range.end
    # Two products, x @ w and the gradient of w (x needs none): one matmul kernel each.
    products = by_name(prof, "aten::mm")
    assert [[k.name for k in mm.kernels] for mm in products] == [["matmul_f32"]] * 2
    assert products[1].cpu_parent.name == "MmBackward0"
    # One stream: its work runs in the order it was launched, one piece after the other.
    (stream,) = {e.thread for e in device}
    by_launch = sorted(device, key=lambda e: e.launch.time_range.end)
    assert by_launch == sorted(device, key=lambda e: e.time_range.start)
    for before, after in zip(by_launch, by_launch[1:]):
        assert before.time_range.end <= after.time_range.start

    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    labels = [e["args"]["labels"] for e in trace if e["name"] == "process_labels"]
    assert labels == ["CPU", "GPU 0"]
    tracks = [e["args"]["name"] for e in trace if e["name"] == "thread_name" and e["pid"] == 0]
    assert tracks == [f"stream {stream}"]
    starts = [e for e in trace if e["ph"] == "s"]
    assert len(starts) == len([e for e in trace if e["ph"] == "f"]) == len(device)


@pytest.mark.cuda
@requires_cuda
def test_the_trace_shows_the_host_running_ahead_of_a_long_kernel():
    from glasstorch._tier import kernels

    out = torch.zeros(1, dtype=torch.int64, device="cuda")
    torch.cuda.synchronize()
    with profile() as prof:
        with record_function("queue a long kernel"):
            # examples.cu's `spin`: one thread, millions of steps of a recurrence.
            kernels.cuda.launch_grid(str(EXAMPLES_CU), "spin", 1, 1, 20_000_000, out.data_ptr())
    (block,) = by_name(prof, "queue a long kernel")
    (spin,) = by_name(prof, "spin")
    assert spin.launch.cpu_parent is block
    assert block.time_range.end < spin.time_range.end  # the host was done long before
    assert out.item() != 0


@pytest.mark.cuda
@requires_cuda
def test_the_device_benchmark_reports_each_iteration():
    from glasstorch.bench import device as bench_device

    step = bench_device.build_training(torch, "mlp", batch=4, hidden=8, seed=0)
    rows = bench_device.measure_iterations(step, 3)
    assert [row["iteration"] for row in rows] == [1, 2, 3]
    # Later iterations need the sizes the first one did: served from the cache (section 6.2).
    assert [row["new_device_allocs"] for row in rows[1:]] == [0, 0]
    assert rows[0]["num_device_alloc"] == rows[-1]["num_device_alloc"]
    assert len({row["reserved_bytes"] for row in rows}) == 1
    document = {
        "workload": "tiny",
        "device": torch.cuda.get_device_name(),
        "driver": bench_device.driver_name(),
        "setup": {"new_device_allocs": 1, "reserved_bytes": 0, "allocated_bytes": 0},
        "iterations": rows,
        "profiled": bench_device.device_busy(step),
        "matmul": None,
    }
    text = bench_device.render(document)
    assert "Section 6.2" in text and "Section 6.1" in text
    assert (bench_device.SIMULATOR_NOTE in text) == (document["driver"] == "simulator")
    assert document["profiled"]["kernels"] > 0
