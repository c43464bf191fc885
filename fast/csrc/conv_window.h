/* conv_window.h: what the convolution (conv.c), pooling (pooling.c) and
 * batch-normalisation (batch_norm.c) kernels share: where a convolution or
 * pooling window lies (conv_geom), the output indices whose window position
 * lies inside the image (valid_range), and the check that a kernel's views
 * are contiguous and of one float dtype (USABLE). Private to those files: no
 * cffi block, nothing Python calls. */
#ifndef GT_CONV_WINDOW_H
#define GT_CONV_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "gt_common.h"

/* Where a convolution or pooling window lies: sizes, kernel and steps. */
typedef struct {
    int64_t h, w;   /* input plane */
    int64_t oh, ow; /* output plane */
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
} conv_geom;

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static inline int64_t max64(int64_t x, int64_t y) { return x > y ? x : y; }

/* The output indices o in [lo, hi) whose input index o * stride + offset lies
 * in [0, size): computed once per row, so the copy loops need no test (and
 * vectorise when the stride is 1). */
static inline void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count,
                               int64_t *lo, int64_t *hi)
{
    if (stride == 1) { /* (no division: a 64-bit divide costs dozens of cycles) */
        *lo = min64(max64(-offset, 0), count);
        *hi = max64(*lo, min64(max64(size - offset, 0), count));
        return;
    }
    int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    int64_t last = size - offset <= 0 ? 0 : (size - offset + stride - 1) / stride;
    *lo = min64(first, count);
    *hi = max64(*lo, min64(last, count));
}

/* 1 when every view is contiguous and of one float dtype (0 for NULL views). */
static inline int usable(int dtype, int count, const gt_view *const *views)
{
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return 0;
    for (int i = 0; i < count; i++) {
        if (views[i] == NULL) continue;
        if (views[i]->dtype != dtype || !gt_is_contiguous(views[i])) return 0;
    }
    return 1;
}

#define USABLE(DTYPE, ...)                                                                   \
    usable((DTYPE), sizeof((const gt_view *[]){__VA_ARGS__}) / sizeof(const gt_view *),      \
           (const gt_view *const[]){__VA_ARGS__})

#endif /* GT_CONV_WINDOW_H */
