/* cpuinfo.h: which instruction sets the CPU has, and which this build uses.
 *
 * Levels (PyTorch's names, lowest first): 0 DEFAULT (plain x86-64: SSE2),
 * 1 AVX2 (AVX2 and FMA), 2 AVX512 (AVX-512 F, BW, DQ and VL, with AVX2 and
 * FMA). fast/build.py compiles every kernel once per level; the loader in
 * fast/__init__.py asks gt_cpu_capability() which one this CPU can run.
 */
#ifndef GT_CPUINFO_H
#define GT_CPUINFO_H

/* cffi-begin */
/* cpuinfo.c: instruction-set levels (0 DEFAULT, 1 AVX2, 2 AVX512). */
int gt_cpu_capability(void);
int gt_compiled_capability(void);
/* cffi-end */

#endif /* GT_CPUINFO_H */
