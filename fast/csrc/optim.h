/* optim.h: one fused update kernel per optimizer.
 *
 * Every buffer is a contiguous 1-D float32 or float64 view of one length and
 * dtype; a buffer the configuration does not use is NULL. The update rules are
 * those of glasstorch/_kernels.py (Kernels.sgd_step, ...). Scalars that depend
 * only on the step number (bias corrections, Adagrad's decayed rate) are
 * computed once by the Python glue, with the reference tier's expressions.
 */
#ifndef GT_OPTIM_H
#define GT_OPTIM_H

#include "gt_common.h"

/* cffi-begin */
int gt_sgd_step(gt_view *param, const gt_view *grad, gt_view *momentum_buffer, double lr,
                double weight_decay, double momentum, double dampening, int nesterov,
                int maximize, int first_step);
int gt_adam_step(gt_view *param, const gt_view *grad, gt_view *exp_avg, gt_view *exp_avg_sq,
                 gt_view *max_exp_avg_sq, double lr, double beta1, double beta2, double eps,
                 double weight_decay, int decoupled_weight_decay, int maximize, double bias1,
                 double bias2_sqrt);
int gt_rmsprop_step(gt_view *param, const gt_view *grad, gt_view *square_avg,
                    gt_view *momentum_buffer, gt_view *grad_avg, double lr, double alpha,
                    double eps, double weight_decay, double momentum, int maximize);
int gt_adagrad_step(gt_view *param, const gt_view *grad, gt_view *state_sum, double clr,
                    double weight_decay, double eps, int maximize);
int gt_adadelta_step(gt_view *param, const gt_view *grad, gt_view *square_avg,
                     gt_view *acc_delta, double lr, double rho, double eps, double weight_decay,
                     int maximize);
/* cffi-end */

#endif /* GT_OPTIM_H */
