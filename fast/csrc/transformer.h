/* transformer.h: the fused kernels of a transformer block (LayerNorm, GELU,
 * the attention softmax) and their gradients. */
#ifndef GT_TRANSFORMER_H
#define GT_TRANSFORMER_H

#include "gt_common.h"

/* cffi-begin */
/* Every view contiguous and of one float dtype; rows are the last dimension.
 * weight, bias and the gradients not wanted may be NULL. Each returns 0, or
 * -1 for a dtype or layout it does not handle. */
int gt_layer_norm(gt_view *out, gt_view *mean, gt_view *rstd, const gt_view *input,
                  const gt_view *weight, const gt_view *bias, double eps);
int gt_layer_norm_backward(gt_view *grad_input, gt_view *grad_weight, gt_view *grad_bias,
                           const gt_view *grad_output, const gt_view *input,
                           const gt_view *mean, const gt_view *rstd, const gt_view *weight);
int gt_gelu(gt_view *out, const gt_view *input, int approximate);
int gt_gelu_backward(gt_view *grad_input, const gt_view *grad_output, const gt_view *input,
                     int approximate);
int gt_attention_softmax(gt_view *out, const gt_view *scores, double scale, int causal);
int gt_softmax_backward(gt_view *grad_input, const gt_view *grad_output, const gt_view *output,
                        double scale);
/* cffi-end */

#endif /* GT_TRANSFORMER_H */
