/* creation.h: filling a 1-D tensor with a sequence (arange, linspace).
 *
 * `out` is any 1-D view (usually fresh and contiguous); values are stored
 * with the conversion rules of gt_convert.h.
 */
#ifndef GT_CREATION_H
#define GT_CREATION_H

#include "gt_common.h"

/* cffi-begin */
/* out[i] = start + i * step in integer arithmetic (wrapping), then converted. */
int gt_arange_int(gt_view *out, int64_t start, int64_t step);
/* A float32 or float64 out: PyTorch's values for start + i * step, bit for bit
 * (see Kernels.arange); -1 for any other dtype. */
int gt_arange_float(gt_view *out, double start, double step);
/* Evenly spaced from start to end, both exact, as PyTorch computes them
 * (see Kernels.linspace). */
int gt_linspace(gt_view *out, double start, double end);
/* cffi-end */

#endif /* GT_CREATION_H */
