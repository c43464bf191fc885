/* gt_cuda_sim_runtime.h - the CUDA simulator's runtime: device memory, streams,
 * events and the block scheduler, as a small C API.
 *
 * The simulator runs CUDA kernels on the CPU (see gt_cuda_sim.h for the kernel
 * side and for how a block's threads run). This file is the host side, a
 * miniature of the CUDA runtime API:
 *
 *   device memory  gt_sim_malloc / gt_sim_free / gt_sim_mem_get_info: a fixed
 *                  arena (1 GiB, or GLASSTORCH_SIM_MEMORY=<bytes>), first fit;
 *                  gt_sim_malloc returns NULL when it is full.
 *   streams        gt_sim_stream_create: a worker thread running a FIFO queue of
 *                  launches, copies and event records in order, so the host
 *                  runs ahead. NULL means the default stream (which, unlike
 *                  CUDA's legacy default stream, does not wait for the others).
 *   events         record on a stream, query, synchronize, elapsed time (host
 *                  clock), and gt_sim_stream_wait_event.
 *   launches       gt_sim_enqueue puts any task on a stream; gt_sim_run_grid
 *                  runs a kernel body over a grid (called by the launch template
 *                  in gt_cuda_sim.h, on the stream's worker thread).
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
int gt_sim_stream_query(gt_sim_stream *stream); /* 1 when its queue is empty and idle */
void gt_sim_device_synchronize(void);
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
float gt_sim_event_elapsed_ms(gt_sim_event *start, gt_sim_event *end);
void gt_sim_stream_wait_event(gt_sim_stream *stream, gt_sim_event *event);

/* ---- kernels ---- */
/* Run body(args) once per thread of the grid (called on a stream's worker). */
void gt_sim_run_grid(gt_sim_dim3 grid, gt_sim_dim3 block, void (*body)(void *), void *args);
/* The last launch error as text ("" when none), cleared by reading. */
const char *gt_sim_last_error(void);

/* ---- used by the kernel-side header ---- */
const gt_sim_thread_info *gt_sim_self(void);
void gt_sim_syncthreads(void);
/* Warp exchange: store this lane's 8 bytes, wait for the warp, return its 32 slots. */
const uint64_t *gt_sim_warp_exchange(uint64_t value);
void gt_sim_warp_done(void); /* second half: wait until every lane has read */

#ifdef __cplusplus
}
#endif

#endif /* GT_CUDA_SIM_RUNTIME_H */
