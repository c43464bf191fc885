/* batch_norm.h: batch normalisation's statistics, apply pass and gradients
 * (batch_norm.c). */
#ifndef GT_BATCH_NORM_H
#define GT_BATCH_NORM_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every view is contiguous and of one float dtype (float32 or float64):
 * (N, C, L) inputs; mean, var, invstd, weight, bias (C,); NULL for an absent
 * one. Each returns 0, or -1 for views it does not handle (another dtype, not
 * contiguous), or -2 when out of memory. */
int gt_batch_norm_stats(gt_view *mean, gt_view *var, const gt_view *input);
int gt_batch_norm_apply(gt_view *out, const gt_view *input, const gt_view *mean,
                        const gt_view *invstd, const gt_view *weight, const gt_view *bias);
int gt_batch_norm_backward(gt_view *grad_input, gt_view *grad_weight, gt_view *grad_bias,
                           const gt_view *grad_output, const gt_view *input, const gt_view *mean,
                           const gt_view *invstd, const gt_view *weight, int training);
/* cffi-end */

#endif /* GT_BATCH_NORM_H */
