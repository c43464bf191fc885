/* reductions.h: reduce, arg_reduce, cumsum and the fused softmax.
 *
 * The kernels are in reductions.c; the block between cffi-begin and cffi-end
 * is what Python sees. Below it sit two small helpers that nn.c shares (the
 * fused cross-entropy is a log-softmax too).
 */
#ifndef GT_REDUCTIONS_H
#define GT_REDUCTIONS_H

#include <math.h>
#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* The reductions of the contract's REDUCE_OPS, in that order. */
enum {
    GT_REDUCE_SUM = 0,
    GT_REDUCE_PROD = 1,
    GT_REDUCE_AMAX = 2,
    GT_REDUCE_AMIN = 3,
    GT_REDUCE_ALL = 4,
    GT_REDUCE_ANY = 5
};

/* out has a's ndim with size 1 along each reduced dimension; which dimensions
 * are reduced is read from the shapes (out->shape[d] != a->shape[d]).
 * Returns 0, or -1 for an op or dtype the tables do not hold. */
int gt_reduce(int op, gt_view *out, const gt_view *a);

/* is_max: 1 for max, 0 for min. values has a's dtype, indices is int64. */
int gt_arg_reduce(int is_max, gt_view *values, gt_view *indices, const gt_view *a, int dim);

int gt_cumsum(gt_view *out, const gt_view *a, int dim);

/* a and out are float32 or float64, of one dtype. */
int gt_softmax(gt_view *out, const gt_view *a, int dim, int take_log);
/* cffi-end */

/* exp for float32, written so a loop of it vectorises (libm's expf is an
 * opaque call the compiler cannot turn into SIMD code).
 *
 * The idea (Cody and Waite's range reduction): write x = k*ln2 + r with k an
 * integer and |r| <= ln2/2. Then exp(x) = 2^k * exp(r). exp(r) on that small
 * interval is a short polynomial (the Taylor series to r^7, whose error
 * r^8/8! < 6e-9 is below float32's resolution), and 2^k is built directly
 * in the exponent bits of a float. ln2 is split into a high part with few
 * significant bits (so k*LN2_HI is exact) and a low correction, which keeps r
 * accurate. 2^k is applied as two factors 2^(k/2) * 2^(k-k/2), so results
 * that underflow into subnormals, or overflow to inf, come out right.
 * Accuracy: within 2 ulp of the true value; NaN stays NaN, -inf gives 0. */
static inline float gt_expf(float x)
{
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f; /* 0x3f317200: 16 significant bits */
    const float ln2_lo = 1.42860676533018704e-06f;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    /* Beyond +-150 the answer is inf or 0 anyway; clamping keeps k small. */
    float xc = x < -150.0f ? -150.0f : (x > 150.0f ? 150.0f : x);
    float kf = (xc * log2e + round_magic) - round_magic;
    float r = (xc - kf * ln2_hi) - kf * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t k = (int32_t)kf;
    int32_t k1 = k / 2, k2 = k - k1;
    union { int32_t i; float f; } s1, s2;
    s1.i = (k1 + 127) << 23;
    s2.i = (k2 + 127) << 23;
    float result = p * s1.f * s2.f;
    return x != x ? x : result; /* NaN in, NaN out */
}

/* Maximum of n strided values, NaN-propagating: any NaN makes the answer NaN,
 * as reference/reductions.py's _max. n >= 1.
 *
 * A running `best = v > best ? v : best` is one long dependency chain the
 * compiler will not vectorise (it may not reorder float comparisons). With 16
 * independent running maxima, one per lane, each step is an elementwise
 * compare-and-select over a vector; the lanes meet at the end. */
#define GT_DEFINE_ROW_MAX(NAME, CTYPE)                                            \
    static inline CTYPE NAME(const CTYPE *x, int64_t n, int64_t stride)           \
    {                                                                             \
        CTYPE lanes[16];                                                          \
        int any_nan = 0;                                                          \
        int64_t i = 0;                                                            \
        for (int k = 0; k < 16; k++) lanes[k] = x[0];                             \
        if (stride == 1)                                                          \
            for (; i + 16 <= n; i += 16)                                          \
                for (int k = 0; k < 16; k++) {                                    \
                    CTYPE v = x[i + k];                                           \
                    any_nan |= (v != v);                                          \
                    lanes[k] = v > lanes[k] ? v : lanes[k];                       \
                }                                                                 \
        for (; i < n; i++) {                                                      \
            CTYPE v = x[i * stride];                                              \
            any_nan |= (v != v);                                                  \
            lanes[0] = v > lanes[0] ? v : lanes[0];                               \
        }                                                                         \
        CTYPE best = lanes[0];                                                    \
        for (int k = 1; k < 16; k++) best = lanes[k] > best ? lanes[k] : best;    \
        return any_nan ? (CTYPE)NAN : best;                                       \
    }
GT_DEFINE_ROW_MAX(gt_row_max_f32, float)
GT_DEFINE_ROW_MAX(gt_row_max_f64, double)

#endif /* GT_REDUCTIONS_H */
