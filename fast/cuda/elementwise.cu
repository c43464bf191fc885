// elementwise.cu - fill and binary operations over contiguous float32 arrays.
//
// One source for two compilers: NVRTC/nvcc for a GPU, and the host C++
// compiler with gt_cuda_sim.h for the CUDA simulator. Kernels are extern "C"
// so both find them by name.
//
// Every kernel uses a grid-stride loop: thread t of a grid of T threads handles
// elements t, t + T, t + 2T, ... so any grid size covers any n, and
// neighbouring threads touch neighbouring elements (coalesced accesses).

// The binary-op table: one code per operation, shared with the Python driver
// (glasstorch.fast.cuda_sim.BINARY_OPS). The op is the same for every thread,
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
