/* optim.c: the optimizer updates, one pass over the parameters each.
 *
 * Why fused: written with tensor operations, one Adam step reads and writes
 * the parameter and its state a dozen times over (one pass per + and *). Here
 * each element is loaded once, updated in registers and stored once, so the
 * step runs at memory speed; the loop is split across OpenMP threads when the
 * parameter is large, and vectorises (GCC moves the loop-invariant `if`s out
 * of the loop, "unswitching", leaving straight-line code inside).
 *
 * The arithmetic mirrors reference/optim.py operation for operation: it runs
 * in double (Python's float), and a state value is rounded to the buffer's
 * dtype when it is stored, then used in that rounded form, as the reference
 * reads it back. fp-contract=off keeps GCC from fusing a * b + c into one FMA,
 * which would round differently.
 */
#pragma GCC optimize("fp-contract=off")

#include <math.h>
#include <stdint.h>

#include "optim.h"

/* Optimization (threads from a few thousand elements): an update costs far
 * more per element than a copy (the double-precision square root and
 * divisions that mirror the reference tier take about 6 cycles per element
 * in Adam), so a parameter is split across the threads from this many
 * elements up, well below GT_PARALLEL_THRESHOLD, the memory-bound loops'
 * limit. GPT-mini's 128 x 128 weights (16,384 elements) ran on one thread. */
#define OPTIM_PARALLEL_MIN 4096

/* Element 0 of a contiguous 1-D view, as a T pointer (NULL for NULL). */
#define AT(T, v) ((v) ? (T *)(v)->data + (v)->offset : (T *)0)

/* Each kernel's body is written once, for a storage type T (float or double)
 * and a constant DECAY (1 when weight decay applies, that is when
 * weight_decay != 0), and expanded for all four pairs: DISPATCH calls, say,
 * BODY(float, 0). With DECAY a constant, the common weight_decay = 0 loop has
 * no decay term at all, rather than a test per element, which stops GCC from
 * vectorising the loop. */
#define DISPATCH(BODY)                                                              \
    switch (param->dtype) {                                                         \
    case GT_FLOAT32:                                                                \
        if (weight_decay != 0) BODY(float, 1) else BODY(float, 0)                   \
        return 0;                                                                   \
    case GT_FLOAT64:                                                                \
        if (weight_decay != 0) BODY(double, 1) else BODY(double, 0)                 \
        return 0;                                                                   \
    default: return -1;                                                             \
    }

/* g = -grad if maximize else grad; then plain (coupled) weight decay, which
 * PyTorch skips when it is 0, so an inf weight stays inf instead of turning
 * into inf * 0 = NaN. */
#define GRADIENT(i) (maximize ? -(double)g[i] : (double)g[i])
#define DIRECTION(i, DECAY) ((DECAY) ? GRADIENT(i) + weight_decay * (double)p[i] : GRADIENT(i))

/* -------------------------------------------------------------------- SGD */
#define SGD_BODY(T, DECAY)                                                          \
    {                                                                               \
        T *p = AT(T, param), *buf = AT(T, momentum_buffer);                         \
        const T *g = AT(T, grad);                                                   \
        _Pragma("omp parallel for if (n >= OPTIM_PARALLEL_MIN)")                 \
        for (int64_t i = 0; i < n; i++) {                                           \
            double d = DIRECTION(i, DECAY);                                         \
            if (use_momentum) {                                                     \
                const double b = first_step ? d : momentum * buf[i] + (1.0 - dampening) * d; \
                buf[i] = (T)b; /* stored, then used as stored */                    \
                d = nesterov ? d + momentum * (double)buf[i] : (double)buf[i];      \
            }                                                                       \
            p[i] = (T)(p[i] - lr * d);                                              \
        }                                                                           \
    }

int gt_sgd_step(gt_view *param, const gt_view *grad, gt_view *momentum_buffer, double lr,
                double weight_decay, double momentum, double dampening, int nesterov,
                int maximize, int first_step)
{
    const int64_t n = param->shape[0];
    const int use_momentum = momentum != 0 && momentum_buffer != 0;
    DISPATCH(SGD_BODY)
}

/* ------------------------------------------------------------ Adam, AdamW */
#define ADAM_BODY(T, DECAY)                                                         \
    {                                                                               \
        T *p = AT(T, param), *m = AT(T, exp_avg), *v = AT(T, exp_avg_sq);           \
        T *vmax = AT(T, max_exp_avg_sq);                                            \
        const T *g = AT(T, grad);                                                   \
        _Pragma("omp parallel for if (n >= OPTIM_PARALLEL_MIN)")                 \
        for (int64_t i = 0; i < n; i++) {                                           \
            double d = GRADIENT(i);                                                 \
            if (decoupled_weight_decay)                                             \
                p[i] = (T)(p[i] * (1.0 - lr * weight_decay));                       \
            else if (DECAY)                                                         \
                d = d + weight_decay * (double)p[i];                                \
            m[i] = (T)(beta1 * m[i] + (1.0 - beta1) * d);                           \
            v[i] = (T)(beta2 * v[i] + (1.0 - beta2) * d * d);                       \
            double used = v[i];                                                     \
            if (vmax) { /* amsgrad: the largest second moment so far */             \
                vmax[i] = (T)(used > (double)vmax[i] ? used : (double)vmax[i]);     \
                used = vmax[i];                                                     \
            }                                                                       \
            const double denom = sqrt(used) / bias2_sqrt + eps;                     \
            p[i] = (T)(p[i] - (lr / bias1) * m[i] / denom);                         \
        }                                                                           \
    }

int gt_adam_step(gt_view *param, const gt_view *grad, gt_view *exp_avg, gt_view *exp_avg_sq,
                 gt_view *max_exp_avg_sq, double lr, double beta1, double beta2, double eps,
                 double weight_decay, int decoupled_weight_decay, int maximize, double bias1,
                 double bias2_sqrt)
{
    const int64_t n = param->shape[0];
    DISPATCH(ADAM_BODY)
}

/* ---------------------------------------------------------------- RMSprop */
#define RMSPROP_BODY(T, DECAY)                                                      \
    {                                                                               \
        T *p = AT(T, param), *sq = AT(T, square_avg), *buf = AT(T, momentum_buffer); \
        T *ga = AT(T, grad_avg);                                                    \
        const T *g = AT(T, grad);                                                   \
        _Pragma("omp parallel for if (n >= OPTIM_PARALLEL_MIN)")                 \
        for (int64_t i = 0; i < n; i++) {                                           \
            const double d = DIRECTION(i, DECAY);                                   \
            sq[i] = (T)(alpha * sq[i] + (1.0 - alpha) * d * d);                     \
            double avg;                                                             \
            if (ga) { /* centered: subtract the squared mean gradient */            \
                ga[i] = (T)(alpha * ga[i] + (1.0 - alpha) * d);                     \
                const double var = (double)sq[i] - (double)ga[i] * (double)ga[i];   \
                avg = sqrt(0.0 > var ? 0.0 : var) + eps;                            \
            } else {                                                                \
                avg = sqrt((double)sq[i]) + eps;                                    \
            }                                                                       \
            if (buf) {                                                              \
                buf[i] = (T)(momentum * buf[i] + d / avg);                          \
                p[i] = (T)(p[i] - lr * (double)buf[i]);                             \
            } else {                                                                \
                p[i] = (T)(p[i] - lr * d / avg);                                    \
            }                                                                       \
        }                                                                           \
    }

int gt_rmsprop_step(gt_view *param, const gt_view *grad, gt_view *square_avg,
                    gt_view *momentum_buffer, gt_view *grad_avg, double lr, double alpha,
                    double eps, double weight_decay, double momentum, int maximize)
{
    const int64_t n = param->shape[0];
    DISPATCH(RMSPROP_BODY)
}

/* ---------------------------------------------------------------- Adagrad */
#define ADAGRAD_BODY(T, DECAY)                                                      \
    {                                                                               \
        T *p = AT(T, param), *s = AT(T, state_sum);                                 \
        const T *g = AT(T, grad);                                                   \
        _Pragma("omp parallel for if (n >= OPTIM_PARALLEL_MIN)")                 \
        for (int64_t i = 0; i < n; i++) {                                           \
            const double d = DIRECTION(i, DECAY);                                   \
            s[i] = (T)(s[i] + d * d);                                               \
            p[i] = (T)(p[i] - clr * d / (sqrt((double)s[i]) + eps));                \
        }                                                                           \
    }

int gt_adagrad_step(gt_view *param, const gt_view *grad, gt_view *state_sum, double clr,
                    double weight_decay, double eps, int maximize)
{
    const int64_t n = param->shape[0];
    DISPATCH(ADAGRAD_BODY)
}

/* --------------------------------------------------------------- Adadelta */
#define ADADELTA_BODY(T, DECAY)                                                     \
    {                                                                               \
        T *p = AT(T, param), *sq = AT(T, square_avg), *acc = AT(T, acc_delta);      \
        const T *g = AT(T, grad);                                                   \
        _Pragma("omp parallel for if (n >= OPTIM_PARALLEL_MIN)")                 \
        for (int64_t i = 0; i < n; i++) {                                           \
            const double d = DIRECTION(i, DECAY);                                   \
            sq[i] = (T)(rho * sq[i] + (1.0 - rho) * d * d);                         \
            const double delta = sqrt((double)acc[i] + eps) / sqrt((double)sq[i] + eps) * d; \
            acc[i] = (T)(rho * acc[i] + (1.0 - rho) * delta * delta);               \
            p[i] = (T)(p[i] - lr * delta);                                          \
        }                                                                           \
    }

int gt_adadelta_step(gt_view *param, const gt_view *grad, gt_view *square_avg,
                     gt_view *acc_delta, double lr, double rho, double eps, double weight_decay,
                     int maximize)
{
    const int64_t n = param->shape[0];
    DISPATCH(ADADELTA_BODY)
}
