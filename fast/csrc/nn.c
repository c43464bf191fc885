/* nn.c: the fused cross-entropy, log_softmax and negative log-likelihood in
 * one pass over each row of logits, and its gradient.
 *
 * For row x of C logits and its label t (reference/nn.py):
 *
 *     m         = max(x)                (NaN-propagating; a NaN max shifts by 0)
 *     log_sum   = log(sum_j exp(x_j - m))
 *     log_probs = (x - m) - log_sum
 *     loss      = w_t * (log_sum - (x_t - m))   (0 where t == ignore_index)
 *
 * with w_t the class weight of t (1 without weights). Its gradient with
 * respect to x, for the backward pass, is w_t * (exp(log_probs) - one_hot(t)).
 *
 * Fusing saves memory traffic: the row is read three times while it is in
 * cache (max, sum of exps, log_probs), instead of materialising exp(x) and
 * log_softmax(x) as separate tensors and reading them again for the loss.
 * Subtracting m first keeps every exponent <= 0, so nothing overflows.
 *
 * float32 rows use the vectorisable exp of gt_math.h: a contiguous row goes
 * through gt_max_f32 and gt_exp_sum_f32 (the loops softmax uses), with its
 * log_probs row as scratch for the exps before they are overwritten; a
 * strided row sums its exps in GT_CE_LANES double accumulators. float64 rows
 * use libm's exp.
 * Rows are independent, so they are spread across OpenMP threads.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "gt_common.h"
#include "gt_math.h"
#include "nn.h"
#include "reductions.h"

#define GT_CE_LANES 16

/* log(sum(exp(x - m))) for one float32 row of c strided logits, and its
 * shift m (the row's max) in *shift. The shift is subtracted from each logit
 * before anything is added to it: m + log(3) is m again when m is 1e30, so
 * x - (m + log_sum) would lose the log_sum that (x - m) - log_sum keeps.
 * `scratch` (c floats, or NULL) is where a contiguous row may keep its exps
 * on the way: then the row takes gt_math.h's vectorised loops, as softmax
 * does. */
static double log_sum_exp_f32(const float *x, int64_t stride, int64_t c, float *scratch,
                              double *shift)
{
    *shift = 0.0;
    if (c == 0) return -INFINITY; /* log of an empty sum */
    if (stride == 1 && scratch != NULL) {
        float m = gt_max_f32(x, c);
        if (m != m) m = 0.0f; /* a NaN logit makes the whole row NaN through the sum */
        *shift = m;
        return log(gt_exp_sum_f32(scratch, x, c, m));
    }
    float m = gt_row_max_f32(x, c, stride);
    if (m != m) m = 0.0f;
    *shift = m;
    double lanes[GT_CE_LANES] = {0};
    for (int64_t j = 0; j < c; j++) lanes[j % GT_CE_LANES] += (double)gt_exp_f32(x[j * stride] - m);
    for (int width = GT_CE_LANES / 2; width >= 1; width /= 2)
        for (int k = 0; k < width; k++) lanes[k] += lanes[k + width];
    return log(lanes[0]);
}

static double log_sum_exp_f64(const double *x, int64_t stride, int64_t c, double *scratch,
                              double *shift)
{
    (void)scratch; /* libm's exp: no vector loop to feed */
    *shift = 0.0;
    if (c == 0) return -INFINITY;
    double m = gt_row_max_f64(x, c, stride);
    if (m != m) m = 0.0;
    *shift = m;
    double lanes[GT_CE_LANES] = {0};
    for (int64_t j = 0; j < c; j++) lanes[j % GT_CE_LANES] += exp(x[j * stride] - m);
    for (int width = GT_CE_LANES / 2; width >= 1; width /= 2)
        for (int k = 0; k < width; k++) lanes[k] += lanes[k + width];
    return log(lanes[0]);
}

/* Copy the n labels into `labels`, each read once (GT_READ_ONCE), and return
 * the first row whose label is neither ignore_index nor in [0, c), or -1.
 *
 * The copy is what makes the check hold: another thread may write the target
 * tensor while the kernel runs, so the rows use the labels that were checked,
 * never the tensor again. It costs n int64 copies against the n * c logits
 * each row reads. */
static int64_t copy_labels(int64_t *labels, const gt_view *target, int64_t c,
                           int64_t ignore_index)
{
    const int64_t *t = (const int64_t *)target->data + target->offset;
    const int64_t n = target->shape[0], st = target->strides[0];
    for (int64_t i = 0; i < n; i++) {
        const int64_t label = GT_READ_ONCE(&t[i * st]);
        if (label != ignore_index && GT_INDEX_OUTSIDE(label, c)) return i;
        labels[i] = label;
    }
    return -1;
}

/* The forward kernel, written once for both float types. Each row: log_probs
 * from the log-sum-exp, then the row's weight (weight[label], 1 without class
 * weights, 0 when ignored) and its loss, -weight * log_probs[label].
 * `labels` is gt_cross_entropy's private copy of the target, checked. */
#define DEFINE_CROSS_ENTROPY(SUFFIX, CTYPE)                                                      \
    static void cross_entropy_##SUFFIX(gt_view *losses, gt_view *row_weights,                     \
                                       gt_view *log_probs, const gt_view *logits,                \
                                       const int64_t *labels, const gt_view *weight,             \
                                       int64_t ignore_index)                                     \
    {                                                                                            \
        const int64_t n = logits->shape[0], c = logits->shape[1];                                \
        const int64_t sx0 = logits->strides[0], sx1 = logits->strides[1];                        \
        const int64_t sp0 = log_probs->strides[0], sp1 = log_probs->strides[1];                  \
        const CTYPE *x = (const CTYPE *)logits->data + logits->offset;                           \
        CTYPE *lp = (CTYPE *)log_probs->data + log_probs->offset;                                \
        CTYPE *loss = (CTYPE *)losses->data + losses->offset;                                    \
        CTYPE *rw = (CTYPE *)row_weights->data + row_weights->offset;                            \
        const CTYPE *w = weight ? (const CTYPE *)weight->data + weight->offset : NULL;            \
        const int64_t sw = weight ? weight->strides[0] : 0;                                      \
        const int64_t sl = losses->strides[0], srw = row_weights->strides[0];                    \
        _Pragma("omp parallel for schedule(static) if (n * c >= GT_PARALLEL_THRESHOLD)")         \
        for (int64_t i = 0; i < n; i++) {                                                        \
            const CTYPE *row = x + i * sx0;                                                      \
            CTYPE *out = lp + i * sp0;                                                           \
            double m;                                                                            \
            const double log_sum = log_sum_exp_##SUFFIX(row, sx1, c, sp1 == 1 ? out : NULL, &m); \
            for (int64_t j = 0; j < c; j++)                                                      \
                out[j * sp1] = (CTYPE)(((double)row[j * sx1] - m) - log_sum);                    \
            const int64_t label = labels[i]; /* checked by copy_labels */                        \
            double row_weight = 0.0, value = 0.0;                                                \
            if (label != ignore_index) {                                                         \
                row_weight = w ? (double)w[label * sw] : 1.0;                                    \
                value = row_weight * (log_sum - ((double)row[label * sx1] - m));                 \
            }                                                                                    \
            rw[i * srw] = (CTYPE)row_weight;                                                     \
            loss[i * sl] = (CTYPE)value;                                                         \
        }                                                                                        \
    }
DEFINE_CROSS_ENTROPY(f32, float)
DEFINE_CROSS_ENTROPY(f64, double)

/* totals = (sum of losses, sum of row weights, their quotient), each sum in
 * double over the stored values in row order: one thread, after the rows, so
 * the result does not depend on how the rows were shared out. */
#define DEFINE_CROSS_ENTROPY_TOTALS(SUFFIX, CTYPE)                                               \
    static void cross_entropy_totals_##SUFFIX(gt_view *totals, const gt_view *losses,            \
                                              const gt_view *row_weights)                        \
    {                                                                                            \
        const CTYPE *l = (const CTYPE *)losses->data + losses->offset;                           \
        const CTYPE *w = (const CTYPE *)row_weights->data + row_weights->offset;                 \
        const int64_t n = losses->shape[0], sl = losses->strides[0], sw = row_weights->strides[0]; \
        double loss_sum = 0.0, weight_sum = 0.0;                                                 \
        for (int64_t i = 0; i < n; i++) {                                                        \
            loss_sum += (double)l[i * sl];                                                       \
            weight_sum += (double)w[i * sw];                                                     \
        }                                                                                        \
        CTYPE *t = (CTYPE *)totals->data + totals->offset;                                       \
        const int64_t st = totals->strides[0];                                                   \
        /* the mean is the ratio of the sums as stored (float32 sums past 3.4e38: inf/inf, NaN) */ \
        const CTYPE loss_total = (CTYPE)loss_sum, weight_total = (CTYPE)weight_sum;              \
        t[0] = loss_total;                                                                       \
        t[st] = weight_total;                                                                    \
        t[2 * st] = (CTYPE)(weight_total != 0 ? (double)loss_total / (double)weight_total : NAN); \
    }
DEFINE_CROSS_ENTROPY_TOTALS(f32, float)
DEFINE_CROSS_ENTROPY_TOTALS(f64, double)

int64_t gt_cross_entropy(gt_view *losses, gt_view *row_weights, gt_view *totals,
                         gt_view *log_probs, const gt_view *logits, const gt_view *target,
                         const gt_view *weight, int64_t ignore_index)
{
    const int dtype = logits->dtype;
    if (dtype != log_probs->dtype || dtype != losses->dtype || dtype != row_weights->dtype ||
        dtype != totals->dtype ||
        (weight && weight->dtype != dtype) || target->dtype != GT_INT64 ||
        (dtype != GT_FLOAT32 && dtype != GT_FLOAT64))
        return -2;
    const int64_t n = target->shape[0];
    int64_t *labels = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!labels) return -3;
    int64_t bad = copy_labels(labels, target, logits->shape[1], ignore_index);
    if (bad >= 0) {
        free(labels);
        return bad; /* nothing read through a bad label, nothing written */
    }
    if (dtype == GT_FLOAT32) {
        cross_entropy_f32(losses, row_weights, log_probs, logits, labels, weight, ignore_index);
        cross_entropy_totals_f32(totals, losses, row_weights);
    } else {
        cross_entropy_f64(losses, row_weights, log_probs, logits, labels, weight, ignore_index);
        cross_entropy_totals_f64(totals, losses, row_weights);
    }
    free(labels);
    return -1;
}

/* The backward kernel: grad[i, j] = g_i * w_i * (exp(log_probs[i, j]) - [j == t_i]).
 * A contiguous float32 row runs gt_exp_f32 in a loop the compiler vectorises,
 * then corrects the label's element once, instead of testing j == t in the
 * loop. Rows are independent: OpenMP across rows for large problems. */
#define GT_CE_EXP_f32 gt_exp_f32
#define GT_CE_EXP_f64 exp
#define DEFINE_CROSS_ENTROPY_BACKWARD(SUFFIX, CTYPE)                                             \
    static void cross_entropy_backward_##SUFFIX(gt_view *grad_logits, const gt_view *log_probs,   \
                                                const gt_view *target, const gt_view *weight,    \
                                                const gt_view *grad_losses,                      \
                                                int64_t ignore_index)                            \
    {                                                                                            \
        const int64_t n = log_probs->shape[0], c = log_probs->shape[1];                          \
        const int64_t so0 = grad_logits->strides[0], so1 = grad_logits->strides[1];              \
        const int64_t sp0 = log_probs->strides[0], sp1 = log_probs->strides[1];                  \
        CTYPE *o = (CTYPE *)grad_logits->data + grad_logits->offset;                             \
        const CTYPE *lp = (const CTYPE *)log_probs->data + log_probs->offset;                    \
        const CTYPE *g = (const CTYPE *)grad_losses->data + grad_losses->offset;                 \
        const CTYPE *w = weight ? (const CTYPE *)weight->data + weight->offset : NULL;            \
        const int64_t sw = weight ? weight->strides[0] : 0, sg = grad_losses->strides[0];        \
        const int64_t *t = (const int64_t *)target->data + target->offset;                       \
        const int64_t st = target->strides[0];                                                   \
        _Pragma("omp parallel for schedule(static) if (n * c >= GT_PARALLEL_THRESHOLD)")         \
        for (int64_t i = 0; i < n; i++) {                                                        \
            CTYPE *out = o + i * so0;                                                            \
            const CTYPE *row = lp + i * sp0;                                                     \
            const int64_t label = GT_READ_ONCE(&t[i * st]); /* read once, then checked */        \
            if (label == ignore_index || GT_INDEX_OUTSIDE(label, c)) {                           \
                for (int64_t j = 0; j < c; j++) out[j * so1] = (CTYPE)0; /* no gradient */       \
                continue;                                                                        \
            }                                                                                    \
            const CTYPE scale = (CTYPE)((double)g[i * sg] * (w ? (double)w[label * sw] : 1.0));  \
            if (so1 == 1 && sp1 == 1) {                                                          \
                for (int64_t j = 0; j < c; j++) out[j] = scale * GT_CE_EXP_##SUFFIX(row[j]);     \
            } else {                                                                             \
                for (int64_t j = 0; j < c; j++)                                                  \
                    out[j * so1] = scale * GT_CE_EXP_##SUFFIX(row[j * sp1]);                     \
            }                                                                                    \
            out[label * so1] = scale * (GT_CE_EXP_##SUFFIX(row[label * sp1]) - (CTYPE)1);        \
        }                                                                                        \
    }
DEFINE_CROSS_ENTROPY_BACKWARD(f32, float)
DEFINE_CROSS_ENTROPY_BACKWARD(f64, double)

int gt_cross_entropy_backward(gt_view *grad_logits, const gt_view *log_probs,
                              const gt_view *target, const gt_view *weight,
                              const gt_view *grad_losses, int64_t ignore_index)
{
    const int dtype = grad_logits->dtype;
    if (dtype != log_probs->dtype || dtype != grad_losses->dtype ||
        (weight && weight->dtype != dtype) || target->dtype != GT_INT64)
        return -1;
    if (dtype == GT_FLOAT32)
        cross_entropy_backward_f32(grad_logits, log_probs, target, weight, grad_losses,
                                   ignore_index);
    else if (dtype == GT_FLOAT64)
        cross_entropy_backward_f64(grad_logits, log_probs, target, weight, grad_losses,
                                   ignore_index);
    else
        return -1;
    return 0;
}
