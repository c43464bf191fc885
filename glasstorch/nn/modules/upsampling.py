"""Resampling layers: ``Upsample``, and ``Unfold`` / ``Fold`` (im2col and col2im)."""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor


class Upsample(Module):
    """Resize images or sequences: see :func:`F.interpolate <glasstorch.nn.functional.interpolate>`.

    Args:
        size: the output's spatial size (an int or a tuple), or
        scale_factor: a multiplier of the input's size.
        mode: ``"nearest"``, ``"linear"`` (3-D input) or ``"bilinear"`` (4-D input).
        align_corners: for the linear modes, map the corner pixels' centres
            onto each other. Default: None (False).
        recompute_scale_factor: recompute the scale from the output size.

    Shape:
        - Input: ``(N, C, *in_size)``; Output: ``(N, C, *out_size)``.

    Examples::

        >>> nn.Upsample(scale_factor=2, mode="bilinear")(torch.randn(1, 3, 4, 4)).shape
        torch.Size([1, 3, 8, 8])
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )  # fmt: skip

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            text = f"scale_factor={self.scale_factor!r}"
        else:
            text = f"size={self.size!r}"
        return text + f", mode={self.mode!r}"


class Unfold(Module):
    """Sliding blocks of an image as columns: see :func:`F.unfold <glasstorch.nn.functional.unfold>`.

    Args:
        kernel_size, dilation, padding, stride: as in :class:`Conv2d`.

    Shape:
        - Input: ``(N, C, H, W)``; Output: ``(N, C * KH * KW, L)``, one column
          per block.

    Examples::

        >>> nn.Unfold(kernel_size=2)(torch.randn(1, 3, 4, 4)).shape
        torch.Size([1, 12, 9])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Columns of sliding blocks summed back into images: see :func:`F.fold <glasstorch.nn.functional.fold>`.

    Args:
        output_size: the image's ``(H, W)``.
        kernel_size, dilation, padding, stride: as in :class:`Unfold`.

    Shape:
        - Input: ``(N, C * KH * KW, L)``; Output: ``(N, C, H, W)``.

    Examples::

        >>> nn.Fold((4, 4), 2)(torch.randn(1, 12, 9)).shape
        torch.Size([1, 3, 4, 4])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of images: :class:`Upsample` with ``mode="nearest"``.

    Args:
        size: the output's ``(H, W)`` (or an int), or
        scale_factor: a multiplier of the input's size.

    Shape:
        - Input: ``(N, C, H, W)``; Output: ``(N, C, OH, OW)``.

    Examples::

        >>> nn.UpsamplingNearest2d(scale_factor=2)(torch.randn(1, 1, 2, 2)).shape
        torch.Size([1, 1, 4, 4])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of images with ``align_corners=True``, as PyTorch's.

    :class:`Upsample` with ``mode="bilinear"`` and ``align_corners=True``:
    the corner pixels' centres map onto each other.

    Args:
        size: the output's ``(H, W)`` (or an int), or
        scale_factor: a multiplier of the input's size.

    Shape:
        - Input: ``(N, C, H, W)``; Output: ``(N, C, OH, OW)``.

    Examples::

        >>> nn.UpsamplingBilinear2d(scale_factor=2)(torch.randn(1, 1, 2, 2)).shape
        torch.Size([1, 1, 4, 4])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
