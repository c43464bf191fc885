"""``BatchNorm1d``: normalise each channel with batch statistics."""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty, ones, tensor, zeros
from glasstorch.tensor import Tensor


class _NormBase(Module):
    """What the batch and instance norms share: the learned ``weight`` and
    ``bias``, the running statistics, how they are reset, and the repr.

    ``bias=False`` (keyword only, as in PyTorch) keeps an affine ``weight`` but
    no ``bias``."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer(
                "num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device)
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean to zeros, running variance to ones, the batch count to 0."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_NormBase):
    """Normalise each channel over the batch: ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training mode the mean and (biased) variance come from the current
    batch, and the running statistics are updated as
    ``running = (1 - momentum) * running + momentum * batch_statistic``, using
    the *unbiased* batch variance. In evaluation mode the running statistics
    are used instead, so one sample gives the same output whatever its batch.

    Args:
        num_features: the number of channels ``C``.
        eps: added to the variance for stability. Default: 1e-5.
        momentum: weight of the newest batch in the running statistics.
            ``None`` gives a plain cumulative average. Default: 0.1.
        affine: learn ``weight`` (ones) and ``bias`` (zeros). Default: ``True``.
        track_running_stats: keep ``running_mean`` (zeros), ``running_var`` (ones)
            and ``num_batches_tracked`` (an int64 count) as buffers; without
            them batch statistics are used in evaluation mode too. Default: ``True``.

    Shape:
        - Input: ``(N, C)`` or ``(N, C, L)``; Output: the same.

    Example::

        >>> bn = nn.BatchNorm1d(3)
        >>> out = bn(torch.randn(8, 3))       # training: batch statistics
        >>> bn.eval(); out = bn(torch.randn(1, 3))   # evaluation: running statistics
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or self.running_mean is None
        keep_running = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep_running else None,
            self.running_var if keep_running else None,
            self.weight,
            self.bias,
            use_batch_stats,
            momentum,
            self.eps,
        )


class BatchNorm2d(BatchNorm1d):
    """Normalise each channel of a batch of images over the batch and its positions.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias``, per channel, with the
    statistics taken over ``N``, ``H`` and ``W``. Training and evaluation
    behave as in :class:`BatchNorm1d` (batch statistics and a running average
    of them with ``momentum``, or the running statistics). It runs through the
    fused ``batch_norm_*`` kernels.

    Args:
        num_features: the number of channels ``C``.
        eps: added to the variance for stability. Default: 1e-5.
        momentum: weight of the newest batch in the running statistics;
            ``None`` gives a cumulative average. Default: 0.1.
        affine: learn ``weight`` (ones) and ``bias`` (zeros). Default: ``True``.
        track_running_stats: keep ``running_mean``, ``running_var`` and
            ``num_batches_tracked``. Default: ``True``.

    Shape:
        - Input: ``(N, C, H, W)``; Output: the same.

    Examples::

        >>> bn = nn.BatchNorm2d(16)
        >>> bn(torch.randn(8, 16, 32, 32)).shape
        torch.Size([8, 16, 32, 32])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(BatchNorm1d):
    """Normalise each channel of a batch of volumes over the batch and its positions.

    As :class:`BatchNorm2d`, for ``(N, C, D, H, W)`` inputs.

    Args:
        num_features: the number of channels ``C``.
        eps: added to the variance for stability. Default: 1e-5.
        momentum: weight of the newest batch in the running statistics;
            ``None`` gives a cumulative average. Default: 0.1.
        affine: learn ``weight`` and ``bias``. Default: ``True``.
        track_running_stats: keep running statistics. Default: ``True``.

    Shape:
        - Input: ``(N, C, D, H, W)``; Output: the same.

    Examples::

        >>> nn.BatchNorm3d(16)(torch.randn(2, 16, 3, 4, 4)).shape
        torch.Size([2, 16, 3, 4, 4])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
