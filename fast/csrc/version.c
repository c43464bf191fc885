/* version.c: facts about how the fast tier was built.
 *
 * The kernels live one family per file (elementwise.c, reductions.c, gemm.c,
 * random.c, ...). These functions let Python check that the extension it
 * loaded matches its sources and whether OpenMP is on. The thread count is in
 * threads.c.
 */
#include "glasstorch_fast.h"

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
