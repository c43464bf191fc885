/* indexing.h: gather, scatter, index_select, index_put and nonzero. */
#ifndef GT_INDEXING_H
#define GT_INDEXING_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every index is int64 and already checked by the frontend; out, a and src
 * share one dtype. Each returns 0, or -1 for a dtype it does not handle. */
int gt_gather(gt_view *out, const gt_view *a, int dim, const gt_view *index);
int gt_scatter(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate);
int gt_index_select(gt_view *out, const gt_view *a, int dim, const gt_view *index);
int gt_index_put(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate);
int gt_nonzero(gt_view *out, const gt_view *a);
/* cffi-end */

#endif /* GT_INDEXING_H */
