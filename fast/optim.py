"""Optimizer kernels of the fast tier: one fused C loop per optimizer (``fast/csrc/optim.c``).

Scalars that depend only on the step number are computed here, once per call,
with exactly the reference tier's expressions, so both tiers round them alike;
C then does the per-element work. A state buffer the configuration does not
use is passed as NULL, and C tests the pointer.
"""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from ._glue import ffi, lib, optional_view, view

NULL = ffi.NULL


def _check(status: int, kernel: str, param: Strided) -> None:
    if status:
        raise TypeError(f"{kernel} supports float32 and float64, not {param.buffer.dtype}")


class OptimKernels:
    """sgd_step, adam_step, rmsprop_step, adagrad_step, adadelta_step."""

    def sgd_step(
        self,
        param: Strided,
        grad: Strided,
        momentum_buffer: Strided | None,
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
        maximize: bool,
        first_step: bool,
    ) -> None:
        """One SGD step (see :meth:`glasstorch._kernels.Kernels.sgd_step`)."""
        buf = optional_view(momentum_buffer) if momentum != 0 else NULL
        status = lib.gt_sgd_step(
            view(param), view(grad), buf, lr, weight_decay, momentum, dampening,
            bool(nesterov), bool(maximize), bool(first_step),
        )  # fmt: skip
        _check(status, "sgd_step", param)

    def adam_step(
        self,
        param: Strided,
        grad: Strided,
        exp_avg: Strided,
        exp_avg_sq: Strided,
        max_exp_avg_sq: Strided | None,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled_weight_decay: bool,
        amsgrad: bool,
        maximize: bool,
    ) -> None:
        """One Adam or AdamW step (see :meth:`glasstorch._kernels.Kernels.adam_step`)."""
        bias1 = 1 - beta1**step
        bias2_sqrt = math.sqrt(1 - beta2**step)
        vmax = optional_view(max_exp_avg_sq) if amsgrad else NULL
        status = lib.gt_adam_step(
            view(param), view(grad), view(exp_avg), view(exp_avg_sq), vmax, lr, beta1, beta2,
            eps, weight_decay, bool(decoupled_weight_decay), bool(maximize), bias1, bias2_sqrt,
        )  # fmt: skip
        _check(status, "adam_step", param)

    def rmsprop_step(
        self,
        param: Strided,
        grad: Strided,
        square_avg: Strided,
        momentum_buffer: Strided | None,
        grad_avg: Strided | None,
        lr: float,
        alpha: float,
        eps: float,
        weight_decay: float,
        momentum: float,
        centered: bool,
        maximize: bool,
    ) -> None:
        """One RMSprop step (see :meth:`glasstorch._kernels.Kernels.rmsprop_step`)."""
        buf = optional_view(momentum_buffer) if momentum > 0 else NULL
        avg = optional_view(grad_avg) if centered else NULL
        status = lib.gt_rmsprop_step(
            view(param), view(grad), view(square_avg), buf, avg, lr, alpha, eps,
            weight_decay, momentum, bool(maximize),
        )  # fmt: skip
        _check(status, "rmsprop_step", param)

    def adagrad_step(
        self,
        param: Strided,
        grad: Strided,
        state_sum: Strided,
        step: int,
        lr: float,
        lr_decay: float,
        weight_decay: float,
        eps: float,
        maximize: bool,
    ) -> None:
        """One Adagrad step (see :meth:`glasstorch._kernels.Kernels.adagrad_step`)."""
        clr = lr / (1 + (step - 1) * lr_decay)
        status = lib.gt_adagrad_step(
            view(param), view(grad), view(state_sum), clr, weight_decay, eps, bool(maximize)
        )
        _check(status, "adagrad_step", param)

    def adadelta_step(
        self,
        param: Strided,
        grad: Strided,
        square_avg: Strided,
        acc_delta: Strided,
        lr: float,
        rho: float,
        eps: float,
        weight_decay: float,
        maximize: bool,
    ) -> None:
        """One Adadelta step (see :meth:`glasstorch._kernels.Kernels.adadelta_step`)."""
        status = lib.gt_adadelta_step(
            view(param), view(grad), view(square_avg), view(acc_delta), lr, rho, eps,
            weight_decay, bool(maximize),
        )  # fmt: skip
        _check(status, "adadelta_step", param)
