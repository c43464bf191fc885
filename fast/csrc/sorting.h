/* sorting.h: a stable sort of each 1-D slice along one dimension.
 *
 * The kernel is in sorting.c; the block between cffi-begin and cffi-end is
 * what Python sees.
 */
#ifndef GT_SORTING_H
#define GT_SORTING_H

#include "gt_common.h"

/* cffi-begin */
/* values has a's dtype, indices is int64, both a's shape. NaN sorts as the
 * largest value. Returns 0, or -1 for a dtype the table does not hold. */
int gt_sort(gt_view *values, gt_view *indices, const gt_view *a, int dim, int descending);
/* cffi-end */

#endif /* GT_SORTING_H */
