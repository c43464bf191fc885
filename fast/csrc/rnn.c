/* rnn.c: one LSTM time step's elementwise work, forward and backward
 * (reference/nn.py, LSTMCellKernels, says the same in Python).
 *
 * Forward, for each row b and unit j, with the gates' pre-activations in
 * PyTorch's order i, f, g, o (four blocks of H along the row):
 *
 *     i, f, o = sigmoid(...), g = tanh(...)
 *     c = f * c_prev + i * g,   tanh_c = tanh(c),   h = o * tanh_c
 *
 * Backward, from the gradients d_h and d_c reaching h and c:
 *
 *     dc = d_c + d_h * o * (1 - tanh_c^2)
 *     d_gates = [dc g i(1-i), dc c_prev f(1-f), dc i (1-g^2), d_h tanh_c o(1-o)]
 *     d_c_prev = dc * f
 *
 * Fusing is the point: a step of nn.LSTM becomes one matrix product and one
 * call here, instead of a dozen small operations that each cost more in
 * Python than in arithmetic. The j loop is contiguous in every array and
 * float32 uses branch-free sigmoid and tanh (gt_math.h's method), so it vectorises;
 * large enough steps share their rows between the threads.
 */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm.h"
#include "gt_common.h"
#include "gt_math.h"
#include "rnn.h"
#include "threads.h"

static inline double gt_sigmoid_f64_rnn(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    const double e = exp(x);
    return e / (1.0 + e);
}

/* Optimization (the gates' exponentials without their special cases): the
 * layer's sigmoids and tanhs are gt_math.h's formulas, with exp and expm1
 * made for arguments <= 0 and their compare-and-selects for NaN (and exp's
 * flush to 0) left out. A NaN needs no test of its own: the clamp below keeps it (NaN < lowest
 * is false) and it flows through the arithmetic to the result. 2^k is made
 * from the bits of the rounded sum (gt_pow2_rounded_f32) rather than through
 * a float-to-int conversion. And exp does not flush below its clamp: there
 * it returns exp(-87.68), about 8e-39, where the exact answer is smaller
 * still (a sigmoid of x < -87.68 is under 1e-38 either way). About 13% less
 * time per cell step at AVX2 and at AVX-512 (32 x 256 units: 23.8 -> 20.8 us
 * on one AVX2 core; a 64-step layer forward, 10.35 -> about 10.0 ms), with
 * the same accuracy as gt_math.h's. */
static inline float lstm_exp_nonpositive_f32(float x)
{
    const float lowest = -87.68f; /* 126.5 * ln2, less a little: k >= -126 */
    float q, rounded;
    gt_exp_split_f32(x < lowest ? lowest : x, &q, &rounded);
    return (1.0f + q) * gt_pow2_rounded_f32(rounded, 1);
}

/* expm1(x) for x <= 0, as gt_expm1_nonpositive_f32: 2^k * (q + (1 - 2^-k)).
 * Below -30 the answer is -1 in float32 (k >= -44). expm1(-0) is +0 here;
 * the tanh below puts the sign back. */
static inline float lstm_expm1_nonpositive_f32(float x)
{
    float q, rounded;
    gt_exp_split_f32(x < -30.0f ? -30.0f : x, &q, &rounded);
    return (q + (1.0f - gt_pow2_rounded_f32(rounded, -1))) * gt_pow2_rounded_f32(rounded, 1);
}

/* sigmoid(x) from e = exp(-|x|) <= 1, as gt_sigmoid_f32. */
static inline float lstm_sigmoid_f32(float x)
{
    const float e = lstm_exp_nonpositive_f32(-fabsf(x));
    const float s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s; /* a NaN takes e * s: NaN */
}

/* tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x, as gt_tanh_f32. */
static inline float lstm_tanh_f32(float x)
{
    const float t = lstm_expm1_nonpositive_f32(-2.0f * fabsf(x));
    return copysignf(-t / (2.0f + t), x); /* NaN stays NaN */
}
#define SIGMOID_F64 gt_sigmoid_f64_rnn
#define TANH_F64 tanh

/* Optimization (rows in parallel): from this many units (batch x hidden) up,
 * the batch rows are shared out between the threads. A step follows a matrix
 * product that left half of its gates in each core's cache, and each unit
 * costs five exponentials: 32 x 256 units took 85 us on one thread inside a
 * training step. */
#define CELL_PARALLEL_MIN 4096

/* The element pointer of a contiguous view. */
#define AT(CTYPE, v) ((CTYPE *)(v)->data + (v)->offset)

/* One function per float type, from one body.
 *
 * Optimization: the work of one batch row is a function of its own over plain
 * `restrict` pointers, one per gate block. Written inline over the gt_view
 * structs, GCC could not prove that the stores miss the views' own fields and
 * gave up vectorising ("complicated access pattern"): the float32 step ran
 * scalar, about 10x slower. */
#define DEFINE_LSTM_CELL(SUFFIX, CTYPE, SIGMOID, TANH)                                           \
    static void lstm_row_##SUFFIX(int64_t hidden, const CTYPE *restrict z,                      \
                                  const CTYPE *restrict cp, CTYPE *restrict a,                   \
                                  CTYPE *restrict cc, CTYPE *restrict tc, CTYPE *restrict hh)    \
    {                                                                                            \
        const CTYPE *restrict zi = z, *restrict zf = z + hidden;                                 \
        const CTYPE *restrict zg = z + 2 * hidden, *restrict zo = z + 3 * hidden;                \
        CTYPE *restrict ai = a, *restrict af = a + hidden;                                       \
        CTYPE *restrict ag = a + 2 * hidden, *restrict ao = a + 3 * hidden;                      \
        for (int64_t j = 0; j < hidden; j++) {                                                   \
            const CTYPE i = SIGMOID(zi[j]), f = SIGMOID(zf[j]);                                  \
            const CTYPE g = TANH(zg[j]), o = SIGMOID(zo[j]);                                     \
            ai[j] = i, af[j] = f, ag[j] = g, ao[j] = o;                                          \
            const CTYPE cell = f * cp[j] + i * g, t = TANH(cell);                                \
            cc[j] = cell, tc[j] = t, hh[j] = o * t;                                              \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void lstm_cell_##SUFFIX(gt_view *h, gt_view *c, gt_view *act, gt_view *tanh_c,       \
                                   const gt_view *gates, const gt_view *c_prev)                  \
    {                                                                                            \
        const int64_t batch = h->shape[0], hidden = h->shape[1];                                 \
        _Pragma("omp parallel for schedule(static) if (batch * hidden >= CELL_PARALLEL_MIN)")    \
        for (int64_t b = 0; b < batch; b++)                                                      \
            lstm_row_##SUFFIX(hidden, AT(const CTYPE, gates) + b * 4 * hidden,                   \
                              AT(const CTYPE, c_prev) + b * hidden,                              \
                              AT(CTYPE, act) + b * 4 * hidden, AT(CTYPE, c) + b * hidden,        \
                              AT(CTYPE, tanh_c) + b * hidden, AT(CTYPE, h) + b * hidden);        \
    }                                                                                            \
                                                                                                 \
    static void lstm_row_backward_##SUFFIX(                                                      \
        int64_t hidden, const CTYPE *restrict a, const CTYPE *restrict tc,                       \
        const CTYPE *restrict cp, const CTYPE *restrict dh, const CTYPE *restrict dcn,           \
        CTYPE *restrict dz, CTYPE *restrict dcp)                                                 \
    {                                                                                            \
        const CTYPE *restrict ai = a, *restrict af = a + hidden;                                 \
        const CTYPE *restrict ag = a + 2 * hidden, *restrict ao = a + 3 * hidden;                \
        CTYPE *restrict dzi = dz, *restrict dzf = dz + hidden;                                   \
        CTYPE *restrict dzg = dz + 2 * hidden, *restrict dzo = dz + 3 * hidden;                  \
        for (int64_t j = 0; j < hidden; j++) {                                                   \
            const CTYPE i = ai[j], f = af[j], g = ag[j], o = ao[j], t = tc[j];                   \
            const CTYPE dc = dcn[j] + dh[j] * o * (1 - t * t);                                   \
            dzi[j] = dc * g * i * (1 - i);                                                       \
            dzf[j] = dc * cp[j] * f * (1 - f);                                                   \
            dzg[j] = dc * i * (1 - g * g);                                                       \
            dzo[j] = dh[j] * t * o * (1 - o);                                                    \
            dcp[j] = dc * f;                                                                     \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    static void lstm_cell_backward_##SUFFIX(gt_view *d_gates, gt_view *d_c_prev,                \
                                            const gt_view *d_h, const gt_view *d_c,              \
                                            const gt_view *act, const gt_view *tanh_c,           \
                                            const gt_view *c_prev)                               \
    {                                                                                            \
        const int64_t batch = d_h->shape[0], hidden = d_h->shape[1];                             \
        _Pragma("omp parallel for schedule(static) if (batch * hidden >= CELL_PARALLEL_MIN)")    \
        for (int64_t b = 0; b < batch; b++)                                                      \
            lstm_row_backward_##SUFFIX(                                                          \
                hidden, AT(const CTYPE, act) + b * 4 * hidden,                                   \
                AT(const CTYPE, tanh_c) + b * hidden, AT(const CTYPE, c_prev) + b * hidden,      \
                AT(const CTYPE, d_h) + b * hidden, AT(const CTYPE, d_c) + b * hidden,            \
                AT(CTYPE, d_gates) + b * 4 * hidden, AT(CTYPE, d_c_prev) + b * hidden);          \
    }

DEFINE_LSTM_CELL(f32, float, lstm_sigmoid_f32, lstm_tanh_f32)
DEFINE_LSTM_CELL(f64, double, SIGMOID_F64, TANH_F64)

/* ------------------------------------------------------------------------
 * A whole layer: every time step's matrix product and cell in one call.
 *
 * Optimization (the sequence in C, as oneDNN's LSTM primitive runs it): a
 * step driven from Python costs a dozen interpreter-level operations and
 * three parallel regions (product, add, cell), each a fork and a join of the
 * threads; at 32 x 256 a step's arithmetic takes about 40 us, so that
 * overhead was a fifth of the layer. Here the threads start once per
 * sequence and meet once per step.
 *
 * Optimization (work cut by hidden units): a step is cut into slivers of
 * hidden units (NR of them: one column sliver of the product). For a sliver
 * a thread computes the four gates' columns of those units (the product),
 * then their cell: everything the cell of unit u needs is the gates of u, so
 * no thread waits for another between product and cell, and the product's
 * output is still in L1 when the cell reads it. The one wait per step is
 * where the next product needs all of h. Backward the same: the product
 * dh[:, units] = d_gates @ W_hh[:, units] gives the gradient of those units,
 * whose cell backward then makes their gate gradients. Each thread owns a
 * range of slivers (and takes others' when it is done: see "slivers stolen"
 * below).
 *
 * Optimization (prepacked weights, see gt_gemm_packed_b in gemm.c): each
 * thread packs the W_hh slivers of its own range once per sequence, into its
 * own L2, and every step's product reads them there.
 * ------------------------------------------------------------------------ */

/* `bytes` rounded up to whole cache lines (the buffers below share one allocation). */
static int64_t round_up64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

/* From this many multiply-adds per step up, the units are shared out. */
#define LSTM_PARALLEL_MIN (64 * 64 * 64)

/* Units [0, count) of every batch row forward: `act` holds the product
 * h @ W_hh^T (four blocks of `hidden` in each row of 4 * hidden) and becomes
 * the activations; `x` is the input's share of the gates (same layout) and
 * `bias` the bias; cp, cc, tc and hh are rows of `hidden`.
 *
 * Optimization (the batch loop inside): a sliver is NR units (16 floats at
 * AVX2: two vectors) in each of B rows. Called once per row, the function's
 * entry, its loop's set-up and the run-time check that its stores miss its
 * loads (GCC cannot prove it: the four gate blocks are one pointer) cost as
 * much as the two vectors of work; once per sliver, the checks go
 * (`ivdep`: the blocks never overlap) and the rows run back to back. The
 * numbers are unchanged. */
#define DEFINE_LSTM_UNITS(SUFFIX, CTYPE, SIGMOID, TANH)                                          \
    static void lstm_units_forward_##SUFFIX(int64_t batch, int64_t count, int64_t hidden,       \
                                            const void *x_, const void *bias_, const void *cp_,  \
                                            void *act_, void *cc_, void *tc_, void *hh_)         \
    {                                                                                            \
        const CTYPE *restrict x = x_, *restrict bias = bias_, *restrict cp = cp_;               \
        CTYPE *restrict act = act_, *restrict cc = cc_, *restrict tc = tc_, *restrict hh = hh_; \
        const int64_t s = hidden;                                                                \
        for (int64_t b = 0; b < batch; b++) {                                                    \
            const CTYPE *restrict xb = x + b * 4 * s, *restrict cpb = cp + b * s;                \
            CTYPE *restrict ab = act + b * 4 * s;                                                \
            CTYPE *restrict ccb = cc + b * s, *restrict tcb = tc + b * s;                        \
            CTYPE *restrict hb = hh + b * s;                                                     \
            _Pragma("GCC ivdep") for (int64_t j = 0; j < count; j++)                             \
            {                                                                                    \
                const CTYPE i = SIGMOID(ab[j] + xb[j] + bias[j]);                                \
                const CTYPE f = SIGMOID(ab[s + j] + xb[s + j] + bias[s + j]);                    \
                const CTYPE g = TANH(ab[2 * s + j] + xb[2 * s + j] + bias[2 * s + j]);           \
                const CTYPE o = SIGMOID(ab[3 * s + j] + xb[3 * s + j] + bias[3 * s + j]);        \
                ab[j] = i, ab[s + j] = f, ab[2 * s + j] = g, ab[3 * s + j] = o;                  \
                const CTYPE cell = f * cpb[j] + i * g, t = TANH(cell);                           \
                ccb[j] = cell, tcb[j] = t, hb[j] = o * t;                                        \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    /* Backward: dh (the product's share) plus dout (the output's, if any) reach h; dc       */ \
    /* reaches c and becomes the gradient of c_prev; dz gets the gates' gradients. Rows as   */ \
    /* forward: a and dz of 4 * hidden, the others of hidden.                                */ \
    static inline __attribute__((always_inline)) void lstm_units_backward_body_##SUFFIX(        \
        int64_t batch, int64_t count, int64_t s, const CTYPE *restrict dout,                     \
        const CTYPE *restrict dh, CTYPE *restrict dc, const CTYPE *restrict a,                   \
        const CTYPE *restrict tc, const CTYPE *restrict cp, CTYPE *restrict dz, const int has_out) \
    {                                                                                            \
        for (int64_t b = 0; b < batch; b++) {                                                    \
            const CTYPE *restrict ab = a + b * 4 * s, *restrict tcb = tc + b * s;                \
            const CTYPE *restrict cpb = cp + b * s, *restrict dhb = dh + b * s;                  \
            const CTYPE *restrict dob = has_out ? dout + b * s : dhb;                            \
            CTYPE *restrict dcb = dc + b * s, *restrict dzb = dz + b * 4 * s;                    \
            _Pragma("GCC ivdep") for (int64_t j = 0; j < count; j++)                             \
            {                                                                                    \
                const CTYPE i = ab[j], f = ab[s + j], g = ab[2 * s + j];                         \
                const CTYPE o = ab[3 * s + j], t = tcb[j];                                       \
                const CTYPE d_h = has_out ? dhb[j] + dob[j] : dhb[j];                            \
                const CTYPE d_c = dcb[j] + d_h * o * (1 - t * t);                                \
                dzb[j] = d_c * g * i * (1 - i);                                                  \
                dzb[s + j] = d_c * cpb[j] * f * (1 - f);                                         \
                dzb[2 * s + j] = d_c * i * (1 - g * g);                                          \
                dzb[3 * s + j] = d_h * t * o * (1 - o);                                          \
                dcb[j] = d_c * f;                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void lstm_units_backward_##SUFFIX(int64_t batch, int64_t count, int64_t hidden,      \
                                             const void *dout, const void *dh, void *dc,         \
                                             const void *a, const void *tc, const void *cp,      \
                                             void *dz)                                           \
    {                                                                                            \
        if (dout != NULL)                                                                        \
            lstm_units_backward_body_##SUFFIX(batch, count, hidden, dout, dh, dc, a, tc, cp, dz, \
                                              1);                                                \
        else                                                                                     \
            lstm_units_backward_body_##SUFFIX(batch, count, hidden, NULL, dh, dc, a, tc, cp, dz, \
                                              0);                                                \
    }

DEFINE_LSTM_UNITS(f32, float, lstm_sigmoid_f32, lstm_tanh_f32)
DEFINE_LSTM_UNITS(f64, double, SIGMOID_F64, TANH_F64)

typedef void (*lstm_units_forward_fn)(int64_t batch, int64_t count, int64_t hidden, const void *x,
                                      const void *bias, const void *cp, void *act, void *cc,
                                      void *tc, void *hh);
typedef void (*lstm_units_backward_fn)(int64_t batch, int64_t count, int64_t hidden,
                                       const void *dout, const void *dh, void *dc, const void *a,
                                       const void *tc, const void *cp, void *dz);

/* Optimization (slivers stolen): a step's work is cut into slivers of NR
 * hidden units (the four gates' product for them, then their cell), and each
 * thread owns a range of them: it packed their weights, which sit in its L2.
 * A thread takes its own slivers first, then any of the others' still
 * unclaimed. On an idle machine every thread does its own; when another
 * program slows one core down, the other thread takes over part of its work
 * (a fixed share made the slowed thread set the pace of the whole layer).
 *
 * Optimization (steps that wait for work, not for threads): a step may start
 * once every sliver of the one before is finished, and that is all the
 * threads wait for; no step waits for a thread to arrive. Claims and
 * finished slivers are counted over the whole sequence: owner k's counter
 * runs through its slivers of step 0, then of step 1, and so on, each claim a
 * compare-and-swap that never takes a sliver of a step not yet begun; the
 * threads' counts of the slivers they finished add up to how many are
 * finished, so step s may begin at s * slivers. A thread that the operating
 * system has paused (another program's turn on its core) thus holds the
 * others up only while it holds an unfinished sliver: the rest of the team
 * runs on through the steps, taking its slivers too, and the paused thread,
 * once back, skips to the step in progress. With a barrier per step (every thread arriving), such a
 * pause stalled the step until the paused thread ran again, however little
 * it had left to do.
 *
 * Optimization (a wait that yields): OpenMP's barrier, waiting for a thread
 * that the operating system has paused, spins for a few milliseconds before
 * it sleeps, and so keeps the core from the very thread it waits for (when
 * both share it): a layer took 250 ms instead of 3 on a busy machine. The
 * wait here spins briefly (LSTM_SPINS pauses, some microseconds: on an idle
 * machine the other thread is that close), then gives the core away
 * (sched_yield) each time it looks.
 *
 * Optimization (a paused thread withdraws): a thread paused while it holds a
 * sliver still holds the team up, until the operating system runs it again
 * (a turn of another program takes milliseconds, some hundred slivers). With
 * a program of another session busy on one core (Linux shares the cores out
 * between sessions first, whatever their nice values), the thread there was
 * paused about half the time, most often in a sliver: the layer took twice
 * its time on one thread. So a thread whose sliver took far longer than its
 * fastest (LSTM_PAUSED_FACTOR times, and at least LSTM_PAUSED_NS: no
 * arithmetic of a sliver varies so much) leaves the rest of the sequence to
 * the others, the last thread never leaving: the layer then takes about its
 * time on one thread, plus the one pause. */
#define LSTM_SPINS 2000
#define LSTM_PAUSED_FACTOR 8
#define LSTM_PAUSED_NS 300000

typedef struct {
    int threads;
    int64_t slivers; /* slivers per step */
    /* Thread k's line, at claims + k * LSTM_CLAIM_STRIDE: [0] its own slivers
     * claimed so far (by anyone, over all steps), [1] the slivers it finished. */
    int64_t *claims;
    int64_t *active; /* threads still taking slivers (a cache line of its own) */
} lstm_team;

/* Each thread's counters a cache line apart, so that threads do not share a line. */
#define LSTM_CLAIM_STRIDE 8

/* The first sliver of thread k's own range. */
static int64_t lstm_first_sliver(const lstm_team *team, int k)
{
    return team->slivers * k / team->threads;
}

/* A waiting thread's pause between two looks, the `spins`-th (see "a wait that
 * yields"): a hint to the core that it is spinning (x86's `pause`) for the
 * first LSTM_SPINS looks, then the core given away. */
static inline void lstm_wait_a_little(int spins)
{
    if (spins >= LSTM_SPINS) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until `count` slivers are finished (every sliver of the steps before
 * the one about to begin), then returns the first step not yet finished: a
 * thread that was paused finds the others steps ahead and skips there. */
static int64_t lstm_wait_step(lstm_team *team, int64_t count)
{
    int64_t done = 0;
    for (int spins = 0;; spins++) {
        done = 0;
        for (int k = 0; k < team->threads; k++)
            done += __atomic_load_n(&team->claims[k * LSTM_CLAIM_STRIDE + 1], __ATOMIC_ACQUIRE);
        if (done >= count) return done / team->slivers;
        lstm_wait_a_little(spins);
    }
}

/* Marks a sliver finished by thread `id`: its results are visible to whoever
 * sees the count. Optimization (a count per thread): each thread's count is
 * written by that thread alone, on its own cache line, and read by the others
 * only while they wait; one shared count, a read-modify-write from either
 * core at every sliver, moved its line between the cores at every sliver. */
static void lstm_finish(lstm_team *team, int id)
{
    int64_t *mine = &team->claims[id * LSTM_CLAIM_STRIDE + 1];
    __atomic_store_n(mine, __atomic_load_n(mine, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/* The next sliver of step `step` for thread `id` (its own first, then the
 * others'), or -1 when every sliver of that step is claimed. */
static int64_t lstm_claim(lstm_team *team, int id, int64_t step)
{
    for (int i = 0; i < team->threads; i++) {
        const int k = (id + i) % team->threads;
        const int64_t first = lstm_first_sliver(team, k);
        const int64_t own = lstm_first_sliver(team, k + 1) - first;
        int64_t *next = &team->claims[k * LSTM_CLAIM_STRIDE];
        int64_t claimed = __atomic_load_n(next, __ATOMIC_RELAXED);
        while (claimed < (step + 1) * own) {
            if (__atomic_compare_exchange_n(next, &claimed, claimed + 1, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return first + claimed - step * own;
        }
    }
    return -1;
}

/* Nanoseconds on a monotonic clock, for a team of more than one thread (a
 * lone thread has no one to leave its work to: 0, and no clock read). */
static int64_t lstm_now(const lstm_team *team)
{
    if (team->threads < 2) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Whether this thread, whose last sliver took `elapsed` ns (`fastest`: its
 * fastest so far), was paused in it and now leaves the team (see "a paused
 * thread withdraws"); never the last thread taking slivers. */
static int lstm_withdraws(lstm_team *team, int64_t *fastest, int64_t elapsed)
{
    if (elapsed < *fastest) *fastest = elapsed;
    if (elapsed < LSTM_PAUSED_NS || elapsed < LSTM_PAUSED_FACTOR * *fastest) return 0;
    int64_t active = __atomic_load_n(team->active, __ATOMIC_RELAXED);
    while (active > 1)
        if (__atomic_compare_exchange_n(team->active, &active, active - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return 1;
    return 0;
}

/* A single barrier: after every thread has packed its slivers of W_hh. */
static void lstm_wait_all(int *arrived, int threads)
{
    __atomic_add_fetch(arrived, 1, __ATOMIC_ACQ_REL);
    for (int spins = 0; __atomic_load_n(arrived, __ATOMIC_ACQUIRE) < threads; spins++)
        lstm_wait_a_little(spins);
}

/* How many threads share a layer of `hidden` units (in `slivers` slivers of the
 * product) whose steps do `work` multiply-adds. */
static int lstm_threads(int64_t slivers, int64_t work)
{
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (work < LSTM_PARALLEL_MIN) threads = 1;
    return threads > slivers ? (int)(slivers > 0 ? slivers : 1) : threads;
}

/* Whether a view is contiguous, of `dtype`, with `ndim` dimensions. */
static int contiguous_of(const gt_view *v, int dtype, int ndim)
{
    if (v->dtype != dtype || v->ndim != ndim) return 0;
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != expected) return 0;
        expected *= v->shape[d];
    }
    return 1;
}

int gt_lstm_forward(gt_view *hs, gt_view *cs, gt_view *activations, gt_view *tanh_c,
                    const gt_view *inputs, const gt_view *bias, const gt_view *w_hh, int reverse)
{
    const int dtype = hs->dtype;
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return -1;
    if (!contiguous_of(hs, dtype, 3) || !contiguous_of(cs, dtype, 3) ||
        !contiguous_of(activations, dtype, 3) || !contiguous_of(tanh_c, dtype, 3) ||
        !contiguous_of(inputs, dtype, 3) || !contiguous_of(w_hh, dtype, 2) ||
        (bias != NULL && !contiguous_of(bias, dtype, 1)))
        return -1;
    const lstm_units_forward_fn units =
        dtype == GT_FLOAT32 ? lstm_units_forward_f32 : lstm_units_forward_f64;
    const int64_t steps = inputs->shape[0], batch = inputs->shape[1], hidden = hs->shape[2];
    const int64_t size = dtype == GT_FLOAT32 ? 4 : 8, nr = gt_gemm_tile_columns(dtype);
    if (steps == 0 || batch == 0 || hidden == 0) return 0;
    const int64_t gate_bytes = round_up64(gt_gemm_packed_b_bytes(dtype, hidden, hidden));
    const int threads = lstm_threads((hidden + nr - 1) / nr, batch * 4 * hidden * hidden);
    /* The packed weight, the bias (zeros when there is none), the counters. */
    const int64_t bias_bytes = round_up64(4 * hidden * size);
    const int64_t claim_bytes = (threads + 1) * LSTM_CLAIM_STRIDE * (int64_t)sizeof(int64_t);
    char *packed = aligned_alloc(64, (size_t)(4 * gate_bytes + bias_bytes + claim_bytes));
    if (packed == NULL) return -2;
    char *b_all = packed + 4 * gate_bytes;
    int64_t *claims = (int64_t *)(b_all + bias_bytes);
    memset(claims, 0, (size_t)claim_bytes);
    if (bias != NULL)
        memcpy(b_all, (const char *)bias->data + bias->offset * size, (size_t)(4 * hidden * size));
    else
        memset(b_all, 0, (size_t)(4 * hidden * size));
    char *h_all = (char *)hs->data + hs->offset * size, *c_all = (char *)cs->data + cs->offset * size;
    char *act_all = (char *)activations->data + activations->offset * size;
    char *tc_all = (char *)tanh_c->data + tanh_c->offset * size;
    const char *x_all = (const char *)inputs->data + inputs->offset * size;
    const char *w = (const char *)w_hh->data + w_hh->offset * size;
    const int64_t state = batch * hidden, gates = 4 * hidden, slivers = (hidden + nr - 1) / nr;

    lstm_team team = {1, slivers, claims, claims + threads * LSTM_CLAIM_STRIDE};
    int packers = 0; /* threads done packing */
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int id = gt_thread_id();
#pragma omp single
        { /* (the end of `single` is a barrier) */
            team.threads = gt_team_size();
            *team.active = team.threads;
        }
        /* Gate q's block of W_hh^T (element (p, j) = W_hh[q H + j, p]): this
         * thread packs its own slivers; the wait makes all of them ready. */
        const int64_t u0 = lstm_first_sliver(&team, id) * nr;
        const int64_t u1 = lstm_first_sliver(&team, id + 1) * nr;
        for (int q = 0; q < 4; q++)
            gt_gemm_pack_b(dtype, hidden, hidden, w + q * hidden * hidden * size, 1, hidden, u0,
                           u1 < hidden ? u1 : hidden, packed + q * gate_bytes);
        lstm_wait_all(&packers, team.threads);
        int withdrawn = 0;
        int64_t fastest = INT64_MAX;
        for (int64_t s = 0; !withdrawn && (s = lstm_wait_step(&team, s * slivers)) < steps; s++) {
            const int64_t t = reverse ? steps - 1 - s : s;
            const int64_t before = reverse ? t + 1 : t, after = reverse ? t : t + 1;
            const char *h_prev = h_all + before * state * size;
            char *act = act_all + t * batch * gates * size;
            for (int64_t sliver; !withdrawn && (sliver = lstm_claim(&team, id, s)) >= 0;) {
                const int64_t v0 = sliver * nr, v1 = v0 + nr < hidden ? v0 + nr : hidden;
                const int64_t start = lstm_now(&team);
                for (int q = 0; q < 4; q++)
                    gt_gemm_packed_b(dtype, batch, hidden, h_prev, hidden, 1,
                                     packed + q * gate_bytes, hidden, v0, v1,
                                     act + q * hidden * size, gates, 0);
                units(batch, v1 - v0, hidden, x_all + (t * batch * gates + v0) * size,
                      b_all + v0 * size, c_all + (before * state + v0) * size, act + v0 * size,
                      c_all + (after * state + v0) * size, tc_all + (t * state + v0) * size,
                      h_all + (after * state + v0) * size);
                lstm_finish(&team, id);
                withdrawn = lstm_withdraws(&team, &fastest, lstm_now(&team) - start);
            }
        }
    }
    free(packed);
    return 0;
}

int gt_lstm_backward(gt_view *d_inputs, gt_view *d_h, gt_view *d_c, const gt_view *d_outputs,
                     const gt_view *activations, const gt_view *tanh_c, const gt_view *cs,
                     const gt_view *w_hh, int reverse)
{
    const int dtype = d_inputs->dtype;
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return -1;
    if (!contiguous_of(d_inputs, dtype, 3) || !contiguous_of(d_h, dtype, 2) ||
        !contiguous_of(d_c, dtype, 2) || !contiguous_of(activations, dtype, 3) ||
        !contiguous_of(tanh_c, dtype, 3) || !contiguous_of(cs, dtype, 3) ||
        !contiguous_of(w_hh, dtype, 2) ||
        (d_outputs != NULL && !contiguous_of(d_outputs, dtype, 3)))
        return -1;
    const lstm_units_backward_fn units =
        dtype == GT_FLOAT32 ? lstm_units_backward_f32 : lstm_units_backward_f64;
    const int64_t steps = d_inputs->shape[0], batch = d_inputs->shape[1], hidden = d_h->shape[1];
    const int64_t size = dtype == GT_FLOAT32 ? 4 : 8, nr = gt_gemm_tile_columns(dtype);
    if (steps == 0 || batch == 0 || hidden == 0) return 0;
    const int64_t gates = 4 * hidden, state = batch * hidden;
    const int threads = lstm_threads((hidden + nr - 1) / nr, batch * gates * hidden);
    /* The packed weight, then the counters. */
    const int64_t packed_bytes = round_up64(gt_gemm_packed_b_bytes(dtype, gates, hidden));
    const int64_t claim_bytes = (threads + 1) * LSTM_CLAIM_STRIDE * (int64_t)sizeof(int64_t);
    char *packed = aligned_alloc(64, (size_t)(packed_bytes + claim_bytes));
    if (packed == NULL) return -2;
    int64_t *claims = (int64_t *)(packed + packed_bytes);
    memset(claims, 0, (size_t)claim_bytes);
    char *dz_all = (char *)d_inputs->data + d_inputs->offset * size;
    char *dh = (char *)d_h->data + d_h->offset * size, *dc = (char *)d_c->data + d_c->offset * size;
    const char *dout_all =
        d_outputs == NULL ? NULL : (const char *)d_outputs->data + d_outputs->offset * size;
    const char *a_all = (const char *)activations->data + activations->offset * size;
    const char *tc_all = (const char *)tanh_c->data + tanh_c->offset * size;
    const char *c_all = (const char *)cs->data + cs->offset * size;
    const char *w = (const char *)w_hh->data + w_hh->offset * size;
    const int64_t slivers = (hidden + nr - 1) / nr;

    lstm_team team = {1, slivers, claims, claims + threads * LSTM_CLAIM_STRIDE};
    int packers = 0; /* threads done packing */
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        const int id = gt_thread_id();
#pragma omp single
        { /* (the end of `single` is a barrier) */
            team.threads = gt_team_size();
            *team.active = team.threads;
        }
        /* W_hh as it is (element (p, j) = W_hh[p, j]): this thread's own slivers,
         * all of them ready after the wait. */
        const int64_t u0 = lstm_first_sliver(&team, id) * nr;
        const int64_t u1 = lstm_first_sliver(&team, id + 1) * nr;
        gt_gemm_pack_b(dtype, gates, hidden, w, hidden, 1, u0, u1 < hidden ? u1 : hidden, packed);
        lstm_wait_all(&packers, team.threads);
        /* Steps in the reverse of the forward order; `done` is the one before.
         * Step `steps`, after the last, is the initial state's gradient:
         * through the first step's gates, a product alone. */
        int withdrawn = 0;
        int64_t fastest = INT64_MAX;
        for (int64_t s = 0; !withdrawn && (s = lstm_wait_step(&team, s * slivers)) <= steps; s++) {
            const int64_t t = reverse ? s : steps - 1 - s, done = reverse ? t - 1 : t + 1;
            const int64_t before = reverse ? t + 1 : t;
            for (int64_t sliver; !withdrawn && (sliver = lstm_claim(&team, id, s)) >= 0;) {
                const int64_t v0 = sliver * nr, v1 = v0 + nr < hidden ? v0 + nr : hidden;
                const int64_t start = lstm_now(&team);
                if (s > 0) /* the gradient reaching h_t through the next step's gates */
                    gt_gemm_packed_b(dtype, batch, gates, dz_all + done * batch * gates * size,
                                     gates, 1, packed, hidden, v0, v1, dh, hidden, 0);
                if (s < steps)
                    units(batch, v1 - v0, hidden,
                          dout_all == NULL ? NULL : dout_all + (t * state + v0) * size,
                          dh + v0 * size, dc + v0 * size, a_all + (t * batch * gates + v0) * size,
                          tc_all + (t * state + v0) * size, c_all + (before * state + v0) * size,
                          dz_all + (t * batch * gates + v0) * size);
                lstm_finish(&team, id);
                withdrawn = lstm_withdraws(&team, &fastest, lstm_now(&team) - start);
            }
        }
    }
    free(packed);
    return 0;
}

/* The weight gradients over the whole sequence: d_w_ih = d_gates^T inputs and
 * d_w_hh = d_gates^T h_prev, one product each over all T * B rows (the
 * shape the five loops run best), sharing d_gates^T: gt_gemm_shared_a reads
 * and packs it once for both. */
int gt_lstm_weight_grad(gt_view *d_w_ih, gt_view *d_w_hh, const gt_view *d_gates,
                        const gt_view *inputs, const gt_view *h_prev)
{
    const int dtype = d_gates->dtype;
    if (dtype != GT_FLOAT32 && dtype != GT_FLOAT64) return -1;
    if (!contiguous_of(d_w_ih, dtype, 2) || !contiguous_of(d_w_hh, dtype, 2) ||
        !contiguous_of(d_gates, dtype, 2) || !contiguous_of(inputs, dtype, 2) ||
        !contiguous_of(h_prev, dtype, 2))
        return -1;
    const int64_t rows = d_gates->shape[0], gates = d_gates->shape[1];
    const int64_t in = inputs->shape[1], hidden = h_prev->shape[1];
    if (inputs->shape[0] != rows || h_prev->shape[0] != rows || d_w_ih->shape[0] != gates ||
        d_w_ih->shape[1] != in || d_w_hh->shape[0] != gates || d_w_hh->shape[1] != hidden)
        return -1;
    const int64_t size = dtype == GT_FLOAT32 ? 4 : 8;
    gt_gemm_shared_a(dtype, gates, rows, (const char *)d_gates->data + d_gates->offset * size, 1,
                     gates, in, (const char *)inputs->data + inputs->offset * size, in, 1,
                     d_w_ih->data + d_w_ih->offset * size, in, hidden,
                     (const char *)h_prev->data + h_prev->offset * size, hidden, 1,
                     d_w_hh->data + d_w_hh->offset * size, hidden);
    return 0;
}

/* Whether every view is 2-D, contiguous and of `dtype`. */
static int contiguous_2d(int dtype, const gt_view *const *views, int count)
{
    for (int k = 0; k < count; k++) {
        const gt_view *v = views[k];
        if (v->dtype != dtype || v->ndim != 2 || v->strides[1] != 1 ||
            v->strides[0] != v->shape[1])
            return 0;
    }
    return 1;
}

int gt_lstm_cell(gt_view *h, gt_view *c, gt_view *activations, gt_view *tanh_c,
                 const gt_view *gates, const gt_view *c_prev)
{
    const gt_view *all[] = {h, c, activations, tanh_c, gates, c_prev};
    const int dtype = h->dtype;
    if (!contiguous_2d(dtype, all, 6)) return -1;
    if (dtype == GT_FLOAT32)
        lstm_cell_f32(h, c, activations, tanh_c, gates, c_prev);
    else if (dtype == GT_FLOAT64)
        lstm_cell_f64(h, c, activations, tanh_c, gates, c_prev);
    else
        return -1;
    return 0;
}

int gt_lstm_cell_backward(gt_view *d_gates, gt_view *d_c_prev, const gt_view *d_h,
                          const gt_view *d_c, const gt_view *activations,
                          const gt_view *tanh_c, const gt_view *c_prev)
{
    const gt_view *all[] = {d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev};
    const int dtype = d_h->dtype;
    if (!contiguous_2d(dtype, all, 7)) return -1;
    if (dtype == GT_FLOAT32)
        lstm_cell_backward_f32(d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev);
    else if (dtype == GT_FLOAT64)
        lstm_cell_backward_f64(d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev);
    else
        return -1;
    return 0;
}
