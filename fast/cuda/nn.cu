// nn.cu - the fused cross-entropy (log_softmax + weighted NLL) and its gradient.
//
// The CUDA twin of fast/csrc/nn.c. For row x of C logits and its label t:
//
//     m         = max(x)                (NaN-propagating; a NaN max shifts by 0)
//     log_sum   = log(sum_j exp(x_j - m))
//     log_probs = (x - m) - log_sum        (m first: 1e30 + log(3) is 1e30 again)
//     loss      = w_t * (log_sum - (x_t - m))   (0 where t == ignore_index)
//
// Three kernels make the forward pass:
// 1. cross_entropy_labels: one thread per row reads its label once, checks
//    it, keeps the checked copy in `labels` and reports the first bad row
//    (gt_report_bad). The host reads the report before going on, since the
//    contract returns the bad row: nothing is ever read through a bad label.
// 2. cross_entropy_rows: one block per row (fusion: the row is read for the
//    max, the sum of exps and log_probs while it is hot in cache, and
//    log_softmax is never stored and read back for the loss); the block's
//    threads combine their partial max and sum with gt_block_reduce.
// 3. cross_entropy_totals: one thread adds the losses and row weights in row
//    order in double, so the totals do not depend on the launch shape and
//    equal the CPU tiers'.
#include "gt_cuda_util.cuh"

extern "C" __global__ void cross_entropy_labels(long long *labels, const long long *target,
                                                long long target_step, long long rows,
                                                long long classes, long long ignore_index,
                                                long long *report) {
    GT_GRID_STRIDE_LOOP(i, rows) {
        const long long label = gt_read_once(target + i * target_step);
        if (label != ignore_index && GT_INDEX_OUTSIDE(label, classes)) gt_report_bad(report, i, i);
        labels[i] = label;
    }
}

template <typename T>
__device__ void cross_entropy_rows(T *losses, long long loss_step, T *row_weights,
                                   long long row_weight_step, T *log_probs, long long lp0,
                                   long long lp1, const T *logits, long long x0, long long x1,
                                   const long long *labels, const T *weight, long long weight_step,
                                   long long rows, long long classes, long long ignore_index) {
    GT_BLOCK_STRIDE_LOOP(i, rows) {
        const T *x = logits + i * x0;
        T *out = log_probs + i * lp0;
        T m = x[0];
        for (long long j = threadIdx.x; j < classes; j += blockDim.x) m = gt_nan_max_op()(m, x[j * x1]);
        m = gt_block_reduce(m, gt_nan_max_op());
        if (m != m) m = (T)0;  // a NaN logit makes the whole row NaN through the sum
        double sum = 0.0;
        for (long long j = threadIdx.x; j < classes; j += blockDim.x) sum += (double)exp(x[j * x1] - m);
        sum = gt_block_reduce(sum, gt_sum_op());
        const double log_sum = log(sum);
        for (long long j = threadIdx.x; j < classes; j += blockDim.x)
            out[j * lp1] = (T)(((double)x[j * x1] - (double)m) - log_sum);
        if (threadIdx.x == 0) {
            const long long label = labels[i];  // checked by cross_entropy_labels
            double w = 0.0, loss = 0.0;
            if (label != ignore_index) {
                w = weight ? (double)weight[label * weight_step] : 1.0;
                loss = w * (log_sum - ((double)x[label * x1] - (double)m));
            }
            row_weights[i * row_weight_step] = (T)w;
            losses[i * loss_step] = (T)loss;
        }
    }
}

template <typename T>
__device__ void cross_entropy_totals(T *totals, long long total_step, const T *losses,
                                     long long loss_step, const T *row_weights,
                                     long long row_weight_step, long long rows) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double loss_sum = 0.0, weight_sum = 0.0;
    for (long long i = 0; i < rows; i++) {
        loss_sum += (double)losses[i * loss_step];
        weight_sum += (double)row_weights[i * row_weight_step];
    }
    // The mean is the ratio of the sums as stored (float32 sums past 3.4e38: inf/inf, NaN).
    const T loss_total = (T)loss_sum, weight_total = (T)weight_sum;
    totals[0] = loss_total;
    totals[total_step] = weight_total;
    totals[2 * total_step] =
        (T)(weight_total != (T)0 ? (double)loss_total / (double)weight_total : nan(""));
}

// The gradient, one block per row: thread 0 reads the label once into
// shared memory and checks it (a label written since the forward pass and
// now out of range reads nothing and gives a row of zeros), then the block
// writes grad[i, j] = g_i * w_t * (exp(log_probs[i, j]) - [j == t]).
template <typename T>
__device__ void cross_entropy_backward(T *grad, long long g0, long long g1, const T *log_probs,
                                       long long lp0, long long lp1, const long long *target,
                                       long long target_step, const T *weight,
                                       long long weight_step, const T *grad_losses,
                                       long long grad_loss_step, long long rows,
                                       long long classes, long long ignore_index) {
    __shared__ long long label;
    GT_BLOCK_STRIDE_LOOP(i, rows) {
        if (threadIdx.x == 0) label = gt_read_once(target + i * target_step);
        __syncthreads();
        const long long t = label;
        __syncthreads();  // every thread has its copy before the next row's label
        T *out = grad + i * g0;
        if (t == ignore_index || GT_INDEX_OUTSIDE(t, classes)) {
            for (long long j = threadIdx.x; j < classes; j += blockDim.x) out[j * g1] = (T)0;
            continue;
        }
        const T scale =
            (T)((double)grad_losses[i * grad_loss_step] * (weight ? (double)weight[t * weight_step] : 1.0));
        const T *row = log_probs + i * lp0;
        for (long long j = threadIdx.x; j < classes; j += blockDim.x)
            out[j * g1] = scale * ((T)exp(row[j * lp1]) - (j == t ? (T)1 : (T)0));
    }
}

#define GT_CROSS_ENTROPY_KERNELS(T, S)                                                            \
    extern "C" __global__ void cross_entropy_rows_##S(                                           \
        T *losses, long long loss_step, T *row_weights, long long row_weight_step, T *log_probs, \
        long long lp0, long long lp1, const T *logits, long long x0, long long x1,               \
        const long long *labels, const T *weight, long long weight_step, long long rows,         \
        long long classes, long long ignore_index) {                                             \
        cross_entropy_rows<T>(losses, loss_step, row_weights, row_weight_step, log_probs, lp0,   \
                              lp1, logits, x0, x1, labels, weight, weight_step, rows, classes,   \
                              ignore_index);                                                     \
    }                                                                                            \
    extern "C" __global__ void cross_entropy_totals_##S(T *totals, long long total_step,        \
                                                        const T *losses, long long loss_step,    \
                                                        const T *row_weights,                    \
                                                        long long row_weight_step,               \
                                                        long long rows) {                        \
        cross_entropy_totals<T>(totals, total_step, losses, loss_step, row_weights,              \
                                row_weight_step, rows);                                          \
    }                                                                                            \
    extern "C" __global__ void cross_entropy_backward_##S(                                       \
        T *grad, long long g0, long long g1, const T *log_probs, long long lp0, long long lp1,   \
        const long long *target, long long target_step, const T *weight, long long weight_step,  \
        const T *grad_losses, long long grad_loss_step, long long rows, long long classes,       \
        long long ignore_index) {                                                                \
        cross_entropy_backward<T>(grad, g0, g1, log_probs, lp0, lp1, target, target_step,        \
                                  weight, weight_step, grad_losses, grad_loss_step, rows,        \
                                  classes, ignore_index);                                        \
    }
GT_FOR_EACH_FLOAT_DTYPE(GT_CROSS_ENTROPY_KERNELS)
