"""Activation modules: each wraps one function of :mod:`glasstorch.nn.functional`."""

from __future__ import annotations

from glasstorch.nn import functional as F
from glasstorch.nn.modules.module import Module
from glasstorch.tensor import Tensor


class ReLU(Module):
    """``max(x, 0)``, elementwise.

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.ReLU()(torch.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Args:
        negative_slope: slope for negative inputs. Default: 0.01.
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.LeakyReLU(0.1)(torch.tensor([-1.0, 2.0]))
        tensor([-0.1000,  2.0000])
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{suffix}"


class GELU(Module):
    """Gaussian error linear unit: ``x * Phi(x)``, Phi the standard normal CDF.

    Args:
        approximate: ``'none'`` for the exact form (through erf) or ``'tanh'``
            for ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.GELU()(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.8413])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)`` (also called swish).

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.SiLU()(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.7311])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    Args:
        alpha: the limit for very negative inputs is ``-alpha``. Default: 1.0.
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.ELU()(torch.tensor([-1.0, 2.0]))
        tensor([-0.6321,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{suffix}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``: a smooth ReLU.

    Args:
        beta: sharpness. Default: 1.0.
        threshold: above ``beta * x > threshold`` the output is ``x`` itself
            (the difference is below float precision). Default: 20.0.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Softplus()(torch.tensor([0.0]))
        tensor([0.6931])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    """Hyperbolic tangent, elementwise.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Tanh()(torch.tensor([0.0]))
        tensor([0.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class Sigmoid(Module):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, elementwise.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Sigmoid()(torch.tensor([0.0]))
        tensor([0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed without overflow.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.LogSigmoid()(torch.tensor([0.0]))
        tensor([-0.6931])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``: each slice becomes a probability distribution.

    Args:
        dim: the dimension that sums to 1. ``None`` picks one the deprecated
            way (with a warning): 0 for 0-, 1- and 3-D inputs, else 1.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Softmax(dim=1)(torch.zeros(2, 4))
        tensor([[0.2500, 0.2500, 0.2500, 0.2500],
                [0.2500, 0.2500, 0.2500, 0.2500]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably (pair it with ``NLLLoss``).

    Args:
        dim: the dimension to normalise over (see :class:`Softmax`).

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.LogSoftmax(dim=1)(torch.zeros(1, 2))
        tensor([[-0.6931, -0.6931]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Mish(Module):
    """``x * tanh(softplus(x))``: see :func:`F.mish <glasstorch.nn.functional.mish>`.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Mish()(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.8651])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardtanh(Module):
    """``input`` clamped to ``[min_val, max_val]``.

    Args:
        min_val, max_val: the bounds. Default: -1 and 1.
        inplace: clamp the input itself.

    Shape:
        - Input: ``(*)``; Output: the same.

    Example::

        >>> nn.Hardtanh()(torch.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace}"


class PReLU(Module):
    """``x`` where positive, ``a * x`` elsewhere, with ``a`` learned.

    Args:
        num_parameters: 1 (one ``a`` shared) or the number of channels (dim 1).
        init: the starting value of ``a``. Default: 0.25.

    Attributes:
        weight: ``(num_parameters,)``.

    Shape:
        - Input: ``(N, C, *)`` or ``(*)``; Output: the same.

    Example::

        >>> nn.PReLU()(torch.tensor([-2.0, 3.0]))
        tensor([-0.5000,  3.0000], grad_fn=<WhereBackward0>)
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        from glasstorch.nn.parameter import Parameter
        from glasstorch.ops.creation import full

        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class CosineSimilarity(Module):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``: see
    :func:`F.cosine_similarity <glasstorch.nn.functional.cosine_similarity>`.

    Args:
        dim: the dimension compared. Default: 1.
        eps: the smallest norm product divided by. Default: 1e-8.

    Example::

        >>> nn.CosineSimilarity(dim=0)(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]))
        tensor(0.7071)
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class _InplaceActivation(Module):
    """An activation with only ``inplace`` as option: see the matching ``F`` function."""

    _function = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU6(_InplaceActivation):
    """``min(max(0, x), 6)``: see :func:`F.relu6 <glasstorch.nn.functional.relu6>`.

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.ReLU6()(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """

    _function = staticmethod(F.relu6)


class Hardsigmoid(_InplaceActivation):
    """``relu6(x + 3) / 6``: see :func:`F.hardsigmoid <glasstorch.nn.functional.hardsigmoid>`.

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Hardsigmoid()(torch.tensor([-4.0, 0.0, 4.0]))
        tensor([0.0000, 0.5000, 1.0000])
    """

    _function = staticmethod(F.hardsigmoid)


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``: see :func:`F.hardswish <glasstorch.nn.functional.hardswish>`.

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Hardswish()(torch.tensor([-4.0, 1.0, 4.0]))
        tensor([-0.0000,  0.6667,  4.0000])
    """

    _function = staticmethod(F.hardswish)


class SELU(_InplaceActivation):
    """Scaled ELU with self-normalising constants: see :func:`F.selu <glasstorch.nn.functional.selu>`.

    Args:
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.SELU()(torch.tensor([-1.0, 1.0]))
        tensor([-1.1113,  1.0507])
    """

    _function = staticmethod(F.selu)


class CELU(Module):
    """``x`` where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere:
    see :func:`F.celu <glasstorch.nn.functional.celu>`.

    Args:
        alpha: the limit for very negative inputs is ``-alpha``. Default: 1.0.
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.CELU(alpha=2.0)(torch.tensor([-1.0, 1.0]))
        tensor([-0.7869,  1.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{suffix}"


class Softsign(Module):
    """``x / (1 + |x|)``: see :func:`F.softsign <glasstorch.nn.functional.softsign>`.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Softsign()(torch.tensor([-1.0, 3.0]))
        tensor([-0.5000,  0.7500])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``: see :func:`F.tanhshrink <glasstorch.nn.functional.tanhshrink>`.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Tanhshrink()(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Softmin(Module):
    """``softmax(-x)`` along ``dim``: see :func:`F.softmin <glasstorch.nn.functional.softmin>`.

    Args:
        dim: the dimension that sums to 1.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Softmin(dim=0)(torch.tensor([1.0, 2.0]))
        tensor([0.7311, 0.2689])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(Module):
    """Gated linear unit: see :func:`F.glu <glasstorch.nn.functional.glu>`.

    Args:
        dim: the dimension split in halves. Default: -1.

    Shape:
        - Input: ``(*, 2N, *)``; Output: ``(*, N, *)``.

    Examples::

        >>> nn.GLU()(torch.randn(4, 6)).shape
        torch.Size([4, 3])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0: see :func:`F.hardshrink <glasstorch.nn.functional.hardshrink>`.

    Args:
        lambd: the threshold. Default: 0.5.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Hardshrink()(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x`` moved ``lambd`` toward 0, and 0 within ``lambd`` of it:
    see :func:`F.softshrink <glasstorch.nn.functional.softshrink>`.

    Args:
        lambd: the threshold, at least 0. Default: 0.5.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Softshrink()(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-0.5000,  0.0000,  0.2000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``: see :func:`F.threshold <glasstorch.nn.functional.threshold>`.

    Args:
        threshold: the threshold.
        value: what replaces the values at or below it.
        inplace: overwrite the input. Default: ``False``.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.Threshold(0.1, 20.0)(torch.tensor([0.05, 0.5]))
        tensor([20.0000,  0.5000])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        suffix = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{suffix}"


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension:
    see :func:`F.pairwise_distance <glasstorch.nn.functional.pairwise_distance>`.

    Args:
        p: the norm. Default: 2.
        eps: added to the difference. Default: 1e-6.
        keepdim: keep the reduced dimension. Default: False.

    Shape:
        - Input1, Input2: ``(N, D)`` or ``(D)``; Output: ``(N)`` or ``()``.

    Examples::

        >>> nn.PairwiseDistance()(torch.zeros(2, 3), torch.ones(2, 3)).shape
        torch.Size([2])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Softmax2d(Module):
    """Softmax over the channels at each position of an image.

    ``softmax(input, dim=-3)``: the channels of each pixel sum to 1.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``; Output: the same.

    Examples::

        >>> nn.Softmax2d()(torch.randn(2, 3, 12, 13)).sum(1)[0, 0, 0]
        tensor(1.)
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead"
            )
        return F.softmax(input, -3)


class RReLU(Module):
    """Randomised leaky ReLU: random negative slopes in training, their mean in evaluation.

    ``x`` where positive, ``a * x`` elsewhere; in training each element draws
    ``a`` from ``U(lower, upper)`` (glasstorch's generator), in evaluation
    ``a = (lower + upper) / 2``. See :func:`F.rrelu <glasstorch.nn.functional.rrelu>`.

    Args:
        lower: the smallest slope. Default: 1/8.
        upper: the largest slope. Default: 1/3.
        inplace: overwrite the input instead of allocating the output.

    Shape:
        - Input: ``(*)``; Output: the same.

    Examples::

        >>> nn.RReLU(0.1, 0.3)(torch.randn(2)).shape
        torch.Size([2])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"
