"""Pooling layers: max, average and adaptive pooling of sequences and images."""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor


class _MaxPoolNd(Module):
    """Arguments and repr shared by the max-pooling layers."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """The maximum of each window of a sequence: see :func:`F.max_pool1d <glasstorch.nn.functional.max_pool1d>`.

    Args:
        kernel_size: the window's length.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit ``-inf`` on both sides (at most half the window). Default: 0.
        dilation: the step between a window's elements. Default: 1.
        return_indices: also return each maximum's position. Default: False.
        ceil_mode: round the output length up, keeping a last partial window.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: ``(N, C, L_out)``,
          ``L_out = (L + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1``.

    Examples::

        >>> nn.MaxPool1d(2)(torch.randn(1, 4, 10)).shape
        torch.Size([1, 4, 5])
    """

    def forward(self, input: Tensor):
        return F.max_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )  # fmt: skip


class MaxPool2d(_MaxPoolNd):
    """The maximum of each window of an image: see :func:`F.max_pool2d <glasstorch.nn.functional.max_pool2d>`.

    Args:
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit ``-inf`` on every side (at most half the window). Default: 0.
        dilation: the step between a window's elements. Default: 1.
        return_indices: also return where each maximum is (its flat position
            in the ``H x W`` plane). Default: False.
        ceil_mode: round the output size up, keeping last partial windows.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C, OH, OW)``,
          ``OH = (H + 2 * padding - dilation * (KH - 1) - 1) // stride + 1`` (OW alike).

    Examples::

        >>> pool = nn.MaxPool2d(2)
        >>> pool(torch.randn(8, 16, 28, 28)).shape
        torch.Size([8, 16, 14, 14])
    """

    def forward(self, input: Tensor):
        return F.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )  # fmt: skip


class _AvgPoolNd(Module):
    """Arguments and repr shared by the average-pooling layers."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """The mean of each window of an image: see :func:`F.avg_pool2d <glasstorch.nn.functional.avg_pool2d>`.

    Args:
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on every side (at most half the window). Default: 0.
        ceil_mode: round the output size up. Default: False.
        count_include_pad: count the padding zeros in each window's divisor. Default: True.
        divisor_override: divide every window's sum by this instead. Default: None.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C, OH, OW)``, ``OH = (H + 2 * padding - KH) // stride + 1``.

    Examples::

        >>> nn.AvgPool2d(2)(torch.randn(1, 3, 8, 8)).shape
        torch.Size([1, 3, 4, 4])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


class _AdaptivePool(Module):
    """What the adaptive pooling layers share: the output size and its repr."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to a fixed output size, whatever the input's:
    see :func:`F.adaptive_avg_pool2d <glasstorch.nn.functional.adaptive_avg_pool2d>`.

    Args:
        output_size: ``OH`` (square) or ``(OH, OW)``; None keeps that input size.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C, OH, OW)``.

    Examples::

        >>> gap = nn.AdaptiveAvgPool2d((1, 1))   # global average pooling
        >>> gap(torch.randn(4, 64, 8, 8)).shape
        torch.Size([4, 64, 1, 1])
    """

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AvgPool1d(_AvgPoolNd):
    """The mean of each window of a sequence: see :func:`F.avg_pool1d <glasstorch.nn.functional.avg_pool1d>`.

    Args:
        kernel_size: the window's length.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on both sides (at most half the window). Default: 0.
        ceil_mode: round the output length up. Default: False.
        count_include_pad: count the padding zeros in each window's divisor. Default: True.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: ``(N, C, L_out)``, ``L_out = (L + 2 * padding - kernel_size) // stride + 1``.

    Examples::

        >>> nn.AvgPool1d(3, stride=2)(torch.randn(1, 4, 11)).shape
        torch.Size([1, 4, 5])
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        stride = stride if stride is not None else kernel_size
        super().__init__(
            _one(kernel_size), _one(stride), _one(padding), ceil_mode, count_include_pad
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip


def _one(value) -> tuple[int]:
    """An int (or a one-element sequence) as a one-element tuple, as PyTorch keeps it."""
    return (value,) if isinstance(value, int) else tuple(value)


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling of a sequence to a fixed length, whatever the input's:
    see :func:`F.adaptive_avg_pool1d <glasstorch.nn.functional.adaptive_avg_pool1d>`.

    Args:
        output_size: the output length ``L_out``.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> nn.AdaptiveAvgPool1d(1)(torch.randn(2, 8, 13)).shape
        torch.Size([2, 8, 1])
    """

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Max pooling of a sequence to a fixed length, whatever the input's:
    see :func:`F.adaptive_max_pool1d <glasstorch.nn.functional.adaptive_max_pool1d>`.

    Args:
        output_size: the output length ``L_out``.
        return_indices: also return each maximum's position. Default: False.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> nn.AdaptiveMaxPool1d(1)(torch.randn(2, 8, 13)).shape
        torch.Size([2, 8, 1])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max pooling of an image to a fixed size, whatever the input's:
    see :func:`F.adaptive_max_pool2d <glasstorch.nn.functional.adaptive_max_pool2d>`.

    Args:
        output_size: ``OH`` (square) or ``(OH, OW)``; None keeps that input size.
        return_indices: also return each maximum's flat position in its plane. Default: False.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C, OH, OW)``.

    Examples::

        >>> nn.AdaptiveMaxPool2d((2, 3))(torch.randn(1, 4, 9, 9)).shape
        torch.Size([1, 4, 2, 3])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """The maximum of each box of a volume: see :func:`F.max_pool3d <glasstorch.nn.functional.max_pool3d>`.

    Args:
        kernel_size: the box, an int or ``(kd, kh, kw)``.
        stride: the step between boxes. Default: ``kernel_size``.
        padding: implicit ``-inf`` on every side (at most half the box). Default: 0.
        dilation: the step between a box's elements. Default: 1.
        return_indices: not supported in glasstorch.
        ceil_mode: round the output size up, keeping last partial boxes.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: ``(N, C, OD, OH, OW)``,
          ``OD = (D + 2 * padding - dilation * (kd - 1) - 1) // stride + 1`` (OH, OW alike).

    Examples::

        >>> nn.MaxPool3d(2)(torch.randn(1, 3, 4, 8, 8)).shape
        torch.Size([1, 3, 2, 4, 4])
    """

    def forward(self, input: Tensor):
        return F.max_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )  # fmt: skip


class AvgPool3d(_AvgPoolNd):
    """The mean of each box of a volume: see :func:`F.avg_pool3d <glasstorch.nn.functional.avg_pool3d>`.

    Args:
        kernel_size: the box, an int or ``(kd, kh, kw)``.
        stride: the step between boxes. Default: ``kernel_size``.
        padding: implicit zeros on every side (at most half the box). Default: 0.
        ceil_mode: round the output size up. Default: False.
        count_include_pad: count the padding zeros in each box's divisor. Default: True.
        divisor_override: not supported in glasstorch.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: ``(N, C, OD, OH, OW)``, ``OD = (D + 2 * padding - kd) // stride + 1``.

    Examples::

        >>> nn.AvgPool3d(2)(torch.randn(1, 3, 4, 8, 8)).shape
        torch.Size([1, 3, 2, 4, 4])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


def _ntuple(value, n: int) -> tuple:
    return (value,) * n if isinstance(value, int) else tuple(value)


class _MaxUnpoolNd(Module):
    """Arguments and repr shared by the max-unpooling layers (kept as tuples, as PyTorch)."""

    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._dims)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._dims)
        self.padding = _ntuple(padding, self._dims)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool1d`: see :func:`F.max_unpool1d <glasstorch.nn.functional.max_unpool1d>`.

    Args:
        kernel_size, stride, padding: those of the pooling.

    Shape:
        - Input: ``(N, C, L)`` and the pooling's indices; Output:
          ``(N, C, (L - 1) * stride - 2 * padding + kernel_size)`` or ``output_size``.

    Examples::

        >>> pool, unpool = nn.MaxPool1d(2, return_indices=True), nn.MaxUnpool1d(2)
        >>> unpool(*pool(torch.tensor([[[1.0, 2, 3, 4, 5, 6, 7, 8]]])))
        tensor([[[0., 2., 0., 4., 0., 6., 0., 8.]]])
    """

    _dims = 1

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return F.max_unpool1d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool2d`: each maximum back in place, zeros elsewhere.

    See :func:`F.max_unpool2d <glasstorch.nn.functional.max_unpool2d>`.

    Args:
        kernel_size, stride, padding: those of the pooling.

    Shape:
        - Input: ``(N, C, H, W)`` and the pooling's indices; Output:
          ``(N, C, OH, OW)``, ``OH = (H - 1) * stride - 2 * padding + KH``, or
          ``output_size`` given to ``forward``.

    Examples::

        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> output, indices = pool(torch.randn(1, 1, 4, 4))
        >>> unpool(output, indices).shape
        torch.Size([1, 1, 4, 4])
    """

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return F.max_unpool2d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class _LPPoolNd(Module):
    """Arguments and repr shared by the power-average pooling layers."""

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling of sequences: see :func:`F.lp_pool1d <glasstorch.nn.functional.lp_pool1d>`.

    Args:
        norm_type: the power ``p``.
        kernel_size: the window.
        stride: the step; default ``kernel_size``.
        ceil_mode: round the output size up.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``; Output: ``(N, C, OL)``.

    Examples::

        >>> nn.LPPool1d(2, 3, stride=2)(torch.randn(20, 16, 50)).shape
        torch.Size([20, 16, 24])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``.

    See :func:`F.lp_pool2d <glasstorch.nn.functional.lp_pool2d>`.

    Args:
        norm_type: the power ``p``.
        kernel_size: the window, an int or ``(h, w)``.
        stride: the step; default ``kernel_size``.
        ceil_mode: round the output size up.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``; Output: ``(N, C, OH, OW)``.

    Examples::

        >>> nn.LPPool2d(2, 3, stride=2)(torch.randn(20, 16, 50, 32)).shape
        torch.Size([20, 16, 24, 15])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling of a volume to a fixed output size, whatever the input's:
    see :func:`F.adaptive_avg_pool3d <glasstorch.nn.functional.adaptive_avg_pool3d>`.

    Args:
        output_size: ``O`` (a cube) or ``(OD, OH, OW)``; None keeps that input size.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: ``(N, C, OD, OH, OW)``.

    Examples::

        >>> nn.AdaptiveAvgPool3d((1, 1, 1))(torch.randn(2, 64, 4, 7, 7)).shape
        torch.Size([2, 64, 1, 1, 1])
    """

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    """Max pooling of a volume to a fixed output size, whatever the input's:
    see :func:`F.adaptive_max_pool3d <glasstorch.nn.functional.adaptive_max_pool3d>`.

    Args:
        output_size: ``O`` (a cube) or ``(OD, OH, OW)``; None keeps that input size.
        return_indices: also return each maximum's flat position in its volume. Default: False.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: ``(N, C, OD, OH, OW)``.

    Examples::

        >>> nn.AdaptiveMaxPool3d((1, 2, 2))(torch.randn(1, 4, 5, 8, 8)).shape
        torch.Size([1, 4, 1, 2, 2])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)
