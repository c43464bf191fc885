/* nn.h: kernels for neural-network layers (the fused cross-entropy). */
#ifndef GT_NN_H
#define GT_NN_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* losses (N,), log_probs and logits (N, C) of one float dtype; target (N,)
 * int64. Returns 0, or -1 for a dtype it does not handle. */
int gt_cross_entropy(gt_view *losses, gt_view *log_probs, const gt_view *logits,
                     const gt_view *target, int64_t ignore_index);
/* cffi-end */

#endif /* GT_NN_H */
