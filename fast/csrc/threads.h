/* threads.h: the fast tier's thread count, and OpenMP across fork() (see threads.c). */
#ifndef GT_THREADS_H
#define GT_THREADS_H

/* cffi-begin */
/* threads.c: how many threads the kernels use. */
int gt_max_threads(void);
void gt_set_num_threads(int n);
/* cffi-end */

#endif /* GT_THREADS_H */
