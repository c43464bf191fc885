"""Sparse COO tensors: a list of coordinates and the values found there.

A sparse COO tensor of ``size`` holds ``indices``, an int64 matrix with one
column per stored entry and one row per *sparse* dimension, and ``values``,
one slice per column (a number each when every dimension is sparse, a dense
slice of the remaining *dense* dimensions otherwise). Every position that no
column names holds zero. The same position may be named twice: the tensor
means the sum, and :meth:`SparseCooTensor.coalesce` makes that explicit.

Nothing here is a kernel. Each operation is written with dense operations
that both tiers and every device already have (``index_select``,
``index_add``, ``unique``, ``nonzero``), so autograd reaches the dense
operands and the values by the ordinary graph:

- ``to_dense``: ``index_add`` each value at its row-major position.
- ``coalesce``: ``unique`` of the row-major positions; ``index_add`` sums the
  values of each position.
- ``sparse @ dense``: gather the dense rows the column indices name, scale
  each by its value, ``index_add`` them into the output rows (``out[r] +=
  v * dense[c]`` for every entry ``(r, c, v)``).

Differences from PyTorch, all deliberate:

- Indices are checked against the size when the tensor is made (PyTorch
  checks only with ``check_invariants=True``), so a bad index is an error,
  never a silently wrong product.
- Only what graph programs use is supported: the operations listed in
  ``SparseCooTensor``'s docstring. Every other tensor operation raises a
  NotImplementedError that says to call ``to_dense()`` first.
- ``torch.add(dense, sparse)`` as a function is not hooked; the operator
  ``dense + sparse`` is.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._shape import numel
from glasstorch.ops.creation import as_tensor, zeros
from glasstorch.ops.indexing import index_add, index_select, nonzero
from glasstorch.ops.sorting import unique
from glasstorch.tensor import Tensor, parse_to, sparse_coo

SUPPORTED = (
    "to_dense, coalesce, is_coalesced, indices, values, _indices, _values, _nnz, sparse_dim, "
    "dense_dim, t, to/cpu/cuda/float/double, detach, clone, requires_grad_, +, * and / by a "
    "number, torch.sparse.mm/torch.spmm/torch.mm/matmul/@ with a dense matrix, torch.sparse.sum"
)


class _NoDenseStorage:
    """The storage of a sparse tensor: dense operations that reach for elements stop here."""

    def __getattr__(self, name):
        raise NotImplementedError(
            "this operation is not supported for sparse COO tensors in glasstorch (supported: "
            f"{SUPPORTED}); call .to_dense() first"
        )


class SparseCooTensor(Tensor):
    """A tensor of layout ``torch.sparse_coo``: ``indices`` and ``values`` (see the module).

    It is a :class:`~glasstorch.Tensor` (``isinstance`` holds, ``shape``,
    ``dim()``, ``dtype``, ``device`` and ``requires_grad`` mean what they mean
    for any tensor), but it has no dense storage, so a dense operation raises
    a NotImplementedError. Supported: ``to_dense``, ``coalesce``,
    ``is_coalesced``, ``indices``/``values`` (coalesced only, as in PyTorch),
    ``_indices``/``_values``, ``_nnz``, ``sparse_dim``/``dense_dim``, ``t``,
    ``to``/``cpu``/``cuda``/``float``/``double``, ``detach``, ``clone``,
    ``requires_grad_`` and ``grad``, ``+`` (with a sparse tensor, or
    ``dense + sparse``), ``*`` and ``/`` by a number, and products with a
    dense matrix (``torch.sparse.mm``, ``torch.spmm``, ``torch.mm``,
    ``matmul``, ``@``).

    Build one with :func:`sparse_coo_tensor` or ``Tensor.to_sparse()``.
    """

    layout = sparse_coo
    is_sparse = True

    @classmethod
    def _from_parts(cls, indices: Tensor, values: Tensor, size, coalesced: bool):
        """A sparse tensor over ``indices`` and ``values`` (checked by the caller)."""
        self = object.__new__(cls)
        self._storage = _NoDenseStorage()
        self._shape = tuple(size)
        self._stride = (0,) * len(self._shape)
        self._offset = 0
        self.dtype = values.dtype
        self._sparse_indices = indices
        self._sparse_values = values
        self._coalesced = coalesced
        return self

    # ------------------------------------------------------------- metadata
    @property
    def device(self):
        """Where the indices and values live."""
        return self._sparse_values.device

    @property
    def is_cuda(self) -> bool:
        """Whether the indices and values live on a GPU."""
        return self._sparse_values.is_cuda

    def sparse_dim(self) -> int:
        """How many leading dimensions the indices address."""
        return self._sparse_indices.shape[0]

    def dense_dim(self) -> int:
        """How many trailing dimensions each value slice has."""
        return self._sparse_values.dim() - 1

    def _nnz(self) -> int:
        """How many entries are stored (duplicates counted, zeros included)."""
        return self._sparse_values.shape[0]

    def _indices(self) -> Tensor:
        """The stored indices, ``(sparse_dim, nnz)`` int64, coalesced or not."""
        return self._sparse_indices

    def _values(self) -> Tensor:
        """The stored values, ``(nnz, *dense sizes)``, coalesced or not."""
        return self._sparse_values

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor (call :meth:`coalesce` first)."""
        if not self._coalesced:
            raise RuntimeError(
                "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
            )
        return self._sparse_indices

    def values(self) -> Tensor:
        """The values of a coalesced tensor (call :meth:`coalesce` first)."""
        if not self._coalesced:
            raise RuntimeError(
                "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
            )
        return self._sparse_values

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted row-major with no position named twice."""
        return self._coalesced

    # ------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool:
        """Whether the values take part in autograd."""
        return self._sparse_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> SparseCooTensor:
        """Make this sparse tensor a leaf whose gradient is collected (see :attr:`grad`).

        The values become a leaf of their own, so the tensor they were made
        from is not changed.
        """
        if self._sparse_values.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        self._sparse_values = self._sparse_values.detach().requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        """The graph node that made the values (None for a leaf)."""
        return self._sparse_values.grad_fn

    @property
    def grad(self):
        """The gradient of a leaf: a sparse tensor with this one's indices (None until backward).

        It holds the gradient at the stored positions only, as PyTorch's
        sparse products give it (``sparse_mask``).
        """
        values_grad = self._sparse_values.grad
        if values_grad is None:
            return None
        return SparseCooTensor._from_parts(
            self._sparse_indices, values_grad, self._shape, self._coalesced
        )

    def detach(self) -> SparseCooTensor:
        """The same indices and values, cut off from the graph."""
        return SparseCooTensor._from_parts(
            self._sparse_indices, self._sparse_values.detach(), self._shape, self._coalesced
        )

    def clone(self) -> SparseCooTensor:
        """A copy of the indices and values (recorded by autograd)."""
        return SparseCooTensor._from_parts(
            self._sparse_indices.clone(), self._sparse_values.clone(), self._shape, self._coalesced
        )

    def __deepcopy__(self, memo):
        out = self.detach().clone()
        if self.requires_grad:
            out.requires_grad_()
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        parts = (self._sparse_indices, self._sparse_values.detach(), self._shape)
        return (sparse_coo_tensor, parts)

    # ----------------------------------------------------------- conversion
    def to(self, *args, **kwargs) -> SparseCooTensor:
        """Move the indices and values to a device and/or cast the values (``s.to("cuda")``)."""
        kwargs.pop("copy", None)
        dtype, target, non_blocking = parse_to(args, kwargs)
        indices, values = self._sparse_indices, self._sparse_values
        if target is not None:
            indices = indices.to(target, non_blocking=non_blocking)
            values = values.to(target, non_blocking=non_blocking)
        if dtype is not None:
            values = values.to(dtype)
        if indices is self._sparse_indices and values is self._sparse_values:
            return self
        return SparseCooTensor._from_parts(indices, values, self._shape, self._coalesced)

    def to_dense(self) -> Tensor:
        """The dense tensor: each value added at its position (duplicates add up)."""
        sparse_shape = self._shape[: self.sparse_dim()]
        flat = zeros(
            (numel(sparse_shape), *self._shape[self.sparse_dim() :]),
            dtype=self.dtype,
            device=self.device,
        )
        flat = index_add(flat, 0, _row_major_positions(self), self._sparse_values)
        return flat.view(self._shape)

    def to_sparse(self, sparse_dim: int | None = None) -> SparseCooTensor:
        """Itself (it is sparse already)."""
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(
                "to_sparse: conversion from Sparse to Sparse with sparse_dim argument != "
                "self.sparse_dim() is not supported"
            )
        return self

    def coalesce(self) -> SparseCooTensor:
        """The same tensor with sorted indices and each position stored once (values summed)."""
        if self._coalesced:
            return self
        positions = _row_major_positions(self)
        distinct, slot = unique(positions, return_inverse=True)
        values = self._sparse_values
        summed = zeros(
            (distinct.shape[0], *values.shape[1:]), dtype=values.dtype, device=values.device
        )
        summed = index_add(summed, 0, slot, values)
        # Undo the row-major numbering: the last sparse dimension varies fastest.
        rows = []
        for size in reversed(self._shape[: self.sparse_dim()]):
            rows.append(distinct % size)
            distinct = distinct // size
        indices = _stack_rows(list(reversed(rows)), self._sparse_indices)
        return SparseCooTensor._from_parts(indices, summed, self._shape, coalesced=True)

    def t(self) -> SparseCooTensor:
        """The transpose of a 2-D sparse matrix (its two index rows swapped)."""
        if self.dim() != 2 or self.sparse_dim() != 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions"
            )
        indices = _stack_rows([self._sparse_indices[1], self._sparse_indices[0]], None)
        size = (self._shape[1], self._shape[0])
        return SparseCooTensor._from_parts(indices, self._sparse_values, size, coalesced=False)

    # ------------------------------------------------------------ arithmetic
    def __add__(self, other):
        if isinstance(other, SparseCooTensor):
            return _add_sparse(self, other)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")

    def __radd__(self, other):
        """``dense + sparse``: a dense tensor, as in PyTorch."""
        return other + self.to_dense()

    def __mul__(self, other):
        return self._scaled(other, lambda values: values * other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._scaled(other, lambda values: values / other)

    def __neg__(self):
        return self._scaled(-1, lambda values: -values)

    def _scaled(self, number, scale) -> SparseCooTensor:
        if isinstance(number, Tensor) and number.dim() != 0:
            raise NotImplementedError(
                "glasstorch multiplies or divides a sparse COO tensor only by a number or a 0-d "
                "tensor; call .to_dense() first"
            )
        values = scale(self._sparse_values)
        return SparseCooTensor._from_parts(
            self._sparse_indices, values, self._shape, self._coalesced
        )

    def __matmul__(self, other):
        return sparse_matmul(self, other)

    def __rmatmul__(self, other):
        return sparse_matmul(other, self)

    def mm(self, mat2) -> Tensor:
        """``self @ mat2`` for a dense matrix ``mat2`` (see :func:`sparse_mm`)."""
        return sparse_mm(self, mat2)

    matmul = __matmul__
    spmm = mm

    def sum(self, dim=None, dtype=None):
        """The sum of all elements, or a sparse sum over ``dim`` (see :func:`sparse_sum`)."""
        return sparse_sum(self, dim, dtype=dtype)

    def __repr__(self) -> str:
        from glasstorch._printing import tensor_repr

        first = "tensor(indices="
        second = "       values="
        text = first + tensor_repr(self._sparse_indices.detach(), inner_at=len(first))
        text += ",\n" + second + tensor_repr(self._sparse_values.detach(), inner_at=len(second))
        text += f",\n       size={tuple(self._shape)}, nnz={self._nnz()}"
        if self.is_cuda:
            text += f", device='{self.device}'"
        if self.dtype.name not in ("float32", "int64"):
            text += f", dtype=torch.{self.dtype.name}"
        text += ", layout=torch.sparse_coo"
        if self.grad_fn is not None:
            text += f",\n       grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            text += ", requires_grad=True"
        return text + ")"


# ---------------------------------------------------------------- helpers
def _row_major_positions(sparse: SparseCooTensor) -> Tensor:
    """Each entry's position among the sparse dimensions, counted row-major (int64, ``(nnz,)``).

    Horner's rule over the index rows: ``((i0 * s1 + i1) * s2 + i2) ...``.
    """
    indices = sparse._sparse_indices
    positions = zeros(indices.shape[1], dtype=_dtype.int64, device=indices.device)
    for row, size in enumerate(sparse._shape[: sparse.sparse_dim()]):
        positions = positions * size + indices[row]
    return positions


def _stack_rows(rows: list, like: Tensor | None) -> Tensor:
    """The 1-D int64 ``rows`` as one ``(len(rows), n)`` index matrix."""
    from glasstorch.ops.views import stack

    if not rows:  # no sparse dimensions: an empty (0, nnz) matrix
        return zeros((0, like.shape[1]), dtype=_dtype.int64, device=like.device)
    return stack(rows)


def _add_sparse(a: SparseCooTensor, b: SparseCooTensor) -> SparseCooTensor:
    """``a + b`` for two sparse tensors of one size: both entry lists together, coalesced."""
    from glasstorch.ops.views import cat

    if a._shape != b._shape or a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size "
            f"{list(a._shape)} while other has size {list(b._shape)} (FYI: op2-sparse "
            "addition does not currently support broadcasting)"
        )
    indices = cat([a._sparse_indices, b._sparse_indices], 1)
    values = cat([a._sparse_values, b._sparse_values.to(a.dtype)], 0)
    return SparseCooTensor._from_parts(indices, values, a._shape, coalesced=False).coalesce()


# ----------------------------------------------------------------- creation
def sparse_coo_tensor(
    indices,
    values,
    size=None,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    check_invariants=None,
    is_coalesced: bool | None = None,
) -> SparseCooTensor:
    """A sparse COO tensor with ``values`` at ``indices`` (``torch.sparse_coo_tensor``).

    Args:
        indices: ``(sparse_dim, nnz)`` integers (a tensor, array or nested
            list), stored as int64. Column ``k`` is the position of entry ``k``.
        values: ``(nnz, *dense sizes)``, one slice per column of ``indices``.
        size: the tensor's size; by default each sparse dimension is one
            more than its largest index, and the dense sizes are ``values``'.
        dtype, device: cast / move the values (and the indices) there.
        requires_grad: make the result a leaf whose ``grad`` is collected.
        check_invariants: accepted; glasstorch always checks the indices.
        is_coalesced: promise that the indices are already coalesced.

    Example::

        >>> torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3)).to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    values = as_tensor(values, dtype=dtype)
    if device is not None:
        values = values.to(device)
    indices = as_tensor(indices).to(values.device, _dtype.int64)
    if indices.dim() != 2:
        raise RuntimeError(
            f"indices must be sparse_dim x nnz, but got: {list(indices.shape)} (a 2-D tensor "
            "with one row per sparse dimension)"
        )
    if values.dim() == 0:
        raise RuntimeError("values must be at least 1-D (one value per column of indices)")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(
            "indices and values must have same nnz, but got nnz from indices: "
            f"{indices.shape[1]}, nnz from values: {values.shape[0]}"
        )
    sparse_dim = indices.shape[0]
    dense_sizes = tuple(values.shape[1:])
    if size is None:
        largest = indices.amax(1).tolist() if indices.shape[1] else [-1] * sparse_dim
        size = tuple(i + 1 for i in largest) + dense_sizes
    size = tuple(int(s) for s in size)
    _check_against_size(indices, size, sparse_dim, dense_sizes)
    out = SparseCooTensor._from_parts(indices, values, size, coalesced=bool(is_coalesced))
    return out.requires_grad_() if requires_grad else out


def _check_against_size(indices: Tensor, size: tuple, sparse_dim: int, dense_sizes: tuple):
    """Refuse a size that disagrees with the indices or the values (PyTorch's invariant checks)."""
    if len(size) != sparse_dim + len(dense_sizes):
        raise RuntimeError(
            f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
            f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_sizes)}"
        )
    if tuple(size[sparse_dim:]) != dense_sizes:
        raise RuntimeError(
            f"values has incorrect size, expected {list(size[:0]) + [indices.shape[1]]} + "
            f"{list(size[sparse_dim:])}, got {[indices.shape[1], *dense_sizes]}"
        )
    if indices.shape[1] == 0:
        return
    lowest, highest = indices.amin(1).tolist(), indices.amax(1).tolist()
    for dim in range(sparse_dim):
        if lowest[dim] < 0:
            raise RuntimeError(
                f"`indices[{dim}]` contains negative values ({lowest[dim]}): indices must be "
                "non-negative"
            )
        if highest[dim] >= size[dim]:
            raise RuntimeError(
                f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} but "
                f"found index {highest[dim]}"
            )


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout=None) -> SparseCooTensor:
    """``input`` as a coalesced sparse COO tensor of its nonzero entries (``Tensor.to_sparse``).

    With ``sparse_dim`` only the leading ``sparse_dim`` dimensions are sparse,
    and each stored value is a dense slice with at least one nonzero element.
    Gradients flow back to ``input``.
    """
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(
            f"to_sparse: glasstorch supports only torch.sparse_coo, not {layout}"
        )
    sparse_dim = input.dim() if sparse_dim is None else sparse_dim
    if not 0 < sparse_dim <= input.dim():
        raise RuntimeError(
            f"sparse_dim argument must be in [1, {input.dim()}] but got {sparse_dim} (glasstorch "
            "does not make sparse tensors without sparse dimensions)"
        )
    sparse_shape = tuple(input.shape[:sparse_dim])
    nonzero_slices = (input != 0).reshape(*sparse_shape, -1).any(-1)
    indices = nonzero(nonzero_slices).t().contiguous()
    values = input[tuple(indices)]
    return SparseCooTensor._from_parts(indices, values, input.shape, coalesced=True)


def to_dense(input: Tensor, dtype=None) -> Tensor:
    """A dense tensor's ``to_dense()``: itself (cast to ``dtype`` if given)."""
    return input if dtype is None else input.to(dtype)


# ----------------------------------------------------------------- products
def sparse_mm(sparse: SparseCooTensor, dense: Tensor) -> Tensor:
    """``sparse @ dense`` for a 2-D sparse matrix and a dense matrix: a dense matrix.

    For each stored entry ``(r, c, v)``: ``out[r] += v * dense[c]``. Gradients
    reach ``dense`` and the sparse values.
    """
    if not isinstance(sparse, SparseCooTensor):
        raise NotImplementedError(
            "torch.sparse.mm: glasstorch needs a sparse COO first operand here; use torch.mm "
            "for two dense matrices"
        )
    if isinstance(dense, SparseCooTensor):
        raise NotImplementedError(
            "glasstorch does not multiply two sparse tensors; call .to_dense() on one of them"
        )
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise RuntimeError(
            f"addmm: matrices expected, got {sparse.sparse_dim()}D sparse, "
            f"{sparse.dense_dim()}D dense tensor"
        )
    if dense.dim() != 2:
        raise RuntimeError(f"addmm: matrices expected, got {dense.dim()}D tensor")
    if dense.shape[0] != sparse.shape[1]:
        raise RuntimeError(
            f"addmm: Argument #3 (dense): Expected dim 0 size {sparse.shape[1]}, got "
            f"{dense.shape[0]}"
        )
    if dense.dtype is not sparse.dtype:
        raise RuntimeError(
            f"expected scalar type {sparse.dtype.title} but found {dense.dtype.title}"
        )
    rows, columns = sparse._sparse_indices[0], sparse._sparse_indices[1]
    contributions = index_select(dense, 0, columns) * sparse._sparse_values.unsqueeze(1)
    out = zeros((sparse.shape[0], dense.shape[1]), dtype=dense.dtype, device=dense.device)
    return index_add(out, 0, rows, contributions)


def sparse_matmul(input: Tensor, other: Tensor) -> Tensor:
    """``torch.mm``/``matmul``/``@`` with a sparse operand: sparse @ dense, or dense @ sparse.

    ``dense @ sparse`` is ``(sparse.t() @ dense.t()).t()``. A dense vector as
    the second operand gives a vector.
    """
    if isinstance(input, SparseCooTensor):
        if not isinstance(other, SparseCooTensor) and other.dim() == 1:
            return sparse_mm(input, other.unsqueeze(1)).squeeze(1)
        return sparse_mm(input, other)
    if input.dim() != 2:
        raise NotImplementedError(
            "glasstorch multiplies a dense matrix by a sparse COO matrix only when the dense "
            f"operand is 2-D (got {input.dim()}-D); call .to_dense() first"
        )
    return sparse_mm(other.t(), input.t()).t()


def sparse_sum(input: SparseCooTensor, dim=None, dtype=None):
    """``torch.sparse.sum``: all elements (a 0-d dense tensor), or the sum over ``dim``.

    Summing over every sparse dimension gives a dense tensor; otherwise the
    result is a coalesced sparse tensor over the dimensions that remain.
    """
    values = input._sparse_values if dtype is None else input._sparse_values.to(dtype)
    if dim is None:
        return values.sum()
    dims = {d % input.dim() for d in ((dim,) if isinstance(dim, int) else dim)}
    sparse_dim = input.sparse_dim()
    dense_summed = [d - sparse_dim + 1 for d in sorted(dims) if d >= sparse_dim]
    if dense_summed:
        values = values.sum(dense_summed)
    kept = [d for d in range(sparse_dim) if d not in dims]
    if not kept:
        return values.sum(0)
    indices = input._sparse_indices[kept]
    size = [s for d, s in enumerate(input._shape) if d not in dims]
    return SparseCooTensor._from_parts(indices, values, size, coalesced=False).coalesce()


def legacy_float_tensor(indices, values, size=None) -> SparseCooTensor:
    """``torch.sparse.FloatTensor(indices, values, size)``: the legacy float32 constructor."""
    return sparse_coo_tensor(indices, values, size, dtype=_dtype.float32)


__all__ = [
    "SparseCooTensor",
    "sparse_coo_tensor",
    "sparse_matmul",
    "sparse_mm",
    "sparse_sum",
    "to_dense",
    "to_sparse",
]
