"""The ``inplace=True`` forms of the activations and of dropout, written into the input.

``F.leaky_relu(x, inplace=True)`` overwrites x with its result, as PyTorch's
``leaky_relu_`` does: no tensor the size of x is made. Each activation is
composed from several kernels (comparisons, ``where``, ``exp``), so it runs on
pieces of x (:func:`~glasstorch.ops.inplace.write_in_pieces`), each piece's
temporaries small. Each records PyTorch's node for the in-place op, with its
derivative:

* the ones whose derivative can be read off the result keep the result, x
  itself (``LeakyReluBackward1``, ``EluBackward1``, ``CeluBackward1``,
  ``RreluWithNoiseBackward1``); PyTorch refuses their backward for a negative
  slope, where the result no longer tells the sign of the input;
* the others keep a copy of x's old values, as PyTorch keeps
  ``original_self`` (``SiluBackward0``, ``HardsigmoidBackward0``,
  ``HardswishBackward0``, ``MishBackward0``, ``HardtanhBackward0``,
  ``ThresholdBackward1``);
* dropout keeps its bool mask, a quarter of a float32 input, where PyTorch's
  CPU kernel keeps a float mask the input's size (``MulBackward0`` for both).
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.ops import inplace
from glasstorch.ops.pointwise import Clamp, where
from glasstorch.tensor import Tensor, empty_tensor


def _write(function, input: Tensor, *args) -> Tensor:
    """``function`` (an in-place Function) written into ``input``; a result dtype
    that cannot be cast to ``input``'s is refused before anything is written."""
    dtype = input.dtype if input.dtype.is_floating_point else _dtype.get_default_dtype()
    return inplace.write_inplace(input, lambda: function.apply(input, *args), dtype)


def _functional(name: str):
    """The values of ``F.<name>``, the out-of-place activation, for a piece of
    the input: one formula serves both forms, so they agree."""

    def compute(x, *args):
        from glasstorch.nn import functional as F

        return getattr(F, name)(x, *args)

    compute.__name__ = f"_{name}"
    return compute


def _negative_slope_error(name: str, extra: str = "") -> RuntimeError:
    return RuntimeError(
        f"In-place {name} backward calculation is triggered with a negative slope which is not "
        "supported. This is caused by calling in-place forward function with a negative slope, "
        f"please call out-of-place version instead.{extra}"
    )


# ----------------------------------------------------- derivatives read off the result


def _leaky_relu_derivative(g, x, y, slope):
    if slope < 0:
        raise _negative_slope_error(
            "leakyReLu",
            " File an issue at https://github.com/pytorch/pytorch if you do require supporting "
            "in-place leakRelu backward calculation with negative slope",
        )
    return where(y > 0, g, g * slope), None


LEAKY_RELU_ = inplace.elementwise_function(
    "LeakyReluBackward1", _functional("leaky_relu"), _leaky_relu_derivative, keep_output=True
)


def leaky_relu_(input: Tensor, negative_slope: float) -> Tensor:
    """``F.leaky_relu(input, negative_slope, inplace=True)``."""
    return _write(LEAKY_RELU_, input, negative_slope)


def _elu(x, alpha, scale, input_scale):
    """``elu``, ``selu`` or ``celu`` of x, told apart by PyTorch's three constants
    (the out-of-place function computes the values, so both forms agree)."""
    from glasstorch.nn import functional as F

    if input_scale != 1:
        return F.celu(x, alpha)
    return F.selu(x) if scale != 1 else F.elu(x, alpha)


def _elu_derivative(g, x, y, alpha, scale, input_scale):
    """From the result: ``alpha * scale * exp(x * input_scale)`` is ``y + alpha * scale``."""
    if alpha < 0:
        raise _negative_slope_error("elu")
    negative = g * input_scale * (y + alpha * scale)
    return where(y <= 0, negative, g * scale if scale != 1 else g), None, None, None


ELU_ = inplace.elementwise_function("EluBackward1", _elu, _elu_derivative, keep_output=True)
CELU_ = inplace.elementwise_function("CeluBackward1", _elu, _elu_derivative, keep_output=True)


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


RRELU_ = inplace.elementwise_function(
    "RreluWithNoiseBackward1", _rrelu, _rrelu_derivative, keep_output=True
)


def rrelu_(input: Tensor, slopes) -> Tensor:
    """``F.rrelu(input, inplace=True)`` with each element's slope (a tensor in
    training, kept for backward as PyTorch keeps its noise; a number otherwise)."""
    return _write(RRELU_, input, slopes)


# ------------------------------------------------- derivatives of the old values


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
    from glasstorch.nn.functional import softplus

    t = softplus(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


def _function(name: str, compute, derivative):
    return inplace.elementwise_function(name, compute, derivative, keep_self=True)


SILU_ = _function("SiluBackward0", _functional("silu"), _silu_derivative)
HARDSIGMOID_ = _function(
    "HardsigmoidBackward0", _functional("hardsigmoid"), _hardsigmoid_derivative
)
HARDSWISH_ = _function("HardswishBackward0", _functional("hardswish"), _hardswish_derivative)
MISH_ = _function("MishBackward0", _functional("mish"), _mish_derivative)


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
    return inplace.write_inplace(input, lambda: Hardtanh.apply(input, min_val, max_val), None)


THRESHOLD_ = inplace.elementwise_function(
    "ThresholdBackward1",
    _functional("threshold"),
    lambda g, x, y, threshold, value: (where(x > threshold, g, 0.0), None, None),
    keep_self=lambda needs: needs[0],
)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``F.threshold(input, threshold, value, inplace=True)`` for a float ``input``."""
    return inplace.write_inplace(
        input, lambda: THRESHOLD_.apply(input, threshold, value), input.dtype
    )


# ----------------------------------------------------------------- dropout


def _dropout_values(x, keep, scale):
    return x * (keep.to(x.dtype) * scale)


DROPOUT_ = inplace.elementwise_function(
    "MulBackward0",
    _dropout_values,
    lambda g, x, y, keep, scale: (g * (keep.to(g.dtype) * scale), None, None),
)


def dropout_mask(input: Tensor, p: float) -> Tensor:
    """The bool mask of the elements dropout keeps: ``rand(input.shape) >= p``,
    drawn a piece at a time into the mask (the same numbers as ``rand``, with
    no float tensor the size of ``input``)."""
    from glasstorch._tier import kernels
    from glasstorch.ops.creation import _generator
    from glasstorch.ops.pointwise import compute_binary

    keep = empty_tensor(tuple(input.shape), _dtype.bool_, device=input.device)
    flat = keep.view(-1)
    count = flat.numel()
    if count == 0:
        return keep
    # The uniform kernel's 4 numbers per block: every piece starts on a block of its own.
    seed, offset = _generator(None).take_blocks(-(-count // 4))
    piece = min(inplace.PIECE, count)
    draws = empty_tensor((piece,), input.dtype, device=input.device)
    for start in range(0, count, piece):
        part = flat[start : start + piece]
        these = draws[: part.numel()]
        kernels.random_uniform(these._strided(), seed, offset + start // 4, 0.0, 1.0)
        compute_binary("ge", these, p, out=part)
    return keep


def dropout_(input: Tensor, p: float) -> Tensor:
    """``F.dropout(input, p, inplace=True)`` in training, ``0 < p``: the kept
    elements scaled by ``1 / (1 - p)``, the others 0, written into ``input``."""
    if p == 1.0:
        keep = empty_tensor(tuple(input.shape), _dtype.bool_, device=input.device)
        keep.fill_(False)
        scale = 0.0
    else:
        keep, scale = dropout_mask(input, p), 1.0 / (1.0 - p)
    return inplace.write_inplace(
        input, lambda: DROPOUT_.apply(input, keep, scale), input.dtype, (keep,)
    )
