"""Image functions of ``nn.functional``: padding, interpolation (and the
deprecated ``upsample*``), pixel and channel shuffles, and ``unfold``/``fold``.
"""

from __future__ import annotations

import math
import warnings

from glasstorch import _dtype
from glasstorch.nn.functional._utils import _conv_output_size, _pair, _size_list
from glasstorch.nn.fused.conv import FoldFunction, UnfoldFunction
from glasstorch.ops.creation import arange, full, tensor
from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``: a view, a permute and a reshape."""
    r = upscale_factor
    *batch, channels, height, width = input.shape
    if channels % (r * r) != 0:
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}"
        )
    c = channels // (r * r)
    n = len(batch)
    x = input.reshape(*batch, c, r, r, height, width)
    order = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(order).reshape(*batch, c, height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``, undoing :func:`pixel_shuffle`."""
    r = downscale_factor
    *batch, channels, height, width = input.shape
    if height % r or width % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, "
            f"but got height={height}, width={width}, downscale_factor={r}"
        )
    n = len(batch)
    x = input.reshape(*batch, channels, height // r, r, width // r, r)
    order = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(order).reshape(*batch, channels * r * r, height // r, width // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups, as in ShuffleNet.

    Channel ``g * (C // groups) + i`` moves to ``i * groups + g``: a reshape to
    ``(N, groups, C // groups, *)``, a transpose and a reshape back.

    Args:
        input: ``(N, C, *)``, ``C`` divisible by ``groups``.
        groups: the number of groups.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.channel_shuffle(torch.arange(4.0).reshape(1, 4, 1, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    if input.dim() <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input to have at least 3 dimensions, but got input "
            f"with sizes {list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {channels} channels and "
            f"{groups} groups."
        )
    x = input.reshape(batch, groups, channels // groups, *rest)
    return x.transpose(1, 2).reshape(batch, channels, *rest)


def _warn_deprecated(name: str) -> None:
    """PyTorch's warning for a deprecated alias of ``interpolate``, pointing at the caller's caller."""
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (it warns, as PyTorch's does).

    Examples::

        >>> F.upsample(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    _warn_deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="nearest"``.

    Examples::

        >>> F.upsample_nearest(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    _warn_deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="bilinear"`` and ``align_corners=True``.

    Examples::

        >>> F.upsample_bilinear(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    _warn_deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


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
