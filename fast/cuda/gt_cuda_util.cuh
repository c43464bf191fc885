// gt_cuda_util.cuh - what the kernel families beyond elementwise and reduce share.
//
// Included by random.cu, slices.cu, nn.cu, optim.cu, creation.cu, indexing.cu,
// sorting.cu, conv.cu and rnn.cu. Like every .cu here it compiles three ways:
// nvcc, NVRTC (no standard headers: only built-in types below) and the host
// C++ compiler with gt_cuda_sim.h for the simulator.
//
// Conventions of the kernels that include it
// -------------------------------------------
// * Pointers arrive at element 0 of their view (the mixin adds the view's
//   offset), so a kernel adds only "position within the view".
// * A view's shape and strides travel in one int64 array, `meta`: for each
//   view in turn, shape[0..ndim-1] then strides[0..ndim-1] (in elements).
//   `ndim == 0` with `meta == NULL` means "contiguous, or a single element":
//   the position is the linear index itself (the contiguous fast path, which
//   skips the divisions of the index walk).
// * dtype suffixes: b8 (bool), u8, i32, i64, f32, f64. Each family writes a
//   kernel once as a template and instantiates it with one of the X-macros
//   below, giving `extern "C"` names such as `cumsum_f32`.
#ifndef GT_CUDA_UTIL_CUH
#define GT_CUDA_UTIL_CUH

// ---------------------------------------------------------------- dtype tables
#define GT_CUDA_ALL_DTYPES(X) \
    X(b8, bool)               \
    X(u8, unsigned char)      \
    X(i32, int)               \
    X(i64, long long)         \
    X(f32, float)             \
    X(f64, double)

#define GT_CUDA_FLOAT_DTYPES(X) \
    X(f32, float)               \
    X(f64, double)

// ------------------------------------------------------------------ grid loops
// Grid-stride loop: thread t of a grid of T threads takes items t, t + T,
// t + 2T, ... so any grid covers any n, and neighbouring threads touch
// neighbouring items (coalesced memory accesses).
#define GT_GRID_STRIDE_LOOP(i, n)                                                        \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)blockDim.x * gridDim.x)

// The same over blocks: block b takes rows b, b + gridDim.x, ... (one block
// per row, its threads sharing the row's work).
#define GT_BLOCK_STRIDE_LOOP(row, rows) \
    for (long long row = blockIdx.x; row < (long long)(rows); row += gridDim.x)

// Position (in elements, from element 0) of the element with row-major linear
// index i of a view: unravel i one dimension at a time, last dimension fastest.
__device__ __forceinline__ long long gt_position(long long i, int ndim, const long long *shape,
                                                 const long long *strides) {
    if (ndim == 0) return i;  // contiguous fast path (or one element)
    long long pos = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        const long long size = shape[d];
        pos += (i % size) * strides[d];
        i /= size;
    }
    return pos;
}

// View k of a meta array holding `ndim`-dimensional views.
__device__ __forceinline__ const long long *gt_meta_shape(const long long *meta, int ndim, int k) {
    return meta + 2 * ndim * k;
}
__device__ __forceinline__ const long long *gt_meta_strides(const long long *meta, int ndim,
                                                            int k) {
    return meta + 2 * ndim * k + ndim;
}
__device__ __forceinline__ long long gt_meta_position(long long i, const long long *meta, int ndim,
                                                      int k) {
    return ndim == 0 ? i : gt_position(i, ndim, gt_meta_shape(meta, ndim, k),
                                       gt_meta_strides(meta, ndim, k));
}

// ------------------------------------------------------------------ conversion
// Storing a number into a dtype with the CPU tiers' rules (fast/csrc/gt_convert.h):
// to bool x != 0; float to integer truncates toward zero then wraps modulo
// 2^bits, NaN and infinities giving the type's minimum (0 for uint8);
// integer to integer keeps the low bits; int64 to float32 goes through double.

// A finite double, truncated toward zero, reduced modulo 2^64 (fmod is exact).
__device__ __forceinline__ unsigned long long gt_wrap_double(double x) {
    const double two63 = 9223372036854775808.0, two64 = 18446744073709551616.0;
    if (x > -two63 && x < two63) return (unsigned long long)(long long)x;
    double r = fmod(x, two64);
    if (r < 0) r += two64;
    return (unsigned long long)r;
}

template <typename T>
struct gt_convert;  // gt_convert<T>::from_double(x), gt_convert<T>::from_int64(x)

template <>
struct gt_convert<bool> {
    __device__ static bool from_double(double x) { return x != 0; }
    __device__ static bool from_int64(long long x) { return x != 0; }
};
template <>
struct gt_convert<unsigned char> {
    __device__ static unsigned char from_double(double x) {
        return isfinite(x) ? (unsigned char)gt_wrap_double(x) : 0;
    }
    __device__ static unsigned char from_int64(long long x) { return (unsigned char)x; }
};
template <>
struct gt_convert<int> {
    __device__ static int from_double(double x) {
        return isfinite(x) ? (int)(unsigned int)gt_wrap_double(x) : (int)0x80000000u;
    }
    __device__ static int from_int64(long long x) { return (int)(unsigned int)x; }
};
template <>
struct gt_convert<long long> {
    __device__ static long long from_double(double x) {
        return isfinite(x) ? (long long)gt_wrap_double(x) : (long long)0x8000000000000000ull;
    }
    __device__ static long long from_int64(long long x) { return x; }
};
template <>
struct gt_convert<float> {
    __device__ static float from_double(double x) { return (float)x; }
    __device__ static float from_int64(long long x) { return (float)(double)x; }
};
template <>
struct gt_convert<double> {
    __device__ static double from_double(double x) { return x; }
    __device__ static double from_int64(long long x) { return (double)x; }
};

// ------------------------------------------------------------ checked indices
// Kernels that read an index check it themselves (glasstorch/_kernels.py).
// Each index is read once into a local (a volatile load the compiler cannot
// repeat), checked against the size it addresses (one unsigned comparison
// also catches negative values), and only the local is used.
__device__ __forceinline__ long long gt_read_once(const long long *p) {
    return *(const volatile long long *)p;
}
#define GT_INDEX_OUTSIDE(k, size) ((unsigned long long)(k) >= (unsigned long long)(size))

// A bad index is reported in a two-slot device buffer the host set to -1
// (the mixin's scratch): slot 0 gets the smallest position (in the kernel's
// own work order) that held a bad index, by an unsigned atomicMin (so -1 is
// "none"), and slot 1 the bad value. Threads race only to report an error:
// a thread that lowers slot 0 writes its value, so slot 1 always holds a
// bad index, normally the one at slot 0's position.
__device__ __forceinline__ void gt_report_bad(long long *report, long long position,
                                              long long value) {
    const unsigned long long before = atomicMin((unsigned long long *)report,
                                                (unsigned long long)position);
    if ((unsigned long long)position < before) *(volatile long long *)(report + 1) = value;
}

// ------------------------------------------------------- block-wide reductions
// Every row kernel runs blocks of a power-of-two size from 32 to
// GT_ROW_THREADS threads (the mixin picks it from the row's length).
#define GT_ROW_THREADS 256

struct gt_sum_op {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
// max that propagates NaN: a NaN on either side wins.
struct gt_nan_max_op {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
};

// The combination of every thread's `value` over the block, returned to every
// thread. Two stages: warp shuffles fold each warp's 32 values in registers
// (no shared memory, no barrier), then the first warp folds the warps'
// results, taken from shared memory. Deterministic for a given block size:
// the order of combination depends only on the thread numbers.
template <typename T, typename Op>
__device__ T gt_block_reduce(T value, Op op) {
    __shared__ T warp_results[GT_ROW_THREADS / 32];
    __shared__ T result;
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned int warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset /= 2)
        value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
    if (lane == 0) warp_results[warp] = value;
    __syncthreads();
    if (warp == 0) {
        value = lane < warps ? warp_results[lane] : warp_results[0];
        for (int offset = 16; offset > 0; offset /= 2) {
            const T other = __shfl_down_sync(0xffffffffu, value, offset);
            if (lane + offset < warps) value = op(value, other);
        }
        if (lane == 0) result = value;
    }
    __syncthreads();
    const T total = result;
    __syncthreads();  // the next call may overwrite `result`
    return total;
}

#endif  // GT_CUDA_UTIL_CUH
