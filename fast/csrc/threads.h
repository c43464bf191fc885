/* threads.h: the fast tier's thread count, and OpenMP across fork() (see threads.c). */
#ifndef GT_THREADS_H
#define GT_THREADS_H

/* cffi-begin */
/* threads.c: how many threads the kernels use. */
int gt_max_threads(void);
void gt_set_num_threads(int n);
/* cffi-end */

#ifdef _OPENMP
#include <omp.h>
#endif

/* This thread's number in its team, and the team's size, inside a parallel
 * region (OpenMP may give fewer threads than asked for, as inside another
 * parallel region); 0 and 1 in a build without OpenMP. */
static inline int gt_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int gt_team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

#endif /* GT_THREADS_H */
