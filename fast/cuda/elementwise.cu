// elementwise.cu - fill, copy, unary, binary and where, for every dtype and any strides.
//
// The CUDA twin of fast/csrc/elementwise.c, with the same shape:
//   1. scalar operations, one short device function each, written once as a
//      template for every C type (overloads pick float or double math);
//   2. op tables as X-macros (GT_UNARY_OPS, GT_BINARY_OPS): one line per
//      operation, whose code number the Python side sends
//      (glasstorch/fast/cuda/kernels/elementwise.py reads each code by its
//      name from these tables, as fast/elementwise.py reads the C enums);
//   3. one kernel template per contract kernel, instantiated for each dtype
//      by GT_FOR_EACH_DTYPE into extern "C" kernels named <kernel>_<suffix>.
//
// Every kernel is a grid-stride loop over the output's elements in row-major
// order. Operands are views: an address plus the shape and strides found in
// the `meta` array (gt_cuda_common.cuh). When every operand is contiguous the
// host passes meta = 0 and the kernel indexes them directly: no division per
// element, and neighbouring threads read neighbouring addresses (coalesced).
//
// The op is the same for every thread of a launch, so the switch on it never
// diverges within a warp.
#include "gt_cuda_common.cuh"

// Element i of operand k: directly when meta is 0 (all contiguous), else through its strides.
#define GT_AT(i, k) (meta ? gt_meta_offset((i), meta, ndim, (k)) : (i))

// ------------------------------------------------------------ math overloads
// gt_<fn>(x): the float function for float, the double one otherwise.
#define GT_MATH_FN(fn)                                                         \
    __device__ __forceinline__ float gt_##fn(float x) { return fn##f(x); }      \
    __device__ __forceinline__ double gt_##fn(double x) { return fn(x); }
GT_MATH_FN(fabs)
GT_MATH_FN(exp)
GT_MATH_FN(log)
GT_MATH_FN(log1p)
GT_MATH_FN(expm1)
GT_MATH_FN(sqrt)
GT_MATH_FN(sin)
GT_MATH_FN(cos)
GT_MATH_FN(tanh)
GT_MATH_FN(erf)
GT_MATH_FN(floor)
GT_MATH_FN(ceil)
GT_MATH_FN(rint)  // round half to even, as PyTorch's round
GT_MATH_FN(trunc)
#undef GT_MATH_FN

// The type a unary math function computes in: float for float, double otherwise
// (integer inputs to exp, sqrt, ... compute in double, as the CPU tiers do).
template <typename T>
struct gt_math_type {
    typedef double type;
};
template <>
struct gt_math_type<float> {
    typedef float type;
};

// 1 / (1 + e^-x) in two forms, each of which never overflows on its half.
template <typename F>
__device__ __forceinline__ F gt_sigmoid(F x) {
    if (x >= 0) return (F)1 / ((F)1 + gt_exp(-x));
    F e = gt_exp(x);
    return e / ((F)1 + e);
}

// Integer arithmetic wraps around: compute on 64-bit unsigned numbers, keep the low bits.
__device__ __forceinline__ unsigned long long gt_u64(long long x) { return (unsigned long long)x; }

// Floats, as Python's //: round toward minus infinity (see fast/csrc/elementwise.c).
__device__ __forceinline__ double gt_floor_divide_f64(double a, double b) {
    if (b == 0) return a / b;
    double mod = fmod(a, b);
    double q = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) q -= 1.0;
    if (q == 0) return copysign(0.0, a / b);
    double floored = floor(q);
    return q - floored > 0.5 ? floored + 1.0 : floored;
}
__device__ __forceinline__ long long gt_floor_divide_int(long long a, long long b) {
    if (b == 0) return 0;  // ruled out by the frontend
    if (b == -1) return (long long)(0ULL - gt_u64(a));
    long long q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}
// The remainder takes the sign of the divisor.
__device__ __forceinline__ double gt_remainder_f64(double a, double b) {
    double r = fmod(a, b);
    if (r != 0 && ((b < 0) != (r < 0))) r += b;
    return r;
}
__device__ __forceinline__ long long gt_remainder_int(long long a, long long b) {
    if (b == 0 || b == -1) return 0;
    long long r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
// Integer power by repeated squaring, wrapping modulo 2^64.
__device__ __forceinline__ long long gt_pow_int(long long a, long long b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    unsigned long long base = gt_u64(a), result = 1;
    for (unsigned long long e = gt_u64(b); e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
    }
    return (long long)result;
}

// Arithmetic by kind, chosen at compile time: gt_arith<true> for float and double,
// gt_arith<false> for bool and the integers.
template <bool IS_FLOAT>
struct gt_arith;

template <>
struct gt_arith<true> {  // float and double
    template <typename T>
    __device__ static T neg(T x) { return -x; }
    template <typename T>
    __device__ static T abs(T x) { return gt_fabs(x); }
    template <typename T>
    __device__ static T add(T x, T y) { return x + y; }
    template <typename T>
    __device__ static T sub(T x, T y) { return x - y; }
    template <typename T>
    __device__ static T mul(T x, T y) { return x * y; }
    template <typename T>
    __device__ static double floor_divide(T x, T y) { return gt_floor_divide_f64(x, y); }
    template <typename T>
    __device__ static double remainder(T x, T y) { return gt_remainder_f64(x, y); }
    template <typename T>
    __device__ static double power(T x, T y) { return pow((double)x, (double)y); }
    template <typename T>
    __device__ static T floor(T x) { return gt_floor(x); }
    template <typename T>
    __device__ static T ceil(T x) { return gt_ceil(x); }
    template <typename T>
    __device__ static T round(T x) { return gt_rint(x); }
    template <typename T>
    __device__ static T trunc(T x) { return gt_trunc(x); }
    template <typename T>
    __device__ static T bit_not(T x) { return x; }  // refused on floats by the host
    template <typename T>
    __device__ static T bit_and(T x, T y) { return x; }
    template <typename T>
    __device__ static T bit_or(T x, T y) { return x; }
    template <typename T>
    __device__ static T bit_xor(T x, T y) { return x; }
};

template <>
struct gt_arith<false> {  // bool, uint8, int32, int64: wrap around
    template <typename T>
    __device__ static long long neg(T x) { return (long long)(0ULL - gt_u64((long long)x)); }
    template <typename T>
    __device__ static long long abs(T x) {
        return x < 0 ? (long long)(0ULL - gt_u64((long long)x)) : (long long)x;
    }
    template <typename T>
    __device__ static long long add(T x, T y) {
        return (long long)(gt_u64((long long)x) + gt_u64((long long)y));
    }
    template <typename T>
    __device__ static long long sub(T x, T y) {
        return (long long)(gt_u64((long long)x) - gt_u64((long long)y));
    }
    template <typename T>
    __device__ static long long mul(T x, T y) {
        return (long long)(gt_u64((long long)x) * gt_u64((long long)y));
    }
    template <typename T>
    __device__ static long long floor_divide(T x, T y) {
        return gt_floor_divide_int((long long)x, (long long)y);
    }
    template <typename T>
    __device__ static long long remainder(T x, T y) {
        return gt_remainder_int((long long)x, (long long)y);
    }
    template <typename T>
    __device__ static long long power(T x, T y) { return gt_pow_int((long long)x, (long long)y); }
    template <typename T>
    __device__ static T floor(T x) { return x; }  // integers are whole already
    template <typename T>
    __device__ static T ceil(T x) { return x; }
    template <typename T>
    __device__ static T round(T x) { return x; }
    template <typename T>
    __device__ static T trunc(T x) { return x; }
    template <typename T>
    __device__ static long long bit_not(T x) { return ~(long long)x; }
    template <typename T>
    __device__ static long long bit_and(T x, T y) { return (long long)x & (long long)y; }
    template <typename T>
    __device__ static long long bit_or(T x, T y) { return (long long)x | (long long)y; }
    template <typename T>
    __device__ static long long bit_xor(T x, T y) { return (long long)x ^ (long long)y; }
};

// ------------------------------------------------------------------ op tables
// X(code, name, expression): the expression reads x (and y) of type T; M is the
// math type (float for float, double otherwise) and A the arithmetic helpers
// for T's kind. The Python side binds each code by its name (sources.op_codes).
#define GT_UNARY_OPS(X)                                                    \
    X(0, neg, A::neg(x))                                                   \
    X(1, abs, A::abs(x))                                                   \
    X(2, exp, gt_exp((M)x))                                                \
    X(3, log, gt_log((M)x))                                                \
    X(4, log1p, gt_log1p((M)x))                                            \
    X(5, expm1, gt_expm1((M)x))                                            \
    X(6, sqrt, gt_sqrt((M)x))                                              \
    X(7, rsqrt, (M)1 / gt_sqrt((M)x))                                      \
    X(8, reciprocal, (M)1 / (M)x)                                          \
    X(9, sin, gt_sin((M)x))                                                \
    X(10, cos, gt_cos((M)x))                                               \
    X(11, tanh, gt_tanh((M)x))                                             \
    X(12, sigmoid, gt_sigmoid((M)x))                                       \
    X(13, erf, gt_erf((M)x))                                               \
    X(14, relu, x < 0 ? (T)0 : x) /* NaN passes through */                 \
    X(15, sign, (int)(x > 0) - (int)(x < 0)) /* NaN gives 0 */             \
    X(16, floor, A::floor(x))                                              \
    X(17, ceil, A::ceil(x))                                                \
    X(18, round, A::round(x))                                              \
    X(19, trunc, A::trunc(x))                                              \
    X(20, logical_not, x == 0)                                             \
    X(21, bitwise_not, A::bit_not(x)) /* bool arrives as logical_not */    \
    X(22, isnan, x != x)

#define GT_BINARY_OPS(X)                                                   \
    X(0, add, A::add(x, y))                                                \
    X(1, sub, A::sub(x, y))                                                \
    X(2, mul, A::mul(x, y))                                                \
    X(3, div, (M)x / (M)y)                                                 \
    X(4, floor_divide, A::floor_divide(x, y))                              \
    X(5, remainder, A::remainder(x, y))                                    \
    X(6, pow, A::power(x, y))                                              \
    X(7, maximum, (x > y || x != x) ? x : y) /* a NaN wins */              \
    X(8, minimum, (x < y || x != x) ? x : y)                               \
    X(9, eq, x == y)                                                       \
    X(10, ne, x != y)                                                      \
    X(11, lt, x < y)                                                       \
    X(12, le, x <= y)                                                      \
    X(13, gt, x > y)                                                       \
    X(14, ge, x >= y)                                                      \
    X(15, logical_and, (x != 0) && (y != 0))                               \
    X(16, logical_or, (x != 0) || (y != 0))                                \
    X(17, logical_xor, (x != 0) != (y != 0))                               \
    X(18, bitwise_and, A::bit_and(x, y))                                   \
    X(19, bitwise_or, A::bit_or(x, y))                                     \
    X(20, bitwise_xor, A::bit_xor(x, y))                                   \
    X(21, threshold_backward, y <= 0 ? (T)0 : x)

#define GT_CASE(code, name, expression) \
    case code:                          \
        return gt_cast<OUT>(expression);

// op(x) for one element, stored as OUT (T itself, or bool for the predicates).
template <typename T, typename OUT>
__device__ __forceinline__ OUT gt_unary_op(int op, T x) {
    typedef typename gt_math_type<T>::type M;
    typedef gt_arith<gt_is_float<T>::value> A;
    switch (op) { GT_UNARY_OPS(GT_CASE) }
    return OUT();
}

// op(x, y) for one element, stored as OUT.
template <typename T, typename OUT>
__device__ __forceinline__ OUT gt_binary_op(int op, T x, T y) {
    typedef typename gt_math_type<T>::type M;
    typedef gt_arith<gt_is_float<T>::value> A;
    switch (op) { GT_BINARY_OPS(GT_CASE) }
    return OUT();
}
#undef GT_CASE

// ------------------------------------------------------------------- kernels

// out[i] = value. Floats take `fvalue`, integers and bool `ivalue` (already wrapped
// to 64 bits by the host), so an int64 keeps every bit.
template <typename T>
__device__ void fill_kernel(T *out, double fvalue, long long ivalue, const long long *meta,
                            int ndim, long long n) {
    const T value = gt_is_float<T>::value ? gt_cast<T>(fvalue) : gt_cast<T>(ivalue);
    GT_GRID_STRIDE_LOOP(i, n) out[GT_AT(i, 0)] = value;
}

// out[i] = src[i], converted with the CPU tiers' rules.
template <typename D, typename S>
__device__ void copy_kernel(D *out, const S *src, const long long *meta, int ndim, long long n) {
    GT_GRID_STRIDE_LOOP(i, n) out[GT_AT(i, 0)] = gt_cast<D>(src[GT_AT(i, 1)]);
}

template <typename T, typename OUT>
__device__ void unary_kernel(int op, OUT *out, const T *a, const long long *meta, int ndim,
                             long long n) {
    GT_GRID_STRIDE_LOOP(i, n) out[GT_AT(i, 0)] = gt_unary_op<T, OUT>(op, a[GT_AT(i, 1)]);
}

template <typename T, typename OUT>
__device__ void binary_kernel(int op, OUT *out, const T *a, const T *b, const long long *meta,
                              int ndim, long long n) {
    GT_GRID_STRIDE_LOOP(i, n) {
        out[GT_AT(i, 0)] = gt_binary_op<T, OUT>(op, a[GT_AT(i, 1)], b[GT_AT(i, 2)]);
    }
}

// out[i] = a[i] + alpha * b[i] in one pass (add's and sub's alpha). Floats compute in
// double and round once (alpha rounded to T first, as the CPU tiers do); integers in
// unsigned 64-bit arithmetic, which wraps, keeping the low bits. Bool is refused by the host.
template <typename T>
__device__ void add_scaled_kernel(T *out, const T *a, const T *b, double falpha,
                                  long long ialpha, const long long *meta, int ndim,
                                  long long n) {
    const double alpha = (double)(T)falpha;
    GT_GRID_STRIDE_LOOP(i, n) {
        const T x = a[GT_AT(i, 1)], y = b[GT_AT(i, 2)];
        if (gt_is_float<T>::value) {
            out[GT_AT(i, 0)] = (T)((double)x + alpha * (double)y);
        } else {
            out[GT_AT(i, 0)] = (T)((unsigned long long)(long long)x +
                                   (unsigned long long)ialpha * (unsigned long long)(long long)y);
        }
    }
}

template <typename T>
__device__ void where_kernel(T *out, const bool *cond, const T *a, const T *b,
                             const long long *meta, int ndim, long long n) {
    GT_GRID_STRIDE_LOOP(i, n) {
        out[GT_AT(i, 0)] = cond[GT_AT(i, 1)] ? a[GT_AT(i, 2)] : b[GT_AT(i, 3)];
    }
}

// ---------------------------------------------------- per-dtype instantiation
#define GT_ELEMENTWISE_KERNELS(T, S)                                                          \
    extern "C" __global__ void fill_##S(T *out, double fvalue, long long ivalue,              \
                                        const long long *meta, int ndim, long long n) {       \
        fill_kernel<T>(out, fvalue, ivalue, meta, ndim, n);                                   \
    }                                                                                         \
    extern "C" __global__ void unary_##S(int op, T *out, const T *a, const long long *meta,   \
                                         int ndim, long long n) {                             \
        unary_kernel<T, T>(op, out, a, meta, ndim, n);                                        \
    }                                                                                         \
    extern "C" __global__ void unary_bool_##S(int op, bool *out, const T *a,                  \
                                              const long long *meta, int ndim, long long n) { \
        unary_kernel<T, bool>(op, out, a, meta, ndim, n);                                     \
    }                                                                                         \
    extern "C" __global__ void binary_##S(int op, T *out, const T *a, const T *b,             \
                                          const long long *meta, int ndim, long long n) {     \
        binary_kernel<T, T>(op, out, a, b, meta, ndim, n);                                    \
    }                                                                                         \
    extern "C" __global__ void binary_bool_##S(int op, bool *out, const T *a, const T *b,     \
                                               const long long *meta, int ndim,               \
                                               long long n) {                                 \
        binary_kernel<T, bool>(op, out, a, b, meta, ndim, n);                                 \
    }                                                                                         \
    extern "C" __global__ void add_scaled_##S(T *out, const T *a, const T *b, double falpha,  \
                                              long long ialpha, const long long *meta,        \
                                              int ndim, long long n) {                        \
        add_scaled_kernel<T>(out, a, b, falpha, ialpha, meta, ndim, n);                       \
    }                                                                                         \
    extern "C" __global__ void where_##S(T *out, const bool *cond, const T *a, const T *b,    \
                                         const long long *meta, int ndim, long long n) {      \
        where_kernel<T>(out, cond, a, b, meta, ndim, n);                                      \
    }
GT_FOR_EACH_DTYPE(GT_ELEMENTWISE_KERNELS)

// copy_<destination>_<source>: the 36 pairs of dtypes.
#define GT_COPY_KERNEL(D, DS, S, SS)                                                     \
    extern "C" __global__ void copy_##DS##_##SS(D *out, const S *src,                    \
                                                const long long *meta, int ndim,         \
                                                long long n) {                           \
        copy_kernel<D, S>(out, src, meta, ndim, n);                                      \
    }
#define GT_COPY_KERNELS_TO(D, DS) GT_FOR_EACH_DTYPE_PAIR_WITH(GT_COPY_KERNEL, D, DS)
GT_FOR_EACH_DTYPE(GT_COPY_KERNELS_TO)
