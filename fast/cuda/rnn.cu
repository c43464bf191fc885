// rnn.cu - one LSTM time step's elementwise work, forward and backward.
//
// The CUDA twin of fast/csrc/rnn.c. A step of nn.LSTM is one matrix product
// (the gates' pre-activations, runtime's matmul) and then one of these
// kernels, instead of a dozen small elementwise launches: each thread takes
// one (b, j) position of the (B, H) state, reads its four gates (columns j,
// H + j, 2H + j, 3H + j of row b, in PyTorch's order i, f, g, o) and writes
// everything that position needs. Every view is contiguous; grid-stride loop.
#include "gt_cuda_util.cuh"

// 1 / (1 + e^-x) in two forms, each of which never overflows on its half.
template <typename T>
__device__ __forceinline__ T gt_lstm_sigmoid(T x) {
    if (x >= 0) return (T)1 / ((T)1 + exp(-x));
    const T e = exp(x);
    return e / ((T)1 + e);
}

template <typename T>
__device__ void lstm_cell(T *h, T *c, T *act, T *tanh_c, const T *gates, const T *c_prev,
                          long long batch, long long hidden) {
    GT_GRID_STRIDE_LOOP(k, batch * hidden) {
        const long long b = k / hidden, j = k % hidden;
        const T *z = gates + b * 4 * hidden;
        T *a = act + b * 4 * hidden;
        const T i = gt_lstm_sigmoid(z[j]), f = gt_lstm_sigmoid(z[hidden + j]);
        const T g = tanh(z[2 * hidden + j]), o = gt_lstm_sigmoid(z[3 * hidden + j]);
        a[j] = i, a[hidden + j] = f, a[2 * hidden + j] = g, a[3 * hidden + j] = o;
        const T cell = f * c_prev[k] + i * g, t = tanh(cell);
        c[k] = cell, tanh_c[k] = t, h[k] = o * t;
    }
}

template <typename T>
__device__ void lstm_cell_backward(T *d_gates, T *d_c_prev, const T *d_h, const T *d_c,
                                   const T *act, const T *tanh_c, const T *c_prev,
                                   long long batch, long long hidden) {
    GT_GRID_STRIDE_LOOP(k, batch * hidden) {
        const long long b = k / hidden, j = k % hidden;
        const T *a = act + b * 4 * hidden;
        T *dz = d_gates + b * 4 * hidden;
        const T i = a[j], f = a[hidden + j], g = a[2 * hidden + j], o = a[3 * hidden + j];
        const T t = tanh_c[k];
        const T dc = d_c[k] + d_h[k] * o * (1 - t * t);
        dz[j] = dc * g * i * (1 - i);
        dz[hidden + j] = dc * c_prev[k] * f * (1 - f);
        dz[2 * hidden + j] = dc * i * (1 - g * g);
        dz[3 * hidden + j] = d_h[k] * t * o * (1 - o);
        d_c_prev[k] = dc * f;
    }
}

#define GT_LSTM_KERNELS(T, S)                                                                    \
    extern "C" __global__ void lstm_cell_##S(T *h, T *c, T *activations, T *tanh_c,             \
                                             const T *gates, const T *c_prev, long long batch,   \
                                             long long hidden) {                                 \
        lstm_cell<T>(h, c, activations, tanh_c, gates, c_prev, batch, hidden);                   \
    }                                                                                            \
    extern "C" __global__ void lstm_cell_backward_##S(                                           \
        T *d_gates, T *d_c_prev, const T *d_h, const T *d_c, const T *activations,               \
        const T *tanh_c, const T *c_prev, long long batch, long long hidden) {                   \
        lstm_cell_backward<T>(d_gates, d_c_prev, d_h, d_c, activations, tanh_c, c_prev, batch,   \
                              hidden);                                                           \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_LSTM_KERNELS)
