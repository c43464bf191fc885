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
/* cffi-end */

#endif /* GT_GEMM_H */
