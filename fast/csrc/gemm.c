/* gemm.c: batched matrix multiplication, C = A B, in the BLIS design.
 *
 * Why a naive loop is slow
 * ------------------------
 * C (M x N) = A (M x K) times B (K x N) does M*N*K multiply-adds on only
 * M*K + K*N + M*N numbers, so each number could be used many times. A plain
 * i-k-j loop reads all of B again for every row of A: at large sizes B comes
 * from L3 or main memory each time, and the loop runs at the speed of that
 * memory (about 40 GFLOP/s per core here), not of the arithmetic units
 * (about 115 GFLOP/s per core in float32). Fast GEMM is the art of reusing each number while it is close to the
 * core: in a register, in the L1 cache, in the L2 cache.
 *
 * The five loops around a micro-kernel (BLIS: Van Zee and van de Geijn, 2015)
 * ------------------------------------------------------------------------------
 *
 *   for jc in steps of NC over the N columns:             B panel -> L3
 *     for pc in steps of KC over the K shared dimension:
 *       pack B[pc:pc+KC, jc:jc+NC] into NR-wide slivers   (all threads, shared)
 *       for ic in steps of MC over the M rows:             (one block per thread)
 *         pack A[ic:ic+MC, pc:pc+KC] into MR-tall slivers  A block -> L2
 *         for jr in steps of NR over the panel's columns:  B sliver -> L1
 *           for ir in steps of MR over the block's rows:
 *             micro-kernel: C[MR x NR tile] += A sliver x B sliver
 *
 * The micro-kernel keeps an MR x NR tile of C in vector registers and runs
 * over the KC shared index: at each step it loads one row of the B sliver (NR
 * numbers, two vectors), broadcasts each of the MR numbers of the A sliver's
 * column, and does MR x 2 vector fused multiply-adds (rank-1 update). Every
 * number loaded is used MR or NR times from a register, so the loads are cheap
 * next to the arithmetic.
 *
 * Each loop outside it chooses what stays in which cache:
 * - the B sliver (KC x NR) is reused by all MC/MR micro-kernel calls of the
 *   ir loop, so it should stay in L1;
 * - the packed A block (MC x KC) is reused for every sliver of the B panel, so
 *   it should stay in L2 (each core has its own L2: each thread packs its own);
 * - the packed B panel (KC x NC) is reused by every A block, and lives in L3,
 *   shared by both cores.
 *
 * Why packing: the micro-kernel wants its operands contiguous, in the exact
 * order it reads them (A column-slices of MR, B row-slices of NR), so that every
 * load is one aligned vector and the hardware prefetcher sees a single stream.
 * Packing copies each block once (O(MK + KN) work) before it is used O(N) or
 * O(M) times. It also makes layout free: the packing routines read A and B
 * through their strides, so transposed, sliced or broadcast (stride 0) operands
 * need no copy beforehand and cost about as much as contiguous ones. Edges are padded with zeros to full MR / NR
 * slivers, so the micro-kernel never needs a special case for the arithmetic;
 * only its final store looks at the true tile size.
 *
 * Types: float32 and float64 go through the blocked path (accumulating in the
 * element type, as BLAS does). Small products (below GEMM_BLOCKED_MIN
 * multiply-adds), and the integer and bool dtypes, use a direct loop: packing
 * costs more than it saves on a tiny problem, and integer matmul is rare enough
 * that correctness (64-bit accumulation, wrapping like the reference tier)
 * matters more than speed. A table, GEMM_KINDS, maps each dtype to its routines.
 *
 * Small products (a layer of a small network: 128 x 784 times 784 x 256 takes
 * a quarter of a millisecond) go another way, the small path: when packed A and
 * packed B together fit in L3 (GEMM_PACK_ALL_BYTES), both are packed whole,
 * once, and then C is cut into one tile per thread, each multiplied with the
 * same micro-kernel and the same KC blocks, but with no packing or barrier in
 * between (see gemm_small). KC blocks are of equal depth (kc_depth), so that
 * no block is left only a few steps deep. The smallest (at most 2^24
 * multiply-adds: a convolution tile, a recurrent step) may skip packing
 * altogether: the micro-kernel then reads A, and B when its rows are
 * contiguous, where they lie (see gemm_inplace); larger ones still read a
 * row-major A in place and pack only B.
 *
 * Threads (OpenMP): with at least as many batch entries as threads, the batch
 * loop is split over threads, one whole product each. Otherwise each product
 * uses all threads itself. The small path shares out the packing and then the
 * tiles of C, with one barrier between. The five loops split their ic loop:
 * each thread packs and uses its own A blocks, while all threads pack the
 * shared B panel together, with a barrier before and after it is used; the A
 * blocks are handed out one at a time (dynamic schedule), so a thread slowed
 * down by another program on its core takes fewer of them. Every element of C
 * is computed by one thread in a fixed order (the KC blocks in turn), so
 * results do not depend on the number of threads or on timing.
 *
 * Measured on this machine (float32, square, contiguous; best call): about
 * 108 GFLOP/s on one thread and 195-217 on two, for sizes 256 to 2048, level
 * with PyTorch and NumPy (OpenBLAS) measured alongside; the two products of a
 * 784-256 linear layer with batch 128 (x @ W.t() and the weight gradient)
 * reach 197 GFLOP/s. The peak is about 115 per core (the micro-kernel alone,
 * data in L1); the rest goes to packing (2-3% at 1024, 7% at 128 x 784 x 256),
 * to loading and storing C tiles once per KC block, to zero-padded edge
 * slivers, and, with two threads, to barriers.
 */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm.h"
#include "threads.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

/* ------------------------------------------------------------------------
 * Block sizes
 * ------------------------------------------------------------------------ */

/* Every size below can be overridden when compiling (-DGEMM_KC=384 ...) to
 * experiment; the defaults were measured on this machine (AMD Zen 4, AVX-512,
 * 2 cores; per core 32 KiB L1d and 1 MiB L2, 32 MiB L3 shared).
 *
 * The register tile: MR rows by NR = two vectors of C (NR = 32 floats or 16
 * doubles with AVX-512). One step of the micro-kernel loads 2 vectors of B and
 * broadcasts MR numbers of A, then does 2 x MR fused multiply-adds (FMAs).
 * - The 2 x MR accumulators, 2 B vectors and 1 broadcast must fit in the
 *   vector registers (32 with AVX-512, 16 with AVX2 or SSE) without spilling.
 * - An FMA takes 4 cycles before its result can be reused, and Zen 4 starts
 *   one 512-bit FMA per cycle, so at least 4 independent accumulators are
 *   needed to keep it busy; the loads (2 + MR per 2 x MR FMAs) must stay below
 *   what the load ports deliver.
 * On this machine MR = 6, 8, 12 and 14 all run at 114-116 GFLOP/s per core
 * with the data in L1 (98% of the peak, 32 flops a cycle at about 3.7 GHz).
 * MR = 8 (16 accumulators) was chosen because it divides the power-of-two
 * sizes common in deep learning, so no sliver is padded (with MR = 12 a
 * 1024-row matrix ends in a sliver 4/12 full); in the whole GEMM it measured
 * 109 GFLOP/s against 102 for MR = 12 (256^3, one thread). */
#if defined(__AVX512F__)
#define GEMM_VECTOR_BYTES 64
#define GEMM_MR_DEFAULT 8 /* 16 accumulators + 3 of 32 registers */
#elif defined(__AVX__)
#define GEMM_VECTOR_BYTES 32
#define GEMM_MR_DEFAULT 6 /* 12 accumulators + 3 of 16 registers */
#else
#define GEMM_VECTOR_BYTES 16 /* SSE2: what every x86-64 has */
#define GEMM_MR_DEFAULT 6
#endif
#ifndef GEMM_MR
#define GEMM_MR GEMM_MR_DEFAULT
#endif
#define GEMM_NR_VECTORS 2

/* The cache blocks.
 * - KC, the depth of a packed sliver: the C tile is loaded and stored once
 *   per KC steps of the micro-kernel, so a deep KC amortises that traffic,
 *   while the B sliver it reuses (KC x NR, 32 KiB for KC = 256) should stay
 *   close to the core (L1, or L2 just behind it). Measured: KC = 256, 384 and
 *   512 run at the same speed (Zen 4's L2 refills L1 fast enough), KC = 192
 *   is 3% slower.
 * - MC, the height of an A block (MC x KC: 144 KiB of floats, 288 KiB of
 *   doubles), which each thread keeps in its own L2 (1 MiB) while the whole B
 *   panel streams past it. A multiple of MR.
 * - NC, the width of the B panel (KC x NC: 4 MiB of floats), shared by the
 *   threads in L3 (32 MiB). Most problems have N <= NC: B is then packed
 *   once per KC block and A once in all. */
#ifndef GEMM_KC
#define GEMM_KC 256
#endif
#ifndef GEMM_MC
#define GEMM_MC 144
#endif
#ifndef GEMM_NC
#define GEMM_NC 4096
#endif

/* Below GEMM_BLOCKED_MIN multiply-adds (M*N*K), packing costs more than it
 * saves and the direct loop is faster (measured: 16^3 direct 0.75 us against
 * 1.2 us blocked; 24^3 direct 4.3 us against 1.6 us blocked; 1 x 784 times
 * 784 x 256 direct 19 us against 53 us blocked, 8 x 784 times 784 x 256
 * direct 100 us against 52 us blocked). Below
 * GEMM_PARALLEL_MIN, starting a second thread costs more than it saves. */
#define GEMM_BLOCKED_MIN (20 * 20 * 20)
#define GEMM_PARALLEL_MIN (48 * 48 * 48)

/* Products whose packed A and packed B together take at most this many bytes
 * take the small path (gemm_small): all of A and B packed once, then tiles of
 * C shared out. 8 MiB fits in L3 with room to spare; measured against the
 * five loops at two threads: 128 x 784 times 784 x 256 (1.2 MiB) 261 us
 * against 274 us, 128 x 4096 times 4096 x 128 (4 MiB) 709 us against 758 us,
 * 1024^3 (8 MiB) level. */
/* What packing one number costs, in multiply-adds of the micro-kernel (a
 * copy through the caches against 32 multiply-adds a cycle), for choosing
 * between the packed and the in-place small paths (see gemm_blocked). */
#ifndef GEMM_PACK_COST
#define GEMM_PACK_COST 16
#endif

/* Above this many multiply-adds the in-place path loses to packing (each
 * operand is then reused often enough to pay for its copy, and the in-place
 * B sliver, its rows far apart, no longer stays in L1): measured 0.72-0.96x
 * the packed path's time from 16 x 144 x 448 to 256^3, 1.1-1.2x at 384^3 and
 * 512 x 128 x 512. Above it, a row-major A is still read in place, with all
 * of B packed (see gemm_blocked). */
#ifndef GEMM_INPLACE_MAX
#define GEMM_INPLACE_MAX (1 << 24)
#endif

#ifndef GEMM_PACK_ALL_BYTES
#define GEMM_PACK_ALL_BYTES (8 << 20)
#endif

/* Packed buffers start on a cache line (and vector) boundary. */
#define GEMM_ALIGN 64

/* ------------------------------------------------------------------------
 * One 2-D problem: pointers to element (0, 0) and strides, in elements.
 * ------------------------------------------------------------------------ */
typedef struct {
    int64_t m, n, k;
    const void *a;
    int64_t a_rs, a_cs; /* row and column strides of A */
    const void *b;
    int64_t b_rs, b_cs;
    void *c;
    int64_t c_rs, c_cs;
    int accumulate; /* 1: C += A B (gt_gemm's callers); 0: C = A B */
} gemm_problem;

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static inline int64_t round_up(int64_t x, int64_t step) { return (x + step - 1) / step * step; }

/* ------------------------------------------------------------------------
 * Floating point: packing, micro-kernel, direct loop (float and double).
 *
 * Each is written once as a macro over the element type T, its vector type V
 * (a GCC vector extension: the compiler turns `acc += a * b` on V into one
 * vector FMA instruction, whatever the vector width of the build), and a
 * suffix naming the functions.
 * ------------------------------------------------------------------------ */

typedef float gemm_vfloat __attribute__((vector_size(GEMM_VECTOR_BYTES)));
typedef double gemm_vdouble __attribute__((vector_size(GEMM_VECTOR_BYTES)));

/* An 8 x 8 transpose in registers: dst[q * ld_dst + r] = src[r * ld_src + q]
 * for r, q < 8. The packing routines use it when their source runs the wrong
 * way (rows of A, or columns of B, contiguous): reading 8 numbers from 8
 * different rows one at a time costs 8 scalar loads and inserts per vector
 * stored, while this loads 8 whole vectors, rearranges them with 24 shuffles
 * and stores 8 whole vectors (measured: packing a row-major A and a
 * transposed B runs about 3x faster, which is 5-8% of a 128 x 784 x 256 product).
 *
 * Three rounds of block swaps: the round of distance d (4, then 2, then 1)
 * pairs rows r and r + d (r with bit d clear) and swaps the columns of row r
 * whose bit d is set with the columns of row r + d whose bit d is clear. After
 * the 4-round the four 4 x 4 quarters are where they belong, after the 2-round
 * the 2 x 2 blocks, after the 1-round every element. One swap is two vector
 * shuffles: element c of __builtin_shuffle(x, y, mask) is element mask[c] of
 * x and y laid end to end (0-7 from x, 8-15 from y). */
#if defined(__AVX__)
/* Optimization (the float transpose in AVX instructions): GCC turned the
 * generic shuffles below, for floats, into a round trip through the stack
 * and scalar moves, about a cycle a number; with AVX2 only (no AVX-512),
 * packing the weight gradient's transposed im2col matrix (gt_gemm_cols) then
 * took 40% of it. The classic sequence here is 8 loads, 8 unpacks, 8
 * shuffles, 8 lane permutes and 8 stores for 64 numbers. */
static inline void transpose8_ps_avx(const float *const *rows, int64_t col, float *dst,
                                     int64_t ld_dst)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(rows[i] + col);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);     /* a0 b0 a1 b1 | a4 b4 a5 b5 */
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); /* a2 b2 a3 b3 | a6 b6 a7 b7 */
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);     /* columns 0 | 4 of 4 rows */
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE); /* columns 1 | 5 */
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44); /* columns 2 | 6 */
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE); /* columns 3 | 7 */
    }
    for (int q = 0; q < 4; q++) {
        _mm256_storeu_ps(dst + q * ld_dst, _mm256_permute2f128_ps(u[q], u[q + 4], 0x20));
        _mm256_storeu_ps(dst + (q + 4) * ld_dst, _mm256_permute2f128_ps(u[q], u[q + 4], 0x31));
    }
}
#define GEMM_TRANSPOSE8_PS_AVX 1
#else
#define GEMM_TRANSPOSE8_PS_AVX 0
#define transpose8_ps_avx(rows, col, dst, ld_dst) ((void)0)
#endif

#define DEFINE_TRANSPOSE8(T, I, SUFFIX)                                             \
    typedef T gemm_row8_##SUFFIX __attribute__((vector_size(8 * sizeof(T))));       \
    typedef I gemm_mask8_##SUFFIX __attribute__((vector_size(8 * sizeof(I))));      \
    /* The same, row r of the source at rows[r] + col (gt_gemm_cols). */          \
    static inline void transpose8_at_##SUFFIX(const T *const *rows, int64_t col,   \
                                              T *dst, int64_t ld_dst);             \
    static inline void transpose8_##SUFFIX(const T *src, int64_t ld_src, T *dst,    \
                                           int64_t ld_dst)                          \
    {                                                                               \
        const T *rows[8];                                                           \
        for (int r = 0; r < 8; r++) rows[r] = src + r * ld_src;                     \
        transpose8_at_##SUFFIX(rows, 0, dst, ld_dst);                               \
    }                                                                               \
    static inline void transpose8_at_##SUFFIX(const T *const *rows, int64_t col,   \
                                              T *dst, int64_t ld_dst)              \
    {                                                                               \
        static const gemm_mask8_##SUFFIX KEEP_LOW[3] = {                            \
            {0, 1, 2, 3, 8, 9, 10, 11}, {0, 1, 8, 9, 4, 5, 12, 13},                 \
            {0, 8, 2, 10, 4, 12, 6, 14}};                                           \
        static const gemm_mask8_##SUFFIX KEEP_HIGH[3] = {                           \
            {4, 5, 6, 7, 12, 13, 14, 15}, {2, 3, 10, 11, 6, 7, 14, 15},             \
            {1, 9, 3, 11, 5, 13, 7, 15}};                                           \
        if (GEMM_TRANSPOSE8_PS_AVX && sizeof(T) == 4) {                             \
            transpose8_ps_avx((const float *const *)rows, col, (float *)dst, ld_dst); \
            return;                                                                 \
        }                                                                           \
        gemm_row8_##SUFFIX row[8];                                                  \
        for (int r = 0; r < 8; r++) memcpy(&row[r], rows[r] + col, sizeof row[r]);    \
        for (int round = 0, d = 4; round < 3; round++, d /= 2) {                    \
            for (int r = 0; r < 8; r++) {                                           \
                if (r & d) continue;                                                \
                const gemm_row8_##SUFFIX x = row[r], y = row[r + d];                \
                row[r] = __builtin_shuffle(x, y, KEEP_LOW[round]);                  \
                row[r + d] = __builtin_shuffle(x, y, KEEP_HIGH[round]);             \
            }                                                                       \
        }                                                                           \
        for (int q = 0; q < 8; q++) memcpy(dst + q * ld_dst, &row[q], sizeof row[q]); \
    }

/* An edge sliver (fewer than `width` lines) whose lines run contiguously in
 * the source, the wrong way for the sliver: dst[p * width + j] = src[j * ld +
 * p] for j < lines, zeros after.
 * Optimization (blocked transpose): the general loop reads element p of
 * every line, then element p + 1 of every line, ..., a strided gather; when
 * the lines lie a multiple of 4 KiB apart (the im2col rows of a 32 x 32
 * image, 1024 floats) all those reads map to one L1 cache set, whose 8 ways
 * cannot hold 25 lines, and every read misses. Here the sliver is filled in
 * blocks of PACK_EDGE_BLOCK steps (the block's lines and its part of the
 * sliver both stay in L1), eight lines at a time through the 8 x 8 register
 * transpose, the last lines one by one (LeNet's first weight gradient, 6 x 25
 * taps over 4 x 784 positions: 1.0 -> 0.4 ms). */
#define PACK_EDGE_BLOCK 64
#define DEFINE_PACK_EDGE(T, SUFFIX)                                                 \
    static inline __attribute__((always_inline)) void pack_edge_##SUFFIX(          \
        int64_t kc, int64_t lines, const T *src, int64_t ld, int64_t width, T *dst) \
    {                                                                               \
        /* Zeros first, whole rows of the sliver (`width` is a constant once    */ \
        /* inlined: a few vector stores a row, where zeroing only the row's   */ \
        /* tail became a call to memset per row, a third of a small weight    */ \
        /* gradient's time); the lines then overwrite their columns.          */ \
        for (int64_t p = 0; p < kc; p++)                                            \
            for (int64_t q = 0; q < width; q++) dst[p * width + q] = 0;             \
        for (int64_t p0 = 0; p0 < kc; p0 += PACK_EDGE_BLOCK) {                      \
            const int64_t p1 = min64(kc, p0 + PACK_EDGE_BLOCK);                     \
            int64_t j = 0;                                                          \
            for (; j + 8 <= lines; j += 8) {                                        \
                int64_t p = p0;                                                     \
                for (; p + 8 <= p1; p += 8)                                         \
                    transpose8_##SUFFIX(src + j * ld + p, ld, dst + p * width + j, width); \
                for (; p < p1; p++)                                                 \
                    for (int64_t q = j; q < j + 8; q++) dst[p * width + q] = src[q * ld + p]; \
            }                                                                       \
            for (; j < lines; j++) {                                                \
                const T *line = src + j * ld;                                       \
                for (int64_t p = p0; p < p1; p++) dst[p * width + j] = line[p];     \
            }                                                                       \
        }                                                                           \
    }

/* Pack kc rows by `cols` (<= NR) columns of a B whose column j starts at
 * src + starts[j] and runs in pieces of `run` contiguous numbers,
 * `run_stride` apart (gt_gemm_cols): dst[p * NR + j] = src[starts[j] +
 * (p / run) * run_stride + p % run], zeros after column `cols`; kc is a
 * whole number of pieces. Eight columns at a time through the 8 x 8
 * register transpose, the rest one by one. */
#define DEFINE_PACK_COLUMNS(T, NR, SUFFIX)                                          \
    static void pack_columns_##SUFFIX(int64_t kc, int64_t cols, const void *src_,  \
                                      const int64_t *starts, int64_t run,          \
                                      int64_t run_stride, void *dst_)              \
    {                                                                               \
        const T *src = (const T *)src_;                                             \
        T *dst = (T *)dst_;                                                         \
        const int64_t pieces = kc / run;                                            \
        if (cols < NR) /* zeros first, whole rows (see pack_edge) */                \
            for (int64_t p = 0; p < kc; p++)                                        \
                for (int64_t q = 0; q < NR; q++) dst[p * NR + q] = 0;               \
        int64_t j = 0;                                                              \
        for (; j + 8 <= cols; j += 8) {                                             \
            const T *rows[8];                                                       \
            for (int r = 0; r < 8; r++) rows[r] = src + starts[j + r];              \
            for (int64_t y = 0; y < pieces; y++) {                                  \
                const int64_t from = y * run_stride;                                \
                T *to = dst + y * run * NR + j;                                     \
                int64_t x = 0;                                                      \
                for (; x + 8 <= run; x += 8) transpose8_at_##SUFFIX(rows, from + x, to + x * NR, NR); \
                for (; x < run; x++)                                                \
                    for (int r = 0; r < 8; r++) to[x * NR + r] = rows[r][from + x]; \
            }                                                                       \
        }                                                                           \
        for (; j < cols; j++) {                                                     \
            const T *column = src + starts[j];                                      \
            for (int64_t y = 0; y < pieces; y++)                                    \
                for (int64_t x = 0; x < run; x++)                                   \
                    dst[(y * run + x) * NR + j] = column[y * run_stride + x];       \
        }                                                                           \
    }

/* Pack `rows` (<= MR) rows by kc columns of A into one sliver, column by
 * column: dst[p*MR + i] = A[i, p]. Rows past `rows` are zeros. A full sliver
 * is a memcpy per column when A's columns are contiguous (A is a transposed
 * view), and 8 x 8 transposes when its rows are (A is row-major). */
#define DEFINE_PACK_A(T, SUFFIX)                                                    \
    static void pack_a_##SUFFIX(int64_t kc, int64_t rows, const void *src,         \
                                int64_t rs, int64_t cs, void *dst_)                \
    {                                                                               \
        const T *a = (const T *)src;                                                \
        T *dst = (T *)dst_;                                                         \
        if (rows == GEMM_MR && rs == 1) { /* columns of A are contiguous */       \
            for (int64_t p = 0; p < kc; p++, dst += GEMM_MR) {                      \
                memcpy(dst, a + p * cs, GEMM_MR * sizeof(T));                       \
            }                                                                       \
            return;                                                                 \
        }                                                                           \
        int64_t p = 0;                                                              \
        if (rows == GEMM_MR && cs == 1 && GEMM_MR % 8 == 0) { /* rows contiguous */ \
            for (; p + 8 <= kc; p += 8, dst += 8 * GEMM_MR) {                       \
                for (int i = 0; i < GEMM_MR; i += 8)                                \
                    transpose8_##SUFFIX(a + i * rs + p, rs, dst + i, GEMM_MR);      \
            }                                                                       \
        }                                                                           \
        if (rows == GEMM_MR) { /* the common case: a constant count, unrolled */ \
            for (; p < kc; p++, dst += GEMM_MR) {                                   \
                for (int i = 0; i < GEMM_MR; i++) dst[i] = a[i * rs + p * cs];     \
            }                                                                       \
            return;                                                                 \
        }                                                                           \
        if (cs == 1) { /* an edge sliver of a row-major A: row by row */           \
            pack_edge_##SUFFIX(kc, rows, a, rs, GEMM_MR, dst);                      \
            return;                                                                 \
        }                                                                           \
        for (; p < kc; p++, dst += GEMM_MR) {                                       \
            for (int64_t i = 0; i < rows; i++) dst[i] = a[i * rs + p * cs];        \
            for (int64_t i = rows; i < GEMM_MR; i++) dst[i] = 0;                    \
        }                                                                           \
    }

/* Pack kc rows by `cols` (<= NR) columns of B into one sliver, row by row:
 * dst[p*NR + j] = B[p, j]. Columns past `cols` are zeros. A full sliver is a
 * plain memcpy per row when B's rows are contiguous, and 8 x 8 transposes when
 * its columns are (B is a transposed view, as in x @ W.t()). */
#define DEFINE_PACK_B(T, NR, SUFFIX)                                                \
    static void pack_b_##SUFFIX(int64_t kc, int64_t cols, const void *src,         \
                                int64_t rs, int64_t cs, void *dst_)                \
    {                                                                               \
        const T *b = (const T *)src;                                                \
        T *dst = (T *)dst_;                                                         \
        int64_t p = 0;                                                              \
        if (cols == NR && rs == 1 && NR % 8 == 0) { /* columns contiguous */       \
            for (; p + 8 <= kc; p += 8, dst += 8 * NR) {                            \
                for (int j = 0; j < NR; j += 8)                                     \
                    transpose8_##SUFFIX(b + j * cs + p, cs, dst + j, NR);           \
            }                                                                       \
        }                                                                           \
        if (cols < NR && rs == 1) { /* an edge sliver of a transposed B */         \
            pack_edge_##SUFFIX(kc, cols, b, cs, NR, dst);                           \
            return;                                                                 \
        }                                                                           \
        for (; p < kc; p++) {                                                       \
            const T *row = b + p * rs;                                              \
            if (cols == NR && cs == 1) {                                            \
                memcpy(dst, row, NR * sizeof(T));                                   \
            } else {                                                                \
                for (int64_t j = 0; j < cols; j++) dst[j] = row[j * cs];           \
                for (int64_t j = cols; j < NR; j++) dst[j] = 0;                     \
            }                                                                       \
            dst += NR;                                                              \
        }                                                                           \
    }

/* Rows i0 .. i0 + rows of C (fewer than MR: what is left below the last
 * whole sliver) = A B for one B sliver (kc x NR, row p at b + p * b_rs, or at
 * b + b_rows[p] when b_rows is not NULL), A read at its strides (in place or
 * packed), n <= NR columns stored (added with `accumulate`).
 * Optimization (edge rows without padding): the micro-kernel always
 * computes MR rows, so a last sliver of 2 rows (a batch of 32 with MR = 6)
 * cost as much as a whole one. Here two rows at a time, each number summed
 * over p in order in one chain of multiply-adds, exactly as the micro-kernel
 * sums it: so a product gives the same bits whichever sliver a row falls in,
 * and at every instruction set (AVX2's MR = 6 puts rows in edge slivers that
 * AVX-512's MR = 8 keeps whole). Two partial sums (even and odd p) would hide
 * more of the multiply-adds' latency, but round differently. The
 * micro-kernel hands such slivers here (see micro_body), and
 * gt_gemm_packed_b calls it directly. */
#define DEFINE_EDGE_ROWS(T, V, NR, SUFFIX)                                          \
    static inline __attribute__((always_inline)) void edge_body_##SUFFIX(         \
        int64_t rows, int64_t kc, const T *a, int64_t a_rs, int64_t a_cs, const T *b, \
        int64_t b_rs, const int64_t *b_rows, T *c, int64_t c_rs, int64_t c_cs,      \
        int64_t n, int accumulate)                                                  \
    {                                                                               \
        enum { VL = sizeof(V) / sizeof(T) };                                        \
        for (int64_t i = 0; i < rows; i += 2) {                                     \
            const int two = i + 1 < rows;                                           \
            const T *a0 = a + i * a_rs, *a1 = two ? a0 + a_rs : a0;                 \
            V acc[2][GEMM_NR_VECTORS]; /* [row][vector] */                          \
            for (int r = 0; r < 2; r++)                                             \
                for (int v = 0; v < GEMM_NR_VECTORS; v++) acc[r][v] = (V){0};       \
            for (int64_t p = 0; p < kc; p++) {                                      \
                const T x0 = a0[p * a_cs], x1 = a1[p * a_cs];                       \
                const T *b_row = b_rows == NULL ? b + p * b_rs : b + b_rows[p];     \
                for (int v = 0; v < GEMM_NR_VECTORS; v++) {                         \
                    V bv;                                                           \
                    memcpy(&bv, b_row + v * VL, sizeof bv);                         \
                    acc[0][v] += x0 * bv;                                           \
                    acc[1][v] += x1 * bv;                                           \
                }                                                                   \
            }                                                                       \
            for (int r = 0; r < 1 + two; r++) {                                     \
                T *row = c + (i + r) * c_rs;                                        \
                if (n == NR && c_cs == 1) { /* whole vectors, as a full tile */     \
                    for (int v = 0; v < GEMM_NR_VECTORS; v++) {                     \
                        V sum = acc[r][v];                                          \
                        if (accumulate) {                                           \
                            V old;                                                  \
                            memcpy(&old, row + v * VL, sizeof old);                 \
                            sum += old;                                             \
                        }                                                           \
                        memcpy(row + v * VL, &sum, sizeof sum);                     \
                    }                                                               \
                    continue;                                                       \
                }                                                                   \
                T tile[NR];                                                         \
                for (int v = 0; v < GEMM_NR_VECTORS; v++) {                         \
                    const V sum = acc[r][v];                                        \
                    memcpy(tile + v * VL, &sum, sizeof sum);                        \
                }                                                                   \
                for (int64_t j = 0; j < n; j++) {                                   \
                    T *where = row + j * c_cs;                                      \
                    *where = accumulate ? *where + tile[j] : tile[j];               \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    }                                                                               \
    static void edge_rows_any_##SUFFIX(int64_t rows, int64_t kc, const void *a,     \
                                       int64_t a_rs, int64_t a_cs, const void *b,   \
                                       void *c, int64_t c_rs, int64_t n, int accumulate) \
    {                                                                               \
        edge_body_##SUFFIX(rows, kc, (const T *)a, a_rs, a_cs, (const T *)b, NR, NULL, \
                           (T *)c, c_rs, 1, n, accumulate);                         \
    }

/* The micro-kernel: tile = A sliver (MR x kc) times B sliver (kc x NR), kept
 * in MR x 2 vector registers, then stored to the m x n corner of the C tile at
 * c (row stride rs_c, column stride cs_c). With `accumulate` the tile is added
 * to C (later KC blocks), otherwise it overwrites C (the first KC block), so C
 * never has to be zeroed first.
 *
 * The body is written once, over the slivers' strides: A[i, p] is
 * a[i * a_rs + p * a_cs] and row p of B starts at b + p * b_rs (its NR numbers
 * contiguous). The packed kernel passes the packed layout's constants
 * (1, MR, NR), so after inlining it is the same code as a kernel written for
 * packed slivers only; the in-place kernel (gemm_inplace) passes an operand's
 * own strides.
 *
 * The loops over i and the two vectors have constant trip counts: GCC unrolls
 * them and keeps `acc` in registers. Loads of B and loads and stores of C go
 * through memcpy, C's way of saying "a vector at an address that may not be
 * aligned". */
#define DEFINE_MICROKERNEL(T, V, NR, SUFFIX)                                        \
    /* rows_r: the tile's height, MR or 4 (see micro_body), a constant after   \
     * inlining. Rows from m to rows_r are read from A too: every caller hands  \
     * a partial sliver packed with zero rows up to MR. */                       \
    static inline __attribute__((always_inline)) void micro_tile_##SUFFIX(        \
        const int rows_r, int64_t kc, const T *a, int64_t a_rs, int64_t a_cs,       \
        const T *b, int64_t b_rs, const int64_t *b_rows, T *c, int64_t rs_c,       \
        int64_t cs_c, int64_t m, int64_t n, int accumulate)                         \
    {                                                                               \
        enum { VL = sizeof(V) / sizeof(T) };                                        \
        /* Ask for the C tile now: it arrives while the loop below runs. */         \
        for (int64_t i = 0; i < m; i++) {                                           \
            __builtin_prefetch(c + i * rs_c, 1);                                    \
            __builtin_prefetch(c + i * rs_c + (n - 1) * cs_c, 1);                   \
        }                                                                           \
        /* Zeroed one register at a time: memset(acc, ...) compiled to a            \
         * call into libc for every tile, 5% of a 128 x 128 product. */             \
        V acc[GEMM_MR][GEMM_NR_VECTORS];                                            \
        for (int i = 0; i < GEMM_MR; i++)                                           \
            for (int v = 0; v < GEMM_NR_VECTORS; v++) acc[i][v] = (V){0};           \
        for (int64_t p = 0; p < kc; p++) {                                          \
            V b0, b1; /* row p of the B sliver */                                   \
            const T *b_row = b_rows == NULL ? b : b + b_rows[p];                    \
            memcpy(&b0, b_row, sizeof b0);                                          \
            memcpy(&b1, b_row + VL, sizeof b1);                                     \
            for (int i = 0; i < rows_r; i++) {                                      \
                T ai = a[i * a_rs]; /* broadcast A[i, p] to a whole vector */       \
                acc[i][0] += ai * b0;                                               \
                acc[i][1] += ai * b1;                                               \
            }                                                                       \
            a += a_cs;                                                              \
            if (b_rows == NULL) b += b_rs;                                          \
        }                                                                           \
        if (n == NR && cs_c == 1) {                                                 \
            /* all NR columns over contiguous rows: whole vectors in and out.      \
             * Optimization (edge rows in whole vectors): a tile of fewer than MR  \
             * rows, as M = 16, 32 or 64 channels leave with AVX2's MR = 6, stores \
             * its rows as vectors like a full tile. */                            \
            for (int64_t i = 0; i < m; i++) {                                       \
                for (int v = 0; v < GEMM_NR_VECTORS; v++) {                         \
                    T *where = c + i * rs_c + v * VL;                               \
                    V value = acc[i][v];                                            \
                    if (accumulate) {                                               \
                        V old;                                                      \
                        memcpy(&old, where, sizeof old);                            \
                        value += old;                                               \
                    }                                                               \
                    memcpy(where, &value, sizeof value);                            \
                }                                                                   \
            }                                                                       \
        } else {                                                                    \
            /* an edge tile, or strided C: element by element */                   \
            T tile[GEMM_MR][NR];                                                    \
            memcpy(tile, acc, sizeof tile);                                         \
            for (int64_t i = 0; i < m; i++) {                                       \
                for (int64_t j = 0; j < n; j++) {                                   \
                    T *where = c + i * rs_c + j * cs_c;                             \
                    *where = accumulate ? *where + tile[i][j] : tile[i][j];         \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    }                                                                               \
    static inline __attribute__((always_inline)) void micro_body_##SUFFIX(        \
        int64_t kc, const T *a, int64_t a_rs, int64_t a_cs, const T *b,             \
        int64_t b_rs, const int64_t *b_rows, T *c, int64_t rs_c, int64_t cs_c,      \
        int64_t m, int64_t n, int accumulate)                                       \
    {                                                                               \
        /* Optimization (edge rows without padding): a sliver of fewer than MR     \
         * rows (M = 16, 32 or 64 channels leave 4, 2 and 4 with AVX2's MR = 6)    \
         * is not computed as MR rows, zeros included. The kernel is bound by its  \
         * loads (2 of B and one broadcast of A per row, each step), so: 1 or 2    \
         * rows go through edge_body (two rows, 4 loads a step), 3 or 4 through a  \
         * 4-row tile (6 loads a step), against 2 + MR loads for the full tile;    \
         * measured at AVX2, one thread: the 32-channel 16x16 convolutions 7%      \
         * faster, while 4 rows through edge_body (8 loads) ran 2% slower. */      \
        if (__builtin_expect(m > 4 || GEMM_MR <= 4, 1)) { /* the common case first */ \
            micro_tile_##SUFFIX(GEMM_MR, kc, a, a_rs, a_cs, b, b_rs, b_rows, c, rs_c,   \
                                cs_c, m, n, accumulate);                            \
        } else if (m <= 2) {                                                        \
            edge_body_##SUFFIX(m, kc, a, a_rs, a_cs, b, b_rs, b_rows, c, rs_c, cs_c, n, \
                               accumulate);                                         \
        } else {                                                                    \
            micro_tile_##SUFFIX(4, kc, a, a_rs, a_cs, b, b_rs, b_rows, c, rs_c, cs_c, m, \
                                n, accumulate);                                     \
        }                                                                           \
    }                                                                               \
    static void microkernel_##SUFFIX(int64_t kc, const void *a, const void *b,     \
                                     void *c, int64_t rs_c, int64_t cs_c,          \
                                     int64_t m, int64_t n, int accumulate)         \
    {                                                                               \
        micro_body_##SUFFIX(kc, (const T *)a, 1, GEMM_MR, (const T *)b, NR, NULL,  \
                            (T *)c, rs_c, cs_c, m, n, accumulate);                  \
    }                                                                               \
    static void microkernel_inplace_##SUFFIX(                                       \
        int64_t kc, const void *a, int64_t a_rs, int64_t a_cs, const void *b,       \
        int64_t b_rs, void *c, int64_t rs_c, int64_t cs_c, int64_t m, int64_t n,    \
        int accumulate)                                                             \
    {                                                                               \
        micro_body_##SUFFIX(kc, (const T *)a, a_rs, a_cs, (const T *)b, b_rs, NULL, \
                            (T *)c, rs_c, cs_c, m, n, accumulate);                  \
    }                                                                               \
    /* Row p of the B sliver at b + b_rows[p] (gt_gemm_rows); A in place. */       \
    static void microkernel_rows_##SUFFIX(int64_t kc, const void *a, int64_t a_rs,  \
                                          int64_t a_cs, const void *b,             \
                                          const int64_t *b_rows, void *c,          \
                                          int64_t rs_c, int64_t m, int64_t n,       \
                                          int accumulate)                          \
    {                                                                               \
        micro_body_##SUFFIX(kc, (const T *)a, a_rs, a_cs, (const T *)b, 0, b_rows,  \
                            (T *)c, rs_c, 1, m, n, accumulate);                     \
    }

/* The direct loop for small problems, over rows i0..i1 of C, in i-k-j
 * order: row i of C is zeroed, then row k of B scaled by A[i, k] is added to
 * it for each k. With contiguous rows the innermost loop is a unit-stride
 * "axpy" that GCC vectorises. */
#define DEFINE_DIRECT_FLOAT(T, SUFFIX)                                              \
    static void direct_##SUFFIX(const gemm_problem *p, int64_t i0, int64_t i1)    \
    {                                                                               \
        const T *restrict a = (const T *)p->a;                                      \
        const T *restrict b = (const T *)p->b;                                      \
        T *restrict c = (T *)p->c;                                                  \
        const int64_t n = p->n, k_size = p->k;                                      \
        const int64_t a_rs = p->a_rs, a_cs = p->a_cs, b_rs = p->b_rs;               \
        const int64_t b_cs = p->b_cs, c_rs = p->c_rs, c_cs = p->c_cs;               \
        for (int64_t i = i0; i < i1; i++) {                                         \
            T *restrict c_row = c + i * c_rs;                                       \
            if (!p->accumulate)                                                     \
                for (int64_t j = 0; j < n; j++) c_row[j * c_cs] = 0;                \
            for (int64_t k = 0; k < k_size; k++) {                                  \
                const T a_ik = a[i * a_rs + k * a_cs];                              \
                const T *restrict b_row = b + k * b_rs;                             \
                if (b_cs == 1 && c_cs == 1) {                                       \
                    for (int64_t j = 0; j < n; j++) c_row[j] += a_ik * b_row[j];    \
                } else {                                                            \
                    for (int64_t j = 0; j < n; j++)                                 \
                        c_row[j * c_cs] += a_ik * b_row[j * b_cs];                  \
                }                                                                   \
            }                                                                       \
        }                                                                           \
    }

#define GEMM_NR_FLOAT (GEMM_NR_VECTORS * GEMM_VECTOR_BYTES / 4)
#define GEMM_NR_DOUBLE (GEMM_NR_VECTORS * GEMM_VECTOR_BYTES / 8)

DEFINE_TRANSPOSE8(float, int32_t, f32)
DEFINE_PACK_EDGE(float, f32)
DEFINE_PACK_A(float, f32)
DEFINE_PACK_B(float, GEMM_NR_FLOAT, f32)
DEFINE_PACK_COLUMNS(float, GEMM_NR_FLOAT, f32)
DEFINE_EDGE_ROWS(float, gemm_vfloat, GEMM_NR_FLOAT, f32)
DEFINE_MICROKERNEL(float, gemm_vfloat, GEMM_NR_FLOAT, f32)
DEFINE_DIRECT_FLOAT(float, f32)

DEFINE_TRANSPOSE8(double, int64_t, f64)
DEFINE_PACK_EDGE(double, f64)
DEFINE_PACK_A(double, f64)
DEFINE_PACK_B(double, GEMM_NR_DOUBLE, f64)
DEFINE_PACK_COLUMNS(double, GEMM_NR_DOUBLE, f64)
DEFINE_EDGE_ROWS(double, gemm_vdouble, GEMM_NR_DOUBLE, f64)
DEFINE_MICROKERNEL(double, gemm_vdouble, GEMM_NR_DOUBLE, f64)
DEFINE_DIRECT_FLOAT(double, f64)

/* ------------------------------------------------------------------------
 * Integers and bool: a direct loop with 64-bit wrapping accumulation.
 *
 * Products and sums are taken in uint64_t, where overflow wraps (in signed
 * types it would be undefined behaviour). Truncating the 64-bit sum to 32 or 8
 * bits gives the same value as wrapping at every step, which is what the
 * reference tier's exact sum followed by a wrapping store gives. bool stores
 * `sum != 0`. The loop runs i-k-j over strips of up to GEMM_STRIP columns,
 * whose 64-bit sums live in a small array on the stack.
 * ------------------------------------------------------------------------ */
#define GEMM_STRIP 256

#define STORE_WRAP(T, sum) ((T)(sum))
#define STORE_BOOL(T, sum) ((T)((sum) != 0))

#define DEFINE_DIRECT_INTEGER(T, SUFFIX, STORE)                                     \
    static void direct_##SUFFIX(const gemm_problem *p, int64_t i0, int64_t i1)    \
    {                                                                               \
        const T *restrict a = (const T *)p->a;                                      \
        const T *restrict b = (const T *)p->b;                                      \
        T *restrict c = (T *)p->c;                                                  \
        const int64_t n = p->n, k_size = p->k;                                      \
        const int64_t a_rs = p->a_rs, a_cs = p->a_cs, b_rs = p->b_rs;               \
        const int64_t b_cs = p->b_cs, c_rs = p->c_rs, c_cs = p->c_cs;               \
        uint64_t sum[GEMM_STRIP];                                                   \
        for (int64_t i = i0; i < i1; i++) {                                         \
            for (int64_t j0 = 0; j0 < n; j0 += GEMM_STRIP) {                        \
                const int64_t width = min64(GEMM_STRIP, n - j0);                    \
                for (int64_t j = 0; j < width; j++) sum[j] = 0;                     \
                for (int64_t k = 0; k < k_size; k++) {                              \
                    const uint64_t a_ik = (uint64_t)(int64_t)a[i * a_rs + k * a_cs]; \
                    const T *b_row = b + k * b_rs + j0 * b_cs;                      \
                    for (int64_t j = 0; j < width; j++)                             \
                        sum[j] += a_ik * (uint64_t)(int64_t)b_row[j * b_cs];        \
                }                                                                   \
                for (int64_t j = 0; j < width; j++)                                 \
                    c[i * c_rs + (j0 + j) * c_cs] = STORE(T, sum[j]);               \
            }                                                                       \
        }                                                                           \
    }

DEFINE_DIRECT_INTEGER(uint8_t, bool, STORE_BOOL)
DEFINE_DIRECT_INTEGER(uint8_t, u8, STORE_WRAP)
DEFINE_DIRECT_INTEGER(int32_t, i32, STORE_WRAP)
DEFINE_DIRECT_INTEGER(int64_t, i64, STORE_WRAP)

/* ------------------------------------------------------------------------
 * The op table: what each dtype uses.
 * ------------------------------------------------------------------------ */
typedef void (*gemm_direct_fn)(const gemm_problem *p, int64_t i0, int64_t i1);
typedef void (*gemm_pack_fn)(int64_t kc, int64_t count, const void *src, int64_t rs,
                             int64_t cs, void *dst);
typedef void (*gemm_kernel_fn)(int64_t kc, const void *a, const void *b, void *c,
                               int64_t rs_c, int64_t cs_c, int64_t m, int64_t n,
                               int accumulate);
typedef void (*gemm_inplace_kernel_fn)(int64_t kc, const void *a, int64_t a_rs, int64_t a_cs,
                                       const void *b, int64_t b_rs, void *c, int64_t rs_c,
                                       int64_t cs_c, int64_t m, int64_t n, int accumulate);

typedef void (*gemm_rows_kernel_fn)(int64_t kc, const void *a, int64_t a_rs, int64_t a_cs,
                                    const void *b, const int64_t *b_rows, void *c,
                                    int64_t rs_c, int64_t m, int64_t n, int accumulate);

typedef void (*gemm_pack_columns_fn)(int64_t kc, int64_t cols, const void *src,
                                     const int64_t *starts, int64_t run, int64_t run_stride,
                                     void *dst);

typedef struct {
    int itemsize;
    gemm_direct_fn direct;
    /* The blocked path; NULL kernel means "direct loop only". */
    int64_t mr, nr;
    gemm_pack_fn pack_a, pack_b;
    gemm_kernel_fn kernel;
    gemm_inplace_kernel_fn kernel_inplace;
    gemm_rows_kernel_fn kernel_rows;
    gemm_pack_columns_fn pack_columns;
} gemm_kind;

static const gemm_kind GEMM_KINDS[] = {
    [GT_BOOL] = {1, direct_bool, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
    [GT_UINT8] = {1, direct_u8, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
    [GT_INT32] = {4, direct_i32, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
    [GT_INT64] = {8, direct_i64, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
    [GT_FLOAT32] = {4, direct_f32, GEMM_MR, GEMM_NR_FLOAT, pack_a_f32, pack_b_f32,
                    microkernel_f32, microkernel_inplace_f32, microkernel_rows_f32,
                    pack_columns_f32},
    [GT_FLOAT64] = {8, direct_f64, GEMM_MR, GEMM_NR_DOUBLE, pack_a_f64, pack_b_f64,
                    microkernel_f64, microkernel_inplace_f64, microkernel_rows_f64,
                    pack_columns_f64},
};

/* ------------------------------------------------------------------------
 * The blocked driver: the five loops, written once for every float type.
 * Pointers are char * and advance by index * stride * itemsize.
 * ------------------------------------------------------------------------ */

/* The packing buffers are allocated per call: glibc's malloc keeps large
 * freed blocks for reuse after the first one, so later calls cost no page
 * faults (measured: no difference from a buffer kept between calls), and
 * concurrent calls from Python threads (cffi releases the GIL) share nothing. */
static char *packing_buffer(int64_t bytes)
{
    return aligned_alloc(GEMM_ALIGN, (size_t)round_up(bytes > 0 ? bytes : 1, GEMM_ALIGN));
}

/* The depth of the KC blocks of a k-deep product: k cut into the fewest
 * blocks of at most GEMM_KC, all of about the same depth. K = 784 gives four
 * blocks of 196, not three of 256 and a last one of 16, whose micro-kernel
 * calls would spend as long loading and storing C as multiplying. */
static int64_t kc_depth(int64_t k)
{
    const int64_t blocks = (k + GEMM_KC - 1) / GEMM_KC;
    return (k + blocks - 1) / blocks;
}

/* The small path: pack all of A and all of B once, then share out tiles of C.
 *
 * When both packed operands fit in the caches (GEMM_PACK_ALL_BYTES), the five
 * loops' re-packing of blocks buys nothing, while their synchronisation costs
 * a lot on a problem of a tenth of a millisecond: two barriers per KC block,
 * each a moment where the faster thread waits (K = 784 has 4 KC blocks, so
 * 8 barriers). Here there is one:
 * 1. the threads pack A, MR rows by all of K at a time, and B, all of K by NR
 *    columns at a time, each thread an equal share of the slivers; a barrier
 *    then makes both whole;
 * 2. C is cut into tiles of at most MC rows, as many as there are threads or a
 *    multiple of it; each thread multiplies its equal share and returns with
 *    no barrier of its own (the end of the parallel region is one).
 * Both shares are handed out in order (static schedule), so that a thread
 * mostly multiplies slivers it packed itself, which are in its own L2: when M
 * is small (M = 128 is one MC block) the threads split C by columns, and each
 * packed the B slivers of its half; otherwise by rows, and each packed the A
 * slivers of its rows. (Handing tiles out dynamically measured 3-5% slower,
 * as half the slivers then come from the other core's cache.)
 * A tile runs the jr and ir loops for each KC block, so that its B sliver stays
 * in L1 and its rows of A in L2. A sliver packed over all of K holds every KC
 * block's sliver at an offset: column p of an A sliver starts at p * MR, row
 * p of a B sliver at p * NR.
 *
 * Returns 0 when it could not allocate its buffer (the caller then uses the
 * direct loop), 1 when C holds the product. */
static int gemm_small(const gemm_kind *kind, const gemm_problem *p, int nthreads)
{
    const int64_t m = p->m, n = p->n, k = p->k, size = kind->itemsize;
    const int64_t mr = kind->mr, nr = kind->nr;
    const char *a = (const char *)p->a, *b = (const char *)p->b;
    char *c = (char *)p->c;
    const int64_t m_slivers = (m + mr - 1) / mr, n_slivers = (n + nr - 1) / nr;
    const int64_t a_sliver_bytes = mr * k * size, b_sliver_bytes = nr * k * size;
    const int64_t a_bytes = round_up(m_slivers * a_sliver_bytes, GEMM_ALIGN);
    char *workspace = packing_buffer(a_bytes + n_slivers * b_sliver_bytes);
    if (workspace == NULL) return 0;
    char *a_packed = workspace, *b_packed = workspace + a_bytes;

    /* Tiles: rows in blocks of at most MC, then split by columns (M small,
     * and enough column slivers) or by more row blocks, to a multiple of the
     * thread count. */
    const int64_t mc_slivers = GEMM_MC >= mr ? GEMM_MC / mr : 1;
    int64_t row_tiles = (m_slivers + mc_slivers - 1) / mc_slivers, col_tiles = 1;
    if (row_tiles < nthreads && n_slivers >= nthreads) {
        col_tiles = (nthreads + row_tiles - 1) / row_tiles;
    } else {
        row_tiles = min64(round_up(row_tiles, nthreads), m_slivers);
    }
    const int64_t tiles = row_tiles * col_tiles, kc_max = kc_depth(k);

#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        /* 1. Pack: A slivers, then B slivers, in equal shares. No barrier
         * between the two loops (nowait); the one after B makes both whole. */
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < m_slivers; i++) {
            kind->pack_a(k, min64(mr, m - i * mr), a + i * mr * p->a_rs * size, p->a_rs, p->a_cs,
                         a_packed + i * a_sliver_bytes);
        }
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n_slivers; j++) {
            kind->pack_b(k, min64(nr, n - j * nr), b + j * nr * p->b_cs * size, p->b_rs, p->b_cs,
                         b_packed + j * b_sliver_bytes);
        }

        /* 2. Multiply, tile by tile. No barrier after the loop (nowait): the
         * end of the parallel region is one already. */
#pragma omp for schedule(static) nowait
        for (int64_t t = 0; t < tiles; t++) {
            const int64_t ti = t / col_tiles, tj = t % col_tiles;
            const int64_t i0 = ti * m_slivers / row_tiles, i1 = (ti + 1) * m_slivers / row_tiles;
            const int64_t j0 = tj * n_slivers / col_tiles, j1 = (tj + 1) * n_slivers / col_tiles;
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t kc = min64(kc_max, k - pc);
                for (int64_t js = j0; js < j1; js++) {
                    const char *b_sliver = b_packed + js * b_sliver_bytes + pc * nr * size;
                    for (int64_t is = i0; is < i1; is++) {
                        char *c_tile = c + (is * mr * p->c_rs + js * nr * p->c_cs) * size;
                        kind->kernel(kc, a_packed + is * a_sliver_bytes + pc * mr * size,
                                     b_sliver, c_tile, p->c_rs, p->c_cs,
                                     min64(mr, m - is * mr), min64(nr, n - js * nr),
                                     pc > 0 || p->accumulate);
                    }
                }
            }
        }
    }
    free(workspace);
    return 1;
}

/* The in-place path: operands read where they lie, not packed.
 *
 * Packing copies A and B once per product, which pays when each copy is used
 * many times. In the products a training step is made of it often is not: a
 * convolution tile (16 x 448 times 448 x 144), a recurrent step (32 x 256
 * times 256 x 1024, the 256 x 1024 weight packed again at each of 64 steps),
 * where the copy costs a third of the multiply-adds' time. The micro-kernel
 * only needs each row of a B sliver to be NR contiguous numbers (any distance
 * apart) and reads A one number at a time (any strides), so:
 * - A is read in place, except its last sliver when M is not a multiple of
 *   MR (packed, with the zero rows the kernel expects);
 * - B is read in place when its rows are contiguous (b_cs = 1), except its
 *   last sliver when N is not a multiple of NR; otherwise all of B is packed
 *   (gemm_blocked turns the product around when that makes the packed operand
 *   the smaller one).
 * Threads share out tiles of C as in gemm_small; only the packing (if any)
 * has a barrier after it. With `pack_all_b` B is packed whatever its strides
 * (A alone read in place: see gemm_blocked).
 *
 * Returns 0 when it could not allocate its buffer, 1 when C holds the product. */
static int gemm_inplace(const gemm_kind *kind, const gemm_problem *p, int nthreads,
                        int pack_all_b)
{
    const int64_t m = p->m, n = p->n, k = p->k, size = kind->itemsize;
    const int64_t mr = kind->mr, nr = kind->nr;
    const char *a = (const char *)p->a, *b = (const char *)p->b;
    char *c = (char *)p->c;
    const int64_t m_slivers = (m + mr - 1) / mr, n_slivers = (n + nr - 1) / nr;
    const int64_t m_full = m / mr, n_full = n / nr;
    const int b_inplace = p->b_cs == 1 && !pack_all_b;
    /* Packed: the partial A sliver (if any), then B's slivers from `b_first` on
     * (only the partial one when B is read in place). */
    const int64_t b_first = b_inplace ? n_full : 0;
    const int64_t a_sliver_bytes = mr * k * size, b_sliver_bytes = nr * k * size;
    const int64_t a_bytes = round_up(m_full < m_slivers ? a_sliver_bytes : 0, GEMM_ALIGN);
    const int64_t b_packed_count = n_slivers - b_first;
    char *workspace = packing_buffer(a_bytes + b_packed_count * b_sliver_bytes);
    if (workspace == NULL) return 0;
    char *a_edge = workspace, *b_packed = workspace + a_bytes;

    const int64_t mc_slivers = GEMM_MC >= mr ? GEMM_MC / mr : 1;
    int64_t row_tiles = (m_slivers + mc_slivers - 1) / mc_slivers, col_tiles = 1;
    if (row_tiles < nthreads && n_slivers >= nthreads) {
        col_tiles = (nthreads + row_tiles - 1) / row_tiles;
    } else {
        row_tiles = min64(round_up(row_tiles, nthreads), m_slivers);
    }
    const int64_t tiles = row_tiles * col_tiles, kc_max = kc_depth(k);
    const int pack_anything = m_full < m_slivers || b_packed_count > 0;

#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        if (pack_anything) {
#pragma omp single nowait
            if (m_full < m_slivers)
                kind->pack_a(k, m - m_full * mr, a + m_full * mr * p->a_rs * size, p->a_rs,
                             p->a_cs, a_edge);
#pragma omp for schedule(static)
            for (int64_t j = b_first; j < n_slivers; j++) {
                kind->pack_b(k, min64(nr, n - j * nr), b + j * nr * p->b_cs * size, p->b_rs,
                             p->b_cs, b_packed + (j - b_first) * b_sliver_bytes);
            }
        }
#pragma omp for schedule(static) nowait
        for (int64_t t = 0; t < tiles; t++) {
            const int64_t ti = t / col_tiles, tj = t % col_tiles;
            const int64_t i0 = ti * m_slivers / row_tiles, i1 = (ti + 1) * m_slivers / row_tiles;
            const int64_t j0 = tj * n_slivers / col_tiles, j1 = (tj + 1) * n_slivers / col_tiles;
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t kc = min64(kc_max, k - pc);
                for (int64_t js = j0; js < j1; js++) {
                    const char *b_sliver = js < b_first
                                               ? b + (js * nr + pc * p->b_rs) * size
                                               : b_packed + (js - b_first) * b_sliver_bytes +
                                                     pc * nr * size;
                    const int64_t b_rs = js < b_first ? p->b_rs : nr;
                    for (int64_t is = i0; is < i1; is++) {
                        char *c_tile = c + (is * mr * p->c_rs + js * nr * p->c_cs) * size;
                        const int in_place = is < m_full;
                        const char *a_sliver =
                            in_place ? a + (is * mr * p->a_rs + pc * p->a_cs) * size
                                     : a_edge + pc * mr * size;
                        kind->kernel_inplace(kc, a_sliver, in_place ? p->a_rs : 1,
                                             in_place ? p->a_cs : mr, b_sliver, b_rs, c_tile,
                                             p->c_rs, p->c_cs, min64(mr, m - is * mr),
                                             min64(nr, n - js * nr), pc > 0 || p->accumulate);
                    }
                }
            }
        }
    }
    free(workspace);
    return 1;
}

/* How many numbers the in-place path packs for problem p, or -1 when it
 * would read neither operand in place (A in place needs one unit stride, so
 * that its broadcasts walk along cache lines). */
static int64_t inplace_packed(const gemm_kind *kind, const gemm_problem *p)
{
    const int64_t mr = kind->mr, nr = kind->nr;
    if (p->a_cs != 1 && p->a_rs != 1) return -1;
    const int64_t a_count = p->m % mr ? mr * p->k : 0;
    const int64_t b_count = p->b_cs == 1 ? (p->n % nr ? nr * p->k : 0) : round_up(p->n, nr) * p->k;
    return a_count + b_count;
}

/* The large path: the five loops (see the top of the file). Returns 0 when it
 * could not allocate its buffers (the caller then uses the direct loop), 1 when
 * C holds the product.
 *
 * p2, when not NULL, is a second product with the same A (C2 = A B2 beside
 * C1 = A B1; p1->n a multiple of NR, so that no B sliver straddles the two).
 * Optimization (the shared operand read once): the loops then run over N =
 * n1 + n2 columns, the B panel being B1 and B2 side by side; each B sliver is
 * packed from, and each C tile stored to, the product it belongs to, and
 * every A block is packed once for both. An LSTM layer's weight gradients,
 * dW_ih = dG^T X and dW_hh = dG^T H_prev, share the transposed gate
 * gradients of the whole sequence (4H x T*B: 8 MiB at H = 256, T = 64,
 * B = 32): at AVX2, two threads, that layer's two weight gradients took
 * 8.98 ms this way against 9.45 as two products. Every element is summed as
 * alone (the same KC blocks, in order, by the same micro-kernel), so the bits
 * are those of the two products. */
static int gemm_large(const gemm_kind *kind, const gemm_problem *p1, const gemm_problem *p2,
                      int nthreads)
{
    const int64_t n1 = p1->n, n = n1 + (p2 != NULL ? p2->n : 0);
    const int64_t m = p1->m, k = p1->k, size = kind->itemsize;
    const int64_t mr = kind->mr, nr = kind->nr;
    const char *a = (const char *)p1->a;

    /* Blocks no larger than the problem. The M rows, counted in MR-tall
     * slivers, are cut into a multiple of nthreads blocks whose sizes differ by
     * at most one sliver and are at most GEMM_MC rows: every thread then gets
     * the same work (a thread that finishes early would wait at the barrier). */
    const int64_t kc_max = kc_depth(k);
    const int64_t nc_max = round_up(min64(GEMM_NC, n), nr);
    const int64_t m_slivers = (m + mr - 1) / mr;
    const int64_t slivers_per_block = GEMM_MC >= mr ? GEMM_MC / mr : 1;
    const int64_t m_blocks =
        round_up((m_slivers + slivers_per_block - 1) / slivers_per_block, nthreads);
    const int64_t mc_max = (m_slivers + m_blocks - 1) / m_blocks * mr;

    /* One workspace: the shared B panel, then one A block per thread. */
    const int64_t b_panel_bytes = round_up(kc_max * nc_max * size, GEMM_ALIGN);
    const int64_t a_block_bytes = round_up(kc_max * mc_max * size, GEMM_ALIGN);
    char *workspace = packing_buffer(b_panel_bytes + a_block_bytes * nthreads);
    if (workspace == NULL) return 0;
    char *b_panel = workspace, *a_blocks = workspace + b_panel_bytes;

#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
    {
        char *a_block = a_blocks + a_block_bytes * gt_thread_id();
        for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
            const int64_t nc = min64(GEMM_NC, n - jc);
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t kc = min64(kc_max, k - pc);

                /* All threads pack the B panel together, one sliver each in turn;
                 * the barrier at the end of the loop makes it whole before use.
                 * Column j of the panel is column jq of product q. */
#pragma omp for schedule(static)
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    const int64_t j = jc + jr;
                    const gemm_problem *q = j < n1 ? p1 : p2;
                    const int64_t jq = j < n1 ? j : j - n1;
                    kind->pack_b(kc, min64(nr, q->n - jq),
                                 (const char *)q->b + (pc * q->b_rs + jq * q->b_cs) * size,
                                 q->b_rs, q->b_cs, b_panel + jr * kc * size);
                }

                /* Each thread takes whole A blocks, packs one into its own buffer
                 * (which stays in its core's L2) and multiplies it by the panel.
                 * The barrier at the end keeps the panel until all are done. */
#pragma omp for schedule(dynamic, 1)
                for (int64_t block = 0; block < m_blocks; block++) {
                    const int64_t ic = block * m_slivers / m_blocks * mr;
                    const int64_t mc = min64((block + 1) * m_slivers / m_blocks * mr, m) - ic;
                    const char *a_from = a + (ic * p1->a_rs + pc * p1->a_cs) * size;
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        kind->pack_a(kc, min64(mr, mc - ir), a_from + ir * p1->a_rs * size,
                                     p1->a_rs, p1->a_cs, a_block + ir * kc * size);
                    }
                    for (int64_t jr = 0; jr < nc; jr += nr) {
                        const int64_t j = jc + jr;
                        const gemm_problem *q = j < n1 ? p1 : p2;
                        const int64_t jq = j < n1 ? j : j - n1;
                        for (int64_t ir = 0; ir < mc; ir += mr) {
                            char *c_tile =
                                (char *)q->c + ((ic + ir) * q->c_rs + jq * q->c_cs) * size;
                            kind->kernel(kc, a_block + ir * kc * size, b_panel + jr * kc * size,
                                         c_tile, q->c_rs, q->c_cs, min64(mr, mc - ir),
                                         min64(nr, q->n - jq), pc > 0 || q->accumulate);
                        }
                    }
                }
            }
        }
    }
    free(workspace);
    return 1;
}

/* The same product turned around: C = A B is also C^T = B^T A^T, and with
 * strided operands the turn is free (swap A and B, and the row and column
 * strides of each). */
static gemm_problem transposed(const gemm_problem *p)
{
    gemm_problem t = {p->n, p->m, p->k, p->b, p->b_cs, p->b_rs,
                      p->a, p->a_cs, p->a_rs, p->c, p->c_cs, p->c_rs, p->accumulate};
    return t;
}

/* The blocked path: small problems pack everything once or read their
 * operands in place (gemm_inplace), large ones go through the five loops.
 *
 * The register tile rounds M up to a multiple of MR (8) and N up to one of NR
 * (32): a product with 10 columns, such as a classifier's last layer, would
 * compute 32 columns and keep 10. Turned around, it computes 16 rows and
 * keeps 10, half the work. It is turned when that saves at least a quarter
 * of the work, as C is then stored element by element, not in whole vectors
 * (measured: 128 x 256 times 256 x 10, median 19.7 us -> 12.1 us at two
 * threads). */
static int gemm_blocked(const gemm_kind *kind, const gemm_problem *p, int nthreads)
{
    const int64_t mr = kind->mr, nr = kind->nr;
    const int64_t padded = round_up(p->m, mr) * round_up(p->n, nr);
    const int64_t padded_turned = round_up(p->n, mr) * round_up(p->m, nr);
    const gemm_problem turned = transposed(p);
    const int turn = 4 * padded_turned <= 3 * padded;
    const gemm_problem q = turn ? turned : *p;
    const int64_t packed_bytes = (round_up(q.m, mr) + round_up(q.n, nr)) * q.k * kind->itemsize;
    if (packed_bytes > GEMM_PACK_ALL_BYTES) return gemm_large(kind, &q, NULL, nthreads);
    if (p->m * p->n * p->k > GEMM_INPLACE_MAX) {
        /* Optimization (a row-major A read in place, B packed): in a training
         * step A is usually a fresh activation of many rows (1024 x 512 in a
         * GPT-mini MLP) and B a small weight. Packing all of A reads it from
         * L3 or memory, writes a copy as large and reads that again, for
         * only N / NR uses of each number; read in place (six or eight rows
         * side by side, each walked along its cache lines) it is read once.
         * B, reused by every row sliver, is still packed whole, so that its
         * slivers are contiguous (read in place, rows 2 KiB apart fall into
         * a few L1 sets). Measured in a GPT-mini step at AVX2 (2 threads):
         * 1024 x 512 times 512 x 128 670 -> 555 us; an A whose columns are
         * contiguous (a weight gradient's grad^T) stays packed, which
         * measured faster. The sums run in the same order: same bits. */
        if (!turn && p->a_cs == 1) return gemm_inplace(kind, p, nthreads, 1);
        return gemm_small(kind, &q, nthreads);
    }
    /* Optimization (read in place): a small product runs packed (gemm_small)
     * or in place (gemm_inplace), either way round, whichever is cheapest when
     * priced as its multiply-adds (padded to whole tiles) plus GEMM_PACK_COST
     * per number packed. */
    const int64_t packed_cost = (turn ? padded_turned : padded) * p->k +
                                GEMM_PACK_COST * (packed_bytes / kind->itemsize);
    const int64_t own = inplace_packed(kind, p), other = inplace_packed(kind, &turned);
    const int64_t own_cost = own < 0 ? -1 : padded * p->k + GEMM_PACK_COST * own;
    const int64_t other_cost = other < 0 ? -1 : padded_turned * p->k + GEMM_PACK_COST * other;
    if (own_cost >= 0 && own_cost < packed_cost && (other_cost < 0 || own_cost <= other_cost))
        return gemm_inplace(kind, p, nthreads, 0);
    if (other_cost >= 0 && other_cost < packed_cost)
        return gemm_inplace(kind, &turned, nthreads, 0);
    return gemm_small(kind, &q, nthreads);
}

/* ------------------------------------------------------------------------
 * The entry point: walk the batch, solve each 2-D problem.
 * ------------------------------------------------------------------------ */

static int gemm_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* The 2-D problem of batch entry `index` (row-major over out's batch dims).
 * a and b have as many batch dims as out (the frontend broadcast them); if one
 * has fewer, its dims line up with out's last ones. */
static gemm_problem batch_problem(const gt_view *out, const gt_view *a, const gt_view *b,
                                  int64_t index, int itemsize)
{
    const int batch_dims = out->ndim - 2;
    int64_t pos_out = out->offset, pos_a = a->offset, pos_b = b->offset;
    for (int d = batch_dims - 1; d >= 0; d--) {
        const int64_t i = index % out->shape[d];
        index /= out->shape[d];
        pos_out += i * out->strides[d];
        const int da = d - (out->ndim - a->ndim), db = d - (out->ndim - b->ndim);
        if (da >= 0) pos_a += i * a->strides[da];
        if (db >= 0) pos_b += i * b->strides[db];
    }
    gemm_problem p;
    p.m = out->shape[out->ndim - 2];
    p.n = out->shape[out->ndim - 1];
    p.k = a->shape[a->ndim - 1];
    p.a = a->data + pos_a * itemsize;
    p.a_rs = a->strides[a->ndim - 2];
    p.a_cs = a->strides[a->ndim - 1];
    p.b = b->data + pos_b * itemsize;
    p.b_rs = b->strides[b->ndim - 2];
    p.b_cs = b->strides[b->ndim - 1];
    p.c = out->data + pos_out * itemsize;
    p.c_rs = out->strides[out->ndim - 2];
    p.c_cs = out->strides[out->ndim - 1];
    p.accumulate = 0;
    return p;
}

/* One 2-D problem on up to `nthreads` threads: blocked when big enough. */
static void gemm_2d(const gemm_kind *kind, const gemm_problem *p, int nthreads)
{
    const int64_t work = p->m * p->n * p->k;
    if (work < GEMM_PARALLEL_MIN) nthreads = 1;
    /* The blocked path packs all of B for every MR rows of A: with fewer than
     * MR / 2 rows (a vector times a matrix) the direct loop is faster. */
    const int blocked = kind->kernel != NULL && work >= GEMM_BLOCKED_MIN && p->m >= GEMM_MR / 2;
    if (blocked && gemm_blocked(kind, p, nthreads)) return;
    if (nthreads == 1) {
        kind->direct(p, 0, p->m);
        return;
    }
    /* The direct loop, its rows split evenly between the threads. */
#pragma omp parallel for num_threads(nthreads)
    for (int t = 0; t < nthreads; t++) {
        kind->direct(p, t * p->m / nthreads, (t + 1) * p->m / nthreads);
    }
}

void gt_matmul(const gt_view *out, const gt_view *a, const gt_view *b)
{
    const gemm_kind *kind = &GEMM_KINDS[out->dtype];
    int64_t batches = 1;
    for (int d = 0; d < out->ndim - 2; d++) batches *= out->shape[d];
    if (batches == 0 || gt_numel(out) == 0) return;

    const int64_t work = out->shape[out->ndim - 2] * out->shape[out->ndim - 1] *
                         a->shape[a->ndim - 1];
    const int threads = gemm_max_threads();

    if (batches >= threads && threads > 1 && batches * work >= GEMM_PARALLEL_MIN) {
        /* Enough batch entries to go round: one whole problem per thread. */
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (int64_t index = 0; index < batches; index++) {
            gemm_problem p = batch_problem(out, a, b, index, kind->itemsize);
            gemm_2d(kind, &p, 1);
        }
    } else {
        /* Few entries: each problem uses the threads itself. */
        for (int64_t index = 0; index < batches; index++) {
            gemm_problem p = batch_problem(out, a, b, index, kind->itemsize);
            gemm_2d(kind, &p, threads);
        }
    }
}

void gt_gemm(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
             int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs, void *c, int64_t c_rs,
             int64_t c_cs, int accumulate, int nthreads)
{
    if (m == 0 || n == 0) return;
    const gemm_kind *kind = &GEMM_KINDS[dtype]; /* k = 0 takes the direct loop: zeros */
    gemm_problem p = {m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, c_rs, c_cs, accumulate};
    gemm_2d(kind, &p, nthreads < 1 ? 1 : nthreads);
}

/* ------------------------------------------------------------------------
 * Two products that share A: C1 = A B1 and C2 = A B2 in one pass (see
 * gemm_large's p2).
 * ------------------------------------------------------------------------ */
void gt_gemm_shared_a(int dtype, int64_t m, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                      int64_t n1, const void *b1, int64_t b1_rs, int64_t b1_cs, void *c1,
                      int64_t c1_rs, int64_t n2, const void *b2, int64_t b2_rs, int64_t b2_cs,
                      void *c2, int64_t c2_rs)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    const gemm_problem p1 = {m, n1, k, a, a_rs, a_cs, b1, b1_rs, b1_cs, c1, c1_rs, 1, 0};
    const gemm_problem p2 = {m, n2, k, a, a_rs, a_cs, b2, b2_rs, b2_cs, c2, c2_rs, 1, 0};
    const int nthreads = gemm_max_threads();
    /* One pass where each product on its own would take the five loops (its
     * packed operands past GEMM_PACK_ALL_BYTES), and no B sliver would
     * straddle the two; otherwise the two products, each its own way. */
    if (kind->kernel != NULL && m > 0 && n1 > 0 && n2 > 0 && k > 0 && n1 % kind->nr == 0) {
        const int64_t a_packed = round_up(m, kind->mr) * k * kind->itemsize;
        const int64_t b_packed = round_up(n1 < n2 ? n1 : n2, kind->nr) * k * kind->itemsize;
        if (a_packed + b_packed > GEMM_PACK_ALL_BYTES &&
            gemm_large(kind, &p1, &p2, nthreads))
            return;
    }
    if (m > 0 && n1 > 0) gemm_2d(kind, &p1, nthreads);
    if (m > 0 && n2 > 0) gemm_2d(kind, &p2, nthreads);
}

/* ------------------------------------------------------------------------
 * A product whose B rows lie anywhere: row p of B is the n numbers at
 * b + b_rows[p] (elements). The stride-1 convolution reads its im2col matrix
 * this way straight out of the padded input (see conv.c), without writing it.
 * ------------------------------------------------------------------------ */
int gt_gemm_rows(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
                 int64_t a_cs, const void *b, const int64_t *b_rows, void *c, int64_t c_rs,
                 int accumulate)
{
    return gt_gemm_rows_pieces(dtype, m, 1, n, 0, 0, k, a, a_rs, a_cs, b, b_rows, c, c_rs,
                               accumulate);
}

/* Optimization (no padding columns): the convolution's wide grid computes
 * each output row as wide as the padded input (wp columns for ow real ones),
 * 1/8 more columns than needed for a 16 x 16 image (wp = 18). When ow is a
 * multiple of NR the column slivers can follow the output rows instead: the
 * n = pieces x width columns of C and of B's rows come in pieces of `width`
 * contiguous numbers, b_piece apart in B's rows and c_piece apart in C. */
int gt_gemm_rows_pieces(int dtype, int64_t m, int64_t pieces, int64_t width, int64_t b_piece,
                        int64_t c_piece, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                        const void *b, const int64_t *b_rows, void *c, int64_t c_rs,
                        int accumulate)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    if (m == 0 || width == 0 || pieces == 0) return 0;
    if (kind->kernel_rows == NULL) return -1;
    const int64_t size = kind->itemsize, mr = kind->mr, nr = kind->nr, n = width;
    if (pieces > 1 && width % nr) return -1; /* pieces hold whole slivers only */
    const int64_t m_slivers = (m + mr - 1) / mr, m_full = m / mr, n_full = n / nr;
    const int64_t per_piece = (n + nr - 1) / nr;
    /* A is read in place (as in gemm_inplace), except a last sliver of fewer
     * than MR rows, packed with zero rows; so is the last sliver of B, fewer
     * than NR columns (its rows would otherwise be read past their end). */
    const int64_t a_bytes = round_up(m_full < m_slivers ? mr * k * size : 0, GEMM_ALIGN);
    char *workspace = packing_buffer(a_bytes + (n % nr ? nr * k * size : 0));
    if (workspace == NULL) return -2;
    char *a_edge = workspace, *b_edge = workspace + a_bytes;
    if (m_full < m_slivers)
        kind->pack_a(k, m - m_full * mr, (const char *)a + m_full * mr * a_rs * size, a_rs, a_cs,
                     a_edge);
    if (n % nr) {
        const int64_t cols = n - n_full * nr;
        for (int64_t p = 0; p < k; p++) {
            char *dst = b_edge + p * nr * size;
            memcpy(dst, (const char *)b + (b_rows[p] + n_full * nr) * size, (size_t)(cols * size));
            memset(dst + cols * size, 0, (size_t)((nr - cols) * size));
        }
    }
    /* Column slivers outside, row slivers inside: the B sliver's rows (a few
     * input rows of every channel) stay in L1 for all of A's slivers. */
    char *cc = (char *)c;
    for (int64_t js = 0; js < pieces * per_piece; js++) {
        const int64_t piece = js / per_piece, jw = js % per_piece;
        const int64_t b_col = piece * b_piece + jw * nr, c_col = piece * c_piece + jw * nr;
        for (int64_t is = 0; is < m_slivers; is++) {
            char *c_tile = cc + (is * mr * c_rs + c_col) * size;
            const int in_place = is < m_full;
            const char *a_sliver = in_place ? (const char *)a + is * mr * a_rs * size : a_edge;
            const int64_t rs = in_place ? a_rs : 1, cs = in_place ? a_cs : mr;
            const int64_t rows = min64(mr, m - is * mr);
            if (jw < n_full)
                kind->kernel_rows(k, a_sliver, rs, cs, (const char *)b + b_col * size, b_rows,
                                  c_tile, c_rs, rows, nr, accumulate);
            else
                kind->kernel_inplace(k, a_sliver, rs, cs, b_edge, nr, c_tile, c_rs, 1, rows,
                                     n - jw * nr, accumulate);
        }
    }
    free(workspace);
    return 0;
}

/* ------------------------------------------------------------------------
 * A product whose B columns lie anywhere: column j of B starts at
 * b + b_cols[j] and runs in pieces of `run` contiguous numbers, `run_stride`
 * apart. The stride-1 convolution's weight gradient reads its transposed
 * im2col matrix this way out of the padded input (see conv.c): each piece
 * is one output row's stretch of an input row.
 * ------------------------------------------------------------------------ */
int gt_gemm_cols(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
                 int64_t a_cs, const void *b, const int64_t *b_cols, int64_t run,
                 int64_t run_stride, void *c, int64_t c_rs, int accumulate)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    if (m == 0 || n == 0) return 0;
    if (kind->pack_columns == NULL || run <= 0 || k % run) return -1;
    const int64_t size = kind->itemsize, mr = kind->mr, nr = kind->nr;
    const int64_t m_slivers = (m + mr - 1) / mr, m_full = m / mr;
    /* KC blocks of whole pieces. */
    const int64_t kc_max = run * (kc_depth(k) / run > 0 ? kc_depth(k) / run : 1);
    /* One packed B sliver (KC x NR) at a time, multiplied by every row sliver
     * of A while it is in L1; A read in place except a last partial sliver. */
    const int64_t a_bytes = round_up(m_full < m_slivers ? mr * k * size : 0, GEMM_ALIGN);
    char *workspace = packing_buffer(a_bytes + kc_max * nr * size);
    if (workspace == NULL) return -2;
    char *a_edge = workspace, *b_sliver = workspace + a_bytes;
    if (m_full < m_slivers)
        kind->pack_a(k, m - m_full * mr, (const char *)a + m_full * mr * a_rs * size, a_rs, a_cs,
                     a_edge);
    char *cc = (char *)c;
    for (int64_t pc = 0; pc < k; pc += kc_max) {
        const int64_t kc = min64(kc_max, k - pc);
        const char *b_block = (const char *)b + pc / run * run_stride * size;
        for (int64_t js = 0; js * nr < n; js++) {
            const int64_t cols = min64(nr, n - js * nr);
            kind->pack_columns(kc, cols, b_block, b_cols + js * nr, run, run_stride, b_sliver);
            for (int64_t is = 0; is < m_slivers; is++) {
                const int in_place = is < m_full;
                const char *a_sliver = in_place
                                           ? (const char *)a + (is * mr * a_rs + pc * a_cs) * size
                                           : a_edge + pc * mr * size;
                kind->kernel_inplace(kc, a_sliver, in_place ? a_rs : 1, in_place ? a_cs : mr,
                                     b_sliver, nr, cc + (is * mr * c_rs + js * nr) * size, c_rs, 1,
                                     min64(mr, m - is * mr), cols, pc > 0 || accumulate);
            }
        }
    }
    free(workspace);
    return 0;
}

int64_t gt_gemm_tile_columns(int dtype)
{
    return GEMM_KINDS[dtype].nr;
}

/* ------------------------------------------------------------------------
 * A prepacked B: packed once, multiplied by many A.
 *
 * Optimization (prepacked weights, the idea behind BLAS's sgemm_pack and
 * oneDNN's reordered weights): a recurrent layer multiplies one weight matrix
 * by a new, small A (the batch's hidden state) at each of its time steps.
 * Packed at every step, the weight (256 x 1024 floats for a 256-unit LSTM)
 * is copied 64 times per sequence; read in place, its rows lie 4 KiB apart
 * and a B sliver's rows all fall into the same few L1 cache sets. Packed
 * once into the micro-kernel's slivers (all of K deep, NR columns wide, one
 * after the other: the layout gemm_small uses), every step reads it as one
 * contiguous stream; the caller packs the slivers each of its threads will
 * use by that thread, so they sit in its core's L2 for the whole sequence.
 * ------------------------------------------------------------------------ */
int64_t gt_gemm_packed_b_bytes(int dtype, int64_t k, int64_t n)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    if (kind->kernel == NULL) return -1;
    return round_up(n, kind->nr) * k * kind->itemsize;
}

void gt_gemm_pack_b(int dtype, int64_t k, int64_t n, const void *b, int64_t b_rs, int64_t b_cs,
                    int64_t j0, int64_t j1, void *packed)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    const int64_t size = kind->itemsize, nr = kind->nr;
    for (int64_t j = j0; j < j1; j += nr) {
        kind->pack_b(k, min64(nr, n - j), (const char *)b + j * b_cs * size, b_rs, b_cs,
                     (char *)packed + j * k * size);
    }
}

void gt_gemm_packed_b(int dtype, int64_t m, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                      const void *packed, int64_t n, int64_t j0, int64_t j1, void *c, int64_t c_rs,
                      int accumulate)
{
    const gemm_kind *kind = &GEMM_KINDS[dtype];
    const int64_t size = kind->itemsize, mr = kind->mr, nr = kind->nr;
    if (m == 0 || j0 >= j1) return;
    const int64_t m_slivers = (m + mr - 1) / mr, m_full = m / mr;
    const char *aa = (const char *)a, *bb = (const char *)packed;
    char *cc = (char *)c;
    if (k == 0) { /* C = A B is zeros (or C stays as it is) */
        for (int64_t i = 0; i < m && !accumulate; i++)
            memset(cc + (i * c_rs + j0) * size, 0, (size_t)((min64(j1, n) - j0) * size));
        return;
    }
    /* A is read in place (as in gemm_inplace); rows past its last whole
     * sliver go through edge_rows_any, not through a sliver padded with zero rows.
     * Optimization (no KC blocks): each micro-kernel call runs the whole depth
     * K. B's slivers are packed whole and stream from L2 either way, so
     * blocking K would only load and store each C tile more often (the LSTM
     * backward's product, K = 1024, ran 4% faster than in blocks of 256). */
    /* Optimization (6 + 2 rows as two 4-row tiles): with AVX2's MR = 6, a
     * batch of 32 leaves 2 rows past the last whole sliver. The edge-rows body
     * keeps only 4 chains of multiply-adds in flight for them, and waits on
     * their latency; the last whole sliver and those 2 rows run instead as two
     * 4-row tiles (8 chains each, and fewer loads than 6 + 2). Every number is
     * still summed over p in one chain, so the bits do not change. */
    const int64_t rest = m - m_full * mr;
    const int two_fours = mr == 6 && rest == 2 && m_full > 0;
    const int64_t whole = two_fours ? m_full - 1 : m_full;
    for (int64_t j = j0; j < j1; j += nr) {
        const char *b_sliver = bb + j * k * size;
        const int64_t cols = min64(nr, n - j);
        for (int64_t is = 0; is < whole; is++) {
            kind->kernel_inplace(k, aa + is * mr * a_rs * size, a_rs, a_cs, b_sliver, nr,
                                 cc + (is * mr * c_rs + j) * size, c_rs, 1, mr, cols, accumulate);
        }
        if (two_fours) {
            for (int64_t i = whole * mr; i < m; i += 4)
                kind->kernel_inplace(k, aa + i * a_rs * size, a_rs, a_cs, b_sliver, nr,
                                     cc + (i * c_rs + j) * size, c_rs, 1, 4, cols, accumulate);
        } else if (m_full < m_slivers) {
            (dtype == GT_FLOAT32 ? edge_rows_any_f32 : edge_rows_any_f64)(
                rest, k, aa + m_full * mr * a_rs * size, a_rs, a_cs, b_sliver,
                cc + (m_full * mr * c_rs + j) * size, c_rs, cols, accumulate);
        }
    }
}

/* ------------------------------------------------------------------------
 * The products of causal attention (the contract's causal_matmul).
 *
 * Optimization (skip what the causal mask makes zero): with the mask "key
 * position j <= query position i", the scores Q K^T are needed only on and
 * below the diagonal, and the attention weights P are zero above it, so
 * P V needs for row i only the terms k <= i (and P^T dO only k >= i). In a
 * GPT-mini head (64 x 64, head size 32) that leaves out about 40% of every
 * attention product's micro-kernel calls: whole C tiles above the diagonal
 * for "out", and for "a" / "a_transposed" the part of each tile's K range
 * that its rows' mask zeroes. Each tile runs the same micro-kernel over the
 * same KC blocks as gt_matmul, its K range clipped, so every output number
 * is summed in gt_matmul's order with only zero terms left out: the same
 * bits for finite inputs. Each batch entry (one head of one sequence) runs on
 * one thread, the entries shared out in equal runs, in order.
 * Optimization (the same thread for the same heads): in a training step the
 * kernels before these (the QKV projection's product, split by rows; the
 * attention softmax, split by rows) leave the first half of the heads in
 * the first core's L2 and the second half in the second's. A static split
 * hands each thread the heads its core just wrote; handed out dynamically
 * (gt_matmul's batch loop), half of them came from the other core: in a
 * GPT-mini step at AVX2 the 24 products took 3.7-4.3 ms against 2.9.
 * ------------------------------------------------------------------------ */
enum { CAUSAL_OUT = 0, CAUSAL_A = 1, CAUSAL_A_TRANSPOSED = 2 };

/* Zero C[i, j] for the tile's rows i < rows and columns j < cols, only where
 * j0 + j > i0 + i when `upper_only`: one memset per row when C's rows are
 * contiguous. */
static void zero_tile(char *c, int64_t c_rs, int64_t c_cs, int64_t size, int64_t rows,
                      int64_t cols, int upper_only, int64_t i0, int64_t j0)
{
    for (int64_t i = 0; i < rows; i++) {
        /* the first column to zero in row i */
        const int64_t from = upper_only ? (i0 + i + 1 - j0 > 0 ? i0 + i + 1 - j0 : 0) : 0;
        if (from >= cols) continue;
        if (c_cs == 1) {
            memset(c + (i * c_rs + from) * size, 0, (size_t)((cols - from) * size));
        } else {
            for (int64_t j = from; j < cols; j++)
                memset(c + (i * c_rs + j * c_cs) * size, 0, (size_t)size);
        }
    }
}

/* One 2-D causal product on the calling thread; 0 when out of memory.
 * Operands are read in place as gemm_inplace reads them (A with a unit
 * stride, B with contiguous rows), the rest packed: a partial last sliver of
 * A, and B's slivers when its rows are not contiguous or not a whole NR
 * wide (K^T and V^T in attention are packed, Q, K, V and the weights not). */
static int causal_2d(const gemm_kind *kind, const gemm_problem *p, int triangle)
{
    const int64_t m = p->m, n = p->n, k = p->k, size = kind->itemsize;
    const int64_t mr = kind->mr, nr = kind->nr;
    char *c = (char *)p->c;
    if (k == 0) { /* every sum is empty */
        zero_tile(c, p->c_rs, p->c_cs, size, m, n, 0, 0, 0);
        return 1;
    }
    const int64_t m_slivers = (m + mr - 1) / mr, n_slivers = (n + nr - 1) / nr;
    const int a_inplace = p->a_cs == 1 || p->a_rs == 1, b_inplace = p->b_cs == 1;
    /* In place: A's whole slivers, B's whole slivers (when its rows are contiguous). */
    const int64_t a_first = a_inplace ? m / mr : 0, b_first = b_inplace ? n / nr : 0;
    const int64_t a_sliver_bytes = mr * k * size, b_sliver_bytes = nr * k * size;
    const int64_t a_bytes = round_up((m_slivers - a_first) * a_sliver_bytes, GEMM_ALIGN);
    char *workspace = packing_buffer(a_bytes + (n_slivers - b_first) * b_sliver_bytes);
    if (workspace == NULL) return 0;
    char *a_packed = workspace, *b_packed = workspace + a_bytes;
    const char *a = (const char *)p->a, *b = (const char *)p->b;
    for (int64_t i = a_first; i < m_slivers; i++)
        kind->pack_a(k, min64(mr, m - i * mr), a + i * mr * p->a_rs * size, p->a_rs, p->a_cs,
                     a_packed + (i - a_first) * a_sliver_bytes);
    for (int64_t j = b_first; j < n_slivers; j++)
        kind->pack_b(k, min64(nr, n - j * nr), b + j * nr * p->b_cs * size, p->b_rs, p->b_cs,
                     b_packed + (j - b_first) * b_sliver_bytes);
    const int64_t kc_max = kc_depth(k);
    for (int64_t is = 0; is < m_slivers; is++) {
        const int64_t i0 = is * mr, rows = min64(mr, m - i0), i_last = i0 + rows - 1;
        /* The K range the tile's rows can have non-zero terms in. */
        const int64_t k0 = triangle == CAUSAL_A_TRANSPOSED ? min64(i0, k) : 0;
        const int64_t k1 = triangle == CAUSAL_A ? min64(i_last + 1, k) : k;
        const int a_here = is < a_first; /* this sliver read in place */
        const char *a_sliver = a_here ? a + i0 * p->a_rs * size
                                      : a_packed + (is - a_first) * a_sliver_bytes;
        const int64_t a_rs = a_here ? p->a_rs : 1, a_cs = a_here ? p->a_cs : mr;
        for (int64_t js = 0; js < n_slivers; js++) {
            const int64_t j0 = js * nr, cols = min64(nr, n - j0);
            char *c_tile = c + (i0 * p->c_rs + j0 * p->c_cs) * size;
            if (triangle == CAUSAL_OUT && j0 > i_last) { /* above the diagonal: zeros */
                zero_tile(c_tile, p->c_rs, p->c_cs, size, rows, cols, 0, 0, 0);
                continue;
            }
            const int b_here = js < b_first;
            const char *b_sliver = b_here ? b + j0 * size
                                          : b_packed + (js - b_first) * b_sliver_bytes;
            const int64_t b_rs = b_here ? p->b_rs : nr;
            int first = 1;
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t lo = pc > k0 ? pc : k0, hi = min64(pc + kc_max, k1);
                if (lo >= hi) continue;
                kind->kernel_inplace(hi - lo, a_sliver + lo * a_cs * size, a_rs, a_cs,
                                     b_sliver + lo * b_rs * size, b_rs, c_tile, p->c_rs,
                                     p->c_cs, rows, cols, !first);
                first = 0;
            }
            if (first) /* an empty range: every sum is 0 */
                zero_tile(c_tile, p->c_rs, p->c_cs, size, rows, cols, 0, 0, 0);
            else if (triangle == CAUSAL_OUT && j0 + cols - 1 > i0) /* across the diagonal */
                zero_tile(c_tile, p->c_rs, p->c_cs, size, rows, cols, 1, i0, j0);
        }
    }
    free(workspace);
    return 1;
}

int gt_causal_matmul(const gt_view *out, const gt_view *a, const gt_view *b, int triangle)
{
    const gemm_kind *kind = &GEMM_KINDS[out->dtype];
    if (kind->kernel == NULL || a->dtype != out->dtype || b->dtype != out->dtype) return -1;
    if (triangle < CAUSAL_OUT || triangle > CAUSAL_A_TRANSPOSED) return -1;
    int64_t batches = 1;
    for (int d = 0; d < out->ndim - 2; d++) batches *= out->shape[d];
    if (batches == 0 || gt_numel(out) == 0) return 0;
    const int threads = gemm_max_threads();
    int failed = 0;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && batches > 1) \
    reduction(| : failed)
    for (int64_t index = 0; index < batches; index++) {
        gemm_problem p = batch_problem(out, a, b, index, kind->itemsize);
        failed |= !causal_2d(kind, &p, triangle);
    }
    return failed ? -2 : 0;
}
