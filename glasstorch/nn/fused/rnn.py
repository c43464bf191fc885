"""One LSTM layer over a whole sequence as one node, with a hand-written backward.

The plain meaning is the step formula of :mod:`glasstorch.nn.modules.rnn`
(``_lstm_step``) repeated over time; this node runs the ``lstm_cell`` kernel
per step forward and ``lstm_cell_backward`` per step backward, writing into
preallocated buffers, instead of a graph of small operations per step.
"""

from __future__ import annotations

from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.ops.creation import zeros
from glasstorch.ops.linalg import compute_matmul
from glasstorch.tensor import Tensor, empty_tensor


class LSTMLayer(Function):
    """One LSTM layer, in one direction, over the whole sequence: one graph node.

    The same arithmetic as :func:`_lstm_step`, with the backward pass through
    time written out by hand, which saves what a training step of a recurrent
    model spends most of its time on:

    - a step's elementwise work is one ``lstm_cell`` kernel forward and one
      ``lstm_cell_backward`` backward (see the kernel contract), instead of a
      dozen small operations and graph nodes, each costing more in Python than
      in arithmetic;
    - the gradient of ``W_hh`` is one matrix product over all time steps,
      ``dW_hh = sum_t dgates_t^T h_{t-1}``, instead of one small product per step.

    Inputs: ``projected`` ``(T, B, 4H)`` (the input's share of the gates, from
    one product before the loop; its gradient flows back through that product),
    the initial ``h`` and ``c`` ``(B, H)``, ``w_hh``, ``b_hh`` (or ``None``) and
    ``reverse``. Outputs: every step's ``h`` ``(T, B, H)``, the last ``h`` and ``c``.

    The backward, per step from the last to the first (``dh`` and ``dc`` carry
    the gradient that reaches ``h_t`` and ``c_t``)::

        dc += dh * o * (1 - tanh(c)^2)
        d(pre-activations) = [dc * g * i(1-i), dc * c_prev * f(1-f),
                              dc * i * (1-g^2), dh * tanh(c) * o(1-o)]
        dc = dc * f;  dh = d(pre-activations) @ W_hh      (for the step before)

    Second derivatives (``create_graph=True``) through it are not supported.
    """

    backward_name = "LSTMLayerBackward0"

    @staticmethod
    def forward(ctx, projected, h, c, w_hh, b_hh, reverse):
        steps, batch, gate_size = projected.shape
        hidden, dtype = gate_size // 4, projected.dtype
        # Optimization: b_hh is added to every step's input share once, before
        # the loop; each step then adds its share into the product h @ W_hh^T
        # in place: one product and one add per step, no other temporaries.
        inputs = (projected if b_hh is None else projected + b_hh).contiguous()
        # Optimization: W_hh^T laid out row-major once, so that every step's
        # product reads it in place (as a transposed view, it would be packed
        # again at each of the steps).
        w_hh_t = w_hh.t().contiguous()
        # Optimization: every step writes its h, c, gate activations and
        # tanh(c) straight into one buffer per kind (the backward pass reads
        # them all), rather than allocating four tensors per step and stacking
        # the outputs afterwards. hs and cs have a slot more than there are
        # steps, for the initial state: walked forward, h_0 sits in slot 0 and
        # step t writes slot t + 1; walked in reverse, h_0 sits in slot T and
        # step t writes slot t. Either way the outputs are T consecutive slots
        # and so are the states each step started from.
        device = projected.device
        hs = empty_tensor((steps + 1, batch, hidden), dtype, device=device)
        cs = empty_tensor((steps + 1, batch, hidden), dtype, device=device)
        activations = empty_tensor((steps, batch, gate_size), dtype, device=device)
        tanh_cs = empty_tensor((steps, batch, hidden), dtype, device=device)
        first = steps if reverse else 0
        kernels.copy(_slot(hs, first)._strided(), h._strided())
        kernels.copy(_slot(cs, first)._strided(), c._strided())
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            before, after = (t + 1, t) if reverse else (t, t + 1)
            h_new, c_new = _slot(hs, after), _slot(cs, after)
            gates = compute_matmul(_slot(hs, before), w_hh_t)
            kernels.binary("add", gates._strided(), gates._strided(), _slot(inputs, t)._strided())
            kernels.lstm_cell(
                h_new._strided(),
                c_new._strided(),
                _slot(activations, t)._strided(),
                _slot(tanh_cs, t)._strided(),
                gates._strided(),
                _slot(cs, before)._strided(),
            )
        ctx.save_for_backward(hs, cs, activations, tanh_cs, w_hh)
        ctx.reverse, ctx.has_bias = reverse, b_hh is not None
        # The outputs share hs's memory (saved above: changing them in place
        # before backward is reported, as for any saved tensor); the final
        # state is a copy, as PyTorch's h_n and c_n are.
        last = 0 if reverse else steps
        outputs = _slots(hs, 0 if reverse else 1, steps)
        return outputs, _slot(hs, last).clone(), _slot(cs, last).clone()

    @staticmethod
    def backward(ctx, d_outputs, d_h, d_c):
        if is_grad_enabled():
            raise RuntimeError(
                "glasstorch's nn.LSTM does not support second derivatives (create_graph=True)"
            )
        hs, cs, activations, tanh_cs, w_hh = ctx.saved_tensors
        reverse, (steps, batch, gate_size) = ctx.reverse, activations.shape
        hidden = gate_size // 4
        like = {"dtype": hs.dtype, "device": hs.device}
        dh = d_h.contiguous() if d_h is not None else zeros((batch, hidden), **like)
        dc = d_c.contiguous() if d_c is not None else zeros((batch, hidden), **like)
        # Each step's gate gradient is written straight into its slot of
        # d_projected (no stack of the steps afterwards).
        d_projected = empty_tensor((steps, batch, gate_size), hs.dtype, device=hs.device)
        for t in range(steps) if reverse else range(steps - 1, -1, -1):
            before = t + 1 if reverse else t
            if d_outputs is not None:
                dh = dh + d_outputs[t]
            d_gates = _slot(d_projected, t)
            d_c_prev = empty_tensor((batch, hidden), hs.dtype, device=hs.device)
            kernels.lstm_cell_backward(
                d_gates._strided(),
                d_c_prev._strided(),
                dh.contiguous()._strided(),
                dc._strided(),
                _slot(activations, t)._strided(),
                _slot(tanh_cs, t)._strided(),
                _slot(cs, before)._strided(),
            )
            dc = d_c_prev
            dh = compute_matmul(d_gates, w_hh)  # no graph to record: grad mode is off here
        d_w_hh = d_b_hh = None
        if ctx.needs_input_grad[3]:
            # One product over all steps: dW_hh = sum_t dgates_t^T h_{t-1}; the
            # states the steps started from are T consecutive slots of hs.
            h_prev = _slots(hs, 1 if reverse else 0, steps)
            d_w_hh = d_projected.reshape(-1, gate_size).t().matmul(h_prev.reshape(-1, hidden))
        if ctx.has_bias and ctx.needs_input_grad[4]:
            d_b_hh = d_projected.sum((0, 1))
        return d_projected, dh, dc, d_w_hh, d_b_hh, None


def _slots(buffer: Tensor, first: int, count: int) -> Tensor:
    """Slots ``first .. first + count - 1`` of a contiguous ``(S, ...)`` buffer, as a
    tensor of its own over the same memory (no view bookkeeping, no autograd)."""
    stride = buffer._stride
    offset = buffer._offset + first * stride[0]
    return Tensor._make(buffer._storage, (count, *buffer._shape[1:]), stride, offset, buffer.dtype)


def _slot(buffer: Tensor, index: int) -> Tensor:
    """Slot ``index`` of a contiguous ``(S, ...)`` buffer (see :func:`_slots`)."""
    stride = buffer._stride
    offset = buffer._offset + index * stride[0]
    return Tensor._make(buffer._storage, buffer._shape[1:], stride[1:], offset, buffer.dtype)
