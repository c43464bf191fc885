"""``nn.utils.rnn``: helpers for batches of sequences of different lengths."""

from __future__ import annotations

from glasstorch.ops.creation import full
from glasstorch.ops.views import cat, stack
from glasstorch.tensor import Tensor

__all__ = ["pad_sequence"]


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
