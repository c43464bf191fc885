// conv.cu - convolution, im2col/col2im, pooling and batch normalisation on images.
//
// The CUDA twin of fast/csrc/conv.c. Every view is contiguous (the frontend
// makes it so), images are (N, C, H, W), one float dtype.
//
// The idea every kernel here shares: give each thread one element of the
// tensor being *written* and let it gather everything that element needs.
// Forward passes write outputs (a thread per output sums its window); most
// backward passes and col2im, which a CPU writes as a scatter ("add this
// output's share to every input it read"), are turned around into gathers:
// a thread per input element finds the outputs whose windows cover it and
// adds their shares. Then no two threads write one element, so there are no
// atomics, the result does not depend on scheduling, and the additions run in
// the order of the CPU tiers' loops (bit-identical where the CPU adds in that
// order too).
//
// Which output rows cover input row `ih`? Tap kh of output row oh reads row
// oh * sh - ph + kh * dh, so oh = (ih + ph - kh * dh) / sh when that division
// is exact and 0 <= oh < OH. Walking kh downwards visits those oh upwards
// (gt_cover_row).
#include "gt_cuda_util.cuh"

// The output row covering input row `i` through tap `k`, or -1.
__device__ __forceinline__ long long gt_cover(long long i, long long k, long long stride,
                                              long long pad, long long dil, long long out_size) {
    const long long t = i + pad - k * dil;
    if (t < 0 || t % stride != 0) return -1;
    const long long o = t / stride;
    return o < out_size ? o : -1;
}

// The geometry of a 2-D window operation, as the host passes it.
struct gt_geom {
    long long h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};
#define GT_GEOM_PARAMS                                                                         \
    long long h, long long w, long long oh, long long ow, long long kh, long long kw,          \
        long long sh, long long sw, long long ph, long long pw, long long dh, long long dw
#define GT_GEOM_ARGS {h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw}

// --------------------------------------------------------------- im2col/col2im
// out[n, (c * KH + kh) * KW + kw, oh * OW + ow] = input[n, c, ih, iw] (0 outside).
template <typename T>
__device__ void im2col(T *out, const T *input, long long channels, long long total, gt_geom g) {
    GT_GRID_STRIDE_LOOP(i, total) {
        long long rest = i;
        const long long ow = rest % g.ow; rest /= g.ow;
        const long long oh = rest % g.oh; rest /= g.oh;
        const long long kw = rest % g.kw; rest /= g.kw;
        const long long kh = rest % g.kh; rest /= g.kh;
        const long long c = rest % channels, n = rest / channels;
        const long long ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
        const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        out[i] = inside ? input[((n * channels + c) * g.h + ih) * g.w + iw] : (T)0;
    }
}

// out[n, c, ih, iw] = sum of the columns entries im2col took from there.
template <typename T>
__device__ void col2im(T *out, const T *columns, long long channels, long long total, gt_geom g) {
    GT_GRID_STRIDE_LOOP(i, total) {
        long long rest = i;
        const long long iw = rest % g.w; rest /= g.w;
        const long long ih = rest % g.h; rest /= g.h;
        const long long c = rest % channels, n = rest / channels;
        const long long length = g.oh * g.ow;
        T sum = 0;
        for (long long kh = 0; kh < g.kh; kh++) {
            const long long oh = gt_cover(ih, kh, g.sh, g.ph, g.dh, g.oh);
            if (oh < 0) continue;
            for (long long kw = 0; kw < g.kw; kw++) {
                const long long ow = gt_cover(iw, kw, g.sw, g.pw, g.dw, g.ow);
                if (ow < 0) continue;
                const long long row = (c * g.kh + kh) * g.kw + kw;
                sum += columns[(n * channels * g.kh * g.kw + row) * length + oh * g.ow + ow];
            }
        }
        out[i] = sum;
    }
}

// ---------------------------------------------------------------- convolution
// Two ways, chosen by the mixin (fast/cuda/kernels/conv.py): lowered to
// im2col + a batched matrix product (cuBLAS on a GPU: the "GEMM lowering"
// that makes convolution as fast as the matmul library), or the direct
// kernels below, which read like the contract's formulas.
//
// Direct: a thread per output element (n, o, oh, ow) sums weight * input over the
// input channels of o's group and the taps that land inside the image.
template <typename T>
__device__ void conv2d(T *out, const T *input, const T *weight, const T *bias, long long batch,
                       long long c_in, long long c_out, long long groups, gt_geom g) {
    const long long cg = c_in / groups, og = c_out / groups;
    GT_GRID_STRIDE_LOOP(i, batch * c_out * g.oh * g.ow) {
        long long rest = i;
        const long long ow = rest % g.ow; rest /= g.ow;
        const long long oh = rest % g.oh; rest /= g.oh;
        const long long o = rest % c_out, n = rest / c_out;
        const long long first = o / og * cg;  // the group's first input channel
        T sum = bias ? bias[o] : (T)0;
        for (long long c = 0; c < cg; c++) {
            const T *plane = input + (n * c_in + first + c) * g.h * g.w;
            const T *taps = weight + (o * cg + c) * g.kh * g.kw;
            for (long long kh = 0; kh < g.kh; kh++) {
                const long long ih = oh * g.sh - g.ph + kh * g.dh;
                if (ih < 0 || ih >= g.h) continue;
                for (long long kw = 0; kw < g.kw; kw++) {
                    const long long iw = ow * g.sw - g.pw + kw * g.dw;
                    if (iw >= 0 && iw < g.w) sum += taps[kh * g.kw + kw] * plane[ih * g.w + iw];
                }
            }
        }
        out[i] = sum;
    }
}

// A thread per input element (n, c, ih, iw) gathers weight * grad_output
// over the output channels of c's group and the (tap, output) pairs that
// read it.
template <typename T>
__device__ void conv2d_backward_input(T *grad_input, const T *grad_output, const T *weight,
                                      long long batch, long long c_in, long long c_out,
                                      long long groups, gt_geom g) {
    const long long cg = c_in / groups, og = c_out / groups;
    GT_GRID_STRIDE_LOOP(i, batch * c_in * g.h * g.w) {
        long long rest = i;
        const long long iw = rest % g.w; rest /= g.w;
        const long long ih = rest % g.h; rest /= g.h;
        const long long c = rest % c_in, n = rest / c_in;
        const long long group = c / cg, cc = c % cg;
        T sum = 0;
        for (long long oo = 0; oo < og; oo++) {
            const long long o = group * og + oo;
            const T *dy = grad_output + (n * c_out + o) * g.oh * g.ow;
            const T *taps = weight + (o * cg + cc) * g.kh * g.kw;
            for (long long kh = 0; kh < g.kh; kh++) {
                const long long oh = gt_cover(ih, kh, g.sh, g.ph, g.dh, g.oh);
                if (oh < 0) continue;
                for (long long kw = 0; kw < g.kw; kw++) {
                    const long long ow = gt_cover(iw, kw, g.sw, g.pw, g.dw, g.ow);
                    if (ow >= 0) sum += taps[kh * g.kw + kw] * dy[oh * g.ow + ow];
                }
            }
        }
        grad_input[i] = sum;
    }
}

// A thread per weight element (o, c, kh, kw) sums grad_output * input over
// the batch and every output position whose tap lands inside the image.
template <typename T>
__device__ void conv2d_backward_weight(T *grad_weight, const T *grad_output, const T *input,
                                       long long batch, long long c_in, long long c_out,
                                       long long groups, gt_geom g) {
    const long long cg = c_in / groups, og = c_out / groups;
    GT_GRID_STRIDE_LOOP(i, c_out * cg * g.kh * g.kw) {
        long long rest = i;
        const long long kw = rest % g.kw; rest /= g.kw;
        const long long kh = rest % g.kh; rest /= g.kh;
        const long long c = rest % cg, o = rest / cg;
        const long long channel = o / og * cg + c;
        T sum = 0;
        for (long long n = 0; n < batch; n++) {
            const T *dy = grad_output + (n * c_out + o) * g.oh * g.ow;
            const T *plane = input + (n * c_in + channel) * g.h * g.w;
            for (long long oh = 0; oh < g.oh; oh++) {
                const long long ih = oh * g.sh - g.ph + kh * g.dh;
                if (ih < 0 || ih >= g.h) continue;
                for (long long ow = 0; ow < g.ow; ow++) {
                    const long long iw = ow * g.sw - g.pw + kw * g.dw;
                    if (iw >= 0 && iw < g.w) sum += dy[oh * g.ow + ow] * plane[ih * g.w + iw];
                }
            }
        }
        grad_weight[i] = sum;
    }
}

// The bias of a convolution lowered to im2col + matmul: out[n, o, :, :] += bias[o].
template <typename T>
__device__ void conv2d_add_bias(T *out, const T *bias, long long total, long long channels,
                                long long plane) {
    GT_GRID_STRIDE_LOOP(i, total) out[i] += bias[i / plane % channels];
}

// -------------------------------------------------------------------- pooling
// A thread per output element scans its window: the first maximum in
// row-major order wins a tie, a NaN always takes over (so the last NaN wins).
template <typename T>
__device__ void max_pool2d(T *out, long long *indices, const T *input, long long planes,
                           gt_geom g) {
    GT_GRID_STRIDE_LOOP(i, planes * g.oh * g.ow) {
        const long long ow = i % g.ow, oh = i / g.ow % g.oh, p = i / (g.oh * g.ow);
        const T *plane = input + p * g.h * g.w;
        T best = (T)0;
        long long best_at = -1;
        for (long long kh = 0; kh < g.kh; kh++) {
            const long long ih = oh * g.sh - g.ph + kh * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (long long kw = 0; kw < g.kw; kw++) {
                const long long iw = ow * g.sw - g.pw + kw * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                const T v = plane[ih * g.w + iw];
                if (best_at < 0 || v > best || v != v) best = v, best_at = ih * g.w + iw;
            }
        }
        out[i] = best;
        indices[i] = best_at;
    }
}

// The contract gives this kernel no window geometry, only where each
// output's maximum was: so a thread per (n, c) plane zeroes its plane and
// adds each output's gradient at its index, in output order, exactly the CPU
// tiers' loop. Planes never share an element, so no atomics are needed.
template <typename T>
__device__ void max_pool2d_backward(T *grad_input, const T *grad_output, const long long *indices,
                                    long long planes, long long in_plane, long long out_plane) {
    GT_GRID_STRIDE_LOOP(p, planes) {
        T *dx = grad_input + p * in_plane;
        for (long long i = 0; i < in_plane; i++) dx[i] = (T)0;
        for (long long o = 0; o < out_plane; o++)
            dx[indices[p * out_plane + o]] += grad_output[p * out_plane + o];
    }
}

// Average pooling's window of output (oh, ow), clipped to the image, and its
// divisor (PyTorch's rule, see the contract). False for a window with
// nothing inside the image.
__device__ __forceinline__ bool gt_avg_window(long long oh, long long ow, const gt_geom &g,
                                              int count_include_pad, long long divisor_override,
                                              long long *h0, long long *h1, long long *w0,
                                              long long *w1, double *divisor) {
    const long long hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
    const long long he = min(hs + g.kh, g.h + g.ph), we = min(ws + g.kw, g.w + g.pw);
    *h0 = max(hs, 0LL);
    *w0 = max(ws, 0LL);
    *h1 = min(he, g.h);
    *w1 = min(we, g.w);
    if (*h0 >= *h1 || *w0 >= *w1) return false;
    if (divisor_override)
        *divisor = (double)divisor_override;
    else
        *divisor = (double)(count_include_pad ? (he - hs) * (we - ws) : (*h1 - *h0) * (*w1 - *w0));
    return true;
}

template <typename T>
__device__ void avg_pool2d(T *out, const T *input, long long planes, gt_geom g,
                           int count_include_pad, long long divisor_override) {
    GT_GRID_STRIDE_LOOP(i, planes * g.oh * g.ow) {
        const long long ow = i % g.ow, oh = i / g.ow % g.oh, p = i / (g.oh * g.ow);
        const T *plane = input + p * g.h * g.w;
        long long h0, h1, w0, w1;
        double divisor, total = 0.0;
        T result = 0;
        if (gt_avg_window(oh, ow, g, count_include_pad, divisor_override, &h0, &h1, &w0, &w1,
                          &divisor)) {
            for (long long ih = h0; ih < h1; ih++)
                for (long long iw = w0; iw < w1; iw++) total += (double)plane[ih * g.w + iw];
            result = (T)(total / divisor);
        }
        out[i] = result;
    }
}

// A thread per input element adds the shares of the windows covering it, in
// output order (taps walked downwards), as the CPU tiers' loop adds them.
template <typename T>
__device__ void avg_pool2d_backward(T *grad_input, const T *grad_output, long long planes,
                                    gt_geom g, int count_include_pad,
                                    long long divisor_override) {
    GT_GRID_STRIDE_LOOP(i, planes * g.h * g.w) {
        const long long iw = i % g.w, ih = i / g.w % g.h, p = i / (g.h * g.w);
        T sum = 0;
        for (long long kh = g.kh - 1; kh >= 0; kh--) {
            const long long oh = gt_cover(ih, kh, g.sh, g.ph, 1, g.oh);
            if (oh < 0) continue;
            for (long long kw = g.kw - 1; kw >= 0; kw--) {
                const long long ow = gt_cover(iw, kw, g.sw, g.pw, 1, g.ow);
                if (ow < 0) continue;
                long long h0, h1, w0, w1;
                double divisor;
                if (!gt_avg_window(oh, ow, g, count_include_pad, divisor_override, &h0, &h1, &w0,
                                   &w1, &divisor))
                    continue;
                if (ih < h0 || ih >= h1 || iw < w0 || iw >= w1) continue;
                sum += (T)((double)grad_output[p * g.oh * g.ow + oh * g.ow + ow] / divisor);
            }
        }
        grad_input[i] = sum;
    }
}

// ------------------------------------------------------- batch normalisation
// A product rounded to T (the _rn intrinsics keep NVRTC from fusing it into a
// following add; the simulator's C++ never fuses), and a fused multiply-add.
#ifdef GT_CUDA_SIM_H
__device__ __forceinline__ float gt_bn_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double gt_bn_mul(double a, double b) { return a * b; }
__device__ __forceinline__ float gt_bn_add(float a, float b) { return a + b; }
__device__ __forceinline__ double gt_bn_add(double a, double b) { return a + b; }
#else
__device__ __forceinline__ float gt_bn_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double gt_bn_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float gt_bn_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double gt_bn_add(double a, double b) { return __dadd_rn(a, b); }
#endif
__device__ __forceinline__ float gt_bn_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double gt_bn_fma(double a, double b, double c) { return fma(a, b, c); }

// Views are (N, C, L). Statistics and parameter gradients: one block per
// channel, its threads striding over the channel's N * L numbers and
// combining double-precision partial sums with gt_block_reduce.
template <typename T>
__device__ void batch_norm_stats(T *mean, long long mean_step, T *var, long long var_step,
                                 const T *input, long long n, long long c, long long l) {
    // PyTorch's arithmetic (reference/conv.py): the sum in double, the mean
    // rounded to T, each deviation and its square in T (a float32 square past
    // 3.4e38 is inf), the squares added in double and their sum rounded to T.
    // The block adds its threads' partial sums in a tree, not in the CPU's
    // order: the same answer unless huge values absorb small ones
    // (1e30 + 1.5 - 1e30), a difference kept for the GPU's parallelism.
    const long long count = n * l;
    GT_BLOCK_STRIDE_LOOP(ch, c) {
        double sum = 0.0;
        for (long long k = threadIdx.x; k < count; k += blockDim.x)
            sum += (double)input[(k / l * c + ch) * l + k % l];
        const T m = (T)(gt_block_reduce(sum, gt_sum_op()) / (double)count);
        double squares = 0.0;  // second pass: deviations from the mean, never E[x^2] - E[x]^2
        for (long long k = threadIdx.x; k < count; k += blockDim.x) {
            const T d = input[(k / l * c + ch) * l + k % l] - m;
            squares += (double)gt_bn_mul(d, d);
        }
        squares = gt_block_reduce(squares, gt_sum_op());
        if (threadIdx.x == 0) {
            mean[ch * mean_step] = m;
            var[ch * var_step] = (T)((double)(T)squares / (double)count);  // sum kept in T
        }
    }
}

// invstd, and the running statistics moved toward the batch's, a thread per
// channel: each step rounded to T as the CPU tiers round it (the contract's
// batch_norm_update_stats). keep, step and unbias are the factors, already T.
template <typename T>
__device__ void batch_norm_update_stats(T *invstd, long long invstd_step, T *running_mean,
                                        long long running_mean_step, T *running_var,
                                        long long running_var_step, const T *mean,
                                        long long mean_step, const T *var, long long var_step,
                                        long long c, double eps, T keep, T step, T unbias) {
    GT_GRID_STRIDE_LOOP(ch, c) {
        const T v = var[ch * var_step];
        invstd[ch * invstd_step] = (T)(1.0 / sqrt((double)v + eps));
        if (running_mean) {
            T *rm = running_mean + ch * running_mean_step, *rv = running_var + ch * running_var_step;
            *rm = gt_bn_add(gt_bn_mul(*rm, keep), gt_bn_mul(mean[ch * mean_step], step));
            *rv = gt_bn_add(gt_bn_mul(*rv, keep), gt_bn_mul(v, unbias));
        }
    }
}

// y = fma(x, scale, shift) with per-channel constants, a grid-stride loop.
template <typename T>
__device__ void batch_norm_apply(T *out, const T *input, const T *mean, long long mean_step,
                                 const T *invstd, long long invstd_step, const T *weight,
                                 long long weight_step, const T *bias, long long bias_step,
                                 long long n, long long c, long long l) {
    GT_GRID_STRIDE_LOOP(i, n * c * l) {
        const long long ch = i / l % c;
        const T scale = invstd[ch * invstd_step] * (weight ? weight[ch * weight_step] : (T)1);
        const T shift =
            (bias ? bias[ch * bias_step] : (T)0) - gt_bn_mul(mean[ch * mean_step], scale);
        out[i] = gt_bn_fma(input[i], scale, shift);
    }
}

// Per channel: sums[ch] = sum(dy), sums[c + ch] = sum(dy * (x - mean)) * invstd,
// in double; also written to grad_bias and grad_weight when wanted.
template <typename T>
__device__ void batch_norm_sums(double *sums, T *grad_weight, long long grad_weight_step,
                                T *grad_bias, long long grad_bias_step, const T *grad_output,
                                const T *input, const T *mean, long long mean_step,
                                const T *invstd, long long invstd_step, long long n, long long c,
                                long long l) {
    const long long count = n * l;
    GT_BLOCK_STRIDE_LOOP(ch, c) {
        const double mu = (double)mean[ch * mean_step];
        double sum_dy = 0.0, sum_dy_xmu = 0.0;
        for (long long k = threadIdx.x; k < count; k += blockDim.x) {
            const long long at = (k / l * c + ch) * l + k % l;
            sum_dy += (double)grad_output[at];
            sum_dy_xmu += (double)grad_output[at] * ((double)input[at] - mu);
        }
        sum_dy = gt_block_reduce(sum_dy, gt_sum_op());
        sum_dy_xmu = gt_block_reduce(sum_dy_xmu, gt_sum_op());
        if (threadIdx.x == 0) {
            const double sum_dy_xhat = sum_dy_xmu * (double)invstd[ch * invstd_step];
            sums[ch] = sum_dy;
            sums[c + ch] = sum_dy_xhat;
            if (grad_bias) grad_bias[ch * grad_bias_step] = (T)sum_dy;
            if (grad_weight) grad_weight[ch * grad_weight_step] = (T)sum_dy_xhat;
        }
    }
}

// grad_input, elementwise, from the per-channel sums (see the contract).
template <typename T>
__device__ void batch_norm_grad_input(T *grad_input, const double *sums, const T *grad_output,
                                      const T *input, const T *mean, long long mean_step,
                                      const T *invstd, long long invstd_step, const T *weight,
                                      long long weight_step, long long n, long long c,
                                      long long l, int training) {
    const double count = (double)(n * l);
    GT_GRID_STRIDE_LOOP(i, n * c * l) {
        const long long ch = i / l % c;
        const double inv = (double)invstd[ch * invstd_step];
        const double scale = inv * (weight ? (double)weight[ch * weight_step] : 1.0);
        if (!training) {
            grad_input[i] = (T)(scale * (double)grad_output[i]);
            continue;
        }
        const double xhat = ((double)input[i] - (double)mean[ch * mean_step]) * inv;
        grad_input[i] = (T)(scale * ((double)grad_output[i] - sums[ch] / count -
                                     xhat * sums[c + ch] / count));
    }
}

// ------------------------------------------------------------------ kernels
#define GT_CONV_KERNELS(T, S)                                                                    \
    extern "C" __global__ void im2col_##S(T *out, const T *input, long long channels,           \
                                          long long total, GT_GEOM_PARAMS) {                     \
        im2col<T>(out, input, channels, total, gt_geom GT_GEOM_ARGS);                            \
    }                                                                                            \
    extern "C" __global__ void col2im_##S(T *out, const T *columns, long long channels,         \
                                          long long total, GT_GEOM_PARAMS) {                     \
        col2im<T>(out, columns, channels, total, gt_geom GT_GEOM_ARGS);                          \
    }                                                                                            \
    extern "C" __global__ void conv2d_##S(T *out, const T *input, const T *weight,              \
                                          const T *bias, long long batch, long long c_in,        \
                                          long long c_out, long long groups, GT_GEOM_PARAMS) {   \
        conv2d<T>(out, input, weight, bias, batch, c_in, c_out, groups, gt_geom GT_GEOM_ARGS);   \
    }                                                                                            \
    extern "C" __global__ void conv2d_add_bias_##S(T *out, const T *bias, long long total,     \
                                                   long long channels, long long plane) {        \
        conv2d_add_bias<T>(out, bias, total, channels, plane);                                   \
    }                                                                                            \
    extern "C" __global__ void conv2d_backward_input_##S(                                        \
        T *grad_input, const T *grad_output, const T *weight, long long batch, long long c_in,   \
        long long c_out, long long groups, GT_GEOM_PARAMS) {                                     \
        conv2d_backward_input<T>(grad_input, grad_output, weight, batch, c_in, c_out, groups,    \
                                 gt_geom GT_GEOM_ARGS);                                          \
    }                                                                                            \
    extern "C" __global__ void conv2d_backward_weight_##S(                                       \
        T *grad_weight, const T *grad_output, const T *input, long long batch, long long c_in,   \
        long long c_out, long long groups, GT_GEOM_PARAMS) {                                     \
        conv2d_backward_weight<T>(grad_weight, grad_output, input, batch, c_in, c_out, groups,   \
                                  gt_geom GT_GEOM_ARGS);                                         \
    }                                                                                            \
    extern "C" __global__ void max_pool2d_##S(T *out, long long *indices, const T *input,       \
                                              long long planes, GT_GEOM_PARAMS) {                \
        max_pool2d<T>(out, indices, input, planes, gt_geom GT_GEOM_ARGS);                        \
    }                                                                                            \
    extern "C" __global__ void max_pool2d_backward_##S(                                          \
        T *grad_input, const T *grad_output, const long long *indices, long long planes,         \
        long long in_plane, long long out_plane) {                                               \
        max_pool2d_backward<T>(grad_input, grad_output, indices, planes, in_plane, out_plane);   \
    }                                                                                            \
    extern "C" __global__ void avg_pool2d_##S(T *out, const T *input, long long planes,         \
                                              GT_GEOM_PARAMS, int count_include_pad,             \
                                              long long divisor_override) {                      \
        avg_pool2d<T>(out, input, planes, gt_geom GT_GEOM_ARGS, count_include_pad,               \
                      divisor_override);                                                         \
    }                                                                                            \
    extern "C" __global__ void avg_pool2d_backward_##S(                                          \
        T *grad_input, const T *grad_output, long long planes, GT_GEOM_PARAMS,                   \
        int count_include_pad, long long divisor_override) {                                     \
        avg_pool2d_backward<T>(grad_input, grad_output, planes, gt_geom GT_GEOM_ARGS,            \
                               count_include_pad, divisor_override);                             \
    }                                                                                            \
    extern "C" __global__ void batch_norm_stats_##S(T *mean, long long mean_step, T *var,       \
                                                    long long var_step, const T *input,          \
                                                    long long n, long long c, long long l) {     \
        batch_norm_stats<T>(mean, mean_step, var, var_step, input, n, c, l);                     \
    }                                                                                            \
    extern "C" __global__ void batch_norm_update_stats_##S(                                      \
        T *invstd, long long invstd_step, T *running_mean, long long running_mean_step,          \
        T *running_var, long long running_var_step, const T *mean, long long mean_step,          \
        const T *var, long long var_step, long long c, double eps, T keep, T step, T unbias) {   \
        batch_norm_update_stats<T>(invstd, invstd_step, running_mean, running_mean_step,         \
                                   running_var, running_var_step, mean, mean_step, var,          \
                                   var_step, c, eps, keep, step, unbias);                        \
    }                                                                                            \
    extern "C" __global__ void batch_norm_apply_##S(                                             \
        T *out, const T *input, const T *mean, long long mean_step, const T *invstd,             \
        long long invstd_step, const T *weight, long long weight_step, const T *bias,            \
        long long bias_step, long long n, long long c, long long l) {                            \
        batch_norm_apply<T>(out, input, mean, mean_step, invstd, invstd_step, weight,            \
                            weight_step, bias, bias_step, n, c, l);                              \
    }                                                                                            \
    extern "C" __global__ void batch_norm_sums_##S(                                              \
        double *sums, T *grad_weight, long long grad_weight_step, T *grad_bias,                  \
        long long grad_bias_step, const T *grad_output, const T *input, const T *mean,           \
        long long mean_step, const T *invstd, long long invstd_step, long long n, long long c,   \
        long long l) {                                                                           \
        batch_norm_sums<T>(sums, grad_weight, grad_weight_step, grad_bias, grad_bias_step,       \
                           grad_output, input, mean, mean_step, invstd, invstd_step, n, c, l);   \
    }                                                                                            \
    extern "C" __global__ void batch_norm_grad_input_##S(                                        \
        T *grad_input, const double *sums, const T *grad_output, const T *input, const T *mean,  \
        long long mean_step, const T *invstd, long long invstd_step, const T *weight,            \
        long long weight_step, long long n, long long c, long long l, int training) {            \
        batch_norm_grad_input<T>(grad_input, sums, grad_output, input, mean, mean_step, invstd,  \
                                 invstd_step, weight, weight_step, n, c, l, training);           \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_CONV_KERNELS)
