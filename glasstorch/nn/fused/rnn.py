"""One LSTM layer over a whole sequence as one node, with a hand-written backward.

The plain meaning is the step formula of :mod:`glasstorch.nn.modules.rnn`
(``_lstm_step``) repeated over time; this node runs the whole loop over time
as one ``lstm_forward`` kernel call forward and one ``lstm_backward`` call
backward (the kernel contract defines both as that loop of ``lstm_cell`` and
``lstm_cell_backward`` steps), writing into preallocated buffers, instead of a
graph of small operations per step.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch._kernels import Strided, transposed
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn.fused.common import as_matrix
from glasstorch.ops.creation import zeros
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class LSTMLayer(Function):
    """One LSTM layer, in one direction, over the whole sequence: one graph node.

    The same arithmetic as :func:`_lstm_step`, with the backward pass through
    time written out by hand, which saves what a training step of a recurrent
    model spends most of its time on:

    - the whole sequence is one ``lstm_forward`` kernel call forward and one
      ``lstm_backward`` call backward (see the kernel contract): each step's
      product and elementwise work run below the contract, instead of a
      dozen small operations and graph nodes per step, each costing more in
      Python than in arithmetic;
    - the gradients of ``W_ih`` and ``W_hh`` are one matrix product each over
      all time steps, ``dW_hh = sum_t dgates_t^T h_{t-1}``, instead of one small
      product per step (both in one ``lstm_weight_grad`` call, which may read
      the gate gradients once for both), and so are the input's and the bias's;
    - the products run as direct kernel calls on kernel views, as
      :class:`~glasstorch.nn.fused.linear.Addmm`'s do, so every gradient is a
      fresh contiguous tensor that becomes ``.grad`` without a copy.

    Inputs: the layer's ``input`` ``(T, B, I)``, the initial ``h`` and ``c``
    ``(B, H)``, ``w_ih``, ``w_hh``, ``bias`` (``b_ih + b_hh``, or ``None``) and
    ``reverse``. The input's share of the gates, ``input @ W_ih^T``, is one
    product over all steps before the loop. Outputs: every step's ``h`` ``(T, B, H)``, the last ``h`` and ``c``.

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
    def forward(ctx, input, h, c, w_ih, w_hh, bias, reverse):
        steps, batch, input_size = input.shape
        gate_size, dtype, device = w_ih.shape[0], input.dtype, input.device
        hidden = gate_size // 4
        w_ih, w_hh = w_ih.contiguous(), w_hh.contiguous()
        # The input's share of every gate, for all time steps in one product
        # (the rows of a non-contiguous input, such as a batch_first one
        # seen as (T, B, I), are copied once, in time order).
        input = input if input.is_contiguous() else input.contiguous()
        projected = empty_tensor((steps, batch, gate_size), dtype, device=device)
        kernels.matmul(
            as_matrix(projected, gate_size),
            as_matrix(input, input_size),
            transposed(w_ih._strided()),
        )
        # Optimization: every step writes its h, c, gate activations and
        # tanh(c) straight into one buffer per kind (the backward pass reads
        # them all), rather than allocating four tensors per step and stacking
        # the outputs afterwards. hs and cs have a slot more than there are
        # steps, for the initial state: walked forward, h_0 sits in slot 0 and
        # step t writes slot t + 1; walked in reverse, h_0 sits in slot T and
        # step t writes slot t. Either way the outputs are T consecutive slots
        # and so are the states each step started from.
        hs = empty_tensor((steps + 1, batch, hidden), dtype, device=device)
        cs = empty_tensor((steps + 1, batch, hidden), dtype, device=device)
        activations = empty_tensor((steps, batch, gate_size), dtype, device=device)
        tanh_cs = empty_tensor((steps, batch, hidden), dtype, device=device)
        first = steps if reverse else 0
        kernels.copy(_slot(hs, first)._strided(), h._strided())
        kernels.copy(_slot(cs, first)._strided(), c._strided())
        # Optimization: the whole loop over time is one kernel call (each
        # step's product h @ W_hh^T, the input's share and the bias added, the
        # cell), so the steps cost no Python and the tier may keep W_hh in a
        # form it prepared once (the fast tier packs it, see fast/csrc/rnn.c).
        kernels.lstm_forward(
            hs._strided(),
            cs._strided(),
            activations._strided(),
            tanh_cs._strided(),
            projected._strided(),
            None if bias is None else bias.contiguous()._strided(),
            w_hh._strided(),
            reverse,
        )
        ctx.save_for_backward(input, hs, cs, activations, tanh_cs, w_ih, w_hh)
        ctx.reverse, ctx.has_bias = reverse, bias is not None
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
        input, hs, cs, activations, tanh_cs, w_ih, w_hh = ctx.saved_tensors
        reverse, needs = ctx.reverse, ctx.needs_input_grad
        steps, batch, gate_size = activations.shape
        hidden, input_size = gate_size // 4, input.shape[2]
        like = {"dtype": hs.dtype, "device": hs.device}
        # The kernel overwrites dh and dc (the gradient of the last state on
        # entry, of the initial one on return): private copies.
        dh = d_h.contiguous().clone() if d_h is not None else zeros((batch, hidden), **like)
        dc = d_c.contiguous().clone() if d_c is not None else zeros((batch, hidden), **like)
        outputs_grad = d_outputs.contiguous()._strided() if d_outputs is not None else None
        # Each step's gate gradient is written straight into its slot of
        # d_projected; the loop over time is one kernel call, as forward.
        d_projected = empty_tensor((steps, batch, gate_size), **like)
        kernels.lstm_backward(
            d_projected._strided(),
            dh._strided(),
            dc._strided(),
            outputs_grad,
            activations._strided(),
            tanh_cs._strided(),
            cs._strided(),
            w_hh._strided(),
            reverse,
        )
        # The rest is one product or sum over all steps at once, each step's
        # gate gradient a row of d_rows: d_input = d_projected @ W_ih,
        # dW_ih = sum_t dgates_t^T x_t, dW_hh = sum_t dgates_t^T h_{t-1} (the
        # states the steps started from are T consecutive slots of hs), and
        # d_bias = sum_t dgates_t (the bias is b_ih + b_hh).
        d_rows = as_matrix(d_projected, gate_size)
        d_input = d_w_ih = d_w_hh = d_bias = None
        if needs[0]:
            d_input = empty_tensor((steps, batch, input_size), **like)
            kernels.matmul(as_matrix(d_input, input_size), d_rows, w_ih._strided())
        h_prev = _slots(hs, 1 if reverse else 0, steps)
        if needs[3] and needs[4]:
            # Both weights' gradients in one kernel call: two products that
            # share d_rows^T, which a tier may read once for both.
            d_w_ih = empty_tensor((gate_size, input_size), **like)
            d_w_hh = empty_tensor((gate_size, hidden), **like)
            kernels.lstm_weight_grad(
                d_w_ih._strided(),
                d_w_hh._strided(),
                d_rows,
                as_matrix(input, input_size),
                as_matrix(h_prev, hidden),
            )
        elif needs[3]:
            d_w_ih = empty_tensor((gate_size, input_size), **like)
            kernels.matmul(d_w_ih._strided(), transposed(d_rows), as_matrix(input, input_size))
        elif needs[4]:
            d_w_hh = empty_tensor((gate_size, hidden), **like)
            kernels.matmul(d_w_hh._strided(), transposed(d_rows), as_matrix(h_prev, hidden))
        if ctx.has_bias and needs[5]:
            d_bias = empty_tensor((gate_size,), **like)
            sums = Strided(d_bias._storage.buffer, (1, gate_size), (gate_size, 1), 0)
            kernels.reduce("sum", sums, d_rows, (0,))
        return (
            d_input,
            dh if needs[1] else None,
            dc if needs[2] else None,
            d_w_ih,
            d_w_hh,
            d_bias,
            None,
        )


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
