"""Sparse lookups of ``nn.functional``: ``embedding``, ``embedding_bag`` and ``one_hot``."""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.autograd.function import Function
from glasstorch.nn.fused.common import rows_order
from glasstorch.ops.core import check_same_device
from glasstorch.ops.creation import arange, tensor, zeros
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor


class Embedding(Function):
    """Rows of ``weight`` picked by integer indices; the padding row gets no gradient."""

    backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        rows = weight.index_select(0, indices.reshape(-1))
        ctx.save_for_backward(indices)
        ctx.weight_rows = weight.shape[0]
        ctx.padding_idx = padding_idx
        return rows.reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        # Optimization (no copy of the gradient): the weight's gradient is a
        # sum over the positions, in any order. A gradient that arrives
        # transposed (behind a batch_first LSTM, whose gradient comes back
        # time-major) is read as it lies in memory, and the integer indices,
        # embedding_dim times smaller, are put in that order instead.
        order = rows_order(grad)
        if order is not None:
            grad, indices = grad.permute(*order, grad.dim() - 1), indices.permute(*order)
        flat = indices.reshape(-1)
        grad_rows = grad.reshape(-1, grad.shape[-1])
        if ctx.padding_idx is not None:
            keep = (flat != ctx.padding_idx).unsqueeze(1)
            grad_rows = grad_rows * keep
        grad_weight = zeros(ctx.weight_rows, grad.shape[-1], dtype=grad.dtype, device=grad.device)
        return grad_weight.index_add(0, flat, grad_rows), None, None


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Look up rows of ``weight`` by the integer indices in ``input``.

    Args:
        input: int64 (or int32) indices of any shape.
        weight: the table, ``(num_embeddings, embedding_dim)``.
        padding_idx: a row whose gradient stays zero.

    Shape:
        - output: ``(*input.shape, embedding_dim)``.
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported in glasstorch"
        )
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)"
        )
    # PyTorch's embedding is an index_select of weight's rows, and fails in its check.
    check_same_device("wrapper_CUDA__index_select", self=weight, index=input)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return Embedding.apply(weight, input.long(), padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: ``out[..., c] = 1 if tensor[...] == c``.

    ``num_classes=-1`` uses ``tensor.max() + 1``.
    """
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0):
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).long()


def _bag_ids(offsets: list[int], count: int, include_last: bool) -> tuple[list[int], int]:
    """The bag each of ``count`` indices falls in, and the number of bags."""
    bags = len(offsets) - 1 if include_last else len(offsets)
    ends = offsets[1:] if include_last else offsets[1:] + [count]
    ids, bag = [], 0
    for position in range(count):
        while bag < bags and position >= ends[bag]:
            bag += 1
        ids.append(min(bag, bags - 1))
    return ids, bags


def _check_offsets(offsets: list[int], length: int) -> None:
    """Refuse bag offsets that do not cut ``length`` indices into bags, as PyTorch does.

    PyTorch checks the first offset (0) and the last (at most ``length``). A
    bag that starts past the input would otherwise be an empty bag: a row of
    zeros where the caller has a bug. Offsets that go backwards, which PyTorch
    leaves unchecked (its result is undefined), are refused too.
    """
    if not offsets:
        return
    if offsets[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
            f"start from position 0. However, got {offsets[0]}"
        )
    if offsets[-1] > length:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {length} but got "
            f"offsets[-1] of {offsets[-1]}"
        )
    for position in range(1, len(offsets)):
        if offsets[position] < offsets[position - 1]:
            raise RuntimeError(
                "embedding_bag: offsets must not decrease, but got offsets"
                f"[{position}] = {offsets[position]} after offsets[{position - 1}] = "
                f"{offsets[position - 1]}"
            )


def _check_bag_arguments(input, weight, offsets, mode, per_sample_weights, padding_idx):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if input.dim() == 2 and offsets is not None:
        raise ValueError(
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
            "of fixed length sequences. However, found offsets of type "
            f"{type(offsets).__name__}"
        )
    if input.dim() == 1 and (offsets is None or offsets.dim() != 1):
        raise ValueError(f"offsets has to be a 1D Tensor but got {offsets}")
    if input.dim() not in (1, 2):
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if per_sample_weights is not None and per_sample_weights.shape != input.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not "
            f"None, then it must have the same shape as the input ({list(input.shape)})"
        )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of embeddings, as :class:`nn.EmbeddingBag`.

    The rows of ``weight`` picked by ``input`` are grouped into bags and each
    bag is reduced to one vector. An index equal to ``padding_idx`` takes no
    part (nor counts in a mean); an empty bag gives zeros.

    Args:
        input: indices, ``(B, L)`` (each row a bag of ``L``) or ``(n,)`` with ``offsets``.
        weight: the table, ``(num_embeddings, embedding_dim)``.
        offsets: with 1-D ``input``, where each bag starts (``offsets[0]`` is 0).
        max_norm, norm_type, scale_grad_by_freq, sparse: only their defaults are supported.
        mode: ``"sum"``, ``"mean"`` or ``"max"``.
        per_sample_weights: a weight per index (``mode="sum"`` only).
        include_last_offset: ``offsets`` has one more element, the end of the last bag.
        padding_idx: an index left out of every bag.

    Shape:
        - Output: ``(B, embedding_dim)``, one row per bag.

    Examples::

        >>> table = torch.randn(10, 3)
        >>> F.embedding_bag(torch.tensor([1, 2, 4, 5]), table, torch.tensor([0, 2])).shape
        torch.Size([2, 3])
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding_bag: max_norm, scale_grad_by_freq and sparse are not supported in glasstorch"
        )
    _check_bag_arguments(input, weight, offsets, mode, per_sample_weights, padding_idx)
    check_same_device(
        "wrapper_CUDA___embedding_bag",
        weight=weight,
        indices=input,
        offsets=offsets,
        per_sample_weights=per_sample_weights,
    )
    if input.dim() == 2:
        rows, length = input.shape
        flat = input.reshape(-1)
        starts = list(range(0, rows * length, length)) if length else [0] * rows
        ids, bags = [i // length for i in range(rows * length)], rows
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    else:
        flat, starts = input, [int(o) for o in offsets.tolist()]
        _check_offsets(starts, flat.shape[0])
        ids, bags = _bag_ids(starts, flat.shape[0], include_last_offset)
    num = weight.shape[0]
    for position, index in enumerate(flat.tolist()):
        if not 0 <= index < num:
            raise RuntimeError(
                f"Index {position} of input takes value {index} which is not in the valid "
                f"range [0, {num})"
            )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    keep = [1.0 if idx != padding_idx else 0.0 for idx in flat.tolist()]
    vectors = embedding(flat, weight)  # (n, D)
    device = weight.device
    keep_t = tensor(keep, dtype=weight.dtype, device=device).unsqueeze(1)
    bag_of = tensor(ids, dtype=_dtype.int64, device=device)
    out_shape = (bags, weight.shape[1])
    if mode == "max":
        return _bag_max(vectors, ids, keep, bags, weight)
    if per_sample_weights is not None:
        vectors = vectors * per_sample_weights.unsqueeze(1)
    if not ids:
        return zeros(out_shape, dtype=weight.dtype, device=device)
    out = zeros(out_shape, dtype=weight.dtype, device=device).index_add(0, bag_of, vectors * keep_t)
    if mode == "mean":
        counts = [0.0] * bags
        for bag, kept in zip(ids, keep):
            counts[bag] += kept
        counts_t = tensor([max(c, 1.0) for c in counts], dtype=weight.dtype, device=device)
        out = out / counts_t.unsqueeze(1)
    return out


def _bag_max(vectors: Tensor, ids: list[int], keep: list[float], bags: int, weight: Tensor):
    """``mode="max"``: the elementwise maximum of each bag's kept rows (zeros if none)."""
    members: list[list[int]] = [[] for _ in range(bags)]
    for position, (bag, kept) in enumerate(zip(ids, keep)):
        if kept:
            members[bag].append(position)
    rows = []
    for positions in members:
        if positions:
            picked = vectors.index_select(0, tensor(positions, device=weight.device))
            rows.append(picked.amax(0))
        else:
            rows.append(weight.new_zeros((weight.shape[1],)))
    if not rows:
        return weight.new_zeros((0, weight.shape[1]))
    return stack(rows, 0)
