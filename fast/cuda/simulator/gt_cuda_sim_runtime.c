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
 * 4. Faults and interrupts: a signal raised by kernel code (SIGSEGV, SIGBUS,
 *    SIGFPE, SIGILL, a stack overflow into a coroutine's guard page) is caught
 *    on the worker's alternate signal stack and siglongjmp's out of the launch,
 *    which is recorded as failed; gt_sim_interrupt stops running kernels the
 *    same way (a signal to each busy worker), so Ctrl-C reaches a spin-wait.
 * 5. Checks (the sanitizer): kernels compiled with the compiler's address
 *    instrumentation call __asan_load4(addr), __asan_store8(addr), ... before
 *    each access, and the bounds/alignment/division instrumentation calls
 *    __ubsan_handle_*; both are defined here, and check the access against the
 *    launch's allocations (memcheck), the barrier epoch of each shared word's
 *    last writer and reader (racecheck) and shadow "undefined" bits (initcheck).
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
#include <dlfcn.h>
#include <signal.h>

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
static range *g_freed_ranges; /* the last freed ranges, newest first, for "use after free" */
static unsigned long long g_mem_version; /* bumped by every change, for lookup caches */

/* The caching allocator's blocks inside the arena's ranges (gt_sim_note_allocation),
 * sorted by offset, never overlapping: the allocations a kernel may touch. */
typedef struct {
    size_t offset, size;
} note;
static note *g_notes;
static size_t g_note_count, g_note_capacity;

/* initcheck's shadow: bit i set = byte i of the arena was never written since it
 * was allocated (one bit per byte, reserved with the arena, touched only where used). */
static unsigned char *g_undefined;

static void undefined_set(size_t offset, size_t n, int undefined) {
    if (!g_undefined || n == 0) return;
    size_t end = offset + n;
    while (offset < end && offset % 8) { /* ragged head, bit by bit (atomically: */
        unsigned char bit = (unsigned char)(1u << (offset % 8)); /* neighbours share bytes) */
        if (undefined) __atomic_fetch_or(&g_undefined[offset / 8], bit, __ATOMIC_RELAXED);
        else __atomic_fetch_and(&g_undefined[offset / 8], (unsigned char)~bit, __ATOMIC_RELAXED);
        offset++;
    }
    size_t whole = (end - offset) / 8;
    if (whole) memset(g_undefined + offset / 8, undefined ? 0xff : 0, whole);
    offset += whole * 8;
    for (; offset < end; offset++) {
        unsigned char bit = (unsigned char)(1u << (offset % 8));
        if (undefined) __atomic_fetch_or(&g_undefined[offset / 8], bit, __ATOMIC_RELAXED);
        else __atomic_fetch_and(&g_undefined[offset / 8], (unsigned char)~bit, __ATOMIC_RELAXED);
    }
}

/* The first undefined byte of [offset, offset + n) as an offset from `offset`, or -1. */
static long long undefined_find(size_t offset, size_t n) {
    if (!g_undefined) return -1;
    for (size_t i = 0; i < n; i++) {
        size_t at = offset + i;
        if (__atomic_load_n(&g_undefined[at / 8], __ATOMIC_RELAXED) & (1u << (at % 8)))
            return (long long)i;
    }
    return -1;
}

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
    void *shadow = mmap(NULL, size / 8, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_undefined = shadow == MAP_FAILED ? NULL : shadow; /* without it: no global initcheck */
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
        undefined_set(r->offset, size, 1);
        g_mem_version++;
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

void gt_sim_device_synchronize(void);

void gt_sim_free(void *ptr) {
    if (!ptr) return;
    /* As cudaFree, wait for the device first: a kernel still queued may use the memory. */
    gt_sim_device_synchronize();
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
    g_mem_version++;
    range *freed = malloc(sizeof(range)); /* remembered for "use after free" reports */
    *freed = (range){r->offset, r->size, g_freed_ranges};
    g_freed_ranges = freed;
    int kept = 0;
    for (range *f = g_freed_ranges; f; f = f->next)
        if (++kept == 64 && f->next) {
            range *drop = f->next;
            f->next = NULL;
            while (drop) {
                range *after = drop->next;
                free(drop);
                drop = after;
            }
            break;
        }
    /* The allocator's notes inside the range are gone with it. */
    size_t keep = 0;
    for (size_t i = 0; i < g_note_count; i++)
        if (g_notes[i].offset < r->offset || g_notes[i].offset >= r->offset + r->size)
            g_notes[keep++] = g_notes[i];
    g_note_count = keep;
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

static void note_now(void *ptr, size_t nbytes) {
    pthread_mutex_lock(&g_mem_lock);
    if (g_arena && (char *)ptr >= g_arena && (size_t)((char *)ptr - g_arena) < g_arena_size) {
        size_t offset = (size_t)((char *)ptr - g_arena), end = offset + nbytes;
        undefined_set(offset, nbytes, 1);
        /* Drop the notes this block overlaps (blocks split and merge), then insert it. */
        size_t keep = 0, at = 0;
        for (size_t i = 0; i < g_note_count; i++) {
            note n = g_notes[i];
            int overlaps = n.offset < end && offset < n.offset + n.size;
            overlaps |= n.offset == offset; /* an earlier note of the same block */
            if (overlaps) continue;
            g_notes[keep++] = n;
        }
        g_note_count = keep;
        while (at < g_note_count && g_notes[at].offset < offset) at++;
        if (g_note_count == g_note_capacity) {
            g_note_capacity = g_note_capacity ? 2 * g_note_capacity : 256;
            g_notes = realloc(g_notes, g_note_capacity * sizeof(note));
        }
        memmove(g_notes + at + 1, g_notes + at, (g_note_count - at) * sizeof(note));
        g_notes[at] = (note){offset, nbytes};
        g_note_count++;
        g_mem_version++;
    }
    pthread_mutex_unlock(&g_mem_lock);
}

/* Where an arena offset lies, for memcheck without the launch's own allocations:
 * 1 inside a live allocation (a noted block, or a range holding no notes), with its
 * bounds; 0 outside (base and size: the nearest allocation below, size 0 if none); 2
 * inside a freed range. Called with g_mem_lock held. */
static int locate_locked(size_t offset, size_t *base, size_t *size) {
    *base = 0;
    *size = 0;
    for (range *r = g_used_ranges; r; r = r->next) {
        if (offset < r->offset || offset >= r->offset + r->size) continue;
        size_t lo = 0, hi = g_note_count; /* the first note at or above the range */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (g_notes[mid].offset < r->offset) lo = mid + 1;
            else hi = mid;
        }
        if (lo == g_note_count || g_notes[lo].offset >= r->offset + r->size) {
            *base = r->offset, *size = r->size; /* no blocks: the range is the allocation */
            return 1;
        }
        size_t below = lo; /* the last note starting at or below offset */
        while (below + 1 < g_note_count && g_notes[below + 1].offset <= offset) below++;
        if (g_notes[below].offset <= offset) {
            *base = g_notes[below].offset, *size = g_notes[below].size;
            return offset < *base + *size;
        }
        return 0;
    }
    for (range *f = g_freed_ranges; f; f = f->next)
        if (offset >= f->offset && offset < f->offset + f->size) {
            *base = f->offset, *size = f->size;
            return 2;
        }
    return 0;
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

static void worker_signals(void); /* part 4: the worker's alternate signal stack */

static void *stream_worker(void *arg) {
    gt_sim_stream *s = arg;
    worker_signals();
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

static int wait_idle_locked(gt_sim_stream *s, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (s->head || s->busy)
        if (pthread_cond_timedwait(&s->idle, &s->lock, &until) != 0) break;
    return !s->head && !s->busy;
}

int gt_sim_stream_wait(gt_sim_stream *stream, int timeout_ms) {
    gt_sim_stream *s = resolve(stream);
    pthread_mutex_lock(&s->lock);
    int done = wait_idle_locked(s, timeout_ms);
    pthread_mutex_unlock(&s->lock);
    return done;
}

int gt_sim_device_wait(int timeout_ms) {
    pthread_mutex_lock(&g_streams_lock);
    gt_sim_stream *s = g_streams;
    pthread_mutex_unlock(&g_streams_lock);
    for (; s; s = s->next_stream)
        if (!gt_sim_stream_wait(s, timeout_ms)) return 0;
    return 1;
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
    if ((char *)c->dst >= g_arena && (size_t)((char *)c->dst - g_arena) < g_arena_size)
        undefined_set((size_t)((char *)c->dst - g_arena), c->nbytes, 0); /* now defined */
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

typedef struct {
    void *ptr;
    size_t nbytes;
} note_task;

static void run_note(void *arg) {
    note_task *n = arg;
    note_now(n->ptr, n->nbytes);
}

void gt_sim_note_allocation(void *ptr, size_t nbytes, gt_sim_stream *stream) {
    note_task *n = malloc(sizeof *n);
    *n = (note_task){ptr, nbytes};
    gt_sim_enqueue(stream, run_note, n, free);
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

int gt_sim_event_wait(gt_sim_event *event, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&g_event_lock);
    unsigned long long target = event->recorded;
    while (event->completed < target)
        if (pthread_cond_timedwait(&g_event_done, &g_event_lock, &until) != 0) break;
    int done = event->completed >= target;
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

#define MAX_BLOCK_THREADS GT_SIM_MAX_THREADS_PER_BLOCK
#define WARP 32
#define MAX_WARPS (MAX_BLOCK_THREADS / WARP)
#define WARP_GROUPS 4   /* partial-mask groups of one warp waiting at the same time */
#define MAX_SHARED 64   /* __shared__ variables of one launch */
#define RED_ZONE 256    /* unaddressable bytes around the dynamic shared memory */

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
    const char *wait_what, *wait_file; /* where it waits (for synccheck's reports) */
    unsigned wait_line, wait_mask;
    /* An index the bounds instrumentation found out of range, reported with the
     * access that follows it (which tells __shared__ from local memory). */
    const char *bad_index_file, *bad_index_type;
    unsigned bad_index_line;
    long long bad_index;
} sim_thread;

typedef struct {
    unsigned live, arrived;
    unsigned long long generation;
    const char *file; /* where the first waiting thread waits */
    unsigned line, first;
} barrier;

typedef struct {
    unsigned mask, arrived;
    unsigned long long generation;
    const char *file; /* where its first lane waits */
    unsigned line;
} warp_group;

typedef struct {
    unsigned live; /* lanes that exist and have not returned */
    unsigned syncs; /* completed warp barriers: orders its lanes for racecheck */
    warp_group groups[WARP_GROUPS];
} warp_state;

/* racecheck's record of one 4-byte word of shared memory. */
typedef struct {
    uint16_t writer, reader;
    uint32_t write_epoch, read_epoch, write_sync, read_sync;
    void *write_pc, *read_pc;
    uint32_t read_value; /* the word when it was last read (see changed_since_read) */
    uint8_t write_bytes, read_bytes; /* which bytes of the word those accesses touched */
} race_word;

/* The compiler checks an address once per basic block: in `x = x + 1` only the read
 * calls the runtime. So a word that changed since another thread read it, with no
 * write seen in between, was written by that thread (an unseen write). */
#define GT_CHANGED_SINCE_READ(w, address, bytes) \
    (((w)->read_value ^ *(const volatile uint32_t *)(address)) & byte_bits(bytes))

/* The bytes of word `word` that the access [offset, offset + size) touches, as 4 bits. */
static inline uint8_t word_bytes(size_t word, size_t offset, size_t size) {
    uint8_t bytes = 0;
    for (size_t b = 0; b < 4; b++)
        if (word * 4 + b >= offset && word * 4 + b < offset + size) bytes |= (uint8_t)(1u << b);
    return bytes;
}
static inline uint32_t byte_bits(uint8_t bytes) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; b++)
        if (bytes & (1u << b)) bits |= 0xffu << (8 * b);
    return bits;
}

typedef struct {
    char *base;              /* the variable's first byte */
    size_t size;             /* its bytes */
    const char *name;
    int dynamic;             /* the extern __shared__ memory */
    unsigned long long serial; /* the block whose declaration ran last */
    unsigned char *undefined;  /* initcheck: one flag per byte */
    race_word *race;           /* racecheck: one record per word */
} shared_region;

typedef struct {
    sigjmp_buf abort;     /* where a failed launch (an error, a fault) jumps to */
    jmp_buf scheduler;    /* where a waiting or finished thread jumps back to */
    ucontext_t prototype; /* what getcontext gave once, copied for each thread */
    sim_thread threads[MAX_BLOCK_THREADS];
    unsigned nthreads, finished;
    barrier block_barrier;
    warp_state warps[MAX_WARPS];
    uint64_t warp_slots[MAX_WARPS][WARP];
    uint32_t epoch;       /* block barriers passed + 1: racecheck's clock */
    unsigned long long serial; /* this block's number in the process, for shared memory */
    void (*body)(void *);
    void *args;
    const gt_sim_launch_config *config;
    unsigned checks;
    shared_region shared[MAX_SHARED];
    unsigned nshared;
    /* A read of undefined shared memory, reported at the next barrier unless a
     * race explains it first (a missing __syncthreads reads before the write). */
    int pending;
    sim_thread *pending_thread;
    const void *pending_pc;
    char pending_what[200], pending_detail[400];
    char *dynamic; /* RED_ZONE + dynamic_shared + RED_ZONE bytes */
} block_state;

/* Everything below is per OS thread: each stream worker runs its own blocks. */
static __thread block_state *tl_block;
static __thread sim_thread *tl_self;
static __thread char *tl_stacks;
static __thread size_t tl_stack_size;
static __thread volatile sig_atomic_t tl_in_kernel;  /* a launch runs on this thread */
static __thread volatile sig_atomic_t tl_in_runtime; /* holding a lock: no siglongjmp */

static volatile sig_atomic_t g_interrupt; /* gt_sim_interrupt(1) until (0) */
static unsigned long long g_block_serial;  /* atomically incremented */

/* ------------------------------------------------------------------ errors */

static pthread_mutex_t g_error_lock = PTHREAD_MUTEX_INITIALIZER;
static gt_sim_error g_error; /* the first error since the last gt_sim_take_error */

int gt_sim_take_error(gt_sim_error *out) {
    pthread_mutex_lock(&g_error_lock);
    int had = g_error.kind != 0;
    if (had) *out = g_error;
    memset(&g_error, 0, sizeof g_error);
    pthread_mutex_unlock(&g_error_lock);
    return had;
}

/* Record an error (the first one wins): what, detail, and where: a source
 * position if known, else the code address pc (resolved by the host with addr2line). */
static void record(int kind, const char *what, const char *detail, const char *file,
                   unsigned line, const void *pc) {
    tl_in_runtime = 1;
    pthread_mutex_lock(&g_error_lock);
    if (!g_error.kind) {
        gt_sim_error *e = &g_error;
        e->kind = kind;
        snprintf(e->what, sizeof e->what, "%s", what);
        snprintf(e->detail, sizeof e->detail, "%s", detail ? detail : "");
        block_state *blk = tl_block;
        if (blk && blk->config)
            snprintf(e->kernel, sizeof e->kernel, "%s", blk->config->kernel);
        if (blk && tl_self) {
            const gt_sim_thread_info *me = &tl_self->info;
            e->has_thread = 1;
            e->block[0] = me->block_idx.x, e->block[1] = me->block_idx.y;
            e->block[2] = me->block_idx.z;
            e->thread[0] = me->thread_idx.x, e->thread[1] = me->thread_idx.y;
            e->thread[2] = me->thread_idx.z;
        }
        if (file) {
            snprintf(e->file, sizeof e->file, "%s", file);
            e->line = line;
        } else if (pc) {
            Dl_info where;
            if (dladdr(pc, &where) && where.dli_fname) {
                snprintf(e->object, sizeof e->object, "%s", where.dli_fname);
                e->pc = (unsigned long long)((const char *)pc - (const char *)where.dli_fbase);
            }
        }
    }
    pthread_mutex_unlock(&g_error_lock);
    tl_in_runtime = 0;
}

/* Record an error and abandon the launch (never returns when a launch runs). */
static void fail(int kind, const char *what, const char *detail, const char *file, unsigned line,
                 const void *pc) {
    record(kind, what, detail, file, line, pc);
    if (tl_block && tl_in_kernel) siglongjmp(tl_block->abort, 1);
}

const gt_sim_thread_info *gt_sim_self(void) { return &tl_self->info; }

static void describe_thread(char *out, size_t n, const sim_thread *t) {
    snprintf(out, n, "(%u,%u,%u)", t->info.thread_idx.x, t->info.thread_idx.y,
             t->info.thread_idx.z);
}

/* ------------------------------------------------------------------ barriers */

static void check_interrupt(void) {
    if (g_interrupt) fail(GT_SIM_ERROR_INTERRUPT, "interrupted", "", NULL, 0, NULL);
}

/* Wait (yield to the scheduler) until *generation moves on. */
static void wait_for(const unsigned long long *generation) {
    sim_thread *self = tl_self;
    self->wait_gen = generation;
    self->wait_value = *generation;
    if (!_setjmp(self->env)) _longjmp(tl_block->scheduler, 1); /* yield */
    self->wait_gen = NULL;
    check_interrupt();
}

/* Report the initcheck error held back until the barrier (see block_state.pending). */
static void report_pending(block_state *blk) {
    if (!blk->pending) return;
    blk->pending = 0;
    tl_self = blk->pending_thread;
    fail(GT_SIM_ERROR_INITCHECK, blk->pending_what, blk->pending_detail, NULL, 0,
         blk->pending_pc);
}

static void release_block_barrier(block_state *blk) {
    report_pending(blk);
    blk->block_barrier.arrived = 0;
    blk->block_barrier.generation++;
    blk->epoch++;
}

void gt_sim_syncthreads(const char *file, unsigned line) {
    block_state *blk = tl_block;
    sim_thread *self = tl_self;
    barrier *b = &blk->block_barrier;
    char detail[400], me[32], other[32];
    if (blk->checks & GT_SIM_SYNCCHECK) {
        describe_thread(me, sizeof me, self);
        if (b->arrived > 0 && (b->line != line || b->file != file)) {
            describe_thread(other, sizeof other, &blk->threads[b->first]);
            snprintf(detail, sizeof detail,
                     "thread %s reached a different __syncthreads() (line %u) while thread %s "
                     "waits at the one at line %u: every thread of a block must reach the same "
                     "barrier (__syncthreads() in divergent code)",
                     me, line, other, b->line);
            fail(GT_SIM_ERROR_SYNCCHECK, "Barrier error: divergent __syncthreads()", detail, file,
                 line, NULL);
        }
        if (blk->finished > 0) {
            const sim_thread *gone = NULL;
            for (unsigned i = 0; i < blk->nthreads && !gone; i++)
                if (blk->threads[i].finished) gone = &blk->threads[i];
            describe_thread(other, sizeof other, gone);
            snprintf(detail, sizeof detail,
                     "thread %s reached __syncthreads() after thread %s of its block returned: "
                     "every thread of a block must reach the same barriers (__syncthreads() "
                     "after an early return, or in divergent code)",
                     me, other);
            fail(GT_SIM_ERROR_SYNCCHECK, "Barrier error: divergent __syncthreads()", detail, file,
                 line, NULL);
        }
    }
    if (b->arrived == 0) b->file = file, b->line = line, b->first = self->info.linear_tid;
    if (++b->arrived == b->live) { /* the last one in releases the others */
        release_block_barrier(blk);
        return;
    }
    self->wait_what = "__syncthreads()", self->wait_file = file, self->wait_line = line;
    wait_for(&b->generation);
}

static void release_warp_group(warp_state *ws, warp_group *g) {
    g->arrived = 0;
    g->generation++;
    ws->syncs++;
}

/* Wait at the warp barrier of the lanes of `mask` (the caller's lane included). */
static void warp_barrier(unsigned mask, const char *what, const char *file, unsigned line) {
    block_state *blk = tl_block;
    sim_thread *self = tl_self;
    unsigned tid = self->info.linear_tid, me = 1u << (tid % WARP);
    warp_state *ws = &blk->warps[tid / WARP];
    char detail[400];
    if (blk->checks & GT_SIM_SYNCCHECK) {
        if (!(mask & me)) {
            snprintf(detail, sizeof detail,
                     "lane %u calls %s with mask 0x%08x, which does not name it", tid % WARP,
                     what, mask);
            fail(GT_SIM_ERROR_SYNCCHECK, "Invalid mask", detail, file, line, NULL);
        }
        if (mask & ~ws->live) {
            snprintf(detail, sizeof detail,
                     "%s with mask 0x%08x names lane %d, which has returned or does not exist "
                     "(the block has %u threads): a *_sync mask may name only lanes that reach "
                     "the call",
                     what, mask, __builtin_ctz(mask & ~ws->live), blk->nthreads);
            fail(GT_SIM_ERROR_SYNCCHECK, "Invalid mask", detail, file, line, NULL);
        }
    }
    mask |= me;
    self->wait_what = what, self->wait_file = file, self->wait_line = line;
    self->wait_mask = mask;
    warp_group *g = NULL;
    for (int i = 0; i < WARP_GROUPS && !g; i++)
        if (ws->groups[i].arrived && ws->groups[i].mask == mask) g = &ws->groups[i];
    for (int i = 0; i < WARP_GROUPS && !g; i++)
        if (!ws->groups[i].arrived) g = &ws->groups[i];
    if (!g) {
        fail(GT_SIM_ERROR_SYNCCHECK, "Invalid mask",
             "more groups of one warp wait at warp barriers with different masks than the "
             "simulator follows (4)",
             file, line, NULL);
        return;
    }
    if (!g->arrived) g->mask = mask, g->file = file, g->line = line;
    g->arrived |= me;
    unsigned target = mask & ws->live;
    if ((g->arrived & target) == target) release_warp_group(ws, g);
    else wait_for(&g->generation);
}

const uint64_t *gt_sim_warp_exchange(uint64_t value, unsigned mask, const char *what,
                                     const char *file, unsigned line) {
    unsigned tid = tl_self->info.linear_tid;
    tl_block->warp_slots[tid / WARP][tid % WARP] = value;
    warp_barrier(mask, what, file, line);
    return tl_block->warp_slots[tid / WARP];
}

/* The second half of a shuffle: no lane overwrites its slot before all have read. */
void gt_sim_warp_done(unsigned mask) {
    sim_thread *self = tl_self;
    warp_barrier(mask, self->wait_what, self->wait_file, self->wait_line);
}

/* A thread returned: it stops counting towards its barriers (CUDA leaves a barrier
 * that some threads never reach undefined; synccheck reports it, else the others go on). */
static void thread_leaves(block_state *blk, sim_thread *self) {
    char detail[400], me[32], other[32];
    barrier *b = &blk->block_barrier;
    unsigned tid = self->info.linear_tid, bit = 1u << (tid % WARP);
    warp_state *ws = &blk->warps[tid / WARP];
    if (blk->checks & GT_SIM_SYNCCHECK) {
        describe_thread(me, sizeof me, self);
        if (b->arrived > 0) {
            describe_thread(other, sizeof other, &blk->threads[b->first]);
            snprintf(detail, sizeof detail,
                     "thread %s returned while thread %s waits at __syncthreads() at line %u: "
                     "every thread of a block must reach the same barriers (__syncthreads() in "
                     "divergent code)",
                     me, other, b->line);
            fail(GT_SIM_ERROR_SYNCCHECK, "Barrier error: divergent __syncthreads()", detail,
                 b->file, b->line, NULL);
        }
        for (int i = 0; i < WARP_GROUPS; i++)
            if (ws->groups[i].arrived && (ws->groups[i].mask & bit)) {
                snprintf(detail, sizeof detail,
                         "thread %s (lane %u) returned, but its warp's lanes 0x%08x wait for "
                         "it at a warp barrier with mask 0x%08x",
                         me, tid % WARP, ws->groups[i].arrived, ws->groups[i].mask);
                fail(GT_SIM_ERROR_SYNCCHECK, "Invalid mask", detail, ws->groups[i].file,
                     ws->groups[i].line, NULL);
            }
    }
    blk->finished++;
    b->live--;
    if (b->arrived > 0 && b->arrived == b->live) release_block_barrier(blk);
    ws->live &= ~bit;
    for (int i = 0; i < WARP_GROUPS; i++) {
        warp_group *g = &ws->groups[i];
        unsigned target = g->mask & ws->live;
        if (g->arrived && (g->arrived & target) == target) release_warp_group(ws, g);
    }
}

static void thread_main(void) {
    block_state *blk = tl_block;
    blk->body(blk->args);
    sim_thread *self = tl_self;
    self->finished = 1;
    thread_leaves(blk, self);
    _longjmp(blk->scheduler, 1); /* never returns: the coroutine is over */
}

#define GUARD (64 * 1024) /* below each coroutine stack: larger than any one frame */

static size_t stack_size(void) {
    const char *env = getenv("GLASSTORCH_SIM_STACK");
    size_t size = env ? (size_t)strtoull(env, NULL, 10) : 64 * 1024;
    return (size + 4095) / 4096 * 4096;
}

/* One stack per thread slot, reserved once per worker; the lowest page of each
 * is a guard, so a kernel that overflows its stack faults instead of corrupting. */
static char *thread_stack(unsigned i) {
    if (!tl_stacks) {
        tl_stack_size = stack_size() + GUARD;
        size_t total = tl_stack_size * MAX_BLOCK_THREADS;
        tl_stacks = mmap(NULL, total, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (tl_stacks == MAP_FAILED) {
            fprintf(stderr, "gt_cuda_sim: cannot reserve thread stacks\n");
            abort();
        }
        for (unsigned k = 0; k < MAX_BLOCK_THREADS; k++)
            mprotect(tl_stacks + k * tl_stack_size, GUARD, PROT_NONE);
    }
    return tl_stacks + i * tl_stack_size + GUARD;
}

/* Give thread i a fresh context that starts in thread_main on its own stack. */
static void prepare_thread(block_state *blk, unsigned i) {
    sim_thread *t = &blk->threads[i];
    t->finished = 0;
    t->started = 0;
    t->wait_gen = NULL;
    t->bad_index_file = NULL;
    t->ctx = blk->prototype;
    t->ctx.uc_stack.ss_sp = thread_stack(i);
    t->ctx.uc_stack.ss_size = tl_stack_size - GUARD;
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

/* A block where no thread can run: say where two of its threads wait. */
static void report_deadlock(block_state *blk) {
    char detail[400], a[32], b[32];
    const sim_thread *first = NULL, *second = NULL;
    for (unsigned i = 0; i < blk->nthreads; i++) {
        const sim_thread *t = &blk->threads[i];
        if (t->finished || !t->wait_gen) continue;
        if (!first) first = t;
        else if (t->wait_what != first->wait_what || t->wait_line != first->wait_line) {
            second = t;
            break;
        }
    }
    if (!first) return;
    tl_self = (sim_thread *)first;
    describe_thread(a, sizeof a, first);
    if (second) {
        describe_thread(b, sizeof b, second);
        snprintf(detail, sizeof detail,
                 "thread %s waits at %s (line %u) and thread %s at %s (line %u); neither barrier "
                 "can complete: some threads wait at __syncthreads() or a warp shuffle that "
                 "other threads never reach",
                 a, first->wait_what, first->wait_line, b, second->wait_what, second->wait_line);
    } else {
        snprintf(detail, sizeof detail,
                 "thread %s waits at %s (line %u), which the other threads it waits for never "
                 "reach: some threads wait at __syncthreads() or a warp shuffle that other "
                 "threads never reach",
                 a, first->wait_what, first->wait_line);
    }
    fail(GT_SIM_ERROR_SYNCCHECK, "deadlock", detail, first->wait_file, first->wait_line, NULL);
}

/* Run one block to completion. */
static void run_block(block_state *blk) {
    unsigned n = blk->nthreads;
    blk->block_barrier = (barrier){n, 0, 0, NULL, 0, 0};
    blk->finished = 0;
    blk->epoch = 1;
    blk->serial = __atomic_add_fetch(&g_block_serial, 1, __ATOMIC_RELAXED);
    for (unsigned w = 0; w < MAX_WARPS; w++) {
        unsigned first = w * WARP;
        unsigned count = first >= n ? 0 : (n - first < WARP ? n - first : WARP);
        memset(&blk->warps[w], 0, sizeof blk->warps[w]);
        blk->warps[w].live = count == WARP ? 0xffffffffu : (1u << count) - 1u;
    }
    if (blk->dynamic) { /* shared memory starts undefined in every block */
        shared_region *r = &blk->shared[0];
        memset(r->base, 0xff, r->size);
        r->serial = blk->serial;
        if (r->undefined) memset(r->undefined, 1, r->size);
        if (r->race) memset(r->race, 0, (r->size + 3) / 4 * sizeof(race_word));
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
        if (!alive) {
            report_pending(blk);
            return;
        }
        if (!ran) {
            report_deadlock(blk);
            return;
        }
    }
}

/* ------------------------------------------------------------------ shared memory */

static shared_region *add_region(block_state *blk, void *address, size_t nbytes,
                                 const char *name, int dynamic) {
    if (blk->nshared == MAX_SHARED) return NULL;
    shared_region *r = &blk->shared[blk->nshared++];
    *r = (shared_region){(char *)address, nbytes, name, dynamic, 0, NULL, NULL};
    if (blk->checks & GT_SIM_INITCHECK) r->undefined = malloc(nbytes ? nbytes : 1);
    if (blk->checks & GT_SIM_RACECHECK)
        r->race = calloc((nbytes + 3) / 4 + 1, sizeof(race_word));
    return r;
}

void *gt_sim_dynamic_shared_memory(void) {
    block_state *blk = tl_block;
    return blk->dynamic ? blk->dynamic + RED_ZONE : NULL;
}

void gt_sim_shared_declared(void *address, size_t nbytes, const char *name) {
    block_state *blk = tl_block;
    if (!blk) return;
    shared_region *r = NULL;
    for (unsigned i = 0; i < blk->nshared && !r; i++)
        if (blk->shared[i].base == address) r = &blk->shared[i];
    if (r && r->serial == blk->serial) return; /* declared already in this block */
    if (!r) {
        size_t total = nbytes;
        for (unsigned i = 0; i < blk->nshared; i++)
            if (!blk->shared[i].dynamic) total += blk->shared[i].size;
        if (total > GT_SIM_MAX_STATIC_SHARED) {
            char detail[300];
            snprintf(detail, sizeof detail,
                     "kernel uses too much static shared data (0x%zx bytes, 0x%x max) with "
                     "__shared__ '%s' of %zu bytes: larger blocks of shared memory must be "
                     "dynamic (extern __shared__)",
                     total, GT_SIM_MAX_STATIC_SHARED, name, nbytes);
            fail(GT_SIM_ERROR_LAUNCH, "too many resources requested for launch", detail, NULL, 0,
                 NULL);
        }
        unsigned long long dynamic = blk->config->dynamic_shared;
        if (total + dynamic > GT_SIM_MAX_STATIC_SHARED) {
            char detail[300];
            snprintf(detail, sizeof detail,
                     "%zu bytes of static and %llu bytes of dynamic shared memory exceed the "
                     "%u bytes a block may use",
                     total, dynamic, GT_SIM_MAX_STATIC_SHARED);
            fail(GT_SIM_ERROR_LAUNCH, "too many resources requested for launch", detail, NULL, 0,
                 NULL);
        }
        r = add_region(blk, address, nbytes, name, 0);
        if (!r) return;
    }
    memset(address, 0xff, nbytes); /* undefined: a poison pattern (NaN as a float) */
    r->serial = blk->serial;
    if (r->undefined) memset(r->undefined, 1, nbytes);
    if (r->race) memset(r->race, 0, (nbytes + 3) / 4 * sizeof(race_word));
}

/* ------------------------------------------------------------------ checks */

static const char *access_name(int write, int atomic) {
    return atomic ? "atomic" : write ? "write" : "read";
}

/* Whether `address` is on the running thread's stack (local memory). */
static int on_own_stack(uintptr_t address) {
    if (!tl_self || !tl_block) return 0;
    uintptr_t low = (uintptr_t)thread_stack(tl_self->info.linear_tid);
    return address >= low && address < low + tl_stack_size - GUARD;
}

/* The bounds instrumentation saw an index out of range: report it with the access. */
static void report_bad_index(uintptr_t address, size_t size, int write, int atomic) {
    sim_thread *self = tl_self;
    char what[200], detail[400];
    int global = g_arena && address - (uintptr_t)g_arena < g_arena_size;
    const char *space = global ? "__global__" : on_own_stack(address) ? "__local__" : "__shared__";
    snprintf(what, sizeof what, "Invalid %s %s of size %zu bytes", space,
             access_name(write, atomic), size);
    snprintf(detail, sizeof detail, "index %lld is out of bounds for the array of type '%s'",
             self->bad_index, self->bad_index_type);
    fail(GT_SIM_ERROR_MEMCHECK, what, detail, self->bad_index_file, self->bad_index_line, NULL);
}

/* One access by a kernel thread to shared memory region r (racecheck, initcheck, memcheck
 * of the dynamic shared memory's ends). */
static void shared_access(block_state *blk, shared_region *r, uintptr_t address, size_t size,
                          int write, int atomic, const void *pc) {
    char what[200], detail[400];
    size_t offset = address - (uintptr_t)r->base;
    if (address < (uintptr_t)r->base || offset + size > r->size) {
        if (!(blk->checks & GT_SIM_MEMCHECK)) return;
        snprintf(what, sizeof what, "Invalid __shared__ %s of size %zu bytes",
                 access_name(write, atomic), size);
        if (address < (uintptr_t)r->base)
            snprintf(detail, sizeof detail,
                     "address is %zu bytes before the start of the %zu bytes of dynamic shared "
                     "memory (extern __shared__)",
                     (size_t)((uintptr_t)r->base - address), r->size);
        else
            snprintf(detail, sizeof detail,
                     "address is %zu bytes past the end of the %zu bytes of dynamic shared memory "
                     "(extern __shared__; the launch asked for shared_mem=%zu)",
                     offset >= r->size ? offset - r->size : (size_t)0, r->size,
                     r->size);
        fail(GT_SIM_ERROR_MEMCHECK, what, detail, NULL, 0, pc);
    }
    if (r->serial != blk->serial) return; /* declared in an earlier block, not yet in this one */
    const char *name = r->dynamic ? "extern __shared__ memory" : r->name;
    if (r->undefined) {
        if (!write || atomic) {
            for (size_t i = 0; i < size && !blk->pending; i++)
                if (r->undefined[offset + i]) {
                    snprintf(blk->pending_what, sizeof blk->pending_what,
                             "Uninitialized __shared__ memory %s of size %zu bytes",
                             atomic ? "atomic" : "read", size);
                    snprintf(blk->pending_detail, sizeof blk->pending_detail,
                             "byte %zu of the %zu-byte __shared__ '%s' was never written in this "
                             "block (shared memory starts undefined in every block)",
                             offset + i, r->size, name);
                    blk->pending = 1, blk->pending_thread = tl_self, blk->pending_pc = pc;
                    if (!(blk->checks & GT_SIM_RACECHECK)) report_pending(blk);
                }
        }
        if (write || atomic) memset(r->undefined + offset, 0, size);
    }
    if (r->race && !atomic) {
        sim_thread *self = tl_self;
        unsigned tid = self->info.linear_tid;
        warp_state *ws = &blk->warps[tid / WARP];
        for (size_t word = offset / 4; word <= (offset + size - 1) / 4; word++) {
            race_word *w = &r->race[word];
            const char *hazard = NULL;
            unsigned other = 0;
            int hidden_write = 0;
            const void *other_pc = NULL;
            /* Another thread's access in the same barrier interval is a hazard, unless
             * both threads are lanes of one warp that has synchronized since. */
#define GT_ORDERED(t, sync) ((t) / WARP == tid / WARP && (sync) != ws->syncs)
            const char *word_address = r->base + word * 4;
            uint8_t bytes = word_bytes(word, offset, size);
            if (w->write_epoch == blk->epoch && w->writer != tid && (w->write_bytes & bytes) &&
                !GT_ORDERED(w->writer, w->write_sync)) {
                hazard = write ? "Write-after-write" : "Read-after-write";
                other = w->writer, other_pc = w->write_pc;
            } else if (w->read_epoch == blk->epoch && w->reader != tid &&
                       !GT_ORDERED(w->reader, w->read_sync) &&
                       GT_CHANGED_SINCE_READ(w, word_address, w->read_bytes & bytes)) {
                /* Written since the other thread read it, by a write the
                 * instrumentation did not see: the hazard is that write after the read. */
                hazard = "Write-after-read", hidden_write = 1;
                other = w->reader, other_pc = w->read_pc;
            } else if (write && w->read_epoch == blk->epoch && w->reader != tid &&
                       (w->read_bytes & bytes) && !GT_ORDERED(w->reader, w->read_sync)) {
                hazard = "Write-after-read";
                other = w->reader, other_pc = w->read_pc;
            }
#undef GT_ORDERED
            if (hazard) {
                char me[32], them[32];
                describe_thread(me, sizeof me, self);
                describe_thread(them, sizeof them, &blk->threads[other]);
                snprintf(what, sizeof what, "%s hazard on __shared__ memory (%s of size %zu bytes)",
                         hazard, write ? "write" : "read", size);
                Dl_info where;
                unsigned long long other_offset = 0;
                if (other_pc && dladdr(other_pc, &where))
                    other_offset =
                        (unsigned long long)((const char *)other_pc - (const char *)where.dli_fbase);
                int earlier_read = strcmp(hazard, "Write-after-read") == 0;
                if (hidden_write)
                    snprintf(detail, sizeof detail,
                             "byte %zu of __shared__ '%s' was read by thread %s {pc:%llx} and "
                             "written since with no __syncthreads() between them (found when "
                             "thread %s %s it)",
                             word * 4 > offset ? word * 4 : offset, name, them, other_offset, me,
                             write ? "wrote" : "read");
                else
                    snprintf(detail, sizeof detail,
                             "byte %zu of __shared__ '%s' was %s by thread %s {pc:%llx} and is "
                             "now %s by thread %s with no __syncthreads() between them",
                             word * 4 > offset ? word * 4 : offset, name,
                             earlier_read ? "read" : "written", them, other_offset,
                             write ? "written" : "read", me);
                fail(GT_SIM_ERROR_RACECHECK, what, detail, NULL, 0, pc);
            }
            if (write) {
                w->writer = (uint16_t)tid, w->write_epoch = blk->epoch, w->write_sync = ws->syncs;
                w->write_pc = (void *)pc, w->write_bytes = bytes;
            } else if (w->read_epoch != blk->epoch || w->reader == tid) {
                /* One reader is remembered per word and interval: the first other
                 * thread's read stays, so that a later read by this thread cannot hide
                 * it (a tree reduction without __syncthreads() in its loop: thread 0
                 * reads s[64], then thread 64 reads and writes s[64]). */
                w->reader = (uint16_t)tid, w->read_epoch = blk->epoch, w->read_sync = ws->syncs;
                w->read_pc = (void *)pc, w->read_bytes = bytes;
                w->read_value = *(const volatile uint32_t *)word_address;
            }
        }
    }
}

/* Cache of the last allocation an access was found in (per worker), valid while
 * g_mem_version does not change. */
static __thread size_t tl_found_base, tl_found_size;
static __thread unsigned long long tl_found_version = ~0ull;

/* racecheck's record of one 4-byte word of device memory: the last write and read by
 * a thread of which block (a serial number, so records of other blocks are stale). */
typedef struct {
    uint32_t write_block, read_block;
    uint16_t writer, reader;
    uint16_t write_epoch, read_epoch;
    uint32_t read_value; /* as race_word's */
    uint8_t write_bytes, read_bytes;
} global_race_word;
static global_race_word *g_global_race; /* one per word of the arena, reserved on first use */
static pthread_once_t g_global_race_once = PTHREAD_ONCE_INIT;

static void reserve_global_race(void) {
    void *p = mmap(NULL, g_arena_size / 4 * sizeof(global_race_word), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_global_race = p == MAP_FAILED ? NULL : p;
}

/* Two threads of one block touching a word of device memory between the same two
 * barriers, one of them writing, is a hazard (threads of different blocks are not
 * followed: nothing orders them but atomics and fences). */
static void global_race(block_state *blk, size_t offset, size_t size, int write, const void *pc) {
    pthread_once(&g_global_race_once, reserve_global_race);
    if (!g_global_race) return;
    sim_thread *self = tl_self;
    uint16_t tid = (uint16_t)self->info.linear_tid, epoch = (uint16_t)blk->epoch;
    uint32_t serial = (uint32_t)blk->serial;
    for (size_t word = offset / 4; word <= (offset + size - 1) / 4; word++) {
        global_race_word *w = &g_global_race[word];
        const char *hazard = NULL;
        unsigned other = 0;
        const char *word_address = g_arena + word * 4;
        uint8_t bytes = word_bytes(word, offset, size);
        if (w->write_block == serial && w->write_epoch == epoch && w->writer != tid &&
            (w->write_bytes & bytes)) {
            hazard = write ? "Write-after-write" : "Read-after-write";
            other = w->writer;
        } else if (w->read_block == serial && w->read_epoch == epoch && w->reader != tid &&
                   GT_CHANGED_SINCE_READ(w, word_address, w->read_bytes & bytes)) {
            hazard = write ? "Write-after-write" : "Read-after-write";
            other = w->reader;
        } else if (write && w->read_block == serial && w->read_epoch == epoch &&
                   w->reader != tid && (w->read_bytes & bytes)) {
            hazard = "Write-after-read";
            other = w->reader;
        }
        if (hazard) {
            char what[200], detail[400], me[32], them[32];
            describe_thread(me, sizeof me, self);
            describe_thread(them, sizeof them, &blk->threads[other]);
            snprintf(what, sizeof what, "%s hazard on __global__ memory (%s of size %zu bytes)",
                     hazard, write ? "write" : "read", size);
            snprintf(detail, sizeof detail,
                     "address 0x%llx was %s by thread %s of the same block and is now %s by "
                     "thread %s with no __syncthreads() between them (use an atomic, or a "
                     "barrier)",
                     (unsigned long long)((uintptr_t)g_arena + word * 4),
                     strcmp(hazard, "Write-after-read") == 0 ? "read" : "written", them,
                     write ? "written" : "read",
                     me);
            fail(GT_SIM_ERROR_RACECHECK, what, detail, NULL, 0, pc);
        }
        if (write) {
            w->write_block = serial, w->writer = tid, w->write_epoch = epoch;
            w->write_bytes = bytes;
        } else {
            w->read_block = serial, w->reader = tid, w->read_epoch = epoch;
            w->read_value = *(const volatile uint32_t *)word_address, w->read_bytes = bytes;
        }
    }
}

static void global_access(block_state *blk, uintptr_t address, size_t size, int write, int atomic,
                          const void *pc) {
    char what[200], detail[400];
    unsigned checks = blk->checks;
    const gt_sim_launch_config *cfg = blk->config;
    size_t offset = address - (uintptr_t)g_arena;
    if (checks & GT_SIM_MEMCHECK) {
        int inside = 0, freed = 0;
        size_t base = 0, extent = 0;
        if (cfg->nextents > 0) { /* the launch named its allocations: the arguments' tensors */
            size_t best = (size_t)-1;
            for (int i = 0; i < cfg->nextents && !inside; i++) {
                uintptr_t b = (uintptr_t)cfg->extents[2 * i], n = (uintptr_t)cfg->extents[2 * i + 1];
                if (address >= b && address + size <= b + n) inside = 1;
                size_t distance = address >= b + n ? address - (b + n) : b > address ? b - address : 0;
                if (distance < best) best = distance, base = b, extent = n;
            }
        } else {
            if (tl_found_version == g_mem_version && offset >= tl_found_base &&
                offset + size <= tl_found_base + tl_found_size) {
                inside = 1;
            } else {
                tl_in_runtime = 1;
                pthread_mutex_lock(&g_mem_lock);
                unsigned long long version = g_mem_version;
                int where = locate_locked(offset, &base, &extent);
                pthread_mutex_unlock(&g_mem_lock);
                tl_in_runtime = 0;
                check_interrupt();
                inside = where == 1 && offset + size <= base + extent;
                freed = where == 2;
                if (inside)
                    tl_found_base = base, tl_found_size = extent, tl_found_version = version;
                base += (uintptr_t)g_arena;
            }
        }
        if (!inside) {
            snprintf(what, sizeof what, "Invalid __global__ %s of size %zu bytes",
                     access_name(write, atomic), size);
            if (freed)
                snprintf(detail, sizeof detail,
                         "address 0x%llx is inside a %zu-byte allocation at 0x%llx that has been "
                         "freed (use after free)",
                         (unsigned long long)address, extent, (unsigned long long)base);
            else if (extent == 0 && base == (uintptr_t)g_arena)
                snprintf(detail, sizeof detail, "address 0x%llx is not inside any allocation",
                         (unsigned long long)address);
            else if (address >= base + extent || address + size > base + extent)
                snprintf(detail, sizeof detail,
                         "address 0x%llx is %llu bytes past the end of a %zu-byte allocation at "
                         "0x%llx",
                         (unsigned long long)address,
                         (unsigned long long)(address >= base + extent ? address - (base + extent)
                                                                        : 0),
                         extent, (unsigned long long)base);
            else
                snprintf(detail, sizeof detail,
                         "address 0x%llx is %llu bytes before the start of a %zu-byte allocation "
                         "at 0x%llx",
                         (unsigned long long)address, (unsigned long long)(base - address),
                         extent, (unsigned long long)base);
            fail(GT_SIM_ERROR_MEMCHECK, what, detail, NULL, 0, pc);
        }
    }
    if (checks & GT_SIM_INITCHECK) {
        if (!write || atomic) {
            long long first = undefined_find(offset, size);
            if (first >= 0) {
                snprintf(what, sizeof what,
                         "Uninitialized __global__ memory read of size %zu bytes", size);
                snprintf(detail, sizeof detail,
                         "address 0x%llx: byte %lld of the access was never written since its "
                         "memory was allocated (cudaMalloc'd memory, like torch.empty's, is "
                         "undefined until a kernel, a copy or a memset writes it)",
                         (unsigned long long)address, first);
                fail(GT_SIM_ERROR_INITCHECK, what, detail, NULL, 0, pc);
            }
        }
    }
    if ((checks & GT_SIM_RACECHECK) && !atomic) global_race(blk, offset, size, write, pc);
    if (write || atomic) undefined_set(offset, size, 0);
}

/* Every access of checked kernel code comes here (from the __asan_* entry points). */
static void on_access(uintptr_t address, size_t size, int write, int atomic, const void *pc) {
    block_state *blk = tl_block;
    if (!blk || !tl_in_kernel || !tl_self) return; /* host code of a kernel library */
    if (g_interrupt) check_interrupt();
    if (tl_self->bad_index_file) report_bad_index(address, size, write, atomic);
    if (g_arena && address - (uintptr_t)g_arena < g_arena_size) {
        global_access(blk, address, size, write, atomic, pc);
        return;
    }
    for (unsigned i = 0; i < blk->nshared; i++) {
        shared_region *r = &blk->shared[i];
        uintptr_t low = (uintptr_t)r->base - (r->dynamic ? RED_ZONE : 0);
        uintptr_t high = (uintptr_t)r->base + r->size + (r->dynamic ? RED_ZONE : 0);
        if (address + size > low && address < high) {
            shared_access(blk, r, address, size, write, atomic, pc);
            return;
        }
    }
}

void gt_sim_atomic_access(const void *address, size_t nbytes, const char *file, unsigned line) {
    (void)file, (void)line;
    on_access((uintptr_t)address, nbytes, 1, 1, __builtin_return_address(0));
}

/* The address instrumentation's entry points (-fsanitize=kernel-address calls these
 * before each load and store, with the address; the caller's code address is the
 * access's, resolved to a source line by the host). */
#define GT_ASAN_ENTRY(kind, size, write)                                                    \
    void __asan_##kind##size(uintptr_t address) {                                          \
        on_access(address, size, write, 0, __builtin_return_address(0));                   \
    }                                                                                      \
    void __asan_##kind##size##_noabort(uintptr_t address) {                                \
        on_access(address, size, write, 0, __builtin_return_address(0));                   \
    }
GT_ASAN_ENTRY(load, 1, 0)
GT_ASAN_ENTRY(load, 2, 0)
GT_ASAN_ENTRY(load, 4, 0)
GT_ASAN_ENTRY(load, 8, 0)
GT_ASAN_ENTRY(load, 16, 0)
GT_ASAN_ENTRY(store, 1, 1)
GT_ASAN_ENTRY(store, 2, 1)
GT_ASAN_ENTRY(store, 4, 1)
GT_ASAN_ENTRY(store, 8, 1)
GT_ASAN_ENTRY(store, 16, 1)
#undef GT_ASAN_ENTRY
void __asan_loadN(uintptr_t address, size_t size) {
    on_access(address, size, 0, 0, __builtin_return_address(0));
}
void __asan_loadN_noabort(uintptr_t address, size_t size) {
    on_access(address, size, 0, 0, __builtin_return_address(0));
}
void __asan_storeN(uintptr_t address, size_t size) {
    on_access(address, size, 1, 0, __builtin_return_address(0));
}
void __asan_storeN_noabort(uintptr_t address, size_t size) {
    on_access(address, size, 1, 0, __builtin_return_address(0));
}
void __asan_handle_no_return(void) {}

/* The bounds, alignment and division instrumentation (-fsanitize=bounds,alignment,
 * null,integer-divide-by-zero) calls these with a static record of the source position. */
typedef struct {
    const char *file;
    unsigned line, column;
} ubsan_location;
typedef struct {
    uint16_t kind, info;
    char name[];
} ubsan_type;
typedef struct {
    ubsan_location location;
    ubsan_type *array_type, *index_type;
} ubsan_bounds;
typedef struct {
    ubsan_location location;
    ubsan_type *type;
    unsigned char log_alignment, check_kind;
} ubsan_mismatch;
typedef struct {
    ubsan_location location;
    ubsan_type *type;
} ubsan_overflow;

void __ubsan_handle_out_of_bounds(ubsan_bounds *data, uintptr_t index) {
    sim_thread *self = tl_self;
    if (!tl_block || !tl_in_kernel || !self) return;
    int is_signed = data->index_type->kind == 0 && (data->index_type->info & 1);
    self->bad_index = is_signed ? (long long)(intptr_t)index : (long long)index;
    self->bad_index_type = data->array_type->name;
    self->bad_index_line = data->location.line;
    self->bad_index_file = data->location.file; /* reported with the access that follows */
}
void __ubsan_handle_out_of_bounds_abort(ubsan_bounds *data, uintptr_t index) {
    __ubsan_handle_out_of_bounds(data, index);
    if (tl_self && tl_self->bad_index_file) report_bad_index(0, 0, 0, 0);
}

void __ubsan_handle_type_mismatch_v1(ubsan_mismatch *data, uintptr_t pointer) {
    if (!tl_block || !tl_in_kernel || !tl_self || !(tl_block->checks & GT_SIM_MEMCHECK)) return;
    char what[200], detail[400];
    int write = data->check_kind == 1;
    int global = g_arena && pointer - (uintptr_t)g_arena < g_arena_size;
    unsigned long alignment = 1ul << data->log_alignment;
    const char *space = global ? "__global__" : on_own_stack(pointer) ? "__local__" : "__shared__";
    if (pointer == 0) {
        snprintf(what, sizeof what, "Invalid %s of a null pointer", write ? "write" : "read");
        snprintf(detail, sizeof detail, "the pointer to '%s' is NULL", data->type->name);
    } else if (pointer & (alignment - 1)) {
        snprintf(what, sizeof what, "Invalid %s %s (misaligned address)", space,
                 write ? "write" : "read");
        snprintf(detail, sizeof detail,
                 "address 0x%llx is misaligned: a '%s' needs %lu-byte alignment",
                 (unsigned long long)pointer, data->type->name, alignment);
    } else {
        return;
    }
    fail(GT_SIM_ERROR_MEMCHECK, what, detail, data->location.file, data->location.line, NULL);
}
void __ubsan_handle_type_mismatch_v1_abort(ubsan_mismatch *data, uintptr_t pointer) {
    __ubsan_handle_type_mismatch_v1(data, pointer);
}

void __ubsan_handle_divrem_overflow(ubsan_overflow *data, uintptr_t lhs, uintptr_t rhs) {
    (void)lhs;
    if (!tl_block || !tl_in_kernel) return;
    fail(GT_SIM_ERROR_FAULT,
         rhs == 0 ? "integer division by zero" : "integer overflow in a division",
         rhs == 0 ? "the divisor is 0 (an integer division by zero; on a GPU the result is "
                    "undefined)"
                  : "the most negative integer divided by -1 does not fit its type",
         data->location.file, data->location.line, NULL);
}
void __ubsan_handle_divrem_overflow_abort(ubsan_overflow *data, uintptr_t lhs, uintptr_t rhs) {
    __ubsan_handle_divrem_overflow(data, lhs, rhs);
}

/* ------------------------------------------------------------------ faults and interrupts */

#define INTERRUPT_SIGNAL SIGURG /* ignored by default, so a stray one harms nothing */
static struct sigaction g_previous[NSIG];
static pthread_once_t g_signals_once = PTHREAD_ONCE_INIT;

static void on_signal(int sig, siginfo_t *info, void *context) {
    block_state *blk = tl_block;
    if (blk && tl_in_kernel) {
        if (sig == INTERRUPT_SIGNAL) {
            if (!g_interrupt || tl_in_runtime) return; /* the next check stops it */
            record(GT_SIM_ERROR_INTERRUPT, "interrupted", "", NULL, 0, NULL);
            siglongjmp(blk->abort, 1);
        }
        const void *pc = NULL;
#if defined(__x86_64__)
        pc = (const void *)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
        pc = (const void *)((ucontext_t *)context)->uc_mcontext.pc;
#endif
        uintptr_t address = (uintptr_t)info->si_addr;
        char what[200], detail[400];
        const char *name = sig == SIGSEGV ? "segmentation fault (SIGSEGV)"
                           : sig == SIGBUS ? "bus error (SIGBUS)"
                           : sig == SIGFPE ? "arithmetic exception (SIGFPE)"
                                           : "illegal instruction (SIGILL)";
        snprintf(what, sizeof what, "%s", name);
        size_t slot = tl_stack_size ? (address - (uintptr_t)tl_stacks) / tl_stack_size : 0;
        if (sig == SIGFPE && info->si_code == FPE_INTDIV) {
            snprintf(what, sizeof what, "integer division by zero (SIGFPE)");
            snprintf(detail, sizeof detail, "an integer was divided by 0");
        } else if (sig == SIGILL) {
            snprintf(detail, sizeof detail,
                     "the compiler turned code it proved undefined (a division by a constant "
                     "0, a missing return) into a trap");
        } else if (tl_stacks && address >= (uintptr_t)tl_stacks && slot < MAX_BLOCK_THREADS &&
                   address - (uintptr_t)tl_stacks - slot * tl_stack_size < GUARD) {
            snprintf(what, sizeof what, "stack overflow");
            snprintf(detail, sizeof detail,
                     "the thread used more than its %zu-byte stack (deep recursion or a large "
                     "local array; GLASSTORCH_SIM_STACK=<bytes> sets the size)",
                     tl_stack_size - GUARD);
        } else if (g_arena && address - (uintptr_t)g_arena < g_arena_size) {
            snprintf(detail, sizeof detail, "address 0x%llx in device memory",
                     (unsigned long long)address);
        } else {
            snprintf(detail, sizeof detail,
                     "address 0x%llx is not device memory (an out-of-bounds index, or a host "
                     "pointer)",
                     (unsigned long long)address);
        }
        record(GT_SIM_ERROR_FAULT, what, detail, NULL, 0, pc);
        siglongjmp(blk->abort, 1);
    }
    if (sig == INTERRUPT_SIGNAL) return;
    struct sigaction *previous = &g_previous[sig]; /* not a kernel's fault: as before us */
    if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction) {
        previous->sa_sigaction(sig, info, context);
    } else if (previous->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL); /* the instruction runs again and the default action follows */
    } else if (previous->sa_handler != SIG_IGN) {
        previous->sa_handler(sig);
    }
}

static void install_signals(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, INTERRUPT_SIGNAL};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &action, &g_previous[signals[i]]);
}

/* Each worker handles signals on a stack of its own, so a coroutine that overflowed
 * its stack can still be reported. */
static void worker_signals(void) {
    pthread_once(&g_signals_once, install_signals);
    stack_t alternate;
    alternate.ss_size = 64 * 1024;
    alternate.ss_sp = malloc(alternate.ss_size);
    alternate.ss_flags = 0;
    sigaltstack(&alternate, NULL);
}

void gt_sim_interrupt(int on) {
    g_interrupt = on;
    if (!on) return;
    pthread_mutex_lock(&g_streams_lock);
    for (gt_sim_stream *s = g_streams; s; s = s->next_stream)
        if (s->busy) pthread_kill(s->thread, INTERRUPT_SIGNAL);
    pthread_mutex_unlock(&g_streams_lock);
}

/* ------------------------------------------------------------------ launches */

const char *gt_sim_check_config(gt_sim_dim3 grid, gt_sim_dim3 block,
                                unsigned long long dynamic_shared) {
    static __thread char message[300];
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    message[0] = 0;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
        snprintf(message, sizeof message,
                 "invalid configuration argument (cudaErrorInvalidConfiguration): grid "
                 "(%u,%u,%u) and block (%u,%u,%u) must have every size at least 1",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z);
    else if (threads > MAX_BLOCK_THREADS || block.x > 1024 || block.y > 1024 || block.z > 64)
        snprintf(message, sizeof message,
                 "invalid configuration argument (cudaErrorInvalidConfiguration): block "
                 "(%u,%u,%u) has %llu threads; a block has at most 1024 threads, with x and y at "
                 "most 1024 and z at most 64",
                 block.x, block.y, block.z, threads);
    else if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        snprintf(message, sizeof message,
                 "invalid configuration argument (cudaErrorInvalidConfiguration): grid "
                 "(%u,%u,%u) is too large; grid x is at most 2^31-1, y and z at most 65535",
                 grid.x, grid.y, grid.z);
    else if (dynamic_shared > GT_SIM_MAX_STATIC_SHARED)
        snprintf(message, sizeof message,
                 "invalid argument (cudaErrorInvalidValue): %llu bytes of dynamic shared memory "
                 "exceed the %u bytes a block may use without opting in to more "
                 "(cudaFuncAttributeMaxDynamicSharedMemorySize, which the simulator does not "
                 "model)",
                 dynamic_shared, GT_SIM_MAX_STATIC_SHARED);
    return message;
}

/* An unchecked kernel's writes are not seen one by one: for initcheck, the
 * allocations its pointer arguments point into count as written once it runs. */
static void mark_arguments_defined(const gt_sim_launch_config *cfg) {
    if (!g_undefined) return;
    pthread_mutex_lock(&g_mem_lock);
    for (int i = 0; i < cfg->nextents; i++) {
        uintptr_t address = (uintptr_t)cfg->extents[2 * i];
        size_t nbytes = (size_t)cfg->extents[2 * i + 1];
        if (!g_arena || address - (uintptr_t)g_arena >= g_arena_size) continue;
        size_t offset = address - (uintptr_t)g_arena, base, size;
        if (nbytes) {
            undefined_set(offset, nbytes, 0);
        } else if (locate_locked(offset, &base, &size) == 1) {
            undefined_set(base, size, 0);
        }
    }
    pthread_mutex_unlock(&g_mem_lock);
}

void gt_sim_run_grid(gt_sim_dim3 grid, gt_sim_dim3 block, const gt_sim_launch_config *config,
                     void (*body)(void *), void *args) {
    const char *invalid = gt_sim_check_config(grid, block, config->dynamic_shared);
    if (invalid[0]) {
        record(GT_SIM_ERROR_LAUNCH, invalid, "", NULL, 0, NULL);
        return;
    }
    if (g_interrupt) return; /* skipped: the host interrupted the device */
    if (!(config->checks & GT_SIM_INITCHECK)) mark_arguments_defined(config);
    unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
    block_state *blk = calloc(1, sizeof *blk);
    blk->nthreads = (unsigned)nthreads;
    blk->body = body;
    blk->args = args;
    blk->config = config;
    blk->checks = config->checks;
    if (config->dynamic_shared) {
        blk->dynamic = malloc(2 * RED_ZONE + config->dynamic_shared);
        add_region(blk, blk->dynamic + RED_ZONE, config->dynamic_shared, "extern __shared__", 1);
    }
    for (unsigned i = 0; i < nthreads; i++) {
        gt_sim_thread_info *info = &blk->threads[i].info;
        info->thread_idx = (gt_sim_dim3){i % block.x, i / block.x % block.y, i / (block.x * block.y)};
        info->block_dim = block;
        info->grid_dim = grid;
        info->linear_tid = i;
    }
    tl_block = blk;
    tl_self = NULL;
    if (sigsetjmp(blk->abort, 1) == 0) {
        tl_in_kernel = 1;
        for (unsigned z = 0; z < grid.z; z++)
            for (unsigned y = 0; y < grid.y; y++)
                for (unsigned x = 0; x < grid.x; x++) {
                    for (unsigned i = 0; i < nthreads; i++)
                        blk->threads[i].info.block_idx = (gt_sim_dim3){x, y, z};
                    tl_self = NULL;
                    run_block(blk);
                }
    }
    tl_in_kernel = 0;
    tl_block = NULL;
    tl_self = NULL;
    for (unsigned i = 0; i < blk->nshared; i++) {
        free(blk->shared[i].undefined);
        free(blk->shared[i].race);
    }
    free(blk->dynamic);
    free(blk);
}
