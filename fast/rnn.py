"""Recurrent-layer kernels of the fast tier: one LSTM step's elementwise work."""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, optional_view, refused, view


class LSTMCellKernels:
    """lstm_cell and lstm_cell_backward, one call into C each; lstm_forward and
    lstm_backward, a whole layer in one call."""

    def lstm_cell(
        self,
        h: Strided,
        c: Strided,
        activations: Strided,
        tanh_c: Strided,
        gates: Strided,
        c_prev: Strided,
    ) -> None:
        """Gates' activations, then ``c = f c_prev + i g`` and ``h = o tanh(c)``."""
        if lib.gt_lstm_cell(
            view(h), view(c), view(activations), view(tanh_c), view(gates), view(c_prev)
        ):
            raise refused("lstm_cell", gates, c_prev)

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
        """The gradients of :meth:`lstm_cell` with respect to its gates and ``c_prev``."""
        if lib.gt_lstm_cell_backward(
            view(d_gates),
            view(d_c_prev),
            view(d_h),
            view(d_c),
            view(activations),
            view(tanh_c),
            view(c_prev),
        ):
            raise refused("lstm_cell_backward", d_h, activations)

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
        """A whole layer in one call (``fast/csrc/rnn.c``: threads own hidden units,
        W_hh packed once per sequence)."""
        status = lib.gt_lstm_forward(
            view(hs),
            view(cs),
            view(activations),
            view(tanh_c),
            view(inputs),
            optional_view(bias),
            view(w_hh),
            reverse,
        )
        if status == -2:
            raise MemoryError("lstm_forward: out of memory for the packed weight")
        if status:
            raise refused("lstm_forward", inputs, w_hh)

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
        """The layer's gradient through time in one call (``fast/csrc/rnn.c``)."""
        status = lib.gt_lstm_backward(
            view(d_inputs),
            view(d_h),
            view(d_c),
            optional_view(d_outputs),
            view(activations),
            view(tanh_c),
            view(cs),
            view(w_hh),
            reverse,
        )
        if status == -2:
            raise MemoryError("lstm_backward: out of memory for the packed weight")
        if status:
            raise refused("lstm_backward", d_inputs, w_hh)
