/* elementwise.c: fill, copy, unary, binary and where for every dtype.
 *
 * The reference tier (reference/elementwise.py) is one loop per kernel plus a
 * table of per-element functions. This file has the same shape:
 *
 *   1. scalar operations, one short macro or inline function each, written
 *      once for every C type (_Generic picks a variant where ints and floats
 *      differ);
 *   2. one *inner loop* template per kernel (see gt_iter.h), expanded by the
 *      preprocessor for every (operation, dtype) pair into a small function;
 *   3. tables from (operation, dtype) to those functions, which the exported
 *      gt_* functions index, then hand to the strided driver gt_iter_run.
 *
 * So an operation is one line in a list, never a copied loop.
 *
 * Each inner loop has a contiguous version (all operands advance one element
 * per step) written as a plain counted loop over typed pointers: GCC turns it
 * into SIMD code at -O3. Binary loops also have versions for a scalar operand
 * (a stride-0 input, as in `x * 2`), which vectorise just as well. Everything
 * else takes the general strided version.
 *
 * A loop vectorises only if everything it calls is inlined arithmetic. libm's
 * expf, logf and tanhf are opaque calls, so float32 exp, expm1, log, tanh and
 * sigmoid use the branch-free versions of gt_math.h instead (within a few ulp,
 * 16 elements per AVX-512 instruction). float64 and integer inputs keep libm,
 * whose double results are what the reference computes.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elementwise.h"
#include "gt_convert.h"
#include "gt_iter.h"
#include "gt_math.h"

/* ------------------------------------------------------------------ helpers */

/* Integers wrap around on overflow, as in PyTorch. Signed overflow is
 * undefined in C, so arithmetic on int32/int64 runs on the unsigned type of
 * the same width (which wraps by definition); the result is converted back
 * when stored. uint8 and bool promote to int, which cannot overflow here. */
#define GT_WRAPPING(x) _Generic((x), int32_t: (uint32_t)(x), int64_t: (uint64_t)(x), default: (x))

/* A math.h function in the precision of its argument: expf for float, exp for
 * double, and exp (in double) for integer arguments. */
#define GT_MATH(fn, x) _Generic((x), float: fn##f, default: fn)(x)

/* The same, but float takes gt_math.h's vectorisable gt_<fn>_f32. */
#define GT_FAST_MATH(fn, x) _Generic((x), float: gt_##fn##_f32, default: fn)(x)

static inline int64_t gt_identity_int(int64_t x) { return x; }

/* floor/ceil/round/trunc leave integers as they are. */
#define GT_ROUNDING(fn, x) \
    _Generic((x), float: fn##f, double: fn, default: gt_identity_int)(x)

static inline int32_t gt_abs_i32(int32_t x) { return x < 0 ? (int32_t)(0u - (uint32_t)x) : x; }
static inline int64_t gt_abs_i64(int64_t x) { return x < 0 ? (int64_t)(0u - (uint64_t)x) : x; }

/* 1 / (1 + e^-x) in two forms, each of which never overflows on its half.
 * (float32 uses gt_sigmoid_f32 of gt_math.h, which vectorises.) */
static inline double gt_sigmoid_f64(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* Floats, as PyTorch (and Python's //): the quotient of a - fmod(a, b), a
 * whole multiple of b, less 1 where the remainder's sign says so, rounded to
 * the nearest whole number; a zero quotient keeps the sign of a / b. So an
 * infinite a gives NaN, a finite a over an infinite b gives 0 or -1, and
 * b == 0 gives the IEEE quotient. Computed in double for float32 too, as the
 * reference does. */
static inline double gt_floor_divide_f64(double a, double b)
{
    if (b == 0) return a / b;
    const double mod = fmod(a, b);
    double q = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) q -= 1.0;
    if (q == 0) return copysign(0.0, a / b);
    const double floored = floor(q);
    return q - floored > 0.5 ? floored + 1.0 : floored;
}

/* Integers, as Python's //: round toward minus infinity. Division by zero is
 * ruled out by the frontend; the guards only keep a mistake from trapping, and
 * b == -1 is done by negation because INT64_MIN / -1 traps on x86. int32 and
 * uint8 arrive promoted to int64, where they cannot overflow. */
static inline int64_t gt_floor_divide_int(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0u - (uint64_t)a);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}

/* torch.remainder: the remainder takes the sign of the divisor. A zero keeps
 * fmod's sign, that of a (-0.0 % 1 is -0.0), as in PyTorch. */
static inline double gt_remainder_f64(double a, double b)
{
    double r = fmod(a, b); /* exact, with the sign of a; NaN for b == 0 or infinite a */
    if (r != 0 && ((b < 0) != (r < 0))) r += b;
    return r;
}
static inline int64_t gt_remainder_int(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

/* IEEE pow: 0 to a negative power is inf, -inf for -0.0 to an odd integer power. */
static inline double gt_pow_f64(double a, double b) { return pow(a, b); }

/* Integer power by repeated squaring: a^b = (a^2)^(b/2) * (a if b is odd).
 * The product runs in uint64_t, so it wraps around modulo 2^64; the low bits
 * are then also right for int32 and uint8. A negative exponent (which the
 * frontend rules out) gives what int(a ** b) would. */
static inline int64_t gt_pow_int(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t base = (uint64_t)a, result = 1;
    for (uint64_t e = (uint64_t)b; e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
    }
    return (int64_t)result;
}

/* --------------------------------------------------------- the scalar ops
 * UNARY_<NAME>(x) and BINARY_<NAME>(x, y) compute one element; the loop then
 * stores the result with GT_CAST_<out dtype> (gt_convert.h). Integer inputs to
 * the float functions (exp, sqrt, ...) are computed in double, then stored
 * with the float-to-int rule, exactly as the reference does. */

#define UNARY_NEG(x) _Generic((x), float: -(x), double: -(x), default: 0 - GT_WRAPPING(x))
#define UNARY_ABS(x) \
    _Generic((x), float: fabsf, double: fabs, int32_t: gt_abs_i32, int64_t: gt_abs_i64, \
             default: gt_identity_int)(x)
#define UNARY_EXP(x) GT_FAST_MATH(exp, x)
#define UNARY_LOG(x) GT_FAST_MATH(log, x)
#define UNARY_LOG1P(x) GT_MATH(log1p, x)
#define UNARY_EXPM1(x) GT_FAST_MATH(expm1, x)
#define UNARY_SQRT(x) GT_MATH(sqrt, x)
#define UNARY_RSQRT(x) (_Generic((x), float: 1.0f, default: 1.0) / GT_MATH(sqrt, x)) /* -0 -> -inf */
#define UNARY_RECIPROCAL(x) (_Generic((x), float: 1.0f, default: 1.0) / (x))
#define UNARY_SIN(x) GT_MATH(sin, x)
#define UNARY_COS(x) GT_MATH(cos, x)
#define UNARY_TANH(x) GT_FAST_MATH(tanh, x)
#define UNARY_ERF(x) GT_MATH(erf, x)
#define UNARY_SIGMOID(x) _Generic((x), float: gt_sigmoid_f32, default: gt_sigmoid_f64)(x)
#define UNARY_RELU(x) ((x) < 0 ? 0 : (x)) /* NaN passes through */
#define UNARY_SIGN(x) (((x) > 0) - ((x) < 0)) /* NaN gives 0, as in PyTorch */
#define UNARY_FLOOR(x) GT_ROUNDING(floor, x)
#define UNARY_CEIL(x) GT_ROUNDING(ceil, x)
#define UNARY_ROUND(x) GT_ROUNDING(nearbyint, x) /* default rounding: half to even */
#define UNARY_TRUNC(x) GT_ROUNDING(trunc, x)
#define UNARY_LOGICAL_NOT(x) ((x) == 0)
#define UNARY_BITWISE_NOT(x) (~(x)) /* integer dtypes only; bool uses logical_not */
#define UNARY_ISNAN(x) ((x) != (x))

#define BINARY_ADD(x, y) (GT_WRAPPING(x) + GT_WRAPPING(y))
#define BINARY_SUB(x, y) (GT_WRAPPING(x) - GT_WRAPPING(y))
#define BINARY_MUL(x, y) (GT_WRAPPING(x) * GT_WRAPPING(y))
#define BINARY_DIV(x, y) (_Generic((x), float: (x), default: (double)(x)) / (y))
#define BINARY_FLOOR_DIVIDE(x, y) \
    _Generic((x), float: gt_floor_divide_f64, double: gt_floor_divide_f64, \
             default: gt_floor_divide_int)(x, y)
#define BINARY_REMAINDER(x, y) \
    _Generic((x), float: gt_remainder_f64, double: gt_remainder_f64, \
             default: gt_remainder_int)(x, y)
#define BINARY_POW(x, y) \
    _Generic((x), float: gt_pow_f64, double: gt_pow_f64, default: gt_pow_int)(x, y)
#define BINARY_MAXIMUM(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y)) /* a NaN wins */
#define BINARY_MINIMUM(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define BINARY_EQ(x, y) ((x) == (y))
#define BINARY_NE(x, y) ((x) != (y))
#define BINARY_LT(x, y) ((x) < (y))
#define BINARY_LE(x, y) ((x) <= (y))
#define BINARY_GT(x, y) ((x) > (y))
#define BINARY_GE(x, y) ((x) >= (y))
#define BINARY_LOGICAL_AND(x, y) (((x) != 0) & ((y) != 0))
#define BINARY_LOGICAL_OR(x, y) (((x) != 0) | ((y) != 0))
#define BINARY_LOGICAL_XOR(x, y) (((x) != 0) ^ ((y) != 0))
#define BINARY_BITWISE_AND(x, y) ((x) & (y))
#define BINARY_BITWISE_OR(x, y) ((x) | (y))
#define BINARY_BITWISE_XOR(x, y) ((x) ^ (y))
/* ReLU's gradient: a compare and a select, which vectorise as a masked move. */
#define BINARY_THRESHOLD_BACKWARD(x, y) ((y) <= 0 ? 0 : (x))

/* ------------------------------------------------------------- the op lists
 * X(NAME, RESULT): RESULT is SAME (out has the input's dtype) or BOOL. The
 * bitwise operations have no meaning on floats, so they get their own lists,
 * expanded for the integer dtypes only. */

#define UNARY_OPS(X, CODE, CTYPE)                                              \
    X(NEG, SAME, CODE, CTYPE) X(ABS, SAME, CODE, CTYPE) X(EXP, SAME, CODE, CTYPE) \
    X(LOG, SAME, CODE, CTYPE) X(LOG1P, SAME, CODE, CTYPE)                      \
    X(EXPM1, SAME, CODE, CTYPE) X(SQRT, SAME, CODE, CTYPE)                     \
    X(RSQRT, SAME, CODE, CTYPE) X(RECIPROCAL, SAME, CODE, CTYPE)               \
    X(SIN, SAME, CODE, CTYPE) X(COS, SAME, CODE, CTYPE)                        \
    X(TANH, SAME, CODE, CTYPE) X(SIGMOID, SAME, CODE, CTYPE)                   \
    X(ERF, SAME, CODE, CTYPE)                                                  \
    X(RELU, SAME, CODE, CTYPE) X(SIGN, SAME, CODE, CTYPE)                      \
    X(FLOOR, SAME, CODE, CTYPE) X(CEIL, SAME, CODE, CTYPE)                     \
    X(ROUND, SAME, CODE, CTYPE) X(TRUNC, SAME, CODE, CTYPE)                    \
    X(LOGICAL_NOT, BOOL, CODE, CTYPE) X(ISNAN, BOOL, CODE, CTYPE)
#define UNARY_INTEGER_OPS(X, CODE, CTYPE) X(BITWISE_NOT, SAME, CODE, CTYPE)

#define BINARY_OPS(X, CODE, CTYPE)                                             \
    X(ADD, SAME, CODE, CTYPE) X(SUB, SAME, CODE, CTYPE) X(MUL, SAME, CODE, CTYPE) \
    X(DIV, SAME, CODE, CTYPE) X(FLOOR_DIVIDE, SAME, CODE, CTYPE)               \
    X(REMAINDER, SAME, CODE, CTYPE) X(POW, SAME, CODE, CTYPE)                  \
    X(MAXIMUM, SAME, CODE, CTYPE) X(MINIMUM, SAME, CODE, CTYPE)                \
    X(EQ, BOOL, CODE, CTYPE) X(NE, BOOL, CODE, CTYPE) X(LT, BOOL, CODE, CTYPE) \
    X(LE, BOOL, CODE, CTYPE) X(GT, BOOL, CODE, CTYPE) X(GE, BOOL, CODE, CTYPE) \
    X(LOGICAL_AND, BOOL, CODE, CTYPE) X(LOGICAL_OR, BOOL, CODE, CTYPE)         \
    X(LOGICAL_XOR, BOOL, CODE, CTYPE) X(THRESHOLD_BACKWARD, SAME, CODE, CTYPE)
#define BINARY_INTEGER_OPS(X, CODE, CTYPE)                                     \
    X(BITWISE_AND, SAME, CODE, CTYPE) X(BITWISE_OR, SAME, CODE, CTYPE)         \
    X(BITWISE_XOR, SAME, CODE, CTYPE)

/* The integer dtypes. bool (a uint8_t 0 or 1) joins them for the binary
 * bitwise ops; its bitwise not is logical not (see gt_unary). */
#define FOR_EACH_INTEGER_DTYPE(X) \
    X(GT_UINT8, uint8_t)          \
    X(GT_INT32, int32_t)          \
    X(GT_INT64, int64_t)
#define FOR_EACH_INTEGER_OR_BOOL_DTYPE(X) X(GT_BOOL, uint8_t) FOR_EACH_INTEGER_DTYPE(X)

/* Output dtype code and C type of a RESULT kind. */
#define OUT_CODE_SAME(CODE) CODE
#define OUT_CODE_BOOL(CODE) GT_BOOL
#define OUT_CTYPE_SAME(CTYPE) CTYPE
#define OUT_CTYPE_BOOL(CTYPE) uint8_t
/* GT_CAST_<code>(x), with the code macro-expanded first. */
#define CAST_TO(CODE, x) CAST_TO_(CODE, x)
#define CAST_TO_(CODE, x) GT_CAST_##CODE(x)

/* ----------------------------------------------------- inner-loop templates */

/* out[i] = EXPR, where EXPR reads x (from input a). ATTR is empty, or
 * GT_MEMORY_BOUND for a loop that only moves data (a copy). */
#define DEFINE_UNARY_LOOP(ATTR, NAME, TIN, TOUT, EXPR)                                  \
    ATTR static void NAME(char **p, const int64_t *s, int64_t n, const void *extra)     \
    {                                                                                   \
        (void)extra;                                                                    \
        TOUT *o = (TOUT *)p[0];                                                         \
        const TIN *a = (const TIN *)p[1];                                               \
        if (s[0] == sizeof(TOUT) && s[1] == sizeof(TIN)) { /* contiguous: SIMD */       \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN x = a[i];                                                     \
                o[i] = EXPR;                                                            \
            }                                                                           \
        } else { /* strided, in elements */                                             \
            const int64_t so = s[0] / (int64_t)sizeof(TOUT), sa = s[1] / (int64_t)sizeof(TIN); \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN x = a[i * sa];                                                \
                o[i * so] = EXPR;                                                       \
            }                                                                           \
        }                                                                               \
    }

/* out[i] = EXPR, where EXPR reads x (from a) and y (from b). Binary ops are
 * cheap next to the bytes they move (pow aside), so the loop is GT_MEMORY_BOUND. */
#define DEFINE_BINARY_LOOP(NAME, TIN, TOUT, EXPR)                                       \
    GT_MEMORY_BOUND static void NAME(char **p, const int64_t *s, int64_t n,             \
                                     const void *extra)                                 \
    {                                                                                   \
        (void)extra;                                                                    \
        TOUT *o = (TOUT *)p[0];                                                         \
        const TIN *a = (const TIN *)p[1], *b = (const TIN *)p[2];                       \
        const int64_t so = s[0] / (int64_t)sizeof(TOUT);                                \
        const int64_t sa = s[1] / (int64_t)sizeof(TIN), sb = s[2] / (int64_t)sizeof(TIN); \
        if (so == 1 && sa == 1 && sb == 1) { /* contiguous: SIMD */                     \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN x = a[i], y = b[i];                                           \
                o[i] = EXPR;                                                            \
            }                                                                           \
        } else if (so == 1 && sa == 1 && sb == 0) { /* b is one value: keep it in a register */ \
            const TIN y = b[0];                                                         \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN x = a[i];                                                     \
                o[i] = EXPR;                                                            \
            }                                                                           \
        } else if (so == 1 && sa == 0 && sb == 1) { /* a is one value */                \
            const TIN x = a[0];                                                         \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN y = b[i];                                                     \
                o[i] = EXPR;                                                            \
            }                                                                           \
        } else { /* strided */                                                          \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TIN x = a[i * sa], y = b[i * sb];                                 \
                o[i * so] = EXPR;                                                       \
            }                                                                           \
        }                                                                               \
    }

/* ------------------------------------------------------------------- unary */

/* How the op lists become code. The lists are "X macros": UNARY_OPS(X, CODE,
 * CTYPE) calls X once per operation. DEFINE_UNARY_FOR(CODE, CTYPE) passes
 * DEFINE_UNARY as X, and GT_FOR_EACH_DTYPE calls DEFINE_UNARY_FOR once per
 * dtype, so every (operation, dtype) pair gets its own inner loop. For
 * example, X(SIGMOID, SAME, GT_FLOAT32, float) becomes
 *
 *     static void unary_SIGMOID_GT_FLOAT32(char **p, const int64_t *s, int64_t n,
 *                                          const void *extra)
 *     {
 *         (void)extra;
 *         float *o = (float *)p[0];
 *         const float *a = (const float *)p[1];
 *         if (s[0] == sizeof(float) && s[1] == sizeof(float)) { // contiguous: SIMD
 *             for (int64_t i = 0; i < n; i++) {
 *                 const float x = a[i];
 *                 o[i] = ((float)(double)(gt_sigmoid_f32(x)));
 *             }
 *         } else { // strided, in elements
 *             const int64_t so = s[0] / (int64_t)sizeof(float),
 *                           sa = s[1] / (int64_t)sizeof(float);
 *             for (int64_t i = 0; i < n; i++) {
 *                 const float x = a[i * sa];
 *                 o[i * so] = ((float)(double)(gt_sigmoid_f32(x)));
 *             }
 *         }
 *     }
 *
 * (SAME: the output has the input's type; UNARY_SIGMOID picked the float
 * version through _Generic; GT_CAST_GT_FLOAT32 is the cast to the output.)
 * UNARY_ENTRY then files it in the dispatch table as
 * unary_table[GT_UNARY_SIGMOID][GT_FLOAT32], which gt_unary indexes with the
 * op code and the input's dtype code. */

#define DEFINE_UNARY(OP, RESULT, CODE, CTYPE)                                           \
    DEFINE_UNARY_LOOP(, unary_##OP##_##CODE, CTYPE, OUT_CTYPE_##RESULT(CTYPE),          \
                      CAST_TO(OUT_CODE_##RESULT(CODE), UNARY_##OP(x)))
#define DEFINE_UNARY_FOR(CODE, CTYPE) UNARY_OPS(DEFINE_UNARY, CODE, CTYPE)
#define DEFINE_UNARY_INTEGER_FOR(CODE, CTYPE) UNARY_INTEGER_OPS(DEFINE_UNARY, CODE, CTYPE)
GT_FOR_EACH_DTYPE(DEFINE_UNARY_FOR)
FOR_EACH_INTEGER_DTYPE(DEFINE_UNARY_INTEGER_FOR)

#define UNARY_ENTRY(OP, RESULT, CODE, CTYPE) [GT_UNARY_##OP][CODE] = unary_##OP##_##CODE,
#define UNARY_ENTRIES_FOR(CODE, CTYPE) UNARY_OPS(UNARY_ENTRY, CODE, CTYPE)
#define UNARY_INTEGER_ENTRIES_FOR(CODE, CTYPE) UNARY_INTEGER_OPS(UNARY_ENTRY, CODE, CTYPE)

/* unary_table[op][input dtype]: the inner loop, or NULL where undefined. */
static const gt_inner_loop unary_table[GT_UNARY_COUNT][6] = {
    GT_FOR_EACH_DTYPE(UNARY_ENTRIES_FOR) FOR_EACH_INTEGER_DTYPE(UNARY_INTEGER_ENTRIES_FOR)
};

/* Whether each op's output is bool whatever the input is: read off the
 * RESULT column of the op lists, so the lists stay the one source. */
#define RESULT_IS_BOOL_SAME 0
#define RESULT_IS_BOOL_BOOL 1
#define UNARY_RESULT_ENTRY(OP, RESULT, CODE, CTYPE) [GT_UNARY_##OP] = RESULT_IS_BOOL_##RESULT,
static const unsigned char unary_result_bool[GT_UNARY_COUNT] = {
    UNARY_OPS(UNARY_RESULT_ENTRY, , ) UNARY_INTEGER_OPS(UNARY_RESULT_ENTRY, , )
};
static int unary_result_is_bool(int op) { return unary_result_bool[op]; }

static int valid_dtype(int32_t dtype) { return dtype >= GT_BOOL && dtype <= GT_FLOAT64; }

int gt_unary(int op, gt_view *out, const gt_view *a)
{
    if (op < 0 || op >= GT_UNARY_COUNT || !valid_dtype(a->dtype)) return -1;
    /* On bool, ~x would turn 1 into 254 (true): bitwise not is logical not. */
    if (op == GT_UNARY_BITWISE_NOT && a->dtype == GT_BOOL) op = GT_UNARY_LOGICAL_NOT;
    const gt_inner_loop loop = unary_table[op][a->dtype];
    const int32_t expected = unary_result_is_bool(op) ? GT_BOOL : a->dtype;
    if (loop == NULL || out->dtype != expected) return -1;

    const gt_view *views[2] = {out, a};
    gt_iter it;
    gt_iter_init(&it, 2, views);
    gt_iter_run(&it, loop, NULL);
    return 0;
}

/* ------------------------------------------------------------------ binary */

#define DEFINE_BINARY(OP, RESULT, CODE, CTYPE)                                          \
    DEFINE_BINARY_LOOP(binary_##OP##_##CODE, CTYPE, OUT_CTYPE_##RESULT(CTYPE),         \
                       CAST_TO(OUT_CODE_##RESULT(CODE), BINARY_##OP(x, y)))
#define DEFINE_BINARY_FOR(CODE, CTYPE) BINARY_OPS(DEFINE_BINARY, CODE, CTYPE)
#define DEFINE_BINARY_INTEGER_FOR(CODE, CTYPE) BINARY_INTEGER_OPS(DEFINE_BINARY, CODE, CTYPE)
GT_FOR_EACH_DTYPE(DEFINE_BINARY_FOR)
FOR_EACH_INTEGER_OR_BOOL_DTYPE(DEFINE_BINARY_INTEGER_FOR)

#define BINARY_ENTRY(OP, RESULT, CODE, CTYPE) [GT_BINARY_##OP][CODE] = binary_##OP##_##CODE,
#define BINARY_ENTRIES_FOR(CODE, CTYPE) BINARY_OPS(BINARY_ENTRY, CODE, CTYPE)
#define BINARY_INTEGER_ENTRIES_FOR(CODE, CTYPE) BINARY_INTEGER_OPS(BINARY_ENTRY, CODE, CTYPE)

/* binary_table[op][input dtype]: the inner loop, or NULL where undefined. */
static const gt_inner_loop binary_table[GT_BINARY_COUNT][6] = {
    GT_FOR_EACH_DTYPE(BINARY_ENTRIES_FOR) FOR_EACH_INTEGER_OR_BOOL_DTYPE(BINARY_INTEGER_ENTRIES_FOR)
};

#define BINARY_RESULT_ENTRY(OP, RESULT, CODE, CTYPE) [GT_BINARY_##OP] = RESULT_IS_BOOL_##RESULT,
static const unsigned char binary_result_bool[GT_BINARY_COUNT] = {
    BINARY_OPS(BINARY_RESULT_ENTRY, , ) BINARY_INTEGER_OPS(BINARY_RESULT_ENTRY, , )
};
static int binary_result_is_bool(int op) { return binary_result_bool[op]; }

int gt_binary(int op, gt_view *out, const gt_view *a, const gt_view *b)
{
    if (op < 0 || op >= GT_BINARY_COUNT || !valid_dtype(a->dtype) || b->dtype != a->dtype)
        return -1;
    const gt_inner_loop loop = binary_table[op][a->dtype];
    const int32_t expected = binary_result_is_bool(op) ? GT_BOOL : a->dtype;
    if (loop == NULL || out->dtype != expected) return -1;

    const gt_view *views[3] = {out, a, b};
    gt_iter it;
    gt_iter_init(&it, 3, views);
    gt_iter_run(&it, loop, NULL);
    return 0;
}

/* Optimization (a fresh output's struct filled in C): an operation's new
 * output is usually laid out as its first operand. Its struct is then `a`'s
 * shape and strides with its own data, offset and dtype, filled here in the
 * same call as the computation: from Python that would be a copy of a's
 * struct and a field assignment, two more crossings per operation, and a
 * one-element add is mostly such fixed costs. */
int gt_binary_fresh(int op, gt_view *out, char *out_data, int64_t out_offset, int32_t out_dtype,
                    const gt_view *a, const gt_view *b)
{
    if (a->ndim < 0 || a->ndim > GT_MAX_DIMS) return -1;
    out->data = out_data;
    out->offset = out_offset;
    out->ndim = a->ndim;
    out->dtype = out_dtype;
    memcpy(out->shape, a->shape, (size_t)a->ndim * sizeof(int64_t));
    memcpy(out->strides, a->strides, (size_t)a->ndim * sizeof(int64_t));
    return gt_binary(op, out, a, b);
}

/* -------------------------------------------------------------- add_scaled
 * out = a + alpha * b in one pass: add's and sub's alpha without a temporary
 * tensor for alpha * b (one read of each input and one write, not three
 * passes). The loop is memory-bound, so floats compute in double for free and
 * round once when storing; integers compute in unsigned 64-bit arithmetic,
 * whose wrap-around is defined in C, and keep the low bits. `extra` points at
 * alpha (a double for floats, a uint64_t for integers). */

#define DEFINE_ADD_SCALED(NAME, CTYPE, ATYPE, EXPR)                                      \
    GT_MEMORY_BOUND static void NAME(char **p, const int64_t *s, int64_t n,             \
                                     const void *extra)                                 \
    {                                                                                   \
        const ATYPE alpha = *(const ATYPE *)extra;                                      \
        CTYPE *o = (CTYPE *)p[0];                                                       \
        const CTYPE *a = (const CTYPE *)p[1], *b = (const CTYPE *)p[2];                 \
        const int64_t so = s[0] / (int64_t)sizeof(CTYPE);                               \
        const int64_t sa = s[1] / (int64_t)sizeof(CTYPE), sb = s[2] / (int64_t)sizeof(CTYPE); \
        if (so == 1 && sa == 1 && sb == 1) { /* contiguous: SIMD */                     \
            for (int64_t i = 0; i < n; i++) {                                           \
                const CTYPE x = a[i], y = b[i];                                         \
                o[i] = EXPR;                                                            \
            }                                                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++) {                                           \
                const CTYPE x = a[i * sa], y = b[i * sb];                               \
                o[i * so] = EXPR;                                                       \
            }                                                                           \
        }                                                                               \
    }

DEFINE_ADD_SCALED(add_scaled_float32, float, double, (float)((double)x + alpha * (double)y))
DEFINE_ADD_SCALED(add_scaled_float64, double, double, x + alpha * y)
DEFINE_ADD_SCALED(add_scaled_uint8, uint8_t, uint64_t, (uint8_t)((uint64_t)x + alpha * (uint64_t)y))
DEFINE_ADD_SCALED(add_scaled_int32, int32_t, uint64_t,
                  (int32_t)(uint32_t)((uint64_t)(int64_t)x + alpha * (uint64_t)(int64_t)y))
DEFINE_ADD_SCALED(add_scaled_int64, int64_t, uint64_t,
                  (int64_t)((uint64_t)x + alpha * (uint64_t)y))

int gt_add_scaled(gt_view *out, const gt_view *a, const gt_view *b, double falpha,
                  int64_t ialpha)
{
    if (a->dtype != out->dtype || b->dtype != out->dtype) return -1;
    const double float_alpha = out->dtype == GT_FLOAT32 ? (double)(float)falpha : falpha;
    const uint64_t int_alpha = (uint64_t)ialpha;
    gt_inner_loop loop;
    const void *extra = &int_alpha;
    switch (out->dtype) {
    case GT_UINT8: loop = add_scaled_uint8; break;
    case GT_INT32: loop = add_scaled_int32; break;
    case GT_INT64: loop = add_scaled_int64; break;
    case GT_FLOAT32: loop = add_scaled_float32; extra = &float_alpha; break;
    case GT_FLOAT64: loop = add_scaled_float64; extra = &float_alpha; break;
    default: return -1; /* bool, or not a dtype */
    }
    const gt_view *views[3] = {out, a, b};
    gt_iter it;
    gt_iter_init(&it, 3, views);
    gt_iter_run(&it, loop, extra);
    return 0;
}

/* -------------------------------------------------------------- copy, cast
 * One inner loop per (destination, source) pair: 36 of them, from two nested
 * dtype lists. The conversion is GT_CAST_<destination>, so a same-dtype copy
 * is a plain load and store (which GCC vectorises), and a cast is one
 * conversion per element. Reading and writing each element in the same step
 * makes copying a view onto itself harmless. */

#define DEFINE_COPY(DST, DTYPE, SRC, STYPE) \
    DEFINE_UNARY_LOOP(GT_MEMORY_BOUND, copy_##DST##_##SRC, STYPE, DTYPE, GT_CAST_##DST(x))
#define DEFINE_COPY_FROM_EACH(DST, DTYPE)     \
    DEFINE_COPY(DST, DTYPE, GT_BOOL, uint8_t)  \
    DEFINE_COPY(DST, DTYPE, GT_UINT8, uint8_t) \
    DEFINE_COPY(DST, DTYPE, GT_INT32, int32_t) \
    DEFINE_COPY(DST, DTYPE, GT_INT64, int64_t) \
    DEFINE_COPY(DST, DTYPE, GT_FLOAT32, float) \
    DEFINE_COPY(DST, DTYPE, GT_FLOAT64, double)
GT_FOR_EACH_DTYPE(DEFINE_COPY_FROM_EACH)

#define COPY_ROW(DST, DTYPE)                                                           \
    [DST] = {copy_##DST##_GT_BOOL, copy_##DST##_GT_UINT8, copy_##DST##_GT_INT32,       \
             copy_##DST##_GT_INT64, copy_##DST##_GT_FLOAT32, copy_##DST##_GT_FLOAT64},

/* copy_table[destination dtype][source dtype]. */
static const gt_inner_loop copy_table[6][6] = {GT_FOR_EACH_DTYPE(COPY_ROW)};

int gt_copy(gt_view *out, const gt_view *src)
{
    if (!valid_dtype(out->dtype) || !valid_dtype(src->dtype)) return -1;
    const gt_view *views[2] = {out, src};
    gt_iter it;
    gt_iter_init(&it, 2, views);
    gt_iter_run(&it, copy_table[out->dtype][src->dtype], NULL);
    return 0;
}

/* -------------------------------------------------------------------- fill
 * The value is converted once, outside the loop; the loop then only stores,
 * and `extra` points at the converted value. */

#define DEFINE_FILL(CODE, CTYPE)                                                        \
    GT_MEMORY_BOUND static void fill_##CODE(char **p, const int64_t *s, int64_t n,      \
                                            const void *extra)                          \
    {                                                                                   \
        const CTYPE value = *(const CTYPE *)extra;                                      \
        CTYPE *o = (CTYPE *)p[0];                                                       \
        const int64_t so = s[0] / (int64_t)sizeof(CTYPE);                               \
        if (so == 1) {                                                                  \
            for (int64_t i = 0; i < n; i++) o[i] = value;                               \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++) o[i * so] = value;                          \
        }                                                                               \
    }
GT_FOR_EACH_DTYPE(DEFINE_FILL)

static int fill_with(gt_view *out, const void *value)
{
    static const gt_inner_loop fill_table[6] = {fill_GT_BOOL, fill_GT_UINT8, fill_GT_INT32,
                                                fill_GT_INT64, fill_GT_FLOAT32, fill_GT_FLOAT64};
    const gt_view *views[1] = {out};
    gt_iter it;
    gt_iter_init(&it, 1, views);
    gt_iter_run(&it, fill_table[out->dtype], value);
    return 0;
}

/* Converted value of each dtype; `value` holds the one for out's dtype. */
typedef union {
    uint8_t u8;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
} gt_scalar;

#define SET_SCALAR(x)                                                       \
    switch (out->dtype) {                                                   \
    case GT_BOOL: value.u8 = GT_CAST_GT_BOOL(x); break;                     \
    case GT_UINT8: value.u8 = GT_CAST_GT_UINT8(x); break;                   \
    case GT_INT32: value.i32 = GT_CAST_GT_INT32(x); break;                  \
    case GT_INT64: value.i64 = GT_CAST_GT_INT64(x); break;                  \
    case GT_FLOAT32: value.f32 = GT_CAST_GT_FLOAT32(x); break;              \
    case GT_FLOAT64: value.f64 = GT_CAST_GT_FLOAT64(x); break;              \
    default: return -1;                                                     \
    }

int gt_fill_int(gt_view *out, int64_t x)
{
    gt_scalar value;
    SET_SCALAR(x);
    return fill_with(out, &value);
}

int gt_fill_float(gt_view *out, double x)
{
    gt_scalar value;
    SET_SCALAR(x);
    return fill_with(out, &value);
}

/* ------------------------------------------------------------------- where
 * where only moves values, never computes with them, so it needs one loop per
 * element *size*, not per dtype: a float is moved as its 4 bytes. */

#define DEFINE_WHERE(BITS)                                                              \
    GT_MEMORY_BOUND static void where_##BITS(char **p, const int64_t *s, int64_t n,     \
                                             const void *extra)                         \
    {                                                                                   \
        (void)extra;                                                                    \
        typedef uint##BITS##_t T;                                                       \
        T *o = (T *)p[0];                                                               \
        const uint8_t *c = (const uint8_t *)p[1];                                       \
        const T *a = (const T *)p[2], *b = (const T *)p[3];                             \
        const int64_t so = s[0] / (int64_t)sizeof(T), sc = s[1];                        \
        const int64_t sa = s[2] / (int64_t)sizeof(T), sb = s[3] / (int64_t)sizeof(T);   \
        if (so == 1 && sc == 1 && sa == 1 && sb == 1) { /* contiguous: SIMD blend */    \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : b[i];                  \
        } else if (so == 1 && sc == 1 && sa == 1 && sb == 0) {                          \
            /* where(mask, x, 0.0): one value in a register, still a SIMD blend */     \
            const T bv = b[0];                                                          \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : bv;                    \
        } else if (so == 1 && sc == 1 && sa == 0 && sb == 1) {                          \
            const T av = a[0];                                                          \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? av : b[i];                    \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++) o[i * so] = c[i * sc] ? a[i * sa] : b[i * sb]; \
        }                                                                               \
    }
DEFINE_WHERE(8)
DEFINE_WHERE(32)
DEFINE_WHERE(64)

int gt_where(gt_view *out, const gt_view *cond, const gt_view *a, const gt_view *b)
{
    if (!valid_dtype(out->dtype) || a->dtype != out->dtype || b->dtype != out->dtype ||
        cond->dtype != GT_BOOL)
        return -1;
    const int size = gt_itemsize(out->dtype);
    const gt_inner_loop loop = size == 1 ? where_8 : size == 4 ? where_32 : where_64;
    const gt_view *views[4] = {out, cond, a, b};
    gt_iter it;
    gt_iter_init(&it, 4, views);
    gt_iter_run(&it, loop, NULL);
    return 0;
}
