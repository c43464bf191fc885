"""``Linear``, ``Bilinear``, ``Identity``, ``Flatten`` and ``Unflatten``."""

from __future__ import annotations

import math

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.tensor import Tensor


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. for a removed layer).

    Any constructor arguments are accepted and ignored.

    Shape:
        - Input: ``(*)``; Output: the same.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """The affine map ``y = x @ weight.T + bias``.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: ``True``.
        dtype: dtype of the parameters (the default float dtype if omitted).

    Shape:
        - Input: ``(*, in_features)``.
        - Output: ``(*, out_features)``.

    Attributes:
        weight: ``(out_features, in_features)``, initialised uniformly on
            ``[-k, k]`` with ``k = 1 / sqrt(in_features)``
            (``kaiming_uniform_(a=sqrt(5))``).
        bias: ``(out_features,)``, uniform on the same ``[-k, k]``.

    Example::

        >>> layer = nn.Linear(20, 30)
        >>> layer(torch.randn(128, 20)).shape
        torch.Size([128, 30])
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the default initial values again."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flattens dimensions ``start_dim`` to ``end_dim`` into one.

    Args:
        start_dim: first dimension to flatten. Default: 1 (keep the batch).
        end_dim: last dimension to flatten. Default: -1.

    Shape:
        - Input: ``(*, S_start, ..., S_end, *)``.
        - Output: ``(*, S_start * ... * S_end, *)``.

    Example::

        >>> nn.Flatten()(torch.zeros(32, 1, 5, 5)).shape
        torch.Size([32, 25])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dimension ``dim`` into the shape ``unflattened_size``.

    Args:
        dim: the dimension to split.
        unflattened_size: its new shape; one entry may be -1.

    Shape:
        - Input: ``(*, S_dim, *)``.
        - Output: ``(*, U_1, ..., U_n, *)`` with ``U_1 * ... * U_n = S_dim``.

    Example::

        >>> nn.Unflatten(1, (2, 5))(torch.zeros(2, 10)).shape
        torch.Size([2, 2, 5])
    """

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """The bilinear map ``y = x1^T A x2 + b``: see :func:`F.bilinear <glasstorch.nn.functional.bilinear>`.

    Args:
        in1_features: size of each first input sample.
        in2_features: size of each second input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default: ``True``.

    Shape:
        - Input1: ``(*, in1_features)``; Input2: ``(*, in2_features)``.
        - Output: ``(*, out_features)``.

    Attributes:
        weight: ``(out_features, in1_features, in2_features)``, uniform on
            ``[-k, k]`` with ``k = 1 / sqrt(in1_features)``.
        bias: ``(out_features,)``, uniform on the same ``[-k, k]``.

    Examples::

        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(torch.randn(128, 20), torch.randn(128, 30)).shape
        torch.Size([128, 40])
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        shape = (out_features, in1_features, in2_features)
        self.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight and bias uniform on ``[-k, k]``, ``k = 1 / sqrt(in1_features)``."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
