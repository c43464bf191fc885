"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells.

A recurrent layer reads a sequence one step at a time and carries a hidden
state from each step to the next. Everything here is built from glasstorch's
differentiable operations (``linear``, ``sigmoid``, ``tanh``, ``chunk``,
``stack``), so autograd runs backpropagation through time with no extra code.

Two things keep the number of operations down:

- the input's contribution to every gate, ``x_t @ W_ih.T + b_ih``, is computed
  for **all time steps at once** with one matrix product, before the loop; only
  the hidden state's contribution, ``h @ W_hh.T + b_hh``, must wait for the
  previous step;
- an LSTM step takes one ``sigmoid`` over all four gates' pre-activations and
  slices the forget, input and output gates out of it (the cell gate takes a
  ``tanh`` of its own slice);
- an LSTM layer records one graph node for the whole sequence
  (:class:`~glasstorch.nn.fused.rnn.LSTMLayer`, a fused node), whose backward
  pass through time is written out.

The parameters have PyTorch's names, shapes, gate order and initialisation,
so a state dict copies across in both directions.
"""

from __future__ import annotations

import math
import numbers
import warnings

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.fused.rnn import LSTMLayer
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty, zeros
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

#: How many gates each kind of layer stacks in its weight matrices.
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _affine(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``input @ weight.T (+ bias)`` for a 2-D ``input`` (one graph node with a bias)."""
    return F.linear(input, weight, bias)


# ----------------------------------------------------------------- one step
def _rnn_tanh_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``."""
    return (gi + gh).tanh()


def _rnn_relu_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """Elman RNN with ReLU: ``h' = relu(W_ih x + b_ih + W_hh h + b_hh)``."""
    return (gi + gh).relu()


def _lstm_step(gi: Tensor, gh: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
    """One LSTM step; the gates are stacked in PyTorch's order ``i, f, g, o``.

    ``c' = f * c + i * g`` and ``h' = o * tanh(c')``, with ``i, f, o`` sigmoids
    and ``g`` a tanh of their pre-activations.
    """
    _, c = state
    gates = gi + gh
    hidden = gates.shape[-1] // 4
    squashed = gates.sigmoid()  # i, f, o use it; g's slice of it goes unused
    i = squashed[..., :hidden]
    f = squashed[..., hidden : 2 * hidden]
    g = gates[..., 2 * hidden : 3 * hidden].tanh()
    o = squashed[..., 3 * hidden :]
    c = f * c + i * g
    return o * c.tanh(), c


def _gru_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """One GRU step; the gates are stacked in PyTorch's order ``r, z, n``.

    ``r = sigmoid(gi_r + gh_r)``, ``z = sigmoid(gi_z + gh_z)``,
    ``n = tanh(gi_n + r * gh_n)`` (the reset gate scales the hidden part
    *including* its bias ``b_hn``, as in PyTorch), and
    ``h' = (1 - z) * n + z * h``, computed as ``n + z * (h - n)``.
    """
    hidden = gi.shape[-1] // 3
    rz = (gi[..., : 2 * hidden] + gh[..., : 2 * hidden]).sigmoid()
    r, z = rz[..., :hidden], rz[..., hidden:]
    n = (gi[..., 2 * hidden :] + r * gh[..., 2 * hidden :]).tanh()
    return n + z * (h - n)


_STEPS = {
    "RNN_TANH": _rnn_tanh_step,
    "RNN_RELU": _rnn_relu_step,
    "LSTM": _lstm_step,
    "GRU": _gru_step,
}


def _hidden_of(state):
    """The hidden state ``h`` of a step's state (an LSTM's is ``(h, c)``)."""
    return state[0] if isinstance(state, tuple) else state


# -------------------------------------------------------------- the layers
class RNNBase(Module):
    """What :class:`RNN`, :class:`LSTM` and :class:`GRU` share: parameters,
    checks and the loop over layers, directions and time steps.

    ``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``. See the
    subclasses for the arguments (``proj_size``, LSTM only, projects each step's
    ``h`` down to ``proj_size`` features).
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_layer_arguments(input_size, hidden_size, num_layers, dropout, proj_size)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                UserWarning,
                stacklevel=3,
            )
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        # With projections, h (what the next step, the next layer and the output
        # see) has proj_size features; the cell state c keeps hidden_size.
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [
                    ("weight_ih" + suffix, (gate_size, layer_input)),
                    ("weight_hh" + suffix, (gate_size, real_hidden)),
                ]
                if bias:
                    shapes += [
                        ("bias_ih" + suffix, (gate_size,)),
                        ("bias_hh" + suffix, (gate_size,)),
                    ]
                if proj_size > 0:
                    shapes.append(("weight_hr" + suffix, (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(empty(shape, dtype=dtype, device=device)))
                names = [name for name, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias uniformly from ``[-k, k]``, ``k = 1 / sqrt(hidden_size)``."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs the weights for cuDNN here; glasstorch needs no packing."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters, one list per layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self) -> list[Parameter]:
        return [getattr(self, name) for name in self._flat_weights_names]

    # ------------------------------------------------------------ forward
    def forward(self, input: Tensor, hx=None):
        """Run the layer over a sequence; see the subclass for shapes."""
        from glasstorch.nn.utils.rnn import PackedSequence

        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        if input.dim() not in (2, 3):
            noun = " tensor" if self.mode.startswith("RNN") else ""  # PyTorch's RNN says "tensor"
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{noun} instead"
            )
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        states = self._initial_states(input, hx, batched)
        output, last = self._run(input, states)
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
            last = tuple(s.squeeze(1) for s in last)
        if self.mode == "LSTM":
            return output, (last[0], last[1])
        return output, last[0]

    def _initial_states(self, input: Tensor, hx, batched: bool, batch: int | None = None) -> list:
        """The state each layer and direction starts from: a list of ``h`` (or ``(h, c)``).

        ``batch`` is the batch size when ``input`` is packed data (``(N, I)``).
        """
        self._check_input(input)
        directions = 2 if self.bidirectional else 1
        batch = input.shape[1] if batch is None else batch
        expected = (self.num_layers * directions, batch, self.hidden_size)
        # h has proj_size features when the LSTM projects; c keeps hidden_size.
        h_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        expected_h = (self.num_layers * directions, batch, h_size)
        is_lstm = self.mode == "LSTM"
        if hx is None:
            like = {"dtype": input.dtype, "device": input.device}
            h0 = zeros(expected_h, **like)
            parts = (h0, zeros(expected, **like)) if is_lstm else (h0,)
        else:
            parts = tuple(hx) if is_lstm else (hx,)
            if is_lstm and len(parts) != 2:
                raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
            _check_hidden_dims(parts, batched)
            if not batched:
                parts = tuple(p.unsqueeze(1) for p in parts)
            for index, part in enumerate(parts):
                wanted = expected_h if index == 0 else expected
                if tuple(part.shape) != wanted:
                    which = f"hidden[{index}]" if is_lstm else "hidden"
                    raise RuntimeError(f"Expected {which} size {wanted}, got {list(part.shape)}")
        per_state = [p.unbind(0) for p in parts]
        if is_lstm:
            return list(zip(per_state[0], per_state[1]))
        return list(per_state[0])

    def _check_input(self, input: Tensor) -> None:
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def _run(self, input: Tensor, states: list) -> tuple[Tensor, tuple[Tensor, ...]]:
        """All layers over ``input`` ``(T, B, I)``: the last layer's outputs and every final state."""
        directions = 2 if self.bidirectional else 1
        finals = []
        all_weights = self.all_weights
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                out, state = self._run_direction(
                    layer_input, states[index], all_weights[index], reverse=direction == 1
                )
                outputs.append(out)
                finals.append(state)
            layer_input = outputs[0] if directions == 1 else cat(outputs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        if self.mode == "LSTM":
            last = (stack([s[0] for s in finals]), stack([s[1] for s in finals]))
        else:
            last = (stack(finals),)
        return layer_input, last

    def _weights(self, weights) -> tuple:
        """A layer-direction's parameters as ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (None where absent)."""
        w_hr = weights[-1] if self.proj_size > 0 else None
        if self.proj_size > 0:
            weights = weights[:-1]
        if self.bias:
            w_ih, w_hh, b_ih, b_hh = weights
        else:
            (w_ih, w_hh), b_ih, b_hh = weights, None, None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _step_function(self, w_hr: Tensor | None):
        """The one-step function of this layer (with the LSTM's projection of ``h``, if any)."""
        step = _STEPS[self.mode]
        if w_hr is None:
            return step

        def projected_lstm_step(gi, gh, state):
            h, c = step(gi, gh, state)
            return F.linear(h, w_hr), c  # h = (o * tanh(c)) @ W_hr^T

        return projected_lstm_step

    def _run_direction(self, input: Tensor, state, weights, reverse: bool):
        """One layer in one direction: the outputs ``(T, B, H)`` and the final state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(weights)
        steps, batch = input.shape[0], input.shape[1]
        if self.mode == "LSTM" and w_hr is None:
            # Optimization: the two biases summed once (one vector of 4H) and
            # added by the layer's kernel as it makes each step's gates, rather
            # than each added to all T x B rows of the gates in a pass of its own.
            bias = None if b_ih is None else b_ih + b_hh
            output, h, c = LSTMLayer.apply(input, state[0], state[1], w_ih, w_hh, bias, reverse)
            return output, (h, c)
        # The input's share of every gate, for all time steps in one product.
        projected = _affine(input.reshape(steps * batch, input.shape[2]), w_ih, b_ih)
        projected = projected.reshape(steps, batch, projected.shape[1])
        projected = projected.unbind(0)
        step = self._step_function(w_hr)
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        outputs: list[Tensor] = [None] * steps  # type: ignore[list-item]
        for t in order:
            gh = _affine(_hidden_of(state), w_hh, b_hh)
            state = step(projected[t], gh, state)
            outputs[t] = _hidden_of(state)
        return stack(outputs), state

    # ------------------------------------------------------ packed sequences
    def _forward_packed(self, input, hx):
        """The layer over a :class:`PackedSequence`: at each step, only the sequences
        still running (a prefix of the batch, which is sorted longest first) are updated.

        The initial state ``hx`` is in the batch's original order: it is put in
        the sorted order first, and the final state is put back after.
        """
        from glasstorch.nn.utils.rnn import PackedSequence

        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = [int(n) for n in batch_sizes.tolist()]
        batch = sizes[0] if sizes else 0
        states = self._initial_states(data, hx, True, batch=batch)
        if sorted_indices is not None:
            states = [_select_rows(state, sorted_indices) for state in states]
        directions = 2 if self.bidirectional else 1
        finals = []
        all_weights = self.all_weights
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                out, state = self._run_direction_packed(
                    layer_input, sizes, states[index], all_weights[index], direction == 1
                )
                outputs.append(out)
                finals.append(state)
            layer_input = outputs[0] if directions == 1 else cat(outputs, 1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        if unsorted_indices is not None:
            finals = [_select_rows(state, unsorted_indices) for state in finals]
        output = PackedSequence(layer_input, batch_sizes, sorted_indices, unsorted_indices)
        if self.mode == "LSTM":
            return output, (stack([s[0] for s in finals]), stack([s[1] for s in finals]))
        return output, stack(finals)

    def _run_direction_packed(self, data: Tensor, sizes: list[int], state, weights, reverse):
        """One layer in one direction over packed ``data``: its packed outputs and final state."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(weights)
        projected = _affine(data, w_ih, b_ih)  # every step's input share at once
        starts = [sum(sizes[:t]) for t in range(len(sizes))]
        step = self._step_function(w_hr)
        order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
        outputs: list[Tensor] = [None] * len(sizes)  # type: ignore[list-item]
        for t in order:
            size = sizes[t]
            running = _first_rows(state, size)  # the sequences that have a step t
            gh = _affine(_hidden_of(running), w_hh, b_hh)
            stepped = step(projected[starts[t] : starts[t] + size], gh, running)
            outputs[t] = _hidden_of(stepped)
            state = _with_first_rows(state, stepped, size)
        return cat(outputs), state

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


def _select_rows(state, index: Tensor):
    """``state`` (``h`` or ``(h, c)``) with its batch rows reordered by ``index``."""
    if isinstance(state, tuple):
        return tuple(part.index_select(0, index) for part in state)
    return state.index_select(0, index)


def _first_rows(state, count: int):
    """The first ``count`` batch rows of ``state`` (``h`` or ``(h, c)``)."""
    if isinstance(state, tuple):
        return tuple(part[:count] for part in state)
    return state[:count]


def _with_first_rows(state, new, count: int):
    """``state`` with its first ``count`` rows replaced by ``new`` (the rest kept)."""
    if isinstance(state, tuple):
        return tuple(_with_first_rows(old, part, count) for old, part in zip(state, new))
    if count == state.shape[0]:
        return new
    return cat([new, state[count:]])


def _check_layer_arguments(input_size, hidden_size, num_layers, dropout, proj_size) -> None:
    """PyTorch's constructor checks, with its wording."""
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if (
        not isinstance(dropout, numbers.Number)
        or isinstance(dropout, bool)
        or not 0 <= dropout <= 1
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _check_hidden_dims(parts: tuple[Tensor, ...], batched: bool) -> None:
    """An unbatched input needs 2-D states, a batched one 3-D states."""
    wanted = 3 if batched else 2
    if all(p.dim() == wanted for p in parts):
        return
    kind = "batched 3-D" if batched else "unbatched 2-D"
    if len(parts) == 1:
        raise RuntimeError(
            f"For {kind} input, hx should also be {wanted}-D but got {parts[0].dim()}-D tensor"
        )
    raise RuntimeError(
        f"For {kind} input, hx and cx should also be {wanted}-D but got "
        f"({parts[0].dim()}-D, {parts[1].dim()}-D) tensors"
    )


class RNN(RNNBase):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``.

    Stacked ``num_layers`` deep: each layer reads the previous layer's outputs
    (through dropout, in training, when ``dropout > 0``).

    Args:
        input_size: features per time step of the input.
        hidden_size: features of the hidden state.
        num_layers: how many layers are stacked. Default: 1.
        nonlinearity: ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.
        bias: learn ``b_ih`` and ``b_hh``. Default: ``True``.
        batch_first: input and output are ``(N, L, *)`` instead of ``(L, N, *)``
            (the hidden state keeps its layout). Default: ``False``.
        dropout: probability of dropout on the outputs of every layer but the
            last. Default: 0.
        bidirectional: also run each layer from the last step to the first,
            and concatenate both directions' outputs. Default: ``False``.

    Shape (``D = 2`` if bidirectional else 1):
        - input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, or
          ``(L, H_in)`` unbatched.
        - hx: ``(D * num_layers, N, H_out)`` (``(D * num_layers, H_out)``
          unbatched); zeros when omitted.
        - output: ``(L, N, D * H_out)`` (batch first if asked): the last
          layer's hidden state at every step.
        - h_n: like hx, the final hidden state of every layer and direction.

    Attributes:
        weight_ih_l[k]: ``(hidden_size, input_size)`` for ``k = 0``, else
            ``(hidden_size, D * hidden_size)``.
        weight_hh_l[k]: ``(hidden_size, hidden_size)``.
        bias_ih_l[k], bias_hh_l[k]: ``(hidden_size,)``. The reverse direction's
            parameters end in ``_reverse``. All start uniform on ``[-k, k]``,
            ``k = 1 / sqrt(hidden_size)``.

    Example::

        >>> rnn = nn.RNN(10, 20, num_layers=2)
        >>> output, hn = rnn(torch.randn(5, 3, 10), torch.zeros(2, 3, 20))
        >>> output.shape, hn.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity, args = args[3], args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory, stacked ``num_layers`` deep.

    For each step, with the gates stacked in the order ``i, f, g, o``::

        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)     input gate
        f = sigmoid(W_if x + b_if + W_hf h + b_hf)     forget gate
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)        cell candidate
        o = sigmoid(W_io x + b_io + W_ho h + b_ho)     output gate
        c' = f * c + i * g
        h' = o * tanh(c')

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: as
            for :class:`RNN`.
        proj_size: if above 0, each step's ``h`` is projected down to
            ``proj_size`` features, ``h = (o * tanh(c')) @ W_hr^T``, and that
            is what the next step, the next layer and the output see (``c``
            keeps ``hidden_size``). Default: 0.

    Unlike PyTorch on the CPU, glasstorch's LSTM does not support second
    derivatives (``create_graph=True``): each layer is one graph node whose
    backward is written out (:class:`LSTMLayer`), which makes training faster.

    Shape (``D = 2`` if bidirectional else 1):
        - input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, or
          ``(L, H_in)`` unbatched.
        - (h_0, c_0): each ``(D * num_layers, N, H_out)`` (2-D unbatched);
          zeros when omitted.
        - output: ``(L, N, D * H_out)``; (h_n, c_n): like (h_0, c_0).

    Attributes:
        weight_ih_l[k]: ``(4 * hidden_size, input_size)`` for ``k = 0``, else
            ``(4 * hidden_size, D * hidden_size)``: ``W_ii | W_if | W_ig | W_io``.
        weight_hh_l[k]: ``(4 * hidden_size, hidden_size)``.
        bias_ih_l[k], bias_hh_l[k]: ``(4 * hidden_size,)``. All start uniform on
            ``[-k, k]``, ``k = 1 / sqrt(hidden_size)``.
        weight_hr_l[k]: ``(proj_size, hidden_size)``, only with ``proj_size > 0``
            (``weight_hh`` and the next layer's ``weight_ih`` then take
            ``proj_size`` features in place of ``hidden_size``).

    Example::

        >>> lstm = nn.LSTM(10, 20, num_layers=2, batch_first=True)
        >>> output, (hn, cn) = lstm(torch.randn(3, 5, 10))
        >>> output.shape, hn.shape
        (torch.Size([3, 5, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit, stacked ``num_layers`` deep.

    For each step, with the gates stacked in the order ``r, z, n``::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)     reset gate
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)     update gate
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))  candidate
        h' = (1 - z) * n + z * h

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: as
            for :class:`RNN`.

    Shape:
        as for :class:`RNN`.

    Attributes:
        weight_ih_l[k]: ``(3 * hidden_size, input_size)`` for ``k = 0``, else
            ``(3 * hidden_size, D * hidden_size)``: ``W_ir | W_iz | W_in``.
        weight_hh_l[k]: ``(3 * hidden_size, hidden_size)``.
        bias_ih_l[k], bias_hh_l[k]: ``(3 * hidden_size,)``. All start uniform on
            ``[-k, k]``, ``k = 1 / sqrt(hidden_size)``.

    Example::

        >>> gru = nn.GRU(10, 20)
        >>> output, hn = gru(torch.randn(5, 3, 10))
        >>> output.shape, hn.shape
        (torch.Size([5, 3, 20]), torch.Size([1, 3, 20]))
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---------------------------------------------------------------- the cells
class RNNCellBase(Module):
    """What the one-step cells share: parameters ``weight_ih``, ``weight_hh``,
    ``bias_ih``, ``bias_hh`` and the input checks."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = num_chunks * hidden_size
        self.weight_ih = Parameter(empty(gate_size, input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(gate_size, hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(gate_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(gate_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias uniformly from ``[-k, k]``, ``k = 1 / sqrt(hidden_size)``."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text

    def _prepare(self, input: Tensor, hx: tuple[Tensor, ...] | None, count: int):
        """Check shapes; make the input and states 2-D. Returns them and whether batched."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for index, state in enumerate(hx):
                if state.dim() not in (1, 2):
                    what = f"hx[{index}]" if count == 2 else "hidden"
                    raise ValueError(
                        f"{name}: Expected {what} to be 1D or 2D, got {state.dim()}D instead"
                    )
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        if hx is None:
            state = zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            return input, (state,) * count, batched
        if not batched:
            hx = tuple(state.unsqueeze(0) for state in hx)
        for index, state in enumerate(hx):
            if state.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{index} batch size "
                    f"{state.shape[0]}"
                )
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{index} has inconsistent hidden_size: got {state.shape[1]}, "
                    f"expected {self.hidden_size}"
                )
        return input, hx, batched

    def _projections(self, input: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        return (
            _affine(input, self.weight_ih, self.bias_ih),
            _affine(h, self.weight_hh, self.bias_hh),
        )


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden state.
        bias: learn ``bias_ih`` and ``bias_hh``. Default: ``True``.
        nonlinearity: ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.

    Shape:
        - input: ``(N, H_in)`` or ``(H_in,)``.
        - hidden: ``(N, H_out)`` or ``(H_out,)``; zeros when omitted.
        - output: ``(N, H_out)`` or ``(H_out,)``: the next hidden state.

    Attributes:
        weight_ih: ``(hidden_size, input_size)``, uniform on ``[-k, k]`` with
            ``k = 1 / sqrt(hidden_size)``, as every weight and bias here.
        weight_hh: ``(hidden_size, hidden_size)``.
        bias_ih, bias_hh: ``(hidden_size,)``.

    Example::

        >>> cell = nn.RNNCell(10, 20)
        >>> h = torch.zeros(3, 20)
        >>> for x in torch.randn(6, 3, 10):
        ...     h = cell(x, h)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), batched = self._prepare(input, None if hx is None else (hx,), 1)
        gi, gh = self._projections(input, h)
        step = _rnn_tanh_step if self.nonlinearity == "tanh" else _rnn_relu_step
        h = step(gi, gh, h)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (see :class:`LSTM` for the gates, stacked ``i, f, g, o``).

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden and cell states.
        bias: learn ``bias_ih`` and ``bias_hh``. Default: ``True``.

    Shape:
        - input: ``(N, H_in)`` or ``(H_in,)``.
        - (h_0, c_0): each ``(N, H_out)`` or ``(H_out,)``; zeros when omitted.
        - output: ``(h_1, c_1)``, each like ``h_0``.

    Attributes:
        weight_ih: ``(4 * hidden_size, input_size)``; weight_hh:
        ``(4 * hidden_size, hidden_size)``; bias_ih, bias_hh:
        ``(4 * hidden_size,)``. All start uniform on ``[-k, k]``,
        ``k = 1 / sqrt(hidden_size)``.

    Example::

        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = torch.zeros(3, 20), torch.zeros(3, 20)
        >>> for x in torch.randn(6, 3, 10):
        ...     h, c = cell(x, (h, c))
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        input, (h, c), batched = self._prepare(input, None if hx is None else tuple(hx), 2)
        gi, gh = self._projections(input, h)
        h, c = _lstm_step(gi, gh, (h, c))
        if not batched:
            h, c = h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step (see :class:`GRU` for the gates, stacked ``r, z, n``).

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden state.
        bias: learn ``bias_ih`` and ``bias_hh``. Default: ``True``.

    Shape:
        - input: ``(N, H_in)`` or ``(H_in,)``.
        - hidden: ``(N, H_out)`` or ``(H_out,)``; zeros when omitted.
        - output: the next hidden state, like ``hidden``.

    Attributes:
        weight_ih: ``(3 * hidden_size, input_size)``; weight_hh:
        ``(3 * hidden_size, hidden_size)``; bias_ih, bias_hh:
        ``(3 * hidden_size,)``. All start uniform on ``[-k, k]``,
        ``k = 1 / sqrt(hidden_size)``.

    Example::

        >>> cell = nn.GRUCell(10, 20)
        >>> h = cell(torch.randn(3, 10))
        >>> h.shape
        torch.Size([3, 20])
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), batched = self._prepare(input, None if hx is None else (hx,), 1)
        gi, gh = self._projections(input, h)
        h = _gru_step(gi, gh, h)
        return h if batched else h.squeeze(0)
