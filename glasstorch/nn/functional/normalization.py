"""Normalisations of ``nn.functional``: batch, layer, group, instance, RMS and
local response normalisation, and ``normalize``.

The plain formulas live here; batch, layer and group normalisation run as the
fused nodes of :mod:`glasstorch.nn.fused.normalization` where their dtype
allows.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn.functional._utils import _size_list
from glasstorch.nn.fused.common import fusable
from glasstorch.nn.fused.normalization import GroupNormFunction, LayerNorm, fused_batch_norm
from glasstorch.ops.creation import zeros
from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor


def _check_normalized_shape(input: Tensor, normalized_shape: tuple[int, ...]) -> None:
    trailing = tuple(input.shape[input.dim() - len(normalized_shape) :])
    if input.dim() < len(normalized_shape) or trailing != normalized_shape:
        expected = ", ".join(["*"] + [str(s) for s in normalized_shape])
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[{expected}], but got input of size{list(input.shape)}"
        )


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the last ``len(normalized_shape)`` dimensions, then scale and shift.

    ``(x - mean) / sqrt(var + eps) * weight + bias``, with the biased variance.
    Float inputs run as one fused node (:mod:`glasstorch.nn.fused.normalization`);
    :func:`_layer_norm_formula` is what it computes.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    _check_normalized_shape(input, normalized_shape)

    def formula(x, w, b):
        return _layer_norm_formula(x, normalized_shape, w, b, eps)

    if (
        input.numel() > 0
        and fusable(input, weight, bias)
        and all(p is None or p.shape == normalized_shape for p in (weight, bias))
    ):
        return LayerNorm.apply(input, weight, bias, normalized_shape, eps, formula)
    return formula(input, weight, bias)


def _layer_norm_formula(
    input: Tensor, normalized_shape: tuple[int, ...], weight, bias, eps: float
) -> Tensor:
    """:func:`layer_norm` as a composition of tensor operations (its meaning)."""
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    variance = (centered * centered).mean(dims, keepdim=True)
    output = centered * (variance + eps).rsqrt()
    if weight is not None:
        output = output * weight
    if bias is not None:
        output = output + bias
    return output


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dimension 1) with batch or running statistics.

    In training the batch's mean and biased variance normalize the input, and
    the running statistics (when given) move toward the batch's mean and
    *unbiased* variance: ``running = (1 - momentum) * running + momentum * batch``.
    Otherwise the running statistics normalize the input.

    Shape:
        - input: ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)``; statistics, weight,
          bias: ``(C,)``.
    """
    channels = input.shape[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is None and not training:
            raise RuntimeError(f"batch_norm in evaluation mode needs {name}")
        if stat is not None and stat.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {stat.numel()}")
    dims = (0,) + tuple(range(2, input.dim()))
    per_channel = (1, channels) + (1,) * (input.dim() - 2)
    if training:
        count = input.numel() // channels
        if count <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
    if input.dtype in (_dtype.float32, _dtype.float64) and input.numel() > 0:
        # the fused kernels (glasstorch.nn.fused.normalization): three kernel calls a step
        return fused_batch_norm(
            input, running_mean, running_var, weight, bias, training, momentum, eps
        )
    if training:
        mean = input.mean(dims)
        centered = input - mean.reshape(per_channel)
        variance = (centered * centered).mean(dims)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                unbiased = variance.detach() * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        centered = input - running_mean.reshape(per_channel)
        variance = running_var
    output = centered * (variance + eps).rsqrt().reshape(per_channel)
    if weight is not None:
        output = output * weight.reshape(per_channel)
    if bias is not None:
        output = output + bias.reshape(per_channel)
    return output


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    norm = input.norm(p, dim, keepdim=True).clamp_min(eps)
    return input / norm.expand_as(input)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample over its spatial positions, as :class:`nn.InstanceNorm2d`.

    It is batch normalisation of the input seen as one sample with ``N * C``
    channels: the statistics are per sample and per channel. Running
    statistics (when given) move toward the mean over the batch of each
    channel's statistics.

    Args:
        input: ``(N, C, *)``, at least one spatial dimension.
        running_mean, running_var: ``(C,)`` or None.
        weight, bias: ``(C,)`` or None.
        use_input_stats: normalize with the input's statistics (else the running ones).
        momentum: how far the running statistics move each call.
        eps: added to the variance.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.instance_norm(torch.randn(2, 3, 8, 8)).shape
        torch.Size([2, 3, 8, 8])
    """
    if use_input_stats:
        spatial = 1
        for size in input.shape[2:]:
            spatial *= size
        if spatial <= 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}"
            )
    batch, channels = input.shape[0], input.shape[1]
    folded = input.reshape(1, batch * channels, *input.shape[2:])
    mean = None if running_mean is None else running_mean.repeat(batch)
    var = None if running_var is None else running_var.repeat(batch)
    out = batch_norm(
        folded,
        mean,
        var,
        None if weight is None else weight.repeat(batch),
        None if bias is None else bias.repeat(batch),
        use_input_stats,
        momentum,
        eps,
    )
    if use_input_stats:
        from glasstorch.autograd.grad_mode import no_grad

        with no_grad():
            if running_mean is not None:
                running_mean.copy_(mean.reshape(batch, channels).mean(0))
            if running_var is not None:
                running_var.copy_(var.reshape(batch, channels).mean(0))
    return out.reshape(input.shape)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """Root-mean-square normalisation over the last dimensions: ``x / sqrt(mean(x^2) + eps) * weight``.

    Unlike :func:`layer_norm` nothing is subtracted. ``eps=None`` takes the
    machine epsilon of the input's dtype, as PyTorch does.

    Shape:
        - Input: ``(*, *normalized_shape)``; Output: the same.

    Examples::

        >>> F.rms_norm(torch.randn(2, 5, 8), (8,)).shape
        torch.Size([2, 5, 8])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    _check_normalized_shape(input, normalized_shape)
    if eps is None:
        from glasstorch._dtype import finfo

        eps = finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


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
