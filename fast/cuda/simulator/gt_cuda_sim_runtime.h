/* gt_cuda_sim_runtime.h - the CUDA simulator's runtime: device memory, streams,
 * events and the block scheduler, as a small C API.
 *
 * The simulator runs CUDA kernels on the CPU (see gt_cuda_sim.h for the kernel
 * side and for how a block's threads run). This file is the host side, a
 * miniature of the CUDA runtime API:
 *
 *   device memory  gt_sim_malloc / gt_sim_free / gt_sim_mem_get_info: a fixed
 *                  arena (1 GiB, or GLASSTORCH_SIM_MEMORY=<bytes>), first fit;
 *                  gt_sim_malloc returns NULL when it is full; gt_sim_free waits
 *                  for every stream first, as cudaFree does.
 *   streams        gt_sim_stream_create: a worker thread running a FIFO queue of
 *                  launches, copies and event records in order, so the host
 *                  runs ahead. NULL means the default stream (which, unlike
 *                  CUDA's legacy default stream, does not wait for the others).
 *   events         record on a stream, query, synchronize, elapsed time (host
 *                  clock), and gt_sim_stream_wait_event.
 *   launches       gt_sim_enqueue puts any task on a stream; gt_sim_run_grid
 *                  runs a kernel body over a grid (called by the launch template
 *                  in gt_cuda_sim.h, on the stream's worker thread), checks
 *                  CUDA's launch limits, and records the first error of a
 *                  launch (a fault, a deadlock, a sanitizer report) for the
 *                  next synchronize to raise (gt_sim_take_error).
 *   the sanitizer  kernels compiled with -DGT_SIM_CHECK (and the compiler's
 *                  address and bounds instrumentation) call back into the
 *                  runtime at every memory access; see "Checks" in
 *                  gt_cuda_sim_runtime.c.
 */
#ifndef GT_CUDA_SIM_RUNTIME_H
#define GT_CUDA_SIM_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_sim_stream gt_sim_stream;
typedef struct gt_sim_event gt_sim_event;

/* A 3-component size as in CUDA (dim3 / uint3). */
typedef struct {
    unsigned int x, y, z;
} gt_sim_dim3;

/* The checks a launch asks for (GLASSTORCH_SIM_CHECK), as bits. */
#define GT_SIM_MEMCHECK 1u
#define GT_SIM_RACECHECK 2u
#define GT_SIM_SYNCCHECK 4u
#define GT_SIM_INITCHECK 8u

/* CUDA's limits (compute capability 9.0), checked at every launch. */
#define GT_SIM_MAX_THREADS_PER_BLOCK 1024u
#define GT_SIM_MAX_STATIC_SHARED (48u * 1024u)  /* per block, without an opt-in */
#define GT_SIM_MAX_SHARED_OPTIN (227u * 1024u) /* static + dynamic, the device's limit */

/* The allocations a launch's pointer arguments came from, when the caller knows them. */
#define GT_SIM_MAX_EXTENTS 64

typedef struct {
    const char *kernel; /* the kernel's name */
    unsigned checks;    /* GT_SIM_* bits; 0 for a kernel built without checks */
    unsigned long long dynamic_shared; /* bytes of extern __shared__ memory per block */
    int nextents;                      /* how many (base, size) pairs follow */
    unsigned long long extents[2 * GT_SIM_MAX_EXTENTS];
} gt_sim_launch_config;

/* What went wrong in a launch, for the host to raise (fields empty when unknown). */
#define GT_SIM_ERROR_LAUNCH 1    /* an invalid configuration, too many resources */
#define GT_SIM_ERROR_MEMCHECK 2  /* an invalid memory access */
#define GT_SIM_ERROR_RACECHECK 3 /* a shared-memory hazard between two barriers */
#define GT_SIM_ERROR_SYNCCHECK 4 /* a divergent barrier, a bad mask, a deadlock */
#define GT_SIM_ERROR_INITCHECK 5 /* a read of memory never written */
#define GT_SIM_ERROR_FAULT 6     /* a signal: segfault, division by zero, stack overflow */
#define GT_SIM_ERROR_INTERRUPT 7 /* stopped by gt_sim_interrupt (Ctrl-C on the host) */

typedef struct {
    int kind;             /* GT_SIM_ERROR_*, 0 when there was no error */
    char what[200];       /* "Invalid __global__ write of size 4 bytes" */
    char detail[400];     /* "address 0x... is 0 bytes past the end of a 4096-byte allocation ..." */
    char kernel[128];     /* the kernel's name */
    int has_thread;       /* whether block and thread below are known */
    unsigned block[3], thread[3];
    char file[256];       /* the source position, when the instrumentation knew it */
    unsigned line;
    char object[512];     /* else the code address, for addr2line: the library ... */
    unsigned long long pc; /* ... and the offset in it (0: unknown) */
} gt_sim_error;

/* What a simulated thread knows about itself; gt_sim_self() returns the running one's. */
typedef struct {
    gt_sim_dim3 thread_idx, block_idx, block_dim, grid_dim;
    unsigned int linear_tid; /* threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * z) */
} gt_sim_thread_info;

/* ---- device memory ---- */
void *gt_sim_malloc(size_t nbytes);
void gt_sim_free(void *ptr);
void gt_sim_mem_get_info(size_t *free_bytes, size_t *total_bytes);

/* ---- streams ---- */
gt_sim_stream *gt_sim_stream_create(void);
void gt_sim_stream_destroy(gt_sim_stream *stream);
void gt_sim_stream_synchronize(gt_sim_stream *stream);
/* Wait at most timeout_ms; 1 when the stream is idle (the host polls, so Ctrl-C works). */
int gt_sim_stream_wait(gt_sim_stream *stream, int timeout_ms);
int gt_sim_stream_query(gt_sim_stream *stream); /* 1 when its queue is empty and idle */
void gt_sim_device_synchronize(void);
int gt_sim_device_wait(int timeout_ms); /* 1 when every stream is idle */
/* Stop the running kernels (and skip queued ones) until gt_sim_interrupt(0). */
void gt_sim_interrupt(int on);
/* Queue fn(data) on the stream. When fn returns, the worker calls done(data) (if not
 * NULL) under the stream's lock, as the task's last act: keep done() short. */
void gt_sim_enqueue(gt_sim_stream *stream, void (*fn)(void *), void *data, void (*done)(void *));
void gt_sim_memcpy_async(void *dst, const void *src, size_t nbytes, gt_sim_stream *stream);
/* Host to device from pageable memory: the source is staged at once (the host may reuse it). */
void gt_sim_memcpy_h2d_async(void *dst, const void *src, size_t nbytes, gt_sim_stream *stream);
void gt_sim_memset_async(void *dst, int value, size_t nbytes, gt_sim_stream *stream);

/* ---- events ---- */
gt_sim_event *gt_sim_event_create(void);
void gt_sim_event_destroy(gt_sim_event *event);
void gt_sim_event_record(gt_sim_event *event, gt_sim_stream *stream);
int gt_sim_event_query(gt_sim_event *event); /* 1 when complete (or never recorded) */
void gt_sim_event_synchronize(gt_sim_event *event);
int gt_sim_event_wait(gt_sim_event *event, int timeout_ms); /* 1 when complete */
float gt_sim_event_elapsed_ms(gt_sim_event *start, gt_sim_event *end);
void gt_sim_stream_wait_event(gt_sim_stream *stream, gt_sim_event *event);

/* ---- kernels ---- */
/* CUDA's launch limits: "" when grid, block and shared memory are valid, else CUDA's error. */
const char *gt_sim_check_config(gt_sim_dim3 grid, gt_sim_dim3 block,
                                unsigned long long dynamic_shared);
/* Run body(args) once per thread of the grid (called on a stream's worker). */
void gt_sim_run_grid(gt_sim_dim3 grid, gt_sim_dim3 block, const gt_sim_launch_config *config,
                     void (*body)(void *), void *args);
/* Take the first error recorded since the last call: 1 (and *out filled) or 0. */
int gt_sim_take_error(gt_sim_error *out);
/* The caching allocator hands out [ptr, ptr + nbytes) for use on `stream`: once the
 * stream gets there, its contents are undefined and memcheck knows its size. */
void gt_sim_note_allocation(void *ptr, size_t nbytes, gt_sim_stream *stream);

/* ---- used by the kernel-side header ---- */
const gt_sim_thread_info *gt_sim_self(void);
void gt_sim_syncthreads(const char *file, unsigned line);
/* Warp exchange among the lanes of `mask`: store this lane's 8 bytes, wait for those
 * lanes, return the warp's 32 slots; gt_sim_warp_done waits until they have all read. */
const uint64_t *gt_sim_warp_exchange(uint64_t value, unsigned mask, const char *what,
                                     const char *file, unsigned line);
void gt_sim_warp_done(unsigned mask);
/* The block's extern __shared__ memory. */
void *gt_sim_dynamic_shared_memory(void);
/* A __shared__ variable's declaration ran: the first time in a block, its memory is
 * filled with a poison pattern (0xff bytes: NaN as a float) and its checks start. */
void gt_sim_shared_declared(void *address, size_t nbytes, const char *name);
/* An atomic read-modify-write of nbytes at address (checked by memcheck, never a race). */
void gt_sim_atomic_access(const void *address, size_t nbytes, const char *file, unsigned line);

#ifdef __cplusplus
}
#endif

#endif /* GT_CUDA_SIM_RUNTIME_H */
