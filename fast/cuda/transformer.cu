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

// ---------------------------------------------------------------- LayerNorm
// Two passes for the statistics (the mean, then the squared deviations from
// it), both summed in double, then the normalized row.
template <typename T>
__device__ void layer_norm(T *out, T *mean, T *rstd, const T *x, const T *w, const T *b,
                           long long rows, long long n, double eps) {
    GT_BLOCK_STRIDE_LOOP(r, rows) {
        const T *xr = x + r * n;
        double sum = 0.0;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) sum += (double)xr[j];
        const double m = gt_block_reduce(sum, gt_sum_op()) / (double)n;
        double squares = 0.0;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const double d = (double)xr[j] - m;
            squares += d * d;
        }
        const double s = 1.0 / sqrt(gt_block_reduce(squares, gt_sum_op()) / (double)n + eps);
        if (threadIdx.x == 0) mean[r] = (T)m, rstd[r] = (T)s;
        const T mt = (T)m, st = (T)s;
        for (long long j = threadIdx.x; j < n; j += blockDim.x)
            out[r * n + j] = (xr[j] - mt) * st * (w ? w[j] : (T)1) + (b ? b[j] : (T)0);
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
