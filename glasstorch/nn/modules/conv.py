"""Convolution layers: ``Conv1d``, ``Conv2d`` and ``ConvTranspose2d``."""

from __future__ import annotations

import math

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.tensor import Tensor

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _tuple(value, n: int) -> tuple[int, ...]:
    """An int repeated ``n`` times, or a sequence of ``n`` ints as a tuple."""
    if isinstance(value, int):
        return (value,) * n
    return tuple(int(v) for v in value)


class _ConvNd(Module):
    """What every convolution layer shares: arguments, parameters, init and repr."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride,
        padding,
        dilation,
        transposed: bool,
        output_padding,
        groups: int,
        bias: bool,
        padding_mode: str,
        dims: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in _tuple(stride, dims)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        if transposed and padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {self.__class__.__name__}'
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, dims)
        self.stride = _tuple(stride, dims)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, dims)
        self.dilation = _tuple(dilation, dims)
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, dims)
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._padding_for_pad(dims)
        if transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _padding_for_pad(self, dims: int) -> list[int] | tuple[int, ...]:
        """The padding as :func:`F.pad` takes it: last dimension first, each side given.

        A padding mode other than ``"zeros"`` pads the input with :func:`F.pad`
        first and convolves without padding. ``"same"`` splits the padding a
        dimension needs, ``dilation * (kernel_size - 1)``, with the extra element
        (if odd) on the right. (A list for string paddings, a tuple otherwise,
        as PyTorch keeps it.)
        """
        pads: list[int] = []
        for d in reversed(range(dims)):
            if self.padding == "valid":
                left = right = 0
            elif self.padding == "same":
                total = self.dilation[d] * (self.kernel_size[d] - 1)
                left, right = total // 2, total - total // 2
            else:
                left = right = self.padding[d]
            pads += [left, right]
        return pads if isinstance(self.padding, str) else tuple(pads)

    def _padded(self, input: Tensor) -> Tensor:
        """``input`` padded by ``padding_mode`` (reflect, replicate or circular)."""
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)

    def _conv_forward(self, input: Tensor, conv) -> Tensor:
        """``conv`` (``F.conv1d``, ``conv2d`` or ``conv3d``) with this layer's
        parameters; a padding mode other than zeros pads the input first."""
        if self.padding_mode != "zeros":
            return conv(
                self._padded(input), self.weight, self.bias, self.stride, 0, self.dilation,
                self.groups,
            )  # fmt: skip
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) weights, uniform(+-1/sqrt(fan_in)) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        zeros = (0,) * len(self.kernel_size)
        if isinstance(self.padding, str):
            text += f", padding={self.padding}"
        elif self.padding != zeros:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.kernel_size):
            text += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over a batch of sequences: see :func:`F.conv1d <glasstorch.nn.functional.conv1d>`.

    Args:
        in_channels: channels ``C_in`` of the input.
        out_channels: channels ``C_out`` the layer produces.
        kernel_size: the kernel's length ``K``.
        stride: step between output positions. Default: 1.
        padding: zeros added on both sides, or ``"valid"`` (none) or
            ``"same"`` (output as long as the input). Default: 0.
        dilation: spacing between kernel taps. Default: 1.
        groups: independent channel groups. Default: 1.
        bias: learn a bias per output channel. Default: True.
        padding_mode: how the padding is filled: ``"zeros"``, ``"reflect"``,
            ``"replicate"`` or ``"circular"`` (the input is then padded with
            :func:`F.pad` in that mode and convolved without padding). Default: ``"zeros"``.

    Attributes:
        weight: ``(C_out, C_in / groups, K)``, drawn from ``U(-b, b)`` with
            ``b = 1 / sqrt(C_in / groups * K)`` (kaiming_uniform with a = sqrt(5)).
        bias: ``(C_out,)``, from the same distribution.

    Shape:
        - Input: ``(N, C_in, L)`` or ``(C_in, L)``.
        - Output: ``(N, C_out, L_out)``,
          ``L_out = (L + 2 * padding - dilation * (K - 1) - 1) // stride + 1``.

    Examples::

        >>> conv = nn.Conv1d(4, 8, 3, padding=1)
        >>> conv(torch.randn(2, 4, 10)).shape
        torch.Size([2, 8, 10])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0,
            groups, bias, padding_mode, 1, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over a batch of images: see :func:`F.conv2d <glasstorch.nn.functional.conv2d>`.

    Output channel ``o`` is ``bias[o]`` plus the cross-correlation of the
    input's channels (those of its group) with ``weight[o]``.

    Args:
        in_channels: channels ``C_in`` of the input.
        out_channels: channels ``C_out`` the layer produces.
        kernel_size: ``K`` or ``(KH, KW)``.
        stride: step between output positions, an int or a pair. Default: 1.
        padding: zeros added on every side (an int or ``(h, w)``), or
            ``"valid"`` (none) or ``"same"`` (output as large as the input;
            stride 1 only). Default: 0.
        dilation: spacing between kernel taps. Default: 1.
        groups: split input and output channels into this many independent
            groups (``groups == in_channels`` is a depthwise convolution). Default: 1.
        bias: learn a bias per output channel. Default: True.
        padding_mode: how the padding is filled: ``"zeros"``, ``"reflect"``,
            ``"replicate"`` or ``"circular"`` (the input is then padded with
            :func:`F.pad` in that mode and convolved without padding). Default: ``"zeros"``.

    Attributes:
        weight: ``(C_out, C_in / groups, KH, KW)``, drawn from ``U(-b, b)`` with
            ``b = 1 / sqrt(fan_in)``, ``fan_in = C_in / groups * KH * KW``
            (PyTorch's kaiming_uniform with a = sqrt(5)).
        bias: ``(C_out,)``, from the same distribution.

    Shape:
        - Input: ``(N, C_in, H, W)`` or ``(C_in, H, W)``.
        - Output: ``(N, C_out, OH, OW)``,
          ``OH = (H + 2 * padding - dilation * (KH - 1) - 1) // stride + 1`` (OW alike).

    Examples::

        >>> conv = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        >>> conv(torch.randn(8, 3, 32, 32)).shape
        torch.Size([8, 16, 32, 32])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0,
            groups, bias, padding_mode, 2, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv2d)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution: see :func:`F.conv_transpose2d <glasstorch.nn.functional.conv_transpose2d>`.

    The gradient of a :class:`Conv2d` with respect to its input, used as a
    layer: it upsamples (by ``stride``) where a convolution downsamples.

    Args:
        in_channels: channels ``C_in`` of the input.
        out_channels: channels ``C_out`` the layer produces.
        kernel_size: ``K`` or ``(KH, KW)``.
        stride: the upsampling step. Default: 1.
        padding: ``dilation * (K - 1) - padding`` zeros are added to each
            side of the input, so ``padding`` trims the output. Default: 0.
        output_padding: extra rows and columns on one side of the output. Default: 0.
        groups: independent channel groups. Default: 1.
        bias: learn a bias per output channel. Default: True.
        dilation: spacing between kernel taps. Default: 1.
        padding_mode: only ``"zeros"``.

    Attributes:
        weight: ``(C_in, C_out / groups, KH, KW)``, kaiming_uniform(a = sqrt(5))
            with ``fan_in = C_out / groups * KH * KW`` (PyTorch's convention).
        bias: ``(C_out,)``.

    Shape:
        - Input: ``(N, C_in, H, W)`` or ``(C_in, H, W)``.
        - Output: ``(N, C_out, OH, OW)``,
          ``OH = (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1``.

    Examples::

        >>> up = nn.ConvTranspose2d(16, 8, kernel_size=2, stride=2)
        >>> up(torch.randn(1, 16, 7, 7)).shape
        torch.Size([1, 8, 14, 14])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if isinstance(padding, str):
            raise ValueError(f'padding="{padding}" is not supported by ConvTranspose2d')
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, True,
            output_padding, groups, bias, padding_mode, 2, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = self._output_padding_for(input, tuple(output_size)[-2:])
        return F.conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation,
        )  # fmt: skip

    def _output_padding_for(self, input: Tensor, size: tuple[int, int]) -> tuple[int, int]:
        """The output padding that makes the output ``size`` (PyTorch's ``output_size``)."""
        padding = []
        for i in range(2):
            smallest = (
                (input.shape[-2 + i] - 1) * self.stride[i] - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1) + 1
            )  # fmt: skip
            extra = size[i] - smallest
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(
                    f"requested an output size of {list(size)}, but valid sizes range from "
                    f"{smallest} to {smallest + self.stride[i] - 1} (for an input of "
                    f"{list(input.shape[-2:])})"
                )
            padding.append(extra)
        return tuple(padding)


class ConvTranspose1d(_ConvNd):
    """1-D transposed convolution: see :func:`F.conv_transpose1d <glasstorch.nn.functional.conv_transpose1d>`.

    The gradient of a :class:`Conv1d` with respect to its input, used as a
    layer: it lengthens a sequence (by ``stride``) where a convolution shortens it.

    Args:
        in_channels: channels ``C_in`` of the input.
        out_channels: channels ``C_out`` the layer produces.
        kernel_size: the kernel's length ``K``.
        stride: the upsampling step. Default: 1.
        padding: trims ``padding`` positions from each end of the output. Default: 0.
        output_padding: extra positions at the end of the output. Default: 0.
        groups: independent channel groups. Default: 1.
        bias: learn a bias per output channel. Default: True.
        dilation: spacing between kernel taps. Default: 1.
        padding_mode: only ``"zeros"``.

    Attributes:
        weight: ``(C_in, C_out / groups, K)``, kaiming_uniform(a = sqrt(5)).
        bias: ``(C_out,)``.

    Shape:
        - Input: ``(N, C_in, L)`` or ``(C_in, L)``.
        - Output: ``(N, C_out, L_out)``,
          ``L_out = (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

    Examples::

        >>> up = nn.ConvTranspose1d(16, 8, kernel_size=2, stride=2)
        >>> up(torch.randn(1, 16, 7)).shape
        torch.Size([1, 8, 14])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if isinstance(padding, str):
            raise ValueError(f'padding="{padding}" is not supported by ConvTranspose1d')
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, True,
            output_padding, groups, bias, padding_mode, 1, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self.output_padding[0]
        if output_size is not None:
            smallest = (
                (input.shape[-1] - 1) * self.stride[0] - 2 * self.padding[0]
                + self.dilation[0] * (self.kernel_size[0] - 1) + 1
            )  # fmt: skip
            wanted = tuple(output_size)[-1]
            output_padding = wanted - smallest
            if not 0 <= output_padding < max(self.stride[0], self.dilation[0]):
                raise ValueError(
                    f"requested an output size of {[wanted]}, but valid sizes range from "
                    f"{smallest} to {smallest + self.stride[0] - 1} (for an input of "
                    f"{list(input.shape[-1:])})"
                )
        return F.conv_transpose1d(
            input, self.weight, self.bias, self.stride[0], self.padding[0], output_padding,
            self.groups, self.dilation[0],
        )  # fmt: skip


class Conv3d(_ConvNd):
    """3-D convolution over volumes: see :func:`F.conv3d <glasstorch.nn.functional.conv3d>`.

    Composed from 2-D convolutions, one per depth tap of the kernel.

    Args:
        in_channels: channels ``C_in`` of the input.
        out_channels: channels ``C_out`` the layer produces.
        kernel_size: ``K`` or ``(KD, KH, KW)``.
        stride: Default: 1.
        padding: an int, a triple, ``"valid"`` or ``"same"``. Default: 0.
        dilation: spacing between kernel taps. Default: 1.
        groups: independent channel groups. Default: 1.
        bias: learn a bias per output channel. Default: True.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.

    Attributes:
        weight: ``(C_out, C_in / groups, KD, KH, KW)``, kaiming_uniform(a = sqrt(5)).
        bias: ``(C_out,)``.

    Shape:
        - Input: ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``.
        - Output: ``(N, C_out, OD, OH, OW)``,
          ``OD = (D + 2 * padding - dilation * (KD - 1) - 1) // stride + 1`` (alike).

    Examples::

        >>> nn.Conv3d(16, 33, 3, stride=2)(torch.randn(20, 16, 10, 50, 100)).shape
        torch.Size([20, 33, 4, 24, 49])
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0,
            groups, bias, padding_mode, 3, device, dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv3d)
