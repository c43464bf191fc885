"""Recurrent-layer kernels of the fast tier: one LSTM step's elementwise work."""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, refused, view


class LSTMCellKernels:
    """lstm_cell and lstm_cell_backward, one call into C each."""

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
