"""The LSTM kernels of the CUDA tier: the cell (``fast/cuda/rnn.cu``), one launch per step,
and the whole layer composed of it.

``lstm_forward`` and ``lstm_backward`` (a whole layer over a sequence) have no
``.cu`` kernel of their own: each is the loop over time the kernel contract
defines, run from the host, with every step a few launches on the device (the
product through this tier's ``matmul``, the adds through ``binary``, the cell
through the kernels below), as the convolutions here are composed of
``im2col`` and ``matmul``. Nothing leaves the device; the price is a few
launches per step, where a fused kernel would keep the state on chip.
"""

from __future__ import annotations

from glasstorch._kernels import Strided


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
        steps, batch, gate_size = inputs.shape
        gates = self._matrix(batch, gate_size, inputs)
        w_hh_t = w_hh._replace(shape=w_hh.shape[::-1], strides=w_hh.strides[::-1])
        if bias is not None:
            bias = bias._replace(shape=(batch, gate_size), strides=(0, bias.strides[0]))
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            before, after = (t + 1, t) if reverse else (t, t + 1)
            self.matmul(gates, _slot(hs, before), w_hh_t)
            self.binary("add", gates, gates, _slot(inputs, t))
            if bias is not None:
                self.binary("add", gates, gates, bias)
            self.lstm_cell(
                _slot(hs, after),
                _slot(cs, after),
                _slot(activations, t),
                _slot(tanh_c, t),
                gates,
                _slot(cs, before),
            )

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
        """The layer's gradient from the host: per step an add, the cell's gradient,
        a copy of d_c and a product."""
        steps, batch, hidden = tanh_c.shape
        d_c_prev = self._matrix(batch, hidden, tanh_c)
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            before = t + 1 if reverse else t
            if d_outputs is not None:
                self.binary("add", d_h, d_h, _slot(d_outputs, t))
            self.lstm_cell_backward(
                _slot(d_inputs, t),
                d_c_prev,
                d_h,
                d_c,
                _slot(activations, t),
                _slot(tanh_c, t),
                _slot(cs, before),
            )
            self.copy(d_c, d_c_prev)
            self.matmul(d_h, _slot(d_inputs, t), w_hh)

    def _matrix(self, rows: int, columns: int, like: Strided) -> Strided:
        """A new contiguous ``(rows, columns)`` device matrix of ``like``'s dtype."""
        buffer = self.driver.device_empty(rows * columns, like.buffer.dtype)
        return Strided(buffer, (rows, columns), (columns, 1), 0)


def _slot(buffer: Strided, index: int) -> Strided:
    """Entry ``index`` of the first dimension of ``buffer``: one step's slice."""
    return buffer._replace(
        shape=buffer.shape[1:],
        strides=buffer.strides[1:],
        offset=buffer.offset + index * buffer.strides[0],
    )
