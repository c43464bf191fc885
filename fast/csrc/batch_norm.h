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
/* invstd = 1 / sqrt(var + eps) and, unless running_mean is NULL (then
 * running_var is too), the running statistics moved by `momentum` toward
 * mean and var * count / (count - 1): the contract's batch_norm_update_stats. */
int gt_batch_norm_update_stats(gt_view *invstd, gt_view *running_mean, gt_view *running_var,
                               const gt_view *mean, const gt_view *var, double momentum,
                               double eps, int64_t count);
/* cffi-end */

#endif /* GT_BATCH_NORM_H */
