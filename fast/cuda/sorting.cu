// sorting.cu - a stable sort of each 1-D slice along `dim`, values and indices.
//
// The CUDA twin of fast/csrc/sorting.c. Stability comes from the comparison
// rather than from the algorithm: elements are (value, original index) pairs
// and equal values are ordered by index, so the order is total and *any*
// correct sort gives the one stable answer, equal to the CPU tiers' index for
// index. NaN counts as larger than every number; descending order swaps the
// values in the comparison but keeps the index tie-break ascending.
//
// Two kernels:
// * sort_bitonic: slices of up to GT_SORT_TILE elements, one block per slice.
//   The slice is loaded into shared memory, padded to a power of two with
//   entries that sort last, and sorted there by a bitonic network: log2(P)
//   stages of compare-and-swap between fixed partners, every thread doing one
//   pair per step with a barrier between steps. It does O(n log^2 n) work but
//   all of it in parallel, from fast on-chip memory.
// * sort_merge: longer slices, one thread per slice, a bottom-up merge sort
//   between two scratch rows in device memory (the CPU tiers' algorithm).
//
// meta holds the three views with `dim` left out (slice starts): values,
// indices, a.
#include "gt_cuda_util.cuh"

#define GT_SORT_TILE 1024

// Whether pair (x, i) sorts strictly before (y, j). Indices >= n mark padding.
template <typename T>
__device__ __forceinline__ bool gt_sort_before(T x, long long i, T y, long long j, long long n,
                                               int descending) {
    if (i >= n || j >= n) return i < j;  // padding goes last
    if (descending) {
        const T t = x;
        x = y;
        y = t;
    }
    const bool x_nan = x != x, y_nan = y != y;
    if (x_nan || y_nan) return (x_nan && y_nan) ? i < j : y_nan;  // NaN is the largest
    if (x < y) return true;
    if (y < x) return false;
    return i < j;
}

template <typename T>
__device__ void sort_bitonic(T *values, long long *indices, const T *a, const long long *meta,
                             int ndim, long long slices, long long n, long long padded,
                             long long values_step, long long indices_step, long long a_step,
                             int descending) {
    __shared__ T keys[GT_SORT_TILE];
    __shared__ long long positions[GT_SORT_TILE];
    GT_BLOCK_STRIDE_LOOP(s, slices) {
        const T *x = a + gt_view_offset(s, meta, ndim, 2);
        for (long long k = threadIdx.x; k < padded; k += blockDim.x) {
            keys[k] = k < n ? x[k * a_step] : (T)0;
            positions[k] = k;  // k >= n: padding
        }
        __syncthreads();
        for (long long size = 2; size <= padded; size *= 2) {
            for (long long stride = size / 2; stride > 0; stride /= 2) {
                for (long long t = threadIdx.x; t < padded / 2; t += blockDim.x) {
                    const long long lo = 2 * stride * (t / stride) + t % stride, hi = lo + stride;
                    const bool ascending = (lo & size) == 0;  // this run's direction
                    const bool swap = ascending ? gt_sort_before(keys[hi], positions[hi], keys[lo],
                                                                 positions[lo], n, descending)
                                                : gt_sort_before(keys[lo], positions[lo], keys[hi],
                                                                 positions[hi], n, descending);
                    if (swap) {
                        const T key = keys[lo];
                        keys[lo] = keys[hi];
                        keys[hi] = key;
                        const long long position = positions[lo];
                        positions[lo] = positions[hi];
                        positions[hi] = position;
                    }
                }
                __syncthreads();
            }
        }
        T *v = values + gt_view_offset(s, meta, ndim, 0);
        long long *ix = indices + gt_view_offset(s, meta, ndim, 1);
        for (long long k = threadIdx.x; k < n; k += blockDim.x) {
            v[k * values_step] = keys[k];
            ix[k * indices_step] = positions[k];
        }
        __syncthreads();  // the next slice reuses the shared rows
    }
}

// Longer slices: scratch holds two rows of n pairs per slice (keys in
// key_scratch, indices in index_scratch), contiguous.
template <typename T>
__device__ void sort_merge(T *values, long long *indices, const T *a, const long long *meta,
                           int ndim, long long slices, long long n, long long values_step,
                           long long indices_step, long long a_step, int descending,
                           T *key_scratch, long long *index_scratch) {
    GT_GRID_STRIDE_LOOP(s, slices) {
        const T *x = a + gt_view_offset(s, meta, ndim, 2);
        T *from_k = key_scratch + 2 * n * s, *to_k = from_k + n;
        long long *from_i = index_scratch + 2 * n * s, *to_i = from_i + n;
        for (long long k = 0; k < n; k++) from_k[k] = x[k * a_step], from_i[k] = k;
        for (long long width = 1; width < n; width *= 2) {
            for (long long lo = 0; lo < n; lo += 2 * width) {
                const long long mid = lo + width < n ? lo + width : n;
                const long long hi = lo + 2 * width < n ? lo + 2 * width : n;
                long long i = lo, j = mid, k = lo;
                while (i < mid && j < hi) {
                    // take from the right run only when it is strictly before: stable
                    if (gt_sort_before(from_k[j], from_i[j], from_k[i], from_i[i], n, descending))
                        to_k[k] = from_k[j], to_i[k++] = from_i[j++];
                    else
                        to_k[k] = from_k[i], to_i[k++] = from_i[i++];
                }
                while (i < mid) to_k[k] = from_k[i], to_i[k++] = from_i[i++];
                while (j < hi) to_k[k] = from_k[j], to_i[k++] = from_i[j++];
            }
            T *tk = from_k;
            from_k = to_k, to_k = tk;
            long long *ti = from_i;
            from_i = to_i, to_i = ti;
        }
        T *v = values + gt_view_offset(s, meta, ndim, 0);
        long long *ix = indices + gt_view_offset(s, meta, ndim, 1);
        for (long long k = 0; k < n; k++) v[k * values_step] = from_k[k], ix[k * indices_step] = from_i[k];
    }
}

#define GT_SORT_KERNELS(T, S)                                                                    \
    extern "C" __global__ void sort_bitonic_##S(                                                 \
        T *values, long long *indices, const T *a, const long long *meta, int ndim,              \
        long long slices, long long n, long long padded, long long values_step,                  \
        long long indices_step, long long a_step, int descending) {                              \
        sort_bitonic<T>(values, indices, a, meta, ndim, slices, n, padded, values_step,          \
                        indices_step, a_step, descending);                                       \
    }                                                                                            \
    extern "C" __global__ void sort_merge_##S(                                                   \
        T *values, long long *indices, const T *a, const long long *meta, int ndim,              \
        long long slices, long long n, long long values_step, long long indices_step,            \
        long long a_step, int descending, T *key_scratch, long long *index_scratch) {            \
        sort_merge<T>(values, indices, a, meta, ndim, slices, n, values_step, indices_step,      \
                      a_step, descending, key_scratch, index_scratch);                           \
    }
GT_FOR_EACH_DTYPE(GT_SORT_KERNELS)
