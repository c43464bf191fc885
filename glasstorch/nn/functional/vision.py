"""Image functions of ``nn.functional``: padding, interpolation (and the
deprecated ``upsample*``), pixel and channel shuffles, ``unfold``/``fold``, and
the sampling grids of spatial transformers (``affine_grid``, ``grid_sample``).
"""

from __future__ import annotations

import itertools
import math
import warnings

from glasstorch import _dtype
from glasstorch.nn.functional._utils import _conv_output_size, _pair, _size_list
from glasstorch.nn.fused.conv import FoldFunction, UnfoldFunction
from glasstorch.ops.creation import arange, full, linspace, tensor, zeros_like
from glasstorch.ops.pointwise.selection import where
from glasstorch.ops.views import cat, stack
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


# -- Sampling grids: affine_grid and grid_sample (spatial transformer networks)
#
# A grid holds, for every output point, where to read the input, in normalised
# coordinates: -1 is the input's left (top, front) side and 1 its right (bottom,
# back) one, x first. Both functions are plain compositions of tensor ops
# (matrix products, floor, comparisons, where, gather), so autograd gives the
# gradients to the input, the grid and theta on every tier and device.

_ALIGN_CORNERS_DEFAULT_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _grid_align_corners(align_corners: bool | None) -> bool:
    """``align_corners`` with PyTorch's default (False), warning as PyTorch does when it is omitted."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_DEFAULT_WARNING, stacklevel=3)
        return False
    return bool(align_corners)


def _pixel_centres(steps: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalised centres of ``steps`` pixels along one side, in ``like``'s dtype and device.

    With ``align_corners`` the first and last centres are -1 and 1; without,
    the image's edges are, so the centres sit half a pixel in, at
    ``(2 i + 1) / steps - 1``. A single pixel sits at 0.
    """
    if steps <= 1:
        return full([steps], 0.0, dtype=like.dtype, device=like.device)
    line = linspace(-1.0, 1.0, steps, dtype=like.dtype, device=like.device)
    return line if align_corners else line * (steps - 1) / steps


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps, for :func:`grid_sample`.

    Output point ``p`` (its normalised pixel centre, with a 1 appended) reads
    the input at ``theta @ p``: the identity ``[[1, 0, 0], [0, 1, 0]]`` gives
    a grid that samples each pixel where it is.

    Args:
        theta: ``(N, 2, 3)`` affine matrices for a 2-D ``size``, ``(N, 3, 4)``
            for a 3-D one; floating point.
        size: the output's size, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        align_corners: whether -1 and 1 are the centres of the corner pixels
            (True) or the image's edges (False, the default; leaving it out
            warns, as in PyTorch). Pass :func:`grid_sample` the same value.

    Shape:
        - Output: ``(N, H, W, 2)`` or ``(N, D, H, W, 3)``, coordinates ``x, y(, z)``.

    Examples::

        >>> theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(theta, (1, 1, 1, 2), align_corners=False)
        tensor([[[[-0.5000,  0.0000],
                  [ 0.5000,  0.0000]]]])
    """
    align_corners = _grid_align_corners(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    spatial = [int(s) for s in size[2:]]
    k = len(spatial)  # 2 or 3 coordinates per point
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(
            f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. "
            f"Got {theta.shape}."
        )
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(int(s) for s in size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # The base grid: at every output point its coordinates (x, y[, z], 1); x runs
    # along the last dimension, y along the one before, z along the first.
    columns = []
    for i in range(k):
        dim = k - 1 - i
        view = [1] * k
        view[dim] = spatial[dim]
        columns.append(_pixel_centres(spatial[dim], align_corners, theta).reshape(view))
    columns.append(full([1] * k, 1.0, dtype=theta.dtype, device=theta.device))
    base = stack([c.expand(*spatial) for c in columns], dim=-1)
    points = math.prod(spatial)
    batch = int(size[0])
    base = base.reshape(1, points, k + 1).expand(batch, points, k + 1)
    return base.bmm(theta.transpose(1, 2)).reshape(batch, *spatial, k)


def _check_grid_sample(input: Tensor, grid: Tensor) -> None:
    """PyTorch's checks of ``grid_sampler``'s operands, in its order and words."""
    if input.device != grid.device:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to be on same device, but input is on "
            f"{input.device} and grid is on {grid.device}"
        )
    sizes = (
        f"input with sizes {_size_list(input.shape)} and grid with sizes {_size_list(grid.shape)}"
    )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}"
        )
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, "
            f"but got grid with sizes {_size_list(grid.shape)}"
        )
    for dim in range(2, input.dim()):
        if input.shape[dim] <= 0:
            raise RuntimeError(
                f"grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {_size_list(input.shape)} with dimension {dim} being empty"
            )
    expected = "4D" if input.dim() == 4 else "5D"
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        raise RuntimeError(
            f"grid_sampler(): expected {expected} input and grid with same number of "
            f"dimensions, but got {sizes}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(
            f'"grid_sampler_{input.dim() - 2}d_cpu_kernel_impl" not implemented for '
            f"'{input.dtype.title}'"
        )
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found {grid.dtype.title}")


def _clip(x: Tensor, limit: int) -> Tensor:
    """``x`` clamped to ``[0, limit]``, NaN to 0, as PyTorch's sampler clips.

    The bounds themselves count as outside: there (and beyond) the result is a
    constant, so its gradient is zero, as in PyTorch's backward.
    """
    return where(x > 0, where(x < limit, x, float(limit)), 0.0)


def _reflect(x: Tensor, low: float, high: float) -> Tensor:
    """``x`` mirrored at ``low`` and ``high`` until it lies between them.

    The distance from ``low`` is split into whole spans (each crossing flips
    the direction) and what is left over: after an even number of spans the
    point lies ``extra`` above ``low``, after an odd one ``extra`` below ``high``.
    """
    span = high - low
    if span <= 0:  # a single pixel with align_corners: every point maps onto it
        return zeros_like(x)
    distance = (x - low).abs()
    flips = (distance / span).floor()
    extra = distance.fmod(span)
    return where(flips.remainder(2) == 0, extra + low, high - extra)


def _source_coordinate(coordinate: Tensor, size: int, padding_mode: str, align_corners: bool):
    """A normalised grid coordinate as a position in pixels along a side of ``size`` pixels.

    -1 and 1 map to the centres of the end pixels (``align_corners``) or to
    the outer edges of the end pixels, half a pixel further out. ``"border"``
    then clips the position into the image, ``"reflection"`` mirrors it at the
    same -1 and 1 and clips; ``"zeros"`` keeps it (points outside read zeros).
    """
    if align_corners:
        x = (coordinate + 1) * ((size - 1) / 2)
    else:
        x = (coordinate + 1) * (size / 2) - 0.5
    if padding_mode == "reflection":
        x = _reflect(x, 0.0, size - 1.0) if align_corners else _reflect(x, -0.5, size - 0.5)
    if padding_mode != "zeros":
        x = _clip(x, size - 1)
    return x


def _read_pixels(flat_input: Tensor, position: list, sizes: list) -> Tensor:
    """``input[n, :, position]`` at integer-valued positions, 0 where a position is outside.

    Args:
        flat_input: the input with its spatial dimensions flattened, ``(N, C, L)``.
        position: one float tensor ``(N, P)`` per spatial dimension, in the
            input's order (``z``, ``y``, ``x``), holding whole numbers.
        sizes: the input's spatial sizes.

    Returns ``(N, C, P)``. A point outside (or NaN) reads pixel 0 and is then
    replaced by 0, so it adds nothing to the input's gradient either.
    """
    inside = None
    for p, size in zip(position, sizes):
        p_inside = (p >= 0) & (p <= size - 1)
        inside = p_inside if inside is None else inside & p_inside
    index = None
    for p, size in zip(position, sizes):
        p = where(inside, p, 0.0).long()
        index = p if index is None else index * size + p
    batch, channels, _ = flat_input.shape
    index = index.unsqueeze(1).expand(batch, channels, index.shape[-1])
    return where(inside.unsqueeze(1), flat_input.gather(2, index), 0.0)


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Read ``input`` at the points of ``grid`` (normalised coordinates), interpolating.

    For each output point, ``grid`` gives ``(x, y)`` (``(x, y, z)`` for a 5-D
    input) in ``[-1, 1]`` across the input's width and height (and depth). The
    point becomes a position in pixels (see ``align_corners``); ``"bilinear"``
    mixes the 4 (8) pixels around it by its distance to each, ``"nearest"``
    reads the nearest pixel (rounding halves to even, as PyTorch's
    ``nearbyint``). Gradients reach ``input`` and, for ``"bilinear"``, ``grid``
    (``"nearest"`` gives the grid a zero gradient, as PyTorch).

    Args:
        input: ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        grid: ``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``, the
            input's dtype.
        mode: ``"bilinear"`` (trilinear for 5-D) or ``"nearest"``. PyTorch's
            ``"bicubic"`` is not implemented here (NotImplementedError).
        padding_mode: what points outside the image read: ``"zeros"``,
            ``"border"`` (the nearest edge pixel) or ``"reflection"`` (the
            point mirrored at the edges, repeatedly).
        align_corners: whether -1 and 1 are the centres of the corner pixels
            (True) or the image's outer edges (False, the default; leaving it
            out warns, as in PyTorch).

    Shape:
        - Output: ``(N, C, H_out, W_out)`` or ``(N, C, D_out, H_out, W_out)``.

    Examples::

        >>> image = torch.arange(4.0).reshape(1, 1, 2, 2)
        >>> grid = torch.tensor([[[[0.0, 0.0], [-1.0, -1.0]]]])
        >>> F.grid_sample(image, grid, align_corners=True)
        tensor([[[[1.5000, 0.0000]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    align_corners = _grid_align_corners(align_corners)
    _check_grid_sample(input, grid)
    if mode == "bicubic":
        if input.dim() == 5:
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
        raise NotImplementedError(
            "grid_sample: mode='bicubic' is not implemented in glasstorch; use 'bilinear' or "
            "'nearest'"
        )
    batch, channels, *sizes = input.shape
    out_sizes = list(grid.shape[1:-1])
    k = len(sizes)
    flat_input = input.reshape(batch, channels, math.prod(sizes))
    flat_grid = grid.reshape(batch, math.prod(out_sizes), k)
    # Grid coordinate i runs along input dimension 2 + k - 1 - i (x along the
    # width, the last one); list the positions in the input's order instead.
    position = [
        _source_coordinate(flat_grid[..., k - 1 - d], sizes[d], padding_mode, align_corners)
        for d in range(k)
    ]
    if mode == "nearest":
        nearest = [p.round() for p in position]
        out = _read_pixels(flat_input, nearest, sizes)
        if grid.requires_grad:
            # round() has a zero derivative, so the grid's gradient is zero, as in
            # PyTorch. Multiplying by ones built from the rounded positions keeps
            # the output in the grid's graph, so that zero arrives (not None).
            for p in nearest:
                out = out * (where(p.isfinite(), p * 0, 0.0) + 1).unsqueeze(1)
    else:
        # The pixels at the corners of the cell around each point, each weighted
        # by the point's closeness to it along every dimension (1 - distance).
        low = [p.detach().floor() for p in position]
        out = None
        for corner in itertools.product((0, 1), repeat=k):
            weight = None
            for p, p_low, upper in zip(position, low, corner):
                w = p - p_low if upper else p_low + 1 - p
                weight = w if weight is None else weight * w
            corner_position = [p_low + upper for p_low, upper in zip(low, corner)]
            term = _read_pixels(flat_input, corner_position, sizes) * weight.unsqueeze(1)
            out = term if out is None else out + term
    return out.reshape(batch, channels, *out_sizes)
