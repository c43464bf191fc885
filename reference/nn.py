"""Kernels for neural-network layers: the fused cross-entropy and its gradient."""

from __future__ import annotations

import math

from glasstorch._kernels import (
    Strided,
    lstm_backward_steps,
    lstm_forward_steps,
    lstm_weight_grad_products,
)

from .elementwise import _div, _exp, _fsum, _log
from .strided import converter, memory


class NNKernels:
    """cross_entropy and cross_entropy_backward."""

    def cross_entropy(
        self,
        losses: Strided,
        row_weights: Strided,
        totals: Strided,
        log_probs: Strided,
        logits: Strided,
        target: Strided,
        weight: Strided | None,
        ignore_index: int,
    ) -> int:
        # -- solution: nn/cross-entropy
        n, c = logits.shape
        labels = _labels(target)
        # Every label is checked before any memory is read through it.
        for i, label in enumerate(labels):
            if label != ignore_index and not 0 <= label < c:
                return i
        store = converter(losses.buffer.dtype)
        loss_mem, weight_mem, lp_mem = memory(losses), memory(row_weights), memory(log_probs)
        x_mem = memory(logits)
        for i, label in enumerate(labels):
            row = [
                x_mem[logits.offset + i * logits.strides[0] + j * logits.strides[1]]
                for j in range(c)
            ]
            # log_softmax, safely: log(sum(exp(x))) = m + log(sum(exp(x - m))),
            # and x - m taken first: with m = 1e30, m + log(3) is 1e30 again.
            m = max(row) if row else 0.0
            if not math.isfinite(m):
                m = 0.0 if m != m else m
            log_sum = _log(_fsum(_exp(x - m) for x in row))
            for j in range(c):
                position = log_probs.offset + i * log_probs.strides[0] + j * log_probs.strides[1]
                lp_mem[position] = store((row[j] - m) - log_sum)
            if label == ignore_index:
                w, loss = 0.0, 0.0
            else:
                w = _class_weight(weight, label)
                loss = w * (log_sum - (row[label] - m))  # -w * log_probs[i, label]
            weight_mem[row_weights.offset + i * row_weights.strides[0]] = store(w)
            loss_mem[losses.offset + i * losses.strides[0]] = store(loss)
        # The reductions, over the values as stored.
        loss_sum = _fsum(loss_mem[losses.offset + i * losses.strides[0]] for i in range(n))
        weight_sum = _fsum(
            weight_mem[row_weights.offset + i * row_weights.strides[0]] for i in range(n)
        )
        totals_mem = memory(totals)
        loss_at, weight_at, mean_at = (totals.offset + k * totals.strides[0] for k in range(3))
        totals_mem[loss_at], totals_mem[weight_at] = store(loss_sum), store(weight_sum)
        # The mean is the ratio of the sums as stored, in the loss's dtype, as
        # PyTorch's: two float32 sums past 3.4e38 are infinite, their ratio NaN.
        totals_mem[mean_at] = store(_div(totals_mem[loss_at], totals_mem[weight_at]))
        return -1
        # -- end solution

    def cross_entropy_backward(
        self,
        grad_logits: Strided,
        log_probs: Strided,
        target: Strided,
        weight: Strided | None,
        grad_losses: Strided,
        ignore_index: int,
    ) -> None:
        # -- solution: nn/cross-entropy
        n, c = log_probs.shape
        store = converter(grad_logits.buffer.dtype)
        out_mem, lp_mem, g_mem = memory(grad_logits), memory(log_probs), memory(grad_losses)
        for i, label in enumerate(_labels(target)):
            counted = label != ignore_index and 0 <= label < c
            # d loss_i / d logits[i, j] = g_i * w * (softmax_j - [j == label])
            scale = 0.0
            if counted:
                g = g_mem[grad_losses.offset + i * grad_losses.strides[0]]
                scale = g * _class_weight(weight, label)
            for j in range(c):
                position = (
                    grad_logits.offset + i * grad_logits.strides[0] + j * grad_logits.strides[1]
                )
                if not counted:
                    out_mem[position] = store(0.0)  # an ignored row has no gradient
                    continue
                lp = lp_mem[log_probs.offset + i * log_probs.strides[0] + j * log_probs.strides[1]]
                one_hot = 1.0 if j == label else 0.0
                out_mem[position] = store(scale * (_exp(lp) - one_hot))
        # -- end solution


def _labels(target: Strided) -> list[int]:
    """The class index of each row."""
    t_mem = memory(target)
    return [t_mem[target.offset + i * target.strides[0]] for i in range(target.shape[0])]


def _class_weight(weight: Strided | None, label: int) -> float:
    """``weight[label]``, or 1 when there are no class weights."""
    if weight is None:
        return 1.0
    return memory(weight)[weight.offset + label * weight.strides[0]]


# ------------------------------------------------------------------ LSTM cell
def _sigmoid(x: float) -> float:
    """``1 / (1 + e^-x)``, without overflow for large ``|x|``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class LSTMCellKernels:
    """One LSTM step's elementwise work and its gradient (contiguous rows)."""

    def lstm_cell(
        self,
        h: Strided,
        c: Strided,
        activations: Strided,
        tanh_c: Strided,
        gates: Strided,
        c_prev: Strided,
    ) -> None:
        batch, hidden = h.shape
        store = converter(h.buffer.dtype)
        h_mem, c_mem, act_mem, t_mem = memory(h), memory(c), memory(activations), memory(tanh_c)
        g_mem, cp_mem = memory(gates), memory(c_prev)
        for b in range(batch):
            row4, row = b * 4 * hidden, b * hidden  # contiguous: element (b, j) at b * width + j
            for j in range(hidden):
                at = [gates.offset + row4 + k * hidden + j for k in range(4)]
                i = _sigmoid(g_mem[at[0]])
                f = _sigmoid(g_mem[at[1]])
                g = math.tanh(g_mem[at[2]])
                o = _sigmoid(g_mem[at[3]])
                for k, value in enumerate((i, f, g, o)):
                    act_mem[activations.offset + row4 + k * hidden + j] = store(value)
                cell = f * cp_mem[c_prev.offset + row + j] + i * g
                c_mem[c.offset + row + j] = store(cell)
                t_mem[tanh_c.offset + row + j] = store(math.tanh(cell))
                h_mem[h.offset + row + j] = store(o * math.tanh(cell))

    def lstm_cell_backward(
        self,
        d_gates: Strided,
        d_c_prev: Strided,
        d_h: Strided,
        d_c: Strided,
        activations: Strided,
        tanh_c: Strided,
        c_prev: Strided,
    ) -> None:
        batch, hidden = d_h.shape
        store = converter(d_gates.buffer.dtype)
        dg_mem, dcp_mem, dh_mem, dc_mem = (
            memory(d_gates),
            memory(d_c_prev),
            memory(d_h),
            memory(d_c),
        )
        act_mem, t_mem, cp_mem = memory(activations), memory(tanh_c), memory(c_prev)
        for b in range(batch):
            row4, row = b * 4 * hidden, b * hidden
            for j in range(hidden):
                i, f, g, o = (act_mem[activations.offset + row4 + k * hidden + j] for k in range(4))
                t = t_mem[tanh_c.offset + row + j]
                dh = dh_mem[d_h.offset + row + j]
                dc = dc_mem[d_c.offset + row + j] + dh * o * (1 - t * t)
                grads = (
                    dc * g * i * (1 - i),
                    dc * cp_mem[c_prev.offset + row + j] * f * (1 - f),
                    dc * i * (1 - g * g),
                    dh * t * o * (1 - o),
                )
                for k, value in enumerate(grads):
                    dg_mem[d_gates.offset + row4 + k * hidden + j] = store(value)
                dcp_mem[d_c_prev.offset + row + j] = store(dc * f)

    # A whole layer: the steps above in a loop, each step's product by matmul
    # (the loop is the contract's own definition, lstm_forward_steps).
    def lstm_forward(
        self,
        hs: Strided,
        cs: Strided,
        activations: Strided,
        tanh_c: Strided,
        inputs: Strided,
        bias: Strided | None,
        w_hh: Strided,
        reverse: bool,
    ) -> None:
        _, batch, gate_size = inputs.shape
        gates = _new_matrix(self, batch, gate_size, inputs.buffer.dtype)
        lstm_forward_steps(self, gates, hs, cs, activations, tanh_c, inputs, bias, w_hh, reverse)

    def lstm_backward(
        self,
        d_inputs: Strided,
        d_h: Strided,
        d_c: Strided,
        d_outputs: Strided | None,
        activations: Strided,
        tanh_c: Strided,
        cs: Strided,
        w_hh: Strided,
        reverse: bool,
    ) -> None:
        lstm_backward_steps(
            self, d_inputs, d_h, d_c, d_outputs, activations, tanh_c, cs, w_hh, reverse
        )

    def lstm_weight_grad(
        self,
        d_w_ih: Strided,
        d_w_hh: Strided,
        d_gates: Strided,
        inputs: Strided,
        h_prev: Strided,
    ) -> None:
        lstm_weight_grad_products(self, d_w_ih, d_w_hh, d_gates, inputs, h_prev)


def _new_matrix(kernels, rows: int, columns: int, dtype) -> Strided:
    """A fresh contiguous ``(rows, columns)`` matrix from the tier's allocator."""
    return Strided(kernels.allocate(rows * columns, dtype), (rows, columns), (columns, 1), 0)
