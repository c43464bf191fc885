"""Optimizer kernels of the CUDA tier: one fused launch per parameter (``fast/cuda/optim.cu``).

Scalars that depend only on the step number are computed here, once per call,
with the CPU tiers' expressions; the device does the per-element work. A
state buffer the configuration does not use is passed as a null pointer.
"""

from __future__ import annotations

import math

from glasstorch._kernels import Strided


def _check(kernel: str, param: Strided) -> None:
    if param.buffer.dtype.kind != "f":
        raise TypeError(f"{kernel} supports float32 and float64, not {param.buffer.dtype}")


class OptimKernels:
    """sgd_step, adam_step, rmsprop_step, adagrad_step, adadelta_step."""

    def _optional(self, view: Strided | None, used: bool) -> int:
        """The device address of a state buffer, or 0 (null) when unused."""
        return self.ptr(view) if used and view is not None else 0

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
        _check("sgd_step", param)
        self.launch(
            "optim.cu", f"sgd_step_{self.suffix(param)}", param.shape[0], self.ptr(param),
            self.ptr(grad), self._optional(momentum_buffer, momentum != 0), param.shape[0],
            lr, weight_decay, momentum, dampening, int(nesterov), int(maximize),
            int(first_step),
        )  # fmt: skip

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
        _check("adam_step", param)
        bias1 = 1 - beta1**step
        bias2_sqrt = math.sqrt(1 - beta2**step)
        self.launch(
            "optim.cu", f"adam_step_{self.suffix(param)}", param.shape[0], self.ptr(param),
            self.ptr(grad), self.ptr(exp_avg), self.ptr(exp_avg_sq),
            self._optional(max_exp_avg_sq, amsgrad), param.shape[0], lr, beta1, beta2, eps,
            weight_decay, int(decoupled_weight_decay), int(maximize), bias1, bias2_sqrt,
        )  # fmt: skip

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
        _check("rmsprop_step", param)
        self.launch(
            "optim.cu", f"rmsprop_step_{self.suffix(param)}", param.shape[0], self.ptr(param),
            self.ptr(grad), self.ptr(square_avg), self._optional(momentum_buffer, momentum > 0),
            self._optional(grad_avg, centered), param.shape[0], lr, alpha, eps, weight_decay,
            momentum, int(maximize),
        )  # fmt: skip

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
        _check("adagrad_step", param)
        clr = lr / (1 + (step - 1) * lr_decay)
        self.launch(
            "optim.cu", f"adagrad_step_{self.suffix(param)}", param.shape[0], self.ptr(param),
            self.ptr(grad), self.ptr(state_sum), param.shape[0], clr, weight_decay, eps,
            int(maximize),
        )  # fmt: skip

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
        _check("adadelta_step", param)
        self.launch(
            "optim.cu", f"adadelta_step_{self.suffix(param)}", param.shape[0], self.ptr(param),
            self.ptr(grad), self.ptr(square_avg), self.ptr(acc_delta), param.shape[0], lr, rho,
            eps, weight_decay, int(maximize),
        )  # fmt: skip
