/* glasstorch fast tier: the C functions exported to Python through cffi.
 *
 * The block between cffi-begin and cffi-end is what fast/build.py hands to
 * cffi; each kernel family has a header of its own laid out the same way.
 */
#ifndef GLASSTORCH_FAST_H
#define GLASSTORCH_FAST_H

/* Bumped whenever a kernel's C signature changes, so Python can refuse an
 * extension built from older sources instead of calling it wrongly. */
#define GT_ABI_VERSION 5

/* cffi-begin */
/* version.c: facts about this build. */
int gt_abi_version(void);
int gt_openmp_enabled(void);
/* cffi-end */

#endif /* GLASSTORCH_FAST_H */
