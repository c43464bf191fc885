/* batch_norm.c: batch normalisation's statistics, its normalise-scale-shift
 * pass and its gradients over (N, C, L) views (reference/conv.py's batch
 * normalisation section is the plain-loop definition). Channels are
 * independent: the statistics and the parameter gradients share out
 * channels, and each channel's sums run in double over its N rows of L
 * contiguous numbers. The elementwise passes share out (n, c) rows, with each
 * channel's scale and shift computed once. float32 and float64 share each
 * loop through a macro.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "batch_norm.h"
#include "conv_window.h"

/* Optimization (vector partial sums): a sum over a row of numbers is kept in
 * two vectors of partial sums of the element type (GCC vector extensions; a
 * single running sum is one add at a time, each waiting 4 cycles for the
 * last). Each row's partials are then added in double, so a channel's total
 * over many rows keeps double's precision across rows. Used by the
 * batch-norm gradients. */
typedef float bn_vfloat __attribute__((vector_size(32)));
typedef double bn_vdouble __attribute__((vector_size(32)));

#define DEFINE_ROW_SUMS(T, V, SUFFIX)                                                              \
    /* sum of dy and of dy * (x - mu) over a row, at once */                                       \
    static inline void row_grad_sums_##SUFFIX(const T *dy, const T *x, int64_t l, T mu,           \
                                              double *sum_dy, double *sum_dy_xmu)                  \
    {                                                                                              \
        enum { VL = sizeof(V) / sizeof(T) };                                                       \
        V a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0}, g0, g1, x0, x1;                                  \
        int64_t j = 0;                                                                             \
        for (; j + 2 * VL <= l; j += 2 * VL) {                                                     \
            memcpy(&g0, dy + j, sizeof g0);                                                        \
            memcpy(&g1, dy + j + VL, sizeof g1);                                                   \
            memcpy(&x0, x + j, sizeof x0);                                                         \
            memcpy(&x1, x + j + VL, sizeof x1);                                                    \
            a0 += g0, a1 += g1;                                                                    \
            b0 += g0 * (x0 - mu), b1 += g1 * (x1 - mu);                                            \
        }                                                                                          \
        a0 += a1, b0 += b1;                                                                        \
        double s0 = 0.0, s1 = 0.0;                                                                 \
        for (int v = 0; v < VL; v++) s0 += (double)a0[v], s1 += (double)b0[v];                     \
        for (; j < l; j++) {                                                                       \
            s0 += (double)dy[j];                                                                   \
            s1 += (double)dy[j] * ((double)x[j] - (double)mu);                                     \
        }                                                                                          \
        *sum_dy += s0;                                                                             \
        *sum_dy_xmu += s1;                                                                         \
    }

DEFINE_ROW_SUMS(float, bn_vfloat, f32)
DEFINE_ROW_SUMS(double, bn_vdouble, f64)

/* PyTorch's batch-norm statistics (reference/conv.py): each channel's sum in
 * double, the mean rounded to T, then each deviation and its square in T (a
 * float32 square past 3.4e38 is inf, as PyTorch's is), added in double.
 * Both sums run in PyTorch's order, one chain per channel: with huge values
 * the order decides which small terms they absorb (1e30 + 1.5 - 1e30 is 0),
 * so interleaved partial sums (faster, vectorised) would give other answers.
 * The channels are the parallel dimension. */
#define BN_GROUP 4 /* channels whose statistics are summed side by side */
#define FMA_f32 fmaf
#define FMA_f64 fma
#define DEFINE_BATCH_NORM(T, SUFFIX)                                                               \
    static double bn_row_sum_##SUFFIX(const T *x, int64_t l, double sum)                           \
    {                                                                                              \
        for (int64_t j = 0; j < l; j++) sum += (double)x[j];                                       \
        return sum;                                                                                \
    }                                                                                              \
    static double bn_row_squares_##SUFFIX(const T *x, int64_t l, T m, double squares)              \
    {                                                                                              \
        for (int64_t j = 0; j < l; j++) {                                                          \
            const T d = x[j] - m;                                                                  \
            squares += (double)(T)(d * d); /* the square rounded to T, then added */               \
        }                                                                                          \
        return squares;                                                                            \
    }                                                                                              \
    /* Speed: one channel's sum is a chain of dependent adds, each waiting    \
     * about 4 cycles for the last. BN_GROUP channels summed side by side are  \
     * as many independent chains, which the CPU overlaps (and may hold in one \
     * vector, a lane per channel); each chain keeps PyTorch's order. */       \
    static void bn_stats_##SUFFIX(gt_view *mean, gt_view *var, const gt_view *input)               \
    {                                                                                              \
        const int64_t n = input->shape[0], c = input->shape[1], l = input->shape[2];               \
        const T *x = (const T *)input->data + input->offset;                                       \
        T *m_out = (T *)mean->data + mean->offset, *v_out = (T *)var->data + var->offset;          \
        const double count = (double)(n * l);                                                      \
        const int64_t groups = (c + BN_GROUP - 1) / BN_GROUP;                                      \
        _Pragma("omp parallel for schedule(static) if (n * c * l >= GT_PARALLEL_THRESHOLD)")       \
        for (int64_t g = 0; g < groups; g++) {                                                     \
            const int64_t ch0 = g * BN_GROUP;                                                      \
            const int k_n = c - ch0 < BN_GROUP ? (int)(c - ch0) : BN_GROUP;                        \
            double sum[BN_GROUP] = {0}, squares[BN_GROUP] = {0};                                   \
            T m[BN_GROUP] = {0};                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const T *rows = x + (i * c + ch0) * l; /* row k of the group at rows + k * l */    \
                if (k_n == BN_GROUP) {                                                             \
                    for (int64_t j = 0; j < l; j++)                                                \
                        for (int k = 0; k < BN_GROUP; k++) sum[k] += (double)rows[k * l + j];      \
                } else {                                                                           \
                    for (int k = 0; k < k_n; k++) sum[k] = bn_row_sum_##SUFFIX(rows + k * l, l, sum[k]); \
                }                                                                                  \
            }                                                                                      \
            for (int k = 0; k < k_n; k++) m[k] = (T)(sum[k] / count);                              \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const T *rows = x + (i * c + ch0) * l;                                             \
                if (k_n == BN_GROUP) {                                                             \
                    for (int64_t j = 0; j < l; j++)                                                \
                        for (int k = 0; k < BN_GROUP; k++) {                                       \
                            const T d = rows[k * l + j] - m[k];                                    \
                            squares[k] += (double)(T)(d * d);                                      \
                        }                                                                          \
                } else {                                                                           \
                    for (int k = 0; k < k_n; k++)                                                  \
                        squares[k] = bn_row_squares_##SUFFIX(rows + k * l, l, m[k], squares[k]);   \
                }                                                                                  \
            }                                                                                      \
            for (int k = 0; k < k_n; k++) {                                                        \
                m_out[ch0 + k] = m[k];                                                             \
                v_out[ch0 + k] = (T)((double)(T)squares[k] / count); /* the sum kept in T */     \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void bn_apply_##SUFFIX(gt_view *out, const gt_view *input, const gt_view *mean,         \
                                  const gt_view *invstd, const gt_view *weight,                    \
                                  const gt_view *bias)                                             \
    {                                                                                              \
        const int64_t n = input->shape[0], c = input->shape[1], l = input->shape[2];               \
        const T *x = (const T *)input->data + input->offset;                                       \
        T *y = (T *)out->data + out->offset;                                                       \
        const T *m = (const T *)mean->data + mean->offset;                                         \
        const T *inv = (const T *)invstd->data + invstd->offset;                                   \
        const T *w = weight ? (const T *)weight->data + weight->offset : NULL;                     \
        const T *b = bias ? (const T *)bias->data + bias->offset : NULL;                           \
        _Pragma("omp parallel for schedule(static) if (n * c * l >= GT_PARALLEL_THRESHOLD)")       \
        for (int64_t r = 0; r < n * c; r++) {                                                      \
            const int64_t ch = r % c;                                                              \
            /* y = fma(x, scale, shift): one rounding per element, as PyTorch's loop */           \
            const T scale = inv[ch] * (w ? w[ch] : (T)1);                                          \
            const volatile T product = m[ch] * scale; /* rounded, as the reference's */            \
            const T shift = (b ? b[ch] : (T)0) - product;                                          \
            const T *xr = x + r * l;                                                               \
            T *yr = y + r * l;                                                                     \
            for (int64_t j = 0; j < l; j++) yr[j] = FMA_##SUFFIX(xr[j], scale, shift);           \
        }                                                                                          \
    }                                                                                              \
    static int bn_backward_##SUFFIX(gt_view *grad_input, gt_view *grad_weight,                    \
                                     gt_view *grad_bias, const gt_view *grad_output,               \
                                     const gt_view *input, const gt_view *mean,                    \
                                     const gt_view *invstd, const gt_view *weight, int training)   \
    {                                                                                              \
        const int64_t n = input->shape[0], c = input->shape[1], l = input->shape[2];               \
        const T *x = (const T *)input->data + input->offset;                                       \
        const T *dy = (const T *)grad_output->data + grad_output->offset;                          \
        const T *m = (const T *)mean->data + mean->offset;                                         \
        const T *inv = (const T *)invstd->data + invstd->offset;                                   \
        const T *w = weight ? (const T *)weight->data + weight->offset : NULL;                     \
        const double count = (double)(n * l);                                                      \
        double *sums = malloc((size_t)(2 * c + 1) * sizeof(double)); /* sum_dy, sum_dy_xhat */     \
        if (sums == NULL) return -2;                                                               \
        _Pragma("omp parallel for schedule(static) if (n * c * l >= GT_PARALLEL_THRESHOLD)")       \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
            double sum_dy = 0.0, sum_dy_xmu = 0.0;                                                 \
            for (int64_t i = 0; i < n; i++)                                                        \
                row_grad_sums_##SUFFIX(dy + (i * c + ch) * l, x + (i * c + ch) * l, l, m[ch],      \
                                       &sum_dy, &sum_dy_xmu);                                      \
            sums[ch] = sum_dy;                                                                     \
            sums[c + ch] = sum_dy_xmu * (double)inv[ch];                                           \
        }                                                                                          \
        if (grad_bias) {                                                                           \
            T *gb = (T *)grad_bias->data + grad_bias->offset;                                      \
            for (int64_t ch = 0; ch < c; ch++) gb[ch] = (T)sums[ch];                               \
        }                                                                                          \
        if (grad_weight) {                                                                         \
            T *gw = (T *)grad_weight->data + grad_weight->offset;                                  \
            for (int64_t ch = 0; ch < c; ch++) gw[ch] = (T)sums[c + ch];                           \
        }                                                                                          \
        if (grad_input) {                                                                          \
            T *dx = (T *)grad_input->data + grad_input->offset;                                    \
            _Pragma("omp parallel for schedule(static) if (n * c * l >= GT_PARALLEL_THRESHOLD)")   \
            for (int64_t r = 0; r < n * c; r++) {                                                  \
                const int64_t ch = r % c;                                                          \
                const double inv_c = (double)inv[ch];                                              \
                const double scale = inv_c * (w ? (double)w[ch] : 1.0);                            \
                const T *xr = x + r * l, *gr = dy + r * l;                                         \
                T *dr = dx + r * l;                                                                \
                if (!training) {                                                                   \
                    for (int64_t j = 0; j < l; j++) dr[j] = (T)(scale * (double)gr[j]);            \
                    continue;                                                                      \
                }                                                                                  \
                /* dx = scale * (dy - mean(dy) - (x - mu) * k), k = invstd * sum_dy_xhat / M:      \
                 * folded into dx = dy * scale + (x * a + b), per-channel constants. */            \
                const double mean_dy = sums[ch] / count;                                           \
                const double k = inv_c * sums[c + ch] / count;                                     \
                const double a = -scale * k, b0 = -scale * mean_dy + scale * k * (double)m[ch];    \
                const T s_ = (T)scale, a_ = (T)a, b_ = (T)b0;                                      \
                for (int64_t j = 0; j < l; j++) dr[j] = gr[j] * s_ + xr[j] * a_ + b_;              \
            }                                                                                      \
        }                                                                                          \
        free(sums);                                                                                \
        return 0;                                                                                  \
    }

DEFINE_BATCH_NORM(float, f32)
DEFINE_BATCH_NORM(double, f64)

/* Optimization (one call for training's per-channel bookkeeping): after the
 * statistics, training takes invstd and moves the running mean and variance,
 * about ten tensor operations on C numbers whose cost is all in the calls
 * (ResNet-20: 21 layers, ~0.1 ms of Python each a step). Here they are one
 * loop. Each step is rounded to T as those operations round it; `volatile`
 * keeps GCC from fusing a product and the following add into one FMA. */
#define DEFINE_UPDATE_STATS(T, SUFFIX)                                                             \
    static void bn_update_stats_##SUFFIX(gt_view *invstd, gt_view *running_mean,                   \
                                         gt_view *running_var, const gt_view *mean,                \
                                         const gt_view *var, double momentum, double eps,          \
                                         int64_t count)                                            \
    {                                                                                              \
        const int64_t c = mean->shape[0];                                                          \
        const T *m = (const T *)mean->data + mean->offset;                                         \
        const T *v = (const T *)var->data + var->offset;                                           \
        T *inv = (T *)invstd->data + invstd->offset;                                               \
        for (int64_t ch = 0; ch < c; ch++) inv[ch] = (T)(1.0 / sqrt((double)v[ch] + eps));         \
        if (running_mean == NULL) return;                                                          \
        T *rm = (T *)running_mean->data + running_mean->offset;                                    \
        T *rv = (T *)running_var->data + running_var->offset;                                      \
        const T keep = (T)(1.0 - momentum), step = (T)momentum;                                    \
        const T unbias = (T)(momentum * (double)count / (double)(count - 1));                      \
        for (int64_t ch = 0; ch < c; ch++) {                                                       \
            volatile T kept = rm[ch] * keep, moved = m[ch] * step;                                 \
            rm[ch] = kept + moved;                                                                 \
            kept = rv[ch] * keep, moved = v[ch] * unbias;                                          \
            rv[ch] = kept + moved;                                                                 \
        }                                                                                          \
    }

DEFINE_UPDATE_STATS(float, f32)
DEFINE_UPDATE_STATS(double, f64)

int gt_batch_norm_update_stats(gt_view *invstd, gt_view *running_mean, gt_view *running_var,
                               const gt_view *mean, const gt_view *var, double momentum,
                               double eps, int64_t count)
{
    const int dtype = mean->dtype;
    if (!USABLE(dtype, invstd, running_mean, running_var, mean, var) ||
        (running_mean == NULL) != (running_var == NULL))
        return -1;
    if (dtype == GT_FLOAT32)
        bn_update_stats_f32(invstd, running_mean, running_var, mean, var, momentum, eps, count);
    else
        bn_update_stats_f64(invstd, running_mean, running_var, mean, var, momentum, eps, count);
    return 0;
}

int gt_batch_norm_stats(gt_view *mean, gt_view *var, const gt_view *input)
{
    const int dtype = input->dtype;
    if (!USABLE(dtype, mean, var, input)) return -1;
    if (dtype == GT_FLOAT32) bn_stats_f32(mean, var, input);
    else bn_stats_f64(mean, var, input);
    return 0;
}

int gt_batch_norm_apply(gt_view *out, const gt_view *input, const gt_view *mean,
                        const gt_view *invstd, const gt_view *weight, const gt_view *bias)
{
    const int dtype = input->dtype;
    if (!USABLE(dtype, out, input, mean, invstd, weight, bias)) return -1;
    if (dtype == GT_FLOAT32) bn_apply_f32(out, input, mean, invstd, weight, bias);
    else bn_apply_f64(out, input, mean, invstd, weight, bias);
    return 0;
}

int gt_batch_norm_backward(gt_view *grad_input, gt_view *grad_weight, gt_view *grad_bias,
                           const gt_view *grad_output, const gt_view *input, const gt_view *mean,
                           const gt_view *invstd, const gt_view *weight, int training)
{
    const int dtype = input->dtype;
    if (!USABLE(dtype, grad_input, grad_weight, grad_bias, grad_output, input, mean, invstd,
                weight))
        return -1;
    if (dtype == GT_FLOAT32)
        return bn_backward_f32(grad_input, grad_weight, grad_bias, grad_output, input, mean,
                               invstd, weight, training);
    return bn_backward_f64(grad_input, grad_weight, grad_bias, grad_output, input, mean, invstd,
                           weight, training);
}
