/* indexing.h: gather, scatter, index_select, index_put and nonzero. */
#ifndef GT_INDEXING_H
#define GT_INDEXING_H

#include <stdint.h>

#include "gt_common.h"

/* cffi-begin */
/* Every index is int64; out, a and src share one dtype. Each kernel checks
 * every index as it reads it (once): it returns 0, -1 for a dtype it does not
 * handle, or 1 when an index lies outside [0, size) of the indexed operand
 * along dim, with that index in *bad (nothing outside is ever read or written). */
int gt_gather(gt_view *out, const gt_view *a, int dim, const gt_view *index, int64_t *bad);
int gt_scatter(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate,
               int64_t *bad);
int gt_index_select(gt_view *out, const gt_view *a, int dim, const gt_view *index, int64_t *bad);
int gt_index_put(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate,
                 int64_t *bad);
int gt_nonzero(gt_view *out, const gt_view *a);
/* cffi-end */

#endif /* GT_INDEXING_H */
