// transformer.cu - the fused kernels of a transformer block: LayerNorm, GELU,
// the attention softmax, and their gradients.
//
// The CUDA twin of fast/csrc/transformer.c. Every view is contiguous; rows
// are the last dimension. Two layouts of the work:
// * a block per row (block-stride over rows) for everything that needs a
//   row's sums: layer_norm, its input gradient, attention_softmax and
//   softmax_backward. The row's threads share its elements (neighbouring
//   threads read neighbouring elements) and combine partial sums, in double,
//   with gt_block_reduce: deterministic for a given block size;
// * a thread per element for GELU, and a thread per column for LayerNorm's
//   weight and bias gradients, which adds the rows in order (no atomics, the
//   CPU tiers' order).
// The causal softmax keeps no mask: row i of each (L, S) block softmaxes its
// first min(i + 1, S) columns and writes 0 after them.
#include "gt_cuda_util.cuh"

#define GT_SQRT_HALF 0.70710678118654752440
#define GT_SQRT_TWO_OVER_PI 0.79788456080286535588
#define GT_INV_SQRT_TWO_PI 0.39894228040143267794
#define GT_GELU_CUBIC 0.044715

// The float function for float, the double one otherwise.
__device__ __forceinline__ float gt_tf_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double gt_tf_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float gt_tf_erf(float x) { return erff(x); }
__device__ __forceinline__ double gt_tf_erf(double x) { return erf(x); }
__device__ __forceinline__ float gt_tf_exp(float x) { return expf(x); }
__device__ __forceinline__ double gt_tf_exp(double x) { return exp(x); }

// ------------------------------------------------------------- row moments
// PyTorch's CPU row mean and variance in the input's precision (the same steps
// as fast/csrc/moments.c and reference/moments.py): 8 float (4 double) lanes
// of Welford updates over chunks of 16 vectors, merged in a cascade; the
// N % lanes values left over one at a time; then the lanes merged into those
// in order. Every step is rounded to T: on a GPU the _rn intrinsics stop NVRTC
// from fusing a * b + c into one FMA (the simulator's C++ never fuses).
#ifdef GT_CUDA_SIM_H
__device__ __forceinline__ float gt_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double gt_mul(double a, double b) { return a * b; }
__device__ __forceinline__ float gt_add(float a, float b) { return a + b; }
__device__ __forceinline__ double gt_add(double a, double b) { return a + b; }
#else
__device__ __forceinline__ float gt_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gt_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float gt_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double gt_add(double a, double b) { return __dadd_rn(a, b); }
#endif
__device__ __forceinline__ float gt_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double gt_fma(double a, double b, double c) { return fma(a, b, c); }

template <typename T> struct gt_lanes { enum { value = 8 }; };
template <> struct gt_lanes<double> { enum { value = 4 }; };

#define GT_MOMENT_CHUNK 16
#define GT_MOMENT_LEVELS 64

// Merge lane ``k`` of (nb, mb, sb) into (na, ma, sa); an empty side leaves the other.
template <typename T>
__device__ void gt_merge_lane(long long na, T *ma, T *sa, long long nb, T mb, T sb) {
    if (nb == 0) return;
    if (na == 0) { *ma = mb; *sa = sb; return; }
    const T c = (T)nb / (T)(na + nb);
    const T delta = mb - *ma;
    *ma = gt_add(*ma, gt_mul(c, delta));
    *sa = gt_add(*sa, gt_add(sb, gt_mul(gt_mul(gt_mul(delta, delta), c), (T)na)));
}

// One lane's (mean, m2) over the first ``vectors`` vectors of the row.
template <typename T>
__device__ void gt_lane_moments(const T *x, int lane, long long vectors, T *mean, T *m2) {
    const int lanes = gt_lanes<T>::value;
    const long long chunks = (vectors + GT_MOMENT_CHUNK - 1) / GT_MOMENT_CHUNK;
    long long depth = 1;
    if (chunks > 2) { depth = 0; for (long long v = chunks - 1; v > 0; v >>= 1) depth++; }
    long long counts[GT_MOMENT_LEVELS];
    T means[GT_MOMENT_LEVELS], m2s[GT_MOMENT_LEVELS];
    for (long long k = 0; k < depth; k++) counts[k] = 0, means[k] = 0, m2s[k] = 0;
    for (long long i = 0; i < chunks; i++) {
        T m1 = 0, s2 = 0;
        const long long left = vectors - i * GT_MOMENT_CHUNK;
        const long long count = left < GT_MOMENT_CHUNK ? left : GT_MOMENT_CHUNK;
        for (long long j = 0; j < count; j++) {
            const T value = x[(i * GT_MOMENT_CHUNK + j) * lanes + lane];
            const T delta = value - m1;
            m1 = gt_add(m1, gt_mul(delta, (T)1 / (T)(j + 1)));
            s2 = gt_add(s2, gt_mul(delta, value - m1));
        }
        gt_merge_lane(counts[0], &means[0], &m2s[0], count, m1, s2);
        counts[0] += count;
        long long carry = i + 1;
        for (long long level = 1; level < depth && carry % 2 == 0; level++) {
            gt_merge_lane(counts[level], &means[level], &m2s[level], counts[level - 1],
                          means[level - 1], m2s[level - 1]);
            counts[level] += counts[level - 1];
            counts[level - 1] = 0, means[level - 1] = 0, m2s[level - 1] = 0;
            carry /= 2;
        }
    }
    for (long long level = 1; level < depth; level++) {
        gt_merge_lane(counts[0], &means[0], &m2s[0], counts[level], means[level], m2s[level]);
        counts[0] += counts[level];
    }
    *mean = means[0], *m2 = m2s[0];
}

// The row's mean and biased variance, by one thread.
template <typename T>
__device__ void gt_row_moments(const T *x, long long n, T *mean_out, T *var_out) {
    const int lanes = gt_lanes<T>::value;
    const long long vectors = n / lanes;
    long long count = 0;
    T m1 = 0, m2 = 0;
    for (long long i = vectors * lanes; i < n; i++) {
        const T delta = x[i] - m1;
        count++;
        m1 = gt_add(m1, delta / (T)count);
        m2 = gt_add(m2, gt_mul(delta, x[i] - m1));
    }
    for (int k = 0; k < lanes; k++) {
        T lane_mean, lane_m2;
        gt_lane_moments(x, k, vectors, &lane_mean, &lane_m2);
        const long long total = count + vectors;
        const T c = total == 0 ? (T)0 : (T)vectors / (T)total;
        const T delta = lane_mean - m1;
        m1 = gt_add(m1, gt_mul(c, delta));
        m2 = gt_add(m2, gt_add(lane_m2, gt_mul(gt_mul(gt_mul(delta, delta), c), (T)count)));
        count = total;
    }
    *mean_out = m1;
    *var_out = m2 / (T)n;
}

// row_moments: a thread per row (each row's steps are sequential by definition).
template <typename T>
__device__ void row_moments(T *mean, T *var, const T *x, long long rows, long long n) {
    GT_GRID_STRIDE_LOOP(r, rows) gt_row_moments(x + r * n, n, mean + r, var + r);
}

// ---------------------------------------------------------------- LayerNorm
// Thread 0 of the row's block takes PyTorch's row moments (above), then every
// thread writes its share: y = fma((x - mean) * rstd, w, b).
template <typename T>
__device__ void layer_norm(T *out, T *mean, T *rstd, const T *x, const T *w, const T *b,
                           long long rows, long long n, double eps) {
    __shared__ T stats[2];
    GT_BLOCK_STRIDE_LOOP(r, rows) {
        const T *xr = x + r * n;
        if (threadIdx.x == 0) {
            T m, var;
            gt_row_moments(xr, n, &m, &var);
            if (var < (T)0) var = (T)0;  // max(var, 0); a NaN stays NaN
            const T root = sqrt(var + (T)eps);
            stats[0] = m, stats[1] = (T)1 / root;
            mean[r] = stats[0], rstd[r] = stats[1];
        }
        __syncthreads();
        const T mt = stats[0], st = stats[1];
        const bool affine = w || b;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const T xhat = gt_mul(xr[j] - mt, st);
            out[r * n + j] = affine ? gt_fma(xhat, w ? w[j] : (T)1, b ? b[j] : (T)0) : xhat;
        }
        __syncthreads();
    }
}

// grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w, per row.
template <typename T>
__device__ void layer_norm_grad_input(T *gi, const T *dy, const T *x, const T *mean,
                                      const T *rstd, const T *w, long long rows, long long n) {
    GT_BLOCK_STRIDE_LOOP(r, rows) {
        const T m = mean[r], s = rstd[r];
        const T *dyr = dy + r * n, *xr = x + r * n;
        double sum_g = 0.0, sum_g_xhat = 0.0;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const T g = dyr[j] * (w ? w[j] : (T)1);
            sum_g += (double)g;
            sum_g_xhat += (double)(g * ((xr[j] - m) * s));
        }
        const T mean_g = (T)(gt_block_reduce(sum_g, gt_sum_op()) / (double)n);
        const T mean_g_xhat = (T)(gt_block_reduce(sum_g_xhat, gt_sum_op()) / (double)n);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const T g = dyr[j] * (w ? w[j] : (T)1), xhat = (xr[j] - m) * s;
            gi[r * n + j] = s * (g - mean_g - xhat * mean_g_xhat);
        }
    }
}

// grad_weight[j] = sum over rows of dy * xhat, grad_bias[j] = sum of dy: a
// thread per column, adding the rows in order, in double.
template <typename T>
__device__ void layer_norm_grad_params(T *gw, T *gb, const T *dy, const T *x, const T *mean,
                                       const T *rstd, long long rows, long long n) {
    GT_GRID_STRIDE_LOOP(j, n) {
        double acc_w = 0.0, acc_b = 0.0;
        for (long long r = 0; r < rows; r++) {
            const T d = dy[r * n + j];
            acc_w += (double)(d * ((x[r * n + j] - mean[r]) * rstd[r]));
            acc_b += (double)d;
        }
        if (gw) gw[j] = (T)acc_w;
        if (gb) gb[j] = (T)acc_b;
    }
}

// --------------------------------------------------------------------- GELU
template <typename T>
__device__ __forceinline__ T gt_tanh_inner(T v) {
    return (T)GT_SQRT_TWO_OVER_PI * (v + (T)GT_GELU_CUBIC * v * v * v);
}

template <typename T>
__device__ void gelu(T *out, const T *x, long long count, int approximate) {
    GT_GRID_STRIDE_LOOP(i, count) {
        const T v = x[i];
        out[i] = approximate ? (T)0.5 * v * ((T)1 + gt_tf_tanh(gt_tanh_inner(v)))
                             : v * (T)0.5 * ((T)1 + gt_tf_erf(v * (T)GT_SQRT_HALF));
    }
}

template <typename T>
__device__ void gelu_backward(T *gi, const T *g, const T *x, long long count, int approximate) {
    GT_GRID_STRIDE_LOOP(i, count) {
        const T v = x[i];
        T slope;
        if (approximate) {
            const T t = gt_tf_tanh(gt_tanh_inner(v));
            const T d_inner = (T)GT_SQRT_TWO_OVER_PI * ((T)1 + (T)3 * (T)GT_GELU_CUBIC * v * v);
            slope = (T)0.5 * ((T)1 + t) + (T)0.5 * v * ((T)1 - t * t) * d_inner;
        } else {
            const T cdf = (T)0.5 * ((T)1 + gt_tf_erf(v * (T)GT_SQRT_HALF));
            slope = cdf + v * gt_tf_exp((T)-0.5 * v * v) * (T)GT_INV_SQRT_TWO_PI;
        }
        gi[i] = g[i] * slope;
    }
}

// ------------------------------------------------------------------ softmax
// Row r is query position r % length of its (length, n) block; it sees the
// first `visible` columns. Three passes: the maximum of scale * x
// (NaN-propagating; a NaN maximum shifts by 0), the sum of exp in double,
// then the weights, and 0 in the columns it does not see.
template <typename T>
__device__ void attention_softmax(T *out, const T *scores, long long rows, long long length,
                                  long long n, double scale, int causal) {
    GT_BLOCK_STRIDE_LOOP(r, rows) {
        const long long i = r % length;
        const long long visible = causal ? (i + 1 < n ? i + 1 : n) : n;
        const T *x = scores + r * n;
        T *y = out + r * n;
        const T sc = (T)scale;
        T shift = sc * x[0];
        for (long long j = threadIdx.x; j < visible; j += blockDim.x)
            shift = gt_nan_max_op()(shift, sc * x[j]);
        shift = gt_block_reduce(shift, gt_nan_max_op());
        if (shift != shift) shift = (T)0;
        double total = 0.0;
        for (long long j = threadIdx.x; j < visible; j += blockDim.x)
            total += (double)gt_tf_exp(sc * x[j] - shift);
        total = gt_block_reduce(total, gt_sum_op());
        const double inverse = 1.0 / total;
        for (long long j = threadIdx.x; j < n; j += blockDim.x)
            y[j] = j < visible ? (T)((double)gt_tf_exp(sc * x[j] - shift) * inverse) : (T)0;
    }
}

// grad_input = scale * y * (g - sum(g * y)) per row, the sum in double.
template <typename T>
__device__ void softmax_backward(T *gi, const T *g, const T *y, long long rows, long long n,
                                 double scale) {
    GT_BLOCK_STRIDE_LOOP(r, rows) {
        const T *gr = g + r * n, *yr = y + r * n;
        double dot = 0.0;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) dot += (double)(gr[j] * yr[j]);
        const T d = (T)gt_block_reduce(dot, gt_sum_op()), sc = (T)scale;
        for (long long j = threadIdx.x; j < n; j += blockDim.x)
            gi[r * n + j] = sc * yr[j] * (gr[j] - d);
    }
}

#define GT_TRANSFORMER_KERNELS(T, S)                                                             \
    extern "C" __global__ void row_moments_##S(T *mean, T *var, const T *x, long long rows,     \
                                               long long n) {                                   \
        row_moments<T>(mean, var, x, rows, n);                                                  \
    }                                                                                            \
    extern "C" __global__ void layer_norm_##S(T *out, T *mean, T *rstd, const T *x, const T *w, \
                                              const T *b, long long rows, long long n,          \
                                              double eps) {                                     \
        layer_norm<T>(out, mean, rstd, x, w, b, rows, n, eps);                                  \
    }                                                                                            \
    extern "C" __global__ void layer_norm_grad_input_##S(T *gi, const T *dy, const T *x,        \
                                                         const T *mean, const T *rstd,          \
                                                         const T *w, long long rows,            \
                                                         long long n) {                         \
        layer_norm_grad_input<T>(gi, dy, x, mean, rstd, w, rows, n);                            \
    }                                                                                            \
    extern "C" __global__ void layer_norm_grad_params_##S(T *gw, T *gb, const T *dy, const T *x, \
                                                          const T *mean, const T *rstd,         \
                                                          long long rows, long long n) {        \
        layer_norm_grad_params<T>(gw, gb, dy, x, mean, rstd, rows, n);                          \
    }                                                                                            \
    extern "C" __global__ void gelu_##S(T *out, const T *x, long long count, int approximate) { \
        gelu<T>(out, x, count, approximate);                                                    \
    }                                                                                            \
    extern "C" __global__ void gelu_backward_##S(T *gi, const T *g, const T *x, long long count,  \
                                                 int approximate) {                             \
        gelu_backward<T>(gi, g, x, count, approximate);                                         \
    }                                                                                            \
    extern "C" __global__ void attention_softmax_##S(T *out, const T *scores, long long rows,   \
                                                     long long length, long long n,             \
                                                     double scale, int causal) {                \
        attention_softmax<T>(out, scores, rows, length, n, scale, causal);                      \
    }                                                                                            \
    extern "C" __global__ void softmax_backward_##S(T *gi, const T *g, const T *y,              \
                                                    long long rows, long long n,                \
                                                    double scale) {                             \
        softmax_backward<T>(gi, g, y, rows, n, scale);                                          \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_TRANSFORMER_KERNELS)
