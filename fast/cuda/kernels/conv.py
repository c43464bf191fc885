"""Convolution, pooling and batch-normalisation kernels of the CUDA tier (``fast/cuda/conv.cu``).

Every view is contiguous (the frontend makes it so). Each kernel gives one
thread to each element it writes; the backward passes gather what an element
needs rather than scatter into shared targets, so they use no atomics and
give the same sums on every run.

Convolution runs one of two ways (:data:`CONV_VIA_GEMM`): lowered to
:meth:`im2col` and one batched :meth:`matmul` per pass (the "GEMM lowering":
on a GPU the product runs in cuBLAS, where nearly all the arithmetic is), or
by the direct kernels, a thread per output, input or weight element, which
need no scratch memory. The lowering materialises the column matrix
``(N, C_in * KH * KW, OH * OW)`` in device memory.
"""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ._views import MAX_ROW_BLOCKS, row_threads

#: A (height, width) pair of sizes.
Pair = tuple[int, int]


def _geometry(image: Strided, pooled: Strided, kernel_size, stride, padding, dilation) -> tuple:
    """(H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW) as the kernels take it."""
    return (
        image.shape[2], image.shape[3], pooled.shape[2], pooled.shape[3], *kernel_size,
        *stride, *padding, *dilation,
    )  # fmt: skip


def _step(view: Strided | None) -> int:
    return view.strides[0] if view is not None else 0


#: Lower convolutions to im2col + matmul (True), use the direct kernels
#: (False), or decide by the driver (None): lower when it has cuBLAS.
CONV_VIA_GEMM: bool | None = None


class _Lowering:
    """The shapes of a convolution lowered to matrix products, per sample and group.

    With ``G`` groups, ``Og = C_out / G`` output channels and ``Ck = C_in / G * KH
    * KW`` column rows per group and ``L = OH * OW`` positions: the output of
    group ``g`` is ``weight[g] (Og, Ck) @ columns[n, g] (Ck, L)``.
    """

    def __init__(
        self, images: Strided, outputs: Strided, weight_shape: tuple[int, ...], groups: int
    ) -> None:
        self.n, self.c = images.shape[:2]
        self.o = outputs.shape[1]
        self.kk = weight_shape[2] * weight_shape[3]
        self.length = outputs.shape[2] * outputs.shape[3]
        self.g, self.og = groups, self.o // groups
        self.ck = self.c // groups * self.kk
        self.dtype = images.buffer.dtype

    def columns(self, kernels) -> Strided:
        """A new (N, C_in * KH * KW, L) column matrix in device memory (from ``kernels``' driver)."""
        rows = self.c * self.kk
        buffer = kernels.driver.device_empty(self.n * rows * self.length, self.dtype)
        return Strided(buffer, (self.n, rows, self.length), (rows * self.length, self.length, 1), 0)

    def column_groups(self, columns: Strided, transposed: bool = False) -> Strided:
        """``columns`` as (N, G, Ck, L), or (N, G, L, Ck) when ``transposed``."""
        n_stride, g_stride = self.c * self.kk * self.length, self.ck * self.length
        if transposed:
            return columns._replace(
                shape=(self.n, self.g, self.length, self.ck),
                strides=(n_stride, g_stride, 1, self.length),
            )
        return columns._replace(
            shape=(self.n, self.g, self.ck, self.length),
            strides=(n_stride, g_stride, self.length, 1),
        )

    def output_groups(self, outputs: Strided) -> Strided:
        """A contiguous (N, C_out, OH, OW) view as (N, G, Og, L)."""
        return outputs._replace(
            shape=(self.n, self.g, self.og, self.length),
            strides=(self.o * self.length, self.og * self.length, self.length, 1),
        )

    def weight_groups(self, weight: Strided, transposed: bool = False) -> Strided:
        """The weight as (N, G, Og, Ck), repeated over samples (stride 0), or its
        transpose (N, G, Ck, Og)."""
        g_stride = self.og * self.ck
        if transposed:
            return weight._replace(
                shape=(self.n, self.g, self.ck, self.og), strides=(0, g_stride, 1, self.ck)
            )
        return weight._replace(
            shape=(self.n, self.g, self.og, self.ck), strides=(0, g_stride, self.ck, 1)
        )


class ConvKernels:
    """conv2d (+ backward), im2col, col2im, pooling (+ backward), batch norm."""

    def _via_gemm(self) -> bool:
        if CONV_VIA_GEMM is not None:
            return CONV_VIA_GEMM
        return getattr(self.driver, "matmul_blas", None) is not None

    # ------------------------------------------------------------ convolution
    def conv2d(
        self,
        out: Strided,
        input: Strided,
        weight: Strided,
        bias: Strided | None,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        groups: int,
    ) -> None:
        """2-D cross-correlation: im2col + matmul, or a thread per output element."""
        if self._via_gemm():
            low = _Lowering(input, out, weight.shape, groups)
            columns = low.columns(self)
            self.im2col(columns, input, weight.shape[2:], stride, padding, dilation)
            self.matmul(
                low.output_groups(out), low.weight_groups(weight), low.column_groups(columns)
            )
            if bias is not None:
                self.launch(
                    "conv.cu", f"conv2d_add_bias_{self.suffix(out)}", numel(out.shape),
                    self.ptr(out), self.ptr(bias), numel(out.shape), low.o, low.length,
                )  # fmt: skip
            return
        geom = _geometry(input, out, weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_{self.suffix(out)}", numel(out.shape), self.ptr(out),
            self.ptr(input), self.ptr(weight), self.ptr_or_null(bias), input.shape[0],
            input.shape[1], out.shape[1], groups, *geom,
        )  # fmt: skip

    def conv2d_backward_input(
        self,
        grad_input: Strided,
        grad_output: Strided,
        weight: Strided,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        groups: int,
    ) -> None:
        """The input's gradient: matmul + col2im, or a thread per input element
        gathering the taps that read it."""
        if self._via_gemm():
            low = _Lowering(grad_input, grad_output, weight.shape, groups)
            columns = low.columns(self)
            self.matmul(
                low.column_groups(columns),
                low.weight_groups(weight, transposed=True),
                low.output_groups(grad_output),
            )
            self.col2im(grad_input, columns, weight.shape[2:], stride, padding, dilation)
            return
        geom = _geometry(grad_input, grad_output, weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_backward_input_{self.suffix(grad_input)}", numel(grad_input.shape),
            self.ptr(grad_input), self.ptr(grad_output), self.ptr(weight),
            grad_input.shape[0], grad_input.shape[1], grad_output.shape[1], groups, *geom,
        )  # fmt: skip

    def conv2d_backward_weight(
        self,
        grad_weight: Strided,
        grad_output: Strided,
        input: Strided,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
        groups: int,
    ) -> None:
        """The weight's gradient: im2col, a matmul per sample and a sum over samples,
        or a thread per weight element summing over batch and positions."""
        if self._via_gemm():
            low = _Lowering(input, grad_output, grad_weight.shape, groups)
            columns = low.columns(self)
            self.im2col(columns, input, grad_weight.shape[2:], stride, padding, dilation)
            per_sample = self.driver.device_empty(low.n * low.o * low.ck, low.dtype)
            products = Strided(
                per_sample,
                (low.n, low.g, low.og, low.ck),
                (low.o * low.ck, low.og * low.ck, low.ck, 1),
                0,
            )
            self.matmul(products, low.output_groups(grad_output), low.column_groups(columns, True))
            total = grad_weight._replace(
                shape=(1, low.g, low.og, low.ck),
                strides=(low.o * low.ck, low.og * low.ck, low.ck, 1),
            )
            self.reduce("sum", total, products, (0,))
            return
        geom = _geometry(input, grad_output, grad_weight.shape[2:], stride, padding, dilation)
        self.launch(
            "conv.cu", f"conv2d_backward_weight_{self.suffix(grad_weight)}",
            numel(grad_weight.shape), self.ptr(grad_weight), self.ptr(grad_output), self.ptr(input),
            input.shape[0], input.shape[1], grad_output.shape[1], groups, *geom,
        )  # fmt: skip

    def im2col(
        self,
        out: Strided,
        input: Strided,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
    ) -> None:
        """Unfold sliding blocks: a thread per column entry."""
        n, c, h, w = input.shape
        kh, kw = kernel_size
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        geom = (h, w, oh, ow, kh, kw, *stride, *padding, *dilation)
        self.launch(
            "conv.cu", f"im2col_{self.suffix(out)}", numel(out.shape), self.ptr(out),
            self.ptr(input), c, numel(out.shape), *geom,
        )  # fmt: skip

    def col2im(
        self,
        out: Strided,
        columns: Strided,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
    ) -> None:
        """Fold blocks back: a thread per image element sums the entries taken from it."""
        n, c, h, w = out.shape
        kh, kw = kernel_size
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        geom = (h, w, oh, ow, kh, kw, *stride, *padding, *dilation)
        self.launch(
            "conv.cu", f"col2im_{self.suffix(out)}", numel(out.shape), self.ptr(out),
            self.ptr(columns), c, numel(out.shape), *geom,
        )  # fmt: skip

    # ---------------------------------------------------------------- pooling
    def max_pool2d(
        self,
        out: Strided,
        indices: Strided,
        input: Strided,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        dilation: Pair,
    ) -> None:
        """Maximum of each window and where it is: a thread per output element."""
        planes = out.shape[0] * out.shape[1]
        geom = _geometry(input, out, kernel_size, stride, padding, dilation)
        self.launch(
            "conv.cu", f"max_pool2d_{self.suffix(out)}", numel(out.shape), self.ptr(out),
            self.ptr(indices), self.ptr(input), planes, *geom,
        )  # fmt: skip

    def max_pool2d_backward(
        self, grad_input: Strided, grad_output: Strided, indices: Strided
    ) -> None:
        """Route each output gradient to its maximum: a thread per (n, c) plane."""
        planes = grad_input.shape[0] * grad_input.shape[1]
        self.launch(
            "conv.cu", f"max_pool2d_backward_{self.suffix(grad_input)}", planes,
            self.ptr(grad_input), self.ptr(grad_output), self.ptr(indices), planes,
            grad_input.shape[2] * grad_input.shape[3],
            grad_output.shape[2] * grad_output.shape[3],
        )  # fmt: skip

    def avg_pool2d(
        self,
        out: Strided,
        input: Strided,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        count_include_pad: bool,
        divisor_override: int,
    ) -> None:
        """Mean of each window, PyTorch's divisor rule: a thread per output element."""
        planes = out.shape[0] * out.shape[1]
        geom = _geometry(input, out, kernel_size, stride, padding, (1, 1))
        self.launch(
            "conv.cu", f"avg_pool2d_{self.suffix(out)}", numel(out.shape), self.ptr(out),
            self.ptr(input), planes, *geom, int(bool(count_include_pad)),
            int(divisor_override or 0),
        )  # fmt: skip

    def avg_pool2d_backward(
        self,
        grad_input: Strided,
        grad_output: Strided,
        kernel_size: Pair,
        stride: Pair,
        padding: Pair,
        count_include_pad: bool,
        divisor_override: int,
    ) -> None:
        """The gradient of avg_pool2d: a thread per input element gathers its windows' shares."""
        planes = grad_input.shape[0] * grad_input.shape[1]
        geom = _geometry(grad_input, grad_output, kernel_size, stride, padding, (1, 1))
        self.launch(
            "conv.cu", f"avg_pool2d_backward_{self.suffix(grad_input)}", numel(grad_input.shape),
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

    def batch_norm_update_stats(
        self,
        invstd: Strided,
        running_mean: Strided | None,
        running_var: Strided | None,
        mean: Strided,
        var: Strided,
        momentum: float,
        eps: float,
        count: int,
    ) -> None:
        """invstd and the running statistics, a thread per channel (the factors
        rounded to the dtype here, as the CPU tiers round them)."""
        c = mean.shape[0]
        if c == 0:
            return
        dtype = mean.buffer.dtype.type
        factors = (dtype(1 - momentum), dtype(momentum), dtype(momentum * count / (count - 1)))
        self.launch(
            "conv.cu", f"batch_norm_update_stats_{self.suffix(mean)}", c, self.ptr(invstd),
            _step(invstd), self.ptr_or_null(running_mean), _step(running_mean),
            self.ptr_or_null(running_var), _step(running_var), self.ptr(mean), _step(mean),
            self.ptr(var), _step(var), c, float(eps), *factors,
        )  # fmt: skip

    def batch_norm_apply(
        self,
        out: Strided,
        input: Strided,
        mean: Strided,
        invstd: Strided,
        weight: Strided | None,
        bias: Strided | None,
    ) -> None:
        """``(x - mean) * invstd * weight + bias``, elementwise."""
        n, c, length = input.shape
        self.launch(
            "conv.cu", f"batch_norm_apply_{self.suffix(input)}", numel(input.shape), self.ptr(out),
            self.ptr(input), self.ptr(mean), _step(mean), self.ptr(invstd), _step(invstd),
            self.ptr_or_null(weight), _step(weight), self.ptr_or_null(bias), _step(bias), n, c,
            length,
        )  # fmt: skip

    def batch_norm_backward(
        self,
        grad_input: Strided | None,
        grad_weight: Strided | None,
        grad_bias: Strided | None,
        grad_output: Strided,
        input: Strided,
        mean: Strided,
        invstd: Strided,
        weight: Strided | None,
        training: bool,
    ) -> None:
        """Per-channel sums (a block per channel), then grad_input elementwise."""
        n, c, length = input.shape
        if c == 0:
            return
        sfx = self.suffix(input)
        sums = self.driver.device_empty(2 * c, np.float64)
        self.launch_grid(
            "conv.cu", f"batch_norm_sums_{sfx}", min(c, MAX_ROW_BLOCKS), row_threads(n * length),
            sums.ptr, self.ptr_or_null(grad_weight), _step(grad_weight),
            self.ptr_or_null(grad_bias), _step(grad_bias), self.ptr(grad_output), self.ptr(input),
            self.ptr(mean), _step(mean), self.ptr(invstd), _step(invstd), n, c, length,
        )  # fmt: skip
        if grad_input is not None:
            self.launch(
                "conv.cu", f"batch_norm_grad_input_{sfx}", numel(input.shape), self.ptr(grad_input),
                sums.ptr, self.ptr(grad_output), self.ptr(input), self.ptr(mean), _step(mean),
                self.ptr(invstd), _step(invstd), self.ptr_or_null(weight), _step(weight), n, c,
                length, int(bool(training)),
            )  # fmt: skip
