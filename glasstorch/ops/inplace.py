"""In-place operations: new values into old storage, a version bump, and new history.

``x.add_(y)`` writes ``x + y`` into x's own storage. Most in-place operations
do so directly: the kernel that computes the result is handed x's view as its
output (every kernel takes its output view first), so no temporary the size of
x is made, as in PyTorch. An op composed from several kernels (``lerp_``,
``atan2_``, ``F.silu(x, inplace=True)``) is computed a piece of x at a time
(:func:`write_in_pieces`), so its temporaries stay small. The rest
(``cumsum_``, ``cumprod_``, ...) compute the result into a new tensor and copy
it back (:func:`apply_inplace`).
Three bookkeeping steps make either safe:

1. **Checks**, made before anything is written. A leaf that requires grad may
   not be changed in place while grad mode is on (its gradient would refer to
   values that no longer exist); the result's dtype must be castable to x's;
   its shape must be x's.
2. **Version counter.** The storage's version goes up, once, so a backward
   pass that saved the old values can tell they are gone and raise instead of
   silently computing a wrong gradient.
3. **History.** x's ``grad_fn`` becomes the node the operation recorded: the
   graph now says x was computed from its old self. If x is a *view* of a
   base tensor, the base changed too: its history becomes a ``CopySlices``
   node that takes the base's old gradient path everywhere except where the
   view is, and the result's path there.

To write directly with autograd, an operation's Function has an *in-place
variant* (:func:`in_place_variant`): the same node name and backward, with a
forward that writes into its first argument. Its forward asks
:func:`destination` where to write; that is also where the old values the
backward still needs are copied out first (PyTorch's ``original_self``).
"""

from __future__ import annotations

from glasstorch import _dtype, _tier
from glasstorch._dispatch import MIXED_DEVICES
from glasstorch._shape import is_expandable_to
from glasstorch.autograd.function import Function, SavedTensor
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.ops.core import is_number, strided_as
from glasstorch.ops.creation import zeros_like
from glasstorch.tensor import Tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


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
    if result.device != target.device:  # a 0-d target is an output too: no CPU-scalar rule
        raise RuntimeError(MIXED_DEVICES)
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
    if result.grad_fn is not None:
        _keep_originals(result.grad_fn, target)
    _write(target, result)
    return target


# ------------------------------------------------------------ writing directly


def in_place_variant(function: type[Function]) -> type[Function]:
    """The in-place variant of ``function``: its forward writes into its first argument.

    The variant records the same node (same name, same backward) as
    ``function``; only where the values go differs. ``function``'s forward
    must ask :func:`destination` for its output, and save the tensors its
    backward needs from its inputs *before* it writes.
    """
    return type(
        function.__name__ + "_",
        (function,),
        {
            "backward_name": function._backward_cls.__name__,
            "in_place": True,
            "__doc__": f"``{function.__name__}``, written into its first argument.",
        },
    )


def variant_of(function: type[Function]) -> type[Function]:
    """``function``'s in-place variant (see :func:`in_place_variant`), made on first use."""
    variant = _VARIANTS.get(function)
    if variant is None:
        variant = _VARIANTS[function] = in_place_variant(function)
    return variant


#: The in-place variants made by :func:`variant_of`.
_VARIANTS: dict = {}


def destination(function: type[Function], ctx, target) -> Tensor | None:
    """Where ``function``'s forward writes its result: None for a new tensor,
    or ``target`` (its first argument) for an in-place variant.

    Before the variant writes, every tensor ``ctx`` saved that shares
    ``target``'s memory is replaced by a copy of its old values:
    ``x.mul_(w)`` needs the old x for w's gradient (PyTorch keeps an
    ``original_self`` likewise). Without history nothing is saved, and
    nothing is copied.
    """
    if not function.in_place:
        return None
    if getattr(ctx, "_saved", None):  # a recorded node that saved tensors
        _keep_originals(ctx, target)
    return target


def _check_before_writing(target: Tensor, result_dtype, inputs) -> None:
    """The checks made before anything is written into ``target``: the in-place
    rules (:func:`check_inplace`), no partial overlap with an input, and a
    result dtype (None: any) that can be cast to ``target``'s."""
    check_inplace(target)
    check_no_partial_overlap(target, inputs)
    if result_dtype is not None and not _dtype.can_cast(result_dtype, target.dtype):
        raise RuntimeError(
            f"result type {result_dtype.title} can't be cast to the desired output type "
            f"{target.dtype.title}"
        )


def write_inplace(target: Tensor, compute, result_dtype=None, inputs=()) -> Tensor:
    """Run ``compute()``, which writes the result into ``target`` itself.

    ``compute`` calls an in-place variant's ``apply`` (see
    :func:`in_place_variant`); what it returns is ``target``, or, when a node
    was recorded, a tensor over ``target``'s memory that carries the node.
    The caller has checked that the inputs broadcast to ``target``'s shape;
    ``result_dtype`` (None: any, as for ``copy_``) is the dtype the operation
    computes in, which must be castable to ``target``'s.
    """
    _check_before_writing(target, result_dtype, inputs)
    result = compute()
    target._bump_version()
    if result.grad_fn is not None:
        _save_written_output(result, target)
    _take_history(target, result)
    return target


def write_values(target: Tensor, compute, result_dtype=None, inputs=()) -> Tensor:
    """Run ``compute()``, which writes into ``target`` an op's values that have
    no gradient (``floor_divide_``, ``bitwise_and_``, ``logical_or_``).

    The checks and the version bump are :func:`write_inplace`'s; ``target``
    keeps its history, as PyTorch's does for these ops.
    """
    _check_before_writing(target, result_dtype, inputs)
    compute()
    target._bump_version()
    return target


def save_output(ctx, output: Tensor) -> None:
    """Keep ``output`` for backward beside the tensors ``ctx`` saved already.

    For a forward that must save its inputs before an in-place variant
    overwrites them, and its output after (``pow_`` by a tensor).
    """
    saved = getattr(ctx, "_saved", None)
    if saved is not None:  # a recorded node (an unrecorded ctx keeps nothing)
        ctx._saved = [*saved, SavedTensor(output)]


def _save_written_output(result: Tensor, target: Tensor) -> None:
    """Let a node that saved its own output (``exp_``, ``relu_``) find it again.

    The output is ``target``, saved before the version bump: the saved copy
    gets the new version, and keeps only the data, as every saved output does
    (see :class:`~glasstorch.autograd.function.SavedTensor`).
    """
    for saved in result.grad_fn._saved or ():
        if saved is not None and saved.data is target:
            saved.drop_history(result._output_nr)
            saved.version = target._version


# ------------------------------------------------------- composed ops, in pieces

#: Elements :func:`write_in_pieces` computes at a time: small enough that the
#: temporaries of a composed op (a dozen, in float64 at most) stay well under
#: a MiB, large enough that a kernel call does real work.
PIECE = 2**14


def write_in_pieces(target: Tensor, compute, operands=()) -> None:
    """Write ``compute(piece, *operand_pieces)`` into ``target``, a piece at a time.

    For an elementwise op that glasstorch composes from several kernels
    (``lerp``, ``atan2``, ``silu``): computing it whole would make
    temporaries the size of ``target``; computed on a piece of at most
    :data:`PIECE` elements, each temporary is that small, and the piece's
    result is cast into the piece of ``target`` it came from (so a float64
    result lands in a float32 target without a float64 copy of the whole).
    Each piece is read before it is written, so an operand that is
    ``target`` itself (``x.addcmul_(x, y)``) is fine. Tensor ``operands``
    broadcast to ``target``'s shape; anything else (numbers, None, 0-d
    tensors) is passed on unchanged.
    """
    from glasstorch._shape import expand_strides

    shape = target._shape
    if target.numel() <= PIECE:  # one piece: the whole target
        kernels.copy(target._strided(), strided_as(compute(target, *operands), shape))
        return
    geometries = [  # a 0-d tensor broadcasts as it is (a CPU one joins a device op so)
        (o, expand_strides(o._shape, o._stride, shape))
        if isinstance(o, Tensor) and o._shape
        else (o, None)
        for o in operands
    ]
    for start, piece_shape, dim in _pieces(shape):
        piece = _piece(target, target._stride, start, piece_shape, dim)
        parts = [
            o if strides is None else _piece(o, strides, start, piece_shape, dim)
            for o, strides in geometries
        ]
        kernels.copy(piece._strided(), strided_as(compute(piece, *parts), piece_shape))


def _pieces(shape):
    """The pieces of a tensor of ``shape``, each ``(start, piece_shape, dim)``:
    the piece begins at index ``start`` and spans ``piece_shape``, the sizes
    of dimensions ``dim`` onward (the earlier ones are fixed at ``start``'s)."""
    import itertools

    inner, dim = 1, len(shape)
    while dim > 0 and inner * shape[dim - 1] <= PIECE:  # whole trailing dimensions that fit
        inner *= shape[dim - 1]
        dim -= 1
    dim -= 1  # this dimension is cut into runs of `step` indices
    step = max(1, PIECE // inner)
    for outer in itertools.product(*(range(size) for size in shape[:dim])):
        for first in range(0, shape[dim], step):
            length = min(step, shape[dim] - first)
            yield (*outer, first), (length, *shape[dim + 1 :]), dim


def _piece(tensor: Tensor, strides, start, piece_shape, dim: int) -> Tensor:
    """The piece of ``tensor`` (seen with ``strides``) at ``start`` (see :func:`_pieces`)."""
    offset = tensor._offset + sum(i * stride for i, stride in zip(start, strides))
    return Tensor._make(tensor._storage, piece_shape, strides[dim:], offset, tensor.dtype)


def elementwise_function(name: str, compute, derivative, *, keep_self=False, keep_output=False):
    """An in-place Function for a composed elementwise op, recorded as PyTorch's ``name``.

    Its forward is ``target.op_(*args)``: ``compute(x, *args)`` (the
    out-of-place op, elementwise in x and the tensor args) written into
    ``target`` by :func:`write_in_pieces`. ``derivative(grad, x, y, *args)``
    returns the gradient of ``target``'s old value and of each arg, from
    the old values ``x`` (kept only with ``keep_self``, a bool or a test of
    ``ctx.needs_input_grad``: then :func:`destination` copies them out
    before the write, as PyTorch keeps ``original_self``) and the new ones
    ``y`` (kept with ``keep_output``).
    """

    def forward(cls, ctx, target, *args):
        keeps = keep_self(ctx.needs_input_grad) if callable(keep_self) else keep_self
        ctx.numbers = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(
            target if keeps else None, *(a if isinstance(a, Tensor) else None for a in args)
        )
        out = destination(cls, ctx, target)
        write_in_pieces(out, compute, args)
        if keep_output:
            save_output(ctx, out)
        return out

    def backward(ctx, grad):
        saved = ctx.saved_tensors
        count = len(ctx.numbers)
        args = [n if t is None else t for n, t in zip(ctx.numbers, saved[1 : count + 1])]
        y = saved[count + 1] if keep_output else None
        grads = derivative(grad, saved[0], y, *args)
        return grads if isinstance(grads, tuple) else (grads,)

    return type(
        name.removesuffix("Backward0").removesuffix("Backward1") + "_",
        (Function,),
        {
            "backward_name": name,
            "in_place": True,
            "forward": classmethod(forward),
            "backward": staticmethod(backward),
            "__doc__": f"``{name}``'s op, written into its first argument.",
        },
    )


def broadcasts_into(target: Tensor, other) -> bool:
    """Whether ``other`` is a number, or a tensor on ``target``'s device that
    broadcasts to ``target``'s shape."""
    if not isinstance(other, Tensor):
        return is_number(other)
    return other.device == target.device and is_expandable_to(other._shape, target._shape)


def _keep_originals(node, target: Tensor) -> None:
    """Replace each tensor ``node`` saved for backward that shares ``target``'s
    memory by a copy, since ``target`` is about to be overwritten.

    ``x.mul_(w)`` needs the *old* x for w's gradient (PyTorch keeps an
    ``original_self`` likewise).
    """
    if not node._saved:
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
    kernels.copy(target._strided(), result._strided())
    target._bump_version()
    _take_history(target, result)


def _take_history(target: Tensor, result: Tensor) -> None:
    """Give ``target``, just overwritten with ``result``'s values, ``result``'s history."""
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
    """``target.copy_(src)``, written into ``target``: its old values get no gradient."""

    backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, target, src):
        kernels.copy(target._strided(), strided_as(src, target._shape))
        return target

    @staticmethod
    def backward(ctx, grad):
        return zeros_like(grad), grad


def copy_(target: Tensor, src) -> Tensor:
    """Copy ``src`` (broadcast and cast) into ``target``'s storage."""
    if not isinstance(src, Tensor):
        return fill_(target, src)
    if not is_expandable_to(tuple(src.shape), tuple(target.shape)):
        raise RuntimeError(
            f"The size of tensor a ({target.shape[-1] if target.dim() else 1}) must match the size "
            f"of tensor b ({src.shape[-1] if src.dim() else 1}) at non-singleton dimension "
            f"{max(target.dim() - 1, 0)}"
        )
    # Any dtype may be copied into any other (float into int truncates), so no cast check.
    return write_inplace(target, lambda: Copy.apply(target, src), None, (src,))


class Fill(Function):
    """``target.fill_(value)``, written into ``target``: its old values get no gradient."""

    backward_name = "FillBackward0"

    @staticmethod
    def forward(ctx, target, value):
        kernels.fill(target._strided(), target.dtype.to_python(value))
        return target

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
        return write_inplace(target, lambda: Fill.apply(target, value))
    _dtype.check_scalar_fits(value, target.dtype)
    if not (target.requires_grad and is_grad_enabled()):
        owned = _fill_target(target)
        write_inplace(owned, lambda: Fill.apply(owned, value))
        return target
    return write_inplace(target, lambda: Fill.apply(target, value))


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


# ------------------------------------------------------------------ resize_
def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give ``self`` the shape ``sizes`` in place, contiguous, keeping its storage's values.

    The legacy way to reuse a buffer (``label.resize_(batch).fill_(1)``).
    The same shape changes nothing. Otherwise the strides become contiguous
    and, if the storage is too small from ``self``'s offset, it grows: the old
    elements keep their values and the new ones are uninitialised. Only
    contiguous memory is supported (``memory_format`` must be ``None``).

    Where glasstorch differs from PyTorch: a storage that grows is a new one
    for ``self`` alone, so other views of the old storage (and a NumPy array
    that shares it) stop sharing memory with ``self``. PyTorch grows the
    storage they share, and refuses to grow one that ``from_numpy`` made.

    Raises:
        RuntimeError: ``self`` requires grad, or a size is negative (PyTorch's messages).
    """
    from glasstorch._shape import contiguous_strides, storage_extent
    from glasstorch.ops.creation import empty

    if memory_format is not None:
        raise NotImplementedError("resize_: only the contiguous memory format is supported")
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    shape = tuple(int(size) for size in sizes)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(size < 0 for size in shape):
        raise RuntimeError("numel: integer multiplication overflow")
    if shape == tuple(self.shape):
        return self
    strides = contiguous_strides(shape)
    needed = storage_extent(shape, strides, self._offset)
    storage = self._storage
    if needed > len(storage):
        grown = empty(needed, dtype=self.dtype, device=self.device)
        old = Tensor._make(storage, (len(storage),), (1,), 0, self.dtype)
        with no_grad():
            grown[: len(storage)].copy_(old)
        storage = grown._storage
    self._storage, self._shape, self._stride = storage, shape, strides
    self._kernel_view = self._flat_kernel_view = None  # they describe the old layout
    storage.version += 1
    return self
