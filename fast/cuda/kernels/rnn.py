"""The LSTM kernels of the CUDA tier: the cell (``fast/cuda/rnn.cu``), one launch per step,
and the whole layer composed of it.

``lstm_forward`` and ``lstm_backward`` (a whole layer over a sequence) have no
``.cu`` kernel of their own: each is the loop over time the kernel contract
defines (``glasstorch._kernels.lstm_forward_steps`` and ``lstm_backward_steps``;
``lstm_weight_grad`` is its two products, ``lstm_weight_grad_products``),
run from the host, with every step a few launches on the device (the product
through this tier's ``matmul``, the adds through ``binary``, the cell through
the kernels below), as the convolutions here are composed of
``im2col`` and ``matmul``. Nothing leaves the device; the price is a few
launches per step, where a fused kernel would keep the state on chip.
"""

from __future__ import annotations

from glasstorch._kernels import (
    Strided,
    lstm_backward_steps,
    lstm_forward_steps,
    lstm_weight_grad_products,
)


class LSTMCellKernels:
    """lstm_cell and lstm_cell_backward; lstm_forward and lstm_backward composed of them."""

    def lstm_cell(
        self,
        h: Strided,
        c: Strided,
        activations: Strided,
        tanh_c: Strided,
        gates: Strided,
        c_prev: Strided,
    ) -> None:
        """One LSTM step from the gates' pre-activations: a thread per (b, j) of the state."""
        batch, hidden = h.shape
        self.launch(
            "rnn.cu", f"lstm_cell_{self.suffix(h)}", batch * hidden, self.ptr(h), self.ptr(c),
            self.ptr(activations), self.ptr(tanh_c), self.ptr(gates), self.ptr(c_prev), batch,
            hidden,
        )  # fmt: skip

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
        """The gradients of one step with respect to the gates and ``c_prev``."""
        batch, hidden = d_h.shape
        self.launch(
            "rnn.cu", f"lstm_cell_backward_{self.suffix(d_h)}", batch * hidden,
            self.ptr(d_gates), self.ptr(d_c_prev), self.ptr(d_h), self.ptr(d_c),
            self.ptr(activations), self.ptr(tanh_c), self.ptr(c_prev), batch, hidden,
        )  # fmt: skip

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
        """The layer's steps from the host: per step a product, one or two adds, the cell."""
        _, batch, gate_size = inputs.shape
        gates = self._matrix(batch, gate_size, inputs)
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
        """The layer's gradient from the host: per step an add, the cell's gradient
        (d_c read and overwritten in place, a thread per element) and a product."""
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
        """The two weight gradients: two products through this tier's ``matmul``."""
        lstm_weight_grad_products(self, d_w_ih, d_w_hh, d_gates, inputs, h_prev)

    def _matrix(self, rows: int, columns: int, like: Strided) -> Strided:
        """A new contiguous ``(rows, columns)`` device matrix of ``like``'s dtype."""
        buffer = self.driver.device_empty(rows * columns, like.buffer.dtype)
        return Strided(buffer, (rows, columns), (columns, 1), 0)
