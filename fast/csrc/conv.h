/* conv.h: convolution (through im2col tiles and gemm.c), pooling and batch
 * normalisation. The ideas are explained at the top of conv.c. */
#ifndef GT_CONV_H
#define GT_CONV_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every view is contiguous and of one float dtype (float32 or float64),
 * indices int64; images are (N, C, H, W). Each returns 0, or -1 for views it
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
/* (N, C, L) views; mean, var, invstd, weight, bias (C,); NULL for an absent one. */
int gt_batch_norm_stats(gt_view *mean, gt_view *var, const gt_view *input);
int gt_batch_norm_apply(gt_view *out, const gt_view *input, const gt_view *mean,
                        const gt_view *invstd, const gt_view *weight, const gt_view *bias);
int gt_batch_norm_backward(gt_view *grad_input, gt_view *grad_weight, gt_view *grad_bias,
                           const gt_view *grad_output, const gt_view *input, const gt_view *mean,
                           const gt_view *invstd, const gt_view *weight, int training);
/* cffi-end */

#endif /* GT_CONV_H */
