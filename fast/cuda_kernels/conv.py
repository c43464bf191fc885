"""Convolution, pooling and batch-normalisation kernels of the CUDA tier (``fast/cuda/conv.cu``).

Every view is contiguous (the frontend makes it so). Each kernel gives one
thread to each element it writes; the backward passes gather what an element
needs rather than scatter into shared targets, so they use no atomics and
give the same sums on every run.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided
from glasstorch.cuda import _memory

from ._views import MAX_ROW_BLOCKS, numel, row_threads


def _geometry(image: Strided, pooled: Strided, kernel_size, stride, padding, dilation) -> tuple:
    """(H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW) as the kernels take it."""
    return (
        image.shape[2], image.shape[3], pooled.shape[2], pooled.shape[3], *kernel_size,
        *stride, *padding, *dilation,
    )  # fmt: skip


def _step(view: Strided | None) -> int:
    return view.strides[0] if view is not None else 0


class ConvKernels:
    """conv2d (+ backward), im2col, col2im, pooling (+ backward), batch norm."""

    def _address(self, view: Strided | None) -> int:
        return self.ptr(view) if view is not None else 0

    # ------------------------------------------------------------ convolution
    def conv2d(self, out, input, weight, bias, stride, padding, dilation, groups) -> None:
        """2-D cross-correlation: a thread per output element sums its window."""
        geom = _geometry(input, out, weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_{self.suffix(out)}", numel(out), self.ptr(out), self.ptr(input),
            self.ptr(weight), self._address(bias), input.shape[0], input.shape[1],
            out.shape[1], groups, *geom,
        )  # fmt: skip

    def conv2d_backward_input(
        self, grad_input, grad_output, weight, stride, padding, dilation, groups
    ) -> None:
        """The input's gradient: a thread per input element gathers the taps that read it."""
        geom = _geometry(grad_input, grad_output, weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_backward_input_{self.suffix(grad_input)}", numel(grad_input),
            self.ptr(grad_input), self.ptr(grad_output), self.ptr(weight),
            grad_input.shape[0], grad_input.shape[1], grad_output.shape[1], groups, *geom,
        )  # fmt: skip

    def conv2d_backward_weight(
        self, grad_weight, grad_output, input, stride, padding, dilation, groups
    ) -> None:
        """The weight's gradient: a thread per weight element sums over batch and positions."""
        geom = _geometry(input, grad_output, grad_weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_backward_weight_{self.suffix(grad_weight)}",
            numel(grad_weight), self.ptr(grad_weight), self.ptr(grad_output), self.ptr(input),
            input.shape[0], input.shape[1], grad_output.shape[1], groups, *geom,
        )  # fmt: skip

    def im2col(self, out, input, kernel_size, stride, padding, dilation) -> None:
        """Unfold sliding blocks: a thread per column entry."""
        n, c, h, w = input.shape
        kh, kw = kernel_size
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        geom = (h, w, oh, ow, kh, kw, *stride, *padding, *dilation)
        self.launch(
            "conv.cu", f"im2col_{self.suffix(out)}", numel(out), self.ptr(out), self.ptr(input),
            c, numel(out), *geom,
        )  # fmt: skip

    def col2im(self, out, columns, kernel_size, stride, padding, dilation) -> None:
        """Fold blocks back: a thread per image element sums the entries taken from it."""
        n, c, h, w = out.shape
        kh, kw = kernel_size
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        geom = (h, w, oh, ow, kh, kw, *stride, *padding, *dilation)
        self.launch(
            "conv.cu", f"col2im_{self.suffix(out)}", numel(out), self.ptr(out),
            self.ptr(columns), c, numel(out), *geom,
        )  # fmt: skip

    # ---------------------------------------------------------------- pooling
    def max_pool2d(self, out, indices, input, kernel_size, stride, padding, dilation) -> None:
        """Maximum of each window and where it is: a thread per output element."""
        planes = out.shape[0] * out.shape[1]
        geom = _geometry(input, out, kernel_size, stride, padding, dilation)
        self.launch(
            "conv.cu", f"max_pool2d_{self.suffix(out)}", numel(out), self.ptr(out),
            self.ptr(indices), self.ptr(input), planes, *geom,
        )  # fmt: skip

    def max_pool2d_backward(self, grad_input, grad_output, indices) -> None:
        """Route each output gradient to its maximum: a thread per (n, c) plane."""
        planes = grad_input.shape[0] * grad_input.shape[1]
        self.launch(
            "conv.cu", f"max_pool2d_backward_{self.suffix(grad_input)}", planes,
            self.ptr(grad_input), self.ptr(grad_output), self.ptr(indices), planes,
            grad_input.shape[2] * grad_input.shape[3],
            grad_output.shape[2] * grad_output.shape[3],
        )  # fmt: skip

    def avg_pool2d(
        self, out, input, kernel_size, stride, padding, count_include_pad, divisor_override
    ) -> None:
        """Mean of each window, PyTorch's divisor rule: a thread per output element."""
        planes = out.shape[0] * out.shape[1]
        geom = _geometry(input, out, kernel_size, stride, padding, (1, 1))
        self.launch(
            "conv.cu", f"avg_pool2d_{self.suffix(out)}", numel(out), self.ptr(out),
            self.ptr(input), planes, *geom, int(bool(count_include_pad)),
            int(divisor_override or 0),
        )  # fmt: skip

    def avg_pool2d_backward(
        self, grad_input, grad_output, kernel_size, stride, padding, count_include_pad,
        divisor_override,
    ) -> None:  # fmt: skip
        """The gradient of avg_pool2d: a thread per input element gathers its windows' shares."""
        planes = grad_input.shape[0] * grad_input.shape[1]
        geom = _geometry(grad_input, grad_output, kernel_size, stride, padding, (1, 1))
        self.launch(
            "conv.cu", f"avg_pool2d_backward_{self.suffix(grad_input)}", numel(grad_input),
            self.ptr(grad_input), self.ptr(grad_output), planes, *geom,
            int(bool(count_include_pad)), int(divisor_override or 0),
        )  # fmt: skip

    # ---------------------------------------------------- batch normalisation
    def batch_norm_stats(self, mean: Strided, var: Strided, input: Strided) -> None:
        """Per-channel mean and biased variance (two passes, double sums): a block per channel."""
        n, c, length = input.shape
        if c == 0:
            return
        self.launch_grid(
            "conv.cu", f"batch_norm_stats_{self.suffix(input)}", min(c, MAX_ROW_BLOCKS),
            row_threads(n * length), self.ptr(mean), _step(mean), self.ptr(var), _step(var),
            self.ptr(input), n, c, length,
        )  # fmt: skip

    def batch_norm_apply(self, out, input, mean, invstd, weight, bias) -> None:
        """``(x - mean) * invstd * weight + bias``, elementwise."""
        n, c, length = input.shape
        self.launch(
            "conv.cu", f"batch_norm_apply_{self.suffix(input)}", numel(input), self.ptr(out),
            self.ptr(input), self.ptr(mean), _step(mean), self.ptr(invstd), _step(invstd),
            self._address(weight), _step(weight), self._address(bias), _step(bias), n, c,
            length,
        )  # fmt: skip

    def batch_norm_backward(
        self, grad_input, grad_weight, grad_bias, grad_output, input, mean, invstd, weight,
        training,
    ) -> None:  # fmt: skip
        """Per-channel sums (a block per channel), then grad_input elementwise."""
        n, c, length = input.shape
        if c == 0:
            return
        sfx = self.suffix(input)
        sums = _memory.device_empty(2 * c, np.float64)
        self.launch_grid(
            "conv.cu", f"batch_norm_sums_{sfx}", min(c, MAX_ROW_BLOCKS), row_threads(n * length),
            sums.ptr, self._address(grad_weight), _step(grad_weight), self._address(grad_bias),
            _step(grad_bias), self.ptr(grad_output), self.ptr(input), self.ptr(mean),
            _step(mean), self.ptr(invstd), _step(invstd), n, c, length,
        )  # fmt: skip
        if grad_input is not None:
            self.launch(
                "conv.cu", f"batch_norm_grad_input_{sfx}", numel(input), self.ptr(grad_input),
                sums.ptr, self.ptr(grad_output), self.ptr(input), self.ptr(mean), _step(mean),
                self.ptr(invstd), _step(invstd), self._address(weight), _step(weight), n, c,
                length, int(bool(training)),
            )  # fmt: skip
