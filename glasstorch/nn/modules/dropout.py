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
