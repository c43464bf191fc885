// gt_cuda_common.cuh - what every glasstorch CUDA kernel file shares.
//
// Included by each fast/cuda/<family>.cu (`#include "gt_cuda_common.cuh"`);
// both compilers see fast/cuda/ on their include path: NVRTC through CuPy on a
// GPU, the host C++ compiler (with gt_cuda_sim.h) in the CUDA simulator. It
// includes no system header, so NVRTC needs nothing but this folder.
//
// 1. The dtype list. glasstorch has six dtypes; a kernel is written once as a
//    C++ template and instantiated for each by GT_FOR_EACH_DTYPE, which calls
//    X(C type, suffix) six times. The suffix ends the kernel's name:
//    `fill_f32`, `copy_i64_b8`, ... (the Python side builds the same names).
// 2. Strided views. The frontend passes every operand as a view: a device
//    address plus shape and strides. Kernels receive the shapes and strides of
//    all operands of a call in one int64 "meta" array (CudaKernelsBase.meta):
//    for operand k, meta[2*k*ndim ...] is its shape and the next ndim numbers
//    its strides, in elements. gt_offset turns the linear index of an output
//    element (row-major) into an operand's element offset.
// 3. Conversions with the CPU tiers' rules (fast/csrc/gt_convert.h): to bool
//    is x != 0; float to integer truncates toward zero, and NaN, infinities
//    and numbers out of range give the type's minimum (as x86; uint8 goes
//    through int64); integer to integer keeps the low bits; int64 to float32
//    goes through double.
#ifndef GT_CUDA_COMMON_CUH
#define GT_CUDA_COMMON_CUH

// The six dtypes as (C type, kernel-name suffix), in glasstorch's order.
#define GT_FOR_EACH_DTYPE(X) \
    X(bool, b8)              \
    X(unsigned char, u8)     \
    X(int, i32)              \
    X(long long, i64)        \
    X(float, f32)            \
    X(double, f64)

// Each (destination, source) pair of dtypes, for copy with conversion.
#define GT_FOR_EACH_DTYPE_PAIR_WITH(X, T, S) \
    X(T, S, bool, b8)                        \
    X(T, S, unsigned char, u8)               \
    X(T, S, int, i32)                        \
    X(T, S, long long, i64)                  \
    X(T, S, float, f32)                      \
    X(T, S, double, f64)

// A grid-stride loop over [0, n): thread t of T handles t, t + T, t + 2T, ...
// Neighbouring threads touch neighbouring elements (coalesced accesses), and
// any grid covers any n, so the host may cap the grid (at 4096 blocks).
#define GT_GRID_STRIDE_LOOP(i, n)                                                    \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);    \
         i += (long long)blockDim.x * gridDim.x)

// The element offset, in operand `shape`/`strides`, of the output's i-th
// element in row-major order: peel off the last index first (i % size), then
// move to the next dimension (i / size).
__device__ __forceinline__ long long gt_offset(long long i, int ndim, const long long *shape,
                                               const long long *strides) {
    long long offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        long long size = shape[d];
        offset += (i % size) * strides[d];
        i /= size;
    }
    return offset;
}

// Operand k's shape and strides inside a meta array (see the header comment).
__device__ __forceinline__ const long long *gt_meta_shape(const long long *meta, int ndim, int k) {
    return meta + 2 * k * ndim;
}
__device__ __forceinline__ const long long *gt_meta_strides(const long long *meta, int ndim,
                                                            int k) {
    return meta + 2 * k * ndim + ndim;
}
// gt_offset for operand k of a meta array.
__device__ __forceinline__ long long gt_meta_offset(long long i, const long long *meta, int ndim,
                                                    int k) {
    return gt_offset(i, ndim, gt_meta_shape(meta, ndim, k), gt_meta_strides(meta, ndim, k));
}

// ------------------------------------------------------------- conversions
// gt_is_float<T>: whether T is float or double (no <type_traits> on NVRTC).
template <typename T>
struct gt_is_float {
    static const bool value = false;
};
template <>
struct gt_is_float<float> {
    static const bool value = true;
};
template <>
struct gt_is_float<double> {
    static const bool value = true;
};

// A double into an integer type as x86 converts it (fast/csrc/gt_convert.h): truncate
// toward zero when the result fits; NaN, +-inf and numbers out of range give the
// type's minimum. uint8 goes through int64 and keeps the low 8 bits.
__device__ __forceinline__ long long gt_double_to_int64(double x) {
    const double two63 = 9223372036854775808.0;
    return (x >= -two63 && x < two63) ? (long long)x : (-9223372036854775807LL - 1);
}
template <typename T>
__device__ __forceinline__ T gt_double_to_int(double x) {
    return (T)gt_double_to_int64(x);
}
template <>
__device__ __forceinline__ int gt_double_to_int<int>(double x) {
    return (x > -2147483649.0 && x < 2147483648.0) ? (int)x : (-2147483647 - 1);
}

// gt_cast<T>(x): x (any of the six types) stored into T with the CPU tiers' rules.
template <typename T>
struct gt_caster {
    // integers from integers: keep the low bits (wrap around)
    template <typename S>
    __device__ static T from(S x) {
        return (T)(long long)x;
    }
    __device__ static T from(float x) { return from((double)x); }
    __device__ static T from(double x) { return gt_double_to_int<T>(x); }
};
template <>
struct gt_caster<bool> {
    template <typename S>
    __device__ static bool from(S x) {
        return x != 0;
    }
};
template <>
struct gt_caster<float> {
    template <typename S>
    __device__ static float from(S x) {
        return (float)(double)x;  // int64 rounds to double first, as the CPU tiers do
    }
};
template <>
struct gt_caster<double> {
    template <typename S>
    __device__ static double from(S x) {
        return (double)x;
    }
};
template <typename T, typename S>
__device__ __forceinline__ T gt_cast(S x) {
    return gt_caster<T>::from(x);
}

#endif  // GT_CUDA_COMMON_CUH
