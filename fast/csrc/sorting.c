/* sorting.c: a stable sort of each 1-D slice along `dim`.
 *
 * Each slice is copied into a contiguous scratch row of (value, index) pairs,
 * sorted there by a bottom-up merge sort, and written out. The ideas:
 *
 * - Merge sort is stable: when two keys are equal the left run's element
 *   goes first, so equal values keep their order, in both directions. That is
 *   PyTorch's stable=True, and it makes the answer unique, so the tier agrees
 *   with the reference tier index for index.
 * - Sorting a contiguous copy, not the strided slice, keeps the merge passes
 *   in cache whatever the slice's stride.
 * - Slices are independent: OpenMP gives each thread whole slices.
 *
 * "Before" is one comparison, written once: a number comes before a NaN, and
 * descending order is ascending order with the operands swapped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sorting.h"

/* Buffer position of the start of slice s (row-major over the dims but dim). */
static int64_t sort_slice_start(const gt_view *v, int dim, int64_t s)
{
    int64_t pos = v->offset;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        int64_t size = v->shape[d];
        pos += (s % size) * v->strides[d];
        s /= size;
    }
    return pos;
}

/* Whether x sorts strictly before y in ascending order (NaN is the largest). */
#define ASCENDING_BEFORE(x, y) ((y) != (y) ? (x) == (x) : (x) < (y))

#define DEFINE_SORT(CODE, CTYPE)                                                                 \
    typedef struct {                                                                             \
        CTYPE value;                                                                             \
        int64_t index;                                                                           \
    } pair_##CODE;                                                                               \
                                                                                                 \
    static int before_##CODE(const pair_##CODE *x, const pair_##CODE *y, int descending)         \
    {                                                                                            \
        return descending ? ASCENDING_BEFORE(y->value, x->value)                                 \
                          : ASCENDING_BEFORE(x->value, y->value);                                \
    }                                                                                            \
                                                                                                 \
    /* Bottom-up merge sort of row[0..n) using scratch; the result ends in row. */               \
    static void merge_sort_##CODE(pair_##CODE *row, pair_##CODE *scratch, int64_t n,             \
                                  int descending)                                                \
    {                                                                                            \
        pair_##CODE *from = row, *to = scratch;                                                  \
        for (int64_t width = 1; width < n; width *= 2) {                                         \
            for (int64_t lo = 0; lo < n; lo += 2 * width) {                                      \
                int64_t mid = lo + width < n ? lo + width : n;                                   \
                int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;                            \
                int64_t i = lo, j = mid, k = lo;                                                 \
                /* Take from the right run only when it is strictly before: stable. */           \
                while (i < mid && j < hi)                                                        \
                    to[k++] = before_##CODE(&from[j], &from[i], descending) ? from[j++]          \
                                                                            : from[i++];         \
                while (i < mid) to[k++] = from[i++];                                             \
                while (j < hi) to[k++] = from[j++];                                              \
            }                                                                                    \
            pair_##CODE *swap = from;                                                            \
            from = to, to = swap;                                                                \
        }                                                                                        \
        if (from != row) memcpy(row, from, (size_t)n * sizeof(pair_##CODE));                     \
    }                                                                                            \
                                                                                                 \
    static int sort_##CODE(gt_view *values, gt_view *indices, const gt_view *a, int dim,         \
                           int descending)                                                       \
    {                                                                                            \
        const int64_t n = a->shape[dim], slices = gt_numel(a) / n;                               \
        const CTYPE *x = (const CTYPE *)a->data;                                                 \
        CTYPE *vals = (CTYPE *)values->data;                                                     \
        int64_t *idx = (int64_t *)indices->data;                                                 \
        int failed = 0;                                                                          \
        _Pragma("omp parallel reduction(|: failed) if (slices * n >= GT_PARALLEL_THRESHOLD)")    \
        {                                                                                        \
            pair_##CODE *row = malloc((size_t)n * 2 * sizeof(pair_##CODE));                     \
            if (row == NULL) failed = 1;                                                         \
            _Pragma("omp for schedule(static)")                                                  \
            for (int64_t s = 0; s < slices; s++) {                                               \
                if (row == NULL) continue;                                                       \
                const CTYPE *src = x + sort_slice_start(a, dim, s);                              \
                for (int64_t k = 0; k < n; k++) {                                                \
                    row[k].value = src[k * a->strides[dim]];                                     \
                    row[k].index = k;                                                            \
                }                                                                                \
                merge_sort_##CODE(row, row + n, n, descending);                                  \
                CTYPE *v = vals + sort_slice_start(values, dim, s);                              \
                int64_t *ix = idx + sort_slice_start(indices, dim, s);                           \
                for (int64_t k = 0; k < n; k++) {                                                \
                    v[k * values->strides[dim]] = row[k].value;                                  \
                    ix[k * indices->strides[dim]] = row[k].index;                                \
                }                                                                                \
            }                                                                                    \
            free(row);                                                                           \
        }                                                                                        \
        return failed ? -1 : 0;                                                                  \
    }
GT_FOR_EACH_DTYPE(DEFINE_SORT)

int gt_sort(gt_view *values, gt_view *indices, const gt_view *a, int dim, int descending)
{
    if (values->dtype != a->dtype || indices->dtype != GT_INT64) return -1;
    if (gt_numel(a) == 0) return 0;
    switch (a->dtype) {
#define SORT_CASE(CODE, CTYPE) \
    case CODE: return sort_##CODE(values, indices, a, dim, descending);
        GT_FOR_EACH_DTYPE(SORT_CASE)
#undef SORT_CASE
    }
    return -1;
}
