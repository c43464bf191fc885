// slices.cu - kernels over the 1-D slices of a tensor along one dimension:
// softmax / log_softmax, arg_reduce (max/min with indices) and cumsum.
//
// The CUDA twin of the slice half of fast/csrc/reductions.c (the other half,
// `reduce`, is reduce.cu). Slice s of a view (row-major over every dimension
// but `dim`) starts at gt_view_offset(s, ...) of the view with `dim` left out,
// which the host puts in `meta`; `step` is the view's stride along `dim`.
//
// Two layouts of the work:
// * softmax and arg_reduce: one block per slice (block-stride over slices),
//   its threads sharing the slice's elements (strided by blockDim, so
//   neighbouring threads read neighbouring elements of a contiguous row) and
//   combining their partial results with gt_block_reduce (warp shuffles,
//   then shared memory), which is deterministic for a given block size;
// * cumsum: one thread per slice, walking it in order. A parallel scan would
//   add in another order and round differently; the running sum in order is
//   what the CPU tiers compute, bit for bit.
#include "gt_cuda_util.cuh"

// Slice s's first element in operand k.
#define GT_SLICE(s, k) gt_view_offset((s), meta, ndim, (k))

// ------------------------------------------------------------------ softmax
// Three passes over the row: the maximum (NaN-propagating; a NaN maximum
// shifts by 0, so the NaN then spreads through the sum, and an infinite
// maximum is kept, so inf - inf makes the row NaN, as the CPU tiers do);
// the sum of exp(x - max) in double (never overflows: every exponent <= 0);
// then out = exp(x - max) / sum, or x - max - log(sum).
template <typename T>
__device__ void softmax(T *out, const T *a, const long long *meta, int ndim, long long slices,
                        long long n, long long out_step, long long a_step, int take_log) {
    GT_BLOCK_STRIDE_LOOP(s, slices) {
        const T *x = a + GT_SLICE(s, 1);
        T *y = out + GT_SLICE(s, 0);
        T shift = x[0];
        for (long long k = threadIdx.x; k < n; k += blockDim.x) shift = gt_nan_max_op()(shift, x[k * a_step]);
        shift = gt_block_reduce(shift, gt_nan_max_op());
        if (shift != shift) shift = (T)0;
        double total = 0.0;
        for (long long k = threadIdx.x; k < n; k += blockDim.x)
            total += (double)exp(x[k * a_step] - shift);
        total = gt_block_reduce(total, gt_sum_op());
        if (take_log) {
            const double log_total = log(total);
            for (long long k = threadIdx.x; k < n; k += blockDim.x)
                y[k * out_step] = (T)(((double)x[k * a_step] - (double)shift) - log_total);
        } else {
            const double scale = 1.0 / total;  // total >= 1 unless NaN: exp(0) is in it
            for (long long k = threadIdx.x; k < n; k += blockDim.x)
                y[k * out_step] = (T)((double)exp(x[k * a_step] - shift) * scale);
        }
    }
}

#define GT_SOFTMAX_KERNEL(T, S)                                                                   \
    extern "C" __global__ void softmax_##S(T *out, const T *a, const long long *meta, int ndim,  \
                                           long long slices, long long n, long long out_step,    \
                                           long long a_step, int take_log) {                     \
        softmax<T>(out, a, meta, ndim, slices, n, out_step, a_step, take_log);                   \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_SOFTMAX_KERNEL)

// --------------------------------------------------------------- arg_reduce
// A candidate is a (value, index) pair. `a` beats `b` when it is further
// towards the extreme, or a NaN (the first NaN wins outright), or equal with
// a smaller index: so combining candidates in any order gives the first
// occurrence of the extreme, as the sequential scan of the CPU tiers does.
template <typename T>
struct gt_candidate {
    T value;
    long long index;
};

template <typename T>
__device__ __forceinline__ bool gt_beats(T a, long long ia, T b, long long ib, int is_max) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return a_nan && (!b_nan || ia < ib);
    if (a == b) return ia < ib;
    return is_max ? a > b : a < b;
}

// One warp-shuffle-and-shared-memory tree over the block, carrying the pair
// (gt_block_reduce carries one value; a pair needs two shuffles a step).
template <typename T>
__device__ gt_candidate<T> gt_block_arg_reduce(gt_candidate<T> c, int is_max) {
    __shared__ T warp_values[GT_ROW_THREADS / 32];
    __shared__ long long warp_indices[GT_ROW_THREADS / 32];
    __shared__ gt_candidate<T> result;
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned int warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset /= 2) {
        const T v = __shfl_down_sync(0xffffffffu, c.value, offset);
        const long long i = __shfl_down_sync(0xffffffffu, c.index, offset);
        if (lane + offset < 32 && gt_beats(v, i, c.value, c.index, is_max)) c.value = v, c.index = i;
    }
    if (lane == 0) warp_values[warp] = c.value, warp_indices[warp] = c.index;
    __syncthreads();
    if (warp == 0) {
        const unsigned int from = lane < warps ? lane : 0;
        c.value = warp_values[from];
        c.index = warp_indices[from];
        for (int offset = 16; offset > 0; offset /= 2) {
            const T v = __shfl_down_sync(0xffffffffu, c.value, offset);
            const long long i = __shfl_down_sync(0xffffffffu, c.index, offset);
            if (lane + offset < warps && gt_beats(v, i, c.value, c.index, is_max))
                c.value = v, c.index = i;
        }
        if (lane == 0) result = c;
    }
    __syncthreads();
    const gt_candidate<T> best = result;
    __syncthreads();
    return best;
}

// meta holds three views with `dim` left out: values, indices, a.
template <typename T>
__device__ void arg_reduce(T *values, long long *indices, const T *a, const long long *meta,
                           int ndim, long long slices, long long n, long long a_step,
                           int is_max) {
    GT_BLOCK_STRIDE_LOOP(s, slices) {
        const T *x = a + GT_SLICE(s, 2);
        gt_candidate<T> c = {x[0], 0};  // element 0 seeds every thread: it is a real candidate
        for (long long k = threadIdx.x; k < n; k += blockDim.x) {
            const T v = x[k * a_step];
            if (gt_beats(v, k, c.value, c.index, is_max)) c.value = v, c.index = k;
        }
        c = gt_block_arg_reduce(c, is_max);
        if (threadIdx.x == 0) {
            values[GT_SLICE(s, 0)] = c.value;
            indices[GT_SLICE(s, 1)] = c.index;
        }
    }
}

#define GT_ARG_REDUCE_KERNEL(T, S)                                                               \
    extern "C" __global__ void arg_reduce_##S(T *values, long long *indices, const T *a,        \
                                              const long long *meta, int ndim, long long slices, \
                                              long long n, long long a_step, int is_max) {       \
        arg_reduce<T>(values, indices, a, meta, ndim, slices, n, a_step, is_max);                \
    }
GT_FOR_EACH_DTYPE(GT_ARG_REDUCE_KERNEL)

// ------------------------------------------------------------------ cumsum
// The running sum's type: double for floats (stored after each step, as the
// CPU tiers do), wrapping 64-bit unsigned arithmetic for integers and bool.
template <typename T>
struct gt_running {
    typedef unsigned long long type;
};
template <>
struct gt_running<float> {
    typedef double type;
};
template <>
struct gt_running<double> {
    typedef double type;
};

template <typename T>
__device__ __forceinline__ typename gt_running<T>::type gt_running_term(T x) {
    return (typename gt_running<T>::type)(long long)x;
}
template <>
__device__ __forceinline__ double gt_running_term<float>(float x) { return (double)x; }
template <>
__device__ __forceinline__ double gt_running_term<double>(double x) { return x; }

template <typename T>
__device__ __forceinline__ T gt_running_store(unsigned long long total) {
    return gt_cast<T>((long long)total);
}
template <typename T>
__device__ __forceinline__ T gt_running_store(double total) {
    return gt_cast<T>(total);
}

template <typename T>
__device__ void cumsum(T *out, const T *a, const long long *meta, int ndim, long long slices,
                       long long n, long long out_step, long long a_step) {
    GT_GRID_STRIDE_LOOP(s, slices) {
        const T *x = a + GT_SLICE(s, 1);
        T *y = out + GT_SLICE(s, 0);
        typename gt_running<T>::type total = 0;
        for (long long k = 0; k < n; k++) {
            total += gt_running_term<T>(x[k * a_step]);
            y[k * out_step] = gt_running_store<T>(total);
        }
    }
}

#define GT_CUMSUM_KERNEL(T, S)                                                                   \
    extern "C" __global__ void cumsum_##S(T *out, const T *a, const long long *meta, int ndim,  \
                                          long long slices, long long n, long long out_step,     \
                                          long long a_step) {                                    \
        cumsum<T>(out, a, meta, ndim, slices, n, out_step, a_step);                              \
    }
GT_FOR_EACH_DTYPE(GT_CUMSUM_KERNEL)
