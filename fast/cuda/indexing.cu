// indexing.cu - gather, scatter (+ scatter_add), index_select, index_put and nonzero.
//
// The CUDA twin of fast/csrc/indexing.c, with its two roles:
//
//   gather, index_select   out[i]                 = a[i with i[dim] = idx(i)]
//   scatter, index_put     out[i with i[dim] = idx(i)] (+)= src[i]
//
// One operand is walked *directly* (out for gather, src for scatter) over the
// iteration shape, the other is addressed *indirectly*: its position is the
// walk's position along every other dimension (the host zeroes its stride
// along `dim`) plus idx(i) * dim_stride. For gather/scatter idx(i) =
// index[i]; for index_select/index_put the 1-D index is passed with stride 0
// along every dimension but `dim`, so idx(i) = index[i[dim]]. meta holds the
// three views over the iteration shape: direct, indirect, index.
//
// Every index is read once (gt_read_once), checked against `limit` (the
// indirect operand's size along dim) and only then used; a bad one is
// reported (gt_report_bad) and nothing is read or written through it.
//
// Three kernels share that addressing:
// * gather: one thread per output element (grid-stride), no conflicts.
// * scatter_fiber: one thread per *fiber* along `dim`, walking it in order.
//   Two source elements can only hit the same target if they agree on every
//   coordinate but `dim`, that is, if they are in the same fiber: so each
//   thread owns its targets, the last write wins as in the CPU tiers, and
//   accumulations add in their order, with no atomics.
// * scatter_add_atomic: one thread per source element, adding with atomicAdd
//   (the hardware serialises colliding adds). More parallel than fibers when
//   the fibers are few and long (a 1-D scatter_add is one fiber), at the
//   price of an order of float additions that varies between runs, as in
//   PyTorch's CUDA scatter_add. For the dtypes with a hardware atomic add:
//   int32, int64 (as unsigned: the wrap-around is the same), float32, float64.
#include "gt_cuda_util.cuh"

// Element i's offset in operand k of meta (iteration shape: ndim dimensions).
#define GT_OPERAND(i, k) gt_meta_offset((i), meta, ndim, (k))

template <typename T>
__device__ void gather(T *out, const T *a, const long long *index, const long long *meta,
                       int ndim, long long n, long long dim_stride, long long limit,
                       long long *report) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const long long k = gt_read_once(index + GT_OPERAND(i, 2));
        if (GT_INDEX_OUTSIDE(k, limit)) {
            gt_report_bad(report, i, k);
            continue;
        }
        out[GT_OPERAND(i, 0)] = a[GT_OPERAND(i, 1) + k * dim_stride];
    }
}

// Accumulating adds with each dtype's rule: integers wrap, bool saturates
// (x + y != 0), floats add in their own precision.
template <typename T>
__device__ __forceinline__ T gt_accumulate(T x, T y) {
    return (T)((unsigned long long)x + (unsigned long long)y);
}
template <>
__device__ __forceinline__ bool gt_accumulate<bool>(bool x, bool y) { return x || y; }
template <>
__device__ __forceinline__ float gt_accumulate<float>(float x, float y) { return x + y; }
template <>
__device__ __forceinline__ double gt_accumulate<double>(double x, double y) { return x + y; }

// meta: the three views with `dim` left out (fiber starts); the *_step
// arguments are the strides along `dim` of src and index, `length` the
// fiber's length.
template <typename T>
__device__ void scatter_fiber(T *out, const T *src, const long long *index, const long long *meta,
                              int ndim, long long fibers, long long length, long long src_step,
                              long long index_step, long long dim_stride, long long limit,
                              int accumulate, long long *report) {
    GT_GRID_STRIDE_LOOP(f, fibers) {
        const T *s = src + gt_view_offset(f, meta, ndim, 0);
        T *target = out + gt_view_offset(f, meta, ndim, 1);
        const long long *idx = index + gt_view_offset(f, meta, ndim, 2);
        for (long long j = 0; j < length; j++) {
            const long long k = gt_read_once(idx + j * index_step);
            if (GT_INDEX_OUTSIDE(k, limit)) {
                gt_report_bad(report, f * length + j, k);
                break;  // as the CPU tiers, a fiber stops at its first bad index
            }
            T *slot = target + k * dim_stride;
            *slot = accumulate ? gt_accumulate(*slot, s[j * src_step]) : s[j * src_step];
        }
    }
}

// The hardware atomic add of each dtype that has one.
__device__ __forceinline__ void gt_atomic_add(int *slot, int v) {
    atomicAdd((unsigned int *)slot, (unsigned int)v);
}
__device__ __forceinline__ void gt_atomic_add(long long *slot, long long v) {
    atomicAdd((unsigned long long *)slot, (unsigned long long)v);
}
__device__ __forceinline__ void gt_atomic_add(float *slot, float v) { atomicAdd(slot, v); }
__device__ __forceinline__ void gt_atomic_add(double *slot, double v) { atomicAdd(slot, v); }

template <typename T>
__device__ void scatter_add_atomic(T *out, const T *src, const long long *index,
                                   const long long *meta, int ndim, long long n,
                                   long long dim_stride, long long limit, long long *report) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const long long k = gt_read_once(index + GT_OPERAND(i, 2));
        if (GT_INDEX_OUTSIDE(k, limit)) {
            gt_report_bad(report, i, k);
            continue;
        }
        gt_atomic_add(out + GT_OPERAND(i, 1) + k * dim_stride, src[GT_OPERAND(i, 0)]);
    }
}

#define GT_INDEXING_KERNELS(T, S)                                                                \
    extern "C" __global__ void gather_##S(T *out, const T *a, const long long *index,           \
                                          const long long *meta, int ndim, long long n,          \
                                          long long dim_stride, long long limit,                 \
                                          long long *report) {                                   \
        gather<T>(out, a, index, meta, ndim, n, dim_stride, limit, report);                      \
    }                                                                                            \
    extern "C" __global__ void scatter_fiber_##S(                                                \
        T *out, const T *src, const long long *index, const long long *meta, int ndim,           \
        long long fibers, long long length, long long src_step, long long index_step,            \
        long long dim_stride, long long limit, int accumulate, long long *report) {              \
        scatter_fiber<T>(out, src, index, meta, ndim, fibers, length, src_step, index_step,      \
                         dim_stride, limit, accumulate, report);                                 \
    }
GT_FOR_EACH_DTYPE(GT_INDEXING_KERNELS)

#define GT_SCATTER_ADD_ATOMIC_KERNEL(T, S)                                                       \
    extern "C" __global__ void scatter_add_atomic_##S(T *out, const T *src,                     \
                                                      const long long *index,                    \
                                                      const long long *meta, int ndim,           \
                                                      long long n, long long dim_stride,         \
                                                      long long limit, long long *report) {      \
        scatter_add_atomic<T>(out, src, index, meta, ndim, n, dim_stride, limit, report);        \
    }
GT_SCATTER_ADD_ATOMIC_KERNEL(int, i32)
GT_SCATTER_ADD_ATOMIC_KERNEL(long long, i64)
GT_SCATTER_ADD_ATOMIC_KERNEL(float, f32)
GT_SCATTER_ADD_ATOMIC_KERNEL(double, f64)

// ------------------------------------------------------------------ nonzero
// Stream compaction in three launches, keeping row-major order: `workers`
// threads each own a contiguous chunk of the element range; each counts its
// chunk's non-zeros (1), one thread turns the counts into starting rows by an
// exclusive prefix sum (2: at most a few thousand numbers), and each thread
// writes its chunk's coordinates from its starting row on (3). meta holds
// a's shape and strides (ndim >= 1); coordinates come from unravelling the
// linear index with the shape.
template <typename T>
__device__ void nonzero_count(const T *a, const long long *meta, int ndim, long long numel,
                              long long chunk, long long *counts, long long workers) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= workers) return;
    long long count = 0;
    for (long long i = t * chunk; i < numel && i < (t + 1) * chunk; i++)
        count += a[GT_OPERAND(i, 0)] != 0;
    counts[t] = count;
}

extern "C" __global__ void nonzero_scan(long long *counts, long long workers) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    long long row = 0;
    for (long long t = 0; t < workers; t++) {
        const long long count = counts[t];
        counts[t] = row;
        row += count;
    }
}

template <typename T>
__device__ void nonzero_write(long long *out, long long out_row_step, long long out_col_step,
                              const T *a, const long long *meta, int ndim, long long numel,
                              long long chunk, const long long *starts, long long workers) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= workers) return;
    long long row = starts[t];
    const long long *shape = gt_meta_shape(meta, ndim, 0);
    for (long long i = t * chunk; i < numel && i < (t + 1) * chunk; i++) {
        if (!(a[GT_OPERAND(i, 0)] != 0)) continue;
        long long rest = i;
        for (int d = ndim - 1; d >= 0; d--) {
            out[row * out_row_step + d * out_col_step] = rest % shape[d];
            rest /= shape[d];
        }
        row++;
    }
}

#define GT_NONZERO_KERNELS(T, S)                                                                 \
    extern "C" __global__ void nonzero_count_##S(const T *a, const long long *meta, int ndim,   \
                                                 long long numel, long long chunk,               \
                                                 long long *counts, long long workers) {         \
        nonzero_count<T>(a, meta, ndim, numel, chunk, counts, workers);                          \
    }                                                                                            \
    extern "C" __global__ void nonzero_write_##S(                                                \
        long long *out, long long out_row_step, long long out_col_step, const T *a,              \
        const long long *meta, int ndim, long long numel, long long chunk,                       \
        const long long *starts, long long workers) {                                            \
        nonzero_write<T>(out, out_row_step, out_col_step, a, meta, ndim, numel, chunk, starts,   \
                         workers);                                                               \
    }
GT_FOR_EACH_DTYPE(GT_NONZERO_KERNELS)
