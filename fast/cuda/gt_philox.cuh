/* gt_philox.cuh: Philox 4x32-10 and the Box-Muller transform, one source for C and CUDA.
 *
 * The fast CPU tier (fast/csrc/random.c) and the CUDA kernels (random.cu)
 * include this same file, so "the same seed and offset give the same bits"
 * holds by construction rather than by keeping two copies in step. It uses
 * only what C11, CUDA C++ and NVRTC all have: no <stdint.h> (NVRTC has no
 * standard headers), `unsigned int` for 32-bit words and `unsigned long long`
 * for 64-bit ones. It lives in fast/cuda because the CUDA simulator's compile
 * cache is keyed on the .cuh files of that folder: an edit here recompiles
 * the device code as well as (through `make`/pip) the C extension.
 *
 * GT_PHILOX_FN marks each function: `static inline` for C, `__device__` for
 * CUDA (nvcc, NVRTC, and the CUDA simulator, which defines __device__ away).
 *
 * Bit-identical floats need the same operations in the same order with the
 * same roundings. GT_PHILOX_MUL/ADD are a plain * and + in C (random.c turns
 * off GCC's fusing of a * b + c into one FMA) and __dmul_rn/__dadd_rn on a
 * GPU, the intrinsics nvcc never fuses. The transcendental functions (log,
 * cos, sin) are each platform's libm: on a GPU they are CUDA's, accurate to
 * an ulp or two but not always rounded like the host's, so float64 normals on
 * a real GPU may differ from the CPU's in the last bit.
 */
#ifndef GT_PHILOX_CUH
#define GT_PHILOX_CUH

#if defined(__CUDA_ARCH__)
#define GT_PHILOX_FN __device__ __forceinline__
#define GT_PHILOX_MUL(a, b) __dmul_rn((a), (b))
#define GT_PHILOX_ADD(a, b) __dadd_rn((a), (b))
#elif defined(__CUDACC__) || defined(GT_CUDA_SIM_H)
#define GT_PHILOX_FN __device__ inline
#define GT_PHILOX_MUL(a, b) ((a) * (b))
#define GT_PHILOX_ADD(a, b) ((a) + (b))
#else
#define GT_PHILOX_FN static inline
#define GT_PHILOX_MUL(a, b) ((a) * (b))
#define GT_PHILOX_ADD(a, b) ((a) + (b))
#endif

#define GT_PHILOX_M0 0xD2511F53u /* round multipliers */
#define GT_PHILOX_M1 0xCD9E8D57u
#define GT_PHILOX_W0 0x9E3779B9u /* key increments (golden ratio, sqrt(3)) */
#define GT_PHILOX_W1 0xBB67AE85u
#define GT_PHILOX_ROUNDS 10
#define GT_PI 3.14159265358979323846 /* M_PI, which NVRTC does not define */

/* Scramble the 128-bit counter `block` (as 64-bit low and high halves) under
 * the 64-bit key `seed` into four words. One round multiplies words 0 and 2
 * by the constants; the high halves of the products, xor-ed with the other
 * two words and the key, become words 0 and 2, the low halves words 1 and 3.
 * 32-bit unsigned arithmetic wraps modulo 2^32, which is what Philox wants. */
GT_PHILOX_FN void gt_philox(unsigned long long seed, unsigned long long block_lo,
                            unsigned long long block_hi, unsigned int w[4])
{
    unsigned int c0 = (unsigned int)block_lo, c1 = (unsigned int)(block_lo >> 32);
    unsigned int c2 = (unsigned int)block_hi, c3 = (unsigned int)(block_hi >> 32);
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    for (int round = 0; round < GT_PHILOX_ROUNDS; round++) {
        if (round > 0) {
            k0 += GT_PHILOX_W0;
            k1 += GT_PHILOX_W1;
        }
        const unsigned long long p0 = (unsigned long long)GT_PHILOX_M0 * c0;
        const unsigned long long p1 = (unsigned long long)GT_PHILOX_M1 * c2;
        const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
        const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
        c1 = (unsigned int)p1;
        c3 = (unsigned int)p0;
        c0 = n0;
        c2 = n2;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

/* Block number offset + k as a 128-bit counter (the carry reaches the high
 * half only past 2^64 blocks, but the reference counts that far too). */
GT_PHILOX_FN void gt_philox_at(unsigned long long seed, unsigned long long offset,
                               unsigned long long k, unsigned int w[4])
{
    const unsigned long long lo = offset + k;
    gt_philox(seed, lo, lo < offset, w);
}

/* A word as a uniform number in [0, 1): 24 bits for float32 (every such
 * number is a float32), all 32 for float64. Exact in double. */
GT_PHILOX_FN double gt_philox_unit_f32(unsigned int word) { return (double)(word >> 8) * 0x1p-24; }
GT_PHILOX_FN double gt_philox_unit_f64(unsigned int word) { return (double)word * 0x1p-32; }

/* low + u * span, two roundings (never one fused multiply-add). */
GT_PHILOX_FN double gt_philox_scale(double low, double u, double span)
{
    return GT_PHILOX_ADD(low, GT_PHILOX_MUL(u, span));
}

/* Box-Muller: words w0 and w1 give two independent normal numbers. A point at
 * distance r = sqrt(-2 log u1) and angle 2 pi u2 has standard normal
 * coordinates; u1 = (w0 + 1) 2^-32 is in (0, 1], so log(u1) is finite.
 * Evaluated left to right in double: mean + std * r * cos(angle). */
GT_PHILOX_FN void gt_box_muller(unsigned int w0, unsigned int w1, double mean, double std,
                                double *first, double *second)
{
    const double u1 = GT_PHILOX_MUL((double)w0 + 1.0, 0x1p-32);
    const double u2 = GT_PHILOX_MUL((double)w1, 0x1p-32);
    const double r = sqrt(GT_PHILOX_MUL(-2.0, log(u1)));
    const double angle = GT_PHILOX_MUL(GT_PHILOX_MUL(2.0, GT_PI), u2);
    *first = GT_PHILOX_ADD(mean, GT_PHILOX_MUL(GT_PHILOX_MUL(std, r), cos(angle)));
    *second = GT_PHILOX_ADD(mean, GT_PHILOX_MUL(GT_PHILOX_MUL(std, r), sin(angle)));
}

/* Random 64-bit number i of a block: words 2*(i%2) (low half) and
 * 2*(i%2)+1 (high half). */
GT_PHILOX_FN unsigned long long gt_philox_uint64(const unsigned int w[4], long long i)
{
    const int j = 2 * (int)(i & 1);
    return (unsigned long long)w[j] | ((unsigned long long)w[j + 1] << 32);
}

#endif /* GT_PHILOX_CUH */
