// examples.cu - the test kernels to read first: fill and a binary-op table over
// contiguous float32 arrays. (glasstorch's own elementwise kernels, for every
// dtype and any strides, are in elementwise.cu; these are the simulator's
// first examples and its tests' subjects.)
//
// One source for two compilers: NVRTC/nvcc for a GPU, and the host C++
// compiler with gt_cuda_sim.h for the CUDA simulator. Kernels are extern "C"
// so both find them by name.
//
// Every kernel uses a grid-stride loop: thread t of a grid of T threads handles
// elements t, t + T, t + 2T, ... so any grid size covers any n, and
// neighbouring threads touch neighbouring elements (coalesced accesses).

// The binary-op table: one code per operation, shared with the Python driver
// (shared_tests/cuda_support.py binds the codes by name). The op is the same for every thread,
// so the switch never diverges within a warp.
#define GT_BINARY_OPS(X) \
    X(0, add, a + b)     \
    X(1, sub, a - b)     \
    X(2, mul, a * b)     \
    X(3, div, a / b)     \
    X(4, maximum, (a != a || b != b) ? a + b : fmaxf(a, b)) /* NaN propagates */ \
    X(5, minimum, (a != a || b != b) ? a + b : fminf(a, b)) \
    X(6, pow, powf(a, b))

__device__ __forceinline__ float apply_binary(int op, float a, float b) {
    switch (op) {
#define GT_CASE(code, name, expression) \
    case code:                          \
        return expression;
        GT_BINARY_OPS(GT_CASE)
#undef GT_CASE
    }
    return 0.0f;  // unknown op code: the driver never sends one
}

// out[i] = value for i < n.
extern "C" __global__ void fill_f32(float *__restrict__ out, float value, long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = value;
}

// out[i] = a[i] (op) b[i] for i < n; op is a code of GT_BINARY_OPS.
extern "C" __global__ void binary_f32(int op, const float *__restrict__ a,
                                      const float *__restrict__ b, float *__restrict__ out,
                                      long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = apply_binary(op, __ldg(&a[i]), __ldg(&b[i]));
}

// The sum of a contiguous float32 array, in three stages.
//
// 1. Each thread adds up its elements (grid-stride loop) in a register.
// 2. The block adds its threads' partial sums as a tree in shared memory,
//    halving the number of active threads at each step, with __syncthreads()
//    between steps, until 32 partial sums are left.
// 3. The first warp adds those 32 with register shuffles (no shared memory,
//    no barrier), and lane 0 adds the block's sum to *out with atomicAdd.
//
// Launch with blockDim.x a power of two from 32 to SUM_MAX_THREADS, and *out
// set to zero beforehand. The order of the additions differs from a
// sequential sum, so float results differ in the last bits.

#define SUM_MAX_THREADS 256

// The sum of v over the 32 lanes of a warp, in lane 0.
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void sum_f32(const float *__restrict__ x, float *__restrict__ out,
                                   long long n) {
    __shared__ float partial[SUM_MAX_THREADS];
    unsigned int tid = threadIdx.x;

    float acc = 0.0f;
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n; i += stride)
        acc += x[i];
    partial[tid] = acc;
    __syncthreads();

    for (unsigned int active = blockDim.x / 2; active >= 32; active /= 2) {
        if (tid < active) partial[tid] += partial[tid + active];
        __syncthreads();
    }

    if (tid < 32) {
        float block_sum = warp_sum(partial[tid]);
        if (tid == 0) atomicAdd(out, block_sum);
    }
}

// A kernel that keeps the device busy for a while: each thread runs `iterations`
// steps of a small recurrence, and thread 0 stores the result so the loop cannot
// be optimized away. The tests queue it to watch the host run ahead of the
// device (an event recorded after it is not complete right after the launch).
extern "C" __global__ void spin(long long iterations, unsigned long long *out) {
    unsigned long long x = threadIdx.x + 1;
    for (long long i = 0; i < iterations; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = x;
}
