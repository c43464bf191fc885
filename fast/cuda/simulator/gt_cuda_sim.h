/* gt_cuda_sim.h - compile a CUDA kernel source (.cu) for the CPU.
 *
 * glasstorch's CUDA kernels are written once, as .cu files in fast/cuda, and compiled
 * two ways: by NVRTC/nvcc for a real GPU, and by the host C++ compiler for the
 * CUDA simulator, which runs them on machines without a GPU:
 *
 *     g++ -std=c++17 -x c++ -include gt_cuda_sim.h kernels.cu ...
 *
 * This header supplies the names the CUDA language adds to C++ (__global__,
 * threadIdx, __syncthreads, atomicAdd, __shfl_down_sync, ...), and a launch
 * template; gt_cuda_sim_runtime.c supplies memory, streams and events.
 *
 * How a launch runs (the execution model)
 * ---------------------------------------
 * A launch is a task on a stream; the stream's worker thread (one OS thread)
 * runs the grid's blocks one after another. A block's threads are coroutines,
 * one stack each, all on that one OS thread (started with makecontext, then
 * switched with _setjmp/_longjmp). The scheduler resumes them in turn; a
 * thread runs until it waits at a barrier or returns.
 *
 * - __syncthreads() is a real barrier: a thread that arrives waits (yields)
 *   until every thread of its block that is still running has arrived.
 * - __shared__ is `static thread_local`. That is per block and shared by its
 *   threads precisely because of the design: all threads of a block are
 *   coroutines of the same OS thread, and one OS thread runs one block at a
 *   time (blocks of kernels on other streams run on other OS threads, so they
 *   get their own copy). With one OS thread per CUDA thread, thread_local
 *   would instead give every CUDA thread its own copy, which is wrong.
 *   The preprocessing pass (simulator.py) registers each declaration, and the
 *   runtime fills the variable with 0xff bytes the first time each block runs
 *   it: shared memory starts undefined in every block, as on a GPU, instead of
 *   keeping the last block's values. `extern __shared__ T name[];` becomes a
 *   gt_sim_dynamic_shared<T>, the block's `shared_mem` bytes.
 * - A warp shuffle is two warp barriers: every lane stores its value in the
 *   warp's 32 slots, waits for the lanes its mask names, reads the slot it
 *   wants, and waits again so no lane overwrites a slot another lane has yet to
 *   read. Only the mask's lanes wait for each other: a partial mask is valid.
 * - Atomics are compare-and-swap loops (__atomic builtins), correct even when
 *   kernels on two streams touch the same memory at the same time.
 *
 * Why coroutines and not one OS thread per CUDA thread: a block may have 1024
 * threads and a grid thousands of blocks; creating that many OS threads, and
 * waking all of them at every barrier, costs far more than switching
 * coroutines, and __shared__ would need a different mechanism.
 *
 * Limits (what differs from a GPU)
 * - No lockstep: the lanes of a warp run one after another between barriers,
 *   so code that relies on implicit warp synchrony without __syncwarp() or a
 *   *_sync intrinsic may see other results (as it may on Volta and later).
 * - Blocks run one at a time per stream, so a kernel that waits for another
 *   block of the same grid (a grid-wide spin lock) never finishes (Ctrl-C
 *   stops it: the host waits in slices and interrupts the worker).
 * - No textures, no cooperative groups, no device-side launch, no half types;
 *   the <<<...>>> launch syntax is not available: the host launches through
 *   the runtime. Dynamic shared memory is limited to 48 KiB with the static
 *   (no opt-in attribute).
 * - Speed says nothing about a GPU's.
 *
 * The sanitizer (GLASSTORCH_SIM_CHECK; on by default for RawKernel/RawModule)
 * -------------------------------------------------------------------------
 * A checked kernel is a second build of the same source, with -DGT_SIM_CHECK
 * and the compiler's instrumentation: -fsanitize=kernel-address makes every
 * load and store call __asan_load<N>/__asan_store<N>(address), and
 * -fsanitize=bounds,alignment,null,integer-divide-by-zero calls
 * __ubsan_handle_*(static source position, ...) before a bad index, a
 * misaligned or null pointer, a division by zero. No sanitizer library is
 * linked: gt_cuda_sim_runtime.c defines those entry points and checks each
 * access against the launch's allocations (memcheck), shadow "undefined" bits
 * (initcheck), and the barrier epoch of each word's last writer and reader
 * (racecheck); the barriers below check that every thread reaches the same
 * __syncthreads and that *_sync masks name lanes that arrive (synccheck). The
 * call sites' lines come from __builtin_LINE() default arguments (barriers,
 * shuffles) or from the access's code address (addr2line, on the host).
 * Faults (SIGSEGV, SIGFPE, SIGILL, a stack overflow into a coroutine's guard)
 * are caught with or without checks. The first report of a launch stops it
 * and is raised at the next synchronize.
 */
#ifndef GT_CUDA_SIM_H
#define GT_CUDA_SIM_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tuple>
#include <type_traits>

#include "gt_cuda_sim_runtime.h"

/* ---- execution-space qualifiers: every function is an ordinary host function ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static thread_local /* per block: see the header comment */
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict

/* The source position of a call, as default arguments: evaluated where the call is. */
#define GT_SIM_HERE const char *gt_file = __builtin_FILE(), unsigned gt_line = __builtin_LINE()

/* ---- built-in variables ---- */
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef gt_sim_dim3 uint3;

#define threadIdx (gt_sim_self()->thread_idx)
#define blockIdx (gt_sim_self()->block_idx)
#define blockDim (gt_sim_self()->block_dim)
#define gridDim (gt_sim_self()->grid_dim)
static constexpr int warpSize = 32;

/* ---- shared memory ----
 * The simulator's preprocessing pass (simulator.py) rewrites each
 * `extern __shared__ T name[];` into `static gt_sim_dynamic_shared<T> name;`, and each
 * `__shared__ T name[N];` inside a function into `__shared__ T gt_shared_name[N];
 * auto &name = *gt_sim_shared_alias(&gt_shared_name, "name");`. The alias registers
 * the variable: the runtime poisons its memory the first time a block runs the
 * declaration (shared memory is undefined at the start of every block) and the
 * checks find it. In a checked build the alias also hides the address from the
 * compiler, whose instrumentation skips accesses it can prove in bounds (a
 * scalar, a constant index): racecheck and initcheck must see every access. */
template <typename T>
inline T *gt_sim_shared_alias(T *variable, const char *name) {
    gt_sim_shared_declared(variable, sizeof(T), name);
#ifdef GT_SIM_CHECK
    __asm__("" : "+r"(variable)); /* an address the compiler cannot see through */
#endif
    return variable;
}
template <typename T>
struct gt_sim_dynamic_shared {
    T *data() const { return static_cast<T *>(gt_sim_dynamic_shared_memory()); }
    operator T *() const { return data(); }
    T &operator[](long long i) const { return data()[i]; }
};

/* ---- synchronization ---- */
inline void __syncthreads(GT_SIM_HERE) { gt_sim_syncthreads(gt_file, gt_line); }
inline void __syncwarp(unsigned int mask = 0xffffffffu, GT_SIM_HERE) {
    gt_sim_warp_exchange(0, mask, "__syncwarp()", gt_file, gt_line); /* a barrier of the lanes */
}
inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ---- warp shuffles and votes ---- */
inline unsigned int gt_sim_lane(void) { return gt_sim_self()->linear_tid % 32u; }

/* Every lane of `mask` offers `value`; each gets the value of lane `src`. Only the
 * lanes `mask` names wait for each other, so a valid partial mask works. */
template <typename T>
inline T gt_sim_shuffle(T value, unsigned int src, unsigned int mask, const char *what,
                        const char *file, unsigned line) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move at most 8 bytes");
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof(T));
    const uint64_t *slots = gt_sim_warp_exchange(bits, mask, what, file, line);
    T result;
    memcpy(&result, &slots[src], sizeof(T));
    gt_sim_warp_done(mask);
    return result;
}

template <typename T>
inline T __shfl_sync(unsigned int mask, T var, int src_lane, int width = 32, GT_SIM_HERE) {
    unsigned int lane = gt_sim_lane(), base = lane / width * width;
    return gt_sim_shuffle(var, base + (unsigned int)src_lane % width, mask, "__shfl_sync()",
                          gt_file, gt_line);
}

template <typename T>
inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = 32,
                        GT_SIM_HERE) {
    unsigned int lane = gt_sim_lane(), base = lane / width * width;
    return gt_sim_shuffle(var, lane - base >= delta ? lane - delta : lane, mask,
                          "__shfl_up_sync()", gt_file, gt_line);
}

template <typename T>
inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = 32,
                          GT_SIM_HERE) {
    unsigned int lane = gt_sim_lane(), base = lane / width * width;
    return gt_sim_shuffle(var, lane - base + delta < (unsigned int)width ? lane + delta : lane,
                          mask, "__shfl_down_sync()", gt_file, gt_line);
}

template <typename T>
inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask, int width = 32, GT_SIM_HERE) {
    unsigned int lane = gt_sim_lane(), base = lane / width * width;
    unsigned int src = lane ^ (unsigned int)lane_mask;
    return gt_sim_shuffle(var, src >= base && src < base + width ? src : lane, mask,
                          "__shfl_xor_sync()", gt_file, gt_line);
}

/* Bit i of the result is lane i's predicate, for the lanes of `mask`. */
inline unsigned int __ballot_sync(unsigned int mask, int predicate, GT_SIM_HERE) {
    const uint64_t *slots =
        gt_sim_warp_exchange(predicate != 0, mask, "__ballot_sync()", gt_file, gt_line);
    const gt_sim_thread_info *me = gt_sim_self();
    unsigned int nthreads = me->block_dim.x * me->block_dim.y * me->block_dim.z;
    unsigned int first = me->linear_tid / 32u * 32u, ballot = 0;
    for (unsigned int i = 0; i < 32u && first + i < nthreads; i++)
        ballot |= (unsigned int)(slots[i] & 1u) << i;
    gt_sim_warp_done(mask);
    return ballot & mask;
}
inline int __any_sync(unsigned int mask, int predicate, GT_SIM_HERE) {
    return __ballot_sync(mask, predicate, gt_file, gt_line) != 0;
}
inline int __all_sync(unsigned int mask, int predicate, GT_SIM_HERE) {
    return __ballot_sync(mask, !predicate, gt_file, gt_line) == 0;
}

/* ---- atomics: one compare-and-swap loop serves every operation and type ---- */
template <typename T>
struct gt_sim_same {
    typedef T type; /* keeps the value argument from taking part in deduction */
};

/* The update itself is not instrumented: under the checks, gt_sim_atomic_access has
 * checked the address (memcheck, initcheck) and an atomic is never a race. */
template <typename T, typename Update>
__attribute__((no_sanitize_address)) inline T gt_sim_atomic_update(T *address, Update update) {
#ifdef GT_SIM_CHECK
    gt_sim_atomic_access(address, sizeof(T), NULL, 0);
#endif
    T old, desired;
    __atomic_load(address, &old, __ATOMIC_SEQ_CST);
    do {
        desired = update(old);
    } while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
    return old;
}

#define GT_SIM_ATOMIC(name, expression)                                                     \
    template <typename T>                                                                   \
    inline T name(T *address, typename gt_sim_same<T>::type val) {                          \
        return gt_sim_atomic_update(address, [val](T old) -> T { return (expression); });   \
    }
GT_SIM_ATOMIC(atomicAdd, old + val)
GT_SIM_ATOMIC(atomicSub, old - val)
GT_SIM_ATOMIC(atomicExch, val)
GT_SIM_ATOMIC(atomicMax, old < val ? val : old)
GT_SIM_ATOMIC(atomicMin, val < old ? val : old)
GT_SIM_ATOMIC(atomicAnd, old & val)
GT_SIM_ATOMIC(atomicOr, old | val)
GT_SIM_ATOMIC(atomicXor, old ^ val)
#undef GT_SIM_ATOMIC

template <typename T>
__attribute__((no_sanitize_address)) inline T atomicCAS(T *address,
                                                       typename gt_sim_same<T>::type compare,
                                                       typename gt_sim_same<T>::type val) {
#ifdef GT_SIM_CHECK
    gt_sim_atomic_access(address, sizeof(T), NULL, 0);
#endif
    __atomic_compare_exchange(address, &compare, &val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare; /* the old value, whether or not it was replaced */
}

/* ---- loads, math and bit intrinsics, mapped to libm and GCC builtins ---- */
template <typename T>
inline T __ldg(const T *address) {
    return *address;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline int __float_as_int(float x) {
    int i;
    memcpy(&i, &x, sizeof i);
    return i;
}
inline float __int_as_float(int i) {
    float x;
    memcpy(&x, &i, sizeof x);
    return x;
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }

template <typename A, typename B>
inline typename std::common_type<A, B>::type min(A a, B b) {
    return b < a ? b : a;
}
template <typename A, typename B>
inline typename std::common_type<A, B>::type max(A a, B b) {
    return a < b ? b : a;
}

/* ---- launching: gt_sim::launch(stream, grid, block, kernel, args...) ---- */
namespace gt_sim {

template <typename... Params>
struct Launch {
    void (*kernel)(Params...);
    std::tuple<typename std::decay<Params>::type...> args;
    gt_sim_dim3 grid, block;
    gt_sim_launch_config config;
};

/* One CUDA thread: call the kernel with the launch's arguments. */
template <typename... Params>
void thread_body(void *data) {
    Launch<Params...> *launch = static_cast<Launch<Params...> *>(data);
    std::apply(launch->kernel, launch->args);
}

/* The stream task: run every block of the grid. */
template <typename... Params>
void run(void *data) {
    Launch<Params...> *launch = static_cast<Launch<Params...> *>(data);
    gt_sim_run_grid(launch->grid, launch->block, &launch->config, thread_body<Params...>, data);
}

template <typename... Params>
void destroy(void *data) {
    delete static_cast<Launch<Params...> *>(data);
}

/* Queue kernel(args...) over grid x block on stream; returns at once. */
template <typename... Params, typename... Args>
void launch(gt_sim_stream *stream, dim3 grid, dim3 block, const gt_sim_launch_config *config,
            void (*kernel)(Params...), Args... args) {
    Launch<Params...> *data = new Launch<Params...>{
        kernel, std::tuple<typename std::decay<Params>::type...>(args...),
        gt_sim_dim3{grid.x, grid.y, grid.z}, gt_sim_dim3{block.x, block.y, block.z}, *config};
    gt_sim_enqueue(stream, run<Params...>, data, destroy<Params...>);
}

}  // namespace gt_sim

#endif /* GT_CUDA_SIM_H */
