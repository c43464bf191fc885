"""Padding layers (``ZeroPad2d``, ``ConstantPad1d/2d``, ``ReflectionPad1d/2d``,
``ReplicationPad1d/2d``, ``CircularPad1d/2d``) and ``PixelShuffle``/``PixelUnshuffle``.

Each padding layer is :func:`F.pad <glasstorch.nn.functional.pad>` with a fixed
mode and amount: an int pads every side of the last one (1d) or two (2d)
dimensions by that much; a tuple gives ``(left, right)`` or
``(left, right, top, bottom)``.
"""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "ConstantPad1d",
    "ConstantPad2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
]


class _PadNd(Module):
    """``F.pad(input, padding, mode, value)`` with the padding fixed at construction."""

    mode = "constant"
    dims = 2

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * (2 * self.dims)
        self.padding = tuple(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        if self.mode == "constant" and type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name: str, mode: str, dims: int, doc: str, constant: bool = False):
    if constant:

        def __init__(self, padding, value: float) -> None:
            _PadNd.__init__(self, padding, value)

    else:

        def __init__(self, padding) -> None:
            _PadNd.__init__(self, padding)

    return type(name, (_PadNd,), {"mode": mode, "dims": dims, "__init__": __init__, "__doc__": doc})


_DOC = """Pads the last {dims} dimension{s} of the input {how}: ``F.pad(input, padding{extra})``.

    Args:
        padding: an int (every side) or a {count}-tuple ``{order}``.{value}

    Example::

        >>> nn.{call}(torch.ones(1, 2, 2)).shape
        {shape}
    """


def _doc(name: str, dims: int, how: str, extra: str, value: bool = False) -> str:
    return _DOC.format(
        dims=dims,
        s="s" if dims > 1 else "",
        how=how,
        extra=extra,
        count=2 * dims,
        order="(left, right)" if dims == 1 else "(left, right, top, bottom)",
        value="\n        value: the padding value." if value else "",
        call=f"{name}(1, 0.5)" if value else f"{name}(1)",
        shape="torch.Size([1, 2, 4])" if dims == 1 else "torch.Size([1, 4, 4])",
    )


ZeroPad1d = _pad_class("ZeroPad1d", "constant", 1, _doc("ZeroPad1d", 1, "with zeros", ""))
ZeroPad2d = _pad_class("ZeroPad2d", "constant", 2, _doc("ZeroPad2d", 2, "with zeros", ""))
ConstantPad1d = _pad_class(
    "ConstantPad1d",
    "constant",
    1,
    _doc("ConstantPad1d", 1, "with ``value``", ", value=value", True),
    True,
)
ConstantPad2d = _pad_class(
    "ConstantPad2d",
    "constant",
    2,
    _doc("ConstantPad2d", 2, "with ``value``", ", value=value", True),
    True,
)
ReflectionPad1d = _pad_class(
    "ReflectionPad1d", "reflect", 1, _doc("ReflectionPad1d", 1, "by reflection", ', "reflect"')
)
ReflectionPad2d = _pad_class(
    "ReflectionPad2d", "reflect", 2, _doc("ReflectionPad2d", 2, "by reflection", ', "reflect"')
)
ReplicationPad1d = _pad_class(
    "ReplicationPad1d",
    "replicate",
    1,
    _doc("ReplicationPad1d", 1, "by repeating the edge", ', "replicate"'),
)
ReplicationPad2d = _pad_class(
    "ReplicationPad2d",
    "replicate",
    2,
    _doc("ReplicationPad2d", 2, "by repeating the edge", ', "replicate"'),
)
CircularPad1d = _pad_class(
    "CircularPad1d", "circular", 1, _doc("CircularPad1d", 1, "by wrapping around", ', "circular"')
)
CircularPad2d = _pad_class(
    "CircularPad2d", "circular", 2, _doc("CircularPad2d", 2, "by wrapping around", ', "circular"')
)


class PixelShuffle(Module):
    """Rearrange ``(*, C * r * r, H, W)`` into ``(*, C, H * r, W * r)`` (sub-pixel convolution).

    Args:
        upscale_factor: ``r``.

    Example::

        >>> nn.PixelShuffle(2)(torch.randn(1, 8, 3, 3)).shape
        torch.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """The inverse of :class:`PixelShuffle`: ``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``.

    Args:
        downscale_factor: ``r``.
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (ShuffleNet's channel shuffle).

    See :func:`F.channel_shuffle <glasstorch.nn.functional.channel_shuffle>`.

    Args:
        groups: the number of groups; it divides the channels.

    Shape:
        - Input: ``(N, C, *)``; Output: the same.

    Examples::

        >>> nn.ChannelShuffle(2)(torch.arange(4.0).reshape(1, 4, 1, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
