"""Pooling of ``nn.functional``: max, average, power-average and adaptive pooling
in one to three dimensions, and max-unpooling.

2-D max and average pooling run as fused nodes
(:mod:`glasstorch.nn.fused.pooling`); the other dimensions are written in terms
of them, and adaptive pooling as windows of them.
"""

from __future__ import annotations

import math

from glasstorch.nn.functional._utils import (
    _dims_error,
    _float_input,
    _ints,
    _pair,
    _single,
    _size_list,
    _triple,
)
from glasstorch.nn.fused.pooling import AvgPool2dFunction, MaxPool2dFunction
from glasstorch.ops.creation import zeros
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling, as :class:`nn.AvgPool1d`: :func:`avg_pool2d` on a one-row image.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size: the window's length.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on both sides, at most half the window.
        ceil_mode: round the output length up.
        count_include_pad: count the padding zeros in each window's divisor.

    Shape:
        - Output: ``(N, C, L_out)``, ``L_out = (L + 2 * padding - kernel_size) // stride + 1``.

    Examples::

        >>> F.avg_pool1d(torch.ones(1, 2, 6), 2).shape
        torch.Size([1, 2, 3])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "avg_pool1d")
    kernel = _single(kernel_size)
    step = kernel if stride is None else _single(stride)
    out = avg_pool2d(
        input.unsqueeze(-2), (1, kernel), (1, step), (0, _single(padding)), ceil_mode,
        count_include_pad,
    )  # fmt: skip
    return out.squeeze(-2)


def _window(i: int, size: int, out: int) -> tuple[int, int]:
    """The input range ``[start, end)`` that adaptive pooling's output ``i`` of ``out`` covers."""
    return (i * size) // out, -((-(i + 1) * size) // out)


def _output_sizes(output_size, input: Tensor, dims: int) -> tuple[int, ...]:
    sizes = (output_size,) * dims if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != dims:
        raise ValueError(
            f"adaptive pooling expects output_size to have {dims} elements, got {output_size}"
        )
    spatial = input.shape[input.dim() - dims :]
    return tuple(spatial[i] if sizes[i] is None else int(sizes[i]) for i in range(dims))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of a sequence to a fixed length, as :class:`nn.AdaptiveAvgPool1d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the output length ``L_out``.

    Shape:
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> F.adaptive_avg_pool1d(torch.randn(2, 3, 10), 4).shape
        torch.Size([2, 3, 4])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "adaptive_avg_pool1d")
    (length,) = _output_sizes(output_size, input, 1)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, length)).squeeze(-2)


def _adaptive_max(input: Tensor, out_sizes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Adaptive max pooling over the last two dimensions: values and flat plane indices.

    Each output cell is the ``max`` of its window (flattened); the index of
    the maximum inside the window is turned into a position in the input's
    ``H x W`` plane, which is what PyTorch returns.
    """
    h, w = input.shape[-2], input.shape[-1]
    out_h, out_w = out_sizes
    values, positions = [], []
    for i in range(out_h):
        top, bottom = _window(i, h, out_h)
        for j in range(out_w):
            left, right = _window(j, w, out_w)
            patch = input[..., top:bottom, left:right]
            best, where_in = patch.reshape(*patch.shape[:-2], -1).max(-1)
            width = right - left
            positions.append((top + where_in // width) * w + left + where_in % width)
            values.append(best)
    shape = (*input.shape[:-2], out_h, out_w)
    return stack(values, -1).reshape(shape), stack(positions, -1).reshape(shape)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of an image to a fixed output size, as :class:`nn.AdaptiveMaxPool2d`.

    Output cell ``(i, j)`` is the maximum over input rows
    ``floor(i * H / OH)`` to ``ceil((i + 1) * H / OH)`` (excluded), columns alike.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: ``OH`` for a square output, or ``(OH, OW)``; None keeps that size.
        return_indices: also return each maximum's flat position in its ``H x W`` plane.

    Shape:
        - Output: ``(N, C, OH, OW)``.

    Examples::

        >>> F.adaptive_max_pool2d(torch.randn(1, 3, 7, 7), 2).shape
        torch.Size([1, 3, 2, 2])
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {_size_list(input.shape)}"
        )
    out, indices = _adaptive_max(input, _output_sizes(output_size, input, 2))
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of a sequence to a fixed length, as :class:`nn.AdaptiveMaxPool1d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the output length ``L_out``.
        return_indices: also return each maximum's position.

    Shape:
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> F.adaptive_max_pool1d(torch.randn(2, 3, 10), 4).shape
        torch.Size([2, 3, 4])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "adaptive_max_pool1d")
    (length,) = _output_sizes(output_size, input, 1)
    out, indices = _adaptive_max(input.unsqueeze(-2), (1, length))
    out, indices = out.squeeze(-2), indices.squeeze(-2)
    return (out, indices) if return_indices else out


def _pool3d(input, kernel_size, stride, padding, pool2d, pool1d):
    """3-D pooling as 2-D pooling of each depth slice, then 1-D pooling across depth.

    Both pooling kinds are *separable*: the maximum (or mean) of a
    ``kd x kh x kw`` box is the maximum (or mean) over depth of the maxima (or
    means) of its ``kh x kw`` slices, with the padding and window counts of
    each dimension on their own. ``pool2d`` and ``pool1d`` pool with the
    height-width and the depth parts of the arguments.
    """
    _check_pool_input(input, 3)
    batched = input if input.dim() == 5 else input.unsqueeze(0)
    kernel = _triple(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] else _triple(stride, "stride")
    padding = _triple(padding, "padding")
    n, c, depth, height, width = batched.shape
    slices = pool2d(batched.reshape(n, c * depth, height, width), kernel, stride, padding)
    out_h, out_w = slices.shape[-2], slices.shape[-1]
    columns = slices.reshape(n * c, depth, out_h * out_w).transpose(1, 2)
    pooled = pool1d(columns, kernel, stride, padding)  # (N * C, OH * OW, OD)
    out = pooled.transpose(1, 2).reshape(n, c, pooled.shape[-1], out_h, out_w)
    return out if input.dim() == 5 else out.squeeze(0)


def max_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """3-D max pooling, as :class:`nn.MaxPool3d`: 2-D max pooling of each depth slice, then
    1-D max pooling across depth (the maximum of a box is separable).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size: the window, an int or ``(kd, kh, kw)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit ``-inf`` on every side, at most half the window.
        dilation: the step between a window's elements.
        ceil_mode: round the output size up.
        return_indices: not supported in glasstorch (``NotImplementedError``).

    Shape:
        - Output: ``(N, C, OD, OH, OW)``,
          ``OD = (D + 2 * padding - dilation * (kd - 1) - 1) // stride + 1`` (OH, OW alike).

    Examples::

        >>> F.max_pool3d(torch.randn(1, 2, 4, 8, 8), 2).shape
        torch.Size([1, 2, 2, 4, 4])
    """
    if return_indices:
        raise NotImplementedError("max_pool3d: return_indices is not supported in glasstorch")
    dil = _triple(dilation, "dilation")

    def plane(x, k, s, p):
        return max_pool2d(x, k[1:], s[1:], p[1:], dil[1:], ceil_mode)

    def across(x, k, s, p):
        return max_pool1d(x, k[0], s[0], p[0], dil[0], ceil_mode)

    return _pool3d(input, kernel_size, stride, padding, plane, across)


def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-D average pooling, as :class:`nn.AvgPool3d`: 2-D average pooling of each depth
    slice, then 1-D average pooling across depth (a box's mean, and its divisor, are
    separable).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size: the window, an int or ``(kd, kh, kw)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on every side, at most half the window.
        ceil_mode: round the output size up.
        count_include_pad: count the padding zeros in each window's divisor.
        divisor_override: not supported in glasstorch (``NotImplementedError``).

    Shape:
        - Output: ``(N, C, OD, OH, OW)``, ``OD = (D + 2 * padding - kd) // stride + 1``.

    Examples::

        >>> F.avg_pool3d(torch.randn(1, 2, 4, 8, 8), 2).shape
        torch.Size([1, 2, 2, 4, 4])
    """
    if divisor_override is not None:
        raise NotImplementedError("avg_pool3d: divisor_override is not supported in glasstorch")

    def plane(x, k, s, p):
        return avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, count_include_pad)

    def across(x, k, s, p):
        return avg_pool1d(x, k[0], s[0], p[0], ceil_mode, count_include_pad)

    return _pool3d(input, kernel_size, stride, padding, plane, across)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims: int):
    """Scatter ``input`` into zero planes at the flat positions ``indices`` (both tiers' ``scatter``)."""
    kernel = _ints(kernel_size, dims)
    stride = kernel if stride is None else _ints(stride, dims)
    padding = _ints(padding, dims)
    spatial = tuple(input.shape[-dims:])
    default = tuple((spatial[d] - 1) * stride[d] - 2 * padding[d] + kernel[d] for d in range(dims))
    if output_size is None:
        size = default
    else:
        size = tuple(int(s) for s in output_size)
        if len(size) == dims + 2 or len(size) == dims + 1 and input.dim() == dims + 1:
            size = size[-dims:]
        if len(size) != dims:
            raise ValueError(
                f"output_size should be a sequence containing {dims} or {dims + 2} elements, "
                f"but it has a length of '{len(size)}'"
            )
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < size[d] < high:
                raise ValueError(
                    f'invalid output_size "{list(size)}" (dim {d} must be between {low} and {high})'
                )
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    lead = tuple(input.shape[:-dims])
    plane = math.prod(size)
    flat_in = input.reshape(*lead, -1)
    flat_idx = indices.reshape(*lead, -1).long()
    out = zeros(*lead, plane, dtype=input.dtype, device=input.device)
    return out.scatter(len(lead), flat_idx, flat_in).reshape(*lead, *size)


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """Partial inverse of :func:`max_pool2d`: each maximum back at its place, zeros elsewhere.

    A ``scatter`` of the pooled values into a zero plane at the flat positions
    ``indices`` that ``max_pool2d(..., return_indices=True)`` returned.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``, the pooled values.
        indices: the indices from the pooling, same shape.
        kernel_size, stride, padding: those of the pooling (``stride`` defaults
            to ``kernel_size``).
        output_size: the size to restore (``(H, W)`` or the full shape) where
            the pooling rounded its output down.

    Shape:
        - Output: ``(N, C, OH, OW)``, ``OH = (H - 1) * stride - 2 * padding + kernel``
          unless ``output_size`` says otherwise.

    Examples::

        >>> out, idx = F.max_pool2d(torch.randn(1, 1, 4, 4), 2, return_indices=True)
        >>> F.max_unpool2d(out, idx, 2).shape
        torch.Size([1, 1, 4, 4])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None
) -> Tensor:
    """Partial inverse of :func:`max_pool1d`, as :func:`max_unpool2d` for sequences.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``; indices: from ``max_pool1d(..., return_indices=True)``.
        kernel_size, stride, padding, output_size: as in :func:`max_unpool2d`.

    Shape:
        - Output: ``(N, C, (L - 1) * stride - 2 * padding + kernel)``.

    Examples::

        >>> out, idx = F.max_pool1d(torch.randn(1, 1, 6), 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2).shape
        torch.Size([1, 1, 6])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """Power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``.

    ``p = inf`` would be max pooling and ``p = 1`` sum pooling. Computed as
    PyTorch does: an average pooling of ``x ** p``, times the window's size, to
    the power ``1 / p`` (negative window sums are clamped to 0).

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        norm_type: the power ``p``.
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step; default ``kernel_size``.
        ceil_mode: round the output size up.

    Shape:
        - Output: as :func:`avg_pool2d` without padding.

    Examples::

        >>> F.lp_pool2d(torch.ones(1, 1, 4, 4), 2, 2)
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    kh, kw = _ints(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode=False):
    """Power-average pooling of sequences, as :func:`lp_pool2d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        norm_type, kernel_size, stride, ceil_mode: as in :func:`lp_pool2d`.

    Shape:
        - Output: as :func:`avg_pool1d` without padding.

    Examples::

        >>> F.lp_pool1d(torch.ones(1, 1, 4), 2, 2)
        tensor([[[1.4142, 1.4142]]])
    """

    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_size).pow(1.0 / norm_type)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of a volume to a fixed output size, as :class:`nn.AdaptiveAvgPool3d`.

    Output cell ``(i, j, k)`` averages input depths ``floor(i * D / OD)`` to
    ``ceil((i + 1) * D / OD)`` (excluded), rows and columns alike. An average
    over a box is an average over its depths of averages over its planes, so
    this is :func:`adaptive_avg_pool2d` over ``(H, W)`` and then
    :func:`adaptive_avg_pool1d` over ``D`` (one more pass than PyTorch's kernel).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        output_size: ``O`` for a cube, or ``(OD, OH, OW)``; None keeps that size.

    Shape:
        - Output: ``(N, C, OD, OH, OW)``.

    Examples::

        >>> F.adaptive_avg_pool3d(torch.randn(2, 3, 5, 6, 7), (1, 2, 3)).shape
        torch.Size([2, 3, 1, 2, 3])
    """

    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {_size_list(input.shape)}"
        )
    if input.dim() == 4:
        return adaptive_avg_pool3d(input.unsqueeze(0), output_size)[0]
    out_d, out_h, out_w = _output_sizes(output_size, input, 3)
    n, c, d, h, w = input.shape
    planes = adaptive_avg_pool2d(input.reshape(n, c * d, h, w), (out_h, out_w))
    rows = planes.reshape(n, c, d, out_h, out_w).permute(0, 1, 3, 4, 2)
    pooled = adaptive_avg_pool1d(rows.reshape(n, c * out_h * out_w, d), out_d)
    return pooled.reshape(n, c, out_h, out_w, out_d).permute(0, 1, 4, 2, 3).contiguous()


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of a volume to a fixed output size, as :class:`nn.AdaptiveMaxPool3d`.

    The windows are those of :func:`adaptive_avg_pool3d`. Each output cell is
    the ``max`` of its box, flattened, and the index of the maximum becomes a
    flat position in the input's ``D x H x W`` volume, which is what PyTorch
    returns. One slice and reduction per output cell: fine for the small
    outputs (often ``(1, 1, 1)``) this is used for, slower than PyTorch's
    kernel for large ones.

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        output_size: ``O`` for a cube, or ``(OD, OH, OW)``; None keeps that size.
        return_indices: also return each maximum's flat position in its volume.

    Shape:
        - Output: ``(N, C, OD, OH, OW)``.

    Examples::

        >>> F.adaptive_max_pool3d(torch.randn(2, 3, 5, 6, 7), 2).shape
        torch.Size([2, 3, 2, 2, 2])
    """
    from glasstorch.ops.views import stack

    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {_size_list(input.shape)}"
        )
    out_sizes = _output_sizes(output_size, input, 3)
    d, h, w = input.shape[-3:]
    values, positions = [], []
    for i in range(out_sizes[0]):
        front, back = _window(i, d, out_sizes[0])
        for j in range(out_sizes[1]):
            top, bottom = _window(j, h, out_sizes[1])
            for k in range(out_sizes[2]):
                left, right = _window(k, w, out_sizes[2])
                box = input[..., front:back, top:bottom, left:right]
                best, at = box.reshape(*box.shape[:-3], -1).max(-1)
                rows, cols = bottom - top, right - left
                depth, rest = at // (rows * cols), at % (rows * cols)
                row, col = rest // cols, rest % cols
                positions.append(((front + depth) * h + top + row) * w + left + col)
                values.append(best)
    shape = (*input.shape[:-3], *out_sizes)
    out = stack(values, -1).reshape(shape)
    return (out, stack(positions, -1).reshape(shape)) if return_indices else out


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
