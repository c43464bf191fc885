"""Matrix products: one batched ``matmul`` kernel behind matmul, mm, bmm, mv and dot.

``matmul`` follows PyTorch's rules: 1-D operands are treated as a row (first
argument) or column (second) vector and that dimension is removed afterwards;
batch dimensions broadcast.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._kernels import Strided
from glasstorch._shape import broadcast_shapes, expand_strides, numel
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.ops.core import cast
from glasstorch.tensor import Tensor, empty_tensor


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
        out = empty_tensor((a._shape[0], b._shape[1]), a.dtype)
        kernels.matmul(out._strided(), a._strided(), b._strided())
        return out
    dtype = _dtype.promote_types(a.dtype, b.dtype)
    a, b = cast(a, dtype), cast(b, dtype)
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    out = empty_tensor(tuple(batch) + (a.shape[-2], b.shape[-1]), dtype)
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


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices ``(n, m) @ (m, p) -> (n, p)``."""
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
