"""``torch.autograd.Variable``: the wrapper tensors needed before PyTorch 0.4, kept as an alias.

Before PyTorch 0.4 a tensor could not record a graph; wrapping it in a
``Variable`` did. Since then every tensor records its graph, and
``Variable(t)`` survives only so that older programs still run: it returns a
plain tensor. Its rules, PyTorch's:

* ``Variable(t)`` is a new tensor on ``t``'s memory, cut from ``t``'s graph
  (``t.detach()``); ``requires_grad=True`` makes it a leaf that requires grad.
* ``Variable()`` is an empty float tensor.
* ``volatile=`` was removed: it only warns (use ``no_grad``).
* ``isinstance(t, Variable)`` is true for every tensor.

The class also carries the backward engine, where PyTorch puts it:
``Variable._execution_engine.queue_callback(cb)`` asks for ``cb()`` at the end
of the running backward pass (see :class:`~glasstorch.autograd.engine.ExecutionEngine`).
"""

from __future__ import annotations

import warnings

from glasstorch.autograd.engine import execution_engine


class _VariableMeta(type):
    """Makes ``isinstance(tensor, Variable)`` true, as every tensor was once a Variable."""

    def __instancecheck__(cls, other) -> bool:
        from glasstorch.tensor import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(data, requires_grad=False)`` returns ``data.detach()`` as a tensor.

    Args:
        data: the tensor to wrap (an empty float tensor if left out).
        requires_grad: make the result a leaf that requires grad.
        volatile: removed from PyTorch; a warning, and no effect.

    Raises:
        TypeError: ``data`` is not a tensor (PyTorch's wording).
    """

    #: The backward engine; ``_execution_engine.queue_callback(cb)`` runs
    #: ``cb()`` when the running backward pass ends.
    _execution_engine = execution_engine

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        from glasstorch.ops.creation import empty
        from glasstorch.tensor import Tensor

        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            out = empty(0)
        elif isinstance(data, Tensor):
            out = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return out.requires_grad_(bool(requires_grad))
