"""Matrix products: matmul, mm, bmm, mv and dot (one batched ``matmul`` kernel),
and those built on them: addmm, baddbmm, addbmm, addmv, vdot, inner, outer,
trace, kron, cross, cov, corrcoef, cdist.

``matmul`` follows PyTorch's rules: 1-D operands are treated as a row (first
argument) or column (second) vector and that dimension is removed afterwards;
batch dimensions broadcast. The norms are in :mod:`glasstorch.linalg`.
"""

from __future__ import annotations

import builtins
import warnings

from glasstorch import _dtype, _tier
from glasstorch._kernels import Strided
from glasstorch._shape import broadcast_shapes, expand_strides, normalize_dim, numel
from glasstorch.autograd.function import Function
from glasstorch.ops.core import cast, floating
from glasstorch.ops.pointwise.selection import where
from glasstorch.ops.shape import Diagonal
from glasstorch.ops.views import cat
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


def _batched_view(t: Tensor, batch: tuple[int, ...]) -> Strided:
    """Kernel view of a (…, rows, cols) tensor with its batch dims broadcast to ``batch``."""
    shape = tuple(batch) + tuple(t.shape[-2:])
    return Strided(
        t._storage.buffer, shape, expand_strides(t.shape, t.stride(), shape), t.storage_offset()
    )


def compute_matmul(a: Tensor, b: Tensor) -> Tensor:
    """The product of two tensors of at least 2 dims, batch dims broadcast (no autograd)."""
    if a.dim() == 2 and b.dim() == 2 and a.dtype is b.dtype:
        # Two matrices of one dtype, the common case: no batch to broadcast.
        out = empty_tensor((a._shape[0], b._shape[1]), a.dtype, device=a.device)
        kernels.matmul(out._strided(), a._strided(), b._strided())
        return out
    dtype = _dtype.promote_types(a.dtype, b.dtype)
    a, b = cast(a, dtype), cast(b, dtype)
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    out = empty_tensor(tuple(batch) + (a.shape[-2], b.shape[-1]), dtype, device=a.device)
    kernels.matmul(out._strided(), _batched_view(a, batch), _batched_view(b, batch))
    return out


def _is_transposed(t: Tensor) -> bool:
    """Whether the last two dims are laid out column-major (a transposed matrix)."""
    if t.dim() < 2 or t.shape[-1] == 1 or t.shape[-2] == 1:
        return False
    return t.stride(-2) == 1 and t.stride(-1) == t.shape[-2]


def _matmul_function(name: str, node_name: str):
    """A Function for a product of two matrices (or batches): forward and backward.

    For ``C = A @ B``: ``dA = dC @ B^T`` and ``dB = A^T @ dC``. Broadcast batch
    dims are summed away by the engine.

    Each gradient is given the memory layout of the input it belongs to. The
    weight of ``nn.Linear`` enters as ``weight.t()``, a transposed view; its
    gradient is computed as ``(dC^T @ A)^T``, a transposed view of a contiguous
    product, so after the transpose back it is contiguous, like the weight,
    and needs no copy (PyTorch's mm backward chooses the same way).
    """

    def forward(ctx, a, b):
        ctx.save_for_backward(
            a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None
        )
        ctx.transposed = (_is_transposed(a), _is_transposed(b))
        return compute_matmul(a, b)

    def backward(ctx, grad):
        # -- solution: autograd/matmul
        a, b = ctx.saved_tensors
        a_transposed, b_transposed = ctx.transposed
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = (b @ grad.mT).mT if a_transposed else grad @ b.mT
        if ctx.needs_input_grad[1]:
            grad_b = (grad.mT @ a).mT if b_transposed else a.mT @ grad
        return grad_a, grad_b
        # -- end solution

    return type(
        name,
        (Function,),
        {
            "backward_name": node_name,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "__doc__": f"Matrix product recorded as {node_name}.",
        },
    )


Mm = _matmul_function("Mm", "MmBackward0")
Bmm = _matmul_function("Bmm", "BmmBackward0")


class Dot(Function):
    backward_name = "DotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return compute_matmul(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a


class Mv(Function):
    backward_name = "MvBackward0"

    @staticmethod
    def forward(ctx, m, v):
        ctx.save_for_backward(m, v)
        return compute_matmul(m, v.reshape(-1, 1)).reshape(-1)

    @staticmethod
    def backward(ctx, grad):
        m, v = ctx.saved_tensors
        return grad.unsqueeze(1) * v.unsqueeze(0), m.t().mv(grad)


def _shape_error(a: Tensor, b: Tensor) -> RuntimeError:
    rows_a = a.shape[-2] if a.dim() > 1 else 1
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({rows_a}x{a.shape[-1]} and "
        f"{b.shape[-2] if b.dim() > 1 else b.shape[0]}x{b.shape[-1] if b.dim() > 1 else 1})"
    )


def _check_dtypes(a: Tensor, b: Tensor, name: str) -> None:
    """Matrix products do not promote: both operands must share a dtype, as in PyTorch."""
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {a.dtype.c_name} != "
            f"{b.dtype.c_name}"
        )


def _sparse_product(input: Tensor, other: Tensor) -> Tensor:
    """A product with a sparse COO operand, written in glasstorch/ops/sparse.py."""
    from glasstorch.ops.sparse import sparse_matmul

    return sparse_matmul(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices ``(n, m) @ (m, p) -> (n, p)``; one may be sparse COO."""
    if input.is_sparse or mat2.is_sparse:
        return _sparse_product(input, mat2)
    if input.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'self' if input.dim() != 2 else 'mat2'} must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise _shape_error(input, mat2)
    _check_dtypes(input, mat2, "mm")
    return Mm.apply(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product ``(b, n, m) @ (b, m, p) -> (b, n, p)`` (no broadcasting)."""
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if input.dim() != 3 else "batch2 must be a 3D tensor"
        )
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    _check_dtypes(input, mat2, "bmm")
    return Bmm.apply(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product ``(n, m) @ (m,) -> (n,)``."""
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
            f"vec ({vec.shape[0]})"
        )
    _check_dtypes(input, vec, "mv")
    return Mv.apply(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of the same length."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors"
        )
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] to have the same number "
            f"of elements, but got {input.shape[0]} and {other.shape[0]} elements respectively"
        )
    if input.dtype is not other.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {input.dtype.name.capitalize()} and {other.dtype.name.capitalize()}"
        )
    return Dot.apply(input, other)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules for 1-D operands and batch broadcasting."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): argument 'other' must be Tensor")
    if input.is_sparse or other.is_sparse:
        return _sparse_product(input, other)
    if input.dim() == 0 or other.dim() == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {input.dim()}D and "
            f"{other.dim()}D"
        )
    if input.dim() == 1 and other.dim() == 1:
        return dot(input, other)
    if input.dim() == 2 and other.dim() == 1:
        return mv(input, other)
    if input.dim() == 1 and other.dim() == 2:
        if input.shape[0] != other.shape[0]:
            raise _shape_error(input.unsqueeze(0), other)
        return mm(input.unsqueeze(0), other).squeeze(0)
    if input.dim() == 2 and other.dim() == 2:
        return mm(input, other)
    if input.dim() > 2 and other.dim() == 2 and input.dtype is other.dtype:
        # Folding, as PyTorch does: (..., n, k) @ (k, m) is one (N, k) @ (k, m)
        # product (one GEMM, and other's gradient one product, not a batch of them).
        rows = input.reshape(numel(input.shape[:-1]), input.shape[-1])
        if rows.shape[1] != other.shape[0]:
            raise _shape_error(rows, other)
        return mm(rows, other).view(*input.shape[:-1], other.shape[1])
    # Batched: treat 1-D operands as a row / column, then drop that dim again.
    a = input.unsqueeze(0) if input.dim() == 1 else input
    b = other.unsqueeze(-1) if other.dim() == 1 else other
    if a.shape[-1] != b.shape[-2]:
        raise _shape_error(a, b)
    broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    if a.dtype is not b.dtype:
        _check_dtypes(a, b, "matmul")
    out = Bmm.apply(a, b)  # batched product, broadcast batch dims summed by the engine
    if input.dim() == 1:
        out = out.squeeze(-2)
    if other.dim() == 1:
        out = out.squeeze(-1)
    return out


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices (``input`` broadcasts)."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(
            f"mat1 must be a matrix, got {mat1.dim()}-D tensor"
            if mat1.dim() != 2
            else f"mat2 must be a matrix, got {mat2.dim()}-D tensor"
        )
    return _scaled_sum(input, mat1 @ mat2, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor"
        )
    return _scaled_sum(input, batch1 @ batch2, beta, alpha)


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    product = product if alpha == 1 else product * alpha
    if beta == 0:  # as in PyTorch, input is ignored (its NaNs too)
        return product
    return product + (input if beta == 1 else input * beta)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for a matrix and a vector."""
    return _scaled_sum(input, mat.mv(vec), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    The batch of products is computed, then summed (PyTorch accumulates in place).
    """
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor"
        )
    return _scaled_sum(input, batch1.bmm(batch2).sum(0), beta, alpha)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (conjugating the first, a no-op for real tensors)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors"
        )
    if input.dtype is not other.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{input.dtype.title} and {other.dtype.title}"
        )
    return input.dot(other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dimension of both.

    The result's shape is ``input.shape[:-1] + other.shape[:-1]``; a 0-d
    operand multiplies the other.
    """
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    k = input.shape[-1]
    product = input.reshape(-1, k) @ other.reshape(-1, k).t()
    return product.reshape(*input.shape[:-1], *other.shape[:-1])


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: each element of ``input`` scales a whole copy of ``other``.

    Example::

        >>> torch.kron(torch.eye(2), torch.ones(1, 2))
        tensor([[1., 1., 0., 0.],
                [0., 0., 1., 1.]])
    """
    ndim = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (ndim - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.dim()) + tuple(other.shape))
    a_split = [s for n in a.shape for s in (n, 1)]
    b_split = [s for n in b.shape for s in (1, n)]
    product = a.reshape(a_split) * b.reshape(b_split)
    return product.reshape([m * n for m, n in zip(a.shape, b.shape)])


def _cross_along(a: Tensor, b: Tensor, dim: int) -> Tensor:
    a0, a1, a2 = (a.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(dim, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The 3-D cross product along ``dim`` (a dimension of size 3), broadcasting the rest.

    Without ``dim`` PyTorch's deprecated default is used: the first dimension
    of size 3, with its warning. :func:`glasstorch.linalg.cross` defaults to -1.
    """
    shape = broadcast_shapes(input.shape, other.shape)
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\n"
            "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
            "The default value of dim will change to agree with that of linalg.cross in a "
            "future release.",
            UserWarning,
            stacklevel=2,
        )
        dim = next((d for d, n in enumerate(shape) if n == 3), -1)
    return linalg_cross(input, other, dim=dim)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.cross``: the cross product of 3-vectors along ``dim`` (default -1)."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input.shape, other.shape)
    dim = normalize_dim(dim, len(shape))
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim]} and {other.shape[dim]}"
        )
    return _cross_along(input.expand(shape), other.expand(shape), dim)


def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns).

    Args:
        input: 1-D (one variable) or 2-D ``(variables, observations)``.
        correction: subtracted from the (weighted) observation count; 1 is Bessel's.
        fweights: integer frequency of each observation.
        aweights: a float weight for each observation.
    """
    if input.dim() > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.dim()} dimensions"
        )
    x = input.reshape(1, -1) if input.dim() < 2 else input
    x = floating(x)
    weights = None
    if fweights is not None:
        weights = fweights.to(x.dtype)
    if aweights is not None:
        weights = aweights.to(x.dtype) if weights is None else weights * aweights.to(x.dtype)
    if weights is None:
        total = x.shape[1]
        mean = x.mean(1, keepdim=True)
        centered = x - mean
        norm = total - correction
        product = centered @ centered.t()
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        centered = x - mean
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (weights * aweights.to(x.dtype)).sum() / total
        product = (centered * weights) @ centered.t()
    if isinstance(norm, Tensor):
        norm = norm.clamp_min(0)
    else:
        if norm <= 0:
            warnings.warn(
                "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
                "number of observations.",
                UserWarning,
                stacklevel=2,
            )
        norm = builtins.max(norm, 0)
    out = product / norm
    return out.reshape(()) if input.dim() < 2 else out


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (clipped to ``[-1, 1]``)."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return Diagonal.apply(input, 0, 0, 1).sum()


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product ``out[i, j] = input[i] * vec2[j]`` of two vectors."""
    for name, value in (("self", input), ("vec2", vec2)):
        if value.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {value.dim()}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` and each row of ``x2``.

    ``out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p``, from the
    broadcast difference (``P x R x M`` elements per batch). The gradient of a
    zero distance is zero, as in PyTorch.

    Args:
        x1: ``(*, P, M)``.
        x2: ``(*, R, M)``.
        p: the norm, ``>= 0`` (``float("inf")`` for the largest difference).
        compute_mode: accepted for compatibility.

    Shape:
        - Output: ``(*, P, R)``.

    Example::

        >>> torch.cdist(torch.zeros(1, 2), torch.tensor([[3.0, 4.0]]))
        tensor([[5.]])
    """
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    difference = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == float("inf"):
        return difference.amax(-1)
    if p == 0:
        return (difference != 0).sum(-1).to(difference.dtype)
    if p == 1:
        return difference.sum(-1)
    powered = (difference * difference).sum(-1) if p == 2 else difference.pow(p).sum(-1)
    positive = powered > 0
    safe = where(positive, powered, 1.0)
    return where(positive, safe.pow(1.0 / p), 0.0)


# ----------------------------------------------- float32 matmul precision

_float32_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision (``"highest"``, ``"high"`` or ``"medium"``).

    PyTorch may then use TensorFloat-32 or bfloat16 inside float32 matrix
    products; glasstorch always computes them in float32, whatever is set.
    """
    global _float32_matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid float32 matmul precision: {precision}")
    _float32_matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The precision last set by :func:`set_float32_matmul_precision` (``"highest"`` at start)."""
    return _float32_matmul_precision
