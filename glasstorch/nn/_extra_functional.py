"""Still more of ``nn.functional``: layers and losses from tutorials and courses.

Local response normalisation, the channel-wise and alpha dropouts, randomised
leaky ReLU, channel shuffle, the deprecated ``upsample`` aliases, Gumbel-softmax,
max-unpooling, power-average and 3-D adaptive pooling, 3-D convolution and five more losses
(soft margin, multi-label soft margin, multi-class margin, Poisson and Gaussian
negative log-likelihood).

Each is a composition of operations glasstorch already has (pooling,
convolution, ``scatter``, reductions, pointwise maths), so autograd, every tier
and every device come for free; where the composition costs more than
PyTorch's fused kernel, the docstring says so. Random functions draw from
glasstorch's Philox generator, as :func:`dropout` does.
"""

from __future__ import annotations

import math
import warnings

from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn import _convolution as conv
from glasstorch.nn import inplace_activations
from glasstorch.nn._more_functional import _legacy, _reduce
from glasstorch.ops.creation import full as _filled
from glasstorch.ops.creation import rand, zeros
from glasstorch.ops.pointwise import where
from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor

__all__ = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "alpha_dropout",
    "channel_shuffle",
    "conv3d",
    "dropout1d",
    "dropout3d",
    "feature_alpha_dropout",
    "gaussian_nll_loss",
    "gumbel_softmax",
    "local_response_norm",
    "lp_pool1d",
    "lp_pool2d",
    "max_unpool1d",
    "max_unpool2d",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "rrelu",
    "soft_margin_loss",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


# ============================================================ normalisation


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide each element by a power of the sum of squares over neighbouring channels.

    ``b[c] = a[c] / (k + alpha / size * sum(a[c'] ** 2)) ** beta``, the sum over
    the ``size`` channels ``c - size // 2 <= c' <= c + (size - 1) // 2`` (channels
    beyond either end count as zeros), as in AlexNet.

    Args:
        input: ``(N, C, *)``, at least 3-D.
        size: how many neighbouring channels enter each sum.
        alpha: multiplicative factor. Default: 0.0001.
        beta: exponent. Default: 0.75.
        k: additive factor. Default: 1.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.local_response_norm(torch.randn(2, 8, 4, 4), size=3).shape
        torch.Size([2, 8, 4, 4])

    The window sum is ``size`` shifted slices of the zero-padded squares added
    up, ``size`` passes over the input where PyTorch runs one average pooling.
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    squares = input * input
    channels = input.shape[1]
    before, after = size // 2, (size - 1) // 2

    def zero_channels(count: int) -> Tensor:
        shape = (input.shape[0], count, *input.shape[2:])
        return zeros(*shape, dtype=input.dtype, device=input.device)

    parts = [squares]
    if before:
        parts.insert(0, zero_channels(before))
    if after:
        parts.append(zero_channels(after))
    padded = cat(parts, 1) if len(parts) > 1 else squares
    total = padded.narrow(1, 0, channels)
    for shift in range(1, size):
        total = total + padded.narrow(1, shift, channels)
    div = (total * (alpha / size) + k) ** beta
    return input / div


# ================================================================== dropout


def _dropout_probability(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool):
    """Zero whole channels: one draw per ``(sample, channel)``, broadcast over the rest."""
    _dropout_probability(p)
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    if p == 1.0:
        scale = zeros(*mask_shape, dtype=input.dtype, device=input.device)
    else:
        keep = rand(mask_shape, dtype=input.dtype, device=input.device) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(scale) if inplace else input * scale


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of a sequence with probability ``p``, scaling the rest by ``1 / (1 - p)``.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``: one draw per channel.
        p: the probability of zeroing a channel. Default: 0.5.
        training: outside training the input is returned as is.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.dropout1d(torch.ones(2, 4, 3), 0.5).shape
        torch.Size([2, 4, 3])
    """
    _dropout_probability(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.dim() == 3)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of a volume with probability ``p``, scaling the rest by ``1 / (1 - p)``.

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``: one draw per channel.
        p: the probability of zeroing a channel. Default: 0.5.
        training: outside training the input is returned as is.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.dropout3d(torch.ones(2, 4, 3, 3, 3), 0.5).shape
        torch.Size([2, 4, 3, 3, 3])
    """
    _dropout_probability(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    # Only a 5-D input has a batch dimension; any other is one sample, as in PyTorch.
    return _feature_dropout(input, p, training, inplace, batched=input.dim() == 5)


# SELU's negative saturation value, -scale * alpha: the value alpha dropout drops to.
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool):
    """Set dropped units to SELU's saturation value, then fix the mean and variance.

    With keep mask ``m`` (kept with probability ``1 - p``),
    ``a = 1 / sqrt((alpha'^2 p + 1)(1 - p))`` and ``b = a alpha' p``, the output
    is ``a * (x * m - alpha' * (1 - m)) + b``, which keeps zero mean and unit
    variance for inputs with zero mean and unit variance.
    """
    _dropout_probability(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    if feature:
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    keep = (rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    a = 1.0 / math.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
    b = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    noise = keep * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for self-normalising (SELU) networks: keeps zero mean and unit variance.

    Each element is dropped with probability ``p`` to SELU's negative saturation
    value, then the result is scaled and shifted so that inputs of zero mean
    and unit variance keep them. Note that ``training`` defaults to False, as
    in PyTorch.

    Args:
        input: any shape.
        p: the probability of dropping an element. Default: 0.5.
        training: apply the dropout (otherwise return the input). Default: False.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.alpha_dropout(torch.randn(4, 8), 0.2, training=True).shape
        torch.Size([4, 8])
    """
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
):
    """:func:`alpha_dropout` of whole channels: one draw per ``(sample, channel)``.

    Args:
        input: ``(N, C, *)``.
        p: the probability of dropping a channel. Default: 0.5.
        training: apply the dropout (otherwise return the input). Default: False.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.feature_alpha_dropout(torch.randn(2, 4, 5, 5), 0.2, training=True).shape
        torch.Size([2, 4, 5, 5])
    """
    return _alpha_dropout(input, p, training, inplace, feature=True)


# ============================================================== activations


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomised leaky ReLU: ``x`` where positive, ``a * x`` elsewhere.

    In training each element draws its own slope ``a`` uniformly from
    ``[lower, upper]`` (from glasstorch's generator); otherwise ``a`` is the
    fixed mean ``(lower + upper) / 2``.

    Args:
        input: any shape.
        lower: the smallest slope. Default: 1/8.
        upper: the largest slope. Default: 1/3.
        training: draw random slopes. Default: False.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.rrelu(torch.tensor([-2.0, 3.0]))     # eval: slope 0.2292
        tensor([-0.4583,  3.0000])
    """
    if not training:
        slope = (lower + upper) / 2
        if inplace:  # RreluWithNoiseBackward1, written into input (nn/inplace_activations.py)
            return inplace_activations.rrelu_(input, slope)
        return where(input >= 0, input, input * slope)
    slopes = rand(tuple(input.shape), dtype=input.dtype, device=input.device)
    with no_grad():  # the slopes in place: one tensor the input's size (PyTorch's noise)
        slopes.mul_(upper - lower).add_(lower)
    if inplace:
        return inplace_activations.rrelu_(input, slopes)
    return where(input > 0, input, input * slopes)


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


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax distribution, optionally one-hot ("straight-through").

    ``softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E`` standard
    exponential draws from glasstorch's generator. With ``hard=True`` the
    result is the one-hot vector of the sample's maximum, whose gradient is the
    soft sample's (``y_hard - y_soft.detach() + y_soft``).

    Args:
        logits: ``(*, num_features)`` unnormalised log-probabilities.
        tau: the temperature, positive. Default: 1.
        hard: return one-hot samples. Default: False.
        eps: unused, kept for PyTorch's signature.
        dim: the dimension of the categories. Default: -1.

    Shape:
        - Output: the shape of ``logits``.

    Examples::

        >>> F.gumbel_softmax(torch.randn(2, 5), tau=0.5, hard=True).sum(-1)
        tensor([1., 1.])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    uniform = rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    exponential = (-(1.0 - uniform).log()).clamp_min(1e-30)  # 1 - u lies in (0, 1]
    gumbels = (logits - exponential.log()) / tau
    y_soft = gumbels.softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = zeros(*logits.shape, dtype=logits.dtype, device=logits.device).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ================================================================== resampling


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
    return conv.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="nearest"``.

    Examples::

        >>> F.upsample_nearest(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    _warn_deprecated("upsample_nearest")
    return conv.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: :func:`interpolate` with ``mode="bilinear"`` and ``align_corners=True``.

    Examples::

        >>> F.upsample_bilinear(torch.randn(1, 3, 4, 4), scale_factor=2).shape
        torch.Size([1, 3, 8, 8])
    """
    _warn_deprecated("upsample_bilinear")
    return conv.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# =================================================================== pooling


def _ints(value, n: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    return tuple(int(v) for v in value)


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
    out = conv.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
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
    from glasstorch.nn._more_functional import avg_pool1d

    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kernel_size).pow(1.0 / norm_type)


def _size_list(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


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
    from glasstorch.nn._more_functional import _output_sizes, adaptive_avg_pool1d

    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {_size_list(input.shape)}"
        )
    if input.dim() == 4:
        return adaptive_avg_pool3d(input.unsqueeze(0), output_size)[0]
    out_d, out_h, out_w = _output_sizes(output_size, input, 3)
    n, c, d, h, w = input.shape
    planes = conv.adaptive_avg_pool2d(input.reshape(n, c * d, h, w), (out_h, out_w))
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
    from glasstorch.nn._more_functional import _output_sizes, _window
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


# ============================================================== convolution


def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over ``(N, C, D, H, W)`` volumes, as :class:`nn.Conv3d`.

    Composed from :func:`conv2d`: for each of the ``kD`` depth taps, the input
    planes that tap sees (a strided slice along depth, folded into the batch)
    are convolved with that tap's 2-D kernels, and the ``kD`` results are
    added. That is PyTorch's arithmetic, plus one copy of the input per tap
    and ``kD - 1`` additions of the output.

    Args:
        input: ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``.
        weight: ``(C_out, C_in / groups, kD, kH, kW)``.
        bias: ``(C_out,)`` or None.
        stride, padding, dilation: an int or a triple; ``padding`` may also be
            ``"valid"`` or ``"same"``.
        groups: split the channels into groups convolved separately.

    Shape:
        - Output: ``(N, C_out, OD, OH, OW)``,
          ``OD = (D + 2 * padding - dilation * (kD - 1) - 1) // stride + 1``.

    Examples::

        >>> F.conv3d(torch.randn(1, 2, 5, 6, 6), torch.randn(4, 2, 3, 3, 3)).shape
        torch.Size([1, 4, 3, 4, 4])
    """
    if input.dim() == 4:
        return conv3d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups)[0]
    if input.dim() != 5:
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
            f"{list(input.shape)}"
        )
    kd, kh, kw = weight.shape[2:]
    sd, sh, sw = _ints(stride, 3)
    dd, dh, dw = _ints(dilation, 3)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0, 0)
        elif padding == "same":
            totals = [d * (k - 1) for d, k in zip((dd, dh, dw), (kd, kh, kw))]
            if any(t % 2 for t in totals):
                # An odd total: pad the extra element on the right first.
                extra = [t % 2 for t in totals]
                input = conv.pad(input, (0, extra[2], 0, extra[1], 0, extra[0]))
            padding = tuple(t // 2 for t in totals)
        else:
            raise ValueError(f"Invalid padding string {padding!r}")
    pd, ph, pw = _ints(padding, 3)
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{input.shape[1]} channels instead"
        )
    if pd:
        input = conv.pad(input, (0, 0, 0, 0, pd, pd))
    n, _, depth, height, width = input.shape
    out_depth = (depth - dd * (kd - 1) - 1) // sd + 1
    if out_depth <= 0:
        raise RuntimeError(
            "Calculated padded input size per channel: "
            f"({depth} x {height + 2 * ph} x {width + 2 * pw}). Kernel size: "
            f"({dd * (kd - 1) + 1} x {dh * (kh - 1) + 1} x {dw * (kw - 1) + 1}). "
            "Kernel size can't be greater than actual input size"
        )
    total = None
    for tap in range(kd):
        start = tap * dd
        planes = input[:, :, start : start + (out_depth - 1) * sd + 1 : sd]
        planes = planes.transpose(1, 2).reshape(n * out_depth, input.shape[1], height, width)
        part = conv.conv2d(planes, weight[:, :, tap], None, (sh, sw), (ph, pw), (dh, dw), groups)
        total = part if total is None else total + part
    out = total.reshape(n, out_depth, *total.shape[1:]).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1, 1)
    return out.contiguous()


# ==================================================================== losses


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, ``target`` 1 or -1.

    Args:
        input: any shape; target: the same shape.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.soft_margin_loss(torch.tensor([2.0, -1.0]), torch.tensor([1.0, -1.0]))
        tensor(0.2201)
    """
    from glasstorch.nn.functional import softplus

    reduction = _legacy(size_average, reduce, reduction)
    losses = softplus(-target * input)
    # In the input's dtype, as PyTorch (a float64 target does not widen it).
    if input.dtype.is_floating_point and losses.dtype is not input.dtype:
        losses = losses.to(input.dtype)
    return _reduce(losses, reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """One-versus-all logistic loss over ``C`` labels, averaged over the labels.

    ``-(y log(sigmoid(x)) + (1 - y) log(sigmoid(-x)))`` per label (times
    ``weight``), then the mean over the label dimension (the last).

    Args:
        input: ``(N, C)`` or ``(C,)``; target: the same shape, 0 or 1.
        weight: a weight per label, or None.
        reduction: ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or ``(N,)`` with ``reduction='none'``.

    Examples::

        >>> F.multilabel_soft_margin_loss(torch.zeros(1, 3), torch.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.6931)
    """
    from glasstorch.nn.functional import logsigmoid

    reduction = _legacy(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C``.

    Args:
        input: ``(N, C)`` or ``(C,)`` scores; target: ``(N,)`` or ``()`` class indices.
        p: 1 or 2. Default: 1.
        margin: Default: 1.
        weight: a weight per class, applied by the target's class, or None.
        reduction: ``'none'`` (one loss per sample), ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or ``(N,)`` with ``reduction='none'``.

    Examples::

        >>> F.multi_margin_loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    classes = x.shape[1]
    t = target.reshape(-1, 1).long()
    if input.dim() > 2 or t.shape[0] != x.shape[0]:
        raise RuntimeError(
            f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}"
        )
    x_y = x.gather(1, t)
    losses = (x - x_y + margin).clamp_min(0.0)
    if p == 2:
        losses = losses * losses
    if weight is not None:
        losses = losses * weight[t.reshape(-1)].reshape(-1, 1)
    others = zeros(*x.shape, dtype=x.dtype, device=x.device).scatter(1, t, 1.0)
    losses = (losses * (1 - others)).sum(1) / classes
    if input.dim() < 2:
        losses = losses.reshape(())
    return _reduce(losses, reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate ``input``.

    ``exp(input) - target * input`` with ``log_input=True`` (``input`` is the
    log of the rate), else ``input - target * log(input + eps)``. With
    ``full=True`` Stirling's approximation of ``log(target!)``,
    ``target * log(target) - target + 0.5 * log(2 pi target)``, is added where
    ``target > 1``.

    Args:
        input: the (log-)rate, any shape; target: counts, the same shape.
        log_input: ``input`` is a log-rate. Default: True.
        full: add the Stirling term. Default: False.
        eps: keeps the log finite when ``log_input=False``. Default: 1e-8.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.poisson_nll_loss(torch.zeros(3), torch.tensor([0.0, 1.0, 2.0]))
        tensor(1.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under Gaussians of mean ``input`` and variance ``var``.

    ``0.5 * (log(max(var, eps)) + (input - target) ** 2 / max(var, eps))``, plus
    ``0.5 * log(2 pi)`` with ``full=True``. The clamp to ``eps`` does not stop
    the gradient to ``var`` (PyTorch clamps in place under ``no_grad``).

    Args:
        input: the means, ``(N, *)``; target: the same shape.
        var: the variances: the input's shape, or missing the last dimension,
            or with one dimension of size 1 (shared along it), or a float.
        full: add the constant. Default: False.
        eps: the smallest variance used. Default: 1e-6.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Shape:
        - Output: a scalar, or the input's shape with ``reduction='none'``.

    Examples::

        >>> F.gaussian_nll_loss(torch.zeros(3), torch.ones(3), torch.ones(3))
        tensor(0.5000)
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _filled(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance shared along the last dimension
        elif input.dim() == var.dim() and (
            sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1
        ):
            pass  # one dimension of size 1, broadcast
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # var clamped to eps with the gradient of the identity.
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
