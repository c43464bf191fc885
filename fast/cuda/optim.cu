// optim.cu - the fused optimizer steps: SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta.
//
// The CUDA twin of fast/csrc/optim.c. Why fused: written with tensor
// operations, one Adam step reads and writes the parameter and its state a
// dozen times over (one kernel per + and *). Here each thread loads an
// element of each buffer once, updates it in registers and stores it once,
// so the step runs at memory bandwidth, in one launch per parameter.
//
// Every buffer is a contiguous 1-D view of n elements (grid-stride loop,
// coalesced). The arithmetic follows the contract operation for operation, in
// double, each state value rounded to the buffer's dtype when stored and used
// in that rounded form, as the CPU tiers do. (nvcc may fuse a * b + c into one
// FMA, which rounds once: results agree with the CPU to float tolerance.)
// A state buffer the configuration does not use arrives as a null pointer.
#include "gt_cuda_util.cuh"

// g = -grad if maximize else grad; then plain (coupled) weight decay, skipped
// when it is 0 (so an inf parameter stays inf instead of inf * 0 = NaN).
template <typename T>
__device__ __forceinline__ double gt_direction(const T *g, const T *p, long long i, int maximize,
                                               double weight_decay) {
    const double d = maximize ? -(double)g[i] : (double)g[i];
    return weight_decay != 0 ? d + weight_decay * (double)p[i] : d;
}

template <typename T>
__device__ void sgd_step(T *p, const T *g, T *buf, long long n, double lr, double weight_decay,
                         double momentum, double dampening, int nesterov, int maximize,
                         int first_step) {
    GT_GRID_STRIDE_LOOP(i, n) {
        double d = gt_direction(g, p, i, maximize, weight_decay);
        if (buf) {
            buf[i] = (T)(first_step ? d : momentum * buf[i] + (1.0 - dampening) * d);
            d = nesterov ? d + momentum * (double)buf[i] : (double)buf[i];
        }
        p[i] = (T)(p[i] - lr * d);
    }
}

template <typename T>
__device__ void adam_step(T *p, const T *g, T *m, T *v, T *vmax, long long n, double lr,
                          double beta1, double beta2, double eps, double weight_decay,
                          int decoupled, int maximize, double bias1, double bias2_sqrt) {
    GT_GRID_STRIDE_LOOP(i, n) {
        double d = maximize ? -(double)g[i] : (double)g[i];
        if (decoupled)
            p[i] = (T)(p[i] * (1.0 - lr * weight_decay));
        else if (weight_decay != 0)
            d = d + weight_decay * (double)p[i];
        m[i] = (T)(beta1 * m[i] + (1.0 - beta1) * d);
        v[i] = (T)(beta2 * v[i] + (1.0 - beta2) * d * d);
        double used = v[i];
        if (vmax) {  // amsgrad: the largest second moment so far
            vmax[i] = (T)(used > (double)vmax[i] ? used : (double)vmax[i]);
            used = vmax[i];
        }
        const double denom = sqrt(used) / bias2_sqrt + eps;
        p[i] = (T)(p[i] - (lr / bias1) * m[i] / denom);
    }
}

template <typename T>
__device__ void rmsprop_step(T *p, const T *g, T *sq, T *buf, T *ga, long long n, double lr,
                             double alpha, double eps, double weight_decay, double momentum,
                             int maximize) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const double d = gt_direction(g, p, i, maximize, weight_decay);
        sq[i] = (T)(alpha * sq[i] + (1.0 - alpha) * d * d);
        double avg;
        if (ga) {  // centered: subtract the squared mean gradient
            ga[i] = (T)(alpha * ga[i] + (1.0 - alpha) * d);
            const double var = (double)sq[i] - (double)ga[i] * (double)ga[i];
            avg = sqrt(0.0 > var ? 0.0 : var) + eps;  // rounding may dip below 0
        } else {
            avg = sqrt((double)sq[i]) + eps;
        }
        if (buf) {
            buf[i] = (T)(momentum * buf[i] + d / avg);
            p[i] = (T)(p[i] - lr * (double)buf[i]);
        } else {
            p[i] = (T)(p[i] - lr * d / avg);
        }
    }
}

template <typename T>
__device__ void adagrad_step(T *p, const T *g, T *s, long long n, double clr, double weight_decay,
                             double eps, int maximize) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const double d = gt_direction(g, p, i, maximize, weight_decay);
        s[i] = (T)(s[i] + d * d);
        p[i] = (T)(p[i] - clr * d / (sqrt((double)s[i]) + eps));
    }
}

template <typename T>
__device__ void adadelta_step(T *p, const T *g, T *sq, T *acc, long long n, double lr, double rho,
                              double eps, double weight_decay, int maximize) {
    GT_GRID_STRIDE_LOOP(i, n) {
        const double d = gt_direction(g, p, i, maximize, weight_decay);
        sq[i] = (T)(rho * sq[i] + (1.0 - rho) * d * d);
        const double delta = sqrt((double)acc[i] + eps) / sqrt((double)sq[i] + eps) * d;
        acc[i] = (T)(rho * acc[i] + (1.0 - rho) * delta * delta);
        p[i] = (T)(p[i] - lr * delta);
    }
}

#define GT_OPTIM_KERNELS(T, S)                                                                   \
    extern "C" __global__ void sgd_step_##S(T *param, const T *grad, T *momentum_buffer,        \
                                            long long n, double lr, double weight_decay,         \
                                            double momentum, double dampening, int nesterov,     \
                                            int maximize, int first_step) {                      \
        sgd_step<T>(param, grad, momentum_buffer, n, lr, weight_decay, momentum, dampening,      \
                    nesterov, maximize, first_step);                                             \
    }                                                                                            \
    extern "C" __global__ void adam_step_##S(T *param, const T *grad, T *exp_avg,               \
                                             T *exp_avg_sq, T *max_exp_avg_sq, long long n,      \
                                             double lr, double beta1, double beta2, double eps,  \
                                             double weight_decay, int decoupled, int maximize,   \
                                             double bias1, double bias2_sqrt) {                  \
        adam_step<T>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, lr, beta1, beta2, eps, \
                     weight_decay, decoupled, maximize, bias1, bias2_sqrt);                      \
    }                                                                                            \
    extern "C" __global__ void rmsprop_step_##S(T *param, const T *grad, T *square_avg,         \
                                                T *momentum_buffer, T *grad_avg, long long n,    \
                                                double lr, double alpha, double eps,             \
                                                double weight_decay, double momentum,            \
                                                int maximize) {                                  \
        rmsprop_step<T>(param, grad, square_avg, momentum_buffer, grad_avg, n, lr, alpha, eps,   \
                        weight_decay, momentum, maximize);                                       \
    }                                                                                            \
    extern "C" __global__ void adagrad_step_##S(T *param, const T *grad, T *state_sum,          \
                                                long long n, double clr, double weight_decay,    \
                                                double eps, int maximize) {                      \
        adagrad_step<T>(param, grad, state_sum, n, clr, weight_decay, eps, maximize);            \
    }                                                                                            \
    extern "C" __global__ void adadelta_step_##S(T *param, const T *grad, T *square_avg,        \
                                                 T *acc_delta, long long n, double lr,           \
                                                 double rho, double eps, double weight_decay,    \
                                                 int maximize) {                                 \
        adadelta_step<T>(param, grad, square_avg, acc_delta, n, lr, rho, eps, weight_decay,      \
                         maximize);                                                              \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_OPTIM_KERNELS)
