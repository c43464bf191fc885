"""Convolution, pooling and batch normalisation as plain loops over output positions.

Every view here is contiguous ``(N, C, H, W)`` (or ``(N, C, L)`` for batch
normalisation), so the position of an element is the row-major formula
``((n * C + c) * H + h) * W + w`` plus the view's offset. Each kernel walks the
output, one position at a time, and for each position walks the window of
input it reads: the definition, with nothing clever in between.

Gradients that several output positions add into the same input element are
summed in a Python list of floats (double precision) and stored once at the
end, so they are rounded once, as in the fast tier's float accumulators.
"""

from __future__ import annotations

import math
from itertools import product

from glasstorch._kernels import Strided

from .strided import converter, memory, numel


def _tap(out_index: int, kernel_index: int, stride: int, padding: int, dilation: int) -> int:
    """The input row (or column) that output ``out_index`` reads with tap ``kernel_index``."""
    return out_index * stride - padding + kernel_index * dilation


def _write_all(view: Strided, values: list[float]) -> None:
    """Store the row-major ``values`` into the contiguous ``view``."""
    store, mem = converter(view.buffer.dtype), memory(view)
    for i, value in enumerate(values):
        mem[view.offset + i] = store(value)


class ConvKernels:
    """conv2d and its gradients, im2col and col2im, max and average pooling, batch norm."""

    # ------------------------------------------------------------ convolution
    def conv2d(self, out, input, weight, bias, stride, padding, dilation, groups):
        n_size, c_out, oh_size, ow_size = out.shape
        _, c_in, h_size, w_size = input.shape
        _, c_group, kh_size, kw_size = weight.shape
        out_group = c_out // groups
        x, w = memory(input), memory(weight)
        b = memory(bias) if bias is not None else None
        values = []
        for n, o, oh, ow in product(range(n_size), range(c_out), range(oh_size), range(ow_size)):
            first_channel = (o // out_group) * c_group  # the group's first input channel
            total = b[bias.offset + o] if b is not None else 0.0
            for c, kh, kw in product(range(c_group), range(kh_size), range(kw_size)):
                ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
                iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
                if 0 <= ih < h_size and 0 <= iw < w_size:
                    x_at = input.offset + (((n * c_in + first_channel + c) * h_size + ih) * w_size)
                    w_at = weight.offset + ((o * c_group + c) * kh_size + kh) * kw_size + kw
                    total += x[x_at + iw] * w[w_at]
            values.append(total)
        _write_all(out, values)

    def conv2d_backward_input(
        self, grad_input, grad_output, weight, stride, padding, dilation, groups
    ):
        n_size, c_in, h_size, w_size = grad_input.shape
        _, c_out, oh_size, ow_size = grad_output.shape
        _, c_group, kh_size, kw_size = weight.shape
        out_group = c_out // groups
        gy, w = memory(grad_output), memory(weight)
        sums = [0.0] * numel(grad_input.shape)
        for n, o, oh, ow in product(range(n_size), range(c_out), range(oh_size), range(ow_size)):
            g = gy[grad_output.offset + ((n * c_out + o) * oh_size + oh) * ow_size + ow]
            first_channel = (o // out_group) * c_group
            for c, kh, kw in product(range(c_group), range(kh_size), range(kw_size)):
                ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
                iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
                if 0 <= ih < h_size and 0 <= iw < w_size:
                    w_at = weight.offset + ((o * c_group + c) * kh_size + kh) * kw_size + kw
                    x_at = ((n * c_in + first_channel + c) * h_size + ih) * w_size + iw
                    sums[x_at] += g * w[w_at]
        _write_all(grad_input, sums)

    def conv2d_backward_weight(
        self, grad_weight, grad_output, input, stride, padding, dilation, groups
    ):
        c_out, c_group, kh_size, kw_size = grad_weight.shape
        n_size, c_in, h_size, w_size = input.shape
        _, _, oh_size, ow_size = grad_output.shape
        out_group = c_out // groups
        gy, x = memory(grad_output), memory(input)
        sums = [0.0] * numel(grad_weight.shape)
        for n, o, oh, ow in product(range(n_size), range(c_out), range(oh_size), range(ow_size)):
            g = gy[grad_output.offset + ((n * c_out + o) * oh_size + oh) * ow_size + ow]
            first_channel = (o // out_group) * c_group
            for c, kh, kw in product(range(c_group), range(kh_size), range(kw_size)):
                ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
                iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
                if 0 <= ih < h_size and 0 <= iw < w_size:
                    x_at = input.offset + ((n * c_in + first_channel + c) * h_size + ih) * w_size
                    sums[((o * c_group + c) * kh_size + kh) * kw_size + kw] += g * x[x_at + iw]
        _write_all(grad_weight, sums)

    def im2col(self, out, input, kernel_size, stride, padding, dilation):
        n_size, c_size, h_size, w_size = input.shape
        kh_size, kw_size = kernel_size
        oh_size = (h_size + 2 * padding[0] - dilation[0] * (kh_size - 1) - 1) // stride[0] + 1
        ow_size = (w_size + 2 * padding[1] - dilation[1] * (kw_size - 1) - 1) // stride[1] + 1
        x = memory(input)
        values = []
        for n, c, kh, kw, oh, ow in product(
            range(n_size),
            range(c_size),
            range(kh_size),
            range(kw_size),
            range(oh_size),
            range(ow_size),
        ):
            ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
            iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
            inside = 0 <= ih < h_size and 0 <= iw < w_size
            at = input.offset + ((n * c_size + c) * h_size + ih) * w_size + iw
            values.append(x[at] if inside else 0.0)
        _write_all(out, values)

    def col2im(self, out, columns, kernel_size, stride, padding, dilation):
        n_size, c_size, h_size, w_size = out.shape
        kh_size, kw_size = kernel_size
        oh_size = (h_size + 2 * padding[0] - dilation[0] * (kh_size - 1) - 1) // stride[0] + 1
        ow_size = (w_size + 2 * padding[1] - dilation[1] * (kw_size - 1) - 1) // stride[1] + 1
        cols = memory(columns)
        sums = [0.0] * numel(out.shape)
        position = columns.offset  # columns is walked in its own row-major order
        for n, c, kh, kw, oh, ow in product(
            range(n_size),
            range(c_size),
            range(kh_size),
            range(kw_size),
            range(oh_size),
            range(ow_size),
        ):
            ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
            iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
            if 0 <= ih < h_size and 0 <= iw < w_size:
                sums[((n * c_size + c) * h_size + ih) * w_size + iw] += cols[position]
            position += 1
        _write_all(out, sums)

    # ---------------------------------------------------------------- pooling
    def max_pool2d(self, out, indices, input, kernel_size, stride, padding, dilation):
        n_size, c_size, oh_size, ow_size = out.shape
        h_size, w_size = input.shape[2], input.shape[3]
        x = memory(input)
        values, where = [], []
        for n, c, oh, ow in product(range(n_size), range(c_size), range(oh_size), range(ow_size)):
            plane = input.offset + (n * c_size + c) * h_size * w_size
            best, best_at = -math.inf, -1
            for kh, kw in product(range(kernel_size[0]), range(kernel_size[1])):
                ih = _tap(oh, kh, stride[0], padding[0], dilation[0])
                iw = _tap(ow, kw, stride[1], padding[1], dilation[1])
                if not (0 <= ih < h_size and 0 <= iw < w_size):
                    continue
                value = x[plane + ih * w_size + iw]
                if best_at < 0 or value > best or value != value:  # NaN counts as the maximum
                    best, best_at = value, ih * w_size + iw
            values.append(best)
            where.append(best_at)
        _write_all(out, values)
        _write_all(indices, where)

    def max_pool2d_backward(self, grad_input, grad_output, indices):
        n_size, c_size, h_size, w_size = grad_input.shape
        oh_size, ow_size = grad_output.shape[2], grad_output.shape[3]
        gy, idx = memory(grad_output), memory(indices)
        sums = [0.0] * numel(grad_input.shape)
        out_position = 0
        for n, c in product(range(n_size), range(c_size)):
            plane = (n * c_size + c) * h_size * w_size
            for _ in range(oh_size * ow_size):
                where = idx[indices.offset + out_position]
                sums[plane + where] += gy[grad_output.offset + out_position]
                out_position += 1
        _write_all(grad_input, sums)

    def avg_pool2d(
        self, out, input, kernel_size, stride, padding, count_include_pad, divisor_override
    ):
        n_size, c_size, oh_size, ow_size = out.shape
        h_size, w_size = input.shape[2], input.shape[3]
        x = memory(input)
        values = []
        for n, c, oh, ow in product(range(n_size), range(c_size), range(oh_size), range(ow_size)):
            rows, cols, divisor = _avg_window(
                (oh, ow), (h_size, w_size), kernel_size, stride, padding, count_include_pad,
                divisor_override,
            )  # fmt: skip
            plane = input.offset + (n * c_size + c) * h_size * w_size
            total = sum(x[plane + ih * w_size + iw] for ih in rows for iw in cols)
            values.append(total / divisor if rows and cols else 0.0)
        _write_all(out, values)

    def avg_pool2d_backward(
        self,
        grad_input,
        grad_output,
        kernel_size,
        stride,
        padding,
        count_include_pad,
        divisor_override,
    ):
        n_size, c_size, h_size, w_size = grad_input.shape
        oh_size, ow_size = grad_output.shape[2], grad_output.shape[3]
        gy = memory(grad_output)
        sums = [0.0] * numel(grad_input.shape)
        out_position = grad_output.offset
        for n, c, oh, ow in product(range(n_size), range(c_size), range(oh_size), range(ow_size)):
            rows, cols, divisor = _avg_window(
                (oh, ow), (h_size, w_size), kernel_size, stride, padding, count_include_pad,
                divisor_override,
            )  # fmt: skip
            share = gy[out_position] / divisor if rows and cols else 0.0
            out_position += 1
            plane = (n * c_size + c) * h_size * w_size
            for ih in rows:
                for iw in cols:
                    sums[plane + ih * w_size + iw] += share
        _write_all(grad_input, sums)

    # ---------------------------------------------------- batch normalisation
    def batch_norm_stats(self, mean, var, input):
        n_size, c_size, l_size = input.shape
        x = memory(input)
        means, variances = [], []
        for c in range(c_size):
            channel = [
                x[input.offset + (n * c_size + c) * l_size + i]
                for n in range(n_size)
                for i in range(l_size)
            ]
            m = math.fsum(channel) / len(channel)
            means.append(m)
            variances.append(math.fsum((v - m) * (v - m) for v in channel) / len(channel))
        _write_all(mean, means)
        _write_all(var, variances)

    def batch_norm_apply(self, out, input, mean, invstd, weight, bias):
        n_size, c_size, l_size = input.shape
        x = memory(input)
        scale_shift = [_scale_shift(c, mean, invstd, weight, bias) for c in range(c_size)]
        values = []
        for n, c in product(range(n_size), range(c_size)):
            m, scale, shift = scale_shift[c]
            start = input.offset + (n * c_size + c) * l_size
            values.extend((x[start + i] - m) * scale + shift for i in range(l_size))
        _write_all(out, values)

    def batch_norm_backward(
        self,
        grad_input,
        grad_weight,
        grad_bias,
        grad_output,
        input,
        mean,
        invstd,
        weight,
        training,
    ):
        n_size, c_size, l_size = input.shape
        count = n_size * l_size
        x, gy = memory(input), memory(grad_output)
        mean_mem, invstd_mem = memory(mean), memory(invstd)
        w = memory(weight) if weight is not None else None
        grads, sums_dy, sums_dy_xhat = [0.0] * numel(input.shape), [], []
        for c in range(c_size):
            m, inv = mean_mem[mean.offset + c], invstd_mem[invstd.offset + c]
            scale = inv * (w[weight.offset + c] if w is not None else 1.0)
            at = [(n * c_size + c) * l_size + i for n in range(n_size) for i in range(l_size)]
            dy = [gy[grad_output.offset + p] for p in at]
            xhat = [(x[input.offset + p] - m) * inv for p in at]
            sum_dy = math.fsum(dy)
            sum_dy_xhat = math.fsum(d * h for d, h in zip(dy, xhat))
            sums_dy.append(sum_dy)
            sums_dy_xhat.append(sum_dy_xhat)
            for p, d, h in zip(at, dy, xhat):
                if training:
                    grads[p] = scale * (d - sum_dy / count - h * sum_dy_xhat / count)
                else:
                    grads[p] = scale * d
        if grad_input is not None:
            _write_all(grad_input, grads)
        if grad_weight is not None:
            _write_all(grad_weight, sums_dy_xhat)
        if grad_bias is not None:
            _write_all(grad_bias, sums_dy)


def _avg_window(out_at, size, kernel_size, stride, padding, count_include_pad, divisor_override):
    """The rows and columns an average-pooling window sums, and its divisor (PyTorch's rule)."""
    ranges, padded_area, inside_area = [], 1, 1
    for axis in range(2):
        start = out_at[axis] * stride[axis] - padding[axis]
        end = min(start + kernel_size[axis], size[axis] + padding[axis])
        padded_area *= end - start  # the window, padding included, cut at the padding's edge
        inside = range(max(start, 0), min(end, size[axis]))
        inside_area *= len(inside)
        ranges.append(inside)
    if divisor_override:
        divisor = divisor_override
    else:
        divisor = padded_area if count_include_pad else inside_area
    return ranges[0], ranges[1], divisor


def _scale_shift(c, mean, invstd, weight, bias):
    """Channel ``c``'s mean, and the scale and shift that follow the normalisation."""
    m = memory(mean)[mean.offset + c]
    scale = memory(invstd)[invstd.offset + c]
    if weight is not None:
        scale *= memory(weight)[weight.offset + c]
    shift = memory(bias)[bias.offset + c] if bias is not None else 0.0
    return m, scale, shift
