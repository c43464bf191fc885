/* heap.c: keep freed tensor memory in the heap (a speed trick of the fast tier).
 *
 * Every tensor's storage is a NumPy array, and NumPy gets its memory from
 * malloc. glibc's malloc gives large freed blocks back to the operating
 * system: blocks above the "mmap threshold" are unmapped when freed, and free
 * memory at the top of the heap beyond the "trim threshold" is returned. A
 * training step frees and allocates the same few megabytes of activations and
 * gradients over and over, so each new tensor then starts on fresh pages, and
 * the kernel must fault in and zero every 4 KiB page on first touch: measured
 * here, 4,500 page faults and 11 ms of system time per GPT-mini step (about a
 * fifth of the step), 6,500 and 17 ms per ResNet-20 step.
 *
 * The idea is PyTorch's caching allocator (and jemalloc's and tcmalloc's,
 * which PyTorch users preload for the same reason) in its simplest form: keep
 * freed memory for the next allocation. Two glibc settings do it:
 *
 *   M_MMAP_THRESHOLD  blocks under this size come from the heap, so they are
 *                     reused when freed (glibc raises this threshold by itself,
 *                     up to 32 MiB, but only after the first large block has
 *                     been freed; setting it fixes it there from the start);
 *   M_TRIM_THRESHOLD  the heap keeps up to this much free memory at its top
 *                     before it returns any to the system.
 *
 * With both, the steps above make almost no page faults and run 5-10% faster.
 * The cost is memory: up to keep_bytes of freed memory stays with the
 * process (it shows in its resident size) until it is allocated again. The
 * setting covers the whole process (NumPy's other arrays too); the fast tier
 * applies it when it loads, unless GLASSTORCH_KEEP_FREED_MEMORY=0.
 */
#include "heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Blocks under this size come from the heap: glibc's own upper bound for its
 * adaptive threshold on 64-bit systems. */
#define GT_HEAP_BLOCK_MAX (32 << 20)

int gt_keep_freed_memory(int64_t keep_bytes)
{
#if defined(__GLIBC__)
    if (keep_bytes < 0) return 0;
    if (keep_bytes > (int64_t)1 << 30) keep_bytes = (int64_t)1 << 30; /* an int, at most 1 GiB */
    return mallopt(M_MMAP_THRESHOLD, GT_HEAP_BLOCK_MAX) == 1 &&
           mallopt(M_TRIM_THRESHOLD, (int)keep_bytes) == 1;
#else
    (void)keep_bytes;
    return 0;
#endif
}
