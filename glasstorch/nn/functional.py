"""``nn.functional``: the layers, activations and losses as plain functions.

Every ``nn`` Module calls one of these in its ``forward``. Most are short
compositions of tensor operations, whose autograd comes for free. Where PyTorch
defines its own derivative (the activations with a kink or a threshold, the
embedding's padding row, the losses' stable forms), the function is an
:class:`~glasstorch.autograd.Function` with ``forward`` and ``backward`` side by
side, named after PyTorch's node (``GeluBackward0``, ...).

Cross-entropy over class indices runs the fused ``cross_entropy`` kernel of the
contract (log-softmax and negative log-likelihood in one pass).
"""

from __future__ import annotations

import math
import warnings

from glasstorch import _dtype
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.nn import fused_nodes, loss_nodes
from glasstorch.nn import inplace_activations as _inplace_activations
from glasstorch.ops import pointwise
from glasstorch.ops.core import check_same_device, strided_as
from glasstorch.ops.creation import arange, rand, zeros
from glasstorch.ops.indexing import masked_select
from glasstorch.ops.pointwise import where
from glasstorch.ops.reduction import log_softmax as _log_softmax
from glasstorch.ops.reduction import softmax as _softmax
from glasstorch.tensor import Tensor, empty_tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "batch_norm",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "erf",
    "gelu",
    "huber_loss",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "relu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
    # attention
    "scaled_dot_product_attention",
]


# ================================================================== layers


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: the affine map of :class:`nn.Linear`.

    Shape:
        - input: ``(*, in_features)``; weight: ``(out_features, in_features)``;
          bias: ``(out_features,)``.
        - output: ``(*, out_features)``.
    """
    # -- solution: nn/layers
    if (
        input.dim() >= 2
        and bias is not None
        and bias.dim() == 1
        and _same_dtype(input, weight, bias)
    ):
        if input.shape[-1] != weight.shape[1]:
            rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} "
                f"and {weight.shape[1]}x{weight.shape[0]})"
            )
        return Addmm.apply(bias, input, weight)
    output = input.matmul(weight.t())
    return output if bias is None else output + bias
    # -- end solution


def _same_dtype(*tensors: Tensor) -> bool:
    return all(t.dtype is tensors[0].dtype for t in tensors)


class Addmm(Function):
    """``bias + input @ weight.T`` as one graph node, for a batch of rows.

    One node instead of three (a transpose view, a product and a broadcast add)
    means less bookkeeping per layer in forward and backward. PyTorch also
    records ``nn.Linear`` as ``AddmmBackward0`` (with a ``TBackward0`` node in
    front of the weight, which glasstorch folds into this one). The gradients:
    ``input: grad @ weight``, ``weight: grad.T @ input`` (contiguous, like the
    weight itself) and ``bias: grad`` summed over the rows.

    ``input`` may be ``(*, in)``: its rows are taken as one matrix, so the
    output is ``(*, out)`` (PyTorch records two view nodes around its addmm
    there; glasstorch folds them in too). The products run as direct kernel
    calls (:func:`glasstorch.nn.fused_nodes.linear_forward` and
    ``linear_backward``); the formulas below are what they compute, and what a
    recorded backward (``create_graph=True``) differentiates.
    """

    backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx, bias, input, weight):
        ctx.save_for_backward(
            input if ctx.needs_input_grad[2] else None,
            weight if ctx.needs_input_grad[1] else None,
        )
        ctx.input_shape = input.shape
        return fused_nodes.linear_forward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if not is_grad_enabled():  # nothing to record: the kernels directly
            return fused_nodes.linear_backward(grad, input, weight, ctx.input_shape, needs)
        rows = grad.reshape(-1, grad.shape[-1])
        grad_bias = rows.sum(0) if needs[0] else None
        grad_input = (rows @ weight).reshape(ctx.input_shape) if needs[1] else None
        grad_weight = rows.t() @ input.reshape(-1, input.shape[-1]) if needs[2] else None
        return grad_bias, grad_input, grad_weight


class Embedding(Function):
    """Rows of ``weight`` picked by integer indices; the padding row gets no gradient."""

    backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        flat = indices.reshape(-1)
        rows = weight.index_select(0, flat)
        ctx.save_for_backward(flat)
        ctx.weight_rows = weight.shape[0]
        ctx.padding_idx = padding_idx
        return rows.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (flat,) = ctx.saved_tensors
        grad_rows = grad.reshape(-1, grad.shape[-1])
        if ctx.padding_idx is not None:
            keep = (flat != ctx.padding_idx).unsqueeze(1)
            grad_rows = grad_rows * keep
        grad_weight = zeros(ctx.weight_rows, grad.shape[-1], dtype=grad.dtype, device=grad.device)
        return grad_weight.index_add(0, flat, grad_rows), None, None


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Look up rows of ``weight`` by the integer indices in ``input``.

    Args:
        input: int64 (or int32) indices of any shape.
        weight: the table, ``(num_embeddings, embedding_dim)``.
        padding_idx: a row whose gradient stays zero.

    Shape:
        - output: ``(*input.shape, embedding_dim)``.
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported in glasstorch"
        )
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)"
        )
    # PyTorch's embedding is an index_select of weight's rows, and fails in its check.
    check_same_device("wrapper_CUDA__index_select", self=weight, index=input)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return Embedding.apply(weight, input.long(), padding_idx)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask comes from glasstorch's Philox generator (``torch.manual_seed``
    makes it repeatable). Outside training, ``input`` is returned unchanged.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:  # written into input, keeping only a bool mask (nn/inplace_activations.py)
        return _inplace_activations.dropout_(input, p)
    if p == 1.0:
        scale = zeros(input.shape, dtype=input.dtype, device=input.device)
    else:
        keep = rand(input.shape, dtype=input.dtype, device=input.device) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input * scale


def _check_normalized_shape(input: Tensor, normalized_shape: tuple[int, ...]) -> None:
    trailing = tuple(input.shape[input.dim() - len(normalized_shape) :])
    if input.dim() < len(normalized_shape) or trailing != normalized_shape:
        expected = ", ".join(["*"] + [str(s) for s in normalized_shape])
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[{expected}], but got input of size{list(input.shape)}"
        )


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the last ``len(normalized_shape)`` dimensions, then scale and shift.

    ``(x - mean) / sqrt(var + eps) * weight + bias``, with the biased variance.
    Float inputs run as one fused node (:mod:`glasstorch.nn.fused_nodes`);
    :func:`_layer_norm_formula` is what it computes.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    _check_normalized_shape(input, normalized_shape)

    def formula(x, w, b):
        return _layer_norm_formula(x, normalized_shape, w, b, eps)

    if (
        input.numel() > 0
        and fused_nodes.fusable(input, weight, bias)
        and all(p is None or p.shape == normalized_shape for p in (weight, bias))
    ):
        return fused_nodes.LayerNorm.apply(input, weight, bias, normalized_shape, eps, formula)
    return formula(input, weight, bias)


def _layer_norm_formula(
    input: Tensor, normalized_shape: tuple[int, ...], weight, bias, eps: float
) -> Tensor:
    """:func:`layer_norm` as a composition of tensor operations (its meaning)."""
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    variance = (centered * centered).mean(dims, keepdim=True)
    output = centered * (variance + eps).rsqrt()
    if weight is not None:
        output = output * weight
    if bias is not None:
        output = output + bias
    return output


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dimension 1) with batch or running statistics.

    In training the batch's mean and biased variance normalize the input, and
    the running statistics (when given) move toward the batch's mean and
    *unbiased* variance: ``running = (1 - momentum) * running + momentum * batch``.
    Otherwise the running statistics normalize the input.

    Shape:
        - input: ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)``; statistics, weight,
          bias: ``(C,)``.
    """
    channels = input.shape[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is None and not training:
            raise RuntimeError(f"batch_norm in evaluation mode needs {name}")
        if stat is not None and stat.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {stat.numel()}")
    dims = (0,) + tuple(range(2, input.dim()))
    per_channel = (1, channels) + (1,) * (input.dim() - 2)
    if training:
        count = input.numel() // channels
        if count <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
    if input.dtype in (_dtype.float32, _dtype.float64) and input.numel() > 0:
        # the fused kernels (glasstorch.nn._convolution): three kernel calls a step
        return fused_batch_norm(
            input, running_mean, running_var, weight, bias, training, momentum, eps
        )
    if training:
        mean = input.mean(dims)
        centered = input - mean.reshape(per_channel)
        variance = (centered * centered).mean(dims)
        if running_mean is not None and running_var is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                unbiased = variance.detach() * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        centered = input - running_mean.reshape(per_channel)
        variance = running_var
    output = centered * (variance + eps).rsqrt().reshape(per_channel)
    if weight is not None:
        output = output * weight.reshape(per_channel)
    if bias is not None:
        output = output + bias.reshape(per_channel)
    return output


# ============================================================= activations


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
    if inplace:  # LeakyReluBackward1, written into input (nn/inplace_activations.py)
        return _inplace_activations.leaky_relu_(input, negative_slope)
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
    if inplace:  # EluBackward1, written into input (nn/inplace_activations.py)
        return _inplace_activations.elu_(input, alpha)
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
    if inplace:  # SiluBackward0, written into input (nn/inplace_activations.py)
        return _inplace_activations.silu_(input)
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


# ------------------------------------------------------------------ erf, GELU


def erf(input: Tensor) -> Tensor:
    """The error function, elementwise (integer inputs compute in the default float)."""
    return pointwise.erf(input)


_SQRT_HALF = math.sqrt(0.5)
_SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


class Gelu(Function):
    """``x * Phi(x)``, Phi the standard normal CDF; or its tanh approximation.

    float32 and float64 run the fused ``gelu`` and ``gelu_backward`` kernels
    (one pass each); the formulas below are their meaning, and the backward
    formula is what a recorded backward (``create_graph=True``) differentiates.
    """

    backward_name = "GeluBackward0"

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if fused_nodes.fusable(x):
            out = empty_tensor(x.shape, x.dtype)
            kernels.gelu(out._strided(), x.contiguous()._strided(), approximate == "tanh")
            return out
        if approximate == "tanh":
            inner = (x + x * x * x * _GELU_CUBIC) * _SQRT_TWO_OVER_PI
            return x * 0.5 * (inner.tanh() + 1)
        return x * 0.5 * (erf(x * _SQRT_HALF) + 1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if not is_grad_enabled() and fused_nodes.fusable(x, grad):
            grad_input = empty_tensor(x.shape, x.dtype)
            kernels.gelu_backward(
                grad_input._strided(), grad.contiguous()._strided(), x.contiguous()._strided(),
                ctx.approximate == "tanh",
            )  # fmt: skip
            return grad_input, None
        if ctx.approximate == "tanh":
            inner = (x + x * x * x * _GELU_CUBIC) * _SQRT_TWO_OVER_PI
            t = inner.tanh()
            d_inner = (x * x * (3 * _GELU_CUBIC) + 1) * _SQRT_TWO_OVER_PI
            return grad * (0.5 * (t + 1) + x * 0.5 * (1 - t * t) * d_inner), None
        cdf = (erf(x * _SQRT_HALF) + 1) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_TWO_PI
        return grad * (cdf + x * pdf), None


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``input * Phi(input)``.

    Args:
        approximate: ``'none'`` (exact, through :func:`erf`) or ``'tanh'``
            (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``).
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return Gelu.apply(input, approximate)


# ---------------------------------------------------------------- softmax


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


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: ``out[..., c] = 1 if tensor[...] == c``.

    ``num_classes=-1`` uses ``tensor.max() + 1``.
    """
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0):
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).long()


# ================================================================== losses


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    """Apply ``reduction``: ``'none'`` (as is), ``'mean'`` or ``'sum'``."""
    if reduction == "none":
        return losses
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _broadcast_pair(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` broadcast to one shape, as PyTorch's losses take them.

    So a 0-dim float64 target makes a float32 input's loss float64: once
    expanded it is no longer 0-dim, and promotes like any other tensor.
    """
    if target.shape == input.shape:
        return input, target
    from glasstorch._shape import broadcast_shapes

    shape = broadcast_shapes(input.shape, target.shape)
    return input.expand(shape), target.expand(shape)


def _warn_on_broadcast(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error: ``(input - target) ** 2``, reduced."""
    _check_reduction(reduction)
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return loss_nodes.MseLoss.apply(_mse_formula, (reduction,), input, target)


def _mse_formula(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    # -- solution: nn/losses
    difference = input - target
    return _reduce(difference * difference, reduction)
    # -- end solution


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error: ``|input - target|``, reduced."""
    _check_reduction(reduction)
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``d = input - target``).

    With ``beta = 0`` it is the L1 loss.
    """
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_on_broadcast(input, target)
    input, target = _broadcast_pair(input, target)
    return loss_nodes.SmoothL1Loss.apply(_smooth_l1_formula, (reduction, beta), input, target)


def _smooth_l1_formula(input: Tensor, target: Tensor, reduction: str, beta: float) -> Tensor:
    distance = (input - target).abs()
    if beta == 0:
        return _reduce(distance, reduction)
    losses = where(distance < beta, distance * distance * (0.5 / beta), distance - 0.5 * beta)
    return _reduce(losses, reduction)


def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0
) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere.

    Equal to ``delta * smooth_l1_loss(beta=delta)``.
    """
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_on_broadcast(input, target)
    return loss_nodes.HuberLoss.apply(_huber_formula, (reduction, delta), input, target)


def _huber_formula(input: Tensor, target: Tensor, reduction: str, delta: float) -> Tensor:
    distance = (input - target).abs()
    losses = where(distance < delta, distance * distance * 0.5, (distance - 0.5 * delta) * delta)
    # PyTorch writes the losses into a tensor like the input: a float64 target
    # does not make a float32 input's loss float64 (unlike mse_loss).
    return _reduce(losses.to(input.dtype), reduction)


# ------------------------------------------------------ class-index losses


def _check_class_target(input: Tensor, target: Tensor) -> Tensor:
    """Validate an integer class target against ``input``'s shape; return it as int64."""
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype.legacy_name[:-6]}"
        )
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )
    expected = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.dim() >= 2 else ()
    if tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    return target.long()


def _rows_of_classes(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Move the class dimension last and flatten: ``(M, C)`` scores, ``(M,)`` targets.

    ``(C,)`` with a 0-d target is one row; ``(N, C, d1, ...)`` gives ``N*d1*...`` rows.
    """
    if input.dim() == 1:
        return input.unsqueeze(0), target.reshape(1)
    if input.dim() == 2:
        return input, target  # already rows of scores (the usual case: no view to record)
    if input.dim() > 2:
        order = (0,) + tuple(range(2, input.dim())) + (1,)
        input = input.permute(order)
    return input.reshape(-1, input.shape[-1]), target.reshape(-1)


def _check_targets_in_range(target: Tensor, classes: int, ignore_index: int) -> None:
    if target.numel() == 0:
        return
    if 0 <= int(target.min()) and int(target.max()) < classes:
        return  # the usual case, settled by two reductions
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    if bad.any():
        first = masked_select(target, bad)[0].item()
        raise IndexError(f"Target {first} is out of bounds.")


def _check_weight(weight: Tensor | None, classes: int) -> None:
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )


def _sample_weights(target: Tensor, weight: Tensor | None, ignore_index: int, dtype):
    """Each row's weight: ``weight[target]`` (or 1), and 0 for ignored rows."""
    kept = target != ignore_index
    if weight is None:
        return kept.to(dtype)
    safe = where(kept, target, 0)
    return weight.index_select(0, safe) * kept


def _reduce_weighted(losses: Tensor, weights: Tensor, reduction: str, shape) -> Tensor:
    """PyTorch's class-loss reductions: the weighted mean divides by the weights' sum."""
    if reduction == "none":
        return losses if tuple(losses.shape) == tuple(shape) else losses.reshape(shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / weights.sum()


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood: ``-weight[t] * input[i, t]`` for each sample's class ``t``.

    Args:
        input: log-probabilities, ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: class indices, ``(N,)``, ``(N, d1, ...)`` or ``()``.
        weight: a weight per class, ``(C,)``.
        ignore_index: a target value that contributes nothing (not even to the mean).
        reduction: ``'mean'`` divides by the summed weights of the counted samples.
    """
    _check_reduction(reduction)
    target = _check_class_target(input, target)
    rows, flat_target = _rows_of_classes(input, target)
    classes = rows.shape[1]
    _check_weight(weight, classes)
    _check_targets_in_range(flat_target, classes, ignore_index)
    options = (ignore_index, reduction)
    return loss_nodes.NllLoss.apply(_nll_formula, options, input, target, weight)


def _nll_formula(input, target, weight, ignore_index: int, reduction: str) -> Tensor:
    rows, flat_target = _rows_of_classes(input, target)
    kept = flat_target != ignore_index
    picked = rows.gather(1, where(kept, flat_target, 0).unsqueeze(1)).squeeze(1)
    weights = _sample_weights(flat_target, weight, ignore_index, rows.dtype)
    # an ignored sample is skipped, not multiplied by 0 (a NaN there must not count)
    losses = where(kept, -picked * weights, 0.0)
    return _reduce_weighted(losses, weights, reduction, target.shape)


class CrossEntropyIndices(Function):
    """Cross-entropy over class indices, reduced, through two fused kernels.

    Forward: the ``cross_entropy`` kernel gives each row's loss
    ``w[t_i] * (logsumexp(x[i]) - x[i, t_i])`` and weight ``w[t_i]`` (0 where
    ignored), with ``log_probs = log_softmax(x)`` on the way, and the
    reductions: the sum of the losses, the sum of the weights and their
    quotient (the mean). The result is the losses, the sum or the mean.
    Backward: the ``cross_entropy_backward`` kernel turns each row's incoming
    gradient ``g_i`` into ``g_i * w[t_i] * (softmax(x[i]) - one_hot(t_i))``, from
    the saved ``log_probs``. So a training step spends two kernel calls on its
    loss (and one division of the incoming gradient by the summed weights),
    where composing it from tensor operations takes about twenty.

    Under ``create_graph`` the backward is written in tensor operations
    instead, on a log-softmax of the logits recomputed in the graph, so the
    gradient is differentiable again, with respect to the incoming gradient
    and to the logits (second derivatives, as in PyTorch). The saved
    ``log_probs`` are constants of the forward pass and cannot serve there.
    """

    backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, logits, target, weight, ignore_index, reduction):
        rows, classes = logits._shape
        losses = empty_tensor((rows,), logits.dtype)
        row_weights = empty_tensor((rows,), logits.dtype)
        totals = empty_tensor((3,), logits.dtype)  # loss sum, weight sum, weighted mean
        log_probs = empty_tensor((rows, classes), logits.dtype)
        bad_row = kernels.cross_entropy(
            losses._strided(),
            row_weights._strided(),
            totals._strided(),
            log_probs._strided(),
            logits._strided(),
            target._strided(),
            None if weight is None else weight._strided(),
            ignore_index,
        )
        if bad_row >= 0:
            raise IndexError(f"Target {target[bad_row].item()} is out of bounds.")
        ctx.save_for_backward(log_probs, target, weight)
        ctx.ignore_index, ctx.reduction = ignore_index, reduction
        # The logits, for a backward under create_graph only. Kept as a plain
        # reference with its version, not saved: in-place changes after forward
        # must not break an ordinary backward (which never reads them).
        ctx.logits, ctx.logits_version = logits, logits._version
        if reduction == "none":
            return losses
        if reduction == "sum":
            return _element(totals, 0)
        ctx.weight_sum = _element(totals, 1)
        return _element(totals, 2)

    @staticmethod
    def backward(ctx, grad):
        log_probs, target, weight = ctx.saved_tensors
        rows = log_probs.shape[0]
        if ctx.reduction == "mean":
            grad = grad / ctx.weight_sum
        if is_grad_enabled():  # create_graph: build the gradient from recorded operations
            grad_logits = _cross_entropy_grad_as_ops(ctx, target, weight, grad)
            return grad_logits, None, None, None, None
        grad_logits = empty_tensor(log_probs.shape, log_probs.dtype)
        kernels.cross_entropy_backward(
            grad_logits._strided(),
            log_probs._strided(),
            target._strided(),
            None if weight is None else weight._strided(),
            strided_as(grad, (rows,)),  # one value for every row after a reduction
            ctx.ignore_index,
        )
        return grad_logits, None, None, None, None


def _element(tensor: Tensor, index: int) -> Tensor:
    """Element ``index`` of a fresh 1-D result as a 0-d tensor of its own (no view
    bookkeeping: nothing else can reach the 1-D tensor)."""
    position = tensor._offset + index * tensor._stride[0]
    return Tensor._make(tensor._storage, (), (), position, tensor.dtype)


def _cross_entropy_grad_as_ops(ctx, target, weight, grad):
    """:class:`CrossEntropyIndices`' gradient written with tensor operations:
    ``g_i * w[t_i] * (softmax(x[i]) - one_hot(t_i))``, with the softmax
    recomputed from the logits so that it is differentiable with respect to them."""
    logits = ctx.logits
    if logits._version != ctx.logits_version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: the logits of cross_entropy were changed after the forward "
            "pass, so its gradient cannot be differentiated again."
        )
    classes = logits.shape[1]
    one_hot_target = (target.unsqueeze(1) == arange(classes, device=target.device)).to(logits.dtype)
    kept = target != ctx.ignore_index
    row_weights = _sample_weights(target, weight, ctx.ignore_index, logits.dtype)
    scale = grad.expand(target.shape) * row_weights * kept
    return (logits.softmax(1) - one_hot_target) * scale.unsqueeze(1)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between ``softmax(input)`` along dimension 1 and the targets.

    Args:
        input: unnormalized scores (logits), ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: class indices (int64, the shape of ``input`` without dimension 1),
            or class probabilities (float, ``input``'s shape).
        weight: a weight per class, ``(C,)``.
        ignore_index: a class-index target value that contributes nothing.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``. With class indices the
            mean divides by the summed weights of the counted samples; with
            probabilities it divides by the number of samples.
        label_smoothing: mix the targets with the uniform distribution:
            ``(1 - eps) * target + eps / C``.

    Example::

        >>> logits = torch.randn(3, 5, requires_grad=True)
        >>> F.cross_entropy(logits, torch.tensor([1, 0, 4])).backward()
    """
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    _check_weight(weight, classes)
    if target.dtype.is_floating_point and target.shape == input.shape:
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
    target = _check_class_target(input, target)
    if label_smoothing > 0:
        return _cross_entropy_smoothed(
            input, target, weight, ignore_index, reduction, label_smoothing
        )
    rows, flat_target = _rows_of_classes(input, target)
    if weight is not None:
        weight = weight.to(rows.dtype)
    loss = CrossEntropyIndices.apply(rows, flat_target, weight, ignore_index, reduction)
    if reduction == "none" and loss.shape != target.shape:
        loss = loss.reshape(target.shape)
    return loss


def _class_weights_along(weight: Tensor, input: Tensor, class_dim: int) -> Tensor:
    """``weight`` shaped to broadcast along ``input``'s class dimension."""
    shape = [1] * input.dim()
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing):
    """Cross-entropy against class probabilities: ``-sum_c w_c p_c log q_c`` per sample."""
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    log_probs = _log_softmax(input, class_dim)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    products = log_probs * target
    if weight is not None:
        products = products * _class_weights_along(weight, input, class_dim)
    if reduction == "none":
        return -products.sum(class_dim)
    if reduction == "sum":
        return -products.sum()
    return -products.sum() / (input.numel() / classes)


def _cross_entropy_smoothed(input, target, weight, ignore_index, reduction, label_smoothing):
    """Class-index cross-entropy with label smoothing, as PyTorch defines it.

    ``(1 - eps) * nll + (eps / C) * smooth``, where ``smooth`` is each sample's
    ``-sum_c w_c log q_c`` (0 where ignored), reduced like ``nll``: the mean
    divides by the summed ``w[target]`` of the counted samples.
    """
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    log_probs = _log_softmax(input, class_dim)
    nll = nll_loss(log_probs, target, weight, ignore_index, reduction)
    weighted = log_probs
    if weight is not None:
        weighted = log_probs * _class_weights_along(weight, input, class_dim)
    smooth = -weighted.sum(class_dim)
    smooth = where(target != ignore_index, smooth, 0.0)  # skipped, not times 0 (NaN, inf)
    if reduction == "none":
        total = smooth
    elif reduction == "sum":
        total = smooth.sum()
    else:
        flat_target = target.reshape(-1)
        weights = _sample_weights(flat_target, weight, ignore_index, input.dtype)
        total = smooth.sum() / weights.sum()
    return nll * (1 - label_smoothing) + total * (label_smoothing / classes)


# --------------------------------------------------------- binary losses

#: PyTorch clamps BCE's logarithms at -100 so that a 0 or 1 prediction stays finite.
_LOG_FLOOR = -100.0
#: ... and keeps the gradient's denominator ``x (1 - x)`` at least this large: 1e-12
#: rounded to float32, which is how PyTorch stores the constant.
_BCE_GRAD_EPS = 9.999999960041972e-13


class BinaryCrossEntropy(Function):
    """Elementwise ``-(t log x + (1 - t) log(1 - x))`` with the logs clamped at -100."""

    backward_name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        log_x = x.log().clamp(min=_LOG_FLOOR)
        log_1mx = (1 - x).log().clamp(min=_LOG_FLOOR)
        return -(t * log_x + (1 - t) * log_1mx)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=_BCE_GRAD_EPS)
        grad_t = None
        if ctx.needs_input_grad[1]:
            log_x = x.log().clamp(min=_LOG_FLOOR)
            log_1mx = (1 - x).log().clamp(min=_LOG_FLOOR)
            grad_t = grad * (log_1mx - log_x)
        return grad_x, grad_t


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Binary cross-entropy between probabilities ``input`` and targets in ``[0, 1]``.

    ``-weight * (target * log(input) + (1 - target) * log(1 - input))``, with
    each logarithm clamped at -100, reduced.
    """
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if target.dtype is not input.dtype:  # PyTorch's kernel takes one dtype
        raise RuntimeError(f"Found dtype {target.dtype.title} but expected {input.dtype.title}")
    # (written so that NaN fails the test, as in PyTorch's check)
    if input.numel() and not bool(((input >= 0) & (input <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.numel() and not bool(((target >= 0) & (target <= 1)).all()):
        raise RuntimeError("all elements of target should be between 0 and 1")
    return loss_nodes.BinaryCrossEntropy.apply(_bce_formula, (reduction,), input, target, weight)


def _bce_formula(input, target, weight, reduction: str) -> Tensor:
    losses = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy on logits: ``sigmoid`` and BCE in one stable formula.

    ``loss = (1 - t) x - l log(sigmoid(x))`` with ``l = 1 + (pos_weight - 1) t``
    (``l = 1`` without ``pos_weight``); ``log(sigmoid(x))`` is computed without
    overflow (:func:`logsigmoid`), so large logits are safe.

    Args:
        pos_weight: weight of the positive term, broadcast along the last
            dimension (one per class).
    """
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    return loss_nodes.BinaryCrossEntropyWithLogits.apply(
        _bce_with_logits_formula, (reduction,), input, target, weight, pos_weight
    )


def _bce_with_logits_formula(input, target, weight, pos_weight, reduction: str) -> Tensor:
    weighted = logsigmoid(input)
    if pos_weight is not None:
        # PyTorch multiplies in place into logsigmoid(input): the product keeps the
        # input's dtype (a float32 input rounds it to float32, where it may overflow)
        weighted = (weighted * ((pos_weight - 1) * target + 1)).to(input.dtype)

    # PyTorch computes the losses in place in ``1 - target``, so the target's
    # float dtype wins (a float64 input with a float32 target gives a float32
    # loss), and each in-place step is rounded to it (where it may overflow).
    def in_place(value: Tensor) -> Tensor:
        if target.dtype.is_floating_point and value.dtype is not target.dtype:
            return value.to(target.dtype)
        return value

    losses = in_place(in_place((1 - target) * input) - weighted)
    if weight is not None:
        losses = in_place(losses * weight)
    return _reduce(losses, reduction)


# =============================================================== attention


def _check_attention_inputs(query: Tensor, key: Tensor, value: Tensor) -> None:
    """PyTorch's checks on ``scaled_dot_product_attention``'s inputs, with its wording."""
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got "
            f"query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead."
        )
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype.c_name} key.dtype: {key.dtype.c_name} and value.dtype: "
            f"{value.dtype.c_name} instead."
        )


def _causal_mask(rows: int, columns: int, device=None) -> Tensor:
    """``(rows, columns)`` bool on ``device``, true where column ``j <= i`` (the lower
    triangle, from the top-left corner): what a causal mask lets position ``i`` attend to."""
    return arange(rows, device=device).unsqueeze(1) >= arange(columns, device=device).unsqueeze(0)


def _repeat_heads(tensor: Tensor, heads: int) -> Tensor:
    """``tensor``'s heads (dimension -3) each repeated to make ``heads`` of them, for
    grouped-query attention (``enable_gqa``): head ``h`` reads group ``h // (heads / groups)``."""
    groups = tensor.shape[-3]
    if groups == heads:
        return tensor
    if heads % groups:
        raise RuntimeError(
            f"number of heads in key/value ({groups}) must divide the number of heads in "
            f"query ({heads})"
        )
    picks = arange(heads, device=tensor.device) // (heads // groups)
    return tensor.index_select(tensor.dim() - 3, picks)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Attention: ``softmax(query @ key^T * scale + mask) @ value``.

    Each query position takes a weighted average of the values; the weights
    come from how well the query matches each key, turned into a distribution
    by a softmax over the key positions.

    Args:
        query: ``(..., L, E)``.
        key: ``(..., S, E)``.
        value: ``(..., S, Ev)``.
        attn_mask: broadcastable to ``(..., L, S)``. A **bool** mask says where
            attention may go (``True``: take part); a **float** mask is added
            to the scores (``-inf`` removes a position).
        dropout_p: dropout probability on the attention weights (applied
            whenever it is above 0; pass 0 in evaluation).
        is_causal: position ``i`` attends only to positions ``j <= i`` (the
            mask is the lower triangle from the top-left corner). Cannot be
            combined with ``attn_mask``.
        scale: the factor on the scores; ``1 / sqrt(E)`` when omitted.
        enable_gqa: let ``key`` and ``value`` have fewer heads (dimension
            -3) than ``query``, each shared by a group of query heads.

    Shape:
        - output: ``(..., L, Ev)``.

    A query row whose every key position is masked gets zeros, as in PyTorch.

    Example::

        >>> q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
        >>> F.scaled_dot_product_attention(q, k, v).shape
        torch.Size([2, 4, 5, 8])
    """
    _check_attention_inputs(query, key, value)
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    if enable_gqa and query.dim() >= 3:
        key = _repeat_heads(key, query.shape[-3])
        value = _repeat_heads(value, query.shape[-3])
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if attn_mask is None and fused_nodes.fusable(query):
        # One fused node scales, masks (without a mask in memory) and softmaxes.
        scores = query.matmul(key.transpose(-2, -1))
        if scores.numel() > 0:
            weights = fused_nodes.AttentionSoftmax.apply(scores, scale, is_causal)
            if dropout_p > 0.0:
                weights = dropout(weights, dropout_p, True)
            return weights.matmul(value)
    scores = (query * scale).matmul(key.transpose(-2, -1))
    rows, columns = scores.shape[-2], scores.shape[-1]
    if is_causal:
        weights = _softmax(
            scores.masked_fill(~_causal_mask(rows, columns, scores.device), -math.inf), -1
        )
    elif attn_mask is None:
        weights = _softmax(scores, -1)
    else:
        weights = _masked_attention_weights(scores, attn_mask)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _masked_attention_weights(scores: Tensor, attn_mask: Tensor) -> Tensor:
    """``softmax(scores + mask)`` over the last dimension, with zeros (not NaN) in the
    rows whose every position is masked out."""
    if attn_mask.dtype is _dtype.bool_:
        scores = scores.masked_fill(~attn_mask, -math.inf)
    else:
        scores = scores + attn_mask
    alive = (scores > -math.inf).any(-1, keepdim=True)
    if bool(alive.all()):
        return _softmax(scores, -1)
    # A row of -inf only would be 0/0: give it finite scores, then zero its weights.
    weights = _softmax(where(alive, scores, 0.0), -1)
    return where(alive, weights, 0.0)


# ===================================================== convolutional networks
# Convolution, pooling, padding, resampling and the image normalisations live
# in glasstorch/nn/_convolution.py; their public names are part of this module.
from glasstorch.nn._convolution import (  # noqa: E402
    __all__ as _convolution_names,
)
from glasstorch.nn._convolution import (  # noqa: E402, F401 - re-exported
    adaptive_avg_pool2d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose2d,
    dropout2d,
    fold,
    fused_batch_norm,
    group_norm,
    interpolate,
    max_pool1d,
    max_pool2d,
    pad,
    unfold,
)

__all__ += _convolution_names


# ============================================== more functions public programs use
# Compositions of the operations above (each gets autograd from its parts).


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    norm = input.norm(p, dim, keepdim=True).clamp_min(eps)
    return input / norm.expand_as(input)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``dot(x1, x2) / max(||x1|| * ||x2||, eps)`` along ``dim`` (the inputs broadcast)."""
    dot = (x1 * x2).sum(dim)
    norms = x1.norm(2, dim) * x2.norm(2, dim)
    return dot / norms.clamp_min(eps)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from the distribution whose log is ``input``.

    Pointwise ``target * (log(target) - input)`` (0 where ``target`` is 0), or
    ``exp(target) * (target - input)`` with ``log_target=True``. ``reduction``:
    ``'none'``, ``'sum'``, ``'mean'`` (over every element) or ``'batchmean'``
    (the sum divided by the batch size, the true KL divergence per example).
    """
    if size_average is not None or reduce is not None:
        from glasstorch.nn.modules.loss import _legacy_reduction

        reduction = _legacy_reduction(size_average, reduce)
    if log_target:
        pointwise_loss = target.exp() * (target - input)
    else:
        # PyTorch's xlogy(target, target) - target * input: 0 * log(0) is 0, and a
        # negative target's log is NaN (the 1 stands in for a zero target's log)
        entropy = target * where(target == 0, 1.0, target).log()
        pointwise_loss = entropy - target * input
    if reduction == "none":
        return pointwise_loss
    if reduction == "sum":
        return pointwise_loss.sum()
    if reduction == "batchmean":
        return pointwise_loss.sum() / (input.shape[0] if input.dim() else 1)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
        return pointwise_loss.mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    if inplace:  # MishBackward0, written into input (nn/inplace_activations.py)
        return _inplace_activations.mish_(input)
    return input * softplus(input).tanh()


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:  # HardtanhBackward0, written into input (nn/inplace_activations.py)
        return _inplace_activations.hardtanh_(input, min_val, max_val)
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


__all__ += ["cosine_similarity", "hardtanh", "kl_div", "mish", "normalize", "prelu"]


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``: a view, a permute and a reshape."""
    r = upscale_factor
    *batch, channels, height, width = input.shape
    if channels % (r * r) != 0:
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}"
        )
    c = channels // (r * r)
    n = len(batch)
    x = input.reshape(*batch, c, r, r, height, width)
    order = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(order).reshape(*batch, c, height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``, undoing :func:`pixel_shuffle`."""
    r = downscale_factor
    *batch, channels, height, width = input.shape
    if height % r or width % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, "
            f"but got height={height}, width={width}, downscale_factor={r}"
        )
    n = len(batch)
    x = input.reshape(*batch, channels, height // r, r, width // r, r)
    order = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(order).reshape(*batch, channels * r * r, height // r, width // r)


__all__ += ["pixel_shuffle", "pixel_unshuffle"]


# The layers of glasstorch.nn._more_functional (instance norm, 1-D and adaptive max
# pooling, embedding bags, bilinear, ranking and embedding losses).
from glasstorch.nn._more_functional import (  # noqa: E402
    __all__ as _more_names,
)
from glasstorch.nn._more_functional import (  # noqa: E402, F401 - re-exported
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool3d,
    bilinear,
    celu,
    conv_transpose1d,
    cosine_embedding_loss,
    embedding_bag,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hinge_embedding_loss,
    instance_norm,
    margin_ranking_loss,
    max_pool3d,
    pairwise_distance,
    relu6,
    rms_norm,
    selu,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    triplet_margin_loss,
)
from glasstorch.nn._more_functional import threshold as _threshold  # noqa: E402

# F.threshold: bound by name, as ``threshold`` is also a parameter of softplus above.
globals()["threshold"] = _threshold

__all__ += _more_names

# The functions of glasstorch.nn._extra_functional (local response norm, channel and
# alpha dropouts, rrelu, channel shuffle, gumbel-softmax, max-unpooling, power-average
# and 3-D adaptive pooling, conv3d, and the margin, Poisson and Gaussian losses).
from glasstorch.nn._extra_functional import (  # noqa: E402
    __all__ as _extra_names,
)
from glasstorch.nn._extra_functional import (  # noqa: E402, F401 - re-exported
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    alpha_dropout,
    channel_shuffle,
    conv3d,
    dropout1d,
    dropout3d,
    feature_alpha_dropout,
    gaussian_nll_loss,
    gumbel_softmax,
    local_response_norm,
    lp_pool1d,
    lp_pool2d,
    max_unpool1d,
    max_unpool2d,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    rrelu,
    soft_margin_loss,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

__all__ += _extra_names
