// reduce.cu - the sum of a contiguous float32 array, in three stages.
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
