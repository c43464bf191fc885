/* pooling.h: max and average pooling and their gradients (pooling.c). */
#ifndef GT_POOLING_H
#define GT_POOLING_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every view is contiguous and of one float dtype (float32 or float64),
 * indices int64; images are (N, C, H, W). Each returns 0, or -1 for views it
 * does not handle (another dtype, not contiguous), or -2 when out of memory. */
int gt_max_pool2d(gt_view *out, gt_view *indices, const gt_view *input, int64_t kh, int64_t kw,
                  int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
int gt_max_pool2d_backward(gt_view *grad_input, const gt_view *grad_output,
                           const gt_view *indices);
int gt_avg_pool2d(gt_view *out, const gt_view *input, int64_t kh, int64_t kw, int64_t sh,
                  int64_t sw, int64_t ph, int64_t pw, int count_include_pad,
                  int64_t divisor_override);
int gt_avg_pool2d_backward(gt_view *grad_input, const gt_view *grad_output, int64_t kh,
                           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                           int count_include_pad, int64_t divisor_override);
/* cffi-end */

#endif /* GT_POOLING_H */
