"""``nn.Parameter``: a tensor that a :class:`~glasstorch.nn.Module` learns.

A Parameter is an ordinary leaf tensor in every respect but one: assigning it
to a Module attribute registers it, so that ``module.parameters()`` finds it.
It shares the storage of the tensor it is made from, so no values are copied.
"""

from __future__ import annotations

from glasstorch.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module registers as one of its parameters.

    Args:
        data: the initial values (shared, not copied). Defaults to an empty
            float tensor.
        requires_grad: whether the parameter is trained. Default: ``True``.

    Example::

        >>> w = nn.Parameter(torch.zeros(2))
        >>> w
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
        >>> (w * 2).grad_fn   # results of operations are plain tensors
        <MulBackward0 object at ...>
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from glasstorch.ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(data) expects a Tensor, but got {type(data).__name__}; "
                "wrap the values with torch.tensor(...) first"
            )
        param = cls._make(
            data._storage, data.shape, data.stride(), data.storage_offset(), data.dtype
        )
        param.requires_grad = requires_grad
        return param

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        # Everything happens in __new__; Tensor.__init__ refuses to run on purpose.
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        copied = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            copied.grad = self.grad.detach().clone()
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol):
        values = self.detach().cpu().contiguous().numpy().copy()
        return (_rebuild_parameter, (values, self.requires_grad))


def _rebuild_parameter(values, requires_grad: bool) -> Parameter:
    """Unpickle a Parameter from its NumPy values (the inverse of ``__reduce_ex__``)."""
    from glasstorch.ops.creation import from_numpy

    return Parameter(from_numpy(values), requires_grad)
