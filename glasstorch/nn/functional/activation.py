"""Activation functions of ``nn.functional`` (the functions of ``nn.modules.activation``).

Most are compositions of clamps, comparisons and exponentials whose autograd
comes from their parts. Where PyTorch defines its own derivative (a kink or a
threshold: ``LeakyReluBackward0``, ``EluBackward0``, ...), the function is an
:class:`~glasstorch.autograd.Function` with ``forward`` and ``backward`` side by
side. ``gelu`` runs the fused node :class:`glasstorch.nn.fused.activation.Gelu`.

The ``inplace=True`` forms (``leaky_relu_``, ``elu_``, ...) come last. They
overwrite the input with the result, as PyTorch's in-place ops do, computed on
pieces of the input (:func:`~glasstorch.ops.inplace.write_in_pieces`) with the
same formula as the out-of-place form, and record PyTorch's node for the
in-place op:

* the ones whose derivative can be read off the result keep the result, the
  input itself (``LeakyReluBackward1``, ``EluBackward1``, ``CeluBackward1``,
  ``RreluWithNoiseBackward1``); PyTorch refuses their backward for a negative
  slope, where the result no longer tells the sign of the input;
* the others keep a copy of the input's old values, as PyTorch keeps
  ``original_self`` (``SiluBackward0``, ``HardsigmoidBackward0``,
  ``HardswishBackward0``, ``MishBackward0``, ``HardtanhBackward0``,
  ``ThresholdBackward1``).
"""

from __future__ import annotations

import warnings

from glasstorch import _dtype
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn.fused.activation import Gelu
from glasstorch.ops import inplace as inplace_ops
from glasstorch.ops import pointwise
from glasstorch.ops.creation import rand, zeros
from glasstorch.ops.pointwise import Clamp, where
from glasstorch.ops.reduction import log_softmax as _log_softmax
from glasstorch.ops.reduction import softmax as _softmax
from glasstorch.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)``, elementwise."""
    return input.relu_() if inplace else input.relu()  # relu_ writes into input


class LeakyRelu(Function):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    backward_name = "LeakyReluBackward0"

    @staticmethod
    def forward(ctx, x, negative_slope):
        ctx.save_for_backward(x)
        ctx.negative_slope = negative_slope
        return where(x > 0, x, x * negative_slope)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x > 0, grad, grad * ctx.negative_slope), None


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, ``negative_slope * input`` elsewhere."""
    if inplace:  # LeakyReluBackward1, written into input (nn/py)
        return leaky_relu_(input, negative_slope)
    return LeakyRelu.apply(input, negative_slope)


class Elu(Function):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    backward_name = "EluBackward0"

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return where(x > 0, x, x.expm1() * alpha)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x > 0, grad, grad * x.exp() * ctx.alpha), None


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit: ``input`` if positive, else ``alpha * (exp(input) - 1)``."""
    if inplace:  # EluBackward1, written into input (nn/py)
        return elu_(input, alpha)
    return Elu.apply(input, alpha)


class Silu(Function):
    """``x * sigmoid(x)`` (the swish)."""

    backward_name = "SiluBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return grad * s * (1 + x * (1 - s))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)``, elementwise."""
    if inplace:  # SiluBackward0, written into input (nn/py)
        return silu_(input)
    return Silu.apply(input)


class Softplus(Function):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself once ``beta * x > threshold``."""

    backward_name = "SoftplusBackward0"

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.save_for_backward(x)
        ctx.beta, ctx.threshold = beta, threshold
        scaled = x * beta
        return where(scaled > threshold, x, scaled.exp().log1p() / beta)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        scaled = x * ctx.beta
        return where(scaled > ctx.threshold, grad, grad * scaled.sigmoid()), None, None


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """A smooth ReLU: ``log(1 + exp(beta * input)) / beta`` (linear above ``threshold``)."""
    return Softplus.apply(input, beta, threshold)


class LogSigmoid(Function):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``, stable for any ``x``."""

    backward_name = "LogSigmoidBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(max=0) - (-x.abs()).exp().log1p()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-x).sigmoid()


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed without overflow."""
    return LogSigmoid.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent, elementwise."""
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-input))``, elementwise."""
    return input.sigmoid()


def erf(input: Tensor) -> Tensor:
    """The error function, elementwise (integer inputs compute in the default float)."""
    return pointwise.erf(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``input * Phi(input)``.

    Args:
        approximate: ``'none'`` (exact, through :func:`erf`) or ``'tanh'``
            (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``).
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return Gelu.apply(input, approximate)


def _implicit_softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    if dim is None:
        dim = _implicit_softmax_dim(input.dim(), "softmax")
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _implicit_softmax_dim(input.dim(), "log_softmax")
    return _log_softmax(input, dim, dtype=dtype)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    if inplace:  # MishBackward0, written into input (nn/py)
        return mish_(input)
    return input * softplus(input).tanh()


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:  # HardtanhBackward0, written into input (nn/py)
        return hardtanh_(input, min_val, max_val)
    return input.clamp(min_val, max_val)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; a weight per channel (dim 1) or one."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() >= 2 else input.shape[0]
        if weight.numel() != channels:
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = {channels}."
            )
        if input.dim() >= 2:
            weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return where(input >= 0, input, weight * input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(0, x), 6)``.

    Examples::

        >>> F.relu6(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    if inplace:  # HardtanhBackward0, as PyTorch's relu6_ (nn/py)
        return hardtanh_(input, 0.0, 6.0)
    return input.clamp(0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid.

    Examples::

        >>> F.hardsigmoid(torch.tensor([-4.0, 0.0, 4.0]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    if inplace:  # HardsigmoidBackward0, written into input (nn/py)
        return hardsigmoid_(input)
    return (input + 3.0).clamp(0.0, 6.0) / 6.0


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6`` (MobileNetV3's activation).

    Examples::

        >>> F.hardswish(torch.tensor([-4.0, 1.0, 4.0]))
        tensor([-0.0000,  0.6667,  4.0000])
    """
    if inplace:  # HardswishBackward0, written into input (nn/py)
        return hardswish_(input)
    return input * (input + 3.0).clamp(0.0, 6.0) / 6.0


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants
    ``alpha = 1.6733`` and ``scale = 1.0507``.

    Examples::

        >>> F.selu(torch.tensor([-1.0, 1.0]))
        tensor([-1.1113,  1.0507])
    """
    if inplace:  # EluBackward1, as PyTorch's selu_ (nn/py)
        return selu_(input, _SELU_ALPHA, _SELU_SCALE)
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere.

    Examples::

        >>> F.celu(torch.tensor([-1.0, 1.0]), alpha=2.0)
        tensor([-0.7869,  1.0000])
    """
    if inplace:  # CeluBackward1, written into input (nn/py)
        return celu_(input, alpha)
    return elu(input / alpha) * alpha


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``.

    Examples::

        >>> F.softsign(torch.tensor([-1.0, 3.0]))
        tensor([-0.5000,  0.7500])
    """
    return input / (input.abs() + 1)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x)`` along ``dim``: small values get the large probabilities.

    Examples::

        >>> F.softmin(torch.tensor([1.0, 2.0]), dim=0)
        tensor([0.7311, 0.2689])
    """
    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half.

    Shape:
        - Input: ``(*, 2N, *)``; Output: ``(*, N, *)``.

    Examples::

        >>> F.glu(torch.randn(4, 6)).shape
        torch.Size([4, 3])
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        position = dim % input.dim()
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {position} is size {size}"
        )
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Examples::

        >>> F.tanhshrink(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """
    return input - input.tanh()


def _check_lambda(input: Tensor, lambd: float) -> None:
    if lambd < 0:
        from glasstorch._dtype import finfo

        top = finfo(input.dtype).max
        raise RuntimeError(
            f"lambda must be in range [0, {top:g}] for input dtype "
            f"{input.dtype.legacy_name[:-6]}, but found {lambd:g}"
        )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Examples::

        >>> F.hardshrink(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
    """
    return where(input.abs() > lambd, input, input * 0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Examples::

        >>> F.softshrink(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-0.5000,  0.0000,  0.2000])
    """
    _check_lambda(input, lambd)
    zero = input * 0
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, zero))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``.

    Examples::

        >>> F.threshold(torch.tensor([0.05, 0.5]), 0.1, 20.0)
        tensor([20.0000,  0.5000])
    """
    if inplace and input.dtype.is_floating_point:  # ThresholdBackward1, written into input
        return threshold_(input, threshold, value)
    if inplace:  # value where not above the threshold (NaN too), written into input
        return input.masked_fill_((input > threshold).logical_not_(), value)
    return where(input > threshold, input, value)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomised leaky ReLU: ``x`` where positive, ``a * x`` elsewhere.

    In training each element draws its own slope ``a`` uniformly from
    ``[lower, upper]`` (from glasstorch's generator); otherwise ``a`` is the
    fixed mean ``(lower + upper) / 2``.

    Args:
        input: any shape.
        lower: the smallest slope. Default: 1/8.
        upper: the largest slope. Default: 1/3.
        training: draw random slopes. Default: False.
        inplace: write the result into ``input``.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.rrelu(torch.tensor([-2.0, 3.0]))     # eval: slope 0.2292
        tensor([-0.4583,  3.0000])
    """
    if not training:
        slope = (lower + upper) / 2
        if inplace:  # RreluWithNoiseBackward1, written into input (nn/py)
            return rrelu_(input, slope)
        return where(input >= 0, input, input * slope)
    slopes = rand(tuple(input.shape), dtype=input.dtype, device=input.device)
    with no_grad():  # the slopes in place: one tensor the input's size (PyTorch's noise)
        slopes.mul_(upper - lower).add_(lower)
    if inplace:
        return rrelu_(input, slopes)
    return where(input > 0, input, input * slopes)


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax distribution, optionally one-hot ("straight-through").

    ``softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E`` standard
    exponential draws from glasstorch's generator. With ``hard=True`` the
    result is the one-hot vector of the sample's maximum, whose gradient is the
    soft sample's (``y_hard - y_soft.detach() + y_soft``).

    Args:
        logits: ``(*, num_features)`` unnormalised log-probabilities.
        tau: the temperature, positive. Default: 1.
        hard: return one-hot samples. Default: False.
        eps: unused, kept for PyTorch's signature.
        dim: the dimension of the categories. Default: -1.

    Shape:
        - Output: the shape of ``logits``.

    Examples::

        >>> F.gumbel_softmax(torch.randn(2, 5), tau=0.5, hard=True).sum(-1)
        tensor([1., 1.])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    uniform = rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    exponential = (-(1.0 - uniform).log()).clamp_min(1e-30)  # 1 - u lies in (0, 1]
    gumbels = (logits - exponential.log()) / tau
    y_soft = gumbels.softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = zeros(*logits.shape, dtype=logits.dtype, device=logits.device).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ------------------------------------------------- the inplace=True forms
# Each is written into its input; see the module's docstring.


def _write(function, input: Tensor, *args) -> Tensor:
    """``function`` (an in-place Function) written into ``input``; a result dtype
    that cannot be cast to ``input``'s is refused before anything is written."""
    dtype = input.dtype if input.dtype.is_floating_point else _dtype.get_default_dtype()
    return inplace_ops.write_inplace(input, lambda: function.apply(input, *args), dtype)


def _functional(function):
    """The values of ``function``, the out-of-place activation, for a piece of
    the input: one formula serves both forms, so they agree."""

    def compute(x, *args):
        return function(x, *args)

    compute.__name__ = f"_{function.__name__}"
    return compute


def _negative_slope_error(name: str, extra: str = "") -> RuntimeError:
    return RuntimeError(
        f"In-place {name} backward calculation is triggered with a negative slope which is not "
        "supported. This is caused by calling in-place forward function with a negative slope, "
        f"please call out-of-place version instead.{extra}"
    )


def _leaky_relu_derivative(g, x, y, slope):
    if slope < 0:
        raise _negative_slope_error(
            "leakyReLu",
            " File an issue at https://github.com/pytorch/pytorch if you do require supporting "
            "in-place leakRelu backward calculation with negative slope",
        )
    return where(y > 0, g, g * slope), None


LEAKY_RELU_ = inplace_ops.elementwise_function(
    "LeakyReluBackward1", _functional(leaky_relu), _leaky_relu_derivative, keep_output=True
)


def leaky_relu_(input: Tensor, negative_slope: float) -> Tensor:
    """``F.leaky_relu(input, negative_slope, inplace=True)``."""
    return _write(LEAKY_RELU_, input, negative_slope)


def _elu(x, alpha, scale, input_scale):
    """``elu``, ``selu`` or ``celu`` of x, told apart by PyTorch's three constants
    (the out-of-place function computes the values, so both forms agree)."""
    if input_scale != 1:
        return celu(x, alpha)
    return selu(x) if scale != 1 else elu(x, alpha)


def _elu_derivative(g, x, y, alpha, scale, input_scale):
    """From the result: ``alpha * scale * exp(x * input_scale)`` is ``y + alpha * scale``."""
    if alpha < 0:
        raise _negative_slope_error("elu")
    negative = g * input_scale * (y + alpha * scale)
    return where(y <= 0, negative, g * scale if scale != 1 else g), None, None, None


ELU_ = inplace_ops.elementwise_function("EluBackward1", _elu, _elu_derivative, keep_output=True)


CELU_ = inplace_ops.elementwise_function("CeluBackward1", _elu, _elu_derivative, keep_output=True)


def elu_(input: Tensor, alpha: float) -> Tensor:
    """``F.elu(input, alpha, inplace=True)``."""
    return _write(ELU_, input, alpha, 1.0, 1.0)


def selu_(input: Tensor, alpha: float, scale: float) -> Tensor:
    """``F.selu(input, inplace=True)``: ``elu`` with ``alpha``, times ``scale`` (EluBackward1)."""
    return _write(ELU_, input, alpha, scale, 1.0)


def celu_(input: Tensor, alpha: float) -> Tensor:
    """``F.celu(input, alpha, inplace=True)``: ``elu`` of ``input / alpha``, times ``alpha``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _write(CELU_, input, alpha, 1.0, 1.0 / alpha)


def _rrelu(x, slopes):
    return where(x > 0, x, x * slopes)


def _rrelu_derivative(g, x, y, slopes):
    return where(y > 0, g, g * slopes), None


RRELU_ = inplace_ops.elementwise_function(
    "RreluWithNoiseBackward1", _rrelu, _rrelu_derivative, keep_output=True
)


def rrelu_(input: Tensor, slopes) -> Tensor:
    """``F.rrelu(input, inplace=True)`` with each element's slope (a tensor in
    training, kept for backward as PyTorch keeps its noise; a number otherwise)."""
    return _write(RRELU_, input, slopes)


def _silu_derivative(g, x, y):
    s = x.sigmoid()
    return (g * s * (1 + x * (1 - s)),)


#: PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32, in every dtype.
_ONE_SIXTH = 0.1666666716337204


def _hardsigmoid_derivative(g, x, y):
    inside = (x > -3.0) & (x < 3.0)
    return (where(inside, g * _ONE_SIXTH, 0.0),)


def _hardswish_derivative(g, x, y):
    middle = where(x < 3.0, g * (x / 3.0 + 0.5), g)
    return (where(x < -3.0, 0.0, middle),)


def _mish_derivative(g, x, y):
    t = softplus(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


def _function(name: str, compute, derivative):
    return inplace_ops.elementwise_function(name, compute, derivative, keep_self=True)


SILU_ = _function("SiluBackward0", _functional(silu), _silu_derivative)


HARDSIGMOID_ = _function("HardsigmoidBackward0", _functional(hardsigmoid), _hardsigmoid_derivative)


HARDSWISH_ = _function("HardswishBackward0", _functional(hardswish), _hardswish_derivative)


MISH_ = _function("MishBackward0", _functional(mish), _mish_derivative)


def silu_(input: Tensor) -> Tensor:
    """``F.silu(input, inplace=True)``."""
    return _write(SILU_, input)


def hardsigmoid_(input: Tensor) -> Tensor:
    """``F.hardsigmoid(input, inplace=True)``."""
    return _write(HARDSIGMOID_, input)


def hardswish_(input: Tensor) -> Tensor:
    """``F.hardswish(input, inplace=True)``."""
    return _write(HARDSWISH_, input)


def mish_(input: Tensor) -> Tensor:
    """``F.mish(input, inplace=True)``."""
    return _write(MISH_, input)


class Hardtanh(Clamp):
    """``F.hardtanh(x, inplace=True)`` and ``F.relu6(x, inplace=True)``: clamp's
    kernels straight into x, recorded as PyTorch's HardtanhBackward0, whose
    gradient passes only strictly inside the bounds."""

    backward_name = "HardtanhBackward0"
    in_place = True

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        inside = (a > ctx.low) & (a < ctx.high)
        return where(inside, grad, 0.0), None, None


def hardtanh_(input: Tensor, min_val: float, max_val: float) -> Tensor:
    """``F.hardtanh(input, min_val, max_val, inplace=True)``: a float ``input`` is
    clamped in place (an integer one as ``clamp_`` does, refused or cast)."""
    if _dtype.result_type(input, min_val, max_val) is not input.dtype:
        return input.clamp_(min_val, max_val)
    return inplace_ops.write_inplace(input, lambda: Hardtanh.apply(input, min_val, max_val), None)


THRESHOLD_ = inplace_ops.elementwise_function(
    "ThresholdBackward1",
    _functional(threshold),
    lambda g, x, y, threshold, value: (where(x > threshold, g, 0.0), None, None),
    keep_self=lambda needs: needs[0],
)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``F.threshold(input, threshold, value, inplace=True)`` for a float ``input``."""
    return inplace_ops.write_inplace(
        input, lambda: THRESHOLD_.apply(input, threshold, value), input.dtype
    )
