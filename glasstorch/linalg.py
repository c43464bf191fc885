"""``glasstorch.linalg``: norms of vectors and matrices.

``vector_norm`` is one Function (PyTorch's node ``LinalgVectorNormBackward0``)
whose derivative is written out for each order, so the gradient at the zero
vector is 0, as PyTorch's, rather than the NaN that ``sqrt(sum(x * x))``
would give; ``dist`` is the norm of a difference. Matrix norms are built
from it and from ``sum`` and ``amax``.
The matrix norms that need singular values (``ord=2``, ``-2``, ``"nuc"``)
are not available yet.
"""

from __future__ import annotations

import math

from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.ops.creation import zeros_like
from glasstorch.ops.linalg import linalg_cross
from glasstorch.ops.reduction import _dims_arg
from glasstorch.tensor import Tensor


def _check_floating(input: Tensor, name: str) -> None:
    if not input.dtype.is_floating_point:
        kind = input.dtype.legacy_name.replace("Tensor", "")
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got {kind}"
        )


def _norm_values(x: Tensor, ord: float, dims: tuple[int, ...]) -> Tensor:
    """The norm over ``dims``, kept as size-1 dims (plain operations, no autograd)."""
    magnitude = x.abs()
    if ord == math.inf:
        return magnitude.amax(dims, keepdim=True)
    if ord == -math.inf:
        return magnitude.amin(dims, keepdim=True)
    if ord == 0:
        return (x != 0).to(x.dtype).sum(dims, keepdim=True)
    if ord == 1:
        return magnitude.sum(dims, keepdim=True)
    if ord == 2:
        return (magnitude * magnitude).sum(dims, keepdim=True).sqrt()
    return (magnitude**ord).sum(dims, keepdim=True) ** (1.0 / ord)


class VectorNorm(Function):
    """``(sum |x|^ord) ** (1/ord)`` over ``dims``, with the limits 0, inf and -inf."""

    backward_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        norm = _norm_values(x, ord, dims)
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        ctx.save_for_backward(x, norm)
        if keepdim:
            return norm
        return norm.squeeze(dims) if dims else norm

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        ord = ctx.ord
        if is_grad_enabled():  # create_graph: the norm must carry its own history
            norm = VectorNorm.apply(x, ord, ctx.dims, True)
        if not ctx.keepdim:
            grad = grad.reshape(norm.shape)  # back to the size-1 dims of the forward
        if ord == 0:
            return zeros_like(x), None, None, None
        if ord in (math.inf, -math.inf):
            # The gradient is shared evenly among the elements that reach the extreme.
            hits = (x.abs() == norm).to(x.dtype)
            share = hits / hits.sum(ctx.dims, keepdim=True)
            return grad * x.sign() * share, None, None, None
        if ord == 1:
            return grad * x.sign(), None, None, None
        # d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1); 0 where the norm is 0.
        safe_norm = norm.masked_fill(norm == 0, math.inf)
        if ord == 2:
            return grad * x / safe_norm, None, None, None
        scaled = x.abs() / safe_norm
        return grad * x.sign() * scaled ** (ord - 1), None, None, None


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default).

    Args:
        x: a floating-point tensor.
        ord: any real number, ``inf`` (max ``|x|``), ``-inf`` (min ``|x|``) or
            0 (the number of non-zeros).
        dim: an int or a tuple of ints.
        keepdim: keep the reduced dims with size 1.
    """
    _check_floating(x, "linalg.vector_norm")
    if dtype is not None:
        x = x.to(dtype)
    dims = _dims_arg(x, dim)
    return VectorNorm.apply(x, float(ord), dims, bool(keepdim))


_NEEDS_SVD = (2, -2, "nuc")


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """The matrix norm of the ``dim`` planes of ``A``: ``"fro"``, 1, -1, inf or -inf.

    ``ord=1`` is the largest column sum of ``|A|``, ``ord=inf`` the largest
    row sum (-1 and -inf the smallest). ``2``, ``-2`` and ``"nuc"`` need
    singular values and raise NotImplementedError.
    """
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    _check_floating(A, "linalg.matrix_norm")
    if dtype is not None:
        A = A.to(dtype)
    rows, cols = (d % A.dim() for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    if ord in _NEEDS_SVD:
        raise NotImplementedError(
            f"linalg.matrix_norm: ord={ord!r} needs singular values, which glasstorch does not "
            "compute yet; use ord='fro', 1, -1, inf or -inf"
        )
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # ord=+-1 sums down each column (over rows), ord=+-inf along each row.
    summed, extreme = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = A.abs().sum(summed, keepdim=True)
    out = sums.amax(extreme, keepdim=True) if ord > 0 else sums.amin(extreme, keepdim=True)
    return out if keepdim else out.squeeze((rows, cols))


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector or matrix norm, as ``torch.linalg.norm`` decides.

    * no ``ord`` and no ``dim``: the 2-norm of all elements;
    * ``dim`` an int: a vector norm along it; a pair: a matrix norm;
    * ``ord`` without ``dim``: ``A`` must be 1-D (vector norm) or 2-D (matrix norm).
    """
    if dim is None and ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if dim is None:
        if A.dim() == 1 and not isinstance(ord, str):
            return vector_norm(A, ord, None, keepdim, dtype=dtype)
        if A.dim() <= 2:  # (a 1-D input with a matrix order fails in matrix_norm)
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.dim()}D."
        )
    if isinstance(dim, int) or len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)


def tensor_norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: the vector ``p``-norm of ``input`` over ``dim`` (all elements by default).

    ``p="fro"`` is the 2-norm; ``p="nuc"`` needs singular values and raises
    NotImplementedError. (PyTorch recommends ``glasstorch.linalg.norm`` and
    ``vector_norm`` for new code.)
    """
    if p == "nuc":
        return matrix_norm(input, "nuc")
    return vector_norm(input, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (default -1), broadcasting the rest.

    Both inputs must have the same number of dimensions, and ``dim`` size 3.
    """
    return linalg_cross(input, other, dim=dim)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), as a 0-d tensor."""
    difference = input - other
    if not difference.dtype.is_floating_point:
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{difference.dtype.title} instead."
        )
    return vector_norm(difference, p)
