/* moments.h: PyTorch's row mean and variance (reference/moments.py), used by
 * the layer-norm and group-norm kernels. */
#ifndef GT_MOMENTS_H
#define GT_MOMENTS_H

#include "gt_common.h"

/* cffi-begin */
/* mean[r] and the biased variance var[r] of each row of a contiguous (R, N)
 * float view, in the input's precision; mean and var are (R,), same dtype.
 * Returns 0, or -1 for a dtype or layout it does not handle. */
int gt_row_moments(gt_view *mean, gt_view *var, const gt_view *input);
/* cffi-end */

/* One row of n values: its mean and biased variance, for other kernels. */
void gt_row_moments_f32(const float *x, int64_t n, float *mean, float *var);
void gt_row_moments_f64(const double *x, int64_t n, double *mean, double *var);

/* The same for MOMENTS_ROWS rows at once, row r at x + r * ld (faster than one
 * row at a time; the same results). */
#define MOMENTS_ROWS 4
void gt_rows_moments_f32(const float *x, int64_t ld, int64_t n, float *mean, float *var);
void gt_rows_moments_f64(const double *x, int64_t ld, int64_t n, double *mean, double *var);

#endif /* GT_MOMENTS_H */
