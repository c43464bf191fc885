/* moments.c: PyTorch's CPU row mean and variance, in the input's precision
 * (reference/moments.py is the same in Python, with why it matters: a float32
 * row holding 1e30 has an infinite variance there, and PyTorch's answer for
 * it follows from that).
 *
 * The algorithm: the row's first LANES * (N / LANES) values form vectors of
 * LANES lanes (8 float32 or 4 float64: one 256-bit register). Each lane runs
 * Welford's update over chunks of CHUNK vectors; chunk results merge in a
 * cascade (a binary counter: pairs, pairs of pairs), then the levels merge
 * into one. The N % LANES values left over are added one at a time, and the
 * lanes are merged into them in lane order with the plain formula, which
 * gives NaN where a huge difference meets a zero weight (PyTorch does too).
 *
 * The ideas:
 *
 *   - Every operation is rounded to T, in the order written:
 *     fp-contract=off keeps GCC from fusing a * b + c into one FMA (one
 *     rounding instead of two), so the result matches the reference tier's
 *     and PyTorch's bit for bit on these steps.
 *   - The lanes are independent until the final merge, so the inner loop over
 *     a vector's lanes is LANES independent Welford updates that GCC can
 *     vectorise.
 */
#pragma GCC optimize("fp-contract=off")

#include <math.h>
#include <string.h>

#include "moments.h"

#define CHUNK 16
#define MAX_LEVELS 64

static int64_t ceil_log2(int64_t m)
{
    int64_t bits = 0;
    if (m <= 2) return 1;
    for (int64_t v = m - 1; v > 0; v >>= 1) bits++;
    return bits;
}

#define DEFINE_MOMENTS(T, SUFFIX, LANES)                                                     \
    /* (count, mean[], m2[]) of every lane: a merge of b into a (Chan et al.);         */  \
    /* an empty side leaves the other as it is (PyTorch's vector merge does so).       */  \
    static void merge_##SUFFIX(int64_t *na, T *ma, T *sa, int64_t nb, const T *mb,         \
                               const T *sb)                                                \
    {                                                                                      \
        if (nb == 0) return;                                                               \
        if (*na == 0) {                                                                    \
            *na = nb;                                                                      \
            memcpy(ma, mb, sizeof(T) * LANES);                                             \
            memcpy(sa, sb, sizeof(T) * LANES);                                             \
            return;                                                                        \
        }                                                                                  \
        const int64_t n = *na + nb;                                                        \
        const T c = (T)nb / (T)n, weight = (T)*na;                                         \
        for (int k = 0; k < LANES; k++) {                                                  \
            const T delta = mb[k] - ma[k];                                                 \
            ma[k] = ma[k] + c * delta;                                                     \
            sa[k] = sa[k] + (sb[k] + delta * delta * c * weight);                          \
        }                                                                                  \
        *na = n;                                                                           \
    }                                                                                      \
                                                                                           \
    void gt_row_moments_##SUFFIX(const T *x, int64_t n, T *mean_out, T *var_out)           \
    {                                                                                      \
        const int64_t vectors = n / LANES, chunks = (vectors + CHUNK - 1) / CHUNK;         \
        const int64_t depth = ceil_log2(chunks);                                           \
        int64_t counts[MAX_LEVELS] = {0};                                                  \
        T means[MAX_LEVELS][LANES], m2s[MAX_LEVELS][LANES];                                \
        memset(means, 0, sizeof means);                                                    \
        memset(m2s, 0, sizeof m2s);                                                        \
        T recip[CHUNK];                                                                    \
        for (int j = 0; j < CHUNK; j++) recip[j] = (T)1 / (T)(j + 1);                      \
        for (int64_t i = 0; i < chunks; i++) {                                             \
            T m1[LANES] = {0}, m2[LANES] = {0};                                            \
            const int64_t count = vectors - i * CHUNK < CHUNK ? vectors - i * CHUNK : CHUNK; \
            for (int64_t j = 0; j < count; j++) {                                          \
                const T *v = x + (i * CHUNK + j) * LANES;                                  \
                for (int k = 0; k < LANES; k++) {                                          \
                    const T delta = v[k] - m1[k];                                          \
                    m1[k] = m1[k] + delta * recip[j];                                      \
                    m2[k] = m2[k] + delta * (v[k] - m1[k]);                                \
                }                                                                          \
            }                                                                              \
            merge_##SUFFIX(&counts[0], means[0], m2s[0], count, m1, m2);                   \
            int64_t carry = i + 1;                                                         \
            for (int64_t level = 1; level < depth && carry % 2 == 0; level++) {            \
                merge_##SUFFIX(&counts[level], means[level], m2s[level], counts[level - 1],  \
                               means[level - 1], m2s[level - 1]);                          \
                counts[level - 1] = 0;                                                     \
                memset(means[level - 1], 0, sizeof means[0]);                              \
                memset(m2s[level - 1], 0, sizeof m2s[0]);                                  \
                carry /= 2;                                                                \
            }                                                                              \
        }                                                                                  \
        for (int64_t level = 1; level < depth; level++)                                    \
            merge_##SUFFIX(&counts[0], means[0], m2s[0], counts[level], means[level],      \
                           m2s[level]);                                                    \
        /* the values left over, one at a time, then the lanes in order */                 \
        int64_t count = 0;                                                                 \
        T m1 = 0, m2 = 0;                                                                  \
        for (int64_t i = vectors * LANES; i < n; i++) {                                    \
            const T delta = x[i] - m1;                                                     \
            count++;                                                                       \
            m1 = m1 + delta / (T)count;                                                    \
            m2 = m2 + delta * (x[i] - m1);                                                 \
        }                                                                                  \
        for (int k = 0; k < LANES; k++) {                                                  \
            const int64_t total = count + vectors;                                         \
            const T c = total == 0 ? (T)0 : (T)vectors / (T)total;                         \
            const T delta = means[0][k] - m1;                                              \
            m1 = m1 + c * delta;                                                           \
            m2 = m2 + (m2s[0][k] + delta * delta * c * (T)count);                          \
            count = total;                                                                 \
        }                                                                                  \
        *mean_out = m1;                                                                    \
        *var_out = n ? m2 / (T)n : (T)NAN;                                                 \
    }

DEFINE_MOMENTS(float, f32, 8)
DEFINE_MOMENTS(double, f64, 4)

int gt_row_moments(gt_view *mean, gt_view *var, const gt_view *input)
{
    const int dtype = input->dtype;
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return -1;
    if (mean->dtype != dtype || var->dtype != dtype) return -1;
    if (!gt_is_contiguous(input) || !gt_is_contiguous(mean) || !gt_is_contiguous(var)) return -1;
    const int64_t n = input->ndim ? input->shape[input->ndim - 1] : 1;
    int64_t total = 1;
    for (int d = 0; d < input->ndim; d++) total *= input->shape[d];
    const int64_t rows = n ? total / n : 0;
    if (dtype == GT_FLOAT32) {
        const float *x = (const float *)input->data + input->offset;
        float *m = (float *)mean->data + mean->offset, *v = (float *)var->data + var->offset;
        _Pragma("omp parallel for schedule(static) if (total >= GT_PARALLEL_THRESHOLD)")
        for (int64_t r = 0; r < rows; r++) gt_row_moments_f32(x + r * n, n, m + r, v + r);
    } else {
        const double *x = (const double *)input->data + input->offset;
        double *m = (double *)mean->data + mean->offset, *v = (double *)var->data + var->offset;
        _Pragma("omp parallel for schedule(static) if (total >= GT_PARALLEL_THRESHOLD)")
        for (int64_t r = 0; r < rows; r++) gt_row_moments_f64(x + r * n, n, m + r, v + r);
    }
    return 0;
}
