"""``Embedding`` and ``EmbeddingBag``: lookup tables of learned vectors."""

from __future__ import annotations

from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.ops.creation import empty
from glasstorch.tensor import Tensor


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, indexed by integers.

    Args:
        num_embeddings: number of rows (the vocabulary size).
        embedding_dim: size of each vector.
        padding_idx: a row that starts at zero and receives no gradient, so it
            stays a neutral "padding" vector. Negative values count from the end.
        dtype: dtype of the table.

    Shape:
        - Input: integer indices of any shape ``(*)``.
        - Output: ``(*, embedding_dim)``.

    Attributes:
        weight: ``(num_embeddings, embedding_dim)``, initialised from ``N(0, 1)``.

    Example::

        >>> table = nn.Embedding(10, 3, padding_idx=0)
        >>> table(torch.tensor([[1, 2, 0]])).shape
        torch.Size([1, 3, 3])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "Embedding: max_norm, scale_grad_by_freq and sparse are not supported in glasstorch"
            )
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            weight = empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
            self.weight = Parameter(weight, requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the table from ``N(0, 1)`` again and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None
    ) -> Embedding:
        """An Embedding whose table is ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without building each bag's vectors:
    see :func:`F.embedding_bag <glasstorch.nn.functional.embedding_bag>`.

    Args:
        num_embeddings: number of rows (the vocabulary size).
        embedding_dim: size of each vector.
        max_norm, norm_type, scale_grad_by_freq, sparse: only their defaults are supported.
        mode: ``"sum"``, ``"mean"`` (default) or ``"max"``.
        include_last_offset: ``offsets`` also gives the end of the last bag.
        padding_idx: a row that starts at zero and is left out of every bag.

    Shape:
        - Input: ``(B, L)`` (``B`` bags of ``L`` indices), or ``(n,)`` with
          ``offsets`` ``(B,)`` saying where each bag starts.
        - per_sample_weights (``mode="sum"``): the input's shape.
        - Output: ``(B, embedding_dim)``.

    Attributes:
        weight: ``(num_embeddings, embedding_dim)``, initialised from ``N(0, 1)``.

    Examples::

        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 4])).shape
        torch.Size([2, 3])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "EmbeddingBag: max_norm, scale_grad_by_freq and sparse are not supported in "
                "glasstorch"
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(
                empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
            )
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """Draw the table from ``N(0, 1)`` again and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose table is ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
            include_last_offset, padding_idx,
        )  # fmt: skip
        bag.weight.requires_grad_(not freeze)
        return bag

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
        return F.embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
            self.mode, self.sparse, per_sample_weights, self.include_last_offset,
            self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
