/* gt_convert.h: storing a number into a dtype, with the reference tier's rules.
 *
 * Every kernel that writes a value of one type into a buffer of another goes
 * through these macros, so the conversion rules live in one place. They are the
 * rules of reference/strided.py (which are also what PyTorch does on x86):
 *
 *   to bool        x != 0                       (NaN is true)
 *   to float64     the nearest double
 *   to float32     the nearest double, then the nearest float (too large: inf)
 *   int to int     keep the low bits: wrap around modulo 2^bits
 *   float to int   truncate toward zero, as x86's cvttsd2si: into int32 or
 *                  int64, NaN, infinities and numbers outside the type's range
 *                  give the type's minimum (the "integer indefinite"); uint8
 *                  goes through int64 (as compilers do), then keeps 8 bits
 *
 * Plain C casts already do most of this. Two cases need care, because C leaves
 * them undefined and a compiler may then produce anything (on ARM, say, the
 * conversion saturates instead):
 *   - a float outside the integer type's range;
 *   - NaN or an infinity converted to an integer.
 *
 * GT_CAST_<CODE>(x) converts a value of any C type to dtype CODE's C type.
 * _Generic (C11) picks the right helper from the type of x at compile time, so
 * each kernel writes its loop once and stays a plain, vectorisable expression
 * when no conversion is needed.
 */
#ifndef GT_CONVERT_H
#define GT_CONVERT_H

#include <math.h>
#include <stdint.h>

/* Float to each integer type, as x86 converts: truncate toward zero when the
 * result fits; otherwise (NaN, +-inf, out of range) the type's minimum. The
 * range test is one pair of comparisons, false for NaN, so the loop that calls
 * it stays branch-free and vectorises (a select, not a jump). -2^31 - 1 is a
 * double exactly, and anything above it truncates to at least -2^31. */
static inline int64_t gt_double_to_int64(double x)
{
    const double two63 = 9223372036854775808.0;
    return (x >= -two63 && x < two63) ? (int64_t)x : INT64_MIN;
}
static inline int32_t gt_double_to_int32(double x)
{
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static inline uint8_t gt_double_to_uint8(double x)
{
    return (uint8_t)gt_double_to_int64(x);
}

/* Integer to integer: the cast keeps the low bits (GCC defines narrowing to a
 * signed type as modular, which is the wrap-around we want). */
#define GT_INT_TO(CTYPE, FROM_DOUBLE, x) \
    _Generic((x), float: FROM_DOUBLE, double: FROM_DOUBLE, default: gt_int_identity_##CTYPE)(x)

static inline int64_t gt_int_identity_int64_t(int64_t x) { return x; }
static inline int32_t gt_int_identity_int32_t(int64_t x) { return (int32_t)x; }
static inline uint8_t gt_int_identity_uint8_t(int64_t x) { return (uint8_t)x; }

#define GT_CAST_GT_BOOL(x) ((uint8_t)((x) != 0))
#define GT_CAST_GT_UINT8(x) GT_INT_TO(uint8_t, gt_double_to_uint8, x)
#define GT_CAST_GT_INT32(x) GT_INT_TO(int32_t, gt_double_to_int32, x)
#define GT_CAST_GT_INT64(x) GT_INT_TO(int64_t, gt_double_to_int64, x)
/* Through double first: an int64 rounds to double and then to float, exactly
 * as the reference tier stores it (a direct int64 -> float rounding can differ
 * in the last bit for numbers above 2^24). For float32 input it is a no-op. */
#define GT_CAST_GT_FLOAT32(x) ((float)(double)(x))
#define GT_CAST_GT_FLOAT64(x) ((double)(x))

#endif /* GT_CONVERT_H */
