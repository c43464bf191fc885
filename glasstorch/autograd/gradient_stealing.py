"""Gradient stealing: a leaf's first gradient taken as it is, when nothing else can see it.

``AccumulateGrad`` gives a leaf its first gradient as a copy, ``leaf.grad =
incoming.clone()``: the gradient tensor belongs to the graph, and a hook, the
user or another node could still hold it. Yet usually nobody does. After
``zero_grad()`` (which sets ``.grad`` to None), every parameter's gradient
arrives at a fresh ``AccumulateGrad``, and copying it costs a pass over every
parameter on every step. PyTorch avoids the copy when the gradient's
reference count says that only the engine holds it: then the tensor can become
``.grad`` itself ("stolen").

That is section 5.5 of the PyTorch paper put to work: because memory is
managed by reference counting, the count is exact at every moment, so "is
anyone else looking at this tensor?" has a precise answer. glasstorch asks
CPython's own counter (``sys.getrefcount``) the same question.

Nothing else can see the gradient when

- it is still the very tensor the engine handed over (no hook replaced it);
- its reference count is the one an unshared tensor has at that point
  (measured below, not assumed);
- its storage is its own: no view (``_base``), no ``detach()`` and no NumPy
  array (``exported``) shares it, which the storage's own reference count and
  flag say;
- it has no history, and has the leaf's dtype, shape and a dense layout.

Otherwise :func:`first_gradient` copies, which is always correct.
"""

from __future__ import annotations

import sys

from glasstorch.autograd.grad_mode import is_grad_enabled


def first_gradient(incoming, leaf, from_the_engine: bool):
    """What becomes ``leaf.grad`` when the leaf has none: ``incoming`` itself or a copy.

    Args:
        incoming: the gradient that arrived at the leaf's ``AccumulateGrad``.
        leaf: the leaf tensor.
        from_the_engine: whether ``incoming`` is still the tensor the engine
            passed (False once a hook replaced it).
    """
    if is_grad_enabled():  # create_graph: .grad keeps its history, as a new tensor
        return incoming.clone()
    if (
        from_the_engine  # (the count below assumes the engine's reference)
        and _UNSHARED_REFCOUNT > 0
        and sys.getrefcount(incoming) <= _UNSHARED_REFCOUNT
        and _can_take(incoming, leaf)
    ):
        return incoming  # nobody else holds it: no copy needed
    incoming = incoming.detach()  # one copy: .grad must not share memory with the graph
    return incoming.clone() if incoming.is_contiguous() else incoming.contiguous()


def _can_take(grad, leaf) -> bool:
    """Whether ``grad`` may become ``leaf.grad`` as it is: dense storage that
    no other tensor (a view, a ``detach()``) and no NumPy array shares, no
    history, the leaf's dtype and shape."""
    return (
        grad._base is None
        and sys.getrefcount(grad._storage) <= _STORAGE_ALONE_REFCOUNT
        and not grad._storage.exported
        and grad.grad_fn is None
        and not grad._requires_grad
        and grad.dtype is leaf.dtype
        and grad._shape == leaf._shape
        and grad.is_contiguous()
    )


# ----------------------------------------------------------- the probes
# ``sys.getrefcount`` counts references that depend on the Python version
# (the callers' frames, getrefcount's own argument), so the two thresholds
# are measured when this module is imported, through the same shape of calls
# the real ones make, rather than written down as constants.


class _EngineShapedCall:
    """Stands in for ``AccumulateGrad``: the engine calls ``node.apply(grads[0])``,
    and ``apply`` calls :func:`first_gradient` with its argument."""

    def apply(self, incoming):
        return _count_like_first_gradient(incoming, None, True)


def _count_like_first_gradient(incoming, leaf, from_the_engine):
    return sys.getrefcount(incoming)


def _measure_unshared_refcount() -> int:
    if not hasattr(sys, "getrefcount"):  # not CPython: PyPy has no reference counts
        return 0  # "no count is small enough": gradients are always copied
    grads = [object()]  # the engine's list, the only holder
    return _EngineShapedCall().apply(grads[0])


#: ``sys.getrefcount`` of a gradient that only the engine holds, seen from
#: :func:`first_gradient`; a larger count means someone else holds it too.
_UNSHARED_REFCOUNT = _measure_unshared_refcount()


class _Holder:
    """Stands in for a tensor holding its storage, to measure the count below."""


def _measure_storage_alone_refcount() -> int:
    holder = _Holder()
    holder._storage = object()
    return sys.getrefcount(holder._storage) if hasattr(sys, "getrefcount") else 0


#: ``sys.getrefcount(tensor._storage)`` when that tensor is the storage's only holder.
_STORAGE_ALONE_REFCOUNT = _measure_storage_alone_refcount()
