/* gemm.h: batched matrix multiplication (the contract's `matmul`).
 *
 * The idea behind the code, and the block sizes it uses, are explained at the
 * top of gemm.c.
 */
#ifndef GT_GEMM_H
#define GT_GEMM_H

#include "gt_common.h"

/* cffi-begin */
/* out[..., i, j] = sum_k a[..., i, k] * b[..., k, j], for every batch index.
 * out is (*batch, M, N), a is (*batch, M, K), b is (*batch, K, N), all of one
 * dtype, with any strides (0 for broadcast batch dimensions). K = 0 gives 0. */
void gt_matmul(const gt_view *out, const gt_view *a, const gt_view *b);
/* The products of causal attention (the contract's causal_matmul): triangle
 * 0 computes out only on and below the diagonal (zeros above), 1 takes a as
 * zero above its diagonal, 2 as zero below it. 0 on success, -1 for a dtype
 * or triangle it does not take, -2 when out of memory. */
int gt_causal_matmul(const gt_view *out, const gt_view *a, const gt_view *b, int triangle);
/* cffi-end */

/* For other C kernels (convolution): one 2-D product C (m x n) = A (m x k) B
 * (k x n), or C += A B with `accumulate`, float32 or float64 (`dtype` is a
 * GT_* code), operands given by pointer to element (0, 0) and row and column
 * strides in elements. Runs on up to `nthreads` threads (1 inside a parallel
 * region of the caller). */
void gt_gemm(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
             int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs, void *c, int64_t c_rs,
             int64_t c_cs, int accumulate, int nthreads);

/* C1 (m x n1, row stride c1_rs, unit column stride) = A B1 and C2 (m x n2,
 * row stride c2_rs) = A B2, with A (m x k) shared (read and packed once for
 * both when they are large), B1 (k x n1) and B2 (k x n2) of any strides.
 * float32 or float64 only; all threads (not inside a parallel region). */
void gt_gemm_shared_a(int dtype, int64_t m, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                      int64_t n1, const void *b1, int64_t b1_rs, int64_t b1_cs, void *c1,
                      int64_t c1_rs, int64_t n2, const void *b2, int64_t b2_rs, int64_t b2_cs,
                      void *c2, int64_t c2_rs);

/* C (m x n, row stride c_rs) = A B (or += with `accumulate`) where row p of
 * B is the n contiguous numbers at b + b_rows[p] elements: a matrix given by
 * where its rows start, as the stride-1 convolution finds its im2col rows in
 * the padded input. One thread; float32 or float64 (else -1); -2 when out of
 * memory, 0 when done. */
int gt_gemm_rows(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
                 int64_t a_cs, const void *b, const int64_t *b_rows, void *c, int64_t c_rs,
                 int accumulate);

/* gt_gemm_rows over n = pieces x width columns that come in pieces of
 * `width` contiguous numbers, b_piece apart in B's rows and c_piece apart in
 * C (gt_gemm_rows is one piece). More than one piece needs width to be a
 * multiple of gt_gemm_tile_columns(dtype) (else -1). */
int gt_gemm_rows_pieces(int dtype, int64_t m, int64_t pieces, int64_t width, int64_t b_piece,
                        int64_t c_piece, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                        const void *b, const int64_t *b_rows, void *c, int64_t c_rs,
                        int accumulate);

/* C (m x n, row stride c_rs) = A B (or += with `accumulate`) where column j
 * of B starts at b + b_cols[j] elements and runs in pieces of `run`
 * contiguous numbers, `run_stride` apart (k a multiple of run): as the
 * stride-1 convolution's weight gradient finds its transposed im2col matrix
 * in the padded input, one output row's stretch of an input row a piece.
 * One thread; float32 or float64 (else -1); -2 when out of memory, 0 when
 * done. */
int gt_gemm_cols(int dtype, int64_t m, int64_t n, int64_t k, const void *a, int64_t a_rs,
                 int64_t a_cs, const void *b, const int64_t *b_cols, int64_t run,
                 int64_t run_stride, void *c, int64_t c_rs, int accumulate);

/* A prepacked B (for a weight multiplied by a new A at every step of a
 * recurrent layer). gt_gemm_packed_b_bytes: the size of B (k x n, float32 or
 * float64; -1 for other dtypes) packed. gt_gemm_pack_b: packs columns j0 .. j1
 * of B (j0 a multiple of NR, j1 one or n; element (p, j) at b + p * b_rs +
 * j * b_cs) into their place in `packed`. gt_gemm_packed_b: columns j0 .. j1
 * of C (m x n, row stride c_rs, unit column stride) = A B (or += with
 * `accumulate`), B packed there. One thread each (callers run them inside
 * their own parallel regions). */
int64_t gt_gemm_packed_b_bytes(int dtype, int64_t k, int64_t n);
void gt_gemm_pack_b(int dtype, int64_t k, int64_t n, const void *b, int64_t b_rs, int64_t b_cs,
                    int64_t j0, int64_t j1, void *packed);
void gt_gemm_packed_b(int dtype, int64_t m, int64_t k, const void *a, int64_t a_rs, int64_t a_cs,
                      const void *packed, int64_t n, int64_t j0, int64_t j1, void *c, int64_t c_rs,
                      int accumulate);

/* NR, the columns of C one micro-kernel call computes (products are padded
 * to whole tiles of NR columns and MR rows). */
int64_t gt_gemm_tile_columns(int dtype);

#endif /* GT_GEMM_H */
