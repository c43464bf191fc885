// creation.cu - arange and linspace.
//
// The CUDA twin of fast/csrc/creation.c. Element i's value depends on i
// alone, never on element i - 1, so each thread computes its elements from
// their own index (grid-stride loop): no running sum to pile up rounding
// errors, and no dependence between threads. `out` is 1-D with any stride.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
// As the CPU tiers: fused multiply-adds only where asked for by name (fma).
#pragma GCC optimize("fp-contract=off")
#endif

#include "gt_cuda_util.cuh"

// An exact integer stored with the CPU tiers' rules: its low 64 bits into an
// integer dtype (wrapping), rounded once into a float one, nonzero into bool.
template <typename T>
struct gt_exact_store {
    __device__ static T from(__int128 x) {
        return gt_is_float<T>::value ? gt_cast<T>((double)x) : gt_cast<T>((long long)x);
    }
};
template <>
struct gt_exact_store<bool> {
    __device__ static bool from(__int128 x) { return x != 0; }
};

// Integers: Python computes start + i * step exactly, then stores it. A 128-bit
// integer holds the exact value for any int64 start and step and any length,
// as in the CPU tiers (a float dtype sees the difference past 2^63).
template <typename T>
__device__ void arange_int(T *out, long long stride, long long n, long long start,
                           long long step) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const __int128 exact = (__int128)start + (__int128)i * step;
        out[i * stride] = gt_exact_store<T>::from(exact);
    }
}

// Floats: PyTorch's vectorised CPU loop, in double (see Kernels.arange), as the
// CPU tiers. A vector holds 256 bits (32 / sizeof(T) lanes) and the loop takes
// two vectors at a time; each vector's first value is rounded to T and its
// lanes step on from there. Values after the last pair of vectors are counted
// from start. Launched for float and double only.
template <typename T>
__device__ void arange_float(T *out, long long stride, long long n, double start, double step) {
    const long long lanes = 32 / (long long)sizeof(T), in_blocks = n - n % (2 * lanes);
    GT_GRID_STRIDE_LOOP(i, n) {
        double value;
        if (i < in_blocks) {
            const long long first = i - i % lanes;
            const T base = gt_cast<T>(fma(step, (double)first, start));
            value = fma((double)(i - first), step, (double)base);
        } else {
            value = fma(step, (double)i, start);
        }
        out[i * stride] = gt_cast<T>(value);
    }
}

// PyTorch's linspace: step = (end - start) / (n - 1), the first half counted up
// from start and the second half down from end (so both ends are exact), each
// value one fused multiply-add, in float for a float output and in double
// otherwise (an integer output truncates the double), as the CPU tiers.
template <typename T>
struct linspace_math {
    typedef double type;
};
template <>
struct linspace_math<float> {
    typedef float type;
};

__device__ __forceinline__ float gt_linspace_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double gt_linspace_fma(double a, double b, double c) { return fma(a, b, c); }

template <typename T>
__device__ void linspace(T *out, long long stride, long long n, double start_d, double end_d) {
    typedef typename linspace_math<T>::type M;
    const M start = (M)start_d, end = (M)end_d, step = (end - start) / (M)(n - 1);
    const long long half = n / 2;
    GT_GRID_STRIDE_LOOP(i, n) {
        M value;
        if (n == 1)
            value = start;
        else if (i < half)
            value = gt_linspace_fma(step, (M)i, start);
        else
            value = gt_linspace_fma(-step, (M)(n - 1 - i), end);
        out[i * stride] = gt_cast<T>(value);
    }
}

#define GT_CREATION_KERNELS(T, S)                                                                \
    extern "C" __global__ void arange_int_##S(T *out, long long stride, long long n,            \
                                              long long start, long long step) {                 \
        arange_int<T>(out, stride, n, start, step);                                              \
    }                                                                                            \
    extern "C" __global__ void arange_float_##S(T *out, long long stride, long long n,          \
                                                double start, double step) {                     \
        arange_float<T>(out, stride, n, start, step);                                            \
    }                                                                                            \
    extern "C" __global__ void linspace_##S(T *out, long long stride, long long n, double start, \
                                            double end) {                                        \
        linspace<T>(out, stride, n, start, end);                                                 \
    }
GT_FOR_EACH_DTYPE(GT_CREATION_KERNELS)
