/* gt_math.h: float32 exp, expm1, log, tanh and sigmoid that vectorise (and a
 * cheaper exp for arguments <= 0), and the row loops (maximum, sum of exps)
 * that softmax and cross-entropy share.
 *
 * libm's expf, logf and tanhf are opaque calls: a loop that calls one per
 * element stays scalar, one call (a few dozen cycles) per number. The
 * functions here are straight-line arithmetic (multiplies, adds, integer
 * bit operations, compare-and-select, no branches and no tables), so when a
 * contiguous loop calls them GCC inlines them and runs 16 elements per
 * AVX-512 instruction. The elementwise op table (elementwise.c), softmax
 * (reductions.c) and cross-entropy (nn.c) use them for float32.
 *
 * Accuracy: within a few ulp of the correctly rounded result (relative error
 * below 5e-7), far inside the float32 tolerance the reference tier is held
 * to (rtol 1e-5). NaN in gives NaN out; infinities and zeros give what libm
 * gives.
 *
 * THE METHOD (shared by exp and expm1)
 * -----------------------------------
 *   1. Range reduction. Write x = k*ln2 + r with k = round(x / ln2), an
 *      integer, and |r| <= ln2/2 ~ 0.347. Then exp(x) = 2^k * exp(r).
 *      r = x - k*ln2 must be computed without losing digits: ln2 is split
 *      into LN2_HI, which has only 16 significant bits (so k*LN2_HI is exact
 *      for every k we meet) and the small rest LN2_LO (Cody and Waite).
 *   2. Polynomial. On |r| <= 0.347 exp(r) - 1 is its Taylor series to r^7:
 *      the first term left out, r^8/8!, is below 1e-8, under float32's
 *      resolution. Evaluated by Horner's rule, one fused multiply-add per
 *      coefficient.
 *   3. Exponent bits. 2^k is a float whose bits are (k + 127) << 23: the
 *      biased exponent field, with a zero mantissa. No pow() needed.
 *
 * log is the same idea run backwards (see gt_log_f32), and tanh and sigmoid
 * are small formulas on top of expm1 and exp.
 *
 * Loops over rows are written with a precomputed count ("i < whole"), not
 * "i + 16 <= n": Python's build flags include -fwrapv, under which GCC must
 * allow i + 16 to wrap around, cannot work out the trip count of the second
 * form, and generates slower code for it.
 */
#ifndef GT_MATH_H
#define GT_MATH_H

#include <math.h>
#include <stdint.h>

/* Reinterpret the 32 bits of a float as an integer, and back. (A union is
 * how C99 and later spell this; the compiler turns it into no instruction.) */
static inline int32_t gt_f32_bits(float x)
{
    union { float f; int32_t i; } u = {.f = x};
    return u.i;
}
static inline float gt_f32_from_bits(int32_t i)
{
    union { int32_t i; float f; } u = {.i = i};
    return u.f;
}

/* 2^k for -126 <= k <= 127: the exponent field alone (step 3). */
static inline float gt_pow2_f32(int32_t k) { return gt_f32_from_bits((k + 127) << 23); }

/* Steps 1 and 2: x = k*ln2 + r, returning k (as a float holding an integer)
 * and q = exp(r) - 1. Keeping exp(r) - 1 rather than exp(r) is what lets
 * expm1 stay accurate near 0, where exp(x) - 1 would cancel. */
#define GT_EXP_ROUND_MAGIC 12582912.0f /* 1.5 * 2^23 */
#define GT_EXP_ROUND_MAGIC_BITS 0x4b400000u /* its bits */
static inline float gt_exp_split_f32(float x, float *q, float *rounded)
{
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f; /* 0x3f317200: 16 significant bits */
    const float ln2_lo = 1.42860676533018704e-06f; /* ln2 - ln2_hi */
    /* Adding 1.5 * 2^23 pushes the fraction bits out of the float, so the
     * sum is x/ln2 rounded to an integer (its low bits hold k: see
     * gt_pow2_rounded_f32); subtracting it again gives k. */
    *rounded = x * log2e + GT_EXP_ROUND_MAGIC;
    const float k = *rounded - GT_EXP_ROUND_MAGIC;
    const float r = (x - k * ln2_hi) - k * ln2_lo;
    float p = 1.0f / 5040.0f; /* 1/7! */
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    *q = p * r; /* r + r^2/2 + ... + r^7/7! */
    return k;
}
static inline float gt_exp_reduce_f32(float x, float *q)
{
    float rounded;
    return gt_exp_split_f32(x, q, &rounded);
}

/* 2^(s*k) for s = +1 or -1, from `rounded` = k + 1.5 * 2^23 of
 * gt_exp_split_f32, whose bits are GT_EXP_ROUND_MAGIC_BITS + k: integer
 * arithmetic on the bits, no float-to-int conversion (which C leaves
 * undefined for NaN; here a NaN gives some float, and the NaN q it came with
 * makes the result NaN). Unsigned, so that no shift overflows. For s*k in
 * [-126, 127]. */
static inline float gt_pow2_rounded_f32(float rounded, int sign)
{
    const uint32_t k = (uint32_t)gt_f32_bits(rounded) - GT_EXP_ROUND_MAGIC_BITS;
    return gt_f32_from_bits((int32_t)(((sign > 0 ? k : 0u - k) + 127u) << 23));
}

/* exp(x) = 2^k * (1 + q). Beyond +-150 the answer is inf or 0 anyway, so x
 * is clamped there (k stays small). 2^k is applied as two factors
 * 2^(k/2) * 2^(k - k/2), each a normal float: results that overflow to inf
 * or underflow into subnormals then come out as libm's do. */
static inline float gt_exp_f32(float x)
{
    const float xc = x < -150.0f ? -150.0f : (x > 150.0f ? 150.0f : x);
    float q;
    const int32_t k = (int32_t)gt_exp_reduce_f32(xc, &q);
    const int32_t k1 = k / 2, k2 = k - k1;
    const float result = (1.0f + q) * gt_pow2_f32(k1) * gt_pow2_f32(k2);
    return x != x ? x : result; /* NaN in, NaN out */
}

/* exp(x) for x <= 0 (or NaN): the exps of softmax and cross-entropy, whose
 * argument is x - max.
 *
 * The answer is at most 1, so nothing overflows, and most of gt_exp_f32's
 * care is not needed: one clamp instead of two, and 2^k as a single factor,
 * a normal float for every k >= -126 (x >= -87.68). Multiplying by it also
 * rounds the answers between 2^-126.5 and 2^-126 correctly into subnormals.
 * Below x = -87.68 the exact answer is under 8.3e-39, and this returns 0
 * ("flushes it to zero"): next to the row's largest term, exp(0) = 1, such a
 * term is 31 orders of magnitude below float32's resolution, so the sum is
 * unchanged, and an output of softmax is off by less than 1e-38.
 *
 * With fewer vector instructions than gt_exp_f32, softmax over 1024 x 1024
 * float32 on one thread went from about 670 to 550 us. */
static inline float gt_exp_nonpositive_f32(float x)
{
    const float lowest = -87.68f; /* 126.5 * ln2, less a little: k >= -126 */
    const float xc = x >= lowest ? x : lowest; /* a NaN becomes `lowest` too */
    float q;
    const int32_t k = (int32_t)gt_exp_reduce_f32(xc, &q);
    const float result = x < lowest ? 0.0f : (1.0f + q) * gt_pow2_f32(k);
    return x != x ? x : result; /* NaN in, NaN out */
}

/* expm1(x) = exp(x) - 1, accurate also where the result is tiny.
 *
 *   2^k * (1 + q) - 1  =  2^k * (q + (1 - 2^-k)).
 *
 * For k = 0 that is q itself, with no cancellation. For k != 0, |x| > 0.34
 * and |1 - 2^-k| >= 0.5 outweighs |q| <= 0.42: no digits are lost either.
 * Below x = -30 the answer is -1 in float32, so x is clamped there (k >= -44);
 * above x = 20, e^x - 1 rounds to e^x, so exp takes over, and the formula
 * only ever meets k <= 29, where 2^k and 2^-k are normal floats. */
static inline float gt_expm1_f32(float x)
{
    const float xc = x < -30.0f ? -30.0f : (x > 20.0f ? 20.0f : x);
    float q;
    const int32_t k = (int32_t)gt_exp_reduce_f32(xc, &q);
    const float small = (q + (1.0f - gt_pow2_f32(-k))) * gt_pow2_f32(k);
    const float result = x > 20.0f ? gt_exp_f32(x) : small;
    return (x != x || x == 0.0f) ? x : result; /* NaN stays NaN, -0 stays -0 */
}

/* expm1(x) for x <= 0 (or NaN): tanh's argument, -2|x|. The same answers as
 * gt_expm1_f32 there, without its branch for x > 20, which a vectorised loop
 * computes for every element whether it is taken or not (a whole gt_exp_f32:
 * a third of a tanh-GELU's time). */
static inline float gt_expm1_nonpositive_f32(float x)
{
    const float xc = x < -30.0f ? -30.0f : x;
    float q;
    const int32_t k = (int32_t)gt_exp_reduce_f32(xc, &q);
    const float result = (q + (1.0f - gt_pow2_f32(-k))) * gt_pow2_f32(k);
    return (x != x || x == 0.0f) ? x : result; /* NaN stays NaN, -0 stays -0 */
}

/* log(x) for float32.
 *
 * Write x = 2^e * m with m in [sqrt(1/2), sqrt(2)) by reading the exponent
 * field (subnormal x is first scaled by 2^23 to make it normal). Then
 * log(x) = e*ln2 + log(m), and with s = (m - 1) / (m + 1), |s| <= 0.172,
 *
 *   log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + s^7/7 + s^9/9 + ...)
 *
 * whose terms shrink by s^2 <= 0.03 each: five terms reach float32's
 * resolution. m - 1 is exact, and e*ln2 is added in two parts as in exp.
 * log(0) = -inf, log(negative) = NaN, log(inf) = inf, as libm. */
static inline float gt_log_f32(float x)
{
    const float ln2_hi = 0.693145751953125f;
    const float ln2_lo = 1.42860676533018704e-06f;
    const int subnormal = x < 1.17549435e-38f; /* below FLT_MIN (also 0 and negatives) */
    const int32_t bits = gt_f32_bits(x * (subnormal ? 8388608.0f : 1.0f)); /* * 2^23 */
    /* Exponent e and mantissa m in [1, 2): replace the exponent field by 127. */
    int32_t e = ((bits >> 23) & 0xff) - 127 - 23 * subnormal;
    float m = gt_f32_from_bits((bits & 0x007fffff) | 0x3f800000);
    const int upper = m > 1.41421356f; /* move m into [sqrt(1/2), sqrt(2)) */
    m *= upper ? 0.5f : 1.0f;
    e += upper;
    const float f = m - 1.0f;
    const float s = f / (2.0f + f);
    const float z = s * s;
    float p = 1.0f / 11.0f;
    p = p * z + 1.0f / 9.0f;
    p = p * z + 1.0f / 7.0f;
    p = p * z + 1.0f / 5.0f;
    p = p * z + 1.0f / 3.0f;
    const float log_m = 2.0f * s + 2.0f * s * z * p;
    const float ef = (float)e;
    const float result = ef * ln2_hi + (log_m + ef * ln2_lo);
    /* Outside (0, inf) the answer is x itself (inf, NaN), -inf (at 0) or NaN
     * (below 0). The last choice is made on the bits: written as "?:", GCC
     * turns it into a branch around the division above (a division may
     * trap, so it will not run one it was not asked for), and the loop no
     * longer vectorises. */
    const float special = x == 0.0f ? -INFINITY : (x < 0.0f ? NAN : x);
    const int32_t keep = -((x > 0.0f) & (x < INFINITY)); /* all ones: keep result */
    return gt_f32_from_bits((gt_f32_bits(result) & keep) | (gt_f32_bits(special) & ~keep));
}

/* tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)), with the sign of x.
 *
 * Working with -|x| keeps the exponential in (0, 1], so nothing overflows,
 * and expm1 keeps small |x| accurate (1 - e^(-2|x|) would cancel). */
static inline float gt_tanh_f32(float x)
{
    const float t = gt_expm1_nonpositive_f32(-2.0f * fabsf(x));
    return copysignf(-t / (2.0f + t), x); /* NaN stays NaN */
}

/* sigmoid(x) = 1 / (1 + e^-x), computed from e = exp(-|x|) <= 1, which never
 * overflows: 1 / (1 + e) for x >= 0, and e / (1 + e) for x < 0. */
static inline float gt_sigmoid_f32(float x)
{
    const float e = gt_exp_f32(-fabsf(x));
    const float s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s; /* a NaN takes e * s: NaN */
}

/* ------------------------------------------------- rows of softmax and friends
 * softmax, log_softmax (reductions.c) and cross-entropy (nn.c) all need, for
 * a contiguous float32 row, its maximum and the sum of exp(x - max). Written
 * once here, both vectorise. */

/* Lanes of the row loops below: one AVX-512 register of float32. */
#define GT_ROW_LANES 16
/* Running maxima: four registers' worth, so that four compare-and-select
 * chains overlap instead of each step waiting for the one before. */
#define GT_MAX_LANES (4 * GT_ROW_LANES)
/* Elements summed in float32 lanes before they are added into double. */
#define GT_EXP_BLOCK 256

/* The maximum of n >= 1 contiguous floats; any NaN makes it NaN (as the
 * reference's max does).
 *
 * "best = v > best ? v : best" is one long chain of dependent compares that
 * the compiler may not reorder. GT_MAX_LANES running maxima, one per lane,
 * turn each step into vector compare-and-selects. NaN propagates because
 * the select also takes v when v != v, and a NaN once taken is never replaced
 * (every compare with it is false). GCC's vectoriser does not recognise this
 * loop on its own (it is not a plain sum), so `omp simd` asks for it. */
static inline float gt_max_f32(const float *x, int64_t n)
{
    enum { LANES = GT_MAX_LANES };
    if (n < LANES) {
        /* A short row (10 scores of a classifier): one plain pass. Seeding
         * and then combining GT_MAX_LANES lanes would cost more than it saves. */
        float best = x[0];
        for (int64_t i = 1; i < n && best == best; i++) { /* a NaN is the answer: stop */
            const float v = x[i];
            if (v > best || v != v) best = v;
        }
        return best;
    }
    const int64_t whole = n / LANES * LANES; /* (a counted loop: see the top) */
    float lanes[LANES];
    for (int k = 0; k < LANES; k++) lanes[k] = x[0];
    for (int64_t i = 0; i < whole; i += LANES) {
#pragma omp simd
        for (int k = 0; k < LANES; k++) {
            const float v = x[i + k];
            lanes[k] = ((v > lanes[k]) | (v != v)) ? v : lanes[k];
        }
    }
    for (int64_t i = whole; i < n; i++) {
        const float v = x[i];
        lanes[0] = ((v > lanes[0]) | (v != v)) ? v : lanes[0];
    }
    /* Fold the lanes in halves, 64 -> 32 -> ... -> 1: the wide steps are
     * vector compare-and-selects too. (Folding them one by one, a chain of 63
     * scalar steps, took a tenth of a 1024-wide softmax row.) */
    for (int width = LANES / 2; width >= 1; width /= 2)
        for (int k = 0; k < width; k++) {
            const float v = lanes[k + width];
            lanes[k] = ((v > lanes[k]) | (v != v)) ? v : lanes[k];
        }
    return lanes[0];
}

/* y[i] = exp(x[i] - shift) for n contiguous floats; returns the sum of the
 * y[i], in double. shift is the row's maximum, so x[i] - shift <= 0 and
 * gt_exp_nonpositive_f32 applies. (Softmax shifts by 0 instead when the
 * maximum is NaN; the row then comes out NaN whatever these exps are.)
 *
 * Two loops rather than one: the exps first (pure elementwise vector code),
 * then the sum, reading y back from L1 cache. Fused into one loop, the
 * running sums no longer fit in registers beside exp's constants and went
 * through memory, which made every add wait for the previous one.
 *
 * The sum is blocked: GT_ROW_LANES float32 lanes take GT_EXP_BLOCK elements
 * (16 each), then are added into double lanes and start again from 0. A
 * float32 partial sum thus never grows over more than 16 terms, and the
 * additions that do grow run in double; yet the hot loop is one float32
 * vector add per 16 elements. */
static inline double gt_exp_sum_f32(float *y, const float *x, int64_t n, float shift)
{
    for (int64_t i = 0; i < n; i++) y[i] = gt_exp_nonpositive_f32(x[i] - shift);
    if (n < GT_ROW_LANES) { /* a short row: a plain running sum, in double, of under 16 terms */
        double total = 0.0;
        for (int64_t i = 0; i < n; i++) total += (double)y[i];
        return total;
    }

    const int64_t whole = n / GT_ROW_LANES * GT_ROW_LANES;
    double total[GT_ROW_LANES] = {0};
    for (int64_t start = 0; start < whole; start += GT_EXP_BLOCK) {
        const int64_t end = whole - start < GT_EXP_BLOCK ? whole : start + GT_EXP_BLOCK;
        float part[GT_ROW_LANES] = {0};
        for (int64_t i = start; i < end; i += GT_ROW_LANES)
            for (int k = 0; k < GT_ROW_LANES; k++) part[k] += y[i + k];
        for (int k = 0; k < GT_ROW_LANES; k++) total[k] += (double)part[k];
    }
    for (int64_t i = whole; i < n; i++) total[i - whole] += (double)y[i]; /* the tail */
    for (int width = GT_ROW_LANES / 2; width >= 1; width /= 2) /* lanes pairwise */
        for (int k = 0; k < width; k++) total[k] += total[k + width];
    return total[0];
}

#endif /* GT_MATH_H */
