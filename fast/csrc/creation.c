/* creation.c: arange and linspace.
 *
 * Element i's value depends on i alone, never on element i-1, so every
 * element is computed from its own index (no running sum that would pile up
 * rounding errors), and the loop splits freely across OpenMP threads.
 *
 * The formulas are evaluated exactly as the reference tier writes them:
 * fp-contract=off stops GCC from fusing other products and sums, and the
 * float formulas ask for their fused multiply-adds by name (fma, fmaf), as
 * PyTorch's compiled loops have them.
 */
#pragma GCC optimize("fp-contract=off")

#include <math.h>
#include <stdint.h>

#include "creation.h"
#include "gt_convert.h"

/* One loop per (dtype, formula): the value of element i is VALUE(i), stored
 * with the destination's conversion rule. */
#define SEQUENCE_LOOP(CODE, CTYPE, VALUE)                                    \
    case CODE: {                                                             \
        CTYPE *o = (CTYPE *)out->data + out->offset;                        \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")          \
        for (int64_t i = 0; i < n; i++) o[i * stride] = GT_CAST_##CODE(VALUE(i)); \
        return 0;                                                            \
    }

/* Integers: Python computes start + i * step exactly, then stores it (wrapping
 * into an integer dtype, rounding into a float one). A 128-bit integer holds
 * the exact value for any int64 start and step and any length. */
#define ARANGE_INT(i) ((__int128)start + (__int128)(i) * step)
#define ARANGE_INT_CASE(CODE, CTYPE) SEQUENCE_LOOP(CODE, CTYPE, ARANGE_INT)

int gt_arange_int(gt_view *out, int64_t start, int64_t step)
{
    const int64_t n = out->shape[0], stride = out->strides[0];
    switch (out->dtype) { GT_FOR_EACH_DTYPE(ARANGE_INT_CASE) }
    return -1;
}

/* Floats: PyTorch's vectorised loop, in double (see Kernels.arange). A vector
 * holds 256 bits (LANES values) and the loop takes two vectors at a time; each
 * vector's first value is rounded to CTYPE and its lanes step on from there.
 * Values after the last pair of vectors are counted from start. */
#define ARANGE_FLOAT_LOOP(CTYPE, LANES)                                          \
    do {                                                                         \
        CTYPE *o = (CTYPE *)out->data + out->offset;                            \
        const int64_t in_blocks = n - n % (2 * (LANES));                         \
        _Pragma("omp parallel for if (n >= GT_PARALLEL_THRESHOLD)")              \
        for (int64_t i = 0; i < n; i++) {                                        \
            double value;                                                        \
            if (i < in_blocks) {                                                 \
                const int64_t first = i - i % (LANES);                           \
                const CTYPE base = (CTYPE)fma(step, (double)first, start);       \
                value = fma((double)(i - first), step, (double)base);            \
            } else {                                                             \
                value = fma(step, (double)i, start);                             \
            }                                                                    \
            o[i * stride] = (CTYPE)value;                                        \
        }                                                                        \
    } while (0)

int gt_arange_float(gt_view *out, double start, double step)
{
    const int64_t n = out->shape[0], stride = out->strides[0];
    if (out->dtype == GT_FLOAT32)
        ARANGE_FLOAT_LOOP(float, 8);
    else if (out->dtype == GT_FLOAT64)
        ARANGE_FLOAT_LOOP(double, 4);
    else
        return -1;
    return 0;
}

/* PyTorch's linspace: step = (end - start) / (n - 1), the first half counted
 * up from start and the second half down from end (so both ends are exact),
 * each value one fused multiply-add. The arithmetic is float32 for a float32
 * output and double otherwise (an integer output truncates the double). */
#define LINSPACE(i) \
    ((n == 1) ? start : (i) < half ? fma(step, (double)(i), start) : fma(-step, (double)(n - 1 - (i)), end))
#define LINSPACE_CASE(CODE, CTYPE) SEQUENCE_LOOP(CODE, CTYPE, LINSPACE)

static void linspace_float32(gt_view *out, float start, float end)
{
    const int64_t n = out->shape[0], stride = out->strides[0], half = n / 2;
    const float step = (end - start) / (float)(n - 1);
    float *o = (float *)out->data + out->offset;
    #pragma omp parallel for if (n >= GT_PARALLEL_THRESHOLD)
    for (int64_t i = 0; i < n; i++)
        o[i * stride] = n == 1 ? start
                      : i < half ? fmaf(step, (float)i, start)
                                 : fmaf(-step, (float)(n - 1 - i), end);
}

int gt_linspace(gt_view *out, double start, double end)
{
    if (out->dtype == GT_FLOAT32) {
        linspace_float32(out, (float)start, (float)end);
        return 0;
    }
    const int64_t n = out->shape[0], stride = out->strides[0], half = n / 2;
    const double step = (end - start) / (double)(n - 1);
    switch (out->dtype) { GT_FOR_EACH_DTYPE(LINSPACE_CASE) }
    return -1;
}
