/* reductions.h: reduce, arg_reduce, cumsum and the fused softmax.
 *
 * The kernels are in reductions.c; the block between cffi-begin and cffi-end
 * is what Python sees. Below it sit two small helpers that nn.c shares (the
 * fused cross-entropy is a log-softmax too).
 */
#ifndef GT_REDUCTIONS_H
#define GT_REDUCTIONS_H

#include <math.h>
#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* The reductions of the contract's REDUCE_OPS, in that order. */
enum {
    GT_REDUCE_SUM = 0,
    GT_REDUCE_PROD = 1,
    GT_REDUCE_AMAX = 2,
    GT_REDUCE_AMIN = 3,
    GT_REDUCE_ALL = 4,
    GT_REDUCE_ANY = 5
};

/* out has a's ndim with size 1 along each reduced dimension; which dimensions
 * are reduced is read from the shapes (out->shape[d] != a->shape[d]).
 * Returns 0, or -1 for an op or dtype the tables do not hold. */
int gt_reduce(int op, gt_view *out, const gt_view *a);

/* is_max: 1 for max, 0 for min. values has a's dtype, indices is int64. */
int gt_arg_reduce(int is_max, gt_view *values, gt_view *indices, const gt_view *a, int dim);

int gt_cumsum(gt_view *out, const gt_view *a, int dim);

/* a and out are float32 or float64, of one dtype. */
int gt_softmax(gt_view *out, const gt_view *a, int dim, int take_log);
/* cffi-end */

/* Maximum of n strided values, NaN-propagating: any NaN makes the answer NaN,
 * as reference/reductions.py's _max. n >= 1.
 *
 * A running `best = v > best ? v : best` is one long dependency chain the
 * compiler will not vectorise (it may not reorder float comparisons). With 16
 * independent running maxima, one per lane, each step is an elementwise
 * compare-and-select over a vector; the lanes meet at the end. */
#define GT_DEFINE_ROW_MAX(NAME, CTYPE)                                            \
    static inline CTYPE NAME(const CTYPE *x, int64_t n, int64_t stride)           \
    {                                                                             \
        CTYPE lanes[16];                                                          \
        int any_nan = 0;                                                          \
        int64_t i = 0;                                                            \
        for (int k = 0; k < 16; k++) lanes[k] = x[0];                             \
        if (stride == 1)                                                          \
            for (; i + 16 <= n; i += 16)                                          \
                for (int k = 0; k < 16; k++) {                                    \
                    CTYPE v = x[i + k];                                           \
                    any_nan |= (v != v);                                          \
                    lanes[k] = v > lanes[k] ? v : lanes[k];                       \
                }                                                                 \
        for (; i < n; i++) {                                                      \
            CTYPE v = x[i * stride];                                              \
            any_nan |= (v != v);                                                  \
            lanes[0] = v > lanes[0] ? v : lanes[0];                               \
        }                                                                         \
        CTYPE best = lanes[0];                                                    \
        for (int k = 1; k < 16; k++) best = lanes[k] > best ? lanes[k] : best;    \
        return any_nan ? (CTYPE)NAN : best;                                       \
    }
GT_DEFINE_ROW_MAX(gt_row_max_f32, float)
GT_DEFINE_ROW_MAX(gt_row_max_f64, double)

#endif /* GT_REDUCTIONS_H */
