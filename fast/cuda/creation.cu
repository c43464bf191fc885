// creation.cu - arange and linspace.
//
// The CUDA twin of fast/csrc/creation.c. Element i's value depends on i
// alone, never on element i - 1, so each thread computes its elements from
// their own index (grid-stride loop): no running sum to pile up rounding
// errors, and no dependence between threads. `out` is 1-D with any stride.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
// Two roundings in start + i * step, as the CPU tiers: no fused multiply-add.
#pragma GCC optimize("fp-contract=off")
#endif

#include "gt_cuda_util.cuh"

#if defined(__CUDA_ARCH__)
#define GT_MUL(a, b) __dmul_rn((a), (b))  // never fused into an FMA by nvcc
#define GT_ADD(a, b) __dadd_rn((a), (b))
#else
#define GT_MUL(a, b) ((a) * (b))
#define GT_ADD(a, b) ((a) + (b))
#endif

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

// A float start with a float step: start + i * step in double.
template <typename T>
__device__ void arange_float(T *out, long long stride, long long n, double start, double step) {
    GT_GRID_STRIDE_LOOP(i, n) out[i * stride] = gt_cast<T>(GT_ADD(start, GT_MUL((double)i, step)));
}

// A float start with an integer step: i * step exactly (as an integer), then
// the float sum, as Python evaluates it.
template <typename T>
__device__ void arange_float_int(T *out, long long stride, long long n, double start,
                                 long long step) {
    GT_GRID_STRIDE_LOOP(i, n) {
        out[i * stride] = gt_cast<T>(GT_ADD(start, (double)((__int128)i * step)));
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
    extern "C" __global__ void arange_float_int_##S(T *out, long long stride, long long n,      \
                                                    double start, long long step) {              \
        arange_float_int<T>(out, stride, n, start, step);                                        \
    }                                                                                            \
    extern "C" __global__ void linspace_##S(T *out, long long stride, long long n, double start, \
                                            double end) {                                        \
        linspace<T>(out, stride, n, start, end);                                                 \
    }
GT_FOR_EACH_DTYPE(GT_CREATION_KERNELS)
