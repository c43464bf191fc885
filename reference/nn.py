"""Kernels for neural-network layers: the fused cross-entropy."""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from .elementwise import _exp, _log
from .strided import converter, memory


class NNKernels:
    """cross_entropy."""

    def cross_entropy(
        self,
        losses: Strided,
        log_probs: Strided,
        logits: Strided,
        target: Strided,
        ignore_index: int,
    ) -> None:
        store = converter(losses.buffer.dtype)
        loss_mem, lp_mem = memory(losses), memory(log_probs)
        x_mem, t_mem = memory(logits), memory(target)
        n, c = logits.shape
        for i in range(n):
            row = [
                x_mem[logits.offset + i * logits.strides[0] + j * logits.strides[1]]
                for j in range(c)
            ]
            # log_softmax, safely: log(sum(exp(x))) = m + log(sum(exp(x - m))).
            m = max(row) if row else 0.0
            if not math.isfinite(m):
                m = 0.0 if m != m else m
            log_total = m + _log(math.fsum(_exp(x - m) for x in row))
            for j in range(c):
                position = log_probs.offset + i * log_probs.strides[0] + j * log_probs.strides[1]
                lp_mem[position] = store(row[j] - log_total)
            label = t_mem[target.offset + i * target.strides[0]]
            loss = 0.0 if label == ignore_index else log_total - row[label]
            loss_mem[losses.offset + i * losses.strides[0]] = store(loss)
