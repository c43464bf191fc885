/* cpuinfo.c: the best instruction-set level this CPU can run, and the level
 * this copy of the kernels was compiled for (see cpuinfo.h for the levels).
 *
 * fast/build.py compiles this file twice over: into each of the three kernel
 * modules (where gt_compiled_capability() tells which one it is), and alone,
 * without any instruction-set flags, into glasstorch.fast._native_cpuinfo, a
 * tiny module that runs on every x86-64 CPU. The loader imports the tiny one
 * first and picks a kernel module by its answer: importing the AVX-512 module
 * on a CPU without AVX-512 would stop the process with SIGILL (illegal
 * instruction) at the first vector instruction.
 */
#include "cpuinfo.h"

int gt_cpu_capability(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* GCC and Clang read the CPUID instruction once (__builtin_cpu_init) and
     * answer from the bits it returned. They also ask the operating system
     * (XGETBV) whether it saves the wide registers on a context switch: a
     * virtual machine may hide AVX-512 from a CPU that has it, and then the
     * answer is no. */
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                 && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    return avx512 ? 2 : avx2 ? 1 : 0;
#else
    return 0; /* not x86: one portable build (build.py compiles only DEFAULT) */
#endif
}

int gt_compiled_capability(void)
{
    /* The compiler defines these macros for the -m flags it was given. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
    return 2;
#elif defined(__AVX2__) && defined(__FMA__)
    return 1;
#else
    return 0;
#endif
}
