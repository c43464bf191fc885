"""Convolution, pooling, normalisation and resampling for images: the functional forms.

:mod:`glasstorch.nn.functional` re-exports every public function here
(``F.conv2d``, ``F.max_pool2d``, ...). The heavy lifting is done by the
kernels of the contract (``conv2d``, ``max_pool2d``, ``batch_norm_apply``...),
each wrapped in an :class:`~glasstorch.autograd.Function` whose ``backward``
calls the matching gradient kernel. The 1-D forms run through the 2-D
kernels with a height of 1. Padding, resampling and group normalisation are
compositions of differentiable tensor operations.

Every kernel wants contiguous inputs of one floating dtype; the Functions
make them so (``.contiguous()`` costs nothing when they already are).
"""

from __future__ import annotations

import math

from glasstorch import _dtype
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.nn._conv_double_backward import conv2d_grads_as_nodes
from glasstorch.nn.loss_nodes import formula_gradients
from glasstorch.ops.creation import arange, full, rand, tensor
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor, empty_tensor

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "conv_transpose2d",
    "dropout2d",
    "fold",
    "group_norm",
    "interpolate",
    "max_pool1d",
    "max_pool2d",
    "pad",
    "unfold",
]


# ================================================================ arguments


def _pair(value, name: str = "argument") -> tuple[int, int]:
    """An int or a pair of ints as a pair: ``3`` -> ``(3, 3)``."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) != 2:
        raise ValueError(f"expected {name} to be a single int or a pair of ints, got {value}")
    return (int(value[0]), int(value[1]))


def _single(value) -> int:
    """An int or a one-element sequence as an int."""
    if isinstance(value, int):
        return value
    (value,) = tuple(value)
    return int(value)


def _float_input(input: Tensor, name: str) -> None:
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{input.dtype.legacy_name[:-6]}'")


def _size_list(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _batched(input: Tensor, dims: int, name: str) -> tuple[Tensor, bool]:
    """``input`` with a batch dimension, and whether one was added (unbatched input)."""
    if input.dim() == dims + 1:
        return input.unsqueeze(0), True
    if input.dim() == dims + 2:
        return input, False
    raise RuntimeError(
        f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, "
        f"but got input of size: {_size_list(input.shape)}"
    )


# ============================================================== convolution


def _conv_checks(input, weight, bias, stride, padding, dilation, groups, shown=None) -> None:
    """PyTorch's checks on a 4-D convolution's arguments, with its messages.

    ``shown`` is the ``(input, weight)`` pair the user passed, whose sizes the
    messages quote (a 1-D convolution checks its 4-D form).
    """
    shown_input, shown_weight = shown if shown is not None else (input, weight)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.dim() != 4:
        raise RuntimeError(
            f"weight should have at least three dimensions, got {_size_list(weight.shape)}"
        )
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_size_list(shown_weight.shape)}, expected "
            f"input{_size_list(shown_input.shape)} to have {weight.shape[1] * groups} channels, "
            f"but got {input.shape[1]} channels instead"
        )
    if weight.shape[0] % groups != 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size {_size_list(weight.shape)} instead"
        )
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(
            f"Given weight of size {_size_list(weight.shape)}, expected bias to be "
            f"1-dimensional with {weight.shape[0]} elements, but got bias of size "
            f"{_size_list(bias.shape)} instead"
        )
    padded = [input.shape[2 + i] + 2 * padding[i] for i in range(2)]
    effective = [dilation[i] * (weight.shape[2 + i] - 1) + 1 for i in range(2)]
    if padded[0] < effective[0] or padded[1] < effective[1]:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({padded[0]} x {padded[1]}). "
            f"Kernel size: ({effective[0]} x {effective[1]}). "
            "Kernel size can't be greater than actual input size"
        )
    for parameter, role in ((weight, "weight"), (bias, "bias")):
        if parameter is not None and parameter.device != input.device:
            # PyTorch's type names: torch.cuda.FloatTensor on the GPU, torch.FloatTensor on the CPU
            names = [
                f"torch.{'cuda.' if t.is_cuda else ''}{t.dtype.legacy_name}"
                for t in (input, parameter)
            ]
            raise RuntimeError(
                f"Input type ({names[0]}) and {role} type ({names[1]}) should be the same"
            )
        if parameter is not None and parameter.dtype is not input.dtype:
            raise RuntimeError(
                f"Input type ({input.dtype.legacy_name}) and weight type "
                f"({parameter.dtype.legacy_name}) should be the same"
            )


def _conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


class Conv2dFunction(Function):
    """2-D convolution through the ``conv2d`` kernel and its two gradient kernels.

    Backward: the input gradient is ``conv2d_backward_input`` (a transposed
    convolution of the incoming gradient), the weight gradient
    ``conv2d_backward_weight``, the bias gradient the incoming gradient summed
    over every dimension but the channels.
    """

    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, stride, padding, dilation, groups):
        ctx.operands_copied = not (input.is_contiguous() and weight.is_contiguous())
        input, weight = input.contiguous(), weight.contiguous()
        n, _, h, w = input.shape
        out_h = _conv_output_size(h, weight.shape[2], stride[0], padding[0], dilation[0])
        out_w = _conv_output_size(w, weight.shape[3], stride[1], padding[1], dilation[1])
        out = empty_tensor((n, weight.shape[0], out_h, out_w), input.dtype)
        bias_view = None if bias is None else bias.contiguous()._strided()
        kernels.conv2d(
            out._strided(), input._strided(), weight._strided(), bias_view,
            stride, padding, dilation, groups,
        )  # fmt: skip
        ctx.save_for_backward(
            input if ctx.needs_input_grad[1] else None,
            weight if ctx.needs_input_grad[0] else None,
        )
        ctx.geometry = (stride, padding, dilation, groups)
        ctx.input_shape = input.shape
        ctx.weight_shape = weight.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        if is_grad_enabled():  # create_graph=True: gradients that can be differentiated again
            return conv2d_grads_as_nodes(ctx, grad, input, weight)
        grad = grad.contiguous()
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = empty_tensor(ctx.input_shape, grad.dtype)
            kernels.conv2d_backward_input(
                grad_input._strided(), grad._strided(), weight._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[1]:
            grad_weight = empty_tensor(ctx.weight_shape, grad.dtype)
            kernels.conv2d_backward_weight(
                grad_weight._strided(), grad._strided(), input._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[2]:
            grad_bias = grad.sum((0, 2, 3))
        return grad_input, grad_weight, grad_bias, None, None, None, None


def _same_padding(kernel: tuple, dilation: tuple) -> tuple[list[int], list[int]]:
    """``padding="same"``: the total padding of each dimension, split left and right.

    When the total is odd the extra element goes on the right (PyTorch's rule).
    """
    left, right = [], []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        left.append(total // 2)
        right.append(total - total // 2)
    return left, right


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, dims: int, name: str):
    """The shared body of :func:`conv1d` and :func:`conv2d` (``dims`` spatial dims)."""
    _float_input(input, "slow_conv2d_cpu")
    batched, added = _batched(input, dims, name)
    to_pair = (lambda v: (1, _single(v))) if dims == 1 else _pair
    stride, dilation = to_pair(stride), to_pair(dilation)
    weight4 = weight.unsqueeze(2) if dims == 1 else weight
    if dims == 1 and weight.dim() != 3:
        raise RuntimeError(
            f"weight should have at least three dimensions, got {_size_list(weight.shape)}"
        )
    image = batched.unsqueeze(2) if dims == 1 else batched
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            left, right = _same_padding(weight4.shape[2:], dilation)
            if left != right:  # uneven: pad the extra element on the right first
                image = pad(image, (0, right[1] - left[1], 0, right[0] - left[0]))
            padding = tuple(left)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = to_pair(padding) if dims == 2 else (0, _single(padding))
    _conv_checks(image, weight4, bias, stride, padding, dilation, groups, (batched, weight))
    out = Conv2dFunction.apply(image, weight4, bias, stride, padding, dilation, groups)
    if dims == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if added else out


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) of a batch of images, as :class:`nn.Conv2d`.

    Args:
        input: ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``.
        weight: ``(C_out, C_in / groups, KH, KW)``.
        bias: ``(C_out,)`` or None.
        stride, padding, dilation: an int or an ``(h, w)`` pair; ``padding`` may
            also be ``"valid"`` (none) or ``"same"`` (output as large as the
            input; stride 1 only).
        groups: split the channels into this many independent groups.

    Shape:
        - Output: ``(N, C_out, OH, OW)`` with
          ``OH = (H + 2 * padding - dilation * (KH - 1) - 1) // stride + 1``.

    Examples::

        >>> x = torch.randn(8, 3, 32, 32)
        >>> F.conv2d(x, torch.randn(16, 3, 3, 3), padding=1).shape
        torch.Size([8, 16, 32, 32])
    """
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution of a batch of sequences, as :class:`nn.Conv1d`.

    Args:
        input: ``(N, C_in, L)`` or unbatched ``(C_in, L)``.
        weight: ``(C_out, C_in / groups, K)``.
        bias: ``(C_out,)`` or None.
        stride, padding, dilation: ints (``padding`` also ``"valid"`` or ``"same"``).
        groups: independent channel groups.

    Shape:
        - Output: ``(N, C_out, L_out)``,
          ``L_out = (L + 2 * padding - dilation * (K - 1) - 1) // stride + 1``.

    Examples::

        >>> F.conv1d(torch.randn(4, 2, 10), torch.randn(3, 2, 5)).shape
        torch.Size([4, 3, 6])
    """
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


class ConvTranspose2dFunction(Function):
    """Transposed convolution: the input gradient of a convolution, run forward.

    Forward is ``conv2d_backward_input`` (the weight ``(C_in, C_out / groups,
    KH, KW)`` plays the convolution's weight); its input gradient is a plain
    ``conv2d`` and its weight gradient ``conv2d_backward_weight`` with the
    roles of input and gradient swapped.
    """

    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, stride, padding, dilation, groups, output_shape):
        input, weight = input.contiguous(), weight.contiguous()
        out = empty_tensor(output_shape, input.dtype)
        geometry = (stride, padding, dilation, groups)
        kernels.conv2d_backward_input(
            out._strided(), input._strided(), weight._strided(), *geometry
        )
        if bias is not None:
            out = out + bias.reshape(1, -1, 1, 1)
        ctx.save_for_backward(input, weight)
        ctx.geometry = geometry
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        grad = grad.contiguous()
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = empty_tensor(input.shape, grad.dtype)
            kernels.conv2d(
                grad_input._strided(), grad._strided(), weight._strided(), None, *ctx.geometry
            )
        if ctx.needs_input_grad[1]:
            grad_weight = empty_tensor(weight.shape, grad.dtype)
            kernels.conv2d_backward_weight(
                grad_weight._strided(), input._strided(), grad._strided(), *ctx.geometry
            )
        if ctx.needs_input_grad[2]:
            grad_bias = grad.sum((0, 2, 3))
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """2-D transposed convolution ("deconvolution"), as :class:`nn.ConvTranspose2d`.

    The gradient of :func:`conv2d` with respect to its input: each input pixel
    scatters a copy of the kernel, scaled by its value, into the output.

    Args:
        input: ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``.
        weight: ``(C_in, C_out / groups, KH, KW)``.
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: ints or ``(h, w)`` pairs;
            ``output_padding`` adds rows and columns at the bottom and right
            (it must be smaller than the stride or the dilation).
        groups: independent channel groups.

    Shape:
        - Output: ``(N, C_out, OH, OW)`` with
          ``OH = (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1``.

    Examples::

        >>> F.conv_transpose2d(torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3), stride=2).shape
        torch.Size([1, 2, 11, 11])
    """
    _float_input(input, "slow_conv_transpose2d_cpu")
    batched, added = _batched(input, 2, "conv_transpose2d")
    stride, padding = _pair(stride), _pair(padding)
    output_padding, dilation = _pair(output_padding), _pair(dilation)
    if weight.dim() != 4:
        raise RuntimeError(
            f"weight should have at least three dimensions, got {_size_list(weight.shape)}"
        )
    if batched.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size_list(weight.shape)}, expected "
            f"input{_size_list(batched.shape)} to have {weight.shape[0]} channels, but got "
            f"{batched.shape[1]} channels instead"
        )
    for i in range(2):
        if output_padding[i] >= stride[i] and output_padding[i] >= dilation[i]:
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                f"output_padding_height: {output_padding[0]} output_padding_width: "
                f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
                f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}"
            )
    out_size = [
        (batched.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
        + dilation[i] * (weight.shape[2 + i] - 1) + output_padding[i] + 1
        for i in range(2)
    ]  # fmt: skip
    shape = (batched.shape[0], weight.shape[1] * groups, *out_size)
    out = ConvTranspose2dFunction.apply(
        batched, weight, bias, stride, padding, dilation, groups, shape
    )
    return out.squeeze(0) if added else out


# ================================================================== pooling


def _pool_output_size(size, kernel, stride, padding, dilation, ceil_mode) -> int:
    """PyTorch's pooling output size; with ``ceil_mode`` the last window must start
    inside the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, dims=2):
    """Checked pairs ``(kernel, stride, padding, dilation)`` and the output size."""
    kernel = _pair(kernel_size)
    stride = (
        kernel
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _pair(stride)
    )  # noqa: E501
    padding, dilation = _pair(padding), _pair(dilation)
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should be greater than zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    for i in range(2):
        effective = (kernel[i] - 1) * dilation[i] + 1
        if padding[i] > effective // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got "
                f"pad={padding[i]}, kernel_size={kernel[i]} and dilation={dilation[i]}"
            )
    h, w = input.shape[-2], input.shape[-1]
    out_h = _pool_output_size(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    out_w = _pool_output_size(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    if out_h < 1 or out_w < 1:
        planes = input.shape[-3]
        if dims == 1:
            given = f"({planes}x{w})"
            calculated = f"({planes}x{out_w})"
        else:
            given = f"({planes}x{h}x{w})"
            calculated = f"({planes}x{out_h}x{out_w})"
        raise RuntimeError(
            f"Given input size: {given}. Calculated output size: {calculated}. "
            "Output size is too small"
        )
    return kernel, stride, padding, dilation, (out_h, out_w)


class MaxPool2dFunction(Function):
    """Max pooling through ``max_pool2d``; backward routes each gradient to its maximum."""

    backward_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, dilation, out_size):
        input = input.contiguous()
        shape = (*input.shape[:2], *out_size)
        out = empty_tensor(shape, input.dtype)
        indices = empty_tensor(shape, _dtype.int64)
        kernels.max_pool2d(
            out._strided(), indices._strided(), input._strided(), kernel, stride, padding,
            dilation,
        )  # fmt: skip
        ctx.save_for_backward(indices)
        ctx.input_shape = input.shape
        ctx.mark_non_differentiable(indices)
        return out, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        grad_input = empty_tensor(ctx.input_shape, grad.dtype)
        kernels.max_pool2d_backward(
            grad_input._strided(), grad.contiguous()._strided(), indices._strided()
        )
        return grad_input, None, None, None, None, None


def _check_pool_input(input: Tensor, dims: int) -> None:
    if input.dim() not in (dims + 1, dims + 2) or input.numel() == 0:
        raise RuntimeError(
            f"non-empty {dims + 1}D or {dims + 2}D (batch mode) tensor expected for input"
        )


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """2-D max pooling, as :class:`nn.MaxPool2d`.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step between windows; default ``kernel_size``.
        padding: implicit ``-inf`` on both sides, at most half the window.
        dilation: the step between elements of a window.
        ceil_mode: round the output size up (a last, partial window).
        return_indices: also return where each maximum is (flat positions in
            its ``H x W`` plane, for ``max_unpool2d``).

    Shape:
        - Output: ``(N, C, OH, OW)``,
          ``OH = (H + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1``
          (rounded up with ``ceil_mode``).

    Examples::

        >>> F.max_pool2d(torch.randn(1, 3, 8, 8), 2).shape
        torch.Size([1, 3, 4, 4])
    """
    _check_pool_input(input, 2)
    batched = input.unsqueeze(0) if input.dim() == 3 else input
    kernel, stride, padding, dilation, out_size = _pool_geometry(
        batched, kernel_size, stride, padding, dilation, ceil_mode
    )
    out, indices = MaxPool2dFunction.apply(batched, kernel, stride, padding, dilation, out_size)
    if input.dim() == 3:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def max_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """1-D max pooling, as :class:`nn.MaxPool1d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size, stride, padding, dilation: ints (``stride`` defaults to
            ``kernel_size``).
        ceil_mode: round the output length up.
        return_indices: also return the position of each maximum.

    Shape:
        - Output: ``(N, C, L_out)``,
          ``L_out = (L + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1``.

    Examples::

        >>> F.max_pool1d(torch.randn(2, 3, 10), 2).shape
        torch.Size([2, 3, 5])
    """
    if input.dim() not in (2, 3) or input.numel() == 0:
        raise RuntimeError(
            f"max_pool1d() Expected 2D or 3D input tensor, but got {_size_list(input.shape)}"
        )
    image = input.unsqueeze(-2)  # (..., 1, L)
    batched = image.unsqueeze(0) if input.dim() == 2 else image
    stride = _single(kernel_size) if stride is None else _single(stride)
    kernel, stride, padding, dilation, out_size = _pool_geometry(
        batched, (1, _single(kernel_size)), (1, stride), (0, _single(padding)),
        (1, _single(dilation)), ceil_mode, dims=1,
    )  # fmt: skip
    out, indices = MaxPool2dFunction.apply(batched, kernel, stride, padding, dilation, out_size)
    out, indices = out.squeeze(-2), indices.squeeze(-2)
    if input.dim() == 2:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


class AvgPool2dFunction(Function):
    """Average pooling through ``avg_pool2d`` and ``avg_pool2d_backward``."""

    backward_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, count_include_pad, divisor, out_size):
        input = input.contiguous()
        out = empty_tensor((*input.shape[:2], *out_size), input.dtype)
        ctx.params = (kernel, stride, padding, count_include_pad, divisor)
        kernels.avg_pool2d(out._strided(), input._strided(), *ctx.params)
        ctx.input_shape = input.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_input = empty_tensor(ctx.input_shape, grad.dtype)
        kernels.avg_pool2d_backward(
            grad_input._strided(), grad.contiguous()._strided(), *ctx.params
        )
        return grad_input, None, None, None, None, None, None


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-D average pooling, as :class:`nn.AvgPool2d`.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step between windows; default ``kernel_size``.
        padding: implicit zeros on both sides, at most half the window.
        ceil_mode: round the output size up.
        count_include_pad: count the zero padding in each window's divisor.
        divisor_override: divide every window's sum by this instead.

    Shape:
        - Output: ``(N, C, OH, OW)``, ``OH = (H + 2 * padding - kernel) // stride + 1``.

    Examples::

        >>> F.avg_pool2d(torch.ones(1, 1, 4, 4), 2)
        tensor([[[[1., 1.],
                  [1., 1.]]]])
    """
    _check_pool_input(input, 2)
    _float_input(input, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    batched = input.unsqueeze(0) if input.dim() == 3 else input
    kernel, stride, padding, _, out_size = _pool_geometry(
        batched, kernel_size, stride, padding, 1, ceil_mode
    )
    out = AvgPool2dFunction.apply(
        batched, kernel, stride, padding, bool(count_include_pad), divisor_override or 0, out_size
    )
    return out.squeeze(0) if input.dim() == 3 else out


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output size, as :class:`nn.AdaptiveAvgPool2d`.

    Output row ``i`` of ``OH`` averages input rows ``floor(i * H / OH)`` to
    ``ceil((i + 1) * H / OH)`` (excluded); columns alike. Windows may differ in
    size and overlap. When ``H`` and ``W`` divide evenly it is a plain
    :func:`avg_pool2d`.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: ``OH`` for a square output, or ``(OH, OW)``; None in a
            pair keeps that input size.

    Shape:
        - Output: ``(N, C, OH, OW)``.

    Examples::

        >>> F.adaptive_avg_pool2d(torch.randn(2, 8, 7, 7), 1).shape
        torch.Size([2, 8, 1, 1])
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {_size_list(input.shape)}"
        )
    sizes = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    h, w = input.shape[-2], input.shape[-1]
    out_h = h if sizes[0] is None else sizes[0]
    out_w = w if sizes[1] is None else sizes[1]
    if out_h > 0 and out_w > 0 and h % out_h == 0 and w % out_w == 0:
        return avg_pool2d(input, (h // out_h, w // out_w))
    rows = []
    for i in range(out_h):
        top, bottom = (i * h) // out_h, -((-(i + 1) * h) // out_h)
        row = []
        for j in range(out_w):
            left, right = (j * w) // out_w, -((-(j + 1) * w) // out_w)
            row.append(input[..., top:bottom, left:right].mean((-2, -1)))
        rows.append(row)
    return stack([stack(row, -1) for row in rows], -2)


# ======================================================= batch normalisation


class BatchNormFunction(Function):
    """Batch normalisation of an ``(N, C, L)`` tensor through the fused kernels.

    Forward: ``batch_norm_stats`` (training) gives each channel's mean and
    biased variance, ``batch_norm_apply`` normalises, scales and shifts.
    Backward: ``batch_norm_backward`` gives the three gradients in one pass
    over the data. A second derivative is not supported.
    """

    backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, mean, invstd, training, fused=True):
        input = input.contiguous()
        if fused:
            out = empty_tensor(input.shape, input.dtype)
            kernels.batch_norm_apply(
                out._strided(), input._strided(), mean._strided(), invstd._strided(),
                None if weight is None else weight.contiguous()._strided(),
                None if bias is None else bias.contiguous()._strided(),
            )  # fmt: skip
        else:  # PyTorch's strided loop: ((x - mean) * invstd) * weight + bias, step by step
            out = (input - mean.reshape(1, -1, 1)) * invstd.reshape(1, -1, 1)
            if weight is not None:
                out = out * weight.reshape(1, -1, 1)
            if bias is not None:
                out = out + bias.reshape(1, -1, 1)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.training = training
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight, mean, invstd = ctx.saved_tensors
        channels = input.shape[1]
        wanted = ctx.needs_input_grad
        grad_input = empty_tensor(input.shape, grad.dtype) if wanted[0] else None
        grad_weight = empty_tensor((channels,), grad.dtype) if wanted[1] else None
        grad_bias = empty_tensor((channels,), grad.dtype) if wanted[2] else None
        kernels.batch_norm_backward(
            None if grad_input is None else grad_input._strided(),
            None if grad_weight is None else grad_weight._strided(),
            None if grad_bias is None else grad_bias._strided(),
            grad.contiguous()._strided(), input._strided(), mean._strided(),
            invstd._strided(), None if weight is None else weight.contiguous()._strided(),
            ctx.training,
        )  # fmt: skip
        return grad_input, grad_weight, grad_bias, None, None, None, None


def fused_batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """:func:`F.batch_norm` for float32 and float64 inputs, through the fused kernels.

    The input is seen as ``(N, C, L)`` (the spatial dimensions flattened).
    Training takes the batch's statistics and moves the running statistics
    toward the batch's mean and *unbiased* variance.

    The arithmetic is PyTorch's CPU arithmetic, which decides the answer for
    extreme float32 inputs (a channel holding ``1e30``): for a contiguous
    input the squared deviations are float32 (``1e60`` overflows, so the
    variance is inf, ``invstd`` is 0 and the channel's outputs are its bias);
    for any other layout PyTorch squares in double (a finite variance). The
    training ``invstd = 1 / sqrt(var + eps)`` is taken in double, the
    evaluation one in the input's precision, as PyTorch does.
    """
    channels = input.shape[1]
    flat = input.reshape(input.shape[0], channels, -1)
    dtype = input.dtype
    with no_grad():
        if training:
            count = flat.shape[0] * flat.shape[2]
            if input.is_contiguous():
                mean = empty_tensor((channels,), dtype)
                var = empty_tensor((channels,), dtype)
                kernels.batch_norm_stats(mean._strided(), var._strided(), flat._strided())
                wide_var = var.to(_dtype.float64)
                moved_var = var  # PyTorch keeps this path's sum of squares in the dtype
            else:  # PyTorch's strided path: a float mean, deviations squared in double
                mean = flat.mean((0, 2))
                centered = flat.to(_dtype.float64) - mean.to(_dtype.float64).reshape(1, -1, 1)
                wide_var = (centered * centered).mean((0, 2))
                var = moved_var = wide_var  # this path keeps it in double
            invstd = (wide_var + eps).rsqrt().to(dtype).contiguous()
            if running_mean is not None and running_var is not None:
                running_mean.mul_(1 - momentum).add_(mean * momentum)
                unbiased = moved_var * (momentum * count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype))
        else:
            mean, var = running_mean.to(dtype).contiguous(), running_var.to(dtype)
            # 1 / sqrt(var + eps), each step rounded to the input's precision
            invstd = (var + tensor(eps, dtype=dtype)).sqrt().reciprocal().contiguous()
    fused = input.is_contiguous()  # PyTorch's strided path does not fuse the multiply-add
    out = BatchNormFunction.apply(flat, weight, bias, mean, invstd, training, fused)
    return out.reshape(input.shape)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample's channel groups, as :class:`nn.GroupNorm`.

    The ``C`` channels are split into ``num_groups`` groups; each sample's
    group is normalised by its own mean and biased variance (over the group's
    channels and all positions), then each channel is scaled and shifted.

    Args:
        input: ``(N, C, *)``.
        num_groups: a divisor of ``C``.
        weight, bias: ``(C,)`` or None.
        eps: added to the variance.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.group_norm(torch.randn(2, 6, 4, 4), 3).shape
        torch.Size([2, 6, 4, 4])
    """
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    channels = input.shape[1]
    sizes = [input.shape[0] * channels // num_groups, num_groups, *input.shape[2:]]
    per_group = sizes[0]
    for size in sizes[2:]:
        per_group *= size
    if per_group == 1:  # PyTorch's check, worded as for batch_norm
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {sizes}"
        )
    if channels % num_groups != 0:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {_size_list(input.shape)} and num_groups={num_groups}"
        )
    shape = input.shape

    def formula(x, w, b):  # the meaning, and what backward differentiates
        grouped = x.reshape(shape[0], num_groups, -1)
        mean = grouped.mean(2, keepdim=True)
        centered = grouped - mean
        variance = (centered * centered).mean(2, keepdim=True)
        out = (centered * (variance + eps).rsqrt()).reshape(shape)
        per_channel = (1, channels) + (1,) * (x.dim() - 2)
        if w is not None:
            out = out * w.reshape(per_channel)
        if b is not None:
            out = out + b.reshape(per_channel)
        return out

    floats = (_dtype.float32, _dtype.float64)
    if (
        input.numel() > 0
        and input.dtype in floats
        and all(p is None or p.dtype is input.dtype for p in (weight, bias))
    ):
        return GroupNormFunction.apply(input, weight, bias, num_groups, eps, formula)
    return formula(input, weight, bias)


class GroupNormFunction(Function):
    """``group_norm`` with PyTorch's CPU arithmetic, as one node.

    ``apply(input, weight, bias, num_groups, eps, formula)``. Forward: each
    (sample, group) row's mean and variance from the ``row_moments`` kernel
    (in the input's precision: a float32 group holding ``1e30`` has an
    infinite variance, as in PyTorch), ``rstd = 1 / sqrt(var + eps)`` taken
    in double and rounded, then per channel ``scale = rstd * weight`` and
    ``shift = bias - scale * mean`` and ``out = scale * x + shift``, each
    multiply-add rounded once (computed in double and rounded: the product
    of two float32 numbers is exact in double). Backward differentiates
    ``formula``, the plain composition.
    """

    backward_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, num_groups, eps, formula):
        ctx.formula = formula
        ctx.save_for_backward(input, weight, bias)
        n, channels = input.shape[0], input.shape[1]
        rows = input.contiguous().reshape(n * num_groups, -1)
        dtype, wide = input.dtype, _dtype.float64
        mean = empty_tensor((rows.shape[0],), dtype)
        var = empty_tensor((rows.shape[0],), dtype)
        kernels.row_moments(mean._strided(), var._strided(), rows._strided())
        rstd = (var.clamp(min=0).to(wide) + eps).rsqrt().to(dtype)
        per_group = (n, num_groups, 1, 1)
        x = rows.reshape(n, num_groups, channels // num_groups, -1)
        if weight is None and bias is None:
            out = (x - mean.reshape(per_group)) * rstd.reshape(per_group)
            return out.reshape(input.shape)
        if dtype is _dtype.float64:
            return _group_norm_apply(x, mean, rstd, weight, bias).reshape(input.shape)
        per_channel = (1, num_groups, channels // num_groups, 1)
        scale = rstd.reshape(per_group)
        if weight is not None:
            scale = scale * weight.reshape(per_channel)
        shift = -scale.to(wide) * mean.reshape(per_group).to(wide)
        if bias is not None:
            shift = shift + bias.reshape(per_channel).to(wide)
        out = scale.to(wide) * x.to(wide) + shift.to(dtype).to(wide)
        return out.to(dtype).reshape(input.shape)

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias = ctx.saved_tensors
        wanted = [i for i, t in enumerate((input, weight, bias)) if t is not None]
        wanted = [i for i in wanted if ctx.needs_input_grad[i]]
        grads = formula_gradients(
            ctx.formula, [input, weight, bias], wanted, grad, create_graph=is_grad_enabled()
        )
        return (*grads, None, None, None)


def _group_norm_apply(x, mean, rstd, weight, bias):
    """float64 ``scale * x + shift`` per channel with a true fused multiply-add.

    ``x`` is ``(N, G, D, L)``, ``mean`` and ``rstd`` ``(N * G,)``. The
    ``batch_norm_apply`` kernel computes ``fma(x, rstd * w, b - mean * rstd * w)``
    for ``(1, N * C, L)`` once each (sample, channel) has its own statistics
    and parameters. (A double product cannot be made exact with double tensor
    operations; the kernel's FMA gives PyTorch's rounding.)
    """
    n, groups, per, length = x.shape
    rows = n * groups * per
    flat = x.contiguous().reshape(1, rows, length)
    stats = (n * groups, per)
    mean = mean.reshape(n * groups, 1).expand(stats).contiguous().reshape(rows)
    rstd = rstd.reshape(n * groups, 1).expand(stats).contiguous().reshape(rows)
    weight = None if weight is None else weight.reshape(1, -1).expand(n, -1).contiguous()
    bias = None if bias is None else bias.reshape(1, -1).expand(n, -1).contiguous()
    out = empty_tensor(flat.shape, x.dtype)
    kernels.batch_norm_apply(
        out._strided(), flat._strided(), mean._strided(), rstd._strided(),
        None if weight is None else weight.reshape(rows)._strided(),
        None if bias is None else bias.reshape(rows)._strided(),
    )  # fmt: skip
    return out


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels with probability ``p``, scaling the rest by ``1 / (1 - p)``.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``: one draw per channel.
        p: the probability of zeroing a channel.
        training: outside training the input is returned as is.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.dropout2d(torch.ones(1, 4, 2, 2), 0.5).shape
        torch.Size([1, 4, 2, 2])
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mask_shape = tuple(input.shape[: input.dim() - 2]) + (1, 1)
    if p == 1.0:
        scale = full(mask_shape, 0.0, dtype=input.dtype, device=input.device)
    else:
        keep = rand(mask_shape, dtype=input.dtype, device=input.device) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    if inplace:
        return input.mul_(scale)
    return input * scale


# ================================================================= padding


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad (or, with negative sizes, crop) the last dimensions of ``input``.

    Args:
        input: any tensor.
        pad: ``(left, right)`` for the last dimension, then ``(top, bottom)``
            for the one before, and so on: an even-length sequence.
        mode: ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror, not
            repeating the edge), ``"replicate"`` (repeat the edge) or
            ``"circular"`` (wrap around).
        value: the fill of ``"constant"`` mode (default 0).

    Shape:
        - Output: each padded dimension grows by its two sizes.

    Examples::

        >>> F.pad(torch.arange(3.0), (1, 2), mode="reflect")
        tensor([1., 0., 1., 2., 1., 0.])
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension "
            f"but got padding length {len(pad)} and input of dimension {input.dim()}"
        )
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"Unrecognised padding mode {mode}"
        )  # PyTorch raises from deep inside
    if mode != "constant" and value not in (None, 0):
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if mode != "constant" and not (len(pad) // 2 + 1 <= input.dim() <= len(pad) // 2 + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        out = _pad_dim(out, dim, before, after, mode, 0.0 if value is None else value)
    return out


def _pad_dim(x: Tensor, dim: int, before: int, after: int, mode: str, value: float) -> Tensor:
    """Pad one dimension; negative sizes crop."""
    size = x.shape[dim]
    if before < 0:
        x, size, before = x.narrow(dim, -before, size + before), size + before, 0
    if after < 0:
        x, size, after = x.narrow(dim, 0, size + after), size + after, 0
    if before == 0 and after == 0:
        return x
    if mode == "constant":
        parts = []
        for count in (before, after):
            shape = list(x.shape)
            shape[dim] = count
            parts.append(full(shape, value, dtype=x.dtype, device=x.device))
        return cat([parts[0], x, parts[1]], dim)
    if mode == "reflect" and (before >= size or after >= size):
        raise RuntimeError(
            f"Argument #4: Padding size should be less than the corresponding input "
            f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
            f"{_size_list(x.shape)}"
        )
    positions = range(-before, size + after)
    if mode == "reflect":
        index = [abs(p) if p < size else 2 * (size - 1) - p for p in positions]
    elif mode == "replicate":
        index = [min(max(p, 0), size - 1) for p in positions]
    else:  # circular
        index = [p % size for p in positions]
    return x.index_select(dim, tensor(index, dtype=_dtype.int64, device=x.device))


# ============================================================== resampling


def _scale_of(in_size: int, out_size: int, scale_factor, align_corners: bool) -> float:
    """The step in input coordinates per output element (PyTorch's rule)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale_factor is not None:
        return 1.0 / scale_factor
    return in_size / out_size


def _linear_along(x: Tensor, dim: int, out_size: int, scale: float, align_corners: bool):
    """Linear interpolation along one dimension: two gathers and a weighted sum."""
    in_size = x.shape[dim]
    low, high, weights = [], [], []
    for i in range(out_size):
        if align_corners:
            source = i * scale
        else:
            source = max((i + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(math.floor(source)), in_size - 1)
        i1 = min(i0 + 1, in_size - 1)
        low.append(i0)
        high.append(i1)
        weights.append(source - i0)
    shape = [1] * x.dim()
    shape[dim] = out_size
    lam = tensor(weights, dtype=x.dtype, device=x.device).reshape(shape)
    a = x.index_select(dim, tensor(low, dtype=_dtype.int64, device=x.device))
    b = x.index_select(dim, tensor(high, dtype=_dtype.int64, device=x.device))
    return a + (b - a) * lam


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
) -> Tensor:
    """Resize the spatial dimensions of ``input``, as :class:`nn.Upsample`.

    Args:
        input: ``(N, C, L)``, ``(N, C, H, W)`` (and more spatial dimensions for
            ``"nearest"``).
        size: the output's spatial size, an int or a tuple.
        scale_factor: or a multiplier of the input's size (the output size is
            rounded down).
        mode: ``"nearest"`` (output ``i`` copies input ``floor(i * scale)``),
            ``"linear"`` (3-D input) or ``"bilinear"`` (4-D input).
        align_corners: for the linear modes: map the corner pixels' centres
            onto each other (True) or the corners of the image (False, the default).
        recompute_scale_factor: with True, the scale used is recomputed from
            the output size, as if ``size`` had been given.

    Shape:
        - Output: ``(N, C, *size)``.

    Examples::

        >>> F.interpolate(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    spatial = input.dim() - 2
    if spatial < 1:
        raise ValueError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D)"
        )  # noqa: E501
    if mode == "nearest" and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if mode in ("linear", "bilinear"):
        expected = 1 if mode == "linear" else 2
        if spatial != expected:
            raise NotImplementedError(
                f"Got {input.dim()}D input, but {mode} mode needs {expected + 2}D input"
            )
    elif mode != "nearest":
        raise NotImplementedError(
            f"Input Error: Only nearest, linear and bilinear modes are supported, got {mode}"
        )
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined")
    in_sizes = input.shape[2:]
    if size is not None:
        out_sizes = [size] * spatial if isinstance(size, int) else list(size)
        factors = [None] * spatial
    else:
        factors = (
            [float(scale_factor)] * spatial
            if isinstance(scale_factor, (int, float))
            else [float(f) for f in scale_factor]
        )
        out_sizes = [int(math.floor(s * f)) for s, f in zip(in_sizes, factors)]
        if recompute_scale_factor:
            factors = [None] * spatial
    out = input
    for i in range(spatial):
        dim = 2 + i
        scale = _scale_of(in_sizes[i], out_sizes[i], factors[i], bool(align_corners))
        if mode == "nearest":
            # floor(j * scale) for every output position j, as tensor ops rather than
            # a Python list as long as the requested size.
            steps = arange(out_sizes[i], dtype=_dtype.float64, device=out.device) * scale
            index = steps.floor().clamp(max=in_sizes[i] - 1).long()
            out = out.index_select(dim, index)
        else:
            out = _linear_along(out, dim, out_sizes[i], scale, bool(align_corners))
    return out


# ============================================================ unfold / fold


class UnfoldFunction(Function):
    """``F.unfold`` through ``im2col``; its gradient is ``col2im``."""

    backward_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, input, kernel, stride, padding, dilation, blocks):
        input = input.contiguous()
        n, c = input.shape[:2]
        out = empty_tensor((n, c * kernel[0] * kernel[1], blocks), input.dtype)
        ctx.params = (kernel, stride, padding, dilation)
        kernels.im2col(out._strided(), input._strided(), *ctx.params)
        ctx.input_shape = input.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_input = empty_tensor(ctx.input_shape, grad.dtype)
        kernels.col2im(grad_input._strided(), grad.contiguous()._strided(), *ctx.params)
        return grad_input, None, None, None, None, None


class FoldFunction(Function):
    """``F.fold`` through ``col2im``; its gradient is ``im2col``."""

    backward_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, columns, output_shape, kernel, stride, padding, dilation):
        columns = columns.contiguous()
        out = empty_tensor(output_shape, columns.dtype)
        ctx.params = (kernel, stride, padding, dilation)
        kernels.col2im(out._strided(), columns._strided(), *ctx.params)
        ctx.columns_shape = columns.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_columns = empty_tensor(ctx.columns_shape, grad.dtype)
        kernels.im2col(grad_columns._strided(), grad.contiguous()._strided(), *ctx.params)
        return grad_columns, None, None, None, None, None


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding blocks as columns (im2col), as :class:`nn.Unfold`.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size, dilation, padding, stride: ints or ``(h, w)`` pairs, as in
            :func:`conv2d`.

    Shape:
        - Output: ``(N, C * KH * KW, OH * OW)``: column ``l`` holds the block
          that output position ``l`` of a convolution would read.

    Examples::

        >>> F.unfold(torch.randn(1, 2, 4, 4), 2).shape
        torch.Size([1, 8, 9])
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)"
        )
    batched = input.unsqueeze(0) if input.dim() == 3 else input
    kernel, dilation, padding, stride = (
        _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    )  # fmt: skip
    blocks_h = _conv_output_size(batched.shape[2], kernel[0], stride[0], padding[0], dilation[0])
    blocks_w = _conv_output_size(batched.shape[3], kernel[1], stride[1], padding[1], dilation[1])
    if blocks_h < 1 or blocks_w < 1:
        raise RuntimeError(
            f"Given input with spatial size ({batched.shape[2]}, {batched.shape[3]}), "
            f"kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), "
            f"padding=({padding[0]}, {padding[1]}), calculated shape of the array of sliding "
            f"blocks as ({blocks_h}, {blocks_w}), but its components must be at least one."
        )
    out = UnfoldFunction.apply(batched, kernel, stride, padding, dilation, blocks_h * blocks_w)
    return out.squeeze(0) if input.dim() == 3 else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sum columns of sliding blocks back into images (col2im), as :class:`nn.Fold`.

    The adjoint of :func:`unfold`: overlapping blocks add up.

    Args:
        input: ``(N, C * KH * KW, L)`` or ``(C * KH * KW, L)``.
        output_size: the image's ``(H, W)``.
        kernel_size, dilation, padding, stride: as in :func:`unfold`.

    Shape:
        - Output: ``(N, C, H, W)``.

    Examples::

        >>> F.fold(torch.ones(1, 4, 9), (4, 4), 2).shape
        torch.Size([1, 1, 4, 4])
    """
    if input.dim() not in (2, 3):
        raise RuntimeError(
            "Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
            f"(got {input.dim()}D)"
        )
    batched = input.unsqueeze(0) if input.dim() == 2 else input
    size, kernel, dilation, padding, stride = (
        _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    )  # fmt: skip
    taps = kernel[0] * kernel[1]
    if batched.shape[1] % taps != 0:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={batched.shape[1]} and "
            f"kernel_size=({kernel[0]}, {kernel[1]})"
        )
    blocks_h = _conv_output_size(size[0], kernel[0], stride[0], padding[0], dilation[0])
    blocks_w = _conv_output_size(size[1], kernel[1], stride[1], padding[1], dilation[1])
    if batched.shape[2] != blocks_h * blocks_w:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
            f"dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), "
            f"stride=({stride[0]}, {stride[1]}), expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {blocks_h} * {blocks_w} = "
            f"{blocks_h * blocks_w}, but got input.size(2)={batched.shape[2]}."
        )
    shape = (batched.shape[0], batched.shape[1] // taps, *size)
    out = FoldFunction.apply(batched, shape, kernel, stride, padding, dilation)
    return out.squeeze(0) if input.dim() == 2 else out
