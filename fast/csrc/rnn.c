/* rnn.c: one LSTM time step's elementwise work, forward and backward
 * (reference/nn.py, LSTMCellKernels, says the same in Python).
 *
 * Forward, for each row b and unit j, with the gates' pre-activations in
 * PyTorch's order i, f, g, o (four blocks of H along the row):
 *
 *     i, f, o = sigmoid(...), g = tanh(...)
 *     c = f * c_prev + i * g,   tanh_c = tanh(c),   h = o * tanh_c
 *
 * Backward, from the gradients d_h and d_c reaching h and c:
 *
 *     dc = d_c + d_h * o * (1 - tanh_c^2)
 *     d_gates = [dc g i(1-i), dc c_prev f(1-f), dc i (1-g^2), d_h tanh_c o(1-o)]
 *     d_c_prev = dc * f
 *
 * Fusing is the point: a step of nn.LSTM becomes one matrix product and one
 * call here, instead of a dozen small operations that each cost more in
 * Python than in arithmetic. The j loop is contiguous in every array and
 * float32 uses gt_math.h's branch-free sigmoid and tanh, so it vectorises;
 * large enough steps share their rows between the threads.
 */
#include <math.h>

#include "gt_common.h"
#include "gt_math.h"
#include "rnn.h"

static inline double gt_sigmoid_f64_rnn(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    const double e = exp(x);
    return e / (1.0 + e);
}

#define SIGMOID_F32 gt_sigmoid_f32
#define TANH_F32 gt_tanh_f32
#define SIGMOID_F64 gt_sigmoid_f64_rnn
#define TANH_F64 tanh

/* Optimization (rows in parallel): from this many units (batch x hidden) up,
 * the batch rows are shared out between the threads. A step follows a matrix
 * product that left half of its gates in each core's cache, and each unit
 * costs five exponentials: 32 x 256 units took 85 us on one thread inside a
 * training step. */
#define CELL_PARALLEL_MIN 4096

/* The element pointer of a contiguous view. */
#define AT(CTYPE, v) ((CTYPE *)(v)->data + (v)->offset)

/* One function per float type, from one body.
 *
 * Optimization: the work of one batch row is a function of its own over plain
 * `restrict` pointers, one per gate block. Written inline over the gt_view
 * structs, GCC could not prove that the stores miss the views' own fields and
 * gave up vectorising ("complicated access pattern"): the float32 step ran
 * scalar, about 10x slower. */
#define DEFINE_LSTM_CELL(SUFFIX, CTYPE, SIGMOID, TANH)                                           \
    static void lstm_row_##SUFFIX(int64_t hidden, const CTYPE *restrict z,                      \
                                  const CTYPE *restrict cp, CTYPE *restrict a,                   \
                                  CTYPE *restrict cc, CTYPE *restrict tc, CTYPE *restrict hh)    \
    {                                                                                            \
        const CTYPE *restrict zi = z, *restrict zf = z + hidden;                                 \
        const CTYPE *restrict zg = z + 2 * hidden, *restrict zo = z + 3 * hidden;                \
        CTYPE *restrict ai = a, *restrict af = a + hidden;                                       \
        CTYPE *restrict ag = a + 2 * hidden, *restrict ao = a + 3 * hidden;                      \
        for (int64_t j = 0; j < hidden; j++) {                                                   \
            const CTYPE i = SIGMOID(zi[j]), f = SIGMOID(zf[j]);                                  \
            const CTYPE g = TANH(zg[j]), o = SIGMOID(zo[j]);                                     \
            ai[j] = i, af[j] = f, ag[j] = g, ao[j] = o;                                          \
            const CTYPE cell = f * cp[j] + i * g, t = TANH(cell);                                \
            cc[j] = cell, tc[j] = t, hh[j] = o * t;                                              \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void lstm_cell_##SUFFIX(gt_view *h, gt_view *c, gt_view *act, gt_view *tanh_c,       \
                                   const gt_view *gates, const gt_view *c_prev)                  \
    {                                                                                            \
        const int64_t batch = h->shape[0], hidden = h->shape[1];                                 \
        _Pragma("omp parallel for schedule(static) if (batch * hidden >= CELL_PARALLEL_MIN)")    \
        for (int64_t b = 0; b < batch; b++)                                                      \
            lstm_row_##SUFFIX(hidden, AT(const CTYPE, gates) + b * 4 * hidden,                   \
                              AT(const CTYPE, c_prev) + b * hidden,                              \
                              AT(CTYPE, act) + b * 4 * hidden, AT(CTYPE, c) + b * hidden,        \
                              AT(CTYPE, tanh_c) + b * hidden, AT(CTYPE, h) + b * hidden);        \
    }                                                                                            \
                                                                                                 \
    static void lstm_row_backward_##SUFFIX(                                                      \
        int64_t hidden, const CTYPE *restrict a, const CTYPE *restrict tc,                       \
        const CTYPE *restrict cp, const CTYPE *restrict dh, const CTYPE *restrict dcn,           \
        CTYPE *restrict dz, CTYPE *restrict dcp)                                                 \
    {                                                                                            \
        const CTYPE *restrict ai = a, *restrict af = a + hidden;                                 \
        const CTYPE *restrict ag = a + 2 * hidden, *restrict ao = a + 3 * hidden;                \
        CTYPE *restrict dzi = dz, *restrict dzf = dz + hidden;                                   \
        CTYPE *restrict dzg = dz + 2 * hidden, *restrict dzo = dz + 3 * hidden;                  \
        for (int64_t j = 0; j < hidden; j++) {                                                   \
            const CTYPE i = ai[j], f = af[j], g = ag[j], o = ao[j], t = tc[j];                   \
            const CTYPE dc = dcn[j] + dh[j] * o * (1 - t * t);                                   \
            dzi[j] = dc * g * i * (1 - i);                                                       \
            dzf[j] = dc * cp[j] * f * (1 - f);                                                   \
            dzg[j] = dc * i * (1 - g * g);                                                       \
            dzo[j] = dh[j] * t * o * (1 - o);                                                    \
            dcp[j] = dc * f;                                                                     \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void lstm_cell_backward_##SUFFIX(gt_view *d_gates, gt_view *d_c_prev,                \
                                            const gt_view *d_h, const gt_view *d_c,              \
                                            const gt_view *act, const gt_view *tanh_c,           \
                                            const gt_view *c_prev)                               \
    {                                                                                            \
        const int64_t batch = d_h->shape[0], hidden = d_h->shape[1];                             \
        _Pragma("omp parallel for schedule(static) if (batch * hidden >= CELL_PARALLEL_MIN)")    \
        for (int64_t b = 0; b < batch; b++)                                                      \
            lstm_row_backward_##SUFFIX(                                                          \
                hidden, AT(const CTYPE, act) + b * 4 * hidden,                                   \
                AT(const CTYPE, tanh_c) + b * hidden, AT(const CTYPE, c_prev) + b * hidden,      \
                AT(const CTYPE, d_h) + b * hidden, AT(const CTYPE, d_c) + b * hidden,            \
                AT(CTYPE, d_gates) + b * 4 * hidden, AT(CTYPE, d_c_prev) + b * hidden);          \
    }

DEFINE_LSTM_CELL(f32, float, SIGMOID_F32, TANH_F32)
DEFINE_LSTM_CELL(f64, double, SIGMOID_F64, TANH_F64)

/* Whether every view is 2-D, contiguous and of `dtype`. */
static int contiguous_2d(int dtype, const gt_view *const *views, int count)
{
    for (int k = 0; k < count; k++) {
        const gt_view *v = views[k];
        if (v->dtype != dtype || v->ndim != 2 || v->strides[1] != 1 ||
            v->strides[0] != v->shape[1])
            return 0;
    }
    return 1;
}

int gt_lstm_cell(gt_view *h, gt_view *c, gt_view *activations, gt_view *tanh_c,
                 const gt_view *gates, const gt_view *c_prev)
{
    const gt_view *all[] = {h, c, activations, tanh_c, gates, c_prev};
    const int dtype = h->dtype;
    if (!contiguous_2d(dtype, all, 6)) return -1;
    if (dtype == GT_FLOAT32)
        lstm_cell_f32(h, c, activations, tanh_c, gates, c_prev);
    else if (dtype == GT_FLOAT64)
        lstm_cell_f64(h, c, activations, tanh_c, gates, c_prev);
    else
        return -1;
    return 0;
}

int gt_lstm_cell_backward(gt_view *d_gates, gt_view *d_c_prev, const gt_view *d_h,
                          const gt_view *d_c, const gt_view *activations,
                          const gt_view *tanh_c, const gt_view *c_prev)
{
    const gt_view *all[] = {d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev};
    const int dtype = d_h->dtype;
    if (!contiguous_2d(dtype, all, 7)) return -1;
    if (dtype == GT_FLOAT32)
        lstm_cell_backward_f32(d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev);
    else if (dtype == GT_FLOAT64)
        lstm_cell_backward_f64(d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev);
    else
        return -1;
    return 0;
}
