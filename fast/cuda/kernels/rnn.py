"""The LSTM cell kernels of the CUDA tier (``fast/cuda/rnn.cu``): one launch per step."""

from __future__ import annotations

from glasstorch._kernels import Strided


class LSTMCellKernels:
    """lstm_cell and lstm_cell_backward."""

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
