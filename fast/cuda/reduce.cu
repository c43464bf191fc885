// reduce.cu - sum, prod, amax, amin, all, any over any set of dimensions, every dtype.
//
// The CUDA twin of gt_reduce in fast/csrc/reductions.c. The output has the
// input's number of dimensions, with size 1 along each reduced one (the
// keepdim shape), so each output element j owns one "row" of the input: the
// n_inner elements that differ from it only along the reduced dimensions.
//
// One block per output element (a grid-stride loop over them when there are
// more than the grid's blocks):
//   1. each thread folds every blockDim.x-th element of the row into a
//      register (an accumulator: double for float sums and products, a
//      wrapping 64-bit integer for integer ones);
//   2. the block combines its threads' values as a tree in shared memory,
//      halving the active threads at each step, with __syncthreads() between
//      steps.
// The order of operations depends only on blockDim.x and n_inner, never on
// timing: the result is deterministic, run after run (no atomics).
//
// Where the elements are: `meta` holds three views (gt_cuda_common.cuh):
//   0: the output's shape and strides (the output element's offset),
//   1: the output's shape with the input's strides (the row's first element),
//   2: the reduced sizes (1 elsewhere) with the input's strides (the element
//      within the row).
#include "gt_cuda_common.cuh"

#define GT_MAX_REDUCE_THREADS 256

// The op codes, bound by name by glasstorch/fast/cuda/kernels/reductions.py (op_codes).
#define GT_REDUCE_SUM 0
#define GT_REDUCE_PROD 1
#define GT_REDUCE_AMAX 2
#define GT_REDUCE_AMIN 3
#define GT_REDUCE_ALL 4
#define GT_REDUCE_ANY 5

// The accumulator type: double for floats, long long (wrapping) for the rest.
template <typename T>
struct gt_acc_type {
    typedef long long type;
};
template <>
struct gt_acc_type<float> {
    typedef double type;
};
template <>
struct gt_acc_type<double> {
    typedef double type;
};

// Integer sums and products wrap around modulo 2^64, computed on unsigned numbers.
__device__ __forceinline__ long long gt_acc_add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ long long gt_acc_mul(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}
__device__ __forceinline__ double gt_acc_add(double a, double b) { return a + b; }
__device__ __forceinline__ double gt_acc_mul(double a, double b) { return a * b; }

// The identity of each op (what an empty reduction gives).
template <typename A>
__device__ __forceinline__ A gt_reduce_identity(int op) {
    switch (op) {
    case GT_REDUCE_PROD:
    case GT_REDUCE_ALL:
        return (A)1;
    default:
        return (A)0;  // sum, any; amax/amin start from the row's first element instead
    }
}

// Fold b into a. amax/amin let a NaN win (a != a keeps a NaN once taken).
template <typename A>
__device__ __forceinline__ A gt_reduce_combine(int op, A a, A b) {
    switch (op) {
    case GT_REDUCE_SUM:
        return gt_acc_add(a, b);
    case GT_REDUCE_PROD:
        return gt_acc_mul(a, b);
    case GT_REDUCE_AMAX:
        return (a != a || a > b) ? a : b;
    case GT_REDUCE_AMIN:
        return (a != a || a < b) ? a : b;
    case GT_REDUCE_ALL:
        return (A)((a != 0) && (b != 0));
    default:  // any
        return (A)((a != 0) || (b != 0));
    }
}

template <typename T, typename OUT>
__device__ void reduce_kernel(int op, OUT *out, const T *a, const long long *meta, int ndim,
                              long long n_out, long long n_inner) {
    typedef typename gt_acc_type<T>::type A;
    __shared__ A partial[GT_MAX_REDUCE_THREADS];
    const unsigned int tid = threadIdx.x;
    const bool extreme = op == GT_REDUCE_AMAX || op == GT_REDUCE_AMIN;
    // The loop bound is the same for every thread of the block, so every
    // thread reaches each __syncthreads() below.
    for (long long j = blockIdx.x; j < n_out; j += gridDim.x) {
        const T *row = a + gt_meta_offset(j, meta, ndim, 1);
        A acc = gt_reduce_identity<A>(op);
        if (extreme && n_inner > 0) acc = (A)row[0];  // amax/amin: any element is a start
        for (long long r = tid; r < n_inner; r += blockDim.x) {
            A value = (op == GT_REDUCE_ALL || op == GT_REDUCE_ANY) ? (A)(row[gt_meta_offset(r, meta, ndim, 2)] != 0)
                                                                   : (A)row[gt_meta_offset(r, meta, ndim, 2)];
            acc = gt_reduce_combine(op, acc, value);
        }
        partial[tid] = acc;
        __syncthreads();
        for (unsigned int active = blockDim.x / 2; active > 0; active /= 2) {
            if (tid < active) partial[tid] = gt_reduce_combine(op, partial[tid], partial[tid + active]);
            __syncthreads();
        }
        if (tid == 0) out[gt_meta_offset(j, meta, ndim, 0)] = gt_cast<OUT>(partial[0]);
        __syncthreads();  // partial[0] is read before the next row overwrites it
    }
}

// reduce_<suffix> writes a's dtype; reduce_bool_<suffix> writes bool (all, any).
#define GT_REDUCE_KERNELS(T, S)                                                              \
    extern "C" __global__ void reduce_##S(int op, T *out, const T *a, const long long *meta, \
                                          int ndim, long long n_out, long long n_inner) {    \
        reduce_kernel<T, T>(op, out, a, meta, ndim, n_out, n_inner);                         \
    }                                                                                        \
    extern "C" __global__ void reduce_bool_##S(int op, bool *out, const T *a,                \
                                               const long long *meta, int ndim,              \
                                               long long n_out, long long n_inner) {         \
        reduce_kernel<T, bool>(op, out, a, meta, ndim, n_out, n_inner);                      \
    }
GT_FOR_EACH_DTYPE(GT_REDUCE_KERNELS)
