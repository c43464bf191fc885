/* heap.h: how the C library's allocator keeps freed memory (see heap.c). */
#ifndef GT_HEAP_H
#define GT_HEAP_H

#include <stdint.h>

/* cffi-begin */
/* Keep freed blocks of up to `keep_bytes` in the process heap for reuse,
 * instead of handing them back to the operating system. Returns 1 when the
 * C library took the settings (glibc), 0 where it has no such knobs. */
int gt_keep_freed_memory(int64_t keep_bytes);
/* cffi-end */

#endif /* GT_HEAP_H */
