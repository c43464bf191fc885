"""Dropout of ``nn.functional``: element, channel (1-D to 3-D) and alpha dropout.

``dropout(..., inplace=True)`` writes into its input (:func:`dropout_`) and
keeps a bool mask, a quarter of a float32 input, where PyTorch's CPU kernel
keeps a float mask the input's size (``MulBackward0`` for both).

Every mask comes from :func:`keep_mask`: ``rand >= p`` from Philox by default;
with the ``"pytorch"`` stream on the CPU, PyTorch's own draw
(``bernoulli_(1 - p)``: a float64 uniform ``< 1 - p``), so that a seeded
PyTorch program drops the same elements. The kept elements are scaled by
``1 / (1 - p)`` divided in the input's dtype, as PyTorch's ``noise.div_(1 - p)``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from glasstorch import _dtype, _tier
from glasstorch.ops import inplace as inplace_ops
from glasstorch.ops.creation import full, rand, zeros
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask comes from :func:`keep_mask` (``torch.manual_seed`` makes it
    repeatable). Outside training, ``input`` is returned unchanged.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:  # written into input, keeping only a bool mask (nn/py)
        return dropout_(input, p)
    if p == 1.0:
        scale = zeros(input.shape, dtype=input.dtype, device=input.device)
    else:
        keep = keep_mask(tuple(input.shape), p, input)
        scale = keep.to(input.dtype) * kept_scale(p, input.dtype)
    return input * scale


def keep_mask(shape: tuple, p: float, like: Tensor) -> Tensor:
    """The bool mask of kept elements, shaped ``shape``, on ``like``'s device.

    ``rand(shape) >= p`` from Philox; with the ``"pytorch"`` stream on the CPU,
    PyTorch's ``bernoulli_(1 - p)`` (a float64 uniform ``< 1 - p``).
    """
    from glasstorch.ops.creation import _generator
    from glasstorch.ops.sampling import bernoulli

    if _generator(None).uses_pytorch_stream and not like.is_cuda:
        return bernoulli(empty_tensor(shape, _dtype.float64, device=like.device), 1.0 - p).to(
            _dtype.bool_
        )
    return rand(shape, dtype=like.dtype, device=like.device) >= p


def kept_scale(p: float, dtype) -> float:
    """``1 / (1 - p)`` as PyTorch's ``noise.div_(1 - p)`` computes it: ``1 - p`` rounded
    to ``dtype`` first, the quotient rounded to ``dtype`` (a float that dtype holds exactly)."""
    if dtype is _dtype.float64 or not dtype.is_floating_point:
        return 1.0 / (1.0 - p)
    return float(np.float32(1.0) / np.float32(1.0 - p))


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
        keep = keep_mask(mask_shape, p, input)
        scale = keep.to(input.dtype) * kept_scale(p, input.dtype)
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


def _dropout_values(x, keep, scale):
    return x * (keep.to(x.dtype) * scale)


DROPOUT_ = inplace_ops.elementwise_function(
    "MulBackward0",
    _dropout_values,
    lambda g, x, y, keep, scale: (g * (keep.to(g.dtype) * scale), None, None),
)


def dropout_mask(input: Tensor, p: float) -> Tensor:
    """The bool mask of the elements dropout keeps: ``rand(input.shape) >= p``,
    drawn a piece at a time into the mask (the same numbers as ``rand``, with
    no float tensor the size of ``input``)."""
    from glasstorch.ops.creation import _generator
    from glasstorch.ops.pointwise import compute_binary

    if _generator(None).uses_pytorch_stream and not input.is_cuda:
        return keep_mask(tuple(input.shape), p, input)
    keep = empty_tensor(tuple(input.shape), _dtype.bool_, device=input.device)
    flat = keep.view(-1)
    count = flat.numel()
    if count == 0:
        return keep
    # The uniform kernel's 4 numbers per block: every piece starts on a block of its own.
    seed, offset = _generator(None).take_blocks(-(-count // 4))
    piece = min(inplace_ops.PIECE, count)
    draws = empty_tensor((piece,), input.dtype, device=input.device)
    for start in range(0, count, piece):
        part = flat[start : start + piece]
        these = draws[: part.numel()]
        kernels.random_uniform(these._strided(), seed, offset + start // 4, 0.0, 1.0)
        compute_binary("ge", these, p, out=part)
    return keep


def dropout_(input: Tensor, p: float) -> Tensor:
    """``F.dropout(input, p, inplace=True)`` in training, ``0 < p``: the kept
    elements scaled by ``1 / (1 - p)``, the others 0, written into ``input``."""
    if p == 1.0:
        keep = empty_tensor(tuple(input.shape), _dtype.bool_, device=input.device)
        keep.fill_(False)
        scale = 0.0
    else:
        keep, scale = dropout_mask(input, p), kept_scale(p, input.dtype)
    return inplace_ops.write_inplace(
        input, lambda: DROPOUT_.apply(input, keep, scale), input.dtype, (keep,)
    )


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
        keep = keep_mask(mask_shape, p, input)
        scale = keep.to(input.dtype) * kept_scale(p, input.dtype)
    if inplace:
        return input.mul_(scale)
    return input * scale
