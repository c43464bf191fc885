"""Convolutions of ``nn.functional``: ``conv1d``, ``conv2d``, ``conv3d`` and the
transposed ``conv_transpose1d`` and ``conv_transpose2d``.

The argument checks (with PyTorch's messages) and the reshaping of 1-D and 3-D
convolutions into 2-D ones live here; the 2-D convolutions themselves run as
the fused nodes of :mod:`glasstorch.nn.fused.conv`.
"""

from __future__ import annotations

from glasstorch.nn.functional._utils import (
    _batched,
    _float_input,
    _ints,
    _pair,
    _single,
    _size_list,
)
from glasstorch.nn.functional.vision import pad
from glasstorch.nn.fused.conv import Conv2dFunction, ConvTranspose2dFunction
from glasstorch.tensor import Tensor


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """1-D transposed convolution, as :class:`nn.ConvTranspose1d`: :func:`conv_transpose2d`
    on a one-row image.

    Args:
        input: ``(N, C_in, L)`` or ``(C_in, L)``.
        weight: ``(C_in, C_out / groups, K)``.
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: ints.
        groups: independent channel groups.

    Shape:
        - Output: ``(N, C_out, L_out)``,
          ``L_out = (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

    Examples::

        >>> F.conv_transpose1d(torch.randn(1, 4, 5), torch.randn(4, 2, 3), stride=2).shape
        torch.Size([1, 2, 11])
    """
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input "
            f"of size: {_size_list(input.shape)}"
        )
    if weight.dim() != 3:
        raise RuntimeError(
            f"weight should have at least three dimensions, got {_size_list(weight.shape)}"
        )
    out = conv_transpose2d(
        input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _single(stride)),
        (0, _single(padding)), (0, _single(output_padding)), groups,
        (1, _single(dilation)),
    )  # fmt: skip
    return out.squeeze(-2)


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
                input = pad(input, (0, extra[2], 0, extra[1], 0, extra[0]))
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
        input = pad(input, (0, 0, 0, 0, pd, pd))
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
        part = conv2d(planes, weight[:, :, tap], None, (sh, sw), (ph, pw), (dh, dw), groups)
        total = part if total is None else total + part
    out = total.reshape(n, out_depth, *total.shape[1:]).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1, 1)
    return out.contiguous()


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
