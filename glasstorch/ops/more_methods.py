"""Tensor methods for the operations real PyTorch programs use beyond the core.

A second table in the style of :mod:`glasstorch.ops.methods`: each line
attaches a function (sorting, einsum, ...) to :class:`Tensor`, so
``x.sort()`` and ``torch.sort(x)`` are the same code.
"""

from __future__ import annotations

from glasstorch.ops import sampling, sorting
from glasstorch.ops.methods import _inplace
from glasstorch.tensor import Tensor

_METHODS = {
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "msort": sorting.msort,
    "topk": sorting.topk,
    # sampling
    "multinomial": sampling.multinomial,
    "bernoulli": sampling.bernoulli,
    "bernoulli_": sampling.bernoulli_,
}
for _name, _function in _METHODS.items():
    setattr(Tensor, _name, _function)

_INPLACE: list[str] = []
for _name in _INPLACE:
    setattr(Tensor, _name + "_", _inplace(_METHODS[_name], _name + "_"))
