"""``LayerNorm``: normalise each sample over its last dimensions."""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.tensor import Tensor


class LayerNorm(Module):
    """``y = (x - mean) / sqrt(var + eps) * weight + bias`` over the last dimensions.

    The mean and (biased) variance are taken over the trailing
    ``len(normalized_shape)`` dimensions of each sample, in training and in
    evaluation alike.

    Args:
        normalized_shape: the trailing shape to normalise over (an int for one dimension).
        eps: added to the variance for stability. Default: 1e-5.
        elementwise_affine: learn ``weight`` (ones) and ``bias`` (zeros) of
            shape ``normalized_shape``. Default: ``True``.
        bias: learn the bias (when ``elementwise_affine``). Default: ``True``.

    Shape:
        - Input: ``(*, *normalized_shape)``; Output: the same.

    Example::

        >>> norm = nn.LayerNorm(10)
        >>> norm(torch.randn(4, 10)).mean(-1)   # about 0 for every row
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalise each sample over groups of channels: see :func:`F.group_norm <glasstorch.nn.functional.group_norm>`.

    The ``C`` channels are split into ``num_groups`` groups; each sample's
    group is normalised by its own mean and biased variance (so the result
    does not depend on the batch), then each channel is scaled and shifted.

    Args:
        num_groups: number of groups; must divide ``num_channels``.
        num_channels: channels ``C`` of the input.
        eps: added to the variance for stability. Default: 1e-5.
        affine: learn a per-channel ``weight`` (ones) and ``bias`` (zeros). Default: True.
        bias: with ``affine``, learn the bias too. Default: True.

    Shape:
        - Input: ``(N, C, *)``; Output: the same.

    Examples::

        >>> gn = nn.GroupNorm(4, 16)
        >>> gn(torch.randn(2, 16, 8, 8)).shape
        torch.Size([2, 16, 8, 8])
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(empty(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = Parameter(empty(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The weight to ones and the bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )
