"""Recurrent-layer kernels of the fast tier: one LSTM step's elementwise work."""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, optional_view, refused, view


class LSTMCellKernels:
    """lstm_cell and lstm_cell_backward, one call into C each; lstm_forward and
    lstm_backward, a whole layer in one call; lstm_weight_grad, both weight
    gradients in one call."""

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

    def lstm_weight_grad(
        self,
        d_w_ih: Strided,
        d_w_hh: Strided,
        d_gates: Strided,
        inputs: Strided,
        h_prev: Strided,
    ) -> None:
        """Both weight gradients in one call (``fast/csrc/rnn.c``: the shared operand
        ``d_gates^T`` read once, see gt_gemm_shared_a)."""
        if lib.gt_lstm_weight_grad(
            view(d_w_ih), view(d_w_hh), view(d_gates), view(inputs), view(h_prev)
        ):
            rows = {d_gates.shape[0], inputs.shape[0], h_prev.shape[0]}
            if (
                len(rows) > 1
                or d_w_ih.shape != (d_gates.shape[1], inputs.shape[1])
                or (d_w_hh.shape != (d_gates.shape[1], h_prev.shape[1]))
            ):
                raise ValueError(
                    "lstm_weight_grad: shapes do not line up: d_w_ih "
                    f"{d_w_ih.shape}, d_w_hh {d_w_hh.shape}, d_gates {d_gates.shape}, "
                    f"inputs {inputs.shape}, h_prev {h_prev.shape}"
                )
            raise refused("lstm_weight_grad", d_gates, inputs)
