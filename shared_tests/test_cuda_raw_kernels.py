"""Your own kernels: ``glasstorch.cuda.RawKernel`` and ``RawModule``, CuPy's API.

They run on the active CUDA driver (the simulator in ``make test``). The
sources here also compile with NVRTC, as they would on a GPU, where NVRTC is
installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_support import requires_cuda

import glasstorch as gt

pytestmark = [pytest.mark.cuda, requires_cuda]

ADD = r"""
extern "C" __global__ void add(const float *x, const float *y, float *out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""

# A block-wide reduction through shared memory: each block sums its 128
# numbers with a tree of __syncthreads-separated steps.
BLOCK_SUMS = r"""
extern "C" __global__ void block_sums(const double *x, double *sums, long long n) {
    __shared__ double tile[128];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) tile[threadIdx.x] += tile[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = tile[0];
}

extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""


# The same reduction with the block's size chosen at launch: extern __shared__.
DYNAMIC_SUMS = r"""
extern "C" __global__ void dynamic_sums(const double *x, double *sums, long long n) {
    extern __shared__ double tile[];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) tile[threadIdx.x] += tile[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = tile[0];
}
"""


def test_a_raw_kernel_adds_two_vectors():
    add = gt.cuda.RawKernel(ADD, "add")
    x = gt.arange(1000.0, device="cuda")
    out = gt.empty(1000, device="cuda")
    add((4,), (256,), (x, x, out, 1000))  # 1024 threads for 1000 numbers: the guard
    assert out.cpu().tolist() == [2.0 * i for i in range(1000)]


def test_a_raw_module_holds_several_kernels_and_uses_shared_memory():
    module = gt.cuda.RawModule(code=BLOCK_SUMS)
    values = np.random.default_rng(0).standard_normal(300)
    x = gt.tensor(values, device="cuda")
    sums = gt.zeros(3, dtype=gt.float64, device="cuda")
    module.get_function("block_sums")(3, 128, (x, sums, 300))
    expected = [values[k * 128 : (k + 1) * 128].sum() for k in range(3)]
    np.testing.assert_allclose(sums.cpu().numpy(), expected, rtol=1e-12)


def test_a_view_passes_the_address_of_its_first_element_and_numbers_convert():
    scale = gt.cuda.RawModule(code=BLOCK_SUMS).get_function("scale")
    x = gt.ones(10, device="cuda")
    scale(1, 32, (x[2:], np.float32(3.0), 8))  # a NumPy number for a float parameter
    scale(1, 32, (x[:2], 0.5, 2))  # a Python float
    assert x.cpu().tolist() == [0.5, 0.5] + [3.0] * 8


def test_a_launch_on_a_stream_of_ones_own():
    add = gt.cuda.RawKernel(ADD, "add")
    x = gt.ones(64, device="cuda")
    out = gt.empty(64, device="cuda")
    side = gt.cuda.Stream()
    side.wait_stream(gt.cuda.current_stream())
    add(1, 64, (x, x, out, 64), stream=side)
    side.synchronize()
    assert out.cpu().tolist() == [2.0] * 64


MULTIPLY_ADD = r"""
extern "C" __global__ void multiply_add(const float *a, const float *b, const float *c,
                                        float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i] + c[i];
}
"""

# (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: rounded to float32 before the add, the
# 2^-24 is lost and a*b + c is 0; fused into one rounding, it survives.
_FMA_A = 1 + 2**-12
_FMA_C = -(1 + 2**-11)


def _multiply_add(a, b, c, options=()):
    kernel = gt.cuda.RawKernel(MULTIPLY_ADD, "multiply_add", options=options)
    a, b, c = (gt.tensor(v, dtype=gt.float32, device="cuda") for v in (a, b, c))
    out = gt.empty(a.numel(), device="cuda")
    kernel(1, 32, (a, b, c, out, a.numel()))
    return out.cpu().tolist()


def test_a_multiply_add_is_fused_into_one_rounding_as_nvrtc_compiles_it():
    # NVRTC contracts a*b + c into an FMA (--fmad=true is its default); the
    # simulator does too (GLASSTORCH_SIM_FLOAT=gpu, the default).
    assert _multiply_add([_FMA_A], [_FMA_A], [_FMA_C]) == [2.0**-24]


def test_fmad_false_keeps_the_product_and_the_sum_apart():
    assert _multiply_add([_FMA_A], [_FMA_A], [_FMA_C], options=("--fmad=false",)) == [0.0]


def test_float32_denormals_are_flushed_to_zero_as_cupys_ftz_build_does():
    # CuPy compiles every kernel with -ftz=true: a denormal result becomes 0
    # (1e-20 * 1e-20 = 1e-40 < float32's smallest normal, 1.2e-38), and a
    # denormal operand reads as 0.
    normal = np.finfo(np.float32).tiny
    result = _multiply_add([1e-20, 1e-40, normal, 1.0], [1e-20, 1.0, 1.0, 1.0], [0.0] * 4)
    assert result == [0.0, 0.0, float(normal), 1.0]


def test_errors_say_what_was_wrong():
    add = gt.cuda.RawKernel(ADD, "add")
    x = gt.ones(4, device="cuda")
    with pytest.raises(TypeError, match="argument 1 is a tensor on cpu"):
        add(1, 4, (x, gt.ones(4), x, 4))
    with pytest.raises(TypeError, match="4"):
        add(1, 4, (x, x, x))  # three arguments for four parameters
    with pytest.raises(TypeError, match="neither a CUDA tensor nor a number"):
        add(1, 4, (x, x, x, "4"))
    with pytest.raises(TypeError, match="torch.cuda.Stream"):
        add(1, 4, (x, x, x, 4), stream="hello")
    with pytest.raises(AttributeError, match="nosuch"):
        gt.cuda.RawModule(code=ADD).get_function("nosuch")
    with pytest.raises(TypeError, match="one of code= or path="):
        gt.cuda.RawModule()


def test_dynamic_shared_memory_sized_at_launch():
    module = gt.cuda.RawModule(code=DYNAMIC_SUMS)
    values = np.arange(300, dtype=np.float64)
    x = gt.tensor(values, device="cuda")
    sums = gt.zeros(3, dtype=gt.float64, device="cuda")
    module.get_function("dynamic_sums")(3, 128, (x, sums, 300), shared_mem=128 * 8)
    expected = [values[k * 128 : (k + 1) * 128].sum() for k in range(3)]
    np.testing.assert_allclose(sums.cpu().numpy(), expected, rtol=1e-12)


def test_the_sources_here_compile_with_nvrtc_as_on_a_gpu():
    from cuda_support import compile_with_nvrtc, find_nvrtc

    library = find_nvrtc()
    if library is None:
        pytest.skip("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12 (.ci/run does)")
    options = ["--std=c++17", "-arch=compute_90", "-ftz=true"]
    sources = [("add.cu", ADD), ("block_sums.cu", BLOCK_SUMS), ("multiply_add.cu", MULTIPLY_ADD)]
    sources.append(("dynamic_sums.cu", DYNAMIC_SUMS))
    from glasstorch.cuda import first_kernels  # the classroom's kernels, as a GPU compiles them

    sources += [
        ("saxpy.cu", first_kernels.saxpy_source()),
        ("block_sum.cu", first_kernels.block_sum_source()),
        ("tiled_matmul.cu", first_kernels.tiled_matmul_source()),
    ]
    for name, source in sources:
        assert compile_with_nvrtc(library, source, name, options) is None
