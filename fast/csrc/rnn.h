/* rnn.h: one LSTM time step's elementwise work, forward and backward. */
#ifndef GT_RNN_H
#define GT_RNN_H

#include "gt_common.h"

/* cffi-begin */
/* h, c, tanh_c, c_prev (B, H) and activations, gates (B, 4H), contiguous, of
 * one float dtype. Returns 0, or -1 for a dtype or layout it does not handle. */
int gt_lstm_cell(gt_view *h, gt_view *c, gt_view *activations, gt_view *tanh_c,
                 const gt_view *gates, const gt_view *c_prev);
/* d_gates, activations (B, 4H) and d_c_prev, d_h, d_c, tanh_c, c_prev (B, H),
 * contiguous, of one float dtype. Returns 0, or -1 as above. */
int gt_lstm_cell_backward(gt_view *d_gates, gt_view *d_c_prev, const gt_view *d_h,
                          const gt_view *d_c, const gt_view *activations,
                          const gt_view *tanh_c, const gt_view *c_prev);
/* cffi-end */

#endif /* GT_RNN_H */
