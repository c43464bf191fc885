/* indexing.c: gather, scatter, index_select, index_put and nonzero.
 *
 * The first four are one loop with two roles (reference/indexing.py):
 *
 *   gather, index_select   out[i]                 = a[i with i[dim] = idx(i)]
 *   scatter, index_put     out[i with i[dim] = idx(i)] (+)= src[i]
 *
 * In both, one operand is walked *directly* (out for gather, src for scatter)
 * over the iteration shape, and the other is addressed *indirectly*: its
 * position is the direct walk's position along the other dimensions, plus
 * idx(i) * stride[dim]. For gather/scatter idx(i) = index[i]; for
 * index_select/index_put the 1-D index is read as a tensor that is constant
 * along every other dimension (stride 0 there), idx(i) = index[i[dim]]. So
 * one walker serves all four, with a small row function per dtype.
 *
 * The walk, outermost first: the "outer" dimensions, then `dim` (when it is
 * not the last one), then the last dimension as the inner loop, which the row
 * functions run with fixed strides (contiguous in the common layouts).
 *
 * Threads and determinism. Gathers write each output once, so any split is
 * safe: tasks are (outer, dim) rows. Scatters may write one target many
 * times: two source elements collide only if they agree on every coordinate
 * but `dim`, and the reference applies them in row-major order, i.e. in order
 * along `dim`. So a scatter task owns whole fibers along `dim`: tasks are
 * (outer, strip of the inner dimension), and each walks `dim` in order. The
 * last write wins, and accumulations add in the reference's order, on any
 * number of threads, with no atomics.
 */
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"
#include "indexing.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define GT_STRIP 1024 /* inner elements per scatter task */

/* Bounds. Every index is checked here, as it is read, against `limit` (the
 * indirect operand's size along dim). The frontend does not check indices
 * beforehand: another Python thread can write the index tensor at any time,
 * even while this kernel runs. Each index is read once (GT_READ_ONCE) into a
 * local, checked, and only that local is used, so no element outside the
 * indirect operand is ever touched, whatever other threads write. A row
 * stops at its first bad index and reports it; the walker keeps the report
 * of the earliest task, and the kernel returns it to the glue, which raises
 * PyTorch's error (the output's contents are then unspecified). */

/* ---------------------------------------------------------- row functions */

/* One inner row of n elements. direct/indirect/idx point at the row's first
 * element (indirect: before adding the index term); each has its stride
 * along the row; `dim_stride` is the indirect operand's stride along dim and
 * `limit` its size there. Returns 0, or 1 after storing a bad index in *bad. */
typedef int (*row_fn)(char *direct, int64_t s_direct, char *indirect, int64_t s_indirect,
                      const int64_t *idx, int64_t s_idx, int64_t dim_stride, int64_t limit,
                      int64_t n, int64_t *bad);

#define ROW_PARAMS                                                                             \
    char *direct, int64_t sd, char *indirect, int64_t si, const int64_t *idx, int64_t sx,      \
        int64_t dim_stride, int64_t limit, int64_t n, int64_t *bad

/* The loop every row function runs: read index j once into k, check it
 * (report it and leave the row when it is outside [0, limit)), then BODY. */
#define FOR_EACH_CHECKED_INDEX(BODY)                       \
    for (int64_t j = 0; j < n; j++) {                      \
        const int64_t k = GT_READ_ONCE(&idx[j * sx]);      \
        if (GT_INDEX_OUTSIDE(k, limit)) {                  \
            *bad = k;                                      \
            return 1;                                      \
        }                                                  \
        BODY;                                              \
    }                                                      \
    return 0;

/* Optimization: a row whose index does not move along it (s_idx == 0: index_select
 * and index_put take whole slices, as an embedding's rows are) reads and checks its
 * one index once, then moves or adds the row as a plain loop, which the compiler
 * vectorises when both operands are contiguous along it. Elementwise, it does
 * what FOR_EACH_CHECKED_INDEX does: the same index, the same elements, in order.
 * (An embedding's 2,048 rows of 256 floats, whole operations through the
 * frontend: index_select 142 -> 26 us, index_add_ of the gradient 422 -> 78 us.) */
#define FOR_A_FIXED_INDEX(BODY)                              \
    if (sx == 0 && n > 0) {                                  \
        const int64_t k = GT_READ_ONCE(idx);                 \
        if (GT_INDEX_OUTSIDE(k, limit)) {                    \
            *bad = k;                                        \
            return 1;                                        \
        }                                                    \
        if (sd == 1 && si == 1) {                            \
            const int64_t sd = 1, si = 1; /* known strides */ \
            for (int64_t j = 0; j < n; j++) BODY;            \
        } else {                                             \
            for (int64_t j = 0; j < n; j++) BODY;            \
        }                                                    \
        return 0;                                            \
    }

/* Gathers and plain scatters move bits: one function per element size. */
#define DEFINE_MOVES(CTYPE, SIZE)                                                         \
    static int gather_row_##SIZE(ROW_PARAMS)                                              \
    {                                                                                     \
        CTYPE *out = (CTYPE *)direct;                                                     \
        const CTYPE *a = (const CTYPE *)indirect;                                         \
        FOR_A_FIXED_INDEX(out[j * sd] = a[j * si + k * dim_stride])                       \
        FOR_EACH_CHECKED_INDEX(out[j * sd] = a[j * si + k * dim_stride])                  \
    }                                                                                     \
    static int scatter_row_##SIZE(ROW_PARAMS)                                             \
    {                                                                                     \
        const CTYPE *src = (const CTYPE *)direct;                                         \
        CTYPE *out = (CTYPE *)indirect;                                                   \
        FOR_A_FIXED_INDEX(out[j * si + k * dim_stride] = src[j * sd])                     \
        FOR_EACH_CHECKED_INDEX(out[j * si + k * dim_stride] = src[j * sd])                \
    }
DEFINE_MOVES(uint8_t, 1)
DEFINE_MOVES(uint32_t, 4)
DEFINE_MOVES(uint64_t, 8)

/* Accumulating scatters add, with each dtype's rule: integers wrap (done in
 * unsigned arithmetic), bool saturates (x + y != 0), floats add in their own
 * precision (a float32 sum rounded once is what the reference stores). */
#define ADD_GT_BOOL(x, y) ((uint8_t)(((x) | (y)) != 0))
#define ADD_GT_UINT8(x, y) ((uint8_t)((x) + (y)))
#define ADD_GT_INT32(x, y) ((int32_t)((uint32_t)(x) + (uint32_t)(y)))
#define ADD_GT_INT64(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define ADD_GT_FLOAT32(x, y) ((x) + (y))
#define ADD_GT_FLOAT64(x, y) ((x) + (y))

#define DEFINE_SCATTER_ADD(CODE, CTYPE)                                                   \
    static int scatter_add_row_##CODE(ROW_PARAMS)                                         \
    {                                                                                     \
        const CTYPE *src = (const CTYPE *)direct;                                         \
        CTYPE *out = (CTYPE *)indirect;                                                   \
        FOR_A_FIXED_INDEX({                                                               \
            CTYPE *target = out + j * si + k * dim_stride;                                \
            *target = ADD_##CODE(*target, src[j * sd]);                                   \
        })                                                                                \
        FOR_EACH_CHECKED_INDEX(CTYPE *target = out + j * si + k * dim_stride;             \
                               *target = ADD_##CODE(*target, src[j * sd]))                \
    }
GT_FOR_EACH_DTYPE(DEFINE_SCATTER_ADD)

static row_fn move_row(int gather, int dtype)
{
    switch (gt_itemsize(dtype)) {
    case 1: return gather ? gather_row_1 : scatter_row_1;
    case 4: return gather ? gather_row_4 : scatter_row_4;
    default: return gather ? gather_row_8 : scatter_row_8;
    }
}

static row_fn add_row(int dtype)
{
    switch (dtype) {
#define ADD_CASE(CODE, CTYPE) \
    case CODE: return scatter_add_row_##CODE;
        GT_FOR_EACH_DTYPE(ADD_CASE)
#undef ADD_CASE
    }
    return NULL;
}

/* ------------------------------------------------------------- the walker */

/* A view's stride along d, or 0 past its last dimension: gather and scatter
 * accept a 0-d index with a 1-D operand and the other way round, so the walk
 * (over one operand's shape) may name a dimension the other lacks. */
static int64_t stride_at(const gt_view *v, int d) { return d < v->ndim ? v->strides[d] : 0; }

/* `direct` gives the iteration shape; idx_strides are the index's strides
 * over that shape (all but dim zero for index_select/index_put). Returns 0,
 * or 1 with the first bad index (of the earliest task that met one) in *bad. */
static int walk(row_fn row, int ordered, const gt_view *direct, const gt_view *indirect,
                const gt_view *index, const int64_t *idx_strides, int dim, int64_t *bad)
{
    const int nd = direct->ndim;
    if (gt_numel(direct) == 0) return 0;

    /* The three loops: outer dims (flattened), the middle (dim, unless it is
     * the inner one), the inner (the last dim). A 0-d walk is one element. */
    const int inner = nd - 1;
    int64_t n_inner = 1, sd_in = 0, si_in = 0, sx_in = 0;
    int64_t n_mid = 1, sd_mid = 0, sx_mid = 0;
    /* The indices address the indirect operand along dim: [0, limit). A 0-d
     * indirect operand is one element, reached by index 0. */
    const int64_t dim_stride = stride_at(indirect, dim);
    const int64_t limit = dim < indirect->ndim ? indirect->shape[dim] : 1;
    if (nd > 0) {
        n_inner = direct->shape[inner];
        sd_in = direct->strides[inner];
        si_in = inner == dim ? 0 : stride_at(indirect, inner);
        sx_in = idx_strides[inner];
        if (dim != inner) {
            n_mid = direct->shape[dim];
            sd_mid = direct->strides[dim];
            sx_mid = idx_strides[dim];
        }
    }
    int nouter = 0;
    int64_t oshape[GT_MAX_DIMS], osd[GT_MAX_DIMS], osi[GT_MAX_DIMS], osx[GT_MAX_DIMS];
    int64_t n_outer = 1;
    for (int d = 0; d < nd - 1; d++) {
        if (d == dim || direct->shape[d] == 1) continue;
        oshape[nouter] = direct->shape[d];
        osd[nouter] = direct->strides[d];
        osi[nouter] = stride_at(indirect, d);
        osx[nouter] = idx_strides[d];
        n_outer *= direct->shape[d];
        nouter++;
    }

    const int sd_size = gt_itemsize(direct->dtype), si_size = gt_itemsize(indirect->dtype);
    /* A scatter task: one outer position and one strip of the inner loop,
     * all of dim in order. A strip cannot split the inner loop when the
     * inner loop is dim itself. */
    const int64_t strip = ordered && inner != dim ? GT_STRIP : (n_inner > 0 ? n_inner : 1);
    const int64_t per_outer = ordered ? (n_inner + strip - 1) / strip : n_mid;
    const int64_t tasks = n_outer * per_outer;
    const int64_t work = n_outer * n_mid * n_inner;
    int64_t bad_task = tasks; /* the earliest task that met a bad index, or none */

#pragma omp parallel for schedule(static) if (work >= GT_PARALLEL_THRESHOLD && tasks > 1)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / per_outer, rest = t % per_outer;
        int64_t pd = direct->offset, pi = indirect->offset, px = index->offset;
        for (int k = nouter - 1; k >= 0; k--) {
            int64_t i = o % oshape[k];
            o /= oshape[k];
            pd += i * osd[k], pi += i * osi[k], px += i * osx[k];
        }
        int64_t m_begin = 0, m_end = n_mid, c_begin = 0, c_len = n_inner;
        if (ordered) {
            c_begin = rest * strip;
            c_len = n_inner - c_begin < strip ? n_inner - c_begin : strip;
        } else {
            m_begin = rest, m_end = rest + 1;
        }
        for (int64_t m = m_begin; m < m_end; m++) {
            int64_t qd = pd + m * sd_mid + c_begin * sd_in;
            int64_t qi = pi + c_begin * si_in; /* indirect: dim comes from the index */
            int64_t qx = px + m * sx_mid + c_begin * sx_in;
            int64_t found;
            if (row(direct->data + qd * sd_size, sd_in, indirect->data + qi * si_size, si_in,
                    (const int64_t *)index->data + qx, sx_in, dim_stride, limit, c_len,
                    &found)) {
                /* The error path: rare, so a critical section costs nothing. */
#pragma omp critical(gt_bad_index)
                if (t < bad_task) bad_task = t, *bad = found;
                break;
            }
        }
    }
    return bad_task < tasks;
}

/* Each kernel returns 0, -1 for a dtype it does not handle, or 1 when an
 * index was outside the indirect operand (the index is in *bad). */
int gt_gather(gt_view *out, const gt_view *a, int dim, const gt_view *index, int64_t *bad)
{
    return walk(move_row(1, out->dtype), 0, out, a, index, index->strides, dim, bad);
}

int gt_scatter(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate,
               int64_t *bad)
{
    row_fn row = accumulate ? add_row(out->dtype) : move_row(0, out->dtype);
    if (!row) return -1;
    return walk(row, 1, src, out, index, index->strides, dim, bad);
}

/* The 1-D index of index_select/index_put as strides over the walk's shape:
 * it moves along dim only. */
static void select_strides(int64_t *strides, int ndim, int dim, const gt_view *index)
{
    for (int d = 0; d < ndim; d++) strides[d] = 0;
    if (ndim > 0) strides[dim] = index->ndim > 0 ? index->strides[0] : 0;
}

int gt_index_select(gt_view *out, const gt_view *a, int dim, const gt_view *index, int64_t *bad)
{
    int64_t strides[GT_MAX_DIMS];
    select_strides(strides, out->ndim, dim, index);
    return walk(move_row(1, out->dtype), 0, out, a, index, strides, dim, bad);
}

int gt_index_put(gt_view *out, int dim, const gt_view *index, const gt_view *src, int accumulate,
                 int64_t *bad)
{
    row_fn row = accumulate ? add_row(out->dtype) : move_row(0, out->dtype);
    if (!row) return -1;
    int64_t strides[GT_MAX_DIMS];
    select_strides(strides, src->ndim, dim, index);
    return walk(row, 1, src, out, index, strides, dim, bad);
}

/* ---------------------------------------------------------------- nonzero */

/* Counting is done in two passes so threads can write in parallel: each
 * thread counts the non-zeros of its own chunk of the row-major index range,
 * a prefix sum of the counts gives each chunk's first output row, and then
 * each thread writes its rows. The order is row-major, as the reference's. */

#define DEFINE_IS_NONZERO(CODE, CTYPE) \
    static int nz_##CODE(const char *p) { return *(const CTYPE *)p != 0; }
GT_FOR_EACH_DTYPE(DEFINE_IS_NONZERO)

typedef int (*nz_fn)(const char *p);

/* Visit elements [begin, end) of a in row-major order; count the non-zeros,
 * or (out != NULL) write their coordinates from output row `row` on. */
static int64_t nonzero_range(const gt_view *a, nz_fn is_nz, int64_t begin, int64_t end,
                             gt_view *out, int64_t row)
{
    const int nd = a->ndim, size = gt_itemsize(a->dtype);
    int64_t index[GT_MAX_DIMS], rest = begin, pos = a->offset, count = 0;
    for (int d = nd - 1; d >= 0; d--) {
        index[d] = rest % a->shape[d];
        rest /= a->shape[d];
        pos += index[d] * a->strides[d];
    }
    int64_t *o = out ? (int64_t *)out->data + out->offset : NULL;
    const int64_t s0 = out ? out->strides[0] : 0, s1 = out && out->ndim > 1 ? out->strides[1] : 0;
    for (int64_t k = begin; k < end; k++) {
        if (is_nz(a->data + pos * size)) {
            if (o)
                for (int d = 0; d < nd; d++) o[(row + count) * s0 + d * s1] = index[d];
            count++;
        }
        for (int d = nd - 1; d >= 0; d--) { /* odometer */
            index[d]++;
            pos += a->strides[d];
            if (index[d] < a->shape[d]) break;
            pos -= a->shape[d] * a->strides[d];
            index[d] = 0;
        }
    }
    return count;
}

int gt_nonzero(gt_view *out, const gt_view *a)
{
    nz_fn is_nz = NULL;
    switch (a->dtype) {
#define NZ_CASE(CODE, CTYPE) \
    case CODE: is_nz = nz_##CODE; break;
        GT_FOR_EACH_DTYPE(NZ_CASE)
#undef NZ_CASE
    }
    if (!is_nz) return -1;
    const int64_t numel = gt_numel(a);
    if (numel == 0) return 0;
    int chunks = 1;
#ifdef _OPENMP
    if (numel >= GT_PARALLEL_THRESHOLD) chunks = omp_get_max_threads();
#endif
    if (chunks > 256) chunks = 256;
    int64_t first_row[257];
    if (chunks == 1) {
        nonzero_range(a, is_nz, 0, numel, out, 0);
        return 0;
    }
#pragma omp parallel for schedule(static, 1)
    for (int c = 0; c < chunks; c++)
        first_row[c + 1] = nonzero_range(a, is_nz, numel * c / chunks, numel * (c + 1) / chunks,
                                         NULL, 0);
    first_row[0] = 0;
    for (int c = 0; c < chunks; c++) first_row[c + 1] += first_row[c];
#pragma omp parallel for schedule(static, 1)
    for (int c = 0; c < chunks; c++)
        nonzero_range(a, is_nz, numel * c / chunks, numel * (c + 1) / chunks, out, first_row[c]);
    return 0;
}
