/* reductions.c: reduce, arg_reduce, cumsum and the fused softmax.
 *
 * reference/reductions.py defines these kernels one output element at a time.
 * Here the same results come from loops laid out for the memory system.
 *
 * REDUCE
 * ------
 * Every reduction (sum, prod, amax, amin, all, any) is written once, as an
 * *accumulator* and a *combine* rule, in the op table below; the loops that
 * walk memory never name an operation. Two accumulator kinds suffice:
 *
 *   - floats (float32, float64) accumulate in double. For a float32 sum that
 *     alone removes most rounding error: double carries 29 more bits. (A
 *     float32 run is first summed in short float32 trees: see FLOAT32 TREES
 *     below.)
 *   - integers and bool accumulate in int64, with wrap-around arithmetic done
 *     in uint64 (defined behaviour in C, and what storing the reference's
 *     unbounded Python integer into the output's width gives).
 *
 * Which loop nest runs depends on where the stride-1 dimension of the input is:
 *
 *   INNER path (a reduced dimension is innermost in memory, e.g. a row sum):
 *     each output reduces a strided slice of the input whose innermost
 *     dimension is contiguous. The slice is cut into blocks of GT_BLOCK
 *     elements. Inside a block, GT_LANES independent accumulators take every
 *     GT_LANES-th element (the compiler turns that into SIMD registers, and
 *     independent chains hide the latency of each add); the lanes are then
 *     added pairwise. Block results are combined by *pairwise summation*: a
 *     binary counter of partial sums (level l holds the sum of 2^l blocks)
 *     merges equal-sized partials, so a sum of n numbers has rounding error
 *     growing like log2(n / GT_BLOCK), not like n. The tree depends only on n,
 *     never on the thread count, so results are reproducible.
 *
 *   FLOAT32 TREES. Converting every float32 element to double halves the
 *     lanes per vector and adds a conversion per element, which left a float32
 *     sum compute-bound at half PyTorch's speed. So contiguous float32 runs
 *     are first cut into GT_TREE_SIZE = 512 elements, seen as 16 rows of 32
 *     (GT_TREE_LEAVES x GT_TREE_WIDTH). Each of the 32 columns is summed by a
 *     balanced binary tree in float32: rows 0+1, 2+3, ..., then those sums
 *     pairwise, until one is left (15 adds, no chain longer than 4). Each
 *     level adds whole rows, 32 columns side by side: four 256-bit vector
 *     instructions (these loops only read and add, so they are
 *     GT_MEMORY_BOUND, see gt_common.h). The 32 roots then join the 16 double lanes, two each.
 *     Every number thus meets at most 4 float32 roundings, in a pairwise
 *     pattern (a tree of equal values is even exact), before the
 *     double-precision lanes, blocks and pairwise tree above: careful
 *     summation still, never a long float32 running sum. max and min use the
 *     same trees (exact in any precision); a product keeps double throughout,
 *     since float32 could overflow or underflow where double does not.
 *
 *   OUTER path (a kept dimension is innermost, e.g. a column sum): a row of up
 *     to GT_COLUMNS accumulators, one per output along that dimension, takes
 *     one contiguous input row after another (a vectorised row += row). The
 *     partial row is folded into a running total every GT_ROWS_PER_BLOCK rows
 *     (blocked summation: error grows like GT_ROWS_PER_BLOCK + n / it).
 *
 * Parallelism is over output elements (or column strips), so threads never
 * share an output. A reduction into few outputs (a full sum) is parallel over
 * its blocks instead: each thread computes block results into an array, and
 * one thread then runs the same pairwise combine, so the answer is identical
 * to the serial one.
 *
 * ARG_REDUCE, CUMSUM, SOFTMAX walk one 1-D slice along `dim` per output
 * slice, slices spread across threads.
 */
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"
#include "gt_convert.h"
#include "gt_math.h"
#include "reductions.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define GT_LANES 16           /* independent accumulators within a block */
#define GT_TREE_WIDTH (2 * GT_LANES) /* float32 trees side by side */
#define GT_TREE_LEAVES 16     /* leaves of one float32 tree */
#define GT_TREE_SIZE (GT_TREE_WIDTH * GT_TREE_LEAVES) /* 512 elements */
#define GT_BLOCK 8192         /* elements per block of the pairwise sum (each */
                              /* block has a fixed cost: 2048 made a float32 */
                              /* sum of 4M elements 25% slower on one core) */
#define GT_COLUMNS 256        /* outputs per strip on the outer path */
#define GT_ROWS_PER_BLOCK 128 /* rows summed before folding into the total */
#define GT_NUM_REDUCE_OPS 6

/* ------------------------------------------------------------ accumulators */

typedef union {
    double d;  /* floats */
    int64_t i; /* integers and bool */
} gt_acc;

/* The combine rule of each operation, for each accumulator kind (D: double,
 * I: int64). max/min propagate NaN: once a NaN is taken it stays. */
#define SUM_D(a, b) ((a) + (b))
#define SUM_I(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define PROD_D(a, b) ((a) * (b))
#define PROD_I(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define AMAX_D(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define AMAX_I(a, b) ((b) > (a) ? (b) : (a))
#define AMIN_D(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define AMIN_I(a, b) ((b) < (a) ? (b) : (a))
#define ALL_D(a, b) ((double)((a) != 0 && (b) != 0))
#define ALL_I(a, b) ((int64_t)((a) != 0 && (b) != 0))
#define ANY_D(a, b) ((double)((a) != 0 || (b) != 0))
#define ANY_I(a, b) ((int64_t)((a) != 0 || (b) != 0))

/* Which operations run float32 inputs through float32 trees first (see
 * FLOAT32 TREES). */
#define SUM_IN_FLOAT32 1
#define PROD_IN_FLOAT32 0
#define AMAX_IN_FLOAT32 1
#define AMIN_IN_FLOAT32 1
#define ALL_IN_FLOAT32 0
#define ANY_IN_FLOAT32 0

/* The identity of each operation: what an empty reduction gives. amax/amin
 * of nothing is refused by the frontend; their identity only seeds lanes. */
#define SUM_ID_D 0.0
#define SUM_ID_I 0
#define PROD_ID_D 1.0
#define PROD_ID_I 1
#define AMAX_ID_D (-INFINITY)
#define AMAX_ID_I INT64_MIN
#define AMIN_ID_D INFINITY
#define AMIN_ID_I INT64_MAX
#define ALL_ID_D 1.0
#define ALL_ID_I 1
#define ANY_ID_D 0.0
#define ANY_ID_I 0

#define ACC_T_D double
#define ACC_T_I int64_t
#define ACC_FIELD_D d
#define ACC_FIELD_I i

/* Every input dtype with its accumulator kind. */
#define FOR_EACH_DTYPE_KIND(X, OP)     \
    X(OP, I, GT_BOOL, uint8_t)         \
    X(OP, I, GT_UINT8, uint8_t)        \
    X(OP, I, GT_INT32, int32_t)        \
    X(OP, I, GT_INT64, int64_t)        \
    X(OP, D, GT_FLOAT32, float)        \
    X(OP, D, GT_FLOAT64, double)

#define FOR_EACH_OP(X, ARG) X(SUM, ARG) X(PROD, ARG) X(AMAX, ARG) X(AMIN, ARG) X(ALL, ARG) X(ANY, ARG)

/* The four small functions of one (operation, dtype) pair:
 *   lanes:   fold n strided elements into GT_LANES accumulators
 *   columns: acc[j] = combine(acc[j], x[j * stride]) for j < n
 *   merge:   *into = combine(*into, *from)
 *   init:    n accumulators set to the identity */
typedef void (*lanes_fn)(gt_acc *lanes, const char *x, int64_t n, int64_t stride);
typedef void (*columns_fn)(gt_acc *acc, const char *x, int64_t n, int64_t stride);
typedef void (*merge_fn)(gt_acc *into, const gt_acc *from);

#define DEFINE_KERNELS(OP, KIND, CODE, CTYPE)                                                    \
    GT_MEMORY_BOUND static void lanes_##OP##_##CODE(gt_acc *state, const char *base, int64_t n, \
                                                    int64_t stride)                              \
    {                                                                                            \
        const CTYPE *x = (const CTYPE *)base;                                                    \
        /* Lanes in a local array: the compiler keeps them in registers. */                      \
        ACC_T_##KIND acc[GT_LANES];                                                              \
        for (int k = 0; k < GT_LANES; k++) acc[k] = state[k].ACC_FIELD_##KIND;                   \
        int64_t i = 0;                                                                           \
        if (CODE == GT_FLOAT32 && OP##_IN_FLOAT32 && stride == 1) {                              \
            /* Whole float32 trees first (see FLOAT32 TREES): level by level, */                 \
            /* each level one vector operation across the tree's columns. */                     \
            const int64_t trees_end = n / GT_TREE_SIZE * GT_TREE_SIZE; /* see gt_math.h */     \
            for (; i < trees_end; i += GT_TREE_SIZE) {                                           \
                float t[GT_TREE_LEAVES / 2][GT_TREE_WIDTH];                                      \
                _Pragma("GCC unroll 8") /* constant indices: rows stay in registers */           \
                for (int j = 0; j < GT_TREE_LEAVES / 2; j++)                                     \
                    for (int k = 0; k < GT_TREE_WIDTH; k++)                                      \
                        t[j][k] = OP##_D((float)x[i + 2 * j * GT_TREE_WIDTH + k],                \
                                         (float)x[i + (2 * j + 1) * GT_TREE_WIDTH + k]);         \
                _Pragma("GCC unroll 3")                                                          \
                for (int width = GT_TREE_LEAVES / 4; width >= 1; width /= 2)                     \
                    _Pragma("GCC unroll 4")                                                      \
                    for (int j = 0; j < width; j++)                                              \
                        for (int k = 0; k < GT_TREE_WIDTH; k++)                                  \
                            t[j][k] = OP##_D(t[2 * j][k], t[2 * j + 1][k]);                      \
                for (int k = 0; k < GT_LANES; k++) /* two roots per double lane */               \
                    acc[k] = OP##_D(acc[k], OP##_D((double)t[0][k], (double)t[0][k + GT_LANES])); \
            }                                                                                    \
        }                                                                                        \
        const int64_t whole = i + (n - i) / GT_LANES * GT_LANES; /* a counted loop */          \
        if (stride == 1) { /* the SIMD-friendly case: consecutive loads */                       \
            for (; i < whole; i += GT_LANES)                                                     \
                for (int k = 0; k < GT_LANES; k++)                                               \
                    acc[k] = OP##_##KIND(acc[k], (ACC_T_##KIND)x[i + k]);                        \
        } else {                                                                                 \
            for (; i < whole; i += GT_LANES)                                                     \
                for (int k = 0; k < GT_LANES; k++)                                               \
                    acc[k] = OP##_##KIND(acc[k], (ACC_T_##KIND)x[(i + k) * stride]);             \
        }                                                                                        \
        for (int k = 0; i < n; i++, k++) /* the tail, spread over the lanes */                   \
            acc[k] = OP##_##KIND(acc[k], (ACC_T_##KIND)x[i * stride]);                           \
        for (int k = 0; k < GT_LANES; k++) state[k].ACC_FIELD_##KIND = acc[k];                   \
    }                                                                                            \
    GT_MEMORY_BOUND static void columns_##OP##_##CODE(gt_acc *acc, const char *base, int64_t n,  \
                                                      int64_t stride)                            \
    {                                                                                            \
        const CTYPE *x = (const CTYPE *)base;                                                    \
        ACC_T_##KIND *a = (ACC_T_##KIND *)acc; /* gt_acc is 8 bytes: same layout */              \
        if (stride == 1) {                                                                       \
            for (int64_t j = 0; j < n; j++) a[j] = OP##_##KIND(a[j], (ACC_T_##KIND)x[j]);        \
        } else {                                                                                 \
            for (int64_t j = 0; j < n; j++)                                                      \
                a[j] = OP##_##KIND(a[j], (ACC_T_##KIND)x[j * stride]);                           \
        }                                                                                        \
    }

/* Sixteen input rows, `row_stride` apart, into the accumulators (the outer
 * path's FLOAT32 TREES, for the operations that use them): each column's 16
 * numbers are combined by a balanced float32 tree, and only its root meets
 * the double accumulator. With one conversion and one double operation per
 * 16 numbers instead of per number, a column sum runs at the speed of memory
 * (a bias gradient, 1024 x 512 summed over its rows: 84 -> 25 us). */
#define DEFINE_ROWS16(OP, KIND, CODE, CTYPE)                                                     \
    GT_MEMORY_BOUND static void rows16_##OP##_##CODE(gt_acc *acc, const char *base, int64_t n,  \
                                                     int64_t row_stride)                         \
    {                                                                                            \
        const CTYPE *x = (const CTYPE *)base;                                                    \
        ACC_T_##KIND *a = (ACC_T_##KIND *)acc;                                                   \
        int64_t j = 0;                                                                           \
        /* GT_TREE_WIDTH columns side by side: every level one vector op per row. */             \
        for (; j + GT_TREE_WIDTH <= n; j += GT_TREE_WIDTH) {                                     \
            float t[GT_TREE_LEAVES / 2][GT_TREE_WIDTH];                                          \
            _Pragma("GCC unroll 8")                                                              \
            for (int r = 0; r < GT_TREE_LEAVES / 2; r++)                                         \
                for (int k = 0; k < GT_TREE_WIDTH; k++)                                          \
                    t[r][k] = OP##_D((float)x[2 * r * row_stride + j + k],                       \
                                     (float)x[(2 * r + 1) * row_stride + j + k]);                \
            _Pragma("GCC unroll 3")                                                              \
            for (int width = GT_TREE_LEAVES / 4; width >= 1; width /= 2)                         \
                _Pragma("GCC unroll 4")                                                          \
                for (int r = 0; r < width; r++)                                                  \
                    for (int k = 0; k < GT_TREE_WIDTH; k++)                                      \
                        t[r][k] = OP##_D(t[2 * r][k], t[2 * r + 1][k]);                          \
            for (int k = 0; k < GT_TREE_WIDTH; k++)                                              \
                a[j + k] = OP##_##KIND(a[j + k], (ACC_T_##KIND)t[0][k]);                         \
        }                                                                                        \
        for (; j < n; j++) { /* the last columns: one tree each */                               \
            float t[GT_TREE_LEAVES / 2];                                                         \
            for (int r = 0; r < GT_TREE_LEAVES / 2; r++)                                         \
                t[r] = OP##_D((float)x[2 * r * row_stride + j],                                  \
                              (float)x[(2 * r + 1) * row_stride + j]);                           \
            for (int width = GT_TREE_LEAVES / 4; width >= 1; width /= 2)                         \
                for (int r = 0; r < width; r++) t[r] = OP##_D(t[2 * r], t[2 * r + 1]);           \
            a[j] = OP##_##KIND(a[j], (ACC_T_##KIND)t[0]);                                        \
        }                                                                                        \
    }

#define DEFINE_OP_KINDS(OP, UNUSED)                                                           \
    DEFINE_ROWS16(OP, D, GT_FLOAT32, float)                                                   \
    FOR_EACH_DTYPE_KIND(DEFINE_KERNELS, OP)                                                   \
    static void merge_##OP##_D(gt_acc *into, const gt_acc *from)                              \
    {                                                                                         \
        into->d = OP##_D(into->d, from->d);                                                   \
    }                                                                                         \
    static void merge_##OP##_I(gt_acc *into, const gt_acc *from)                              \
    {                                                                                         \
        into->i = OP##_I(into->i, from->i);                                                   \
    }

FOR_EACH_OP(DEFINE_OP_KINDS, 0)

/* The op table: for each operation and input dtype, its functions and its
 * identity. Built from the same X-macros, so no loop is written twice. */
typedef struct {
    lanes_fn lanes;
    columns_fn columns;
    columns_fn rows16; /* NULL: one row at a time */
    merge_fn merge;
    gt_acc identity;
    int is_float; /* accumulator kind: 1 double, 0 int64 */
} reduce_impl;

#define IMPL_ENTRY(OP, KIND, CODE, CTYPE)                                                  \
    [CODE] = {lanes_##OP##_##CODE, columns_##OP##_##CODE,                                   \
              CODE == GT_FLOAT32 && OP##_IN_FLOAT32 ? rows16_##OP##_GT_FLOAT32 : NULL,      \
              merge_##OP##_##KIND,                                                         \
              {.ACC_FIELD_##KIND = OP##_ID_##KIND}, KIND##_IS_FLOAT},
#define D_IS_FLOAT 1
#define I_IS_FLOAT 0
#define OP_ROW(OP, UNUSED) [GT_REDUCE_##OP] = {FOR_EACH_DTYPE_KIND(IMPL_ENTRY, OP)},

static const reduce_impl REDUCE_TABLE[GT_NUM_REDUCE_OPS][6] = {FOR_EACH_OP(OP_ROW, 0)};

/* Store an accumulator into an output element of any dtype, converting with
 * the reference's rules (gt_convert.h). */
static void store_acc(int dtype, char *p, gt_acc value, int is_float)
{
#define STORE_CASE(CODE, CTYPE)                                                     \
    case CODE:                                                                      \
        *(CTYPE *)p = is_float ? GT_CAST_##CODE(value.d) : GT_CAST_##CODE(value.i); \
        break;
    switch (dtype) { GT_FOR_EACH_DTYPE(STORE_CASE) }
#undef STORE_CASE
}

/* -------------------------------------------------------------- the layout */

/* The reduction, reorganised: kept dimensions (the output's) and reduced
 * ones, each list with size-1 dimensions dropped and neighbours merged where
 * the strides allow, innermost (smallest stride) last. */
typedef struct {
    int nkept, nred;
    int64_t kshape[GT_MAX_DIMS], kstride_a[GT_MAX_DIMS], kstride_out[GT_MAX_DIMS];
    int64_t rshape[GT_MAX_DIMS], rstride[GT_MAX_DIMS];
    int64_t nout, nred_elems; /* number of outputs; elements per output */
    int itemsize;              /* of a */
} reduce_plan;

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* Sort dimensions by decreasing |stride| (a stable insertion sort: at most
 * GT_MAX_DIMS entries), then merge each into its outer neighbour when
 * contiguous with it: walking the merged dimension visits the same elements
 * in the same order. */
static int sort_and_merge(int n, int64_t *shape, int64_t *stride, int64_t *stride2)
{
    for (int i = 1; i < n; i++) {
        for (int j = i; j > 0 && abs64(stride[j - 1]) < abs64(stride[j]); j--) {
            int64_t t;
            t = shape[j], shape[j] = shape[j - 1], shape[j - 1] = t;
            t = stride[j], stride[j] = stride[j - 1], stride[j - 1] = t;
            if (stride2) t = stride2[j], stride2[j] = stride2[j - 1], stride2[j - 1] = t;
        }
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && stride[m - 1] == stride[i] * shape[i] &&
            (!stride2 || stride2[m - 1] == stride2[i] * shape[i])) {
            shape[m - 1] *= shape[i];
            stride[m - 1] = stride[i];
            if (stride2) stride2[m - 1] = stride2[i];
            continue;
        }
        shape[m] = shape[i], stride[m] = stride[i];
        if (stride2) stride2[m] = stride2[i];
        m++;
    }
    return m;
}

static void make_plan(reduce_plan *p, const gt_view *out, const gt_view *a)
{
    p->nkept = p->nred = 0;
    p->nout = p->nred_elems = 1;
    p->itemsize = gt_itemsize(a->dtype);
    for (int d = 0; d < a->ndim; d++) {
        int64_t size = a->shape[d];
        if (out->shape[d] == size) { /* kept */
            p->nout *= size;
            if (size == 1) continue;
            p->kshape[p->nkept] = size;
            p->kstride_a[p->nkept] = a->strides[d];
            p->kstride_out[p->nkept] = out->strides[d];
            p->nkept++;
        } else { /* reduced */
            p->nred_elems *= size;
            p->rshape[p->nred] = size;
            p->rstride[p->nred] = a->strides[d];
            p->nred++;
        }
    }
    p->nkept = sort_and_merge(p->nkept, p->kshape, p->kstride_a, p->kstride_out);
    p->nred = sort_and_merge(p->nred, p->rshape, p->rstride, NULL);
    /* A 0-d walk is a walk over one element: give each list a dimension. */
    if (p->nkept == 0) p->kshape[0] = 1, p->kstride_a[0] = p->kstride_out[0] = 0, p->nkept = 1;
    if (p->nred == 0) p->rshape[0] = 1, p->rstride[0] = 0, p->nred = 1;
}

/* Positions (in elements) in a and out of the output with linear index o over
 * the kept dimensions. */
static void output_start(const reduce_plan *p, int64_t o, int64_t *pos_a, int64_t *pos_out)
{
    int64_t pa = 0, po = 0;
    for (int d = p->nkept - 1; d >= 0; d--) {
        int64_t i = o % p->kshape[d];
        o /= p->kshape[d];
        pa += i * p->kstride_a[d];
        po += i * p->kstride_out[d];
    }
    *pos_a = pa;
    *pos_out = po;
}

/* ------------------------------------------------------------ inner path */

/* Pairwise combination of a stream of block results: a binary counter. */
typedef struct {
    gt_acc level[64];
    uint64_t occupied; /* bit l set: level[l] holds the result of 2^l blocks */
} pairwise;

static void pairwise_push(pairwise *s, gt_acc value, merge_fn merge)
{
    int l = 0;
    while (s->occupied & (1ULL << l)) { /* carry: merge two equal-sized partials */
        gt_acc earlier = s->level[l];
        merge(&earlier, &value);
        value = earlier;
        s->occupied &= ~(1ULL << l);
        l++;
    }
    s->level[l] = value;
    s->occupied |= 1ULL << l;
}

static gt_acc pairwise_finish(const pairwise *s, const reduce_impl *impl)
{
    gt_acc total = impl->identity;
    int first = 1;
    for (int l = 0; l < 64; l++) { /* smallest partials first */
        if (!(s->occupied & (1ULL << l))) continue;
        if (first) total = s->level[l], first = 0;
        else {
            gt_acc bigger = s->level[l];
            impl->merge(&bigger, &total);
            total = bigger;
        }
    }
    return total;
}

/* The result of block [begin, end) of one output's reduced elements (linear,
 * row-major over the reduced dimensions), starting at byte address `base`. */
static gt_acc reduce_block(const reduce_plan *p, const reduce_impl *impl, const char *base,
                           int64_t begin, int64_t end)
{
    gt_acc lanes[GT_LANES];
    for (int k = 0; k < GT_LANES; k++) lanes[k] = impl->identity;

    const int last = p->nred - 1;
    const int64_t inner = p->rshape[last];
    const int64_t inner_step = p->rstride[last];
    int64_t index[GT_MAX_DIMS], rest = begin, pos = 0;
    for (int d = last; d >= 0; d--) {
        index[d] = rest % p->rshape[d];
        rest /= p->rshape[d];
        pos += index[d] * p->rstride[d];
    }
    int64_t todo = end - begin;
    while (todo > 0) {
        int64_t n = inner - index[last];
        if (n > todo) n = todo;
        impl->lanes(lanes, base + pos * p->itemsize, n, inner_step);
        todo -= n;
        if (todo == 0) break;
        /* Odometer over the outer reduced dimensions. */
        pos -= index[last] * inner_step;
        index[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            index[d]++;
            pos += p->rstride[d];
            if (index[d] < p->rshape[d]) break;
            pos -= p->rshape[d] * p->rstride[d];
            index[d] = 0;
        }
    }
    /* Add the lanes pairwise: 16 -> 8 -> 4 -> 2 -> 1. */
    for (int width = GT_LANES / 2; width >= 1; width /= 2)
        for (int k = 0; k < width; k++) impl->merge(&lanes[k], &lanes[k + width]);
    return lanes[0];
}

/* One output's whole reduction, serially. */
static gt_acc reduce_one(const reduce_plan *p, const reduce_impl *impl, const char *base)
{
    const int64_t n = p->nred_elems;
    if (n <= GT_BLOCK) return reduce_block(p, impl, base, 0, n);
    pairwise stack;
    stack.occupied = 0;
    for (int64_t b = 0; b < n; b += GT_BLOCK)
        pairwise_push(&stack, reduce_block(p, impl, base, b, b + GT_BLOCK < n ? b + GT_BLOCK : n),
                      impl->merge);
    return pairwise_finish(&stack, impl);
}

/* One output's reduction with its blocks spread across threads. The block
 * results land in an array and go through the same pairwise counter in the
 * same order as reduce_one's, so the answer is bit-for-bit the serial one. */
static gt_acc reduce_one_parallel(const reduce_plan *p, const reduce_impl *impl, const char *base)
{
    const int64_t n = p->nred_elems, nblocks = (n + GT_BLOCK - 1) / GT_BLOCK;
    gt_acc *blocks = malloc((size_t)nblocks * sizeof(gt_acc));
    if (!blocks) return reduce_one(p, impl, base);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nblocks; b++) {
        int64_t begin = b * GT_BLOCK, end = begin + GT_BLOCK < n ? begin + GT_BLOCK : n;
        blocks[b] = reduce_block(p, impl, base, begin, end);
    }
    pairwise stack;
    stack.occupied = 0;
    for (int64_t b = 0; b < nblocks; b++) pairwise_push(&stack, blocks[b], impl->merge);
    free(blocks);
    return pairwise_finish(&stack, impl);
}

static void reduce_inner(const reduce_plan *p, const reduce_impl *impl, gt_view *out,
                         const gt_view *a)
{
    const char *a_base = a->data + a->offset * p->itemsize;
    char *out_base = out->data + out->offset * gt_itemsize(out->dtype);
    const int out_size = gt_itemsize(out->dtype);
    const int64_t work = p->nout * p->nred_elems;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (work >= GT_PARALLEL_THRESHOLD && p->nout < threads && p->nred_elems > 2 * GT_BLOCK) {
        /* Few outputs, long reductions: split each reduction. */
        for (int64_t o = 0; o < p->nout; o++) {
            int64_t pa, po;
            output_start(p, o, &pa, &po);
            gt_acc r = reduce_one_parallel(p, impl, a_base + pa * p->itemsize);
            store_acc(out->dtype, out_base + po * out_size, r, impl->is_float);
        }
        return;
    }
#pragma omp parallel for schedule(static) if (work >= GT_PARALLEL_THRESHOLD && p->nout > 1)
    for (int64_t o = 0; o < p->nout; o++) {
        int64_t pa, po;
        output_start(p, o, &pa, &po);
        gt_acc r = reduce_one(p, impl, a_base + pa * p->itemsize);
        store_acc(out->dtype, out_base + po * out_size, r, impl->is_float);
    }
}

/* ------------------------------------------------------------ outer path */

/* One strip: outputs (outer kept index o, columns [c0, c0 + w)) of the
 * innermost kept dimension, fed one input row per reduced index. */
static void reduce_strip(const reduce_plan *p, const reduce_impl *impl, gt_view *out,
                         const gt_view *a, int64_t o, int64_t c0, int64_t w)
{
    gt_acc partial[GT_COLUMNS], total[GT_COLUMNS];
    const int kl = p->nkept - 1;
    const int64_t col_a = p->kstride_a[kl], col_out = p->kstride_out[kl];

    /* Start of the strip: unravel o over the kept dimensions but the last. */
    int64_t pa = c0 * col_a, po = c0 * col_out;
    for (int d = kl - 1; d >= 0; d--) {
        int64_t i = o % p->kshape[d];
        o /= p->kshape[d];
        pa += i * p->kstride_a[d];
        po += i * p->kstride_out[d];
    }
    const char *a_base = a->data + (a->offset + pa) * p->itemsize;

    for (int64_t j = 0; j < w; j++) total[j] = impl->identity;
    const int last = p->nred - 1;
    int64_t index[GT_MAX_DIMS] = {0}, pos = 0;
    int64_t rows = p->nred_elems;
    int64_t r = 0;
    while (r < rows) {
        /* Blocked summation: a fresh partial row every GT_ROWS_PER_BLOCK rows. */
        for (int64_t j = 0; j < w; j++) partial[j] = impl->identity;
        int64_t block_end = r + GT_ROWS_PER_BLOCK < rows ? r + GT_ROWS_PER_BLOCK : rows;
        while (r < block_end) {
            /* Sixteen rows at once where they lie evenly spaced (see rows16). */
            const int64_t step =
                impl->rows16 != NULL && col_a == 1 && block_end - r >= GT_TREE_LEAVES &&
                        index[last] + GT_TREE_LEAVES <= p->rshape[last]
                    ? GT_TREE_LEAVES
                    : 1;
            if (step > 1)
                impl->rows16(partial, a_base + pos * p->itemsize, w, p->rstride[last]);
            else
                impl->columns(partial, a_base + pos * p->itemsize, w, col_a);
            r += step;
            /* Odometer over all reduced dimensions. */
            index[last] += step - 1;
            pos += (step - 1) * p->rstride[last];
            for (int d = last; d >= 0; d--) {
                index[d]++;
                pos += p->rstride[d];
                if (index[d] < p->rshape[d]) break;
                pos -= p->rshape[d] * p->rstride[d];
                index[d] = 0;
            }
        }
        for (int64_t j = 0; j < w; j++) impl->merge(&total[j], &partial[j]);
    }
    const int out_size = gt_itemsize(out->dtype);
    char *out_base = out->data + (out->offset + po) * out_size;
    for (int64_t j = 0; j < w; j++)
        store_acc(out->dtype, out_base + j * col_out * out_size, total[j], impl->is_float);
}

/* How many columns each strip of the outer path takes. GT_COLUMNS, unless
 * that leaves a thread idle on a large reduction: then halve the strips (down
 * to 16 columns, one AVX-512 vector of float32) until each thread has one. A
 * bias gradient, (128, 256) summed over its rows, is one strip of 256
 * columns; as two strips of 128 both cores share it. */
static int64_t strip_width(const reduce_plan *p, int threads)
{
    const int64_t m = p->kshape[p->nkept - 1], outer = p->nout / m;
    int64_t width = GT_COLUMNS;
    if (p->nout * p->nred_elems < GT_PARALLEL_THRESHOLD) return width; /* serial anyway */
    while (width > 16 && outer * ((m + width - 1) / width) < threads) width /= 2;
    return width;
}

static void reduce_outer(const reduce_plan *p, const reduce_impl *impl, gt_view *out,
                         const gt_view *a, int64_t width)
{
    const int64_t m = p->kshape[p->nkept - 1];
    const int64_t strips_per_row = (m + width - 1) / width;
    const int64_t tasks = (p->nout / m) * strips_per_row;
    const int64_t work = p->nout * p->nred_elems;
#pragma omp parallel for schedule(static) if (work >= GT_PARALLEL_THRESHOLD && tasks > 1)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / strips_per_row, c0 = (t % strips_per_row) * width;
        int64_t w = m - c0 < width ? m - c0 : width;
        reduce_strip(p, impl, out, a, o, c0, w);
    }
}

int gt_reduce(int op, gt_view *out, const gt_view *a)
{
    if (op < 0 || op >= GT_NUM_REDUCE_OPS || a->dtype < 0 || a->dtype > GT_FLOAT64) return -1;
    const reduce_impl *impl = &REDUCE_TABLE[op][a->dtype];
    reduce_plan p;
    make_plan(&p, out, a);
    if (p.nout == 0) return 0;
    if (p.nred_elems == 0) { /* empty reduction: the identity everywhere */
        const int out_size = gt_itemsize(out->dtype);
        for (int64_t o = 0; o < p.nout; o++) {
            int64_t pa, po;
            output_start(&p, o, &pa, &po);
            store_acc(out->dtype, out->data + (out->offset + po) * out_size, impl->identity,
                      impl->is_float);
        }
        return 0;
    }
    /* Outer path when the innermost input dimension is a kept one and there
     * are enough strips to share among threads. */
    int64_t inner_kept = abs64(p.kstride_a[p.nkept - 1]);
    int64_t inner_red = abs64(p.rstride[p.nred - 1]);
    int kept_is_inner = p.kshape[p.nkept - 1] > 1 && (p.rshape[p.nred - 1] == 1 ||
                                                      inner_kept < inner_red);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const int64_t width = strip_width(&p, threads);
    int64_t strips = (p.nout / p.kshape[p.nkept - 1]) *
                     ((p.kshape[p.nkept - 1] + width - 1) / width);
    int big = p.nout * p.nred_elems >= GT_PARALLEL_THRESHOLD;
    if (kept_is_inner && (!big || strips >= threads || p.nout >= 4 * GT_COLUMNS))
        reduce_outer(&p, impl, out, a, width);
    else
        reduce_inner(&p, impl, out, a);
    return 0;
}

/* -------------------------------------------------------------- 1-D slices */

/* arg_reduce, cumsum and softmax work on 1-D slices along `dim`. Slice s
 * (row-major over the other dimensions) starts at slice_start(view, dim, s). */
static int64_t slice_start(const gt_view *v, int dim, int64_t s)
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

static int64_t slice_count(const gt_view *v, int dim)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++)
        if (d != dim) n *= v->shape[d];
    return n;
}

/* ------------------------------------------------------------- arg_reduce */

/* The first extreme of each slice; the first NaN wins outright. */
#define DEFINE_ARG(CODE, CTYPE)                                                                  \
    static void arg_##CODE(int is_max, gt_view *values, gt_view *indices, const gt_view *a,      \
                           int dim)                                                              \
    {                                                                                            \
        const int64_t n = a->shape[dim], step = a->strides[dim], slices = slice_count(a, dim);   \
        const CTYPE *x = (const CTYPE *)a->data;                                                 \
        CTYPE *vals = (CTYPE *)values->data;                                                     \
        int64_t *idx = (int64_t *)indices->data;                                                 \
        _Pragma("omp parallel for schedule(static) if (slices * n >= GT_PARALLEL_THRESHOLD)")    \
        for (int64_t s = 0; s < slices; s++) {                                                   \
            const CTYPE *row = x + slice_start(a, dim, s);                                       \
            CTYPE best = row[0];                                                                 \
            int64_t at = 0;                                                                      \
            if (best == best) { /* (a NaN first element already wins) */                        \
                for (int64_t k = 1; k < n; k++) {                                                \
                    CTYPE v = row[k * step];                                                     \
                    if (v != v) { best = v, at = k; break; }                                     \
                    if (is_max ? v > best : v < best) best = v, at = k;                          \
                }                                                                                \
            }                                                                                    \
            vals[slice_start(values, dim, s)] = best;                                            \
            idx[slice_start(indices, dim, s)] = at;                                              \
        }                                                                                        \
    }
GT_FOR_EACH_DTYPE(DEFINE_ARG)

int gt_arg_reduce(int is_max, gt_view *values, gt_view *indices, const gt_view *a, int dim)
{
    if (a->shape[dim] == 0 || slice_count(a, dim) == 0) return 0; /* (frontend refuses empty) */
    switch (a->dtype) {
#define ARG_CASE(CODE, CTYPE) \
    case CODE: arg_##CODE(is_max, values, indices, a, dim); return 0;
        GT_FOR_EACH_DTYPE(ARG_CASE)
#undef ARG_CASE
    }
    return -1;
}

/* ----------------------------------------------------------------- cumsum */

/* A running sum per slice, accumulated in double (floats) or wrapping int64,
 * and stored after each step, as the reference does. */
#define DEFINE_CUMSUM(CODE, CTYPE)                                                               \
    static void cumsum_##CODE(gt_view *out, const gt_view *a, int dim)                           \
    {                                                                                            \
        const int64_t n = a->shape[dim], sa = a->strides[dim], so = out->strides[dim];           \
        const int64_t slices = slice_count(a, dim);                                              \
        const CTYPE *x = (const CTYPE *)a->data;                                                 \
        CTYPE *y = (CTYPE *)out->data;                                                           \
        _Pragma("omp parallel for schedule(static) if (slices * n >= GT_PARALLEL_THRESHOLD)")    \
        for (int64_t s = 0; s < slices; s++) {                                                   \
            const CTYPE *src = x + slice_start(a, dim, s);                                       \
            CTYPE *dst = y + slice_start(out, dim, s);                                           \
            if (CODE == GT_FLOAT32 || CODE == GT_FLOAT64) {                                      \
                double total = 0;                                                                \
                for (int64_t k = 0; k < n; k++) {                                                \
                    total += (double)src[k * sa];                                                \
                    dst[k * so] = GT_CAST_##CODE(total);                                         \
                }                                                                                \
            } else {                                                                             \
                uint64_t total = 0;                                                              \
                for (int64_t k = 0; k < n; k++) {                                                \
                    total += (uint64_t)(int64_t)src[k * sa];                                     \
                    dst[k * so] = GT_CAST_##CODE((int64_t)total);                                \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
GT_FOR_EACH_DTYPE(DEFINE_CUMSUM)

int gt_cumsum(gt_view *out, const gt_view *a, int dim)
{
    if (out->dtype != a->dtype) return -1;
    if (gt_numel(a) == 0) return 0;
    switch (a->dtype) {
#define CUMSUM_CASE(CODE, CTYPE) \
    case CODE: cumsum_##CODE(out, a, dim); return 0;
        GT_FOR_EACH_DTYPE(CUMSUM_CASE)
#undef CUMSUM_CASE
    }
    return -1;
}

/* ---------------------------------------------------------------- softmax */

/* One row of softmax / log_softmax in float32.
 *
 * Three passes over the row, which stays in L1 cache between them: the
 * maximum; y = exp(x - max) with its sum (in double); then y = y / sum, or
 * y = x - max - log(sum). NaN and infinities follow reference/reductions.py:
 * a NaN maximum shifts by 0 (the NaN then spreads through the sum); an
 * infinite maximum is kept, so inf - inf makes the row NaN.
 *
 * Contiguous rows (the usual case: softmax over the last dimension) run each
 * pass as vector code: gt_max_f32 and gt_exp_sum_f32 of gt_math.h, with
 * gt_exp_f32 inlined, and float32 arithmetic in the last pass. (The first
 * version summed the exps in double lanes and took the maximum with a scalar
 * NaN test, which kept it 2.6x slower than PyTorch.) Strided rows take the
 * same steps one element at a time. */
static void softmax_row_f32(float *y, int64_t sy, const float *x, int64_t sx, int64_t n,
                            int take_log)
{
    const int contiguous = sx == 1 && sy == 1;
    float shift = contiguous ? gt_max_f32(x, n) : gt_row_max_f32(x, n, sx);
    if (shift != shift) shift = 0.0f;
    double total;
    if (contiguous) {
        total = gt_exp_sum_f32(y, x, n, shift);
    } else {
        double lanes[GT_LANES] = {0};
        for (int64_t i = 0; i < n; i++) {
            const float e = gt_exp_f32(x[i * sx] - shift); /* NaN in, NaN out */
            if (!take_log) y[i * sy] = e;
            lanes[i % GT_LANES] += (double)e;
        }
        for (int width = GT_LANES / 2; width >= 1; width /= 2)
            for (int k = 0; k < width; k++) lanes[k] += lanes[k + width];
        total = lanes[0];
    }
    if (take_log) {
        /* Contiguous rows work in float32 (a vector of 16 per instruction):
         * two roundings instead of the reference's one, within float
         * tolerance of its double arithmetic. */
        const double log_total = log(total);
        if (contiguous) {
            const float log_total_f = (float)log_total;
            for (int64_t k = 0; k < n; k++) y[k] = (x[k] - shift) - log_total_f;
        } else {
            for (int64_t k = 0; k < n; k++)
                y[k * sy] = (float)(((double)x[k * sx] - (double)shift) - log_total);
        }
    } else {
        const float scale = total != 0 ? (float)(1.0 / total) : NAN;
        if (contiguous)
            for (int64_t k = 0; k < n; k++) y[k] *= scale;
        else
            for (int64_t k = 0; k < n; k++) y[k * sy] *= scale;
    }
}

/* The same in float64, with libm's exp (correctly rounded enough for double)
 * and the lanes of double accumulators. */
static void softmax_row_f64(double *y, int64_t sy, const double *x, int64_t sx, int64_t n,
                            int take_log)
{
    double shift = gt_row_max_f64(x, n, sx);
    if (shift != shift) shift = 0.0;
    double lanes[GT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        double v = x[i * sx];
        double e = v != v ? v : exp(v - shift);
        if (!take_log) y[i * sy] = e;
        lanes[i % GT_LANES] += e;
    }
    for (int width = GT_LANES / 2; width >= 1; width /= 2)
        for (int k = 0; k < width; k++) lanes[k] += lanes[k + width];
    double total = lanes[0];
    if (take_log) {
        double log_total = log(total);
        for (int64_t k = 0; k < n; k++) y[k * sy] = (x[k * sx] - shift) - log_total;
    } else {
        double scale = total != 0 ? 1.0 / total : NAN;
        for (int64_t k = 0; k < n; k++) y[k * sy] *= scale;
    }
}

int gt_softmax(gt_view *out, const gt_view *a, int dim, int take_log)
{
    if (out->dtype != a->dtype || (a->dtype != GT_FLOAT32 && a->dtype != GT_FLOAT64)) return -1;
    const int64_t n = a->shape[dim], slices = slice_count(a, dim);
    if (n == 0 || slices == 0) return 0;
    const int64_t sa = a->strides[dim], so = out->strides[dim];
    const int is_f32 = a->dtype == GT_FLOAT32;
#pragma omp parallel for schedule(static) if (slices * n >= GT_PARALLEL_THRESHOLD && slices > 1)
    for (int64_t s = 0; s < slices; s++) {
        int64_t pa = slice_start(a, dim, s), po = slice_start(out, dim, s);
        if (is_f32)
            softmax_row_f32((float *)out->data + po, so, (const float *)a->data + pa, sa, n, take_log);
        else
            softmax_row_f64((double *)out->data + po, so, (const double *)a->data + pa, sa, n,
                            take_log);
    }
    return 0;
}
