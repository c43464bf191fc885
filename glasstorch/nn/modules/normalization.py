"""``LayerNorm``, ``GroupNorm`` and the instance normalisations ``InstanceNorm1d/2d/3d``."""

from __future__ import annotations

import warnings

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.batchnorm import _NormBase
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


class _InstanceNorm(_NormBase):
    """What the instance normalisation layers share (``dims`` spatial dimensions)."""

    _dims = 1

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        dims = self._dims
        if input.dim() not in (dims + 1, dims + 2):
            raise ValueError(
                f"expected {dims + 1}D or {dims + 2}D input (got {input.dim()}D input)"
            )
        unbatched = input.dim() == dims + 1
        if unbatched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim=1 to match num_features "
                    f"({self.num_features}), but got: {input.shape[1]}."
                )
            warnings.warn(
                "input's size at dim=1 does not match num_features. You can silence this "
                "warning by not passing in num_features, which is not used because "
                "affine=False",
                UserWarning,
                stacklevel=2,
            )
        out = F.instance_norm(
            input, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, self.momentum, self.eps,
        )  # fmt: skip
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalise each channel of each sequence over its length: see
    :func:`F.instance_norm <glasstorch.nn.functional.instance_norm>`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: how far the running statistics move each step. Default: 0.1.
        affine: learn a per-channel ``weight`` (ones) and ``bias`` (zeros). Default: False.
        track_running_stats: keep running statistics, used in evaluation. Default: False.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``; Output: the same.

    Examples::

        >>> nn.InstanceNorm1d(3)(torch.randn(2, 3, 10)).shape
        torch.Size([2, 3, 10])
    """

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of each image over its pixels (style transfer's normalisation):
    see :func:`F.instance_norm <glasstorch.nn.functional.instance_norm>`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: how far the running statistics move each step. Default: 0.1.
        affine: learn a per-channel ``weight`` (ones) and ``bias`` (zeros). Default: False.
        track_running_stats: keep running statistics, used in evaluation. Default: False.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``; Output: the same.

    Examples::

        >>> nn.InstanceNorm2d(3, affine=True)(torch.randn(2, 3, 8, 8)).shape
        torch.Size([2, 3, 8, 8])
    """

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Normalise each channel of each volume over its voxels: see
    :func:`F.instance_norm <glasstorch.nn.functional.instance_norm>`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance. Default: 1e-5.
        momentum: how far the running statistics move each step. Default: 0.1.
        affine: learn a per-channel ``weight`` (ones) and ``bias`` (zeros). Default: False.
        track_running_stats: keep running statistics, used in evaluation. Default: False.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``; Output: the same.

    Examples::

        >>> nn.InstanceNorm3d(2)(torch.randn(1, 2, 3, 4, 4)).shape
        torch.Size([1, 2, 3, 4, 4])
    """

    _dims = 3


class RMSNorm(Module):
    """``y = x / sqrt(mean(x^2) + eps) * weight`` over the last dimensions (no mean is subtracted):
    see :func:`F.rms_norm <glasstorch.nn.functional.rms_norm>`.

    Args:
        normalized_shape: the trailing shape to normalise over (an int for one dimension).
        eps: added to the mean square; None takes the input dtype's machine epsilon.
        elementwise_affine: learn a ``weight`` (ones) of shape ``normalized_shape``. Default: True.

    Shape:
        - Input: ``(*, *normalized_shape)``; Output: the same.

    Examples::

        >>> nn.RMSNorm(8)(torch.randn(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
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
            self.weight = Parameter(empty(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Normalise each element by the energy of its neighbouring channels (AlexNet's LRN).

    ``b[c] = a[c] / (k + alpha / n * sum(a[c'] ** 2)) ** beta`` over the ``n``
    channels around ``c``: see :func:`F.local_response_norm
    <glasstorch.nn.functional.local_response_norm>`.

    Args:
        size: the number of neighbouring channels ``n``.
        alpha: multiplicative factor. Default: 0.0001.
        beta: exponent. Default: 0.75.
        k: additive factor. Default: 1.

    Shape:
        - Input: ``(N, C, *)``; Output: the same.

    Examples::

        >>> lrn = nn.LocalResponseNorm(2)
        >>> lrn(torch.randn(32, 5, 24, 24)).shape
        torch.Size([32, 5, 24, 24])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
