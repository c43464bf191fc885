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

/* ------------------------------------------------------------------ Philox */

#define PHILOX_M0 0xD2511F53u /* round multipliers */
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* key increments (golden ratio, sqrt(3)) */
#define PHILOX_W1 0xBB67AE85u
#define PHILOX_ROUNDS 10

/* Scramble the 128-bit counter `block` (as 64-bit low and high halves) under
 * the 64-bit key `seed` into four words. One round multiplies words 0 and 2
 * by the constants; the high halves of the products, xor-ed with the other
 * two words and the key, become words 0 and 2, the low halves words 1 and 3.
 * uint32_t arithmetic wraps modulo 2^32, which is what Philox wants. */
static inline void philox(uint64_t seed, uint64_t block_lo, uint64_t block_hi, uint32_t w[4])
{
    uint32_t c0 = (uint32_t)block_lo, c1 = (uint32_t)(block_lo >> 32);
    uint32_t c2 = (uint32_t)block_hi, c3 = (uint32_t)(block_hi >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < PHILOX_ROUNDS; round++) {
        if (round > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        const uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

/* Block number offset + k as a 128-bit counter (the carry reaches the high
 * half only past 2^64 blocks, but the reference counts that far too). */
static inline void philox_at(uint64_t seed, uint64_t offset, uint64_t k, uint32_t w[4])
{
    const uint64_t lo = offset + k;
    philox(seed, lo, lo < offset, w);
}

void gt_philox_block(uint64_t seed, uint64_t block, uint32_t *words)
{
    philox(seed, block, 0, words);
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
            philox_at(seed, offset, (uint64_t)block, w);                             \
            for (int64_t j = 0; j < 4 && 4 * block + j < n; j++) {                   \
                const double u = CODE == GT_FLOAT32 ? (double)(w[j] >> 8) * 0x1p-24  \
                                                    : (double)w[j] * 0x1p-32;        \
                CTYPE value = GT_CAST_##CODE(low + u * span);                        \
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
            philox_at(seed, offset, (uint64_t)block, w);                             \
            const double u1 = ((double)w[0] + 1.0) * 0x1p-32;                        \
            const double u2 = (double)w[1] * 0x1p-32;                                \
            const double r = sqrt(-2.0 * log(u1));                                   \
            const double angle = 2.0 * M_PI * u2;                                    \
            o[2 * block] = GT_CAST_##CODE(mean + std * r * cos(angle));              \
            if (2 * block + 1 < n)                                                   \
                o[2 * block + 1] = GT_CAST_##CODE(mean + std * r * sin(angle));      \
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

/* Random 64-bit number i: words 2*(i%2) (low half) and 2*(i%2)+1 (high half)
 * of block offset + i / 2. */
static inline uint64_t draw_uint64(const uint32_t w[4], int64_t i)
{
    const int j = 2 * (int)(i & 1);
    return (uint64_t)w[j] | ((uint64_t)w[j + 1] << 32);
}

/* low + x % span, as an exact 128-bit integer, then stored (wrapping into an
 * integer dtype, rounding into a float one) as the reference stores the
 * Python int. */
#define INTEGERS_CASE(CODE, CTYPE)                                                   \
    case CODE: {                                                                     \
        CTYPE *o = (CTYPE *)buffer;                                                  \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")                  \
        for (int64_t block = 0; block < blocks; block++) {                           \
            uint32_t w[4];                                                           \
            philox_at(seed, offset, (uint64_t)block, w);                             \
            for (int64_t i = 2 * block; i < 2 * block + 2 && i < n; i++) {           \
                const uint64_t x = draw_uint64(w, i);                                \
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
        philox_at(seed, offset, (uint64_t)block, w);
        for (int64_t k = 2 * block; k < 2 * block + 2 && k < swaps; k++) {
            const uint64_t i = (uint64_t)(n - 1 - k);
            picks[k] = (int64_t)(draw_uint64(w, k) % (i + 1));
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
