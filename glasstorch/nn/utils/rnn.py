"""``nn.utils.rnn``: helpers for batches of sequences of different lengths.

A batch of sequences of different lengths is either *padded* (one tensor, the
short sequences filled up to the longest) or *packed* (a :class:`PackedSequence`:
only the real elements, time step by time step). Packing lets a recurrent layer
skip the padding: at step ``t`` it updates only the sequences still running.
"""

from __future__ import annotations

from typing import NamedTuple

from glasstorch import _dtype
from glasstorch.ops.creation import full, tensor
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
]


class PackedSequence(NamedTuple):
    """A batch of sequences of different lengths, stored without padding.

    The sequences are ordered longest first; ``data`` holds step 0 of every
    sequence, then step 1 of those at least 2 long, and so on.

    Attributes:
        data: ``(sum of lengths, *)``, the elements, time-major.
        batch_sizes: int64 ``(T,)``, how many sequences are still running at each step.
        sorted_indices: int64 ``(B,)``: the batch position of the ``i``-th longest
            sequence (``None`` if the batch was given sorted).
        unsorted_indices: the inverse permutation, back to the batch order (or ``None``).

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`; undo it
    with :func:`pad_packed_sequence`. RNN, LSTM and GRU accept one as input and
    then return their output packed the same way.

    Example::

        >>> packed = pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4, 5])])
        >>> packed.data, packed.batch_sizes
        (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same packing with ``data`` moved or cast by ``Tensor.to`` (indices stay)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def cpu(self) -> PackedSequence:
        """The packing with ``data`` on the CPU."""
        return self.to("cpu")

    def float(self) -> PackedSequence:  # noqa: A003 - PyTorch's name
        """The packing with ``data`` as float32."""
        return self.to(_dtype.float32)

    def double(self) -> PackedSequence:
        """The packing with ``data`` as float64."""
        return self.to(_dtype.float64)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return self.data.is_cuda


def _inverse_permutation(permutation: Tensor) -> Tensor:
    """``inverse[permutation[i]] = i``."""
    order = [0] * permutation.numel()
    for position, index in enumerate(permutation.tolist()):
        order[index] = position
    return tensor(order, dtype=_dtype.int64)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(
                f"'lengths' argument should be a 1D tensor, but got {lengths.dim()}D"
            )
        return [int(n) for n in lengths.tolist()]
    return [int(n) for n in lengths]


def pack_padded_sequence(
    input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch: keep each sequence's first ``lengths[i]`` steps only.

    Args:
        input: ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first``.
        lengths: the length of each sequence (a list or a 1-D int64 CPU tensor).
        batch_first: whether ``input`` is batch-major.
        enforce_sorted: require ``lengths`` in decreasing order; with ``False``
            the batch is sorted here and the order kept in the result's indices.

    Returns:
        A :class:`PackedSequence`. Gradients flow back to ``input``.
    """
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable: ties keep order
        sorted_indices = tensor(order, dtype=_dtype.int64)
        lengths = [lengths[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths) != input.shape[1]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={input.shape[1]})"
        )
    if lengths and lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if lengths and lengths[0] > input.shape[0]:
        raise RuntimeError(
            f"Expected sequence length to be at most {input.shape[0]}, but got {lengths[0]}"
        )
    steps = lengths[0] if lengths else 0
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(steps)]
    data = cat([input[t, :size] for t, size in enumerate(batch_sizes)])
    unsorted_indices = None if sorted_indices is None else _inverse_permutation(sorted_indices)
    return PackedSequence(
        data, tensor(batch_sizes, dtype=_dtype.int64), sorted_indices, unsorted_indices
    )


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: a padded batch and each sequence's length.

    Args:
        sequence: the packed batch.
        batch_first: return ``(B, T, *)`` rather than ``(T, B, *)``.
        padding_value: the value of the padding. Default: 0.
        total_length: pad to this many steps (at least the longest length),
            e.g. to get back the input's full length.

    Returns:
        ``(padded, lengths)``, both in the batch's original order; ``lengths``
        is an int64 tensor.
    """
    data, batch_sizes = sequence.data, [int(n) for n in sequence.batch_sizes.tolist()]
    batch = batch_sizes[0] if batch_sizes else 0
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    rows, offset = [], 0
    trailing = tuple(data.shape[1:])
    for t in range(steps):
        size = batch_sizes[t] if t < len(batch_sizes) else 0
        chunk = data[offset : offset + size]
        offset += size
        if size < batch:
            padding = full((batch - size, *trailing), padding_value, dtype=data.dtype)
            chunk = cat([chunk, padding])
        rows.append(chunk)
    padded = stack(rows)
    lengths = [sum(1 for size in batch_sizes if size > i) for i in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths, dtype=_dtype.int64)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (longest first, unless ``enforce_sorted=False``).

    Example::

        >>> pack_sequence([torch.tensor([1, 2, 3]), torch.tensor([4, 5])]).batch_sizes
        tensor([2, 2, 1])
    """
    lengths = [sequence.shape[0] for sequence in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def pad_sequence(
    sequences: Tensor | list[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of different lengths into one tensor, padding the short ones.

    Each sequence is extended to the longest one's length with
    ``padding_value`` (after its elements with ``padding_side="right"``, before
    them with ``"left"``), and the results are stacked along a new batch
    dimension. Gradients flow back to each sequence.

    Args:
        sequences: tensors of shape ``(L_i, *)`` with the same trailing shape
            ``*`` (a tensor counts as the sequence of its rows).
        batch_first: the output is ``(B, L_max, *)`` rather than ``(L_max, B, *)``.
        padding_value: the value of the padding. Default: 0.
        padding_side: ``"right"`` (default) or ``"left"``.

    Shape:
        - output: ``(L_max, B, *)``, or ``(B, L_max, *)`` with ``batch_first``.

    Example::

        >>> a, b = torch.ones(3), torch.ones(1) * 2
        >>> pad_sequence([a, b], batch_first=True)
        tensor([[1., 1., 1.],
                [2., 0., 0.]])
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(sequence.shape[0] for sequence in sequences)
    padded = []
    for sequence in sequences:
        missing = longest - sequence.shape[0]
        if missing:
            shape = (missing, *sequence.shape[1:])
            padding = full(shape, padding_value, dtype=sequence.dtype, device=sequence.device)
            parts = [sequence, padding] if padding_side == "right" else [padding, sequence]
            sequence = cat(parts)
        padded.append(sequence)
    return stack(padded, 1 if not batch_first else 0)
