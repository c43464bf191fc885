/* conv.h: convolution (through im2col tiles and gemm.c) and F.unfold /
 * F.fold's im2col and col2im. The ideas are explained at the top of conv.c;
 * pooling is in pooling.h, batch normalisation in batch_norm.h. */
#ifndef GT_CONV_H
#define GT_CONV_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every view is contiguous and of one float dtype (float32 or float64);
 * images are (N, C, H, W). Each returns 0, or -1 for views it
 * does not handle (another dtype, not contiguous), or -2 when out of memory. */
int gt_conv2d(gt_view *out, const gt_view *input, const gt_view *weight, const gt_view *bias,
              int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
              int64_t groups);
int gt_conv2d_backward_input(gt_view *grad_input, const gt_view *grad_output,
                             const gt_view *weight, int64_t sh, int64_t sw, int64_t ph,
                             int64_t pw, int64_t dh, int64_t dw, int64_t groups);
int gt_conv2d_backward_weight(gt_view *grad_weight, const gt_view *grad_output,
                              const gt_view *input, int64_t sh, int64_t sw, int64_t ph,
                              int64_t pw, int64_t dh, int64_t dw, int64_t groups);
int gt_im2col(gt_view *out, const gt_view *input, int64_t kh, int64_t kw, int64_t sh,
              int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
int gt_col2im(gt_view *out, const gt_view *columns, int64_t kh, int64_t kw, int64_t sh,
              int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw);
/* cffi-end */

#endif /* GT_CONV_H */
