"""Convolution, pooling and batch normalisation in C: ``fast/csrc/conv.c``,
``pooling.c`` and ``batch_norm.c``.

Convolution runs as matrix products through the GEMM of ``gemm.c``, over
tiles of the im2col matrix (so the extra memory stays bounded); 1x1
convolutions with stride 1 read the input in place. Each contract method here
is one call into C; a C function that refuses its views (not contiguous, not
float32 or float64) raises TypeError rather than computing something else.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, optional_view, refused, view


def _check(status: int, kernel: str, *views: Strided) -> None:
    """Turn a C status into an exception: -1 unsupported views, -2 out of memory."""
    if status == -1:
        raise refused(kernel, *views)
    if status == -2:
        raise MemoryError(f"the fast tier's {kernel} kernel could not allocate its buffers")


class ConvKernels:
    """conv2d and its gradients, im2col and col2im, pooling and batch norm, in C."""

    def conv2d(self, out, input, weight, bias, stride, padding, dilation, groups):
        """``out = conv(input, weight) + bias`` (see the contract)."""
        status = lib.gt_conv2d(
            view(out), view(input), view(weight), optional_view(bias),
            *stride, *padding, *dilation, groups,
        )  # fmt: skip
        _check(status, "conv2d", out, input, weight)

    def conv2d_backward_input(
        self, grad_input, grad_output, weight, stride, padding, dilation, groups
    ):
        """The input gradient of :meth:`conv2d`."""
        status = lib.gt_conv2d_backward_input(
            view(grad_input), view(grad_output), view(weight),
            *stride, *padding, *dilation, groups,
        )  # fmt: skip
        _check(status, "conv2d_backward_input", grad_input, grad_output, weight)

    def conv2d_backward_weight(
        self, grad_weight, grad_output, input, stride, padding, dilation, groups
    ):
        """The weight gradient of :meth:`conv2d`."""
        status = lib.gt_conv2d_backward_weight(
            view(grad_weight), view(grad_output), view(input),
            *stride, *padding, *dilation, groups,
        )  # fmt: skip
        _check(status, "conv2d_backward_weight", grad_weight, grad_output, input)

    def im2col(self, out, input, kernel_size, stride, padding, dilation):
        """Sliding blocks of ``input`` as columns (``F.unfold``)."""
        status = lib.gt_im2col(view(out), view(input), *kernel_size, *stride, *padding, *dilation)
        _check(status, "im2col", out, input)

    def col2im(self, out, columns, kernel_size, stride, padding, dilation):
        """Columns summed back into images (``F.fold``)."""
        status = lib.gt_col2im(view(out), view(columns), *kernel_size, *stride, *padding, *dilation)
        _check(status, "col2im", out, columns)

    def max_pool2d(self, out, indices, input, kernel_size, stride, padding, dilation):
        """Window maxima and their positions."""
        status = lib.gt_max_pool2d(
            view(out), view(indices), view(input), *kernel_size, *stride, *padding, *dilation
        )
        _check(status, "max_pool2d", out, indices, input)

    def max_pool2d_backward(self, grad_input, grad_output, indices):
        """Each output gradient added at its maximum."""
        status = lib.gt_max_pool2d_backward(view(grad_input), view(grad_output), view(indices))
        _check(status, "max_pool2d_backward", grad_input, grad_output, indices)

    def avg_pool2d(
        self, out, input, kernel_size, stride, padding, count_include_pad, divisor_override
    ):
        """Window means."""
        status = lib.gt_avg_pool2d(
            view(out), view(input), *kernel_size, *stride, *padding,
            int(count_include_pad), divisor_override,
        )  # fmt: skip
        _check(status, "avg_pool2d", out, input)

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
        """Each output gradient spread evenly over its window."""
        status = lib.gt_avg_pool2d_backward(
            view(grad_input), view(grad_output), *kernel_size, *stride, *padding,
            int(count_include_pad), divisor_override,
        )  # fmt: skip
        _check(status, "avg_pool2d_backward", grad_input, grad_output)

    def batch_norm_stats(self, mean, var, input):
        """Per-channel mean and biased variance."""
        _check(
            lib.gt_batch_norm_stats(view(mean), view(var), view(input)), "batch_norm_stats", input
        )

    def batch_norm_update_stats(
        self, invstd, running_mean, running_var, mean, var, momentum, eps, count
    ):
        """invstd, and the running statistics moved toward the batch's."""
        status = lib.gt_batch_norm_update_stats(
            view(invstd), optional_view(running_mean), optional_view(running_var),
            view(mean), view(var), momentum, eps, count,
        )  # fmt: skip
        _check(status, "batch_norm_update_stats", invstd, mean, var)

    def batch_norm_apply(self, out, input, mean, invstd, weight, bias):
        """``(x - mean) * invstd * weight + bias``."""
        status = lib.gt_batch_norm_apply(
            view(out), view(input), view(mean), view(invstd),
            optional_view(weight), optional_view(bias),
        )  # fmt: skip
        _check(status, "batch_norm_apply", out, input)

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
        """The gradients of :meth:`batch_norm_apply`."""
        status = lib.gt_batch_norm_backward(
            optional_view(grad_input), optional_view(grad_weight), optional_view(grad_bias),
            view(grad_output), view(input), view(mean), view(invstd), optional_view(weight),
            int(training),
        )  # fmt: skip
        _check(status, "batch_norm_backward", grad_output, input)
