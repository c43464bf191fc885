"""``Dropout``: random zeroing during training."""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor


class Dropout(Module):
    """During training, zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    The scaling keeps each element's expected value, so in evaluation mode
    (``model.eval()``) the layer simply returns its input. The mask is drawn
    from glasstorch's Philox generator (``torch.manual_seed`` repeats it).

    Args:
        p: probability of zeroing an element. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> drop = nn.Dropout(p=0.2)
        >>> drop(torch.ones(2, 5))     # some entries 0, the rest 1.25
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Module):
    """During training, zero whole channels with probability ``p``, scaling the rest by ``1/(1-p)``.

    Neighbouring pixels of a feature map are strongly correlated, so zeroing
    single elements barely regularises a convolutional layer; zeroing whole
    channels does. In evaluation mode the layer returns its input.

    Args:
        p: probability of zeroing a channel. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``; Output: the same.

    Examples::

        >>> drop = nn.Dropout2d(p=0.2)
        >>> drop(torch.randn(4, 16, 8, 8)).shape
        torch.Size([4, 16, 8, 8])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _DropoutNd(Module):
    """Arguments, their check and the repr shared by the dropout layers."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """During training, zero whole channels of sequences with probability ``p``.

    The kept channels are scaled by ``1/(1-p)``; see :func:`F.dropout1d
    <glasstorch.nn.functional.dropout1d>`. In evaluation mode the layer
    returns its input.

    Args:
        p: probability of zeroing a channel. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``; Output: the same.

    Examples::

        >>> nn.Dropout1d(p=0.2)(torch.randn(20, 16, 32)).shape
        torch.Size([20, 16, 32])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """During training, zero whole channels of volumes with probability ``p``.

    The kept channels are scaled by ``1/(1-p)``; see :func:`F.dropout3d
    <glasstorch.nn.functional.dropout3d>`. In evaluation mode the layer
    returns its input.

    Args:
        p: probability of zeroing a channel. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``; Output: the same.

    Examples::

        >>> nn.Dropout3d(p=0.2)(torch.randn(2, 16, 4, 8, 8)).shape
        torch.Size([2, 16, 4, 8, 8])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance.

    Dropped elements take SELU's negative saturation value and the output is
    rescaled; see :func:`F.alpha_dropout <glasstorch.nn.functional.alpha_dropout>`.
    In evaluation mode the layer returns its input.

    Args:
        p: probability of dropping an element. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.AlphaDropout(p=0.2)(torch.randn(20, 16)).shape
        torch.Size([20, 16])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels: one draw per ``(sample, channel)``.

    See :func:`F.feature_alpha_dropout <glasstorch.nn.functional.feature_alpha_dropout>`.

    Args:
        p: probability of dropping a channel. Default: 0.5.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(N, C, *)``; Output: the same.

    Examples::

        >>> nn.FeatureAlphaDropout(p=0.2)(torch.randn(20, 16, 4, 4)).shape
        torch.Size([20, 16, 4, 4])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
