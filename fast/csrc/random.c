/* random.c: Philox 4x32-10 and the random kernels, bit for bit as reference/random.py.
 *
 * Philox is counter-based: block b's four words are a pure function of
 * (seed, b). No block depends on another, so the blocks of one call are spread
 * over OpenMP threads with no shared generator state at all; that is the whole
 * trick that makes parallel (and GPU) random numbers reproducible.
 *
 * Bit-identical floats need the same operations in the same order as the
 * reference tier's Python (which runs in double): fp-contract=off stops GCC
 * from fusing a multiply and an add into one FMA, which rounds once instead of
 * twice. The math functions (log, sin, cos) are the C library's, the same ones
 * Python's math module calls.
 */
#pragma GCC optimize("fp-contract=off")

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "elementwise.h"
#include "gt_convert.h"
#include "random.h"
#include "../cuda/gt_philox.cuh"

/* ------------------------------------------------------------------ Philox */

/* Philox itself, the word-to-number formulas and Box-Muller live in
 * fast/cuda/gt_philox.cuh, which the CUDA kernels (fast/cuda/random.cu) include too. */
void gt_philox_block(uint64_t seed, uint64_t block, uint32_t *words)
{
    gt_philox(seed, block, 0, words);
}

/* ------------------------------------------------- writing through a buffer
 * The kernels below generate values for element 0, 1, 2, ... of a contiguous
 * array. When `out` is contiguous they write into it directly; otherwise they
 * fill a temporary contiguous array and gt_copy (elementwise.c) scatters it
 * through out's strides. */

/* Where to generate: out's own memory, or a new temporary (NULL if malloc fails). */
static void *generation_buffer(const gt_view *out, int64_t n)
{
    if (gt_is_contiguous(out)) return out->data + out->offset * gt_itemsize(out->dtype);
    return malloc((size_t)(n > 0 ? n : 1) * (size_t)gt_itemsize(out->dtype));
}

/* Move a temporary's values into out, and free it. */
static void finish_generation(gt_view *out, void *buffer, int64_t n)
{
    if (gt_is_contiguous(out)) return;
    gt_view tmp = {0};
    tmp.data = buffer;
    tmp.ndim = 1;
    tmp.dtype = out->dtype;
    tmp.shape[0] = n;
    tmp.strides[0] = 1;
    /* Copy elementwise in out's shape: view tmp with out's shape, row-major. */
    tmp.ndim = out->ndim;
    int64_t stride = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        tmp.shape[d] = out->shape[d];
        tmp.strides[d] = stride;
        stride *= out->shape[d];
    }
    gt_copy(out, &tmp);
    free(buffer);
}

/* --------------------------------------------------------------- uniform */

/* The largest float32 strictly below `high`, as a double. Rounding `high` to
 * float gives a candidate; if it is not below `high`, step one float down. */
static double float32_below(double high)
{
    const float rounded = (float)high;
    if ((double)rounded < high) return rounded;
    return nextafterf(rounded, -INFINITY);
}

/* Element i: word i % 4 of block offset + i / 4, turned into u in [0, 1)
 * (24 bits for float32, all 32 otherwise), then low + u * span in double,
 * stored in out's dtype. If rounding reached `high`, store `below` instead. */
#define UNIFORM_CASE(CODE, CTYPE)                                                    \
    case CODE: {                                                                     \
        CTYPE *o = (CTYPE *)buffer;                                                  \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")                  \
        for (int64_t block = 0; block < blocks; block++) {                           \
            uint32_t w[4];                                                           \
            gt_philox_at(seed, offset, (uint64_t)block, w);                             \
            for (int64_t j = 0; j < 4 && 4 * block + j < n; j++) {                   \
                const double u = CODE == GT_FLOAT32 ? gt_philox_unit_f32(w[j])       \
                                                    : gt_philox_unit_f64(w[j]);      \
                CTYPE value = GT_CAST_##CODE(gt_philox_scale(low, u, span));         \
                if (clamp && (double)value >= high) value = (CTYPE)below;            \
                o[4 * block + j] = value;                                            \
            }                                                                        \
        }                                                                            \
        break;                                                                       \
    }

int gt_random_uniform(gt_view *out, uint64_t seed, uint64_t offset, double low, double high)
{
    const int64_t n = gt_numel(out), blocks = (n + 3) / 4;
    const double span = high - low;
    /* Only float dtypes can round up onto `high`, and only if some number of
     * the dtype lies in [low, high). */
    double below = 0.0;
    int clamp = 0;
    if (out->dtype == GT_FLOAT32 || out->dtype == GT_FLOAT64) {
        below = out->dtype == GT_FLOAT32 ? float32_below(high) : nextafter(high, -INFINITY);
        clamp = !(below < low);
    }
    void *buffer = generation_buffer(out, n);
    if (buffer == NULL) return -2;
    switch (out->dtype) {
        GT_FOR_EACH_DTYPE(UNIFORM_CASE)
    default: return -1;
    }
    finish_generation(out, buffer, n);
    return 0;
}

/* ---------------------------------------------------------------- normal */

/* Elements 2k and 2k+1 from words 0 and 1 of block offset + k (Box-Muller):
 * a point at distance sqrt(-2 log u1) and angle 2 pi u2 has two independent
 * standard normal coordinates. u1 is in (0, 1], so log(u1) is finite. */
#define NORMAL_CASE(CODE, CTYPE)                                                     \
    case CODE: {                                                                     \
        CTYPE *o = (CTYPE *)buffer;                                                  \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")                  \
        for (int64_t block = 0; block < blocks; block++) {                           \
            uint32_t w[4];                                                           \
            gt_philox_at(seed, offset, (uint64_t)block, w);                             \
            double first, second;                                                    \
            gt_box_muller(w[0], w[1], mean, std, &first, &second);                   \
            o[2 * block] = GT_CAST_##CODE(first);                                    \
            if (2 * block + 1 < n) o[2 * block + 1] = GT_CAST_##CODE(second);        \
        }                                                                            \
        break;                                                                       \
    }

int gt_random_normal(gt_view *out, uint64_t seed, uint64_t offset, double mean, double std)
{
    const int64_t n = gt_numel(out), blocks = (n + 1) / 2;
    void *buffer = generation_buffer(out, n);
    if (buffer == NULL) return -2;
    switch (out->dtype) {
        GT_FOR_EACH_DTYPE(NORMAL_CASE)
    default: return -1;
    }
    finish_generation(out, buffer, n);
    return 0;
}

/* -------------------------------------------------------------- integers */


/* low + x % span, as an exact 128-bit integer, then stored (wrapping into an
 * integer dtype, rounding into a float one) as the reference stores the
 * Python int. */
#define INTEGERS_CASE(CODE, CTYPE)                                                   \
    case CODE: {                                                                     \
        CTYPE *o = (CTYPE *)buffer;                                                  \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")                  \
        for (int64_t block = 0; block < blocks; block++) {                           \
            uint32_t w[4];                                                           \
            gt_philox_at(seed, offset, (uint64_t)block, w);                             \
            for (int64_t i = 2 * block; i < 2 * block + 2 && i < n; i++) {           \
                const uint64_t x = gt_philox_uint64(w, i);                                \
                const __int128 value = (__int128)low + (span ? x % span : x);        \
                o[i] = GT_CAST_##CODE(value);                                        \
            }                                                                        \
        }                                                                            \
        break;                                                                       \
    }

int gt_random_integers(gt_view *out, uint64_t seed, uint64_t offset, int64_t low, uint64_t span)
{
    const int64_t n = gt_numel(out), blocks = (n + 1) / 2;
    void *buffer = generation_buffer(out, n);
    if (buffer == NULL) return -2;
    switch (out->dtype) {
        GT_FOR_EACH_DTYPE(INTEGERS_CASE)
    default: return -1;
    }
    finish_generation(out, buffer, n);
    return 0;
}

/* ------------------------------------------------------------- randperm */

/* Fisher-Yates: for i from n-1 down to 1, swap slot i with slot j, j uniform
 * in 0..i. The swaps must run in order, but the j's do not depend on them:
 * swap k (i = n-1-k) uses draw number k. So the j's are computed first, in
 * parallel, and only the cheap swap loop is sequential. */
int gt_randperm(gt_view *out, uint64_t seed, uint64_t offset)
{
    const int64_t n = out->shape[0], stride = out->strides[0];
    int64_t *o = (int64_t *)out->data + out->offset;
    if (out->dtype != GT_INT64) return -1;
    if (n <= 0) return 0;
    const int64_t swaps = n - 1, blocks = (swaps + 1) / 2;
    int64_t *picks = malloc((size_t)(swaps > 0 ? swaps : 1) * sizeof(int64_t));
    if (picks == NULL) return -2;

#pragma omp parallel for if (swaps >= GT_PARALLEL_THRESHOLD)
    for (int64_t block = 0; block < blocks; block++) {
        uint32_t w[4];
        gt_philox_at(seed, offset, (uint64_t)block, w);
        for (int64_t k = 2 * block; k < 2 * block + 2 && k < swaps; k++) {
            const uint64_t i = (uint64_t)(n - 1 - k);
            picks[k] = (int64_t)(gt_philox_uint64(w, k) % (i + 1));
        }
    }

    for (int64_t p = 0; p < n; p++) o[p * stride] = p;
    for (int64_t k = 0; k < swaps; k++) {
        const int64_t i = n - 1 - k, j = picks[k];
        const int64_t t = o[i * stride];
        o[i * stride] = o[j * stride];
        o[j * stride] = t;
    }
    free(picks);
    return 0;
}
