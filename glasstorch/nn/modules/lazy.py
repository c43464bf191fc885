"""Lazy layers: ``LazyLinear``, ``LazyConv1d``, ``LazyConv2d``, ``LazyBatchNorm1d/2d``.

A lazy layer does not know its input size when it is built (d2l.ai builds every
model this way): its weight and bias are empty parameters until the first call,
which reads the size off the input, builds the ordinary layer
(:class:`Linear`, :class:`Conv2d`, ...) with it, moves that layer's freshly
initialised values into the *same* parameter objects (so an optimizer made
before the first call updates them), and then becomes that layer: its class
changes to the ordinary one, as in PyTorch.
"""

from __future__ import annotations

from glasstorch.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from glasstorch.nn.modules.conv import Conv1d, Conv2d
from glasstorch.nn.modules.linear import Linear
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.tensor import Tensor

__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyLinear",
]


class _LazyModule(Module):
    """The shared machinery; a subclass names ``cls_to_become`` and how to read the size."""

    cls_to_become: type = Module
    #: Parameters the layer will have (``bias`` only when asked for).
    _lazy_parameters = ("weight", "bias")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        self._lazy_args = (args, kwargs)
        for name in self._lazy_parameters:
            wanted = kwargs.get("bias" if name == "bias" else name, True)
            if name == "bias" and "affine" in kwargs:
                wanted = kwargs["affine"]
            if name == "weight" and "affine" in kwargs:
                wanted = kwargs["affine"]
            if wanted:
                setattr(self, name, Parameter(empty(0)))
            else:
                self.register_parameter(name, None)

    def has_uninitialized_params(self) -> bool:
        """Whether the first call, which sizes the parameters, is still to come."""
        return True

    def _input_size(self, input: Tensor) -> int:
        """The size the ordinary layer needs, read off the first input (channels: dim 1)."""
        return input.shape[1] if input.dim() > 1 else input.shape[0]

    def initialize_parameters(self, input: Tensor) -> None:
        """Build the ordinary layer for ``input`` and take over its state and class."""
        args, kwargs = self._lazy_args
        real = self.cls_to_become(self._input_size(input), *args, **kwargs)
        for name, value in real._parameters.items():
            mine = self._parameters.get(name)
            if mine is None or value is None:
                self._parameters[name] = value
            else:
                mine.data = value.data  # the same Parameter object keeps its place
        for name, value in real._buffers.items():
            self._buffers[name] = value
        for name, value in real.__dict__.items():
            if name not in ("_parameters", "_buffers", "_modules", "training"):
                object.__setattr__(self, name, value)
        del self._lazy_args
        self.__class__ = self.cls_to_become

    def forward(self, input: Tensor, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)


class LazyLinear(_LazyModule):
    """A :class:`Linear` whose ``in_features`` is read from the first input's last dimension.

    Args:
        out_features: size of each output.
        bias: learn an additive bias. Default: True.

    Example::

        >>> layer = nn.LazyLinear(3)
        >>> layer(torch.randn(2, 5)).shape, layer
        (torch.Size([2, 3]), Linear(in_features=5, out_features=3, bias=True))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(out_features, bias=bias, device=device, dtype=dtype)
        self.in_features, self.out_features = 0, out_features

    def _input_size(self, input: Tensor) -> int:
        return input.shape[-1]

    def extra_repr(self) -> str:
        return f"in_features=0, out_features={self.out_features}, bias={self.bias is not None}"


class LazyConv1d(_LazyModule):
    """A :class:`Conv1d` whose ``in_channels`` is read from the first input.

    Args:
        out_channels: as for :class:`Conv1d`, and so are the other arguments
            (kernel_size, stride, padding, dilation, groups, bias, padding_mode).
    """

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, *args, **kwargs) -> None:
        super().__init__(out_channels, kernel_size, *args, **kwargs)

    def _input_size(self, input: Tensor) -> int:
        return input.shape[1] if input.dim() == 3 else input.shape[0]


class LazyConv2d(_LazyModule):
    """A :class:`Conv2d` whose ``in_channels`` is read from the first input.

    Args:
        out_channels: as for :class:`Conv2d`, and so are the other arguments
            (kernel_size, stride, padding, dilation, groups, bias, padding_mode).

    Example::

        >>> conv = nn.LazyConv2d(6, kernel_size=5, padding=2)
        >>> conv(torch.randn(1, 3, 28, 28)).shape
        torch.Size([1, 6, 28, 28])
    """

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, *args, **kwargs) -> None:
        super().__init__(out_channels, kernel_size, *args, **kwargs)

    def _input_size(self, input: Tensor) -> int:
        return input.shape[1] if input.dim() == 4 else input.shape[0]


class LazyBatchNorm1d(_LazyModule):
    """A :class:`BatchNorm1d` whose ``num_features`` is read from the first input.

    Args:
        eps, momentum, affine, track_running_stats: as for :class:`BatchNorm1d`.
    """

    cls_to_become = BatchNorm1d

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)


class LazyBatchNorm2d(_LazyModule):
    """A :class:`BatchNorm2d` whose ``num_features`` is read from the first input.

    Args:
        eps, momentum, affine, track_running_stats: as for :class:`BatchNorm2d`.
    """

    cls_to_become = BatchNorm2d

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
