/* random.h: Philox 4x32-10 and the random kernels built on it.
 *
 * Bit-identical to reference/random.py: the same key (the 64-bit seed), the
 * same block numbers (offset + ...), the same words of each block for each
 * element, the same float formulas evaluated in double in the same order.
 */
#ifndef GT_RANDOM_H
#define GT_RANDOM_H

#include "gt_common.h"

/* cffi-begin */
/* The four 32-bit words of counter block `block` under key `seed`. */
void gt_philox_block(uint64_t seed, uint64_t block, uint32_t *words);
/* Uniform numbers in [low, high); ceil(numel / 4) blocks from `offset`. */
int gt_random_uniform(gt_view *out, uint64_t seed, uint64_t offset, double low, double high);
/* Normal numbers by Box-Muller; ceil(numel / 2) blocks from `offset`. */
int gt_random_normal(gt_view *out, uint64_t seed, uint64_t offset, double mean, double std);
/* low + x % span, for x a random 64-bit number; span == 0 means 2^64.
 * ceil(numel / 2) blocks from `offset`. */
int gt_random_integers(gt_view *out, uint64_t seed, uint64_t offset, int64_t low, uint64_t span);
/* A Fisher-Yates permutation of 0 .. n-1 into the 1-D int64 `out`. */
int gt_randperm(gt_view *out, uint64_t seed, uint64_t offset);
/* cffi-end */

#endif /* GT_RANDOM_H */
