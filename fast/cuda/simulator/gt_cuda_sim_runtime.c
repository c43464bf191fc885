/* gt_cuda_sim_runtime.c - the CUDA simulator's runtime (API in gt_cuda_sim_runtime.h).
 *
 * Three parts, each self-contained:
 *
 * 1. Device memory: one arena reserved with mmap at first use, handed out
 *    first fit from an address-sorted list of free ranges, merged on free.
 * 2. Streams and events: a stream is a worker thread with a FIFO queue of
 *    tasks. The host enqueues and returns at once; the worker runs the tasks in
 *    order. An event carries two counters: how many times it was recorded and
 *    how many of those records a stream has reached. It is complete when they
 *    are equal.
 * 3. The block scheduler (see gt_cuda_sim.h for why this design): a block's
 *    threads are coroutines on the worker's OS thread. The scheduler
 *    resumes them round-robin; a thread runs until it waits at a barrier
 *    (__syncthreads, or a warp shuffle) or returns. A waiting thread is skipped
 *    until the barrier's generation counter moves on. A round in which no
 *    thread can run is a deadlock (a __syncthreads some threads never reach):
 *    the launch is abandoned and the error is reported.
 */
#define _GNU_SOURCE
/* The coroutines switch stacks with _setjmp/_longjmp; the fortified longjmp
 * refuses to jump to another stack, so fortification is off in this file. */
#undef _FORTIFY_SOURCE
#include "gt_cuda_sim_runtime.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

/* =============================================================== device memory */

#define ARENA_ALIGN 256 /* cudaMalloc returns 256-byte aligned addresses */
#define DEFAULT_ARENA_BYTES ((size_t)1 << 30)

typedef struct range {
    size_t offset, size;
    struct range *next;
} range;

static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_arena;
static size_t g_arena_size;
static range *g_free_ranges; /* sorted by offset, never adjacent */
static range *g_used_ranges; /* unsorted */

static void arena_init_locked(void) {
    if (g_arena) return;
    const char *env = getenv("GLASSTORCH_SIM_MEMORY");
    size_t size = env ? (size_t)strtoull(env, NULL, 10) : DEFAULT_ARENA_BYTES;
    if (size < ARENA_ALIGN) size = ARENA_ALIGN;
    size -= size % ARENA_ALIGN;
    /* NORESERVE: pages cost nothing until a kernel touches them. */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "gt_cuda_sim: cannot reserve %zu bytes of device memory\n", size);
        abort();
    }
    g_arena = p;
    g_arena_size = size;
    g_free_ranges = malloc(sizeof(range));
    *g_free_ranges = (range){0, size, NULL};
}

void *gt_sim_malloc(size_t nbytes) {
    size_t size = (nbytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (size == 0) size = ARENA_ALIGN;
    pthread_mutex_lock(&g_mem_lock);
    arena_init_locked();
    void *result = NULL;
    for (range **link = &g_free_ranges; *link; link = &(*link)->next) {
        range *r = *link;
        if (r->size < size) continue;
        range *used = malloc(sizeof(range));
        *used = (range){r->offset, size, g_used_ranges};
        g_used_ranges = used;
        result = g_arena + r->offset;
        r->offset += size;
        r->size -= size;
        if (r->size == 0) {
            *link = r->next;
            free(r);
        }
        break;
    }
    pthread_mutex_unlock(&g_mem_lock);
    return result;
}

void gt_sim_free(void *ptr) {
    if (!ptr) return;
    pthread_mutex_lock(&g_mem_lock);
    size_t offset = (size_t)((char *)ptr - g_arena);
    range **link = &g_used_ranges;
    while (*link && (*link)->offset != offset) link = &(*link)->next;
    if (!*link) {
        pthread_mutex_unlock(&g_mem_lock);
        fprintf(stderr, "gt_cuda_sim: gt_sim_free(%p): not an allocation\n", ptr);
        return;
    }
    range *r = *link;
    *link = r->next;
    /* Insert in address order, then merge with the neighbours that touch it. */
    range *prev = NULL, *next = g_free_ranges;
    while (next && next->offset < r->offset) prev = next, next = next->next;
    r->next = next;
    if (prev) prev->next = r;
    else g_free_ranges = r;
    if (next && r->offset + r->size == next->offset) {
        r->size += next->size;
        r->next = next->next;
        free(next);
    }
    if (prev && prev->offset + prev->size == r->offset) {
        prev->size += r->size;
        prev->next = r->next;
        free(r);
    }
    pthread_mutex_unlock(&g_mem_lock);
}

void gt_sim_mem_get_info(size_t *free_bytes, size_t *total_bytes) {
    pthread_mutex_lock(&g_mem_lock);
    arena_init_locked();
    size_t total_free = 0;
    for (range *r = g_free_ranges; r; r = r->next) total_free += r->size;
    *free_bytes = total_free;
    *total_bytes = g_arena_size;
    pthread_mutex_unlock(&g_mem_lock);
}

/* =============================================================== streams */

typedef struct task {
    void (*fn)(void *);
    void *data;
    void (*done)(void *);
    struct task *next;
} task;

struct gt_sim_stream {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a task arrived, or stop */
    pthread_cond_t idle; /* the queue ran empty */
    task *head, *tail;
    int busy, stop;
    gt_sim_stream *next_stream; /* in g_streams */
};

static pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static gt_sim_stream *g_streams;
static gt_sim_stream *g_default_stream;

static void *stream_worker(void *arg) {
    gt_sim_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->wake, &s->lock);
        if (!s->head) break; /* stop requested and nothing left */
        task *t = s->head;
        s->head = t->next;
        if (!s->head) s->tail = NULL;
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);
        t->fn(t->data);
        pthread_mutex_lock(&s->lock);
        /* The task ends here, atomically for an observer holding the stream's lock:
         * done() (which completes an event) and busy = 0 happen together, so
         * once an event recorded last completes, the stream is idle too. */
        s->busy = 0;
        if (t->done) t->done(t->data);
        free(t);
        if (!s->head) pthread_cond_broadcast(&s->idle);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

gt_sim_stream *gt_sim_stream_create(void) {
    gt_sim_stream *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_create(&s->thread, NULL, stream_worker, s);
    pthread_mutex_lock(&g_streams_lock);
    s->next_stream = g_streams;
    g_streams = s;
    pthread_mutex_unlock(&g_streams_lock);
    return s;
}

static gt_sim_stream *resolve(gt_sim_stream *stream) {
    if (stream) return stream;
    pthread_mutex_lock(&g_streams_lock);
    int create = g_default_stream == NULL;
    pthread_mutex_unlock(&g_streams_lock);
    if (create) {
        gt_sim_stream *s = gt_sim_stream_create();
        pthread_mutex_lock(&g_streams_lock);
        if (!g_default_stream) g_default_stream = s; /* a racing creator's extra stream idles */
        pthread_mutex_unlock(&g_streams_lock);
    }
    return g_default_stream;
}

void gt_sim_enqueue(gt_sim_stream *stream, void (*fn)(void *), void *data, void (*done)(void *)) {
    gt_sim_stream *s = resolve(stream);
    task *t = malloc(sizeof *t);
    *t = (task){fn, data, done, NULL};
    pthread_mutex_lock(&s->lock);
    if (s->tail) s->tail->next = t;
    else s->head = t;
    s->tail = t;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void gt_sim_stream_synchronize(gt_sim_stream *stream) {
    gt_sim_stream *s = resolve(stream);
    pthread_mutex_lock(&s->lock);
    while (s->head || s->busy) pthread_cond_wait(&s->idle, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

int gt_sim_stream_query(gt_sim_stream *stream) {
    gt_sim_stream *s = resolve(stream);
    pthread_mutex_lock(&s->lock);
    int done = !s->head && !s->busy;
    pthread_mutex_unlock(&s->lock);
    return done;
}

void gt_sim_stream_destroy(gt_sim_stream *s) {
    if (!s || s == g_default_stream) return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1; /* the worker finishes what is queued, then exits */
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&g_streams_lock);
    for (gt_sim_stream **link = &g_streams; *link; link = &(*link)->next_stream)
        if (*link == s) {
            *link = s->next_stream;
            break;
        }
    pthread_mutex_unlock(&g_streams_lock);
    free(s);
}

void gt_sim_device_synchronize(void) {
    pthread_mutex_lock(&g_streams_lock);
    gt_sim_stream *s = g_streams;
    pthread_mutex_unlock(&g_streams_lock);
    /* Streams are only ever added at the head, so this walk sees a stable list. */
    for (; s; s = s->next_stream) gt_sim_stream_synchronize(s);
}

typedef struct {
    void *dst;
    const void *src;
    size_t nbytes;
    int value, is_set;
} copy_task;

static void run_copy(void *arg) {
    copy_task *c = arg;
    if (c->is_set) memset(c->dst, c->value, c->nbytes);
    else memmove(c->dst, c->src, c->nbytes);
}

void gt_sim_memcpy_async(void *dst, const void *src, size_t nbytes, gt_sim_stream *stream) {
    copy_task *c = malloc(sizeof *c);
    *c = (copy_task){dst, src, nbytes, 0, 0};
    gt_sim_enqueue(stream, run_copy, c, free);
}

static void free_staged_copy(void *arg) {
    copy_task *c = arg;
    free((void *)c->src);
    free(c);
}

void gt_sim_memcpy_h2d_async(void *dst, const void *src, size_t nbytes, gt_sim_stream *stream) {
    void *staged = malloc(nbytes ? nbytes : 1);
    memcpy(staged, src, nbytes);
    copy_task *c = malloc(sizeof *c);
    *c = (copy_task){dst, staged, nbytes, 0, 0};
    gt_sim_enqueue(stream, run_copy, c, free_staged_copy);
}

void gt_sim_memset_async(void *dst, int value, size_t nbytes, gt_sim_stream *stream) {
    copy_task *c = malloc(sizeof *c);
    *c = (copy_task){dst, NULL, nbytes, value, 1};
    gt_sim_enqueue(stream, run_copy, c, free);
}

/* =============================================================== events */

/* One lock and condition for all events: simple, and events are rare. */
static pthread_mutex_t g_event_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_event_done = PTHREAD_COND_INITIALIZER;

struct gt_sim_event {
    unsigned long long recorded;  /* records made by the host */
    unsigned long long completed; /* records a stream has reached */
    double time_ms;               /* host clock when the last record completed */
    unsigned marks;               /* queued records and waits that still point here */
    int destroyed;                /* freed by the host: free it when marks reaches 0 */
};

typedef struct {
    gt_sim_event *event;
    unsigned long long generation;
} event_mark;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

gt_sim_event *gt_sim_event_create(void) { return calloc(1, sizeof(gt_sim_event)); }

/* The host may destroy an event whose record is still queued (CUDA allows it):
 * the memory then lives on until the last queued mark is done with it. */
void gt_sim_event_destroy(gt_sim_event *event) {
    pthread_mutex_lock(&g_event_lock);
    event->destroyed = 1;
    int unused = event->marks == 0;
    pthread_mutex_unlock(&g_event_lock);
    if (unused) free(event);
}

static void release_mark_locked(event_mark *m) {
    gt_sim_event *event = m->event;
    if (--event->marks == 0 && event->destroyed) free(event);
    free(m);
}

static void release_mark(void *arg) {
    pthread_mutex_lock(&g_event_lock);
    release_mark_locked(arg);
    pthread_mutex_unlock(&g_event_lock);
}

static void nothing(void *arg) { (void)arg; }

/* A record's done(): runs when the stream reaches it (see stream_worker). */
static void complete_event(void *arg) {
    event_mark *m = arg;
    pthread_mutex_lock(&g_event_lock);
    if (m->generation > m->event->completed) {
        m->event->completed = m->generation;
        m->event->time_ms = now_ms();
    }
    pthread_cond_broadcast(&g_event_done);
    release_mark_locked(m);
    pthread_mutex_unlock(&g_event_lock);
}

static void wait_for_mark(void *arg) {
    event_mark *m = arg;
    pthread_mutex_lock(&g_event_lock);
    while (m->event->completed < m->generation) pthread_cond_wait(&g_event_done, &g_event_lock);
    pthread_mutex_unlock(&g_event_lock);
}

static event_mark *mark(gt_sim_event *event, int new_record) {
    event_mark *m = malloc(sizeof *m);
    pthread_mutex_lock(&g_event_lock);
    if (new_record) event->recorded++;
    event->marks++;
    *m = (event_mark){event, event->recorded};
    pthread_mutex_unlock(&g_event_lock);
    return m;
}

void gt_sim_event_record(gt_sim_event *event, gt_sim_stream *stream) {
    gt_sim_enqueue(stream, nothing, mark(event, 1), complete_event);
}

int gt_sim_event_query(gt_sim_event *event) {
    pthread_mutex_lock(&g_event_lock);
    int done = event->completed == event->recorded;
    pthread_mutex_unlock(&g_event_lock);
    return done;
}

void gt_sim_event_synchronize(gt_sim_event *event) {
    event_mark *m = mark(event, 0);
    wait_for_mark(m);
    release_mark(m);
}

float gt_sim_event_elapsed_ms(gt_sim_event *start, gt_sim_event *end) {
    pthread_mutex_lock(&g_event_lock);
    float ms = (float)(end->time_ms - start->time_ms);
    pthread_mutex_unlock(&g_event_lock);
    return ms;
}

void gt_sim_stream_wait_event(gt_sim_stream *stream, gt_sim_event *event) {
    /* The stream waits for the record made before this call, as in CUDA. */
    gt_sim_enqueue(stream, wait_for_mark, mark(event, 0), release_mark);
}

/* =============================================================== block scheduler */

#define MAX_BLOCK_THREADS 1024
#define WARP 32
#define MAX_WARPS (MAX_BLOCK_THREADS / WARP)

/* A coroutine starts with makecontext + setcontext (the only portable way onto a
 * fresh stack), and from then on switches with _setjmp/_longjmp, which, unlike
 * swapcontext, do not make a system call to save and restore the signal mask:
 * that makes a switch several times cheaper. */
typedef struct {
    ucontext_t ctx; /* the starting point: thread_main on this thread's stack */
    jmp_buf env;    /* where the thread waits, once started */
    int started;
    gt_sim_thread_info info;
    int finished;
    const unsigned long long *wait_gen; /* waiting until *wait_gen != wait_value */
    unsigned long long wait_value;
} sim_thread;

typedef struct {
    unsigned live, arrived;
    unsigned long long generation;
} barrier;

typedef struct {
    jmp_buf scheduler;    /* where a waiting or finished thread jumps back to */
    ucontext_t prototype; /* what getcontext gave once, copied for each thread */
    sim_thread threads[MAX_BLOCK_THREADS];
    unsigned nthreads;
    barrier block_barrier;
    barrier warp_barrier[MAX_WARPS];
    uint64_t warp_slots[MAX_WARPS][WARP];
    void (*body)(void *);
    void *args;
} block_state;

/* Everything below is per OS thread: each stream worker runs its own blocks. */
static __thread block_state *tl_block;
static __thread sim_thread *tl_self;
static __thread char *tl_stacks;
static __thread size_t tl_stack_size;

static pthread_mutex_t g_error_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_error[256];

static void set_error(const char *message) {
    pthread_mutex_lock(&g_error_lock);
    if (!g_error[0]) snprintf(g_error, sizeof g_error, "%s", message);
    pthread_mutex_unlock(&g_error_lock);
}

const char *gt_sim_last_error(void) {
    static __thread char copy[256];
    pthread_mutex_lock(&g_error_lock);
    memcpy(copy, g_error, sizeof copy);
    g_error[0] = 0;
    pthread_mutex_unlock(&g_error_lock);
    return copy;
}

const gt_sim_thread_info *gt_sim_self(void) { return &tl_self->info; }

/* Arrive at barrier b; return once every live thread it counts has arrived. */
static void barrier_wait(barrier *b) {
    unsigned long long mine = b->generation;
    if (++b->arrived == b->live) { /* the last one in releases the others */
        b->arrived = 0;
        b->generation++;
        return;
    }
    sim_thread *self = tl_self;
    self->wait_gen = &b->generation;
    self->wait_value = mine;
    if (!_setjmp(self->env)) _longjmp(tl_block->scheduler, 1); /* yield */
    self->wait_gen = NULL;
}

/* A thread that returns stops counting towards its barriers (CUDA leaves a barrier
 * that some threads never reach undefined; this choice lets the others go on). */
static void barrier_leave(barrier *b) {
    b->live--;
    if (b->arrived > 0 && b->arrived == b->live) {
        b->arrived = 0;
        b->generation++;
    }
}

void gt_sim_syncthreads(void) { barrier_wait(&tl_block->block_barrier); }

const uint64_t *gt_sim_warp_exchange(uint64_t value) {
    unsigned tid = tl_self->info.linear_tid;
    tl_block->warp_slots[tid / WARP][tid % WARP] = value;
    barrier_wait(&tl_block->warp_barrier[tid / WARP]);
    return tl_block->warp_slots[tid / WARP];
}

void gt_sim_warp_done(void) {
    barrier_wait(&tl_block->warp_barrier[tl_self->info.linear_tid / WARP]);
}

static void thread_main(void) {
    block_state *blk = tl_block;
    blk->body(blk->args);
    sim_thread *self = tl_self;
    self->finished = 1;
    barrier_leave(&blk->block_barrier);
    barrier_leave(&blk->warp_barrier[self->info.linear_tid / WARP]);
    _longjmp(blk->scheduler, 1); /* never returns: the coroutine is over */
}

static size_t stack_size(void) {
    const char *env = getenv("GLASSTORCH_SIM_STACK");
    size_t size = env ? (size_t)strtoull(env, NULL, 10) : 64 * 1024;
    return (size + 4095) / 4096 * 4096;
}

/* One stack per thread slot, reserved once per worker; the lowest page of each
 * is a guard, so a kernel that overflows its stack faults instead of corrupting. */
static char *thread_stack(unsigned i) {
    if (!tl_stacks) {
        tl_stack_size = stack_size() + 4096;
        size_t total = tl_stack_size * MAX_BLOCK_THREADS;
        tl_stacks = mmap(NULL, total, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (tl_stacks == MAP_FAILED) {
            fprintf(stderr, "gt_cuda_sim: cannot reserve thread stacks\n");
            abort();
        }
        for (unsigned k = 0; k < MAX_BLOCK_THREADS; k++)
            mprotect(tl_stacks + k * tl_stack_size, 4096, PROT_NONE);
    }
    return tl_stacks + i * tl_stack_size + 4096;
}

/* Give thread i a fresh context that starts in thread_main on its own stack. */
static void prepare_thread(block_state *blk, unsigned i) {
    sim_thread *t = &blk->threads[i];
    t->finished = 0;
    t->started = 0;
    t->wait_gen = NULL;
    t->ctx = blk->prototype;
    t->ctx.uc_stack.ss_sp = thread_stack(i);
    t->ctx.uc_stack.ss_size = tl_stack_size - 4096;
    t->ctx.uc_link = NULL; /* thread_main never returns */
    makecontext(&t->ctx, thread_main, 0);
}

/* Run thread t until it waits at a barrier or returns. Not inlined, so the
 * scheduler's jump buffer belongs to this small frame. */
__attribute__((noinline)) static void resume(block_state *blk, sim_thread *t) {
    tl_self = t;
    if (_setjmp(blk->scheduler)) return; /* the thread yielded or finished */
    if (t->started) _longjmp(t->env, 1);
    t->started = 1;
    setcontext(&t->ctx);
}

/* Run one block to completion; 0 on success, -1 on a deadlock. */
static int run_block(block_state *blk) {
    unsigned n = blk->nthreads;
    blk->block_barrier = (barrier){n, 0, 0};
    for (unsigned w = 0; w < MAX_WARPS; w++) {
        unsigned first = w * WARP;
        unsigned count = first >= n ? 0 : (n - first < WARP ? n - first : WARP);
        blk->warp_barrier[w] = (barrier){count, 0, 0};
    }
    getcontext(&blk->prototype);
    for (unsigned i = 0; i < n; i++) prepare_thread(blk, i);
    for (;;) {
        int alive = 0, ran = 0;
        for (unsigned i = 0; i < n; i++) {
            sim_thread *t = &blk->threads[i];
            if (t->finished) continue;
            alive = 1;
            if (t->wait_gen && *t->wait_gen == t->wait_value) continue; /* still waiting */
            resume(blk, t);
            ran = 1;
        }
        if (!alive) return 0;
        if (!ran) return -1;
    }
}

void gt_sim_run_grid(gt_sim_dim3 grid, gt_sim_dim3 block, void (*body)(void *), void *args) {
    unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > MAX_BLOCK_THREADS || !grid.x || !grid.y || !grid.z) {
        set_error("invalid configuration argument");
        return;
    }
    block_state *blk = calloc(1, sizeof *blk);
    blk->nthreads = (unsigned)nthreads;
    blk->body = body;
    blk->args = args;
    for (unsigned i = 0; i < nthreads; i++) {
        gt_sim_thread_info *info = &blk->threads[i].info;
        info->thread_idx = (gt_sim_dim3){i % block.x, i / block.x % block.y, i / (block.x * block.y)};
        info->block_dim = block;
        info->grid_dim = grid;
        info->linear_tid = i;
    }
    block_state *outer = tl_block;
    tl_block = blk;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                for (unsigned i = 0; i < nthreads; i++)
                    blk->threads[i].info.block_idx = (gt_sim_dim3){x, y, z};
                if (run_block(blk) != 0) {
                    set_error("deadlock: some threads of a block wait at __syncthreads() or a "
                              "warp shuffle that other threads never reach");
                    goto out;
                }
            }
out:
    tl_block = outer;
    free(blk);
}
