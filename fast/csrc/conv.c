/* conv.c: convolution, conv2d and its input and weight gradients, and the
 * im2col and col2im of F.unfold and F.fold (reference/conv.py is the
 * plain-loop definition of every kernel here; pooling is in pooling.c, batch
 * normalisation in batch_norm.c).
 *
 * Convolution as matrix products (im2col)
 * ---------------------------------------
 * One sample's convolution, for group g, is a matrix product:
 *
 *     out[n, g] (O_g x L) = W_g (O_g x K) times cols (K x L)
 *
 * with L = OH * OW output positions, K = C_g * KH * KW taps, and cols the
 * "im2col" matrix: column l holds the K input values that output position l
 * reads (zeros for taps in the padding). Written this way, nearly all the
 * work runs in the GEMM of gemm.c, which reuses every number from registers
 * and caches, where a direct seven-deep loop reads each input value K times
 * from memory.
 *
 * Bounded memory: tiles of the im2col matrix
 * -------------------------------------------
 * The whole im2col matrix of a batch is K * L * N numbers, KH * KW times the
 * input (ResNet's 3x3 layers: 9x). Instead each product runs over a tile of
 * at most CONV_TILE_BYTES of columns (a few hundred output positions): the
 * tile is built, multiplied, and its buffer reused for the next one. The tile
 * fits in L2 next to the GEMM's packed blocks, so it is read back from cache.
 *
 * 1x1 convolutions with stride 1 and no padding need no im2col at all: the
 * input sample, C_g x L row-major, already *is* the cols matrix, and the GEMM
 * reads it in place through its strides.
 *
 * Stride 1: the wide grid
 * -----------------------
 * With stride 1, every im2col row is, output row by output row, a shifted
 * piece of the zero-padded input. Computing each output row as wide as the
 * padded input (a few wasted columns, dropped after) makes each row one
 * contiguous run of a padded copy of the input, so the GEMM can read it there
 * (gemm.c's gt_gemm_rows and, transposed, gt_gemm_cols) and no im2col matrix
 * is written: see conv_wide and conv_wide_backward_weight below, and
 * wide_forward_pays for when the forward pass takes it.
 *
 * The gradients are two more products over the same tiles:
 *
 *     d cols (K x L)   = W_g^T (K x O_g) times d out[n, g] (O_g x L), then
 *                        col2im adds each column back where im2col read it;
 *     d W_g (O_g x K) += d out[n, g] (O_g x L) times cols^T (L x K).
 *
 * The transposes are free: gemm.c reads its operands through strides.
 *
 * Threads
 * -------
 * The work items are (sample, tile) pairs, or groups of samples when a
 * sample is one small tile (their columns then sit side by side in one tile
 * buffer, see conv_shape_of). With at least as many items as
 * threads, OpenMP shares the items out and each runs a one-thread GEMM on its
 * own tile buffer (no barrier, no sharing); with fewer (one large image), the
 * items run in turn and each GEMM uses every thread. col2im adds into the
 * input gradient, where neighbouring tiles overlap, so the input gradient
 * shares out whole samples. The weight gradient sums over every item: each
 * thread adds into its own copy, and the copies are summed at the end in
 * thread order.
 *
 * Every view is contiguous (the contract says so), so addresses are plain
 * row-major arithmetic; float32 and float64 share each loop through a macro
 * and the op table CONV_KINDS.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "conv.h"
#include "conv_window.h"
#include "gemm.h"
#include "threads.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

/* Size of one thread's im2col tile: with the GEMM's packed A block (144 KiB)
 * and B sliver it stays inside a 1 MiB L2. */
#ifndef CONV_TILE_BYTES
#define CONV_TILE_BYTES (256 * 1024)
#endif
/* Below this many multiply-adds a convolution runs on one thread: starting a
 * team costs more than it saves. */
#define CONV_PARALLEL_MIN (1 << 17)
/* The most columns, in bytes, of a tile buffer holding several samples side
 * by side (see conv_shape_of). */
#ifndef CONV_BATCH_BYTES
#define CONV_BATCH_BYTES (512 * 1024)
#endif

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}



/* ------------------------------------------------------------------------
 * im2col and col2im over a tile of whole output rows [r0, r0 + rows): the
 * tile's columns are rows of rows * OW numbers, one row per tap (c, kh, kw).
 * ------------------------------------------------------------------------ */
/* Optimization (whole output rows): with tiles cut in whole output rows no
 * division finds where each row segment starts, and the columns of each
 * kernel column kw that read inside the image, [lo, hi), are the same for
 * every row, so they are found once per tap rather than once per row
 * segment. On 8 x 8 and 16 x 16 images (rows of 8 or 16 numbers) that
 * bookkeeping, done per row segment, cost more than the copies (measured: the
 * im2col of ResNet-20's 64-channel layers, batch 32, 1.55 -> 1.04 ms). */
/* Optimization (stride 2 through phase planes): with stride 2, tap (kh, kw)
 * reads input rows 2 oh + kh - ph and columns 2 ow + kw - pw, every other
 * number, so each output row was gathered one number at a time (rows of 16
 * or 8 numbers on ResNet's downsampling layers, whose im2col then took half
 * of the convolution's time). Split into its four phases (even or odd rows
 * and columns), the input becomes four planes half as wide, and each tap
 * reads one of them with stride 1, shifted by whole rows and columns: the
 * stride-1 copy of im2col_tap_flat, one memcpy a tap, once the phases are
 * made (one pass over the input rows a tile reads). */
/* Optimization (narrow planes through a padded copy): on an 8 x 8 image a
 * tap's rows are 64 numbers, and im2col_tap_flat's three library calls and
 * its padding columns cost more than the copy (40 cycles a tap, a quarter of
 * ResNet-20's 64-channel forward pass). Up to IM2COL_PADDED_WIDTH columns,
 * each channel's rows are first copied into a zero-padded buffer (the wide
 * grid's layout, see conv_wide), where every tap row is w contiguous numbers
 * with its padding included: one fixed-size copy a row, no calls. */
#ifndef IM2COL_PADDED_WIDTH
#define IM2COL_PADDED_WIDTH 16
#endif

static inline int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); }

/* The most elements col2im_tap_flat saves and restores around its add. */
#define FLAT_SAVED 256

#define DEFINE_IM2COL_ROWS(T, SUFFIX)                                                              \
    /* One tap's rows when output rows are as long as input rows (stride 1,  */                  \
    /* output as wide as the input: "same" padding): its valid rows are one    */                  \
    /* run of the input plane, shifted by `off`, so one memcpy moves them all; */                  \
    /* the columns [0, lo) and [hi, ow) that read the padding are zeroed after */                  \
    /* it (they received the neighbouring row's ends), and so are the rows    */                  \
    /* that read above or below the image. `first` is the input row of tile   */                  \
    /* row 0. The run starts at a valid element of the first valid row and    */                  \
    /* ends at one of the last, so it never reads outside the plane. (Taken   */                  \
    /* only with padding narrower than the image, which col2im's twin needs.) */                  \
    static void im2col_tap_flat_##SUFFIX(const T *plane, const conv_geom *g, int64_t first,       \
                                         int64_t rows, int64_t off, int64_t lo, int64_t hi,       \
                                         T *dst)                                                   \
    {                                                                                              \
        const int64_t w = g->w;                                                                    \
        const int64_t r_lo = min64(rows, max64(0, -first));                                        \
        const int64_t r_hi = max64(r_lo, min64(rows, g->h - first));                               \
        if (lo >= hi || r_lo == r_hi) {                                                            \
            memset(dst, 0, (size_t)(rows * w) * sizeof(T));                                        \
            return;                                                                                \
        }                                                                                          \
        memset(dst, 0, (size_t)(r_lo * w) * sizeof(T));                                            \
        memcpy(dst + r_lo * w + lo, plane + (first + r_lo) * w + off + lo,                         \
               (size_t)((r_hi - r_lo - 1) * w + hi - lo) * sizeof(T));                             \
        /* Column by column: with padding 1 each is one store a row, and a    */                  \
        /* row-by-row loop paid two loop setups for it (half of the copy's    */                  \
        /* time on 8-wide rows).                                               */                  \
        for (int64_t ow = 0; ow < lo; ow++)                                                        \
            for (int64_t r = r_lo; r < r_hi; r++) dst[r * w + ow] = 0;                             \
        for (int64_t ow = hi; ow < w; ow++)                                                        \
            for (int64_t r = r_lo; r < r_hi; r++) dst[r * w + ow] = 0;                             \
        memset(dst + r_hi * w, 0, (size_t)((rows - r_hi) * w) * sizeof(T));                        \
    }                                                                                              \
    /* Stride 2 through phase planes (see the Optimization note above       */                  \
    /* DEFINE_IM2COL_ROWS): each channel's rows that the tile reads split     */                  \
    /* into its four phase planes (even or odd rows, even or odd columns; w/2 */                  \
    /* wide, as wide as an output row), then every tap is one phase plane     */                  \
    /* shifted by whole rows and columns, copied by im2col_tap_flat. Returns  */                  \
    /* 0 (nothing done) when the phase buffer cannot be allocated.            */                  \
    static int im2col_phases_##SUFFIX(const T *x, int64_t channels, const conv_geom *g,          \
                                      int64_t r0, int64_t rows, T *cols, int64_t len)              \
    {                                                                                              \
        const int64_t w2 = g->w / 2; /* every phase plane's width: the output's */                \
        const int64_t q_lo = floor_half(-g->ph), q_hi = floor_half(g->kh - 1 - g->ph);             \
        const int64_t span = rows + q_hi - q_lo; /* phase rows one tile reads, at most */          \
        T *phases = malloc((size_t)(4 * span * w2) * sizeof(T));                                   \
        if (phases == NULL) return 0;                                                              \
        for (int64_t c = 0; c < channels; c++) {                                                   \
            const T *plane = x + c * g->h * g->w;                                                  \
            int64_t lo_row[2], hi_row[2]; /* the phase rows held, per row phase */                 \
            for (int a = 0; a < 2; a++) {                                                          \
                const int64_t h_a = (g->h - a + 1) / 2;                                            \
                lo_row[a] = min64(max64(r0 + q_lo, 0), h_a);                                       \
                hi_row[a] = max64(lo_row[a], min64(r0 + rows + q_hi, h_a));                        \
                for (int64_t r = lo_row[a]; r < hi_row[a]; r++) {                                  \
                    const T *src = plane + (2 * r + a) * g->w;                                     \
                    T *even = phases + ((2 * a) * span + r - lo_row[a]) * w2;                      \
                    T *odd = phases + ((2 * a + 1) * span + r - lo_row[a]) * w2;                   \
                    for (int64_t j = 0; j < w2; j++) {                                             \
                        even[j] = src[2 * j];                                                      \
                        odd[j] = src[2 * j + 1];                                                   \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            for (int64_t kh = 0; kh < g->kh; kh++) {                                               \
                const int64_t q = floor_half(kh - g->ph), a = kh - g->ph - 2 * q;                  \
                conv_geom sub = *g; /* the held rows of phase a, as an image */                    \
                sub.h = hi_row[a] - lo_row[a];                                                     \
                sub.w = w2;                                                                        \
                for (int64_t kw = 0; kw < g->kw; kw++) {                                           \
                    const int64_t t = floor_half(kw - g->pw), b = kw - g->pw - 2 * t;              \
                    int64_t lo, hi;                                                                \
                    valid_range(t, 1, w2, w2, &lo, &hi);                                           \
                    im2col_tap_flat_##SUFFIX(phases + (2 * a + b) * span * w2, &sub,               \
                                             r0 + q - lo_row[a], rows, t, lo, hi,                  \
                                             cols + ((c * g->kh + kh) * g->kw + kw) * len);        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        free(phases);                                                                              \
        return 1;                                                                                  \
    }                                                                                              \
    /* Narrow planes through a padded copy (see the Optimization note above */                  \
    /* DEFINE_IM2COL_ROWS): each channel's rows that the tile reads, zero-   */                  \
    /* padded (span x wp), then every tap row is w numbers of it, a copy of  */                  \
    /* a size known at compile time for 8 and 16. Returns 0 (nothing done)   */                  \
    /* when the buffer cannot be allocated.                                  */                  \
    static int im2col_padded_##SUFFIX(const T *x, int64_t channels, const conv_geom *g,          \
                                      int64_t r0, int64_t rows, T *cols, int64_t len)              \
    {                                                                                              \
        const int64_t w = g->w, wp = w + 2 * g->pw, span = rows + g->kh - 1;                       \
        T *padded = malloc((size_t)(span * wp) * sizeof(T));                                       \
        if (padded == NULL) return 0;                                                              \
        for (int64_t c = 0; c < channels; c++) {                                                   \
            const T *plane = x + c * g->h * w;                                                     \
            for (int64_t j = 0; j < span; j++) {                                                   \
                const int64_t ih = r0 - g->ph + j;                                                 \
                T *row = padded + j * wp;                                                          \
                for (int64_t q = 0; q < wp; q++) row[q] = 0;                                       \
                if (ih >= 0 && ih < g->h) memcpy(row + g->pw, plane + ih * w, (size_t)w * sizeof(T)); \
            }                                                                                      \
            for (int64_t kh = 0; kh < g->kh; kh++) {                                               \
                for (int64_t kw = 0; kw < g->kw; kw++) {                                           \
                    T *dst = cols + ((c * g->kh + kh) * g->kw + kw) * len;                         \
                    const T *src = padded + kh * wp + kw;                                          \
                    if (w == 8)                                                                    \
                        for (int64_t r = 0; r < rows; r++)                                         \
                            memcpy(dst + r * 8, src + r * wp, 8 * sizeof(T));                      \
                    else if (w == 16)                                                              \
                        for (int64_t r = 0; r < rows; r++)                                         \
                            memcpy(dst + r * 16, src + r * wp, 16 * sizeof(T));                    \
                    else                                                                           \
                        for (int64_t r = 0; r < rows; r++)                                         \
                            memcpy(dst + r * w, src + r * wp, (size_t)w * sizeof(T));              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        free(padded);                                                                              \
        return 1;                                                                                  \
    }                                                                                              \
    static void im2col_rows_##SUFFIX(const T *x, int64_t channels, const conv_geom *geometry,     \
                                     int64_t r0, int64_t rows, T *cols, int64_t len)               \
    {                                                                                              \
        /* Optimization: the geometry copied to a local, so that the compiler  */                  \
        /* knows the stores into cols cannot change it and keeps its fields in */                  \
        /* registers (it reloaded them from memory for every row).             */                  \
        const conv_geom local = *geometry, *g = &local;                                            \
        const int64_t ow_n = g->ow;                                                                \
        /* Optimization (whole taps in one copy, see im2col_tap_flat). */                          \
        const int flat = g->sh == 1 && g->sw == 1 && g->ow == g->w && g->pw < g->w;              \
        /* Optimization (narrow planes through a padded copy, see im2col_padded). */               \
        if (flat && g->dh == 1 && g->dw == 1 && g->w <= IM2COL_PADDED_WIDTH &&                     \
            im2col_padded_##SUFFIX(x, channels, g, r0, rows, cols, len))                           \
            return;                                                                                \
        /* Optimization (stride 2 through phase planes, see im2col_phases). */                     \
        if (g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->w % 2 == 0 &&              \
            g->ow == g->w / 2 && g->pw < g->ow &&                                                  \
            im2col_phases_##SUFFIX(x, channels, g, r0, rows, cols, len))                           \
            return;                                                                                \
        for (int64_t c = 0; c < channels; c++) {                                                   \
            const T *plane = x + c * g->h * g->w;                                                  \
            for (int64_t kh = 0; kh < g->kh; kh++) {                                               \
                for (int64_t kw = 0; kw < g->kw; kw++) {                                           \
                    T *dst = cols + ((c * g->kh + kh) * g->kw + kw) * len;                         \
                    const int64_t off = kw * g->dw - g->pw;                                        \
                    int64_t lo, hi;                                                                \
                    valid_range(off, g->sw, g->w, ow_n, &lo, &hi);                                 \
                    if (flat) {                                                                    \
                        im2col_tap_flat_##SUFFIX(plane, g, r0 - g->ph + kh * g->dh, rows, off,     \
                                                 lo, hi, dst);                                     \
                        continue;                                                                  \
                    }                                                                              \
                    for (int64_t r = 0; r < rows; r++, dst += ow_n) {                              \
                        const int64_t ih = (r0 + r) * g->sh - g->ph + kh * g->dh;                  \
                        if (ih < 0 || ih >= g->h) {                                                \
                            for (int64_t ow = 0; ow < ow_n; ow++) dst[ow] = 0;                     \
                            continue;                                                              \
                        }                                                                          \
                        const T *row = plane + ih * g->w + off;                                    \
                        for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;                           \
                        if (g->sw == 1)                                                            \
                            for (int64_t ow = lo; ow < hi; ow++) dst[ow] = row[ow];                \
                        else                                                                       \
                            for (int64_t ow = lo; ow < hi; ow++) dst[ow] = row[ow * g->sw];        \
                        for (int64_t ow = hi; ow < ow_n; ow++) dst[ow] = 0;                        \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* col2im's twin of im2col_tap_flat: one add over the tap's run of the    */                  \
    /* plane. The run's elements in columns [0, lo) and [hi, w) belong to     */                  \
    /* other taps' windows and must not change: they are saved before the add */                  \
    /* and put back after it, which is exact (a subtraction would not be). At */                  \
    /* most FLAT_SAVED of them; returns 0 (nothing done) when there are more. */                  \
    static int col2im_tap_flat_##SUFFIX(T *plane, const conv_geom *g, int64_t first,              \
                                        int64_t rows, int64_t off, int64_t lo, int64_t hi,        \
                                        const T *src)                                              \
    {                                                                                              \
        const int64_t w = g->w;                                                                    \
        const int64_t r_lo = min64(rows, max64(0, -first));                                        \
        const int64_t r_hi = max64(r_lo, min64(rows, g->h - first));                               \
        if (lo >= hi || r_lo == r_hi) return 1;                                                    \
        if ((r_hi - r_lo) * (w - (hi - lo)) > FLAT_SAVED) return 0;                                \
        T saved[FLAT_SAVED];                                                                       \
        T *dst = plane + (first + r_lo) * w + off; /* row r_lo's column 0 (maybe not in x) */    \
        int64_t count = 0;                                                                         \
        for (int64_t r = 0; r < r_hi - r_lo; r++) {                                                \
            if (r > 0)                                                                             \
                for (int64_t ow = 0; ow < lo; ow++) saved[count++] = dst[r * w + ow];              \
            if (r < r_hi - r_lo - 1)                                                               \
                for (int64_t ow = hi; ow < w; ow++) saved[count++] = dst[r * w + ow];              \
        }                                                                                          \
        const T *from = src + r_lo * w + lo;                                                       \
        T *to = dst + lo;                                                                          \
        const int64_t run = (r_hi - r_lo - 1) * w + hi - lo;                                       \
        for (int64_t i = 0; i < run; i++) to[i] += from[i];                                        \
        count = 0;                                                                                 \
        for (int64_t r = 0; r < r_hi - r_lo; r++) {                                                \
            if (r > 0)                                                                             \
                for (int64_t ow = 0; ow < lo; ow++) dst[r * w + ow] = saved[count++];              \
            if (r < r_hi - r_lo - 1)                                                               \
                for (int64_t ow = hi; ow < w; ow++) dst[r * w + ow] = saved[count++];              \
        }                                                                                          \
        return 1;                                                                                  \
    }                                                                                              \
    static void col2im_rows_##SUFFIX(T *x, int64_t channels, const conv_geom *g, int64_t r0,      \
                                     int64_t rows, const T *cols, int64_t len)                     \
    {                                                                                              \
        const int64_t ow_n = g->ow;                                                                \
        /* Optimization (whole taps in one add, see col2im_tap_flat). */                           \
        const int flat = g->sh == 1 && g->sw == 1 && g->ow == g->w && g->pw < g->w;              \
        for (int64_t c = 0; c < channels; c++) {                                                   \
            T *plane = x + c * g->h * g->w;                                                        \
            for (int64_t kh = 0; kh < g->kh; kh++) {                                               \
                for (int64_t kw = 0; kw < g->kw; kw++) {                                           \
                    const T *src = cols + ((c * g->kh + kh) * g->kw + kw) * len;                   \
                    const int64_t off = kw * g->dw - g->pw;                                        \
                    int64_t lo, hi;                                                                \
                    valid_range(off, g->sw, g->w, ow_n, &lo, &hi);                                 \
                    if (flat && col2im_tap_flat_##SUFFIX(plane, g, r0 - g->ph + kh * g->dh, rows,  \
                                                         off, lo, hi, src))                        \
                        continue;                                                                  \
                    for (int64_t r = 0; r < rows; r++, src += ow_n) {                              \
                        const int64_t ih = (r0 + r) * g->sh - g->ph + kh * g->dh;                  \
                        if (ih < 0 || ih >= g->h) continue;                                        \
                        T *row = plane + ih * g->w + off;                                          \
                        if (g->sw == 1)                                                            \
                            for (int64_t ow = lo; ow < hi; ow++) row[ow] += src[ow];               \
                        else                                                                       \
                            for (int64_t ow = lo; ow < hi; ow++) row[ow * g->sw] += src[ow];       \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_IM2COL_ROWS(float, f32)
DEFINE_IM2COL_ROWS(double, f64)

/* The op table's entries: a tile given as output positions [l0, l0 + len),
 * always whole output rows (conv_shape_of cuts tiles so; F.unfold and F.fold
 * pass whole samples). The im2col rows are `ld` apart (several samples'
 * columns can sit side by side, see conv_shape_of). */
#define DEFINE_IM2COL(T, SUFFIX)                                                                   \
    static void im2col_##SUFFIX(const void *x, int64_t channels, const conv_geom *g, int64_t l0,   \
                                int64_t len, void *cols, int64_t ld)                               \
    {                                                                                              \
        im2col_rows_##SUFFIX((const T *)x, channels, g, l0 / g->ow, len / g->ow, (T *)cols, ld);   \
    }

#define DEFINE_COL2IM(T, SUFFIX)                                                                   \
    static void col2im_##SUFFIX(void *x, int64_t channels, const conv_geom *g, int64_t l0,         \
                                int64_t len, const void *cols, int64_t ld)                         \
    {                                                                                              \
        col2im_rows_##SUFFIX((T *)x, channels, g, l0 / g->ow, len / g->ow, (const T *)cols, ld);   \
    }

/* Each of the `rows` rows of `c` (row stride ld, `len` long) set to bias[row]:
 * the GEMM then adds the product to it (accumulate), so the bias costs no
 * extra pass over the output. */
#define DEFINE_FILL_ROWS(T, SUFFIX)                                                                \
    static void fill_rows_##SUFFIX(void *c_, int64_t rows, int64_t len, int64_t ld,                \
                                   const void *bias_)                                              \
    {                                                                                              \
        T *c = (T *)c_;                                                                            \
        const T *bias = (const T *)bias_;                                                          \
        for (int64_t r = 0; r < rows; r++)                                                         \
            for (int64_t l = 0; l < len; l++) c[r * ld + l] = bias[r];                             \
    }

/* dst[i] += src[i]: summing the threads' weight gradients. */
#define DEFINE_ADD_INTO(T, SUFFIX)                                                                 \
    static void add_into_##SUFFIX(void *dst_, const void *src_, int64_t count)                     \
    {                                                                                              \
        T *dst = (T *)dst_;                                                                        \
        const T *src = (const T *)src_;                                                            \
        for (int64_t i = 0; i < count; i++) dst[i] += src[i];                                      \
    }

/* The wide grid's two copies (see conv_wide). pad_planes: `channels` planes
 * of x (h x w) into dst, each in a zero border (hp x wp, the image at row ph,
 * column pw), then `slack` zeros. unwide: `rows` rows of the wide product
 * (oh x wp each) into output planes (oh x ow), dropping each row's last
 * wp - ow numbers, plus bias[row] (none for NULL). */
#define DEFINE_WIDE_COPIES(T, SUFFIX)                                                              \
    static void pad_planes_##SUFFIX(const void *x_, int64_t channels, const conv_geom *g,         \
                                    int64_t hp, int64_t wp, int64_t slack, void *dst_)            \
    {                                                                                              \
        const T *x = (const T *)x_;                                                                \
        T *dst = (T *)dst_;                                                                        \
        const int64_t h = g->h, w = g->w, ph = g->ph, pw = g->pw;                                  \
        for (int64_t c = 0; c < channels; c++) {                                                   \
            T *plane = dst + c * hp * wp;                                                          \
            memset(plane, 0, (size_t)(ph * wp) * sizeof(T));                                       \
            for (int64_t ih = 0; ih < h; ih++) {                                                   \
                T *row = plane + (ih + ph) * wp;                                                   \
                for (int64_t j = 0; j < pw; j++) row[j] = 0;                                       \
                memcpy(row + pw, x + (c * h + ih) * w, (size_t)w * sizeof(T));                     \
                for (int64_t j = pw + w; j < wp; j++) row[j] = 0;                                  \
            }                                                                                      \
            memset(plane + (ph + h) * wp, 0, (size_t)((hp - ph - h) * wp) * sizeof(T));            \
        }                                                                                          \
        memset(dst + channels * hp * wp, 0, (size_t)slack * sizeof(T));                            \
    }                                                                                              \
    static void unwide_##SUFFIX(const void *wide_, int64_t rows, int64_t oh, int64_t ow,          \
                                int64_t wp, const void *bias_, void *out_)                         \
    {                                                                                              \
        const T *wide = (const T *)wide_, *bias = (const T *)bias_;                                \
        T *out = (T *)out_;                                                                        \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            for (int64_t y = 0; y < oh; y++) {                                                     \
                const T *src = wide + (r * oh + y) * wp;                                           \
                T *dst = out + (r * oh + y) * ow;                                                  \
                if (bias == NULL) {                                                                \
                    memcpy(dst, src, (size_t)ow * sizeof(T));                                      \
                } else {                                                                           \
                    const T b = bias[r];                                                           \
                    for (int64_t x = 0; x < ow; x++) dst[x] = src[x] + b;                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_WIDE_COPIES(float, f32)
DEFINE_WIDE_COPIES(double, f64)
DEFINE_IM2COL(float, f32)
DEFINE_COL2IM(float, f32)
DEFINE_FILL_ROWS(float, f32)
DEFINE_ADD_INTO(float, f32)
DEFINE_IM2COL(double, f64)
DEFINE_COL2IM(double, f64)
DEFINE_FILL_ROWS(double, f64)
DEFINE_ADD_INTO(double, f64)

/* The op table: what each float dtype uses. */
typedef struct {
    int64_t itemsize;
    void (*im2col)(const void *x, int64_t channels, const conv_geom *g, int64_t l0, int64_t len,
                   void *cols, int64_t ld);
    void (*col2im)(void *x, int64_t channels, const conv_geom *g, int64_t l0, int64_t len,
                   const void *cols, int64_t ld);
    void (*fill_rows)(void *c, int64_t rows, int64_t len, int64_t ld, const void *bias);
    void (*add_into)(void *dst, const void *src, int64_t count);
    void (*pad_planes)(const void *x, int64_t channels, const conv_geom *g, int64_t hp,
                       int64_t wp, int64_t slack, void *dst);
    void (*unwide)(const void *wide, int64_t rows, int64_t oh, int64_t ow, int64_t wp,
                   const void *bias, void *out);
} conv_kind;

static const conv_kind CONV_KINDS[] = {
    [GT_FLOAT32] = {4, im2col_f32, col2im_f32, fill_rows_f32, add_into_f32, pad_planes_f32,
                    unwide_f32},
    [GT_FLOAT64] = {8, im2col_f64, col2im_f64, fill_rows_f64, add_into_f64, pad_planes_f64,
                    unwide_f64},
};


static inline char *at(const gt_view *v, int64_t index, int64_t itemsize)
{
    return v->data + (v->offset + index) * itemsize;
}

/* The convolution's shape, read from its views: N samples, C_in and C_out
 * channels, groups, and the geometry. */
typedef struct {
    int64_t n, c_in, c_out, groups, c_group, o_group, k, l;
    conv_geom g;
    int pointwise; /* 1x1, stride 1, no padding: the input is its own im2col */
    int64_t tile;  /* output positions per tile */
    int64_t batch; /* samples per work item (1 unless a tile is a whole sample) */
    int64_t width; /* columns of a tile buffer: max(tile, batch * l) */
    int64_t ld;    /* distance between a tile buffer's rows: width, padded (padded_ld) */
} conv_shape;

/* Optimization (padded rows): the rows of a tile buffer are `ld` numbers
 * apart, `width` rounded up to an odd number of cache lines. Rows a power of
 * two apart (8192 columns of 32 samples' 1x1 convolution, 1024 of a 32 x 32
 * image) all fall in the same few sets of the L1 cache, and a load from a B
 * row looks like a hazard with the store of a C row 4 KiB away: the GEMMs
 * reading and writing them ran 1.3 to 4 times slower (AVX2 worst: a 1x1
 * stride-2 convolution, 32 x 16 times 16 x 8192, 0.58 -> 0.14 ms). An odd
 * number of lines sends consecutive rows to different sets, through all of
 * them. */
static int64_t padded_ld(int64_t width, int64_t itemsize)
{
    const int64_t lines = (width * itemsize + 63) / 64;
    return (lines % 2 ? lines : lines + 1) * 64 / itemsize;
}

static conv_shape conv_shape_of(const gt_view *x, const gt_view *y, const gt_view *w,
                                int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                                int64_t dw, int64_t groups, int64_t itemsize)
{
    conv_shape s;
    s.n = x->shape[0];
    s.c_in = x->shape[1];
    s.c_out = y->shape[1];
    s.groups = groups;
    s.c_group = s.c_in / groups;
    s.o_group = s.c_out / groups;
    conv_geom g = {x->shape[2], x->shape[3], y->shape[2], y->shape[3], w->shape[2], w->shape[3],
                   sh, sw, ph, pw, dh, dw};
    s.g = g;
    s.k = s.c_group * g.kh * g.kw;
    s.l = g.oh * g.ow;
    s.pointwise = g.kh == 1 && g.kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
    /* A tile of at most CONV_TILE_BYTES (at least one output row), in whole
     * output rows (see im2col_rows), the rows shared out evenly between the
     * tiles of a sample: 256 positions in 2 tiles are 128 + 128, not
     * 224 + 32, whose second product would be mostly overhead. */
    const int64_t max_rows = max64(1, CONV_TILE_BYTES / (max64(s.k, 1) * itemsize) / max64(g.ow, 1));
    const int64_t tiles = (g.oh + max_rows - 1) / max_rows;
    const int64_t rows = tiles > 0 ? (g.oh + tiles - 1) / tiles : 1;
    s.tile = max64(1, min64(rows * g.ow, s.l));
    /* Optimization (samples side by side): when a whole sample is one small
     * tile (LeNet's second layer: 100 positions, 16 x 100 x 150 products),
     * several samples' columns go in one tile buffer, so that each product
     * is several times wider: the fixed costs of a product (its call, the
     * edge sliver N = 100 leaves 4/32 full) are paid once for them all. Up to
     * CONV_BATCH_BYTES of columns, and a group size that gives every thread
     * the same number of samples (32 samples in groups of 3 would leave one
     * thread 18 and the other 14). */
    s.batch = 1;
    if (s.tile == s.l && !s.pointwise && s.l > 0) {
        const int64_t fit = CONV_BATCH_BYTES / (max64(s.k, 1) * s.l * itemsize);
        const int64_t threads = max_threads();
        for (int64_t b = min64(fit, s.n / threads); b > 1; b--) {
            if (s.n % (b * threads) == 0) {
                s.batch = b;
                break;
            }
        }
    }
    s.width = max64(s.tile, s.batch * s.l);
    s.ld = padded_ld(s.width, itemsize);
    return s;
}

/* How to share out `items` work items of `work` multiply-adds in all: the
 * number of threads for the item loop (the GEMMs then get one each), or 1
 * (items in turn, each GEMM gets `*gemm_threads`). */
static int share_items(int64_t items, int64_t work, int *gemm_threads)
{
    int threads = max_threads();
    if (work < CONV_PARALLEL_MIN) threads = 1;
    if (items >= threads && threads > 1) {
        *gemm_threads = 1;
        return threads;
    }
    *gemm_threads = threads;
    return 1;
}

/* The im2col tile buffers of a convolution: one of k x tile elements per
 * thread, in one allocation made before the parallel region, so that a failed
 * allocation is reported (NULL; the caller returns -2), never dereferenced. */
static int64_t tile_buffer_size(const conv_shape *s, int64_t size)
{
    /* the im2col columns, then (several samples side by side) the product's rows */
    return (s->k + (s->batch > 1 ? s->o_group : 0)) * s->ld * size;
}

static char *tile_buffers(const conv_shape *s, int threads, int64_t size)
{
    return malloc((size_t)(threads * tile_buffer_size(s, size)));
}

/* The calling thread's tile buffer within `all` (NULL for a pointwise
 * convolution, which reads its input in place). */
static char *tile_buffer(char *all, const conv_shape *s, int64_t size)
{
    return all == NULL ? NULL : all + (int64_t)gt_thread_id() * tile_buffer_size(s, size);
}

/* Several samples side by side (s->batch > 1; the three convolution kernels
 * take this path alike): the im2col columns of samples
 * n0 .. n0 + count - 1 (group grp) into one buffer whose rows are
 * count * l wide, sample j's columns at j * l. */
static void im2col_samples(const conv_kind *kind, const conv_shape *s, const gt_view *input,
                           int64_t n0, int64_t count, int64_t grp, char *cols)
{
    const int64_t size = kind->itemsize, plane = s->g.h * s->g.w;
    for (int64_t j = 0; j < count; j++) {
        const char *x = at(input, ((n0 + j) * s->c_in + grp * s->c_group) * plane, size);
        kind->im2col(x, s->c_group, &s->g, 0, s->l, cols + j * s->l * size, s->ld);
    }
}

/* Rows of o_group channels of samples n0 .. n0 + count - 1 between a (N, C, L)
 * view and a buffer of o_group rows, count * l wide and s->ld apart (to_view:
 * buffer -> view). */
static void move_rows(const conv_shape *s, const gt_view *v, int64_t size, int64_t n0,
                      int64_t count, int64_t grp, char *buffer, int to_view)
{
    for (int64_t j = 0; j < count; j++) {
        for (int64_t o = 0; o < s->o_group; o++) {
            char *in_view = at(v, ((n0 + j) * s->c_out + grp * s->o_group + o) * s->l, size);
            char *in_buffer = buffer + (o * s->ld + j * s->l) * size;
            if (to_view) memcpy(in_view, in_buffer, (size_t)(s->l * size));
            else memcpy(in_buffer, in_view, (size_t)(s->l * size));
        }
    }
}

/* ------------------------------------------------------------------------
 * Stride-1 convolution without im2col: the wide grid.
 * ------------------------------------------------------------------------ */
/* Optimization (the wide grid). With stride 1, the im2col row of tap
 * (c, kh, kw) holds, output row by output row, pieces of the zero-padded
 * input plane c shifted by kh*dh rows and kw*dw columns. Compute every output
 * row as wide as the padded input (wp = w + 2 pw columns instead of ow; the
 * last wp - ow of each row are wasted work, dropped afterwards) and the
 * pieces join up: the tap's whole im2col row is one contiguous run of the
 * padded input, starting at c*hp*wp + kh*dh*wp + kw*dw. The GEMM then reads
 * B straight out of the padded copy (gt_gemm_rows, one start per tap), and
 * the im2col matrix, k/c_group times the input (9 x for 3 x 3), is never
 * written. What it costs instead: one padded copy of the input, wp/ow more
 * multiply-adds (34/32 on a 32 x 32 image; more once the wide rows are
 * rounded up to whole GEMM tiles of NR columns), and a copy of the output
 * that drops the wasted columns. When ow is a multiple of NR neither is paid:
 * the GEMM's column slivers then follow the output rows (gt_gemm_rows_pieces)
 * and write the output directly.
 *
 * When it pays: im2col costs about WIDE_IM2COL_COST multiply-adds' time per
 * number it writes (measured on ResNet-20's and LeNet-5's layers: 6 to 19),
 * while each of those numbers takes o_group multiply-adds in the GEMM. So
 * the wide grid is taken when o_group * waste < o_group + WIDE_IM2COL_COST,
 * waste being the wide grid's multiply-adds over the true ones: on a 32 x 32
 * image with 16 channels, 1.06 < 1.6 (measured 0.78x im2col's time); on an
 * 8 x 8 one with 64, 80 columns a sample rounded up to 96, 1.5 > 1.16 (it
 * would take 1.22x). It also needs a sample for every thread (samples are its
 * work items). */
#ifndef WIDE_IM2COL_COST
#define WIDE_IM2COL_COST 10
#endif

/* The most bytes a thread's wide-grid buffers may take (a padded copy of one
 * sample's group and its wide product): larger images go through the tiles
 * of im2col, whose memory is bounded by CONV_TILE_BYTES whatever the image. */
#ifndef WIDE_MAX_BYTES
#define WIDE_MAX_BYTES (8 << 20)
#endif

/* 1 when the wide grid can run this convolution: stride 1, a sample for
 * every thread (samples are its work items), and buffers of at most
 * WIDE_MAX_BYTES a thread. */
static int wide_possible(const conv_shape *s, int64_t itemsize)
{
    const conv_geom *g = &s->g;
    if (g->sh != 1 || g->sw != 1 || s->pointwise || s->l == 0) return 0;
    const int64_t hp = g->h + 2 * g->ph, wp = g->w + 2 * g->pw;
    if (g->oh != hp - (g->kh - 1) * g->dh || g->ow != wp - (g->kw - 1) * g->dw) return 0;
    const int64_t padded = s->c_group * hp * wp + (g->kw - 1) * g->dw;
    if ((padded + s->o_group * g->oh * wp) * itemsize > WIDE_MAX_BYTES) return 0;
    return s->n >= max_threads() || s->n * s->c_out * s->l * s->k < CONV_PARALLEL_MIN;
}

/* 1 when the forward convolution is cheaper on the wide grid (see above). */
static int wide_forward_pays(const conv_shape *s, int dtype)
{
    const int64_t wp = s->g.w + 2 * s->g.pw, nr = gt_gemm_tile_columns(dtype);
    if (s->g.ow % nr == 0) return 1; /* no waste: slivers follow the output rows */
    const double waste = (double)((s->g.oh * wp + nr - 1) / nr * nr) / (double)s->l;
    return s->o_group * waste < s->o_group + WIDE_IM2COL_COST;
}

/* The wide grid of a convolution: the padded planes (hp x wp), the numbers
 * one sample's group takes padded (with `slack` zeros after, as far as the
 * last tap's run reaches), and where each tap's run starts in them. */
typedef struct {
    int64_t hp, wp, slack, padded;
    int64_t *starts; /* k entries, malloc'd */
    int threads;
} wide_grid;

/* Returns 0 when out of memory. */
static int wide_grid_of(const conv_shape *s, wide_grid *w)
{
    const conv_geom *g = &s->g;
    w->hp = g->h + 2 * g->ph;
    w->wp = g->w + 2 * g->pw;
    w->slack = (g->kw - 1) * g->dw;
    w->padded = s->c_group * w->hp * w->wp + w->slack;
    w->threads = s->n * s->c_out * s->l * s->k < CONV_PARALLEL_MIN ? 1 : max_threads();
    w->starts = malloc((size_t)s->k * sizeof *w->starts);
    if (w->starts == NULL) return 0;
    for (int64_t c = 0, p = 0; c < s->c_group; c++)
        for (int64_t kh = 0; kh < g->kh; kh++)
            for (int64_t kw = 0; kw < g->kw; kw++)
                w->starts[p++] = (c * w->hp + kh * g->dh) * w->wp + kw * g->dw;
    return 1;
}

/* out = conv(input, weight) + bias over the wide grid, one sample per work
 * item. Returns 0, or -2 when out of memory. */
static int conv_wide(const conv_kind *kind, int dtype, const conv_shape *s, gt_view *out,
                     const gt_view *input, const gt_view *weight, const gt_view *bias)
{
    const conv_geom *g = &s->g;
    const int64_t size = kind->itemsize, plane = g->h * g->w;
    wide_grid w;
    if (!wide_grid_of(s, &w)) return -2;
    const int64_t lw = g->oh * w.wp, wide = s->o_group * lw;
    const int by_rows = g->ow % gt_gemm_tile_columns(dtype) == 0;
    char *buffers = malloc((size_t)(w.threads * (w.padded + wide) * size));
    if (buffers == NULL) {
        free(w.starts);
        return -2;
    }
    int status = 0;
#pragma omp parallel num_threads(w.threads) if (w.threads > 1)
    {
        char *x_padded = buffers + (int64_t)gt_thread_id() * (w.padded + wide) * size;
        char *y_wide = x_padded + w.padded * size;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < s->n; n++) {
            for (int64_t grp = 0; grp < s->groups; grp++) {
                kind->pad_planes(at(input, (n * s->c_in + grp * s->c_group) * plane, size),
                                 s->c_group, g, w.hp, w.wp, w.slack, x_padded);
                char *y = at(out, (n * s->c_out + grp * s->o_group) * s->l, size);
                const char *bias_g = bias == NULL ? NULL : at(bias, grp * s->o_group, size);
                if (by_rows) {
                    /* Optimization (no padding columns, see gt_gemm_rows_pieces):
                     * ow a multiple of NR (32 x 32 images; 16 x 16 with AVX2), so
                     * the product's slivers follow the output rows and it is
                     * written straight to the output: no wasted columns, no copy
                     * (only the bias, added in place). */
                    const int failed = gt_gemm_rows_pieces(
                        dtype, s->o_group, g->oh, g->ow, w.wp, g->ow, s->k,
                        at(weight, grp * s->o_group * s->k, size), s->k, 1, x_padded, w.starts,
                        y, s->l, 0);
                    if (failed) {
#pragma omp atomic write
                        status = failed;
                    } else if (bias_g != NULL) {
                        kind->unwide(y, s->o_group, g->oh, g->ow, g->ow, bias_g, y);
                    }
                    continue;
                }
                const int failed = gt_gemm_rows(dtype, s->o_group, lw, s->k,
                                                at(weight, grp * s->o_group * s->k, size), s->k,
                                                1, x_padded, w.starts, y_wide, lw, 0);
                if (failed) {
#pragma omp atomic write
                    status = failed;
                    continue;
                }
                kind->unwide(y_wide, s->o_group, g->oh, g->ow, w.wp, bias_g, y);
            }
        }
    }
    free(w.starts);
    free(buffers);
    return status;
}

/* The weight gradient sums over every work item: each thread after the first
 * adds into a private copy (the first adds into the result), and the copies
 * are summed at the end in thread order. private_gradients: the zeroed
 * copies (NULL for one thread, or when out of memory: then *failed is set);
 * sum_private_gradients adds them into the result and frees them. */
static char *private_gradients(int threads, int64_t count, int64_t size, int *failed)
{
    char *copies = threads > 1 ? calloc((size_t)((threads - 1) * count), (size_t)size) : NULL;
    *failed = threads > 1 && copies == NULL;
    return copies;
}

static void sum_private_gradients(const conv_kind *kind, char *dw_all, char *copies, int threads,
                                  int64_t count)
{
    for (int t = 1; t < threads; t++)
        kind->add_into(dw_all, copies + (t - 1) * count * kind->itemsize, count);
    free(copies);
}

/* Optimization (the weight gradient transposed, read in place). With 16
 * output channels, dW_g += dy_g cols^T spent as long packing cols^T (k x l,
 * NR-wide slivers, each reused by only two or three row slivers of dy) as
 * multiplying. Computed the other way round, dW_g^T += cols dy_g^T, the big
 * operand needs no packing: each number of cols, x_padded[start_p + r * wp +
 * c], is broadcast straight from the padded input (an FMA's memory operand),
 * times a vector of 16 output channels of dy^T, which is packed instead (16 x
 * l: a ninth of cols for a 3x3 layer). A tile of dW^T (taps x 16 channels)
 * is summed in registers over the sample's l positions, then added into dW.
 * The taps of a tile are whole kernel rows of 3 (kw = 3, dilation 1): a row's
 * three taps are one pointer and the displacements 0, 4 and 8 bytes, so a
 * tile of 18 taps needs 6 address registers, not 18 (with 16, the compiler
 * kept the addresses in vector registers and moved them back every step).
 * The sum over l is in the same order at AVX2 and AVX-512 (one FMA chain per
 * number, from 0), so the two levels agree bit for bit. float32 only,
 * o_group a multiple of 16, the FMA levels only (the default level, float64
 * and other kernel widths take gt_gemm_cols). */
#define WGRAD_COLS 16 /* output channels of a tile: one row of dy^T's packing */
#if defined(__AVX2__) && defined(__FMA__)
#define WGRAD_T 1
/* The compiler sees that tap t + 1's number at column c is tap t's at column
 * c + 1 and keeps broadcasts over from one step to the next: registers the
 * AVX2 tile does not have (an accumulator then lived on the stack, and its
 * store-to-load chain made the product 1.7 times slower). An empty asm that
 * "changes" the row's pointer every step hides the relation. */
#if defined(__GNUC__)
#define WGRAD_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define WGRAD_OPAQUE(p) ((void)0)
#endif

/* When it pays (ResNet-20's layers, batch 32, AVX-512 then AVX2, ms,
 * gt_gemm_cols -> this). One thread: 16 channels on 32 x 32 1.06 -> 0.84 and
 * 1.60 -> 1.43; 32 on 16 x 16 0.85 -> 0.75 and 1.46 -> 1.33; 64 on 8 x 8
 * 0.85 -> 0.76 and 1.39 -> 1.32; 3 input channels (27 taps, mostly edge
 * tiles) 0.30 -> 0.31 and 0.44 -> 0.44. Two threads: 16 channels 0.58-0.70
 * -> 0.45 and 0.83 -> 0.74; but 32 channels 0.46 -> 0.50 (AVX2 0.77 ->
 * 0.69) and 64 channels 0.40-0.48 -> 0.61 (AVX2 0.74 -> 0.76): the two
 * threads together gain less from this than from the packed product on
 * short rows, for reasons not found yet (not false sharing between the
 * threads' buffers: separating them changed nothing). Both levels must take
 * the same path (they agree bit for bit), so it is taken where neither loses:
 * at least 48 taps and rows of at least 32 outputs. */
#ifndef WGRAD_MIN_WIDTH
#define WGRAD_MIN_WIDTH 32
#endif
#ifndef WGRAD_MIN_TAPS
#define WGRAD_MIN_TAPS 48
#endif

/* bt[l * 16 + j] = dy[j * l_all + l]: 16 channels' rows of dy, transposed. */
static void wgrad_pack_dy(const float *dy, int64_t l_all, float *bt)
{
    for (int64_t l = 0; l < l_all; l++)
        for (int64_t j = 0; j < WGRAD_COLS; j++) bt[l * WGRAD_COLS + j] = dy[j * l_all + l];
}

/* wgrad_rows_R: dwt[(3 * q + t) * o_stride + j] += sum over the output
 * positions (r, c) of x[rows[q] + r * wp + c + t] * bt[(r * ow + c) * 16 + j],
 * for kernel rows q = 0 .. R - 1 (rows[q] where each starts) and their taps
 * t = 0, 1, 2: a tile of dW^T, added into it a vector at a time. */
#if defined(__AVX512F__)
#define WGRAD_ROWS(R)                                                                              \
    static void wgrad_rows_##R(const float *x, const int64_t *rows, int64_t oh, int64_t ow,       \
                               int64_t wp, const float *bt, float *dwt, int64_t o_stride)         \
    {                                                                                              \
        __m512 acc[3 * R];                                                                         \
        const float *a[R];                                                                         \
        _Pragma("GCC unroll 32") for (int i = 0; i < 3 * R; i++) acc[i] = _mm512_setzero_ps();    \
        for (int64_t r = 0; r < oh; r++) {                                                         \
            _Pragma("GCC unroll 32") for (int q = 0; q < R; q++) a[q] = x + rows[q] + r * wp;     \
            const float *b = bt + r * ow * WGRAD_COLS;                                             \
            for (int64_t c = 0; c < ow; c++) {                                                     \
                const __m512 bv = _mm512_loadu_ps(b + c * WGRAD_COLS);                             \
                _Pragma("GCC unroll 32") for (int q = 0; q < R; q++)                               \
                    _Pragma("GCC unroll 3") for (int t = 0; t < 3; t++)                            \
                        acc[3 * q + t] =                                                           \
                            _mm512_fmadd_ps(_mm512_set1_ps(a[q][c + t]), bv, acc[3 * q + t]);      \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 32") for (int i = 0; i < 3 * R; i++) {                                 \
            float *d = dwt + i * o_stride;                                                         \
            _mm512_storeu_ps(d, _mm512_add_ps(_mm512_loadu_ps(d), acc[i]));                        \
        }                                                                                          \
    }
WGRAD_ROWS(6) /* 18 accumulators, 1 vector of dy^T: 19 of 32 registers */
WGRAD_ROWS(3)
WGRAD_ROWS(1)
#define WGRAD_R 6
#define WGRAD_HAS_3 1
#else
/* AVX2: the 16 channels are two vectors, so 2 kernel rows (6 taps, 12
 * accumulators) fit in the 16 registers with the two dy^T vectors and a
 * broadcast; each broadcast feeds two FMAs. */
#define WGRAD_ROWS(R)                                                                              \
    static void wgrad_rows_##R(const float *x, const int64_t *rows, int64_t oh, int64_t ow,       \
                               int64_t wp, const float *bt, float *dwt, int64_t o_stride)         \
    {                                                                                              \
        const float *a[R];                                                                         \
        __m256 lo[3 * R], hi[3 * R];                                                               \
        _Pragma("GCC unroll 32") for (int i = 0; i < 3 * R; i++) lo[i] = hi[i] =                  \
            _mm256_setzero_ps();                                                                   \
        for (int64_t r = 0; r < oh; r++) {                                                         \
            _Pragma("GCC unroll 32") for (int q = 0; q < R; q++) a[q] = x + rows[q] + r * wp;     \
            const float *b = bt + r * ow * WGRAD_COLS;                                             \
            for (int64_t c = 0; c < ow; c++) {                                                     \
                const __m256 b0 = _mm256_loadu_ps(b + c * WGRAD_COLS);                             \
                const __m256 b1 = _mm256_loadu_ps(b + c * WGRAD_COLS + 8);                         \
                _Pragma("GCC unroll 32") for (int q = 0; q < R; q++) {                             \
                    const float *p = a[q] + c;                                                     \
                    WGRAD_OPAQUE(p);                                                               \
                    _Pragma("GCC unroll 3") for (int t = 0; t < 3; t++) {                          \
                        const __m256 av = _mm256_broadcast_ss(p + t);                              \
                        lo[3 * q + t] = _mm256_fmadd_ps(av, b0, lo[3 * q + t]);                    \
                        hi[3 * q + t] = _mm256_fmadd_ps(av, b1, hi[3 * q + t]);                    \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 32") for (int i = 0; i < 3 * R; i++) {                                 \
            float *d = dwt + i * o_stride;                                                         \
            _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), lo[i]));                         \
            _mm256_storeu_ps(d + 8, _mm256_add_ps(_mm256_loadu_ps(d + 8), hi[i]));                 \
        }                                                                                          \
    }
WGRAD_ROWS(2) /* 12 accumulators, 2 vectors of dy^T, 1 broadcast: 15 of 16 registers */
WGRAD_ROWS(1)
#define WGRAD_R 2
#endif

/* dW_g^T += cols dy_g^T for 16 channels (bt, packed) and all k = 3 * q_all
 * taps, their kernel rows starting at starts[0], starts[3], ...: blocks of
 * WGRAD_R kernel rows, then smaller ones. dwt: the 16 channels' column of
 * dW_g^T (k rows, o_stride apart). */
static void wgrad_taps(const float *x, const int64_t *starts, int64_t q_all, int64_t oh,
                       int64_t ow, int64_t wp, const float *bt, float *dwt, int64_t o_stride)
{
    int64_t rows[WGRAD_R];
    for (int64_t q0 = 0; q0 < q_all;) {
        const int64_t left = q_all - q0;
#ifdef WGRAD_HAS_3
        const int64_t r = left >= WGRAD_R ? WGRAD_R : left >= 3 ? 3 : 1;
#else
        const int64_t r = left >= WGRAD_R ? WGRAD_R : 1;
#endif
        for (int64_t q = 0; q < r; q++) rows[q] = starts[3 * (q0 + q)];
        float *d = dwt + 3 * q0 * o_stride;
        if (r == WGRAD_R) {
#if defined(__AVX512F__)
            wgrad_rows_6(x, rows, oh, ow, wp, bt, d, o_stride);
        } else if (r == 3) {
            wgrad_rows_3(x, rows, oh, ow, wp, bt, d, o_stride);
#else
            wgrad_rows_2(x, rows, oh, ow, wp, bt, d, o_stride);
#endif
        } else {
            wgrad_rows_1(x, rows, oh, ow, wp, bt, d, o_stride);
        }
        q0 += r;
    }
}
#endif /* WGRAD_T */

/* The weight gradient on the wide grid: dW_g += dy_g cols^T, where column p
 * of cols^T (tap p) is read out of the padded input by gt_gemm_cols, one
 * output row's stretch of an input row (ow numbers, wp apart) at a time. No
 * work is wasted here (only real output positions are summed over), so it
 * needs no cost rule. dw_all (count numbers) is already zeroed. Returns 0,
 * or -2 when out of memory. */
static int conv_wide_backward_weight(const conv_kind *kind, int dtype, const conv_shape *s,
                                     char *dw_all, int64_t count, const gt_view *grad_output,
                                     const gt_view *input)
{
    const conv_geom *g = &s->g;
    const int64_t size = kind->itemsize, plane = g->h * g->w;
    wide_grid w;
    if (!wide_grid_of(s, &w)) return -2;
#ifdef WGRAD_T
    const int transposed = dtype == GT_FLOAT32 && s->o_group % WGRAD_COLS == 0 &&
                           g->kw == 3 && g->dw == 1 && g->ow >= WGRAD_MIN_WIDTH &&
                           s->k >= WGRAD_MIN_TAPS;
#else
    const int transposed = 0;
#endif
    /* a thread's buffers: the padded input, then (transposed) WGRAD_COLS rows of dy^T */
    const int64_t per_thread = w.padded + (transposed ? s->l * WGRAD_COLS + count : 0);
    int failed;
    char *copies = private_gradients(w.threads, count, size, &failed);
    char *buffers = failed ? NULL : malloc((size_t)(w.threads * per_thread * size));
    if (buffers == NULL) {
        free(copies);
        free(w.starts);
        return -2;
    }
    int status = 0;
#pragma omp parallel num_threads(w.threads) if (w.threads > 1)
    {
        const int id = gt_thread_id();
        char *mine = id == 0 ? dw_all : copies + (id - 1) * count * size;
        char *x_padded = buffers + (int64_t)id * per_thread * size;
        /* transposed: this thread's dW^T, (grp, tap, o) in that order, after dy^T */
        float *dwt = (float *)x_padded + w.padded + s->l * WGRAD_COLS;
        if (transposed) memset(dwt, 0, (size_t)count * sizeof *dwt);
#pragma omp for schedule(static) nowait
        for (int64_t n = 0; n < s->n; n++) {
            for (int64_t grp = 0; grp < s->groups; grp++) {
                kind->pad_planes(at(input, (n * s->c_in + grp * s->c_group) * plane, size),
                                 s->c_group, g, w.hp, w.wp, w.slack, x_padded);
                const char *dy = at(grad_output, (n * s->c_out + grp * s->o_group) * s->l, size);
#ifdef WGRAD_T
                if (transposed) { /* dW_g^T += cols dy_g^T, 16 channels at a time */
                    float *bt = (float *)x_padded + w.padded;
                    float *dwt_g = dwt + grp * s->o_group * s->k;
                    for (int64_t o0 = 0; o0 < s->o_group; o0 += WGRAD_COLS) {
                        wgrad_pack_dy((const float *)dy + o0 * s->l, s->l, bt);
                        wgrad_taps((const float *)x_padded, w.starts, s->k / 3, g->oh, g->ow,
                                   w.wp, bt, dwt_g + o0, s->o_group);
                    }
                    continue;
                }
#endif
                const int failure = gt_gemm_cols(dtype, s->o_group, s->k, s->l, dy, s->l, 1,
                                                 x_padded, w.starts, g->ow, w.wp,
                                                 mine + grp * s->o_group * s->k * size, s->k, 1);
                if (failure) {
#pragma omp atomic write
                    status = failure;
                }
            }
        }
        if (transposed) { /* dW^T -> this thread's dW (zero so far: a plain copy) */
            float *d = (float *)mine;
            for (int64_t grp = 0; grp < s->groups; grp++)
                for (int64_t p = 0; p < s->k; p++)
                    for (int64_t o = 0; o < s->o_group; o++)
                        d[(grp * s->o_group + o) * s->k + p] =
                            dwt[(grp * s->k + p) * s->o_group + o];
        }
    }
    free(buffers);
    free(w.starts);
    if (status == 0) sum_private_gradients(kind, dw_all, copies, w.threads, count);
    else free(copies);
    return status;
}

/* ------------------------------------------------------------------------
 * Convolution forward: out[n, g, tile] = W_g cols(tile) (+ bias).
 * ------------------------------------------------------------------------ */
int gt_conv2d(gt_view *out, const gt_view *input, const gt_view *weight, const gt_view *bias,
              int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
              int64_t groups)
{
    const int dtype = out->dtype;
    if (!USABLE(dtype, out, input, weight, bias)) return -1;
    const conv_kind *kind = &CONV_KINDS[dtype];
    const int64_t size = kind->itemsize;
    const conv_shape s = conv_shape_of(input, out, weight, sh, sw, ph, pw, dh, dw, groups, size);
    if (gt_numel(out) == 0) return 0;
    if (wide_possible(&s, size) && wide_forward_pays(&s, dtype))
        return conv_wide(kind, dtype, &s, out, input, weight, bias);
    const int64_t tiles = (s.l + s.tile - 1) / s.tile;
    const int64_t items = s.batch > 1 ? (s.n + s.batch - 1) / s.batch : s.n * tiles;
    int gemm_threads;
    const int threads = share_items(items, s.n * s.c_out * s.l * s.k, &gemm_threads);
    const int64_t plane = s.g.h * s.g.w;

    char *all_cols = NULL; /* tile buffers, see tile_buffers() */
    if (!s.pointwise && (all_cols = tile_buffers(&s, threads, size)) == NULL) return -2;

#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        char *cols = tile_buffer(all_cols, &s, size);
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            if (s.batch > 1) { /* several samples side by side: via the staging rows */
                const int64_t n0 = item * s.batch, count = min64(s.batch, s.n - n0);
                const int64_t width = count * s.l;
                char *rows = cols + s.k * s.ld * size;
                for (int64_t grp = 0; grp < groups; grp++) {
                    im2col_samples(kind, &s, input, n0, count, grp, cols);
                    if (bias != NULL)
                        kind->fill_rows(rows, s.o_group, width, s.ld,
                                        at(bias, grp * s.o_group, size));
                    gt_gemm(dtype, s.o_group, width, s.k, at(weight, grp * s.o_group * s.k, size),
                            s.k, 1, cols, s.ld, 1, rows, s.ld, 1, bias != NULL, gemm_threads);
                    move_rows(&s, out, size, n0, count, grp, rows, 1);
                }
                continue;
            }
            const int64_t n = item / tiles, l0 = item % tiles * s.tile;
            const int64_t len = min64(s.tile, s.l - l0);
            for (int64_t grp = 0; grp < groups; grp++) {
                const char *x = at(input, (n * s.c_in + grp * s.c_group) * plane, size);
                const char *b = x + l0 * size;
                int64_t b_rs = s.l;
                if (!s.pointwise) {
                    kind->im2col(x, s.c_group, &s.g, l0, len, cols, s.ld);
                    b = cols;
                    b_rs = s.ld;
                }
                char *y = at(out, (n * s.c_out + grp * s.o_group) * s.l + l0, size);
                if (bias != NULL)
                    kind->fill_rows(y, s.o_group, len, s.l, at(bias, grp * s.o_group, size));
                gt_gemm(dtype, s.o_group, len, s.k, at(weight, grp * s.o_group * s.k, size), s.k,
                        1, b, b_rs, 1, y, s.l, 1, bias != NULL, gemm_threads);
            }
        }
    }
    free(all_cols);
    return 0;
}

/* ------------------------------------------------------------------------
 * Gradient with respect to the input: d cols = W_g^T d out, then col2im.
 * ------------------------------------------------------------------------ */

/* Optimization (the input gradient as a forward convolution). With stride 1,
 *
 *     dx[c, a, b] = sum over o, kh, kw of W[o, c, kh, kw] dy[o, a - kh*d + p, b - kw*d + p]
 *
 * is itself a convolution of dy, with the weight's in and out channels swapped
 * and its taps flipped, W'[c, o, KH-1-kh, KW-1-kw] = W[o, c, kh, kw] (per
 * group), padding (KH-1)*d - p (which must not be negative) and the same
 * dilation. Run as gt_conv2d it needs no col2im (each tile's product is
 * written once, no scattered adds), and its product has the long shared
 * dimension O*KH*KW instead of O: a 3x3 layer's input gradient costs about a
 * forward pass. The flipped weight is small (the weight's size); it is made
 * here and freed after. Returns 1 when it ran (`*status` is gt_conv2d's
 * result), 0 when the shape does not allow it. */
/* W'[c, o, KH-1-kh, KW-1-kw] = W[o, c, kh, kw], group by group. Optimization:
 * typed copies (a memcpy of `size` bytes, a run-time size, was a library call
 * per number: 0.07 ms of the 64-channel layer's 0.85). */
#define FLIP_WEIGHT(T, FROM, TO, GROUPS, O_GROUP, C_GROUP, TAPS)                                   \
    do {                                                                                           \
        const T *from_ = (const T *)(FROM);                                                        \
        T *to_ = (T *)(TO);                                                                        \
        for (int64_t grp = 0; grp < (GROUPS); grp++)                                               \
            for (int64_t o = 0; o < (O_GROUP); o++)                                                \
                for (int64_t c = 0; c < (C_GROUP); c++) {                                          \
                    const T *src = from_ + ((grp * (O_GROUP) + o) * (C_GROUP) + c) * (TAPS);       \
                    T *dst = to_ + ((grp * (C_GROUP) + c) * (O_GROUP) + o) * (TAPS);               \
                    for (int64_t t = 0; t < (TAPS); t++) dst[(TAPS) - 1 - t] = src[t];             \
                }                                                                                  \
    } while (0)

static int backward_input_as_forward(gt_view *grad_input, const gt_view *grad_output,
                                     const gt_view *weight, int64_t sh, int64_t sw, int64_t ph,
                                     int64_t pw, int64_t dh, int64_t dw, int64_t groups,
                                     int *status)
{
    const int64_t o_all = weight->shape[0], c_group = weight->shape[1];
    const int64_t kh = weight->shape[2], kw = weight->shape[3];
    const int64_t fh = (kh - 1) * dh - ph, fw = (kw - 1) * dw - pw; /* the new padding */
    /* Only where dy is as large as x ("same" padding): otherwise the new
     * padding is wider and the product would multiply that many more zeros
     * (LeNet's valid 5x5 layers: twice the work). 1x1 without padding reads
     * dy in place already (see below). */
    const int same_size = grad_output->shape[2] == grad_input->shape[2] &&
                          grad_output->shape[3] == grad_input->shape[3];
    if (sh != 1 || sw != 1 || fh < 0 || fw < 0 || !same_size ||
        (kh == 1 && kw == 1 && ph == 0 && pw == 0))
        return 0;
    const int64_t size = CONV_KINDS[weight->dtype].itemsize, o_group = o_all / groups;
    const int64_t taps = kh * kw, count = o_all * c_group * taps;
    char *flipped = malloc((size_t)(count * size));
    if (flipped == NULL) {
        *status = -2;
        return 1;
    }
    const char *w = at(weight, 0, size);
    if (size == 4) FLIP_WEIGHT(float, w, flipped, groups, o_group, c_group, taps);
    else FLIP_WEIGHT(double, w, flipped, groups, o_group, c_group, taps);
    gt_view w_view = *weight;
    w_view.data = flipped;
    w_view.offset = 0;
    w_view.shape[0] = groups * c_group;
    w_view.shape[1] = o_group;
    w_view.strides[3] = 1, w_view.strides[2] = kw, w_view.strides[1] = taps;
    w_view.strides[0] = o_group * taps;
    *status = gt_conv2d(grad_input, grad_output, &w_view, NULL, 1, 1, fh, fw, dh, dw, groups);
    free(flipped);
    return 1;
}

int gt_conv2d_backward_input(gt_view *grad_input, const gt_view *grad_output,
                             const gt_view *weight, int64_t sh, int64_t sw, int64_t ph,
                             int64_t pw, int64_t dh, int64_t dw, int64_t groups)
{
    const int dtype = grad_input->dtype;
    if (!USABLE(dtype, grad_input, grad_output, weight)) return -1;
    int status;
    if (backward_input_as_forward(grad_input, grad_output, weight, sh, sw, ph, pw, dh, dw, groups,
                                  &status))
        return status;
    const conv_kind *kind = &CONV_KINDS[dtype];
    const int64_t size = kind->itemsize;
    const conv_shape s =
        conv_shape_of(grad_input, grad_output, weight, sh, sw, ph, pw, dh, dw, groups, size);
    if (gt_numel(grad_input) == 0) return 0;
    const int64_t plane = s.g.h * s.g.w;
    const int64_t tiles = (s.l + s.tile - 1) / s.tile;
    /* A pointwise gradient writes each tile's own columns: tiles share out
     * like the forward's. Otherwise tiles of one sample overlap through
     * col2im, so whole samples are shared out. */
    const int64_t items = s.pointwise  ? s.n * tiles
                          : s.batch > 1 ? (s.n + s.batch - 1) / s.batch
                                        : s.n;
    int gemm_threads;
    const int threads = share_items(items, s.n * s.c_out * s.l * s.k, &gemm_threads);

    char *all_cols = NULL; /* tile buffers, see tile_buffers() */
    if (!s.pointwise && (all_cols = tile_buffers(&s, threads, size)) == NULL) return -2;

#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        char *cols = tile_buffer(all_cols, &s, size);
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            if (s.batch > 1) { /* several samples side by side: d cols = W_g^T dy_rows */
                const int64_t n0 = item * s.batch, count = min64(s.batch, s.n - n0);
                const int64_t width = count * s.l;
                char *rows = cols + s.k * s.ld * size;
                memset(at(grad_input, n0 * s.c_in * plane, size), 0,
                       (size_t)(count * s.c_in * plane * size));
                for (int64_t grp = 0; grp < groups; grp++) {
                    move_rows(&s, grad_output, size, n0, count, grp, rows, 0);
                    gt_gemm(dtype, s.k, width, s.o_group, at(weight, grp * s.o_group * s.k, size),
                            1, s.k, rows, s.ld, 1, cols, s.ld, 1, 0, gemm_threads);
                    for (int64_t j = 0; j < count; j++) {
                        char *dx = at(grad_input, ((n0 + j) * s.c_in + grp * s.c_group) * plane,
                                      size);
                        kind->col2im(dx, s.c_group, &s.g, 0, s.l, cols + j * s.l * size, s.ld);
                    }
                }
                continue;
            }
            const int64_t n = s.pointwise ? item / tiles : item;
            const int64_t first = s.pointwise ? item % tiles : 0;
            const int64_t last = s.pointwise ? first + 1 : tiles;
            char *dx_n = at(grad_input, n * s.c_in * plane, size);
            if (!s.pointwise) memset(dx_n, 0, (size_t)(s.c_in * plane * size));
            for (int64_t t = first; t < last; t++) {
                const int64_t l0 = t * s.tile, len = min64(s.tile, s.l - l0);
                for (int64_t grp = 0; grp < groups; grp++) {
                    const char *w = at(weight, grp * s.o_group * s.k, size);
                    const char *dy = at(grad_output, (n * s.c_out + grp * s.o_group) * s.l + l0,
                                        size);
                    char *dx = dx_n + grp * s.c_group * plane * size;
                    if (s.pointwise) {
                        gt_gemm(dtype, s.k, len, s.o_group, w, 1, s.k, dy, s.l, 1,
                                dx + l0 * size, s.l, 1, 0, gemm_threads);
                    } else {
                        gt_gemm(dtype, s.k, len, s.o_group, w, 1, s.k, dy, s.l, 1, cols, s.ld,
                                1, 0, gemm_threads);
                        kind->col2im(dx, s.c_group, &s.g, l0, len, cols, s.ld);
                    }
                }
            }
        }
    }
    free(all_cols);
    return 0;
}

/* ------------------------------------------------------------------------
 * Gradient with respect to the weight: d W_g += d out(tile) cols(tile)^T,
 * each thread into its own copy, the copies summed in thread order.
 * ------------------------------------------------------------------------ */
int gt_conv2d_backward_weight(gt_view *grad_weight, const gt_view *grad_output,
                              const gt_view *input, int64_t sh, int64_t sw, int64_t ph,
                              int64_t pw, int64_t dh, int64_t dw, int64_t groups)
{
    const int dtype = grad_weight->dtype;
    if (!USABLE(dtype, grad_weight, grad_output, input)) return -1;
    const conv_kind *kind = &CONV_KINDS[dtype];
    const int64_t size = kind->itemsize;
    const conv_shape s =
        conv_shape_of(input, grad_output, grad_weight, sh, sw, ph, pw, dh, dw, groups, size);
    const int64_t count = gt_numel(grad_weight);
    char *dw_all = at(grad_weight, 0, size);
    memset(dw_all, 0, (size_t)(count * size));
    if (count == 0 || s.n * s.l == 0) return 0;
    if (wide_possible(&s, size))
        return conv_wide_backward_weight(kind, dtype, &s, dw_all, count, grad_output, input);
    const int64_t plane = s.g.h * s.g.w;
    const int64_t tiles = (s.l + s.tile - 1) / s.tile;
    const int64_t items = s.batch > 1 ? (s.n + s.batch - 1) / s.batch : s.n * tiles;
    int gemm_threads;
    const int threads = share_items(items, s.n * s.c_out * s.l * s.k, &gemm_threads);
    int failed;
    char *copies = private_gradients(threads, count, size, &failed); /* see there */
    if (failed) return -2;

    char *all_cols = NULL; /* tile buffers, see tile_buffers() */
    if (!s.pointwise && (all_cols = tile_buffers(&s, threads, size)) == NULL) {
        free(copies);
        return -2;
    }

#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int id = gt_thread_id();
        char *mine = id == 0 ? dw_all : copies + (id - 1) * count * size;
        char *cols = tile_buffer(all_cols, &s, size);
#pragma omp for schedule(static)
        for (int64_t item = 0; item < items; item++) {
            if (s.batch > 1) { /* several samples side by side: dW_g += dy_rows cols^T */
                const int64_t n0 = item * s.batch, count = min64(s.batch, s.n - n0);
                const int64_t width = count * s.l;
                char *rows = cols + s.k * s.ld * size;
                for (int64_t grp = 0; grp < groups; grp++) {
                    im2col_samples(kind, &s, input, n0, count, grp, cols);
                    move_rows(&s, grad_output, size, n0, count, grp, rows, 0);
                    gt_gemm(dtype, s.o_group, s.k, width, rows, s.ld, 1, cols, 1, s.ld,
                            mine + grp * s.o_group * s.k * size, s.k, 1, 1, gemm_threads);
                }
                continue;
            }
            const int64_t n = item / tiles, l0 = item % tiles * s.tile;
            const int64_t len = min64(s.tile, s.l - l0);
            for (int64_t grp = 0; grp < groups; grp++) {
                const char *x = at(input, (n * s.c_in + grp * s.c_group) * plane, size);
                const char *b = x + l0 * size;
                int64_t b_cs = s.l; /* B = cols^T: row l, column k */
                if (!s.pointwise) {
                    kind->im2col(x, s.c_group, &s.g, l0, len, cols, s.ld);
                    b = cols;
                    b_cs = s.ld;
                }
                const char *dy = at(grad_output, (n * s.c_out + grp * s.o_group) * s.l + l0, size);
                gt_gemm(dtype, s.o_group, s.k, len, dy, s.l, 1, b, 1, b_cs,
                        mine + grp * s.o_group * s.k * size, s.k, 1, 1, gemm_threads);
            }
        }
    }
    free(all_cols);
    sum_private_gradients(kind, dw_all, copies, threads, count);
    return 0;
}

/* ------------------------------------------------------------------------
 * F.unfold and F.fold: one whole-sample tile per sample.
 * ------------------------------------------------------------------------ */
static conv_geom unfold_geom(const gt_view *image, int64_t kh, int64_t kw, int64_t sh,
                             int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw)
{
    const int64_t h = image->shape[2], w = image->shape[3];
    conv_geom g = {h, w, (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1,
                   (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1, kh, kw, sh, sw, ph, pw, dh, dw};
    return g;
}

int gt_im2col(gt_view *out, const gt_view *input, int64_t kh, int64_t kw, int64_t sh,
              int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw)
{
    const int dtype = out->dtype;
    if (!USABLE(dtype, out, input)) return -1;
    const conv_kind *kind = &CONV_KINDS[dtype];
    const conv_geom g = unfold_geom(input, kh, kw, sh, sw, ph, pw, dh, dw);
    const int64_t n = input->shape[0], c = input->shape[1], l = g.oh * g.ow;
    const int64_t per_in = c * g.h * g.w, per_out = c * kh * kw * l;
#pragma omp parallel for schedule(static) if (n * per_out >= GT_PARALLEL_THRESHOLD)
    for (int64_t i = 0; i < n; i++)
        kind->im2col(at(input, i * per_in, kind->itemsize), c, &g, 0, l,
                     at(out, i * per_out, kind->itemsize), l);
    return 0;
}

int gt_col2im(gt_view *out, const gt_view *columns, int64_t kh, int64_t kw, int64_t sh,
              int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw)
{
    const int dtype = out->dtype;
    if (!USABLE(dtype, out, columns)) return -1;
    const conv_kind *kind = &CONV_KINDS[dtype];
    const conv_geom g = unfold_geom(out, kh, kw, sh, sw, ph, pw, dh, dw);
    const int64_t n = out->shape[0], c = out->shape[1], l = g.oh * g.ow;
    const int64_t per_out = c * g.h * g.w, per_in = c * kh * kw * l;
#pragma omp parallel for schedule(static) if (n * per_in >= GT_PARALLEL_THRESHOLD)
    for (int64_t i = 0; i < n; i++) {
        char *x = at(out, i * per_out, kind->itemsize);
        memset(x, 0, (size_t)(per_out * kind->itemsize));
        kind->col2im(x, c, &g, 0, l, at(columns, i * per_in, kind->itemsize), l);
    }
    return 0;
}
