/* pooling.c: max and average pooling over (N, C, H, W) images and their
 * gradients (reference/conv.py's pooling section is the plain-loop
 * definition). One (n, c) plane per iteration, planes shared out by OpenMP.
 * Each window is clipped to the image once per output row and column
 * (valid_range, conv_window.h), so the inner loops carry no bounds tests.
 * Every view is contiguous, so addresses are plain row-major arithmetic;
 * float32 and float64 share each loop through a macro.
 */
#include <math.h>

#include "conv_window.h"
#include "pooling.h"

/* The taps k in [lo, hi) of output index o that land inside [0, size). */
static void window(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t k, int64_t size,
                   int64_t *lo, int64_t *hi)
{
    const int64_t start = o * stride - pad;
    /* tap t reads start + t * dil: the same question as valid_range, turned around */
    valid_range(start, dil, size, k, lo, hi);
}

#define DEFINE_MAX_POOL(T, SUFFIX)                                                                 \
    static void max_pool_##SUFFIX(gt_view *out, gt_view *indices, const gt_view *input,            \
                                  const conv_geom *g)                                              \
    {                                                                                              \
        const int64_t planes = out->shape[0] * out->shape[1];                                      \
        const int64_t in_plane = g->h * g->w, out_plane = g->oh * g->ow;                           \
        const T *x = (const T *)input->data + input->offset;                                       \
        T *y = (T *)out->data + out->offset;                                                       \
        int64_t *idx = (int64_t *)indices->data + indices->offset;                                 \
        /* Optimization (windows inside the image): with no padding and no window  \
         * reaching past the last row or column (ceil_mode can make one), every   \
         * window is whole, so the loop needs no clipping and starts each window  \
         * at its first tap: LeNet's 2 x 2 pooling ran 5x faster than through the \
         * general loop below. */                                                                  \
        const int inside = g->ph == 0 && g->pw == 0 &&                                             \
                           (g->oh - 1) * g->sh + (g->kh - 1) * g->dh < g->h &&                     \
                           (g->ow - 1) * g->sw + (g->kw - 1) * g->dw < g->w;                       \
        if (inside) {                                                                              \
            _Pragma("omp parallel for schedule(static) if (planes * out_plane * g->kh * g->kw >= GT_PARALLEL_THRESHOLD)") \
            for (int64_t p = 0; p < planes; p++) {                                                 \
                const T *xp = x + p * in_plane;                                                    \
                T *yp = y + p * out_plane;                                                         \
                int64_t *ip = idx + p * out_plane;                                                 \
                for (int64_t oh = 0; oh < g->oh; oh++) {                                           \
                    /* Optimization (a row of windows at a time, no branches): the */              \
                    /* row's maxima start at each window's first tap; then each  */                \
                    /* further tap, in the same order, updates the whole row with */               \
                    /* a select instead of an if. Random data mispredicted that  */                \
                    /* if about once per window, which cost more than the reads. */                \
                    T *restrict best = yp + oh * g->ow;                                            \
                    int64_t *restrict best_at = ip + oh * g->ow;                                   \
                    const int64_t row = oh * g->sh * g->w, ow_n = g->ow, sw = g->sw;               \
                    for (int64_t ow = 0; ow < ow_n; ow++) {                                        \
                        best[ow] = xp[row + ow * sw];                                              \
                        best_at[ow] = row + ow * sw;                                               \
                    }                                                                              \
                    for (int64_t kh = 0; kh < g->kh; kh++) {                                       \
                        for (int64_t kw = (kh == 0); kw < g->kw; kw++) {                           \
                            const int64_t tap = row + kh * g->dh * g->w + kw * g->dw;              \
                            for (int64_t ow = 0; ow < ow_n; ow++) {                                \
                                const int64_t pos = tap + ow * sw;                                 \
                                const T v = xp[pos];                                               \
                                const int take = (v > best[ow]) | (v != v);                        \
                                best[ow] = take ? v : best[ow];                                    \
                                best_at[ow] = take ? pos : best_at[ow];                            \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        _Pragma("omp parallel for schedule(static) if (planes * out_plane * g->kh * g->kw >= GT_PARALLEL_THRESHOLD)") \
        for (int64_t p = 0; p < planes; p++) {                                                     \
            const T *xp = x + p * in_plane;                                                        \
            for (int64_t oh = 0; oh < g->oh; oh++) {                                               \
                int64_t kh0, kh1;                                                                  \
                window(oh, g->sh, g->ph, g->dh, g->kh, g->h, &kh0, &kh1);                          \
                for (int64_t ow = 0; ow < g->ow; ow++) {                                           \
                    int64_t kw0, kw1;                                                              \
                    window(ow, g->sw, g->pw, g->dw, g->kw, g->w, &kw0, &kw1);                      \
                    T best = -INFINITY;                                                            \
                    int64_t best_at = -1;                                                          \
                    for (int64_t kh = kh0; kh < kh1; kh++) {                                       \
                        const int64_t ih = oh * g->sh - g->ph + kh * g->dh;                        \
                        for (int64_t kw = kw0; kw < kw1; kw++) {                                   \
                            const int64_t pos = ih * g->w + ow * g->sw - g->pw + kw * g->dw;       \
                            const T v = xp[pos];                                                   \
                            if (best_at < 0 || v > best || v != v) {                               \
                                best = v;                                                          \
                                best_at = pos;                                                     \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
                    y[p * out_plane + oh * g->ow + ow] = best;                                     \
                    idx[p * out_plane + oh * g->ow + ow] = best_at;                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define DEFINE_MAX_POOL_BACKWARD(T, SUFFIX)                                                        \
    static void max_pool_backward_##SUFFIX(gt_view *grad_input, const gt_view *grad_output,        \
                                           const gt_view *indices)                                 \
    {                                                                                              \
        const int64_t planes = grad_input->shape[0] * grad_input->shape[1];                        \
        const int64_t in_plane = grad_input->shape[2] * grad_input->shape[3];                      \
        const int64_t out_plane = grad_output->shape[2] * grad_output->shape[3];                   \
        T *dx = (T *)grad_input->data + grad_input->offset;                                        \
        const T *dy = (const T *)grad_output->data + grad_output->offset;                          \
        const int64_t *idx = (const int64_t *)indices->data + indices->offset;                     \
        _Pragma("omp parallel for schedule(static) if (planes * in_plane >= GT_PARALLEL_THRESHOLD)") \
        for (int64_t p = 0; p < planes; p++) {                                                     \
            T *dxp = dx + p * in_plane;                                                            \
            for (int64_t i = 0; i < in_plane; i++) dxp[i] = 0;                                     \
            for (int64_t o = 0; o < out_plane; o++) dxp[idx[p * out_plane + o]] += dy[p * out_plane + o]; \
        }                                                                                          \
    }

/* Average pooling's window (clipped to the image) and divisor, PyTorch's rule
 * (see the contract). Returns 0 for a window with nothing inside. */
static int avg_window(int64_t oh, int64_t ow, const conv_geom *g, int count_include_pad,
                      int64_t divisor_override, int64_t *h0, int64_t *h1, int64_t *w0,
                      int64_t *w1, double *divisor)
{
    int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
    int64_t he = min64(hs + g->kh, g->h + g->ph), we = min64(ws + g->kw, g->w + g->pw);
    const int64_t padded = (he - hs) * (we - ws);
    *h0 = max64(hs, 0);
    *w0 = max64(ws, 0);
    *h1 = min64(he, g->h);
    *w1 = min64(we, g->w);
    if (*h0 >= *h1 || *w0 >= *w1) return 0;
    if (divisor_override) *divisor = (double)divisor_override;
    else *divisor = (double)(count_include_pad ? padded : (*h1 - *h0) * (*w1 - *w0));
    return 1;
}

#define DEFINE_AVG_POOL(T, SUFFIX)                                                                 \
    static void avg_pool_##SUFFIX(gt_view *out, const gt_view *input, const conv_geom *g,          \
                                  int count_include_pad, int64_t divisor_override)                 \
    {                                                                                              \
        const int64_t planes = out->shape[0] * out->shape[1];                                      \
        const int64_t in_plane = g->h * g->w, out_plane = g->oh * g->ow;                           \
        const T *x = (const T *)input->data + input->offset;                                       \
        T *y = (T *)out->data + out->offset;                                                       \
        _Pragma("omp parallel for schedule(static) if (planes * out_plane * g->kh * g->kw >= GT_PARALLEL_THRESHOLD)") \
        for (int64_t p = 0; p < planes; p++) {                                                     \
            const T *xp = x + p * in_plane;                                                        \
            for (int64_t oh = 0; oh < g->oh; oh++) {                                               \
                for (int64_t ow = 0; ow < g->ow; ow++) {                                           \
                    int64_t h0, h1, w0, w1;                                                        \
                    double divisor, total = 0.0;                                                   \
                    T result = 0;                                                                  \
                    if (avg_window(oh, ow, g, count_include_pad, divisor_override, &h0, &h1, &w0, &w1, &divisor)) { \
                        for (int64_t ih = h0; ih < h1; ih++)                                       \
                            for (int64_t iw = w0; iw < w1; iw++) total += (double)xp[ih * g->w + iw]; \
                        result = (T)(total / divisor);                                             \
                    }                                                                              \
                    y[p * out_plane + oh * g->ow + ow] = result;                                   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define DEFINE_AVG_POOL_BACKWARD(T, SUFFIX)                                                        \
    static void avg_pool_backward_##SUFFIX(gt_view *grad_input, const gt_view *grad_output,        \
                                           const conv_geom *g, int count_include_pad,              \
                                           int64_t divisor_override)                               \
    {                                                                                              \
        const int64_t planes = grad_input->shape[0] * grad_input->shape[1];                        \
        const int64_t in_plane = g->h * g->w, out_plane = g->oh * g->ow;                           \
        T *dx = (T *)grad_input->data + grad_input->offset;                                        \
        const T *dy = (const T *)grad_output->data + grad_output->offset;                          \
        _Pragma("omp parallel for schedule(static) if (planes * in_plane >= GT_PARALLEL_THRESHOLD)") \
        for (int64_t p = 0; p < planes; p++) {                                                     \
            T *dxp = dx + p * in_plane;                                                            \
            for (int64_t i = 0; i < in_plane; i++) dxp[i] = 0;                                     \
            for (int64_t oh = 0; oh < g->oh; oh++) {                                               \
                for (int64_t ow = 0; ow < g->ow; ow++) {                                           \
                    int64_t h0, h1, w0, w1;                                                        \
                    double divisor;                                                                \
                    if (!avg_window(oh, ow, g, count_include_pad, divisor_override, &h0, &h1, &w0, &w1, &divisor)) \
                        continue;                                                                  \
                    const T share = (T)((double)dy[p * out_plane + oh * g->ow + ow] / divisor);    \
                    for (int64_t ih = h0; ih < h1; ih++)                                           \
                        for (int64_t iw = w0; iw < w1; iw++) dxp[ih * g->w + iw] += share;         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_MAX_POOL(float, f32)
DEFINE_MAX_POOL(double, f64)
DEFINE_MAX_POOL_BACKWARD(float, f32)
DEFINE_MAX_POOL_BACKWARD(double, f64)
DEFINE_AVG_POOL(float, f32)
DEFINE_AVG_POOL(double, f64)
DEFINE_AVG_POOL_BACKWARD(float, f32)
DEFINE_AVG_POOL_BACKWARD(double, f64)

static conv_geom pool_geom(const gt_view *image, const gt_view *pooled, int64_t kh, int64_t kw,
                           int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                           int64_t dw)
{
    conv_geom g = {image->shape[2], image->shape[3], pooled->shape[2], pooled->shape[3],
                   kh, kw, sh, sw, ph, pw, dh, dw};
    return g;
}

int gt_max_pool2d(gt_view *out, gt_view *indices, const gt_view *input, int64_t kh, int64_t kw,
                  int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw)
{
    const int dtype = out->dtype;
    if (!USABLE(dtype, out, input) || indices->dtype != GT_INT64 || !gt_is_contiguous(indices))
        return -1;
    const conv_geom g = pool_geom(input, out, kh, kw, sh, sw, ph, pw, dh, dw);
    if (dtype == GT_FLOAT32) max_pool_f32(out, indices, input, &g);
    else max_pool_f64(out, indices, input, &g);
    return 0;
}

int gt_max_pool2d_backward(gt_view *grad_input, const gt_view *grad_output,
                           const gt_view *indices)
{
    const int dtype = grad_input->dtype;
    if (!USABLE(dtype, grad_input, grad_output) || indices->dtype != GT_INT64 ||
        !gt_is_contiguous(indices))
        return -1;
    if (dtype == GT_FLOAT32) max_pool_backward_f32(grad_input, grad_output, indices);
    else max_pool_backward_f64(grad_input, grad_output, indices);
    return 0;
}

int gt_avg_pool2d(gt_view *out, const gt_view *input, int64_t kh, int64_t kw, int64_t sh,
                  int64_t sw, int64_t ph, int64_t pw, int count_include_pad,
                  int64_t divisor_override)
{
    const int dtype = out->dtype;
    if (!USABLE(dtype, out, input)) return -1;
    const conv_geom g = pool_geom(input, out, kh, kw, sh, sw, ph, pw, 1, 1);
    if (dtype == GT_FLOAT32) avg_pool_f32(out, input, &g, count_include_pad, divisor_override);
    else avg_pool_f64(out, input, &g, count_include_pad, divisor_override);
    return 0;
}

int gt_avg_pool2d_backward(gt_view *grad_input, const gt_view *grad_output, int64_t kh,
                           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                           int count_include_pad, int64_t divisor_override)
{
    const int dtype = grad_input->dtype;
    if (!USABLE(dtype, grad_input, grad_output)) return -1;
    const conv_geom g = pool_geom(grad_input, grad_output, kh, kw, sh, sw, ph, pw, 1, 1);
    if (dtype == GT_FLOAT32)
        avg_pool_backward_f32(grad_input, grad_output, &g, count_include_pad, divisor_override);
    else
        avg_pool_backward_f64(grad_input, grad_output, &g, count_include_pad, divisor_override);
    return 0;
}
