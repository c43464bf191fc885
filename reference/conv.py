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

from .moments import fma, reciprocal_sqrt, rounder
from .strided import converter, memory, numel


def _tap(out_index: int, kernel_index: int, stride: int, padding: int, dilation: int) -> int:
    """The input row (or column) that output ``out_index`` reads with tap ``kernel_index``."""
    return out_index * stride - padding + kernel_index * dilation


def _write_all(view: Strided, values: list[float]) -> None:
    """Store the row-major ``values`` into the contiguous ``view``."""
    store, mem = converter(view.buffer.dtype), memory(view)
    for i, value in enumerate(values):
        mem[view.offset + i] = store(value)


def _write_vector(view: Strided, values: list[float]) -> None:
    """Store ``values`` into the one-dimensional ``view`` (any stride)."""
    store, mem = converter(view.buffer.dtype), memory(view)
    for i, value in enumerate(values):
        mem[view.offset + i * view.strides[0]] = store(value)


class ConvKernels:
    """conv2d and its gradients, im2col and col2im, max and average pooling, batch norm."""

    # ------------------------------------------------------------ convolution
    # The three convolution kernels share one walk: for each output position
    # (n, o, oh, ow), every tap (c, kh, kw) of the kernel that lands inside the
    # image. Which taps those are, and where they read, depends only on
    # (oh, ow): _tap_table works it out once per call (see there).
    def conv2d(self, out, input, weight, bias, stride, padding, dilation, groups):
        # -- solution: conv/conv
        b = memory(bias) if bias is not None else None
        x, w = memory(input), memory(weight)
        table = _tap_table(input, weight, out.shape, stride, padding, dilation)
        values = []
        for o, x_start, w_start, taps in _output_positions(input, weight, out.shape, table, groups):
            x_start, w_start = input.offset + x_start, weight.offset + w_start
            total = b[bias.offset + o] if b is not None else 0.0
            for x_at, w_at in taps:
                total += x[x_start + x_at] * w[w_start + w_at]
            values.append(total)
        _write_all(out, values)
        # -- end solution

    def conv2d_backward_input(
        self, grad_input, grad_output, weight, stride, padding, dilation, groups
    ):
        # -- solution: conv/conv
        gy, w = memory(grad_output), memory(weight)
        table = _tap_table(grad_input, weight, grad_output.shape, stride, padding, dilation)
        sums = [0.0] * numel(grad_input.shape)
        position = grad_output.offset  # grad_output is walked in its row-major order
        shape = grad_output.shape
        for _, x_start, w_start, taps in _output_positions(
            grad_input, weight, shape, table, groups
        ):
            g = gy[position]
            position += 1
            w_start += weight.offset
            for x_at, w_at in taps:
                sums[x_start + x_at] += g * w[w_start + w_at]
        _write_all(grad_input, sums)
        # -- end solution

    def conv2d_backward_weight(
        self, grad_weight, grad_output, input, stride, padding, dilation, groups
    ):
        # -- solution: conv/conv
        gy, x = memory(grad_output), memory(input)
        table = _tap_table(input, grad_weight, grad_output.shape, stride, padding, dilation)
        sums = [0.0] * numel(grad_weight.shape)
        position = grad_output.offset
        shape = grad_output.shape
        for _, x_start, w_start, taps in _output_positions(
            input, grad_weight, shape, table, groups
        ):
            g = gy[position]
            position += 1
            x_start += input.offset
            for x_at, w_at in taps:
                sums[w_start + w_at] += g * x[x_start + x_at]
        _write_all(grad_weight, sums)
        # -- end solution

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
        # -- solution: conv/pool
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
        # -- end solution

    def max_pool2d_backward(self, grad_input, grad_output, indices):
        # -- solution: conv/pool
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
        # -- end solution

    def avg_pool2d(
        self, out, input, kernel_size, stride, padding, count_include_pad, divisor_override
    ):
        # -- solution: conv/pool
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
        # -- end solution

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
        # -- solution: conv/pool
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
        # -- end solution

    # ---------------------------------------------------- batch normalisation
    def batch_norm_stats(self, mean, var, input):
        # PyTorch's arithmetic: the sums in double, but each deviation and its
        # square in the input's precision, so a float32 square past 3.4e38 is
        # inf (reference/moments.py says why this matters).
        n_size, c_size, l_size = input.shape
        round_ = rounder(input.buffer.dtype.name)
        x = memory(input)
        means, variances = [], []
        for c in range(c_size):
            channel = [
                x[input.offset + (n * c_size + c) * l_size + i]
                for n in range(n_size)
                for i in range(l_size)
            ]
            total = 0.0
            for v in channel:  # in order, in double (IEEE: inf + -inf is NaN)
                total += v
            m = round_(total / len(channel))
            squares = 0.0
            for v in channel:
                d = round_(v - m)
                squares += round_(d * d)
            means.append(m)
            variances.append(round_(round_(squares) / len(channel)))  # the sum kept in the dtype
        _write_all(mean, means)
        _write_all(var, variances)

    def batch_norm_update_stats(
        self, invstd, running_mean, running_var, mean, var, momentum, eps, count
    ):
        # Each step as PyTorch's tensor operations take it on the buffers:
        # the factors rounded to the dtype, then every product and sum rounded.
        round_ = rounder(mean.buffer.dtype.name)
        keep, step = round_(1 - momentum), round_(momentum)
        unbias = round_(momentum * count / (count - 1))
        c_size = mean.shape[0]
        means = [memory(mean)[mean.offset + c * mean.strides[0]] for c in range(c_size)]
        variances = [memory(var)[var.offset + c * var.strides[0]] for c in range(c_size)]
        _write_vector(invstd, [round_(reciprocal_sqrt(v + eps)) for v in variances])
        if running_mean is None:
            return
        for running, batch, factor in (
            (running_mean, means, step),
            (running_var, variances, unbias),
        ):
            old = memory(running)
            moved = []
            for c in range(c_size):
                kept = round_(old[running.offset + c * running.strides[0]] * keep)
                moved.append(round_(kept + round_(batch[c] * factor)))
            _write_vector(running, moved)

    def batch_norm_apply(self, out, input, mean, invstd, weight, bias):
        # PyTorch's form: a scale and a shift per channel, then one fused
        # multiply-add per element: out = fma(x, scale, bias - mean * scale).
        n_size, c_size, l_size = input.shape
        round_ = rounder(input.buffer.dtype.name)
        x = memory(input)
        scale_shift = [_scale_shift(c, mean, invstd, weight, bias, round_) for c in range(c_size)]
        values = []
        for n, c in product(range(n_size), range(c_size)):
            scale, shift = scale_shift[c]
            start = input.offset + (n * c_size + c) * l_size
            values.extend(fma(x[start + i], scale, shift, round_) for i in range(l_size))
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


def _tap_table(image, weight, out_shape, stride, padding, dilation):
    """For each output position ``(oh, ow)``, the taps that land inside the image.

    A list over ``oh * OW + ow`` of lists of ``(input position, weight
    position)`` pairs, for every input channel ``c`` of one group and tap
    ``(kh, kw)``: tap ``(kh, kw)`` reads row ``oh * stride - padding + kh *
    dilation`` (columns alike), and taps in the padding are left out. The
    positions are row-major, relative to the first channel of the group in the
    image and to the start of the output channel's kernel in the weight; the
    callers add where those start (:func:`_output_positions`).
    """
    _, _, h_size, w_size = image.shape
    _, c_group, kh_size, kw_size = weight.shape
    table = []
    for oh, ow in product(range(out_shape[2]), range(out_shape[3])):
        taps = []
        for c, kh, kw in product(range(c_group), range(kh_size), range(kw_size)):
            ih = oh * stride[0] - padding[0] + kh * dilation[0]
            iw = ow * stride[1] - padding[1] + kw * dilation[1]
            if 0 <= ih < h_size and 0 <= iw < w_size:
                input_at = (c * h_size + ih) * w_size + iw
                taps.append((input_at, (c * kh_size + kh) * kw_size + kw))
        table.append(taps)
    return table


def _output_positions(image, weight, out_shape, table, groups):
    """Every output position, in row-major order, with the taps it reads.

    Yields ``(o, image start, weight start, taps)``: the output channel, where sample ``n``'s group
    of input channels starts in the image (``(n * C_in + g * C_in / groups)
    * H * W``), where output channel ``o``'s kernel starts in the weight
    (``o * C_in / groups * KH * KW``), and the position's taps from
    :func:`_tap_table`, relative to those starts.
    """
    n_size, c_out, oh_size, ow_size = out_shape
    _, c_in, h_size, w_size = image.shape
    kernel_numel = numel(weight.shape[1:])
    c_group = weight.shape[1]
    for n, o in product(range(n_size), range(c_out)):
        group = o // (c_out // groups)
        image_start = (n * c_in + group * c_group) * h_size * w_size
        for taps in table:
            yield o, image_start, o * kernel_numel, taps


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


def _scale_shift(c, mean, invstd, weight, bias, round_):
    """Channel ``c``'s scale ``invstd * weight`` and shift ``bias - mean * scale``."""
    m = memory(mean)[mean.offset + c]
    scale = memory(invstd)[invstd.offset + c]
    if weight is not None:
        scale = round_(scale * memory(weight)[weight.offset + c])
    shift = memory(bias)[bias.offset + c] if bias is not None else 0.0
    return scale, round_(shift - round_(m * scale))
