/* gt_common.h: what every fast-tier kernel family shares.
 *
 * A tensor reaches C as a gt_view: the address of its storage buffer plus the
 * shape, strides (in elements) and offset the frontend computed. Element
 * (i0, i1, ...) lives at  ((T *)data)[offset + i0*strides[0] + i1*strides[1] + ...],
 * exactly the formula of reference/strided.py.
 *
 * Only the block between "cffi-begin" and "cffi-end" is read by cffi (see
 * fast/build.py): it must hold plain C declarations, no macros or includes.
 */
#ifndef GT_COMMON_H
#define GT_COMMON_H

#include <stdint.h>

/* cffi-begin */
typedef struct {
    char *data;           /* start of the storage buffer (not of the view) */
    int64_t offset;       /* position of element (0, 0, ...) in the buffer */
    int32_t ndim;
    int32_t dtype;        /* one of the GT_* codes below */
    int64_t shape[64];    /* GT_MAX_DIMS: PyTorch's limit, checked by the frontend */
    int64_t strides[64];  /* in elements, may be 0 (broadcast) */
} gt_view;

enum {
    GT_BOOL = 0,
    GT_UINT8 = 1,
    GT_INT32 = 2,
    GT_INT64 = 3,
    GT_FLOAT32 = 4,
    GT_FLOAT64 = 5
};
/* cffi-end */

#define GT_MAX_DIMS 64

/* Read a value another thread may be writing, exactly once.
 *
 * An index is checked and then used. If the compiler loaded it from memory
 * again for the use (it may, for a plain read: a data race is undefined
 * behaviour in C), a value written in between by another thread would skip
 * the check. A relaxed atomic load is one plain load on x86-64 and ARM, and
 * the compiler must use the value it loaded. The Linux kernel's READ_ONCE is
 * the same idea. */
#define GT_READ_ONCE(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* 1 when the int64 index k is outside [0, size): one unsigned comparison
 * catches the negative ones too. */
#define GT_INDEX_OUTSIDE(k, size) ((uint64_t)(k) >= (uint64_t)(size))

/* Number of elements of a view. */
static inline int64_t gt_numel(const gt_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* 1 when the view is row-major with no gaps (size-1 dims may have any stride). */
static inline int gt_is_contiguous(const gt_view *v)
{
    int64_t expected = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] == 0) return 1;
        if (v->shape[d] != 1 && v->strides[d] != expected) return 0;
        expected *= v->shape[d];
    }
    return 1;
}

/* Buffer position of the element with row-major linear index `linear`:
 * unravel the index one dimension at a time, last dimension fastest. Used by
 * the general strided paths; the contiguous fast paths never call it. */
static inline int64_t gt_position(const gt_view *v, int64_t linear)
{
    int64_t pos = v->offset;
    for (int d = v->ndim - 1; d >= 0; d--) {
        int64_t size = v->shape[d];
        if (size == 0) return pos;
        pos += (linear % size) * v->strides[d];
        linear /= size;
    }
    return pos;
}

/* Bytes per element of a dtype code. */
static inline int gt_itemsize(int32_t dtype)
{
    switch (dtype) {
    case GT_BOOL: case GT_UINT8: return 1;
    case GT_INT32: case GT_FLOAT32: return 4;
    default: return 8;
    }
}

/* The X-macro that lists every dtype with its C type: a kernel family writes
 * its loop once as a macro taking (CODE, CTYPE) and expands it for each dtype,
 * instead of copying the loop six times. bool is stored as one byte (0 or 1). */
#define GT_FOR_EACH_DTYPE(X) \
    X(GT_BOOL, uint8_t)      \
    X(GT_UINT8, uint8_t)     \
    X(GT_INT32, int32_t)     \
    X(GT_INT64, int64_t)     \
    X(GT_FLOAT32, float)     \
    X(GT_FLOAT64, double)

/* Work below this many elements runs on one thread: starting OpenMP threads
 * costs a few microseconds, more than a small loop takes. */
#define GT_PARALLEL_THRESHOLD 32768

/* Vector width for loops that move data rather than compute with it.
 *
 * With -march=native on a CPU with AVX-512, GCC vectorises loops 512 bits
 * (16 floats) wide. For loops whose cost is arithmetic (exp, tanh, softmax)
 * that is the right choice: exp over 1M float32 takes about 20% longer with
 * 256-bit vectors. For loops that only load, add and store (a + b, copies,
 * fills, where, plain sums), 256-bit vectors are faster on the AMD EPYC
 * (Zen 4) we measure on, which runs each 512-bit instruction as two 256-bit
 * halves: a plain C loop doing a + b over 1M float32 on one core takes
 * 160 us with 256-bit vectors against 175 us with 512-bit ones, and the
 * bench's add-1M (two threads) went from about 115 to 90 us, its sum-4M from
 * about 140 to 120 us. PyTorch, too, runs its elementwise kernels through
 * its AVX2 (256-bit) code on this machine.
 *
 * GT_MEMORY_BOUND marks such a function: it asks GCC for 256-bit vectors in
 * it, and leaves every other function at the machine's full width. The
 * attribute is GCC's, on x86-64; elsewhere the macro is empty. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GT_MEMORY_BOUND __attribute__((target("prefer-vector-width=256")))
#else
#define GT_MEMORY_BOUND
#endif

#endif /* GT_COMMON_H */
