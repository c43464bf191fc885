/* version.c: facts about how the fast tier was built.
 *
 * The kernels live one family per file (elementwise.c, reductions.c, gemm.c,
 * random.c, ...). These functions let Python check that the extension it
 * loaded matches its sources and whether OpenMP is on.
 */
#include "glasstorch_fast.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* The ABI version the extension was compiled with (GT_ABI_VERSION). */
int gt_abi_version(void) { return GT_ABI_VERSION; }

/* 1 when compiled with OpenMP (-fopenmp), 0 otherwise. */
int gt_openmp_enabled(void)
{
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* Parallel loops started from the calling thread use up to n threads from now
 * on (n >= 1). Without OpenMP there is one thread, whatever n is. */
void gt_set_num_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* How many threads an OpenMP parallel loop would use right now: the value of
 * OMP_NUM_THREADS if set, else the number of cores. 1 without OpenMP. */
int gt_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
