// random.cu - Philox 4x32-10 on the device: rand, randn, randint and randperm.
//
// The generator is gt_philox.cuh, the very file the CPU tier's
// fast/csrc/random.c includes, so a seed and an offset give the same words on both.
// Philox is counter-based: block b's four words are a pure function of
// (seed, offset + b), so each CUDA thread computes its own blocks with no
// shared generator state at all. That is what makes parallel random numbers
// reproducible, and equal to the sequential reference's.
//
// Element i of `out` (row-major) is written at its strided position, so a
// non-contiguous `out` needs no temporary (the CPU tier fills one and copies).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
// The simulator's host compiler must not fuse a * b + c into one FMA either.
#pragma GCC optimize("fp-contract=off")
#endif

#include "gt_cuda_util.cuh"
#include "gt_philox.cuh"

// u in [0, 1) from one word: 24 bits for float32, 32 otherwise.
template <typename T>
__device__ __forceinline__ double gt_unit(unsigned int word) {
    return gt_philox_unit_f64(word);
}
template <>
__device__ __forceinline__ double gt_unit<float>(unsigned int word) {
    return gt_philox_unit_f32(word);
}

// Uniform numbers: one thread per Philox block of four elements (grid-stride
// over blocks). `below` is the largest number of out's dtype under `high`;
// with `clamp` a value that rounded up onto `high` becomes `below`.
template <typename T>
__device__ void random_uniform(T *out, const long long *meta, int ndim, long long n,
                               unsigned long long seed, unsigned long long offset, double low,
                               double high, double below, int clamp) {
    const double span = high - low;
    GT_GRID_STRIDE_LOOP(block, (n + 3) / 4) {
        unsigned int w[4];
        gt_philox_at(seed, offset, (unsigned long long)block, w);
        for (long long j = 0; j < 4 && 4 * block + j < n; j++) {
            T value = gt_cast<T>(gt_philox_scale(low, gt_unit<T>(w[j]), span));
            if (clamp && (double)value >= high) value = (T)below;
            out[gt_view_offset(4 * block + j, meta, ndim, 0)] = value;
        }
    }
}

// Normal numbers: block k gives elements 2k and 2k+1 by Box-Muller.
template <typename T>
__device__ void random_normal(T *out, const long long *meta, int ndim, long long n,
                              unsigned long long seed, unsigned long long offset, double mean,
                              double std) {
    GT_GRID_STRIDE_LOOP(block, (n + 1) / 2) {
        unsigned int w[4];
        gt_philox_at(seed, offset, (unsigned long long)block, w);
        double first, second;
        gt_box_muller(w[0], w[1], mean, std, &first, &second);
        out[gt_view_offset(2 * block, meta, ndim, 0)] = gt_cast<T>(first);
        if (2 * block + 1 < n)
            out[gt_view_offset(2 * block + 1, meta, ndim, 0)] =
                gt_cast<T>(second);
    }
}

// Integers low + x % span (span == 0 means 2^64, no modulo), x a random
// 64-bit number: two per block. For valid arguments (high <= 2^63) the exact
// value fits in int64, so unsigned 64-bit arithmetic gives it exactly, then
// it is stored with the conversion rule of out's dtype.
template <typename T>
__device__ void random_integers(T *out, const long long *meta, int ndim, long long n,
                                unsigned long long seed, unsigned long long offset, long long low,
                                unsigned long long span) {
    GT_GRID_STRIDE_LOOP(block, (n + 1) / 2) {
        unsigned int w[4];
        gt_philox_at(seed, offset, (unsigned long long)block, w);
        for (long long i = 2 * block; i < 2 * block + 2 && i < n; i++) {
            const unsigned long long x = gt_philox_uint64(w, i);
            const long long value = (long long)((unsigned long long)low + (span ? x % span : x));
            out[gt_view_offset(i, meta, ndim, 0)] = gt_cast<T>(value);
        }
    }
}

#define GT_RANDOM_KERNELS(T, S)                                                                \
    extern "C" __global__ void random_uniform_##S(T *out, const long long *meta, int ndim,     \
                                                  long long n, unsigned long long seed,        \
                                                  unsigned long long offset, double low,       \
                                                  double high, double below, int clamp) {      \
        random_uniform<T>(out, meta, ndim, n, seed, offset, low, high, below, clamp);          \
    }                                                                                          \
    extern "C" __global__ void random_normal_##S(T *out, const long long *meta, int ndim,      \
                                                 long long n, unsigned long long seed,         \
                                                 unsigned long long offset, double mean,       \
                                                 double std) {                                 \
        random_normal<T>(out, meta, ndim, n, seed, offset, mean, std);                         \
    }                                                                                          \
    extern "C" __global__ void random_integers_##S(T *out, const long long *meta, int ndim,    \
                                                   long long n, unsigned long long seed,       \
                                                   unsigned long long offset, long long low,   \
                                                   unsigned long long span) {                  \
        random_integers<T>(out, meta, ndim, n, seed, offset, low, span);                       \
    }
GT_FOR_EACH_DTYPE(GT_RANDOM_KERNELS)

// randperm, stage 1: the Fisher-Yates draws. Swap k (i = n - 1 - k) swaps
// slot i with slot j = x_k % (i + 1), x_k the k-th random 64-bit number. The
// draws do not depend on the swaps, so they are computed in parallel, one
// thread per Philox block (two draws).
extern "C" __global__ void randperm_picks_i64(long long *picks, long long n,
                                              unsigned long long seed,
                                              unsigned long long offset) {
    const long long swaps = n - 1;
    GT_GRID_STRIDE_LOOP(block, (swaps + 1) / 2) {
        unsigned int w[4];
        gt_philox_at(seed, offset, (unsigned long long)block, w);
        for (long long k = 2 * block; k < 2 * block + 2 && k < swaps; k++) {
            const unsigned long long i = (unsigned long long)(n - 1 - k);
            picks[k] = (long long)(gt_philox_uint64(w, k) % (i + 1));
        }
    }
}

// randperm, stage 2: the identity, then the swaps in order. Each swap may
// touch a slot an earlier one moved, so this part is inherently sequential:
// one thread (launch it as one block of one thread).
extern "C" __global__ void randperm_swaps_i64(long long *out, long long stride,
                                              const long long *picks, long long n) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (long long p = 0; p < n; p++) out[p * stride] = p;
    for (long long k = 0; k < n - 1; k++) {
        const long long i = n - 1 - k, j = picks[k];
        const long long t = out[i * stride];
        out[i * stride] = out[j * stride];
        out[j * stride] = t;
    }
}
