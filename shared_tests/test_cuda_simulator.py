"""The CUDA simulator: CUDA's execution model on the CPU, and the kernels of fast/cuda.

Each kernel here is CUDA source that also compiles with nvcc (checked below
when nvcc is on PATH). The simulator needs a C and a C++ compiler; the tests
run on both tiers because they do not depend on the tier.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from cuda_support import EXAMPLES_CU, SimulatorDevice, example_binary_ops

from glasstorch._gpu.allocator import CachingAllocator, DeviceOutOfMemory, OutOfMemoryError
from glasstorch._gpu.sanitizer import SynccheckError
from glasstorch.fast.cuda.simulator.simulator import Event, SimulatorError, Stream, get_simulator
from glasstorch.fast.cuda.sources import CUDA_DIR, kernel_signatures

#: The op codes of examples.cu's binary_f32, bound by name.
BINARY_OPS = example_binary_ops()

pytestmark = pytest.mark.cuda

if shutil.which("c++") is None or shutil.which("cc") is None:
    pytest.skip(
        "the CUDA simulator needs a C and a C++ compiler (cc, c++)", allow_module_level=True
    )

#: Small kernels that exercise one CUDA rule each.
TEST_KERNELS = r"""
// Barrier: each thread writes its slot, waits, then reads its right neighbour's.
extern "C" __global__ void rotate_left(const int *x, int *out) {
    __shared__ int tile[128];
    unsigned int t = threadIdx.x;
    tile[t] = x[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = tile[(t + 1) % blockDim.x];
}

// Shared memory belongs to a block: every thread of block b sees b's counter.
extern "C" __global__ void block_census(int *block_of, int *count) {
    __shared__ int owner;
    __shared__ int members;
    if (threadIdx.x == 0) {
        owner = blockIdx.x;
        members = 0;
    }
    __syncthreads();
    atomicAdd(&members, 1);
    __syncthreads();
    block_of[blockIdx.x * blockDim.x + threadIdx.x] = owner;
    if (threadIdx.x == 0) count[blockIdx.x] = members;
}

extern "C" __global__ void count_ones(int *i32, unsigned long long *u64, float *f32, double *f64) {
    atomicAdd(i32, 1);
    atomicAdd(u64, 1ull);
    atomicAdd(f32, 1.0f);
    atomicAdd(f64, 1.0);
}

extern "C" __global__ void extremes(const int *x, int *maximum, int *minimum, int *flag,
                                    int *winners) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicMax(maximum, x[i]);
    atomicMin(minimum, x[i]);
    if (atomicCAS(flag, 0, i + 1) == 0) atomicAdd(winners, 1);
    atomicExch(minimum + 1, 7);
}

extern "C" __global__ void warp_ops(const float *x, float *total, float *scan, float *broadcast,
                                    unsigned int *ballot) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x % warpSize;
    float v = x[i];
    float s = v;
    for (int m = 16; m > 0; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
    total[i] = s;
    float p = v;
    for (unsigned int d = 1; d < 32; d *= 2) {
        float other = __shfl_up_sync(0xffffffffu, p, d);
        if (lane >= d) p += other;
    }
    scan[i] = p;
    broadcast[i] = __shfl_sync(0xffffffffu, v, 5);
    unsigned int votes = __ballot_sync(0xffffffffu, v > 0.0f);
    if (lane == 0) ballot[i / 32] = votes;
}

// Spins until the host (through another stream) sets *flag, then writes value.
// A guard ends the spin after 2^34 reads (-1 in *out), so a bug fails, not hangs.
extern "C" __global__ void wait_for_flag(const volatile int *flag, int *out, int value) {
    for (long long spins = 0; *flag == 0; spins++) {
        if (spins == (1LL << 34)) {
            *out = -1;
            return;
        }
    }
    *out = value;
}

extern "C" __global__ void add_one(const int *x, int *out) { *out = *x + 1; }

// Thread 0 waits for the block, the others for their warp: neither barrier completes.
extern "C" __global__ void deadlock(int *out) {
    if (threadIdx.x == 0) __syncthreads();
    else __syncwarp();
    *out = 1;
}
"""


@pytest.fixture(scope="module")
def sim():
    return get_simulator()


@pytest.fixture(scope="module")
def kernels(sim):
    return sim.load_source(TEST_KERNELS, filename="test_kernels.cu")


@pytest.fixture
def device(sim):
    """Upload/download helpers whose allocations are freed after the test."""
    pointers = []

    class Helpers:
        def upload(self, array: np.ndarray) -> int:
            ptr = self.empty(array.nbytes)
            sim.copy_from_host(ptr, np.ascontiguousarray(array))
            # The default stream does not order work on other streams (it acts as
            # CUDA's per-thread default stream): wait, so every stream sees the data.
            sim.default_stream.synchronize()
            return ptr

        def empty(self, nbytes: int) -> int:
            ptr = sim.malloc(nbytes)
            pointers.append(ptr)
            return ptr

        def zeros(self, count: int, dtype) -> int:
            return self.upload(np.zeros(count, dtype=dtype))

        def download(self, ptr: int, count: int, dtype, stream=None) -> np.ndarray:
            nbytes = count * np.dtype(dtype).itemsize
            return np.frombuffer(sim.copy_to_host(ptr, nbytes, stream), dtype=dtype)

    yield Helpers()
    sim.synchronize()
    for ptr in pointers:
        sim.free(ptr)


# ----------------------------------------------------------------- execution model


def test_syncthreads_is_a_barrier(kernels, device):
    x = np.arange(2 * 128, dtype=np.int32)
    out = device.zeros(x.size, np.int32)
    kernels.get_function("rotate_left")(2, 128, (device.upload(x), out))
    expected = np.concatenate([np.roll(x[:128], -1), np.roll(x[128:], -1)])
    np.testing.assert_array_equal(device.download(out, x.size, np.int32), expected)


def test_shared_memory_is_per_block(kernels, device):
    blocks, threads = 6, 64
    block_of = device.zeros(blocks * threads, np.int32)
    count = device.zeros(blocks, np.int32)
    kernels.get_function("block_census")(blocks, threads, (block_of, count))
    expected = np.repeat(np.arange(blocks, dtype=np.int32), threads)
    np.testing.assert_array_equal(device.download(block_of, blocks * threads, np.int32), expected)
    np.testing.assert_array_equal(device.download(count, blocks, np.int32), [threads] * blocks)


def test_atomic_add_under_contention(kernels, device):
    i32, u64 = device.zeros(1, np.int32), device.zeros(1, np.uint64)
    f32, f64 = device.zeros(1, np.float32), device.zeros(1, np.float64)
    kernels.get_function("count_ones")(64, 256, (i32, u64, f32, f64))
    assert device.download(i32, 1, np.int32)[0] == 64 * 256
    assert device.download(u64, 1, np.uint64)[0] == 64 * 256
    assert device.download(f32, 1, np.float32)[0] == 64 * 256
    assert device.download(f64, 1, np.float64)[0] == 64 * 256


def test_atomic_max_min_cas_exch(kernels, device):
    x = np.random.default_rng(0).integers(-1000, 1000, size=4 * 64).astype(np.int32)
    maximum = device.upload(np.array([-(2**31)], dtype=np.int32))
    minimum = device.upload(np.array([2**31 - 1, 0], dtype=np.int32))
    flag, winners = device.zeros(1, np.int32), device.zeros(1, np.int32)
    kernels.get_function("extremes")(4, 64, (device.upload(x), maximum, minimum, flag, winners))
    assert device.download(maximum, 1, np.int32)[0] == x.max()
    np.testing.assert_array_equal(device.download(minimum, 2, np.int32), [x.min(), 7])
    assert device.download(winners, 1, np.int32)[0] == 1
    assert 1 <= device.download(flag, 1, np.int32)[0] <= x.size


def test_warp_shuffles_and_ballot(kernels, device):
    x = np.random.default_rng(1).integers(-3, 4, size=2 * 64).astype(np.float32)
    n = x.size
    total, scan, broadcast = (device.zeros(n, np.float32) for _ in range(3))
    ballot = device.zeros(n // 32, np.uint32)
    kernels.get_function("warp_ops")(2, 64, (device.upload(x), total, scan, broadcast, ballot))
    warps = x.reshape(-1, 32)
    np.testing.assert_array_equal(
        device.download(total, n, np.float32), np.repeat(warps.sum(axis=1), 32)
    )
    np.testing.assert_array_equal(
        device.download(scan, n, np.float32), np.cumsum(warps, axis=1).ravel()
    )
    np.testing.assert_array_equal(
        device.download(broadcast, n, np.float32), np.repeat(warps[:, 5], 32)
    )
    bits = [sum(1 << lane for lane in range(32) if warp[lane] > 0) for warp in warps]
    np.testing.assert_array_equal(device.download(ballot, n // 32, np.uint32), bits)


def test_a_deadlocked_block_is_reported(kernels, device):
    out = device.zeros(1, np.int32)
    kernels.get_function("deadlock")(1, 32, (out,))
    with pytest.raises(SynccheckError, match="deadlock"):
        get_simulator().synchronize()


def test_invalid_launch_configuration(kernels, device):
    out = device.zeros(1, np.int32)
    with pytest.raises(SimulatorError, match="invalid configuration argument"):
        kernels.get_function("add_one")(1, 2048, (out, out))
    with pytest.raises(SimulatorError, match="invalid configuration argument"):
        kernels.get_function("add_one")(0, 32, (out, out))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        kernels.get_function("add_one")(1, 1, (out,))


# ----------------------------------------------------------------- streams and events


def test_the_host_runs_ahead_of_a_stream(sim, kernels, device):
    stream, helper, bystander = Stream(sim), Stream(sim), Stream(sim)
    flag, out = device.zeros(1, np.int32), device.zeros(1, np.int32)
    kernels.get_function("wait_for_flag")(1, 1, (flag, out, 42), stream=stream)
    # An event dropped while its record is still queued lives on until it is done.
    bystander.wait_event(stream.record())
    done = stream.record()
    # The launch returned while the kernel spins: nothing has completed.
    assert not done.query()
    assert not stream.query()
    assert not bystander.query()
    sim.copy_from_host(flag, np.array([1], dtype=np.int32), stream=helper)
    done.synchronize()
    assert done.query() and stream.query()
    assert device.download(out, 1, np.int32, stream)[0] == 42
    bystander.synchronize()
    for each in (stream, helper, bystander):
        each.close()


def test_stream_wait_event_orders_two_streams(sim, kernels, device):
    first, second, helper = Stream(sim), Stream(sim), Stream(sim)
    flag, x, y = (device.zeros(1, np.int32) for _ in range(3))
    kernels.get_function("wait_for_flag")(1, 1, (flag, x, 1), stream=first)
    written = first.record()
    second.wait_event(written)
    kernels.get_function("add_one")(1, 1, (x, y), stream=second)
    finished = second.record()
    assert not finished.query()  # second waits for first, which waits for the flag
    sim.copy_from_host(flag, np.array([1], dtype=np.int32), stream=helper)
    second.synchronize()
    assert written.query() and finished.query()
    assert device.download(y, 1, np.int32)[0] == 2  # add_one saw first's write
    assert written.elapsed_time(finished) >= 0.0
    for stream in (first, second, helper):
        stream.close()


def test_an_event_never_recorded_is_complete(sim):
    assert Event(sim).query()


# ----------------------------------------------------------------- memory


def test_arena_out_of_memory(sim):
    free, total = sim.mem_get_info()
    with pytest.raises(DeviceOutOfMemory, match="out of memory"):
        sim.malloc(total + 1)
    assert sim.mem_get_info() == (free, total)


def test_caching_allocator_over_the_simulator(sim, device):
    dev = SimulatorDevice(sim)
    alloc = CachingAllocator(dev)
    block = alloc.malloc(1000 * 4)
    fill = sim.load(EXAMPLES_CU).get_function("fill_f32")
    fill(4, 64, (block.ptr, 2.5, 1000))
    np.testing.assert_array_equal(device.download(block.ptr, 1000, np.float32), [2.5] * 1000)
    alloc.free(block)
    assert alloc.malloc(500).ptr == block.ptr  # cached and reused, no new arena memory
    assert alloc.memory_stats()["num_device_alloc"] == 1
    with pytest.raises(OutOfMemoryError, match="CUDA out of memory"):
        alloc.malloc(dev.total_memory() + 1)
    alloc.empty_cache()


# ----------------------------------------------------------------- the kernels of fast/cuda


@pytest.mark.parametrize("op", sorted(BINARY_OPS))
def test_binary_kernel_matches_numpy(sim, device, op):
    rng = np.random.default_rng(2)
    n = 1000
    a = rng.uniform(0.5, 2.0, n).astype(np.float32)
    b = rng.uniform(0.5, 2.0, n).astype(np.float32)
    a[3], b[7] = np.nan, np.nan
    out = device.empty(4 * n)
    sim.load(EXAMPLES_CU).get_function("binary_f32")(
        3, 128, (BINARY_OPS[op], device.upload(a), device.upload(b), out, n)
    )
    expected = {
        "add": a + b,
        "sub": a - b,
        "mul": a * b,
        "div": a / b,
        "maximum": np.maximum(a, b),
        "minimum": np.minimum(a, b),
        "pow": np.power(a, b),
    }[op]
    np.testing.assert_allclose(device.download(out, n, np.float32), expected, rtol=1e-6)


def test_fill_kernel_covers_any_size_with_a_small_grid(sim, device):
    n = 5000  # more elements than threads: the grid-stride loop goes round
    out = device.zeros(n + 1, np.float32)
    sim.load(EXAMPLES_CU).get_function("fill_f32")(2, 64, (out, -1.25, n))
    result = device.download(out, n + 1, np.float32)
    assert (result[:n] == -1.25).all() and result[n] == 0.0


@pytest.mark.parametrize("n, blocks, threads", [(1, 1, 32), (1000, 3, 64), (20000, 8, 256)])
def test_sum_kernel(sim, device, n, blocks, threads):
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = device.zeros(1, np.float32)
    sim.load(EXAMPLES_CU).get_function("sum_f32")(blocks, threads, (device.upload(x), out, n))
    np.testing.assert_allclose(
        device.download(out, 1, np.float32)[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-4
    )


FLOAT_PROBE = r"""
extern "C" __global__ void multiply_add(const float *a, const float *b, const float *c,
                                        float *out) {
    out[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x] + c[threadIdx.x];
}
"""


def _multiply_add_on_the_simulator(sim, device, options=()):
    """(1+2^-12)^2 - (1+2^-11), which only an FMA gets right, and 1e-20 * 1e-20, a denormal."""
    a = np.array([1 + 2**-12, 1e-20], np.float32)
    c = np.array([-(1 + 2**-11), 0.0], np.float32)
    out = device.zeros(2, np.float32)
    kernel = sim.load_source(FLOAT_PROBE, "float_probe.cu", options=options).get_function(
        "multiply_add"
    )
    kernel(1, 2, (device.upload(a), device.upload(a), device.upload(c), out))
    return device.download(out, 2, np.float32).tolist()


def test_the_float_arithmetic_follows_the_gpu_unless_told_to_follow_the_host(
    sim, device, monkeypatch
):
    assert _multiply_add_on_the_simulator(sim, device) == [2.0**-24, 0.0]
    assert _multiply_add_on_the_simulator(sim, device, ("--fmad=false",)) == [0.0, 0.0]
    monkeypatch.setenv("GLASSTORCH_SIM_FLOAT", "host")
    exact = float(np.float32(1e-20) * np.float32(1e-20))  # a float32 denormal, kept
    assert exact != 0.0
    assert _multiply_add_on_the_simulator(sim, device) == [0.0, exact]


def test_the_float_modes_of_two_modules_do_not_leak_into_each_other(sim, device, monkeypatch):
    # Both run on the default stream's one worker thread, whose MXCSR each
    # launch sets for its own module.
    monkeypatch.setenv("GLASSTORCH_SIM_FLOAT", "host")
    host = _multiply_add_on_the_simulator(sim, device)
    monkeypatch.setenv("GLASSTORCH_SIM_FLOAT", "gpu")
    assert _multiply_add_on_the_simulator(sim, device)[1] == 0.0
    monkeypatch.setenv("GLASSTORCH_SIM_FLOAT", "host")
    assert _multiply_add_on_the_simulator(sim, device) == host


def test_an_unknown_float_mode_says_which_there_are(sim, monkeypatch):
    monkeypatch.setenv("GLASSTORCH_SIM_FLOAT", "fast")
    with pytest.raises(SimulatorError, match="'gpu'.*'host'"):
        sim.load_source(FLOAT_PROBE, "float_probe.cu")


def test_a_compile_error_names_the_cu_file(sim):
    with pytest.raises(SimulatorError, match=r"broken\.cu:1"):
        sim.load_source('extern "C" __global__ void broken(int *x) { x = ; }', "broken.cu")
    with pytest.raises(SimulatorError, match="no `extern"):
        sim.load_source("__device__ int helper(int x) { return x; }", "helpers.cu")


def test_kernel_signatures_see_kernels_that_macros_instantiate():
    source = (CUDA_DIR / "elementwise.cu").read_text()
    kernels = kernel_signatures(source)
    for suffix, ctype in [
        ("b8", "bool"),
        ("u8", "unsigned char"),
        ("i32", "int"),
        ("i64", "long long"),
        ("f32", "float"),
        ("f64", "double"),
    ]:
        assert kernels[f"fill_{suffix}"][0] == (f"{ctype} *", "out")
        assert f"copy_f32_{suffix}" in kernels and f"unary_bool_{suffix}" in kernels
    assert kernels["binary_f64"][-3:] == [
        ("const long long *", "meta"),
        ("int", "ndim"),
        ("long long", "n"),
    ]


def test_kernel_signatures_are_read_from_the_source():
    source = EXAMPLES_CU.read_text()
    assert kernel_signatures(source)["binary_f32"] == [
        ("int", "op"),
        ("const float *", "a"),
        ("const float *", "b"),
        ("float *", "out"),
        ("long long", "n"),
    ]


# ----------------------------------------------------------------- the same sources on nvcc


def test_every_cu_file_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH: the .cu files were not compiled for a real GPU")
    test_source = tmp_path / "test_kernels.cu"
    test_source.write_text(TEST_KERNELS)
    sources = sorted(CUDA_DIR.glob("*.cu")) + [EXAMPLES_CU, test_source]
    assert len(sources) >= 3
    # --ptx stops after the CUDA front end and code generator: every language
    # error shows, at less than half the time of a full -c build.
    command = [nvcc, "-arch=sm_90", "--ptx", f"-I{CUDA_DIR}", "-odir", str(tmp_path)]
    command += [str(s) for s in sources]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert all((tmp_path / f"{s.stem}.ptx").exists() for s in sources)


def test_every_cu_file_compiles_with_nvrtc_as_the_cupy_driver_does(tmp_path):
    """NVRTC, not nvcc, compiles the kernels on a GPU (through CuPy), and it is
    stricter: it refused ``__int128`` in creation.cu until the driver passed
    ``--device-int128``. The options are the driver's own, plus the two CuPy adds
    (an architecture and ``-ftz=true``). NVRTC needs no GPU."""
    from cuda_support import compile_with_nvrtc, find_nvrtc

    from glasstorch.fast.cuda.cupy_driver import NVRTC_OPTIONS

    library = find_nvrtc()
    if library is None:
        pytest.skip("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12 (.ci/run does)")
    test_source = tmp_path / "test_kernels.cu"
    test_source.write_text(TEST_KERNELS)
    sources = sorted(CUDA_DIR.glob("*.cu")) + [EXAMPLES_CU, test_source]
    options = [f"-I{CUDA_DIR}", *NVRTC_OPTIONS, "-arch=compute_90", "-ftz=true"]
    failures = {}
    for source in sources:
        log = compile_with_nvrtc(library, source.read_text(), source.name, options)
        if log is not None:
            failures[source.name] = log
    assert not failures, "\n\n".join(f"{name}:\n{log}" for name, log in failures.items())
