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
/* A whole LSTM layer, forward: for each step t (from the last with `reverse`),
 * gates = inputs[t] + bias + h_before @ w_hh^T (bias (4H) or NULL), then
 * lstm_cell. hs, cs (T + 1, B, H)
 * hold the initial state in slot 0 (slot T with `reverse`); step t reads slot
 * t (t + 1) and writes slot t + 1 (t). activations (T, B, 4H), tanh_c
 * (T, B, H), inputs (T, B, 4H), w_hh (4H, H); all contiguous, one float
 * dtype. Returns 0, -1 for a dtype or layout it does not handle, -2 when out
 * of memory. */
int gt_lstm_forward(gt_view *hs, gt_view *cs, gt_view *activations, gt_view *tanh_c,
                    const gt_view *inputs, const gt_view *bias, const gt_view *w_hh,
                    int reverse);
/* Its gradient: d_inputs (T, B, 4H) gets every step's gate gradient; d_h, d_c
 * (B, H) hold the gradient reaching the last state on entry and that of the
 * initial state on return; d_outputs (T, B, H) the gradient reaching each
 * step's h, or NULL for none. The saved activations, tanh_c and cs as
 * gt_lstm_forward left them. Returns as gt_lstm_forward. */
int gt_lstm_backward(gt_view *d_inputs, gt_view *d_h, gt_view *d_c, const gt_view *d_outputs,
                     const gt_view *activations, const gt_view *tanh_c, const gt_view *cs,
                     const gt_view *w_hh, int reverse);
/* The weight gradients over all steps: d_w_ih (4H, I) = d_gates^T inputs and
 * d_w_hh (4H, H) = d_gates^T h_prev, for d_gates (N, 4H), inputs (N, I),
 * h_prev (N, H); all contiguous, one float dtype. Returns 0, or -1 as above. */
int gt_lstm_weight_grad(gt_view *d_w_ih, gt_view *d_w_hh, const gt_view *d_gates,
                        const gt_view *inputs, const gt_view *h_prev);
/* cffi-end */

#endif /* GT_RNN_H */
