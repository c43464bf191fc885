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
    static inline void merge_##SUFFIX(int64_t *na, T *ma, T *sa, int64_t nb, const T *mb,  \
                                      const T *sb)                                         \
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
    /* The moments of `rows` rows of n values, row r at x + r * ld, side by side.      */  \
    /* Optimization (rows side by side): every step of Welford's update waits for the  */  \
    /* one before it (a subtraction, a multiplication and an addition, rounded one by  */  \
    /* one), and so does each step of the final merge of the lanes (with a division):  */  \
    /* a row of 128 float32 values is a chain of about 400 cycles in which the core     */  \
    /* is mostly idle. `rows` is a constant once inlined (1 or MOMENTS_ROWS); each     */  \
    /* step is written for every row in turn, so the rows' chains, independent, run    */  \
    /* at once (a LayerNorm of 1024 x 128 floats: 60 -> ~25 us on two threads). Each   */  \
    /* row's own arithmetic and order are unchanged: the same bits as one at a time.   */  \
    /* Only the `depth` levels the cascade uses are zeroed (all 64 took longer than    */  \
    /* a short row's arithmetic).                                                      */  \
    static inline __attribute__((always_inline)) void moments_rows_##SUFFIX(             \
        const T *x, int64_t ld, int64_t n, const int rows, T *mean_out, T *var_out)        \
    {                                                                                      \
        const int64_t vectors = n / LANES, chunks = (vectors + CHUNK - 1) / CHUNK;         \
        const int64_t depth = ceil_log2(chunks);                                           \
        int64_t counts[MOMENTS_ROWS][MAX_LEVELS];                                          \
        T means[MOMENTS_ROWS][MAX_LEVELS][LANES], m2s[MOMENTS_ROWS][MAX_LEVELS][LANES];    \
        for (int r = 0; r < rows; r++) {                                                   \
            memset(counts[r], 0, sizeof(int64_t) * depth);                                 \
            memset(means[r], 0, sizeof(T) * LANES * depth);                                \
            memset(m2s[r], 0, sizeof(T) * LANES * depth);                                  \
        }                                                                                  \
        T recip[CHUNK];                                                                    \
        for (int j = 0; j < CHUNK; j++) recip[j] = (T)1 / (T)(j + 1);                      \
        for (int64_t i = 0; i < chunks; i++) {                                             \
            T m1[MOMENTS_ROWS][LANES] = {{0}}, m2[MOMENTS_ROWS][LANES] = {{0}};            \
            const int64_t count = vectors - i * CHUNK < CHUNK ? vectors - i * CHUNK : CHUNK; \
            for (int64_t j = 0; j < count; j++) {                                          \
                for (int r = 0; r < rows; r++) {                                           \
                    const T *v = x + r * ld + (i * CHUNK + j) * LANES;                     \
                    for (int k = 0; k < LANES; k++) {                                      \
                        const T delta = v[k] - m1[r][k];                                   \
                        m1[r][k] = m1[r][k] + delta * recip[j];                            \
                        m2[r][k] = m2[r][k] + delta * (v[k] - m1[r][k]);                   \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
            for (int r = 0; r < rows; r++) {                                               \
                merge_##SUFFIX(&counts[r][0], means[r][0], m2s[r][0], count, m1[r], m2[r]); \
                int64_t carry = i + 1;                                                     \
                for (int64_t level = 1; level < depth && carry % 2 == 0; level++) {        \
                    merge_##SUFFIX(&counts[r][level], means[r][level], m2s[r][level],      \
                                   counts[r][level - 1], means[r][level - 1],              \
                                   m2s[r][level - 1]);                                     \
                    counts[r][level - 1] = 0;                                              \
                    memset(means[r][level - 1], 0, sizeof means[r][0]);                    \
                    memset(m2s[r][level - 1], 0, sizeof m2s[r][0]);                        \
                    carry /= 2;                                                            \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        for (int r = 0; r < rows; r++)                                                     \
            for (int64_t level = 1; level < depth; level++)                                \
                merge_##SUFFIX(&counts[r][0], means[r][0], m2s[r][0], counts[r][level],    \
                               means[r][level], m2s[r][level]);                            \
        /* the values left over, one at a time, then the lanes in order */                 \
        int64_t count = 0;                                                                 \
        T m1[MOMENTS_ROWS], m2[MOMENTS_ROWS];                                              \
        for (int r = 0; r < rows; r++) m1[r] = 0, m2[r] = 0;                               \
        for (int64_t i = vectors * LANES; i < n; i++) {                                    \
            count++;                                                                       \
            for (int r = 0; r < rows; r++) {                                               \
                const T value = x[r * ld + i], delta = value - m1[r];                      \
                m1[r] = m1[r] + delta / (T)count;                                          \
                m2[r] = m2[r] + delta * (value - m1[r]);                                   \
            }                                                                              \
        }                                                                                  \
        for (int k = 0; k < LANES; k++) {                                                  \
            const int64_t total = count + vectors;                                         \
            const T c = total == 0 ? (T)0 : (T)vectors / (T)total;                         \
            for (int r = 0; r < rows; r++) {                                               \
                const T delta = means[r][0][k] - m1[r];                                    \
                m1[r] = m1[r] + c * delta;                                                 \
                m2[r] = m2[r] + (m2s[r][0][k] + delta * delta * c * (T)count);             \
            }                                                                              \
            count = total;                                                                 \
        }                                                                                  \
        for (int r = 0; r < rows; r++) {                                                   \
            mean_out[r] = m1[r];                                                           \
            var_out[r] = n ? m2[r] / (T)n : (T)NAN;                                        \
        }                                                                                  \
    }                                                                                      \
                                                                                           \
    void gt_row_moments_##SUFFIX(const T *x, int64_t n, T *mean_out, T *var_out)           \
    {                                                                                      \
        moments_rows_##SUFFIX(x, 0, n, 1, mean_out, var_out);                              \
    }                                                                                      \
                                                                                           \
    void gt_rows_moments_##SUFFIX(const T *x, int64_t ld, int64_t n, T *mean_out,          \
                                  T *var_out)                                              \
    {                                                                                      \
        moments_rows_##SUFFIX(x, ld, n, MOMENTS_ROWS, mean_out, var_out);                  \
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
