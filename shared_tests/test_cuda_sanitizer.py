"""The CUDA simulator's sanitizer: a student's usual CUDA bugs, each reported as
compute-sanitizer would report it (the check, the kernel, the thread, the block
and the line), and correct kernels left alone.

Each buggy kernel is written as a student would write it and launched through
``glasstorch.cuda.RawKernel``, whose kernels run with every check on by default.
The faulting ones run in this very process: it must survive them. The tests
need the simulator (``GLASSTORCH_CUDA=simulator``; ``make test`` runs them so).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cuda_support import driver_name, requires_cuda

import glasstorch as gt

pytestmark = [pytest.mark.cuda, requires_cuda]


@pytest.fixture(autouse=True)
def simulator_only():
    if driver_name() != "simulator":
        pytest.skip("the sanitizer is the simulator's (a GPU has compute-sanitizer)")
    gt.cuda.synchronize()  # no error of an earlier test is left over
    yield
    try:
        gt.cuda.synchronize()
    except gt.cuda.SanitizerError:
        pass


def launch_and_report(kernel, grid, block, args, **options):
    """Launch, synchronize, and return the error the synchronize raised."""
    kernel(grid, block, args, **options)
    with pytest.raises(gt.cuda.SanitizerError) as caught:
        gt.cuda.synchronize()
    return caught.value


# ------------------------------------------------------------------ memcheck

SCALE = r"""
extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x[i] = a * x[i];   // no `if (i < n)`: the last block runs past the end
}
"""


def test_an_out_of_bounds_global_access_names_thread_block_line_and_allocation():
    scale = gt.cuda.RawKernel(SCALE, "scale")
    x = gt.ones(1000, device="cuda")
    neighbour = gt.full((24,), 7.0, device="cuda")
    error = launch_and_report(scale, (4,), (256,), (x, 2.0, 1000))
    assert isinstance(error, gt.cuda.MemcheckError)
    message = str(error)
    assert message.startswith("memcheck: Invalid __global__ read of size 4 bytes at line 4")
    assert "scale.cu" in message and "in kernel 'scale'" in message
    # 1000 floats: thread 232 of block 3 is the first past the end
    assert "by thread (232,0,0) in block (3,0,0)" in message
    assert "0 bytes past the end of a 4000-byte allocation" in message
    assert (error.thread, error.block, error.line) == ((232, 0, 0), (3, 0, 0), 4)
    # the launch stopped at the first bad access: the neighbour is intact
    assert neighbour.cpu().tolist() == [7.0] * 24


def test_the_fixed_kernel_is_not_reported():
    fixed = SCALE.replace("    x[i] = a", "    if (i < n) x[i] = a")
    scale = gt.cuda.RawKernel(fixed, "scale")
    x = gt.ones(1000, device="cuda")
    scale((4,), (256,), (x, 2.0, 1000))
    gt.cuda.synchronize()
    assert x.cpu().tolist() == [2.0] * 1000


def test_an_out_of_bounds_shared_write():
    source = r"""
    extern "C" __global__ void stage(const float *x, float *out) {
        __shared__ float tile[128];
        tile[threadIdx.x] = x[threadIdx.x];   // 256 threads, 128 slots
        __syncthreads();
        out[threadIdx.x] = tile[threadIdx.x % 128];
    }
    """
    stage = gt.cuda.RawKernel(textwrap.dedent(source), "stage")
    x, out = gt.ones(256, device="cuda"), gt.empty(256, device="cuda")
    error = launch_and_report(stage, 1, 256, (x, out))
    assert isinstance(error, gt.cuda.MemcheckError)
    assert "Invalid __shared__ write of size 4 bytes at line 4" in str(error)
    assert error.thread == (128, 0, 0) and error.block == (0, 0, 0)
    assert "index 128 is out of bounds" in str(error)


def test_dynamic_shared_memory_past_the_launch_size():
    source = r"""
    extern "C" __global__ void reverse(float *x) {
        extern __shared__ float buf[];
        buf[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
    }
    """
    reverse = gt.cuda.RawKernel(textwrap.dedent(source), "reverse")
    x = gt.arange(64.0, device="cuda")
    reverse(1, 64, (x,), shared_mem=64 * 4)
    gt.cuda.synchronize()
    assert x.cpu().tolist() == list(np.arange(64.0)[::-1])
    error = launch_and_report(reverse, 1, 64, (x,), shared_mem=32 * 4)  # half the size needed
    assert isinstance(error, gt.cuda.MemcheckError)
    assert "Invalid __shared__ write of size 4 bytes at line 4" in str(error)
    assert error.thread == (32, 0, 0)
    assert "0 bytes past the end of the 128 bytes of dynamic shared memory" in str(error)


# ------------------------------------------------------------------ racecheck


def test_a_missing_syncthreads_is_a_shared_memory_hazard():
    source = r"""
    extern "C" __global__ void rotate(const float *x, float *out) {
        __shared__ float tile[64];
        tile[threadIdx.x] = x[threadIdx.x];
        // missing: __syncthreads();
        out[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
    }
    """
    rotate = gt.cuda.RawKernel(textwrap.dedent(source), "rotate")
    x, out = gt.arange(64.0, device="cuda"), gt.empty(64, device="cuda")
    error = launch_and_report(rotate, 1, 64, (x, out))
    assert isinstance(error, gt.cuda.RacecheckError)
    message = str(error)
    assert message.startswith("racecheck: ")
    assert "hazard on __shared__ memory" in message and "in kernel 'rotate'" in message
    assert "'tile'" in message and "no __syncthreads() between them" in message
    assert error.line in (4, 6)


def test_a_tree_reduction_without_syncthreads_in_its_loop_is_a_hazard():
    # The commonest barrier bug: each step reads what another thread writes in
    # the same step. Thread 0 runs its whole loop first (reading s[64], s[32],
    # ...); thread 64 then writes s[64], which thread 0 has read.
    source = r"""
    extern "C" __global__ void block_sum(const float *x, float *out, int n) {
        __shared__ float s[256];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (t < stride) s[t] += s[t + stride];
            // missing: __syncthreads();
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }
    """
    block_sum = gt.cuda.RawKernel(textwrap.dedent(source), "block_sum")
    x, out = gt.ones(1024, device="cuda"), gt.zeros(4, device="cuda")
    error = launch_and_report(block_sum, 4, 256, (x, out, 1024))
    assert isinstance(error, gt.cuda.RacecheckError)
    message = str(error)
    assert "hazard on __shared__ memory" in message and "in kernel 'block_sum'" in message
    assert "'s'" in message and "no __syncthreads() between them" in message
    assert error.line == 8 and error.block == (0, 0, 0)


def test_a_non_atomic_counter_is_a_race():
    source = r"""
    extern "C" __global__ void count(int *counter) {
        *counter = *counter + 1;   // read, add, write: not atomic
    }
    """
    count = gt.cuda.RawKernel(textwrap.dedent(source), "count")
    counter = gt.zeros(1, dtype=gt.int32, device="cuda")
    error = launch_and_report(count, 64, 256, (counter,))  # 16,384 threads
    assert isinstance(error, gt.cuda.RacecheckError)
    assert "__global__" in str(error) and "by thread (1,0,0) in block (0,0,0)" in str(error)


def test_atomics_are_no_race():
    source = r"""
    extern "C" __global__ void count(int *counter) { atomicAdd(counter, 1); }
    """
    count = gt.cuda.RawKernel(textwrap.dedent(source), "count")
    counter = gt.zeros(1, dtype=gt.int32, device="cuda")
    count(64, 256, (counter,))
    gt.cuda.synchronize()
    assert counter.item() == 64 * 256


# ------------------------------------------------------------------ synccheck


def test_a_barrier_in_divergent_code():
    source = r"""
    extern "C" __global__ void halves(float *x) {
        __shared__ float tile[64];
        tile[threadIdx.x] = x[threadIdx.x];
        if (threadIdx.x < 32) {
            __syncthreads();   // only half the block reaches this barrier
            x[threadIdx.x] = tile[threadIdx.x + 32];
        }
    }
    """
    halves = gt.cuda.RawKernel(textwrap.dedent(source), "halves")
    x = gt.ones(64, device="cuda")
    error = launch_and_report(halves, 1, 64, (x,))
    assert isinstance(error, gt.cuda.SynccheckError)
    assert "divergent __syncthreads()" in str(error) and error.line == 6


def test_a_shuffle_mask_naming_lanes_that_do_not_arrive():
    source = r"""
    extern "C" __global__ void lower_half(float *x) {
        float v = x[threadIdx.x];
        if (threadIdx.x < 16)
            v += __shfl_down_sync(0xffffffff, v, 8);   // the mask names all 32 lanes
        x[threadIdx.x] = v;
    }
    """
    lower_half = gt.cuda.RawKernel(textwrap.dedent(source), "lower_half")
    x = gt.ones(32, device="cuda")
    error = launch_and_report(lower_half, 1, 32, (x,))
    assert isinstance(error, gt.cuda.SynccheckError)
    assert error.line == 5 and "0xffffffff" in str(error)


def test_a_valid_partial_mask_shuffle_then_syncthreads_is_not_reported():
    source = r"""
    extern "C" __global__ void partial(float *x) {
        float v = x[threadIdx.x];
        if (threadIdx.x % 32 < 16)
            v += __shfl_down_sync(0x0000ffffu, v, 8, 16);   // lanes 0..15 only
        __syncthreads();
        x[threadIdx.x] = v;
    }
    """
    partial = gt.cuda.RawKernel(textwrap.dedent(source), "partial")
    values = np.arange(64, dtype=np.float32)
    x = gt.tensor(values, device="cuda")
    partial(1, 64, (x,))
    gt.cuda.synchronize()
    expected = values.copy()
    for lane in range(64):
        if lane % 32 < 8:
            expected[lane] += values[lane + 8]
        elif lane % 32 < 16:
            expected[lane] += values[lane]  # past the 16-lane segment: its own value
    assert x.cpu().numpy().tolist() == expected.tolist()


# ------------------------------------------------------------------ initcheck


def test_reading_shared_memory_before_anyone_wrote_it():
    source = r"""
    extern "C" __global__ void block_sum(const float *x, float *sums) {
        __shared__ float total;
        // missing: if (threadIdx.x == 0) total = 0; __syncthreads();
        atomicAdd(&total, x[blockIdx.x * blockDim.x + threadIdx.x]);
        __syncthreads();
        if (threadIdx.x == 0) sums[blockIdx.x] = total;
    }
    """
    block_sum = gt.cuda.RawKernel(textwrap.dedent(source), "block_sum")
    x, sums = gt.ones(128, device="cuda"), gt.empty(2, device="cuda")
    error = launch_and_report(block_sum, 2, 64, (x, sums))
    assert isinstance(error, gt.cuda.InitcheckError)
    assert "Uninitialized __shared__ memory" in str(error) and "'total'" in str(error)
    assert error.thread == (0, 0, 0) and error.block == (0, 0, 0)


def test_shared_memory_starts_undefined_in_every_block_even_without_checks():
    source = r"""
    extern "C" __global__ void leak(float *out) {
        __shared__ float slot;
        if (blockIdx.x == 0) slot = 42.0f;   // block 1 must not see block 0's value
        out[blockIdx.x] = slot;
    }
    """
    leak = gt.cuda.RawKernel(textwrap.dedent(source), "leak", sim_check="off")
    out = gt.zeros(2, device="cuda")
    leak(2, 1, (out,))
    gt.cuda.synchronize()
    first, second = out.cpu().tolist()
    assert first == 42.0 and np.isnan(second)  # the poison pattern: all bits set


def test_reading_global_memory_that_nothing_wrote():
    source = r"""
    extern "C" __global__ void copy(const float *x, float *out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = x[i];
    }
    """
    copy = gt.cuda.RawKernel(textwrap.dedent(source), "copy")
    x, out = gt.empty(100, device="cuda"), gt.empty(100, device="cuda")
    error = launch_and_report(copy, 1, 128, (x, out, 100))
    assert isinstance(error, gt.cuda.InitcheckError)
    assert "Uninitialized __global__ memory read of size 4 bytes at line 4" in str(error)
    copy(1, 128, (gt.ones(100, device="cuda"), out, 100))  # written memory: fine
    gt.cuda.synchronize()


# ------------------------------------------------------------------ limits


def test_cuda_launch_limits_are_checked_at_launch():
    source = 'extern "C" __global__ void noop(int *x) {}'
    noop = gt.cuda.RawKernel(source, "noop")
    x = gt.zeros(1, dtype=gt.int32, device="cuda")
    for grid, block in [(1, (1, 1, 128)), ((1, 70000), 1), (1, 2048), (1, (1025, 1))]:
        with pytest.raises(RuntimeError, match="invalid configuration argument"):
            noop(grid, block, (x,))
    with pytest.raises(RuntimeError, match="dynamic shared memory"):
        noop(1, 1, (x,), shared_mem=64 * 1024)


def test_a_static_shared_array_over_48_kib():
    source = r"""
    extern "C" __global__ void big(float *x) {
        __shared__ float tile[16384];   // 64 KiB
        tile[threadIdx.x] = 1.0f;
        x[threadIdx.x] = tile[threadIdx.x];
    }
    """
    big = gt.cuda.RawKernel(textwrap.dedent(source), "big")
    big(1, 32, (gt.zeros(32, device="cuda"),))
    with pytest.raises(RuntimeError, match="too many resources requested for launch"):
        gt.cuda.synchronize()


# ------------------------------------------------------------------ faults


@pytest.mark.parametrize("sim_check", ["all", "off"])
def test_an_integer_division_by_zero_is_an_exception(sim_check):
    source = r"""
    extern "C" __global__ void ratio(int *x, int d) {
        x[threadIdx.x] = x[threadIdx.x] / d;
    }
    """
    ratio = gt.cuda.RawKernel(textwrap.dedent(source), "ratio", sim_check=sim_check)
    x = gt.ones(4, dtype=gt.int32, device="cuda")
    error = launch_and_report(ratio, 1, 4, (x, 0))
    assert isinstance(error, gt.cuda.KernelFault)
    assert "division by zero" in str(error) and error.thread == (0, 0, 0)
    if sim_check == "all":
        assert error.line == 3


def test_a_wild_pointer_and_a_stack_overflow_do_not_kill_the_process():
    source = r"""
    __device__ int depth(int n) { volatile char pad[4096]; pad[0] = n; return n ? depth(n - 1) + pad[0] : 0; }
    extern "C" __global__ void wild(int *x, long long offset) { x[offset] = 1; }
    extern "C" __global__ void deep(int *x, int n) { x[0] = depth(n); }
    """
    module = gt.cuda.RawModule(code=textwrap.dedent(source), sim_check="off")
    x = gt.zeros(1, dtype=gt.int32, device="cuda")
    error = launch_and_report(module.get_function("wild"), 1, 1, (x, -(1 << 40)))
    assert isinstance(error, gt.cuda.KernelFault) and "SIGSEGV" in str(error)
    error = launch_and_report(module.get_function("deep"), 1, 1, (x, 1000))
    assert isinstance(error, gt.cuda.KernelFault) and "stack overflow" in str(error)
    module.get_function("deep")(1, 1, (x, 3))  # the simulator still works
    gt.cuda.synchronize()
    assert x.item() == 3 + 2 + 1


def test_ctrl_c_interrupts_a_spinning_kernel(tmp_path):
    program = tmp_path / "spin.py"
    program.write_text(
        textwrap.dedent(
            r"""
            import sys, glasstorch as gt
            spin = gt.cuda.RawKernel(r'''
            extern "C" __global__ void spin(volatile int *flag) { while (*flag == 0) {} }
            ''', "spin", sim_check=sys.argv[1])
            flag = gt.zeros(1, dtype=gt.int32, device="cuda")
            spin(1, 1, (flag,))
            print("spinning", flush=True)
            try:
                gt.cuda.synchronize()
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            ones = gt.ones(3, device="cuda") * 2  # the device works after it
            print(ones.cpu().tolist(), flush=True)
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    for check in ("all", "off"):
        child = subprocess.Popen(
            [sys.executable, str(program), check], stdout=subprocess.PIPE, text=True, env=env
        )
        assert child.stdout.readline().strip() == "spinning"
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=60)
        assert output.split() == ["interrupted", "[2.0,", "2.0,", "2.0]"], output


# ------------------------------------------------------------------ correct kernels


def test_a_dynamic_shared_memory_reduction_is_not_reported():
    source = r"""
    extern "C" __global__ void block_sums(const double *x, double *sums, long long n) {
        extern __shared__ double partial[];
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        partial[threadIdx.x] = i < n ? x[i] : 0.0;
        __syncthreads();
        for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
    }
    """
    block_sums = gt.cuda.RawKernel(textwrap.dedent(source), "block_sums")
    values = np.random.default_rng(0).standard_normal(1000)
    x = gt.tensor(values, device="cuda")
    sums = gt.zeros(4, dtype=gt.float64, device="cuda")
    block_sums(4, 256, (x, sums, 1000), shared_mem=256 * 8)
    gt.cuda.synchronize()
    expected = [values[k * 256 : (k + 1) * 256].sum() for k in range(4)]
    np.testing.assert_allclose(sums.cpu().numpy(), expected, rtol=1e-12)


def test_the_checks_can_be_chosen_per_module():
    racy = r"""
    extern "C" __global__ void count(int *counter) { *counter = *counter + 1; }
    """
    quiet = gt.cuda.RawKernel(textwrap.dedent(racy), "count", sim_check="memcheck,initcheck")
    counter = gt.zeros(1, dtype=gt.int32, device="cuda")
    quiet(1, 64, (counter,))
    gt.cuda.synchronize()  # racecheck is off: the simulator's sequential order counts 64
    assert counter.item() == 64
    with pytest.raises(ValueError, match="unknown simulator check 'memchek'"):
        gt.cuda.RawKernel(textwrap.dedent(racy), "count", sim_check="memchek")
