"""The fused kernels of a transformer block: LayerNorm, GELU and the attention softmax.

Every view here is contiguous, so element ``(r, j)`` of an ``(R, N)`` view sits
at ``offset + r * N + j``, and an elementwise view is walked as ``offset + i``.
Each kernel loops over the positions it writes. LayerNorm's row mean and
variance are PyTorch's, in the input's own precision (:mod:`.moments` says
why: a float32 variance overflows where PyTorch's does); the sums of the
gradients are taken in double precision with :func:`math.fsum`, and each
stored value is rounded once.
"""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from .elementwise import _div, _exp, _fsum
from .moments import fma, reciprocal_sqrt, rounder, row_moments
from .reductions import _max
from .strided import converter, memory, numel

_SQRT_HALF = math.sqrt(0.5)
_SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_CUBIC = 0.044715


def _row(view: Strided, r: int) -> list[float]:
    """Row ``r`` of the contiguous ``(R, N)`` view, as Python floats."""
    n = view.shape[-1]
    start = view.offset + r * n
    return list(memory(view)[start : start + n])


def _vector(view: Strided | None, n: int, default: float) -> list[float]:
    """The 1-D contiguous ``view`` as a list, or ``n`` copies of ``default`` without one."""
    if view is None:
        return [default] * n
    return list(memory(view)[view.offset : view.offset + n])


def _rows_and_width(view: Strided) -> tuple[int, int]:
    """``(R, N)``: the number of rows and the row length of a contiguous view."""
    n = view.shape[-1] if view.shape else 1
    return (numel(view.shape) // n if n else 0), n


class TransformerKernels:
    """layer_norm, gelu, attention_softmax and their gradients."""

    # --------------------------------------------------------------- LayerNorm
    def row_moments(self, mean, var, input):
        rows, n = _rows_and_width(input)
        dtype_name = input.buffer.dtype.name
        store = converter(mean.buffer.dtype)
        mean_mem, var_mem = memory(mean), memory(var)
        for r in range(rows):
            m, v = row_moments(_row(input, r), dtype_name)
            mean_mem[mean.offset + r] = store(m)
            var_mem[var.offset + r] = store(v)

    def layer_norm(self, out, mean, rstd, input, weight, bias, eps):
        # PyTorch's arithmetic, in the input's precision (see reference/moments.py):
        # a float32 row's variance overflows to inf where PyTorch's does.
        rows, n = _rows_and_width(input)
        dtype_name = input.buffer.dtype.name
        round_ = rounder(dtype_name)
        store = converter(out.buffer.dtype)
        out_mem, mean_mem, rstd_mem = memory(out), memory(mean), memory(rstd)
        affine = weight is not None or bias is not None
        w, b = _vector(weight, n, 1.0), _vector(bias, n, 0.0)
        for r in range(rows):
            x = _row(input, r)
            m, variance = row_moments(x, dtype_name)
            if variance < 0:  # max(var, 0); a NaN stays NaN
                variance = 0.0
            s = reciprocal_sqrt(round_(variance + round_(eps)), round_)
            mean_mem[mean.offset + r] = store(m)
            rstd_mem[rstd.offset + r] = store(s)
            for j in range(n):
                xhat = round_(round_(x[j] - m) * s)
                # scale and shift with one rounding (a fused multiply-add)
                value = fma(xhat, w[j], b[j], round_) if affine else xhat
                out_mem[out.offset + r * n + j] = store(value)

    def layer_norm_backward(
        self, grad_input, grad_weight, grad_bias, grad_output, input, mean, rstd, weight
    ):
        rows, n = _rows_and_width(input)
        store = converter(grad_output.buffer.dtype)
        means, rstds = _vector(mean, rows, 0.0), _vector(rstd, rows, 1.0)
        w = _vector(weight, n, 1.0)
        dys = [_row(grad_output, r) for r in range(rows)]
        xhats = [[(v - means[r]) * rstds[r] for v in _row(input, r)] for r in range(rows)]
        if grad_input is not None:
            gi_mem = memory(grad_input)
            for r in range(rows):
                g = [dy * wj for dy, wj in zip(dys[r], w)]
                g_mean = _fsum(g) / n
                g_xhat_mean = _fsum(gj * xj for gj, xj in zip(g, xhats[r])) / n
                for j in range(n):
                    value = rstds[r] * (g[j] - g_mean - xhats[r][j] * g_xhat_mean)
                    gi_mem[grad_input.offset + r * n + j] = store(value)
        for grad, term in ((grad_weight, lambda r, j: dys[r][j] * xhats[r][j]),
                           (grad_bias, lambda r, j: dys[r][j])):  # fmt: skip
            if grad is not None:
                grad_mem = memory(grad)
                for j in range(n):
                    grad_mem[grad.offset + j] = store(_fsum(term(r, j) for r in range(rows)))

    # -------------------------------------------------------------------- GELU
    def gelu(self, out, input, approximate):
        store = converter(out.buffer.dtype)
        out_mem, x_mem = memory(out), memory(input)
        for i in range(numel(out.shape)):
            out_mem[out.offset + i] = store(_gelu(x_mem[input.offset + i], approximate))

    def gelu_backward(self, grad_input, grad_output, input, approximate):
        store = converter(grad_input.buffer.dtype)
        gi_mem, g_mem, x_mem = memory(grad_input), memory(grad_output), memory(input)
        for i in range(numel(grad_input.shape)):
            slope = _gelu_slope(x_mem[input.offset + i], approximate)
            gi_mem[grad_input.offset + i] = store(g_mem[grad_output.offset + i] * slope)

    # --------------------------------------------------------------- attention
    def attention_softmax(self, out, scores, scale, causal):
        batch, length, keys = scores.shape
        store = converter(out.buffer.dtype)
        out_mem = memory(out)
        for r in range(batch * length):
            i = r % length  # the query position of this row
            visible = min(i + 1, keys) if causal else keys
            x = [scale * v for v in _row(scores, r)[:visible]]
            weights = _softmax(x) + [0.0] * (keys - visible)
            for j in range(keys):
                out_mem[out.offset + r * keys + j] = store(weights[j])

    def softmax_backward(self, grad_input, grad_output, output, scale):
        rows, n = _rows_and_width(output)
        store = converter(grad_input.buffer.dtype)
        gi_mem = memory(grad_input)
        for r in range(rows):
            g, y = _row(grad_output, r), _row(output, r)
            dot = _fsum(gj * yj for gj, yj in zip(g, y))
            for j in range(n):
                gi_mem[grad_input.offset + r * n + j] = store(scale * y[j] * (g[j] - dot))


def _gelu(x: float, approximate: bool) -> float:
    """``x * Phi(x)``, or its tanh approximation."""
    if approximate:
        return 0.5 * x * (1.0 + math.tanh(_SQRT_TWO_OVER_PI * (x + _GELU_CUBIC * x * x * x)))
    return x * 0.5 * (1.0 + math.erf(x * _SQRT_HALF))


def _gelu_slope(x: float, approximate: bool) -> float:
    """The derivative of :func:`_gelu` at ``x``."""
    if approximate:
        t = math.tanh(_SQRT_TWO_OVER_PI * (x + _GELU_CUBIC * x * x * x))
        d_inner = _SQRT_TWO_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner
    cdf = 0.5 * (1.0 + math.erf(x * _SQRT_HALF))
    pdf = _exp(-0.5 * x * x) * _INV_SQRT_TWO_PI
    return cdf + x * pdf


def _softmax(x: list[float]) -> list[float]:
    """The softmax of one row, shifted by its maximum so ``exp`` never overflows."""
    if not x:
        return []
    shift = _max(x)
    if not math.isfinite(shift):  # NaN spreads through the sum; inf - inf gives NaN
        shift = 0.0 if shift != shift else shift
    exps = [_exp(v - shift) if v == v else v for v in x]
    total = _fsum(exps)
    return [_div(e, total) for e in exps]
