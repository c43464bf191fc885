/* nn.h: kernels for neural-network layers (the fused cross-entropy and its gradient). */
#ifndef GT_NN_H
#define GT_NN_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* losses and row_weights (N,), totals (3,), log_probs and logits (N, C),
 * weight (C,) or NULL, all of one float dtype; target (N,) int64. Returns -1
 * when done, the first row whose label is out of range (nothing written), or
 * -2 for dtypes it does not handle. */
int64_t gt_cross_entropy(gt_view *losses, gt_view *row_weights, gt_view *totals,
                         gt_view *log_probs, const gt_view *logits, const gt_view *target,
                         const gt_view *weight, int64_t ignore_index);
/* grad_logits and log_probs (N, C), grad_losses (N,), weight (C,) or NULL, of
 * one float dtype; target (N,) int64. Returns 0, or -1 for unhandled dtypes. */
int gt_cross_entropy_backward(gt_view *grad_logits, const gt_view *log_probs,
                              const gt_view *target, const gt_view *weight,
                              const gt_view *grad_losses, int64_t ignore_index);
/* cffi-end */

#endif /* GT_NN_H */
