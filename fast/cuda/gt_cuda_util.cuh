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
//   offset), so a kernel adds only the offset within the view.
// * Shapes and strides travel in one int64 `meta` array (gt_cuda_common.cuh);
//   meta = 0 means every operand walked is contiguous (or 0-d): the offset is
//   the linear index itself.
// * Each family writes a kernel once as a template and instantiates it with
//   GT_FOR_EACH_DTYPE (gt_cuda_common.cuh) or GT_FOR_EACH_FLOAT_DTYPE below,
//   giving `extern "C"` names such as `cumsum_f32`.
#ifndef GT_CUDA_UTIL_CUH
#define GT_CUDA_UTIL_CUH

#include "gt_cuda_common.cuh"  // dtype list, grid-stride loop, gt_offset, gt_cast

// The float dtypes only, as (C type, suffix): kernels the contract defines for floats.
#define GT_FOR_EACH_FLOAT_DTYPE(X) \
    X(float, f32)                  \
    X(double, f64)

// The same over blocks: block b takes rows b, b + gridDim.x, ... (one block
// per row, its threads sharing the row's work).
#define GT_BLOCK_STRIDE_LOOP(row, rows) \
    for (long long row = blockIdx.x; row < (long long)(rows); row += gridDim.x)

// Offset of element i of operand k: through its strides, or i itself when
// the host passed meta = 0 (every operand contiguous: the fast path, no
// division per element).
__device__ __forceinline__ long long gt_view_offset(long long i, const long long *meta, int ndim,
                                                    int k) {
    return meta ? gt_meta_offset(i, meta, ndim, k) : i;
}

// ------------------------------------------------------------ checked indices
// Kernels that read an index check it themselves (glasstorch/_kernels.py).
// Each index is read once into a local (a volatile load the compiler cannot
// repeat), checked against the size it addresses (one unsigned comparison
// also catches negative values), and only the local is used.
__device__ __forceinline__ long long gt_read_once(const long long *p) {
    return *(const volatile long long *)p;
}
#define GT_INDEX_OUTSIDE(k, size) ((unsigned long long)(k) >= (unsigned long long)(size))

// A bad index is reported in a two-slot device buffer the host set to the
// largest int64 (CudaKernelsBase.scratch_int64's sentinel, "none"): slot 0
// gets the smallest position (in the kernel's own work order) that held a
// bad index, by atomicMin, and slot 1 the bad value. Threads race only to report an error:
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
