"""In-place operations: new values into old storage, a version bump, and new history.

``x.add_(y)`` is computed as ``result = x + y`` and then written back into x's
storage. Three bookkeeping steps make that safe:

1. **Checks.** A leaf that requires grad may not be changed in place while
   grad mode is on (its gradient would refer to values that no longer exist);
   the result's dtype must be castable to x's; its shape must be x's.
2. **Version counter.** The storage's version goes up, so a backward pass that
   saved the old values can tell they are gone and raise instead of silently
   computing a wrong gradient.
3. **History.** x's ``grad_fn`` becomes the result's: the graph now says x was
   computed from its old self. If x is a *view* of a base tensor, the base
   changed too: its history becomes a ``CopySlices`` node that takes the base's
   old gradient path everywhere except where the view is, and the result's path
   there.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch._shape import is_expandable_to
from glasstorch._tier import kernels
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.ops.core import as_operand, cast, is_number, strided_as
from glasstorch.ops.creation import zeros_like
from glasstorch.tensor import Tensor, empty_tensor


def check_inplace(target: Tensor) -> None:
    """Refuse in-place changes that would corrupt data or autograd, with PyTorch's message."""
    overlap = any(size > 1 and stride == 0 for size, stride in zip(target.shape, target.stride()))
    if overlap and target.numel() > 0:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )
    if not is_grad_enabled():
        return
    if target.is_leaf and target.requires_grad:
        if target._base is not None and target._base.requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    base = target._base
    if base is not None and base.is_leaf and base.requires_grad:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


# ------------------------------------------------------ inputs that overlap the target


def _same_elements_in_order(target: Tensor, other: Tensor) -> bool:
    """Whether ``other``, broadcast to ``target``'s shape, reads each element
    exactly where ``target`` writes it (``x.add_(x)``): a pure elementwise
    update, which is safe."""
    from glasstorch._shape import expand_strides, is_expandable_to

    shape = tuple(target.shape)
    if not is_expandable_to(tuple(other.shape), shape):
        return False
    strides = expand_strides(tuple(other.shape), other.stride(), shape)  # other.expand(shape)'s
    return other.storage_offset() == target.storage_offset() and all(
        size == 1 or a == b for size, a, b in zip(shape, strides, target.stride())
    )


def _span(view: Tensor) -> tuple[int, int]:
    """The first and last buffer positions a (non-empty) view touches."""
    low = high = view.storage_offset()
    for size, stride in zip(view.shape, view.stride()):
        reach = (size - 1) * stride
        low, high = low + min(reach, 0), high + max(reach, 0)
    return low, high


def _is_dense(view: Tensor) -> bool:
    """Whether a view covers one gap-free block of its buffer, each element once
    (PyTorch's 'non-overlapping and dense')."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(view.shape, view.stride()) if sz > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _positions(view: Tensor) -> set[int]:
    """Every buffer position a view touches (only for the rare ambiguous case)."""
    found = {view.storage_offset()}
    for size, stride in zip(view.shape, view.stride()):
        found = {p + i * stride for p in found for i in range(size)}
    return found


def check_no_partial_overlap(target: Tensor, inputs) -> None:
    """Refuse an input that shares some, but not exactly the same, memory as the
    tensor written in place, with PyTorch's error.

    ``x[1:].add_(x[:-1])`` would read elements that the same operation has
    already overwritten (or not, depending on the loop order), so PyTorch
    rejects it; ``x.add_(x)`` reads each element where it writes it and is
    fine. PyTorch decides from the memory ranges when both views are dense,
    and lets other layouts through ("too hard to tell"), computing them in its
    loop order; glasstorch then checks the elements themselves and raises
    whenever some are shared, rather than give an order-dependent answer.
    """
    if target.numel() == 0:
        return
    for other in inputs:
        if not isinstance(other, Tensor) or other._storage is not target._storage:
            continue
        if other.numel() == 0 or _same_elements_in_order(target, other):
            continue
        (low, high), (other_low, other_high) = _span(target), _span(other)
        if high < other_low or other_high < low:
            continue  # disjoint ranges of the buffer
        if (_is_dense(target) and _is_dense(other)) or _positions(target) & _positions(other):
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation."
            )


def apply_inplace(target: Tensor, compute, inputs=()) -> Tensor:
    """Run ``compute()`` (an out-of-place op on ``target``) and store the result in it.

    ``inputs`` are the op's other arguments: one that partially overlaps
    ``target`` is an error (see :func:`check_no_partial_overlap`).
    """
    check_inplace(target)
    check_no_partial_overlap(target, inputs)
    result = compute()
    if not _dtype.can_cast(result.dtype, target.dtype):
        raise RuntimeError(
            f"result type {result.dtype.title} can't be cast to the desired output type "
            f"{target.dtype.title}"
        )
    if tuple(result.shape) != tuple(target.shape):
        raise RuntimeError(
            f"output with shape {list(target.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    _keep_original(result, target)
    _write(target, result)
    return target


# ------------------------------------------ speed trick: writing in place directly


def binary_inplace(op: str, target: Tensor, other, compute) -> Tensor:
    """``target.<op>_(other)`` for ``op`` one of ``add``, ``sub``, ``mul``, ``div``:
    the same as ``apply_inplace(target, compute, (other,))``, often in one kernel call.

    Speed trick (writing in place directly): :func:`apply_inplace` computes
    the result into a new tensor and copies it back, which for a small tensor
    (an optimizer's step counter, a batch norm's running mean) costs several
    times the arithmetic. When no history is recorded and the result would
    have the target's dtype and shape, the elementwise kernel writes straight
    into the target instead: it reads each element before it writes the same
    place, so the answer is the same. The checks and the version bump are the
    same; everything else takes the plain path.
    """
    if not _writes_directly(op, target, other):
        return apply_inplace(target, compute, (other,))
    check_inplace(target)
    check_no_partial_overlap(target, (other,))
    operand = as_operand(other, target.dtype)
    view = target._strided()
    kernels.binary(op, view, view, strided_as(operand, target._shape))
    target._bump_version()
    return target


def _writes_directly(op: str, target: Tensor, other) -> bool:
    """Whether :func:`binary_inplace` may run the kernel into ``target``."""
    other_is_tensor = isinstance(other, Tensor)
    if not (other_is_tensor or is_number(other)):
        return False
    if is_grad_enabled() and (target._requires_grad or (other_is_tensor and other._requires_grad)):
        return False  # history to record
    if other_is_tensor and (
        other.device != target.device or not is_expandable_to(other._shape, target._shape)
    ):
        return False  # the plain path raises, or moves a CPU scalar, as PyTorch does
    dtype = target.dtype
    if op == "div" and not dtype.is_floating_point:
        return False  # true division gives floats
    if op == "sub" and (
        dtype is _dtype.bool_
        or isinstance(other, bool)
        or (other_is_tensor and other.dtype is _dtype.bool_)
    ):
        return False  # subtracting bools is an error, raised by the plain path
    return _dtype.result_type(target, other) is dtype


def _keep_original(result: Tensor, target: Tensor) -> None:
    """If computing ``result`` saved ``target`` itself for backward, save a copy instead.

    ``x.mul_(w)`` needs the *old* x for w's gradient, but writing the result
    into x is about to change it (PyTorch keeps an ``original_self`` likewise).
    """
    node = result.grad_fn
    if node is None or not node._saved:
        return
    for saved in node._saved:
        if saved is None or saved.data._storage is not target._storage:
            continue
        original = saved.data.detach().clone()
        original._requires_grad = saved.data.requires_grad
        original.grad_fn, original._output_nr = saved.data.grad_fn, saved.data._output_nr
        saved.data, saved.version = original, original._version


def assign_inplace(target: Tensor, compute, inputs=()) -> Tensor:
    """Like :func:`apply_inplace`, for results already shaped like ``target`` (setitem)."""
    check_inplace(target)
    check_no_partial_overlap(target, inputs)
    _write(target, compute())
    return target


def _write(target: Tensor, result: Tensor) -> None:
    """Copy ``result``'s values into ``target``, bump the version, rewrite history."""
    kernels.copy(target._strided(), cast(result, result.dtype)._strided())
    target._bump_version()
    if not (is_grad_enabled() and result.requires_grad):
        return
    if target._base is None:
        # The target's old self is an input of the result: just take its history.
        target._requires_grad = True
        target.grad_fn, target._output_nr = result.grad_fn, result._output_nr
        return
    _rebase_view(target, result)


class CopySlices(Function):
    """A base tensor after one of its views was overwritten with ``result``.

    Gradient for the base's old value: everything except the view's elements.
    Gradient for ``result``: the view's elements.
    """

    backward_name = "CopySlices"

    @staticmethod
    def forward(ctx, base, result, geometry):
        ctx.geometry = geometry
        return base._alias()  # the data was already written in place

    @staticmethod
    def backward(ctx, grad):
        from glasstorch.ops.creation import ones
        from glasstorch.ops.views import as_strided

        shape, strides, offset = ctx.geometry
        grad = grad.contiguous()
        keep = ones(tuple(grad.shape), dtype=grad.dtype, device=grad.device)
        with no_grad():
            as_strided(keep, shape, strides, keep.storage_offset() + offset).fill_(0)
        grad_result = as_strided(grad, shape, strides, grad.storage_offset() + offset)
        return grad * keep, grad_result, None


def _rebase_view(view: Tensor, result: Tensor) -> None:
    """Give a view's base the history 'overwritten at the view by ``result``'."""
    from glasstorch.ops.views import as_strided

    base = view._base
    if not base.is_contiguous():
        raise RuntimeError(
            "glasstorch supports in-place changes of a view with autograd only when the "
            "view's base is contiguous; call .contiguous() on the base first"
        )
    geometry = (
        tuple(view.shape),
        tuple(view.stride()),
        view.storage_offset() - base.storage_offset(),
    )
    new_base = CopySlices.apply(base, result, geometry)
    base._requires_grad = True
    base.grad_fn, base._output_nr = new_base.grad_fn, 0
    # The view itself now reads its values out of the rewritten base.
    shape, strides, offset = geometry
    refreshed = as_strided(base, shape, strides, base.storage_offset() + offset)
    view._requires_grad = True
    view.grad_fn, view._output_nr = refreshed.grad_fn, refreshed._output_nr


# ------------------------------------------------------------ plain in-place


class Copy(Function):
    """``target.copy_(src)``: the target's old values get no gradient."""

    backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, target, src):
        out = empty_tensor(target.shape, target.dtype, device=target.device)
        kernels.copy(out._strided(), strided_as(src, tuple(target.shape)))
        return out

    @staticmethod
    def backward(ctx, grad):
        return zeros_like(grad), grad


def copy_(target: Tensor, src) -> Tensor:
    """Copy ``src`` (broadcast and cast) into ``target``'s storage."""
    from glasstorch._shape import is_expandable_to

    if not isinstance(src, Tensor):
        return fill_(target, src)
    if not is_expandable_to(tuple(src.shape), tuple(target.shape)):
        raise RuntimeError(
            f"The size of tensor a ({target.shape[-1] if target.dim() else 1}) must match the size "
            f"of tensor b ({src.shape[-1] if src.dim() else 1}) at non-singleton dimension "
            f"{max(target.dim() - 1, 0)}"
        )
    return assign_inplace(target, lambda: Copy.apply(target, src), (src,))


class Fill(Function):
    backward_name = "FillBackward0"

    @staticmethod
    def forward(ctx, target, value):
        out = empty_tensor(target.shape, target.dtype, device=target.device)
        kernels.fill(out._strided(), target.dtype.to_python(value))
        return out

    @staticmethod
    def backward(ctx, grad):
        return zeros_like(grad), None


def fill_(target: Tensor, value) -> Tensor:
    """Set every element of ``target`` to ``value``."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.dim()} dimensions."
            )
        value = value.item()  # converted as a cast would: no overflow check
        return assign_inplace(target, lambda: Fill.apply(target, value))
    _dtype.check_scalar_fits(value, target.dtype)
    if not (target.requires_grad and is_grad_enabled()):
        owned = _fill_target(target)
        assign_inplace(owned, lambda: Fill.apply(owned, value))
        return target
    return assign_inplace(target, lambda: Fill.apply(target, value))


def _fill_target(target: Tensor) -> Tensor:
    """The elements of ``target`` that own memory: each broadcast (stride 0) dimension cut to 1.

    Writing one number everywhere is well defined even where elements share
    memory, so ``fill_(number)`` and ``zero_()`` work on an expanded tensor, as
    in PyTorch (``fill_`` with a tensor value does not). Filling this smaller
    view writes every memory location ``target`` reads.
    """
    shape = tuple(1 if stride == 0 else size for size, stride in zip(target.shape, target.stride()))
    if shape == tuple(target.shape) or target.numel() == 0:
        return target
    return target._view(shape, target.stride())


def zero_(target: Tensor) -> Tensor:
    """Set every element of ``target`` to 0."""
    return fill_(target, 0)
