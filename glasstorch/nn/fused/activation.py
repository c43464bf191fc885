"""GELU as one node running the ``gelu`` and ``gelu_backward`` kernels."""

from __future__ import annotations

import math

from glasstorch import _tier
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.fused.common import fusable
from glasstorch.ops.pointwise import erf
from glasstorch.tensor import empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

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
        if fusable(x):
            out = empty_tensor(x.shape, x.dtype, device=x.device)
            kernels.gelu(out._strided(), x.contiguous()._strided(), approximate == "tanh")
            return out
        if approximate == "tanh":
            inner = (x + x * x * x * _GELU_CUBIC) * _SQRT_TWO_OVER_PI
            return x * 0.5 * (inner.tanh() + 1)
        return x * 0.5 * (erf(x * _SQRT_HALF) + 1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if not is_grad_enabled() and fusable(x, grad):
            grad_input = empty_tensor(x.shape, x.dtype, device=x.device)
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
