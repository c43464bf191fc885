"""Optimizer kernels: one fused update per optimizer, one element at a time.

Each loop reads a parameter, its gradient and its state, applies the update rule
written in the contract's docstring line by line, and writes the parameter and
the state back. Divisions and square roots go through the IEEE helpers of
``elementwise`` (``eps=0`` may divide 0 by 0: NaN, as in C, not ZeroDivisionError). The frontend passes contiguous 1-D views, so element ``i`` of
every buffer is at ``offset + i``.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from .elementwise import _div, _sqrt
from .strided import converter, memory


def _cells(view: Strided | None):
    """(memoryview, offset) of a buffer, or (None, 0) for an unused one."""
    return (memory(view), view.offset) if view is not None else (None, 0)


class OptimKernels:
    """sgd_step, adam_step, rmsprop_step, adagrad_step, adadelta_step."""

    def sgd_step(
        self,
        param,
        grad,
        momentum_buffer,
        lr,
        weight_decay,
        momentum,
        dampening,
        nesterov,
        maximize,
        first_step,
    ) -> None:
        # -- solution: nn/optimizers
        store = converter(param.buffer.dtype)
        p, po = _cells(param)
        g, go = _cells(grad)
        buf, bo = _cells(momentum_buffer)
        for i in range(param.shape[0]):
            d = -g[go + i] if maximize else g[go + i]
            if weight_decay != 0:  # skipped at 0, so that an inf weight stays inf
                d = d + weight_decay * p[po + i]
            if momentum != 0:
                if first_step:
                    b = d
                else:
                    b = momentum * buf[bo + i] + (1 - dampening) * d
                buf[bo + i] = store(b)
                b = buf[bo + i]  # the stored (rounded) value, as the fast tier sees it
                d = d + momentum * b if nesterov else b
            p[po + i] = store(p[po + i] - lr * d)
        # -- end solution

    def adam_step(
        self,
        param,
        grad,
        exp_avg,
        exp_avg_sq,
        max_exp_avg_sq,
        step,
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled_weight_decay,
        amsgrad,
        maximize,
    ) -> None:
        # -- solution: nn/optimizers
        store = converter(param.buffer.dtype)
        p, po = _cells(param)
        g, go = _cells(grad)
        m, mo = _cells(exp_avg)
        v, vo = _cells(exp_avg_sq)
        vmax, xo = _cells(max_exp_avg_sq)
        bias1 = 1 - beta1**step
        bias2_sqrt = _sqrt(1 - beta2**step)
        for i in range(param.shape[0]):
            d = -g[go + i] if maximize else g[go + i]
            if decoupled_weight_decay:
                p[po + i] = store(p[po + i] * (1 - lr * weight_decay))
            elif weight_decay != 0:
                d = d + weight_decay * p[po + i]
            m[mo + i] = store(beta1 * m[mo + i] + (1 - beta1) * d)
            v[vo + i] = store(beta2 * v[vo + i] + (1 - beta2) * d * d)
            used = v[vo + i]
            if amsgrad:
                vmax[xo + i] = store(max(vmax[xo + i], used))
                used = vmax[xo + i]
            denom = _div(_sqrt(used), bias2_sqrt) + eps
            p[po + i] = store(p[po + i] - _div(_div(lr, bias1) * m[mo + i], denom))
        # -- end solution

    def rmsprop_step(
        self,
        param,
        grad,
        square_avg,
        momentum_buffer,
        grad_avg,
        lr,
        alpha,
        eps,
        weight_decay,
        momentum,
        centered,
        maximize,
    ) -> None:
        store = converter(param.buffer.dtype)
        p, po = _cells(param)
        g, go = _cells(grad)
        sq, so = _cells(square_avg)
        buf, bo = _cells(momentum_buffer)
        ga, ao = _cells(grad_avg)
        for i in range(param.shape[0]):
            d = -g[go + i] if maximize else g[go + i]
            if weight_decay != 0:  # skipped at 0, so that an inf weight stays inf
                d = d + weight_decay * p[po + i]
            sq[so + i] = store(alpha * sq[so + i] + (1 - alpha) * d * d)
            if centered:
                ga[ao + i] = store(alpha * ga[ao + i] + (1 - alpha) * d)
                avg = _sqrt(max(sq[so + i] - ga[ao + i] * ga[ao + i], 0.0)) + eps
            else:
                avg = _sqrt(sq[so + i]) + eps
            if momentum > 0:
                buf[bo + i] = store(momentum * buf[bo + i] + _div(d, avg))
                p[po + i] = store(p[po + i] - lr * buf[bo + i])
            else:
                p[po + i] = store(p[po + i] - _div(lr * d, avg))

    def adagrad_step(
        self, param, grad, state_sum, step, lr, lr_decay, weight_decay, eps, maximize
    ) -> None:
        store = converter(param.buffer.dtype)
        p, po = _cells(param)
        g, go = _cells(grad)
        s, so = _cells(state_sum)
        clr = _div(lr, 1 + (step - 1) * lr_decay)
        for i in range(param.shape[0]):
            d = -g[go + i] if maximize else g[go + i]
            if weight_decay != 0:  # skipped at 0, so that an inf weight stays inf
                d = d + weight_decay * p[po + i]
            s[so + i] = store(s[so + i] + d * d)
            p[po + i] = store(p[po + i] - _div(clr * d, _sqrt(s[so + i]) + eps))

    def adadelta_step(
        self, param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay, maximize
    ) -> None:
        store = converter(param.buffer.dtype)
        p, po = _cells(param)
        g, go = _cells(grad)
        sq, so = _cells(square_avg)
        acc, ao = _cells(acc_delta)
        for i in range(param.shape[0]):
            d = -g[go + i] if maximize else g[go + i]
            if weight_decay != 0:  # skipped at 0, so that an inf weight stays inf
                d = d + weight_decay * p[po + i]
            sq[so + i] = store(rho * sq[so + i] + (1 - rho) * d * d)
            delta = _div(_sqrt(acc[ao + i] + eps), _sqrt(sq[so + i] + eps)) * d
            acc[ao + i] = store(rho * acc[ao + i] + (1 - rho) * delta * delta)
            p[po + i] = store(p[po + i] - lr * delta)
