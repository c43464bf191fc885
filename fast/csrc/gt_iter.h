/* gt_iter.h: walking several strided views of one shape together.
 *
 * An elementwise kernel visits every index of the output and, at each, one
 * element of each input. reference/strided.py writes that as one loop over
 * positions. Here the walk is split in two, the way NumPy's ufuncs and
 * PyTorch's TensorIterator do it:
 *
 *   - an *inner loop* (one small function per operation and dtype) handles one
 *     row: n elements, each operand advancing by a fixed byte step. It is a
 *     simple counted loop the compiler can vectorise;
 *   - the *driver* (gt_iter_run, below) walks the outer dimensions with an
 *     odometer and hands the inner loop one row at a time.
 *
 * Three ideas make the driver fast:
 *
 *   1. Coalescing. Size-1 dimensions are dropped, and two neighbouring
 *      dimensions merge into one when every operand steps through them
 *      evenly (stride[d] == stride[d+1] * shape[d+1]). A contiguous tensor of
 *      any shape becomes a single row, so the inner loop sees one long,
 *      vectorisable run instead of many short ones.
 *   2. Byte steps. Operands may have different element sizes (a comparison
 *      reads floats and writes bools), so the driver moves char pointers by
 *      byte strides and only the inner loop knows the C types.
 *   3. Splitting the index space across threads. The row-major index range
 *      [0, numel) is cut into one contiguous share per thread. A thread
 *      unravels its share's first index once, then walks the share with the
 *      odometer. Shares never share an output element, so threads never race,
 *      and a single long row is split as well as many short ones.
 */
#ifndef GT_ITER_H
#define GT_ITER_H

#include <stdint.h>

#include "gt_common.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define GT_ITER_MAX_OPERANDS 4

/* One row of work: n elements; ptrs[k] is operand k's first element and
 * steps[k] its distance, in bytes, to the next. `extra` carries parameters
 * (an op's constant, say) and may be NULL. */
typedef void (*gt_inner_loop)(char **ptrs, const int64_t *steps, int64_t n, const void *extra);

typedef struct {
    int nops;                                        /* operand 0 is the output */
    int ndim;                                        /* after coalescing */
    int64_t numel;
    int64_t shape[GT_MAX_DIMS];                      /* outermost first */
    int64_t steps[GT_MAX_DIMS][GT_ITER_MAX_OPERANDS]; /* bytes, per dim, per operand */
    char *base[GT_ITER_MAX_OPERANDS];                /* address of element (0, ..., 0) */
} gt_iter;

/* Set up a walk over views[0]'s shape; every view has that shape (the
 * frontend broadcast them). Drops size-1 dims and coalesces the rest. */
static inline void gt_iter_init(gt_iter *it, int nops, const gt_view *const *views)
{
    const gt_view *out = views[0];
    it->nops = nops;
    it->numel = gt_numel(out);
    for (int k = 0; k < nops; k++)
        it->base[k] = views[k]->data + views[k]->offset * gt_itemsize(views[k]->dtype);

    /* Keep the dimensions of size > 1, converting strides to bytes. */
    int ndim = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1) continue;
        it->shape[ndim] = out->shape[d];
        for (int k = 0; k < nops; k++)
            it->steps[ndim][k] = views[k]->strides[d] * gt_itemsize(views[k]->dtype);
        ndim++;
    }

    /* Merge each dimension d into the outer neighbour kept before it where
     * every operand allows it, so a run of mergeable dimensions becomes one. */
    int merged = 0;
    for (int d = 0; d < ndim; d++) {
        if (merged > 0) {
            int j = merged - 1; /* the outer neighbour kept so far */
            int fits = 1;
            for (int k = 0; k < nops; k++)
                if (it->steps[j][k] != it->steps[d][k] * it->shape[d]) fits = 0;
            if (fits) {
                /* j followed by d is one dimension of size shape[j]*shape[d]
                 * with d's steps. */
                it->shape[j] *= it->shape[d];
                for (int k = 0; k < nops; k++) it->steps[j][k] = it->steps[d][k];
                continue;
            }
        }
        if (merged != d) {
            it->shape[merged] = it->shape[d];
            for (int k = 0; k < nops; k++) it->steps[merged][k] = it->steps[d][k];
        }
        merged++;
    }
    it->ndim = merged;
}

/* 1 if the output writes some element twice (a stride-0 dimension of size > 1):
 * such a walk must stay on one thread. */
static inline int gt_iter_output_overlaps(const gt_iter *it)
{
    for (int d = 0; d < it->ndim; d++)
        if (it->steps[d][0] == 0) return 1;
    return 0;
}

/* Run the inner loop over row-major indices [begin, end). */
static inline void gt_iter_run_range(const gt_iter *it, gt_inner_loop loop, const void *extra,
                                     int64_t begin, int64_t end)
{
    const int nops = it->nops;
    char *ptrs[GT_ITER_MAX_OPERANDS];
    int64_t inner_steps[GT_ITER_MAX_OPERANDS] = {0, 0, 0, 0};

    if (it->ndim == 0) { /* a single element */
        for (int k = 0; k < nops; k++) ptrs[k] = it->base[k];
        if (begin < end) loop(ptrs, inner_steps, 1, extra);
        return;
    }

    const int last = it->ndim - 1;
    const int64_t inner = it->shape[last];
    for (int k = 0; k < nops; k++) inner_steps[k] = it->steps[last][k];

    /* Unravel `begin` into an index, and point each operand at it. */
    int64_t index[GT_MAX_DIMS];
    int64_t rest = begin;
    for (int d = last; d >= 0; d--) {
        index[d] = rest % it->shape[d];
        rest /= it->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        ptrs[k] = it->base[k];
        for (int d = 0; d <= last; d++) ptrs[k] += index[d] * it->steps[d][k];
    }

    int64_t todo = end - begin;
    while (todo > 0) {
        /* The rest of the current row, or less at the end of the chunk. */
        int64_t n = inner - index[last];
        if (n > todo) n = todo;
        loop(ptrs, inner_steps, n, extra);
        todo -= n;
        if (todo == 0) break;

        /* Odometer: back to the start of the row, then carry into the outer
         * digits (each digit that wraps takes its whole span back). */
        for (int k = 0; k < nops; k++) ptrs[k] -= index[last] * inner_steps[k];
        index[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            index[d]++;
            for (int k = 0; k < nops; k++) ptrs[k] += it->steps[d][k];
            if (index[d] < it->shape[d]) break;
            for (int k = 0; k < nops; k++) ptrs[k] -= it->shape[d] * it->steps[d][k];
            index[d] = 0;
        }
    }
}

/* Run the inner loop over every element, on several threads when the work is
 * large (GT_PARALLEL_THRESHOLD elements) and no output element is shared.
 *
 * Each thread takes one fixed, contiguous share of the index range: thread t
 * of T always gets the t-th T-th. Handing out small chunks on demand
 * (schedule(dynamic)) would balance the load better when another program
 * holds a core, but it sends each piece of memory to a different core from
 * one call to the next. With fixed shares, a thread finds the part of the
 * operands it touched last time still in its own L2 cache (and in its own
 * L3, where the cores sit on different ones). Timed in one process, the two
 * schedules alternating, a + b over 1M float32 took 75 us with fixed shares
 * against 79-83 us with 64K-element chunks on demand; over 4M (more than the
 * L3) the two were level. PyTorch's parallel_for splits the same way.
 *
 * Shares are whole multiples of 16 elements, so that the vectorised part of
 * each thread's inner loop is as long as it can be. */
static inline void gt_iter_run(const gt_iter *it, gt_inner_loop loop, const void *extra)
{
    const int64_t numel = it->numel;
    if (numel == 0) return;
#ifdef _OPENMP
    if (numel >= GT_PARALLEL_THRESHOLD && !gt_iter_output_overlaps(it)) {
#pragma omp parallel
        {
            const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t share = ((numel + threads - 1) / threads + 15) / 16 * 16;
            const int64_t begin = t * share < numel ? t * share : numel;
            const int64_t end = begin + share < numel ? begin + share : numel;
            if (begin < end) gt_iter_run_range(it, loop, extra, begin, end);
        }
        return;
    }
#endif
    gt_iter_run_range(it, loop, extra, 0, numel);
}

#endif /* GT_ITER_H */
