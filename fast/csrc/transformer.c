/* transformer.c: the fused kernels of a transformer block, forward and backward
 * (reference/transformer.py says the same in Python loops):
 *
 *   layer_norm           out = (x - mean) * rstd * weight + bias, per row, with
 *                        PyTorch's row moments in the input's precision (moments.c)
 *   layer_norm_backward  the input's, weight's and bias's gradients
 *   gelu, gelu_backward  x * Phi(x) (exact, or its tanh form) and its slope
 *   attention_softmax    softmax(scale * scores) per row, causal or not
 *   softmax_backward     scale * y * (g - sum(g * y)) per row
 *
 * The ideas:
 *
 *   - Fusion. Composed from tensor operations, a LayerNorm is nine kernel
 *     calls forward and about twenty backward, each reading and writing a
 *     whole temporary; a tanh-GELU is eight, and a causal softmax builds a
 *     mask, inverts it and fills with -inf before it starts. Here each is one
 *     pass over its rows, which stay in L1 cache between the row's steps.
 *   - No mask in memory. The causal softmax knows that row i of a (L, S)
 *     block sees columns 0..i: it softmaxes that prefix and writes zeros
 *     after it, so the masked columns cost neither exp nor a read.
 *   - OpenMP over rows (over column blocks for the weight and bias gradients,
 *     so each column is still summed in row order: the same bits on any
 *     number of threads), and only above GT_PARALLEL_THRESHOLD elements.
 *   - Sums in double, in SUM_LANES interleaved partial sums: the lanes make
 *     the loop vectorise (one chain of adds could not), and the order is
 *     fixed, so a row gives the same result every time.
 *   - float32 tanh and exp from gt_math.h, branch-free, so the GELU and
 *     softmax loops vectorise; float64 keeps libm.
 */
#include <math.h>
#include <stdlib.h>

#include "gt_common.h"
#include "gt_math.h"
#include "moments.h"
#include "transformer.h"

#define SUM_LANES 8

/* result = the sum over i in [0, n) of TERM (an expression of i), in double,
 * in SUM_LANES interleaved partial sums folded pairwise at the end. */
#define LANE_SUM(result, n, TERM)                                                     \
    do {                                                                              \
        double lanes_[SUM_LANES] = {0};                                               \
        const int64_t whole_ = (n) / SUM_LANES * SUM_LANES;                           \
        for (int64_t base_ = 0; base_ < whole_; base_ += SUM_LANES)                   \
            for (int k_ = 0; k_ < SUM_LANES; k_++) {                                  \
                const int64_t i = base_ + k_;                                         \
                lanes_[k_] += (double)(TERM);                                         \
            }                                                                         \
        for (int64_t i = whole_; i < (n); i++) lanes_[i - whole_] += (double)(TERM);  \
        for (int width_ = SUM_LANES / 2; width_ >= 1; width_ /= 2)                    \
            for (int k_ = 0; k_ < width_; k_++) lanes_[k_] += lanes_[k_ + width_];    \
        (result) = lanes_[0];                                                         \
    } while (0)

/* The element pointer of a contiguous view (NULL for a missing one). */
#define AT(CTYPE, v) ((v) ? (CTYPE *)(v)->data + (v)->offset : NULL)

static const double SQRT_HALF = 0.70710678118654752440;
static const double SQRT_TWO_OVER_PI = 0.79788456080286535588;
static const double INV_SQRT_TWO_PI = 0.39894228040143267794;
static const double GELU_CUBIC = 0.044715;

/* tanh and exp in each precision: gt_math.h's vectorisable float32 versions. */
#define TANH_f32 gt_tanh_f32
#define TANH_f64 tanh
#define ERF_f32 erff
#define ERF_f64 erf
#define EXP_f32 gt_exp_f32
#define EXP_f64 exp
#define SQRT_f32 sqrtf
#define SQRT_f64 sqrt
#define FMA_f32 fmaf
#define FMA_f64 fma

/* One function per float type for each kernel, from one body. */
#define DEFINE_TRANSFORMER(S, T)                                                              \
    /* ------------------------------------------------------------- LayerNorm */            \
    /* PyTorch's arithmetic (moments.c): the row's mean and variance in T,  */               \
    /* rstd = 1 / sqrt(max(var, 0) + eps) in T, and each output one fused   */               \
    /* multiply-add: y = fma((x - mean) * rstd, w, b).                      */               \
    static void layer_norm_row_##S(T *y, T *mean, T *rstd, const T *x, const T *w,           \
                                   const T *b, int64_t n, double eps, T m, T var)            \
    {                                                                                         \
        if (var < (T)0) var = (T)0; /* a NaN stays NaN */                                     \
        const T root = SQRT_##S(var + (T)eps); /* 1 / sqrt: two roundings, as PyTorch */    \
        const T s = (T)1 / root;                                                              \
        *mean = m, *rstd = s;                                                                 \
        if (w && b) /* the test hoisted out of the loop, which then vectorises */            \
            for (int64_t j = 0; j < n; j++) y[j] = FMA_##S((x[j] - m) * s, w[j], b[j]);      \
        else if (w || b)                                                                      \
            for (int64_t j = 0; j < n; j++)                                                   \
                y[j] = FMA_##S((x[j] - m) * s, w ? w[j] : (T)1, b ? b[j] : (T)0);             \
        else                                                                                  \
            for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) * s;                            \
    }                                                                                         \
                                                                                              \
    static void layer_norm_##S(gt_view *out, gt_view *mean, gt_view *rstd,                    \
                               const gt_view *input, const gt_view *weight,                   \
                               const gt_view *bias, double eps, int64_t rows, int64_t n)      \
    {                                                                                         \
        T *y = AT(T, out), *mu = AT(T, mean), *rs = AT(T, rstd);                              \
        const T *x = AT(const T, input), *w = AT(const T, weight), *b = AT(const T, bias);    \
        /* The moments MOMENTS_ROWS rows at a time (see moments.c: faster, same bits). */    \
        const int64_t groups = (rows + MOMENTS_ROWS - 1) / MOMENTS_ROWS;                      \
        _Pragma("omp parallel for schedule(static) if (rows * n >= GT_PARALLEL_THRESHOLD)")   \
        for (int64_t g = 0; g < groups; g++) {                                                \
            const int64_t first = g * MOMENTS_ROWS;                                           \
            T m[MOMENTS_ROWS], var[MOMENTS_ROWS];                                             \
            const int64_t count = rows - first < MOMENTS_ROWS ? rows - first : MOMENTS_ROWS;  \
            if (count == MOMENTS_ROWS)                                                        \
                gt_rows_moments_##S(x + first * n, n, n, m, var);                             \
            else                                                                              \
                for (int64_t r = 0; r < count; r++)                                           \
                    gt_row_moments_##S(x + (first + r) * n, n, m + r, var + r);               \
            for (int64_t r = 0; r < count; r++) {                                             \
                const int64_t row = first + r;                                                \
                layer_norm_row_##S(y + row * n, mu + row, rs + row, x + row * n, w, b, n, eps, \
                                   m[r], var[r]);                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* grad_input of one row: rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w. */   \
    /* Optimization: with and without a weight as two loops, the test for it  */           \
    /* hoisted out: inside them it kept GCC from vectorising (2.2x slower).   */           \
    static void layer_norm_grad_row_##S(T *gi, const T *dy, const T *x, T mean, T rstd,      \
                                        const T *w, int64_t n)                                \
    {                                                                                         \
        double sum_g, sum_g_xhat;                                                             \
        if (w) {                                                                              \
            LANE_SUM(sum_g, n, dy[i] * w[i]);                                                 \
            LANE_SUM(sum_g_xhat, n, dy[i] * w[i] * ((x[i] - mean) * rstd));                   \
        } else {                                                                              \
            LANE_SUM(sum_g, n, dy[i]);                                                        \
            LANE_SUM(sum_g_xhat, n, dy[i] * ((x[i] - mean) * rstd));                          \
        }                                                                                     \
        const T mean_g = (T)(sum_g / (double)n), mean_g_xhat = (T)(sum_g_xhat / (double)n);  \
        if (w) {                                                                              \
            for (int64_t j = 0; j < n; j++)                                                   \
                gi[j] = rstd * (dy[j] * w[j] - mean_g - (x[j] - mean) * rstd * mean_g_xhat);  \
        } else {                                                                              \
            for (int64_t j = 0; j < n; j++)                                                   \
                gi[j] = rstd * (dy[j] - mean_g - (x[j] - mean) * rstd * mean_g_xhat);         \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* grad_weight and grad_bias for columns [start, end): each column summed over    */     \
    /* the rows in order, in double.                                                  */     \
    static void layer_norm_param_grads_##S(T *gw, T *gb, const T *dy, const T *x,            \
                                           const T *mean, const T *rstd, int64_t rows,        \
                                           int64_t n, int64_t start, int64_t end)             \
    {                                                                                         \
        double acc_w[COLUMN_BLOCK] = {0}, acc_b[COLUMN_BLOCK] = {0};                          \
        const int64_t width = end - start;                                                    \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *dyr = dy + r * n + start, *xr = x + r * n + start;                       \
            const T m = mean[r], s = rstd[r];                                                 \
            for (int64_t k = 0; k < width; k++) {                                             \
                acc_w[k] += (double)(dyr[k] * ((xr[k] - m) * s));                             \
                acc_b[k] += (double)dyr[k];                                                   \
            }                                                                                 \
        }                                                                                     \
        for (int64_t k = 0; k < width; k++) {                                                 \
            if (gw) gw[start + k] = (T)acc_w[k];                                              \
            if (gb) gb[start + k] = (T)acc_b[k];                                              \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static void layer_norm_backward_##S(gt_view *grad_input, gt_view *grad_weight,            \
                                        gt_view *grad_bias, const gt_view *grad_output,       \
                                        const gt_view *input, const gt_view *mean,            \
                                        const gt_view *rstd, const gt_view *weight,           \
                                        int64_t rows, int64_t n)                              \
    {                                                                                         \
        const T *dy = AT(const T, grad_output), *x = AT(const T, input);                      \
        const T *mu = AT(const T, mean), *rs = AT(const T, rstd), *w = AT(const T, weight);   \
        T *gi = AT(T, grad_input), *gw = AT(T, grad_weight), *gb = AT(T, grad_bias);          \
        const int parallel = rows * n >= GT_PARALLEL_THRESHOLD;                               \
        if (gi) {                                                                             \
            _Pragma("omp parallel for schedule(static) if (parallel)")                        \
            for (int64_t r = 0; r < rows; r++)                                                \
                layer_norm_grad_row_##S(gi + r * n, dy + r * n, x + r * n, mu[r], rs[r], w, n); \
        }                                                                                     \
        if (gw || gb) {                                                                       \
            const int64_t blocks = (n + COLUMN_BLOCK - 1) / COLUMN_BLOCK;                     \
            _Pragma("omp parallel for schedule(static) if (parallel)")                        \
            for (int64_t c = 0; c < blocks; c++) {                                            \
                const int64_t start = c * COLUMN_BLOCK;                                       \
                const int64_t end = start + COLUMN_BLOCK < n ? start + COLUMN_BLOCK : n;      \
                layer_norm_param_grads_##S(gw, gb, dy, x, mu, rs, rows, n, start, end);      \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* ------------------------------------------------------------------ GELU */            \
    static void gelu_##S(T *y, const T *x, int64_t count, int approximate)                   \
    {                                                                                         \
        const T k0 = (T)SQRT_TWO_OVER_PI, k1 = (T)GELU_CUBIC, half = (T)0.5;                  \
        if (approximate) {                                                                    \
            _Pragma("omp parallel for simd schedule(static) if (count >= GT_PARALLEL_THRESHOLD)") \
            for (int64_t i = 0; i < count; i++) {                                             \
                const T v = x[i];                                                             \
                y[i] = half * v * ((T)1 + TANH_##S(k0 * (v + k1 * v * v * v)));               \
            }                                                                                 \
        } else {                                                                              \
            _Pragma("omp parallel for schedule(static) if (count >= GT_PARALLEL_THRESHOLD)")  \
            for (int64_t i = 0; i < count; i++)                                               \
                y[i] = x[i] * half * ((T)1 + ERF_##S(x[i] * (T)SQRT_HALF));                   \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    static void gelu_backward_##S(T *gi, const T *g, const T *x, int64_t count,              \
                                  int approximate)                                            \
    {                                                                                         \
        const T k0 = (T)SQRT_TWO_OVER_PI, k1 = (T)GELU_CUBIC, half = (T)0.5;                  \
        if (approximate) {                                                                    \
            _Pragma("omp parallel for simd schedule(static) if (count >= GT_PARALLEL_THRESHOLD)") \
            for (int64_t i = 0; i < count; i++) {                                             \
                const T v = x[i], t = TANH_##S(k0 * (v + k1 * v * v * v));                    \
                const T d_inner = k0 * ((T)1 + (T)3 * k1 * v * v);                            \
                gi[i] = g[i] * (half * ((T)1 + t) + half * v * ((T)1 - t * t) * d_inner);     \
            }                                                                                 \
        } else {                                                                              \
            _Pragma("omp parallel for schedule(static) if (count >= GT_PARALLEL_THRESHOLD)")  \
            for (int64_t i = 0; i < count; i++) {                                             \
                const T v = x[i];                                                             \
                const T cdf = half * ((T)1 + ERF_##S(v * (T)SQRT_HALF));                      \
                const T pdf = EXP_##S(-half * v * v) * (T)INV_SQRT_TWO_PI;                    \
                gi[i] = g[i] * (cdf + v * pdf);                                               \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
                                                                                              \
    /* ------------------------------------------------------------- softmax */              \
    static void softmax_backward_##S(T *gi, const T *g, const T *y, int64_t rows, int64_t n, \
                                     T scale)                                                 \
    {                                                                                         \
        _Pragma("omp parallel for schedule(static) if (rows * n >= GT_PARALLEL_THRESHOLD)")   \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *gr = g + r * n, *yr = y + r * n;                                         \
            T *out = gi + r * n;                                                              \
            double dot;                                                                       \
            LANE_SUM(dot, n, gr[i] * yr[i]);                                                  \
            const T d = (T)dot;                                                               \
            for (int64_t j = 0; j < n; j++) out[j] = scale * yr[j] * (gr[j] - d);             \
        }                                                                                     \
    }

/* Columns per task of the weight and bias gradients: two cache lines of float32. */
#define COLUMN_BLOCK 32

DEFINE_TRANSFORMER(f32, float)
DEFINE_TRANSFORMER(f64, double)

/* One row of the attention softmax: y[0..visible) = softmax(scale * x[0..visible)),
 * y[visible..n) = 0. The maximum is NaN-propagating (a NaN maximum shifts by
 * 0, so the NaN spreads through the sum), as in reductions.c's softmax.
 *
 * Attention rows are short (a context of 64, and fewer visible columns in a
 * causal row), so the maximum is one `omp simd` max reduction fused with the
 * scaling, plus a NaN flag: gt_max_f32's 64 running lanes (made for long
 * rows) cost more to seed and fold than such a row takes to scan. */
static void attention_row_f32(float *y, const float *x, int64_t visible, int64_t n, float scale)
{
    float shift = -INFINITY;
    int nan = 0;
#pragma omp simd reduction(max : shift) reduction(| : nan)
    for (int64_t j = 0; j < visible; j++) {
        const float v = scale * x[j];
        y[j] = v;
        shift = v > shift ? v : shift;
        nan |= v != v;
    }
    if (nan) shift = 0.0f;
    const double total = gt_exp_sum_f32(y, y, visible, shift); /* exp(y - shift), vectorised */
    const float inverse = total != 0 ? (float)(1.0 / total) : NAN;
    for (int64_t j = 0; j < visible; j++) y[j] *= inverse;
    for (int64_t j = visible; j < n; j++) y[j] = 0.0f;
}

static void attention_row_f64(double *y, const double *x, int64_t visible, int64_t n,
                              double scale)
{
    double shift = scale * x[0];
    for (int64_t j = 0; j < visible; j++) {
        const double v = scale * x[j];
        y[j] = v;
        if (v > shift || v != v) shift = v; /* a NaN, once taken, is never replaced */
    }
    if (shift != shift) shift = 0.0;
    for (int64_t j = 0; j < visible; j++) y[j] = y[j] != y[j] ? y[j] : exp(y[j] - shift);
    double total;
    LANE_SUM(total, visible, y[i]);
    const double inverse = total != 0 ? 1.0 / total : NAN;
    for (int64_t j = 0; j < visible; j++) y[j] *= inverse;
    for (int64_t j = visible; j < n; j++) y[j] = 0.0;
}

/* ------------------------------------------------------------ entry points */

/* Whether every non-NULL view is contiguous and of `dtype` (a float dtype). */
static int float_contiguous(int dtype, const gt_view *const *views, int count)
{
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return 0;
    for (int k = 0; k < count; k++)
        if (views[k] && (views[k]->dtype != dtype || !gt_is_contiguous(views[k]))) return 0;
    return 1;
}

/* (rows, n) of a contiguous view whose rows are its last dimension. */
static int64_t row_length(const gt_view *v) { return v->ndim ? v->shape[v->ndim - 1] : 1; }
static int64_t row_count(const gt_view *v)
{
    const int64_t n = row_length(v);
    return n ? gt_numel(v) / n : 0;
}

int gt_layer_norm(gt_view *out, gt_view *mean, gt_view *rstd, const gt_view *input,
                  const gt_view *weight, const gt_view *bias, double eps)
{
    const gt_view *all[] = {out, mean, rstd, input, weight, bias};
    if (!float_contiguous(input->dtype, all, 6)) return -1;
    const int64_t rows = row_count(input), n = row_length(input);
    if (rows == 0 || n == 0) return 0;
    if (input->dtype == GT_FLOAT32)
        layer_norm_f32(out, mean, rstd, input, weight, bias, eps, rows, n);
    else
        layer_norm_f64(out, mean, rstd, input, weight, bias, eps, rows, n);
    return 0;
}

int gt_layer_norm_backward(gt_view *grad_input, gt_view *grad_weight, gt_view *grad_bias,
                           const gt_view *grad_output, const gt_view *input,
                           const gt_view *mean, const gt_view *rstd, const gt_view *weight)
{
    const gt_view *all[] = {grad_input, grad_weight, grad_bias, grad_output,
                            input,      mean,        rstd,      weight};
    if (!float_contiguous(input->dtype, all, 8)) return -1;
    const int64_t rows = row_count(input), n = row_length(input);
    if (n == 0) return 0;
    if (input->dtype == GT_FLOAT32)
        layer_norm_backward_f32(grad_input, grad_weight, grad_bias, grad_output, input, mean,
                                rstd, weight, rows, n);
    else
        layer_norm_backward_f64(grad_input, grad_weight, grad_bias, grad_output, input, mean,
                                rstd, weight, rows, n);
    return 0;
}

int gt_gelu(gt_view *out, const gt_view *input, int approximate)
{
    const gt_view *all[] = {out, input};
    if (!float_contiguous(input->dtype, all, 2)) return -1;
    const int64_t count = gt_numel(input);
    if (input->dtype == GT_FLOAT32)
        gelu_f32(AT(float, out), AT(const float, input), count, approximate);
    else
        gelu_f64(AT(double, out), AT(const double, input), count, approximate);
    return 0;
}

int gt_gelu_backward(gt_view *grad_input, const gt_view *grad_output, const gt_view *input,
                     int approximate)
{
    const gt_view *all[] = {grad_input, grad_output, input};
    if (!float_contiguous(input->dtype, all, 3)) return -1;
    const int64_t count = gt_numel(input);
    if (input->dtype == GT_FLOAT32)
        gelu_backward_f32(AT(float, grad_input), AT(const float, grad_output),
                          AT(const float, input), count, approximate);
    else
        gelu_backward_f64(AT(double, grad_input), AT(const double, grad_output),
                          AT(const double, input), count, approximate);
    return 0;
}

int gt_attention_softmax(gt_view *out, const gt_view *scores, double scale, int causal)
{
    const gt_view *all[] = {out, scores};
    if (!float_contiguous(scores->dtype, all, 2) || scores->ndim != 3) return -1;
    const int64_t length = scores->shape[1], n = scores->shape[2];
    const int64_t rows = scores->shape[0] * length;
    if (rows == 0 || n == 0) return 0;
    const int is_f32 = scores->dtype == GT_FLOAT32;
#pragma omp parallel for schedule(static) if (rows * n >= GT_PARALLEL_THRESHOLD)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = r % length; /* the query position */
        const int64_t visible = causal ? (i + 1 < n ? i + 1 : n) : n;
        if (is_f32)
            attention_row_f32(AT(float, out) + r * n, AT(const float, scores) + r * n, visible,
                              n, (float)scale);
        else
            attention_row_f64(AT(double, out) + r * n, AT(const double, scores) + r * n,
                              visible, n, scale);
    }
    return 0;
}

int gt_softmax_backward(gt_view *grad_input, const gt_view *grad_output, const gt_view *output,
                        double scale)
{
    const gt_view *all[] = {grad_input, grad_output, output};
    if (!float_contiguous(output->dtype, all, 3)) return -1;
    const int64_t rows = row_count(output), n = row_length(output);
    if (rows == 0 || n == 0) return 0;
    if (output->dtype == GT_FLOAT32)
        softmax_backward_f32(AT(float, grad_input), AT(const float, grad_output),
                             AT(const float, output), rows, n, (float)scale);
    else
        softmax_backward_f64(AT(double, grad_input), AT(const double, grad_output),
                             AT(const double, output), rows, n, scale);
    return 0;
}
