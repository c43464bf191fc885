/* threads.c: how many threads the kernels use, and how that survives fork().
 *
 * The kernels split large loops with OpenMP (`#pragma omp parallel`). GCC's
 * OpenMP runtime, libgomp, keeps a pool of worker threads per thread that
 * starts parallel regions, and reuses it from one region to the next. fork()
 * copies only the calling thread into the child: the child inherits the pool's
 * bookkeeping ("3 workers, waiting at this barrier") but not the workers. Its
 * next parallel region waits at that barrier for workers that do not exist,
 * forever. libgomp has no fork handler of its own, so a glasstorch kernel in a
 * fork()ed child (a DataLoader worker, a multiprocessing.Process with the fork
 * start method, a plain os.fork) hung once the parent had run a multi-threaded
 * kernel.
 *
 * The fix is a pthread_atfork handler, registered when the extension loads:
 *
 *   before fork (in the parent, in the thread that forks): hand the calling
 *     thread's pool back with omp_pause_resource_all (OpenMP 5.0, libgomp
 *     since GCC 9). Its workers are idle (the thread is in Python, not inside a
 *     kernel), so they just exit; the child inherits no pool, and its first
 *     parallel region builds a fresh one. The parent's next parallel region
 *     builds a fresh pool too. Measured here (2 cores, a 256x256 product):
 *     os.fork took 0.80 ms with the handler, 0.92 ms without; the first
 *     product after a fork 0.15 ms, as without it (0.08 ms steady): the cost
 *     is lost in the noise of fork itself.
 *
 * So a forked child keeps the parent's thread count (the forking thread's
 * setting, or OMP_NUM_THREADS / the number of cores), and set_num_threads works
 * in it as in any process. Only the forking thread's pool matters: the child
 * has no other thread, and a thread it starts later gets a pool of its own.
 *
 *   after fork, in the child: if the pool could not be handed back (libgomp
 *     refuses while the forking thread is inside a parallel region, which
 *     glasstorch's kernels never fork from), the child runs one thread from
 *     then on. A parallel region of one thread does not touch the pool
 *     (checked with
 *     GCC 12's libgomp: a one-thread region in such a child returns), and set_num_threads
 *     can no longer raise the count in that child, since the pool's workers
 *     cannot be brought back.
 *
 * DataLoader workers choose one thread themselves (set_num_threads(1) at
 * worker start, as PyTorch's do), so that N workers do not share the cores
 * N times over.
 */
#include "threads.h"

#ifdef _OPENMP
#include <omp.h>
#include <pthread.h>

/* Whether the forking thread's pool was handed back before the last fork.
 * Written by the prepare handler in the forking thread and read by the child
 * handler in the same thread, so it is per thread: two threads may fork at once. */
static __thread int pool_released_before_fork = 1;

/* Set in a child whose inherited pool is broken: kernels there use one thread. */
static int pool_lost_in_fork = 0;

static void release_pool_before_fork(void)
{
    pool_released_before_fork = omp_pause_resource_all(omp_pause_soft) == 0;
}

static void single_thread_if_pool_lost(void)
{
    if (!pool_released_before_fork) {
        pool_lost_in_fork = 1;
        omp_set_num_threads(1);
    }
}

/* Runs when the extension is loaded, before any kernel. */
__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(release_pool_before_fork, NULL, single_thread_if_pool_lost);
}
#endif

/* Parallel loops started from the calling thread use up to n threads from now
 * on (n >= 1). Without OpenMP there is one thread, whatever n is; in a child
 * that lost its pool in fork (see above) there is one too. */
void gt_set_num_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(pool_lost_in_fork ? 1 : n);
#else
    (void)n;
#endif
}

/* How many threads an OpenMP parallel loop started from the calling thread
 * would use right now: what set_num_threads set, else the value of
 * OMP_NUM_THREADS, else the number of cores. 1 without OpenMP. */
int gt_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
