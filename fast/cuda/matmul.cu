// matmul.cu - batched matrix product out[..., i, j] = sum_k a[..., i, k] * b[..., k, j].
//
// The classic shared-memory tiled kernel, written to be read:
//
// Each block computes one TILE x TILE tile of the output, one element per
// thread (thread (tx, ty) owns out[row, col] with row = tile row + ty, col =
// tile column + tx). The K dimension is walked in steps of TILE. At each
// step the block's threads load one TILE x TILE tile of a and one of b into
// shared memory, each thread one element of each (neighbouring threads read
// neighbouring columns: coalesced loads), wait at a barrier, then each thread
// multiplies its row of the a tile by its column of the b tile from shared
// memory. Every element of a and b is thus read from global memory once per
// tile instead of once per product: TILE times less memory traffic, which is
// what limits a naive kernel. A second barrier keeps the next step's loads
// from overwriting tiles that slower threads are still reading.
//
// Elements past the matrix edges load as 0, so any M, N, K work. Operands
// are strided views: row and column strides are arguments, and the batch
// dimensions' sizes and strides (for out, a and b in turn) are in `meta`
// (gt_cuda_common.cuh), which is 0 when there is no batch dimension.
// blockIdx.z walks the batch (grid-stride, for batches over the grid's limit).
//
// On a real GPU the cupy driver calls cuBLAS for float32/float64 instead;
// this kernel is what the simulator runs, and what a student reads.
#include "gt_cuda_common.cuh"

#define GT_TILE 16

// The accumulator: the type itself for floats, 64-bit wrapping integers otherwise.
template <typename T>
struct gt_mm_acc {
    typedef long long type;
};
template <>
struct gt_mm_acc<float> {
    typedef float type;
};
template <>
struct gt_mm_acc<double> {
    typedef double type;
};

template <typename T>
__device__ void matmul_kernel(T *out, const T *a, const T *b, long long m, long long n, long long k,
                              long long out_rs, long long out_cs, long long a_rs, long long a_cs,
                              long long b_rs, long long b_cs, const long long *meta, int batch_ndim,
                              long long batch) {
    typedef typename gt_mm_acc<T>::type A;
    __shared__ A a_tile[GT_TILE][GT_TILE];
    __shared__ A b_tile[GT_TILE][GT_TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long row = (long long)blockIdx.y * GT_TILE + ty;
    const long long col = (long long)blockIdx.x * GT_TILE + tx;
    for (long long z = blockIdx.z; z < batch; z += gridDim.z) {
        const T *a_mat = a + (meta ? gt_meta_offset(z, meta, batch_ndim, 1) : 0);
        const T *b_mat = b + (meta ? gt_meta_offset(z, meta, batch_ndim, 2) : 0);
        A acc = 0;
        for (long long k0 = 0; k0 < k; k0 += GT_TILE) {
            // Stage one tile of a and one of b (0 beyond the edges).
            const long long a_col = k0 + tx, b_row = k0 + ty;
            a_tile[ty][tx] = (row < m && a_col < k) ? (A)a_mat[row * a_rs + a_col * a_cs] : (A)0;
            b_tile[ty][tx] = (b_row < k && col < n) ? (A)b_mat[b_row * b_rs + col * b_cs] : (A)0;
            __syncthreads();
            for (int kk = 0; kk < GT_TILE; kk++) acc += a_tile[ty][kk] * b_tile[kk][tx];
            __syncthreads();
        }
        if (row < m && col < n) {
            T *out_mat = out + (meta ? gt_meta_offset(z, meta, batch_ndim, 0) : 0);
            out_mat[row * out_rs + col * out_cs] = gt_cast<T>(acc);
        }
    }
}

#define GT_MATMUL_KERNEL(T, S)                                                                 \
    extern "C" __global__ void matmul_##S(T *out, const T *a, const T *b, long long m,         \
                                          long long n, long long k, long long out_rs,          \
                                          long long out_cs, long long a_rs, long long a_cs,    \
                                          long long b_rs, long long b_cs,                      \
                                          const long long *meta, int batch_ndim,               \
                                          long long batch) {                                   \
        matmul_kernel<T>(out, a, b, m, n, k, out_rs, out_cs, a_rs, a_cs, b_rs, b_cs, meta,     \
                         batch_ndim, batch);                                                   \
    }
GT_FOR_EACH_DTYPE(GT_MATMUL_KERNEL)
