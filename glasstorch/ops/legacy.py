"""The legacy constructors: ``torch.Tensor(data)``, ``torch.Tensor(2, 3)``, ``torch.FloatTensor``, ...

Old tutorials build tensors by calling a type: ``torch.Tensor([1, 2])`` (the
default dtype), ``torch.LongTensor([0, 2])``, ``torch.FloatTensor(3, 4)``.
Each form does one of two things:

* sizes (ints, or one :class:`Size`): a new tensor of that shape. PyTorch
  leaves it uninitialised; glasstorch fills it with zeros;
* data (a list, a NumPy array): ``glasstorch.tensor(data, dtype=...)``.

``isinstance(x, torch.FloatTensor)`` asks whether ``x`` is a float32 tensor.
New code uses :func:`glasstorch.tensor` and :func:`glasstorch.zeros`.
"""

from __future__ import annotations

import numpy as np

from glasstorch import _dtype
from glasstorch.tensor import Size, Tensor, check_device


def _is_sizes(args) -> bool:
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return all(isinstance(a, int) and not isinstance(a, bool) for a in args)


def legacy_tensor(dtype, args: tuple, kwargs: dict) -> Tensor:
    """What ``torch.Tensor(*args)`` and ``torch.<Type>Tensor(*args)`` build, of ``dtype``."""
    from glasstorch.ops.creation import tensor, zeros

    check_device(kwargs.pop("device", None))
    if kwargs:
        raise TypeError(f"new() got unexpected keyword arguments {sorted(kwargs)}")
    if not args:
        return zeros(0, dtype=dtype)
    if _is_sizes(args):
        sizes = tuple(args[0]) if isinstance(args[0], Size) else args
        return zeros(sizes, dtype=dtype)
    if len(args) == 1:
        (data,) = args
        if isinstance(data, Tensor):
            if data.dtype is not dtype:
                raise TypeError(f"expected {dtype.title} (got {data.dtype.title})")
            return data.detach()
        if isinstance(data, (list, tuple, np.ndarray)):
            return tensor(data, dtype=dtype)
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    raise TypeError(
        "new() received an invalid combination of arguments - got "
        f"({', '.join(type(a).__name__ for a in args)}), but expected sizes (ints) or data "
        "(a sequence)"
    )


class _LegacyType(type):
    """The metaclass of ``FloatTensor`` and friends: ``isinstance`` checks the dtype."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


def _legacy_class(name: str, dtype) -> type:
    def __new__(cls, *args, **kwargs):
        return legacy_tensor(cls.dtype, args, kwargs)

    doc = f"``{name}(data)`` or ``{name}(*sizes)``: a {dtype.name} tensor (legacy constructor)."
    return _LegacyType(name, (), {"dtype": dtype, "__new__": __new__, "__doc__": doc})


FloatTensor = _legacy_class("FloatTensor", _dtype.float32)
DoubleTensor = _legacy_class("DoubleTensor", _dtype.float64)
LongTensor = _legacy_class("LongTensor", _dtype.int64)
IntTensor = _legacy_class("IntTensor", _dtype.int32)
BoolTensor = _legacy_class("BoolTensor", _dtype.bool_)
ByteTensor = _legacy_class("ByteTensor", _dtype.uint8)
