"""Collation: turning a list of samples into one batch.

:func:`default_collate` works on the *structure* of the first sample and
recurses: tensors are stacked along a new first dimension, numbers become
1-d tensors, and containers (dicts, tuples, named tuples, lists) are
transposed, so a list of ``(x, y)`` pairs becomes ``[stacked_x, stacked_y]``.
:func:`default_convert` does the same conversions without batching (used
when a loader has ``batch_size=None``).

Which function handles which type is a table, :data:`default_collate_fn_map`;
:func:`collate` takes such a table, so a custom collate can extend it.
"""

from __future__ import annotations

import collections.abc
import copy
from collections.abc import Callable

import numpy as np

from glasstorch import _dtype
from glasstorch.ops.creation import as_tensor, tensor
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor

_ERROR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _is_text_array(dtype: np.dtype) -> bool:
    """Arrays of strings, bytes or Python objects cannot become tensors."""
    return dtype.kind in ("S", "U", "O", "a")


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def collate_tensor_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Stack same-shaped tensors along a new dimension 0."""
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """Convert NumPy arrays to tensors (sharing memory), then collate those."""
    elem = batch[0]
    if _is_text_array(elem.dtype):
        raise TypeError(_ERROR.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None) -> Tensor:
    """NumPy scalars become a 1-d tensor of their dtype."""
    return as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Python floats become a float64 tensor (no precision is lost)."""
    return tensor(batch, dtype=_dtype.float64)


def collate_int_fn(batch, *, collate_fn_map=None) -> Tensor:
    """Python ints become an int64 tensor, and bools a bool tensor."""
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay as they are: the batch is the list."""
    return batch


#: The table :func:`default_collate` uses: element type -> collate function.
#: Lookup tries the exact type first, then ``isinstance`` in insertion order.
default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,  # bool is an int: a batch of bools becomes a bool tensor
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate ``batch`` (a list of samples) with the functions in ``collate_fn_map``.

    The first sample decides how the batch is handled. Types in the map go to
    their function; mappings, named tuples and other sequences are handled
    here by collating each field across the batch.

    Raises:
        TypeError: for a sample type nothing knows how to collate.
        RuntimeError: for sequences of different lengths.
    """
    # -- solution: data/collate
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        fields = {
            key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
        }
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)  # keep the mapping's type and any attributes
            out.update(fields)
            return out
        try:
            return elem_type(fields)
        except TypeError:
            return fields
    if _is_namedtuple(elem):
        return elem_type(*(collate(list(s), collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [list(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    out[i] = collate(samples, collate_fn_map=collate_fn_map)
                return out
            return elem_type([collate(s, collate_fn_map=collate_fn_map) for s in transposed])
        except TypeError:
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(_ERROR.format(elem_type))
    # -- end solution


def default_collate(batch):
    """Merge a list of samples into a batch, the way :class:`DataLoader` does by default.

    ==========================  =====================================================
    each sample is              the batch is
    ==========================  =====================================================
    Tensor                      ``stack(samples)`` (sizes must be equal)
    NumPy array                 the arrays as tensors, stacked
    NumPy scalar                a 1-d tensor of the scalar's dtype
    float / int / bool          a 1-d float64 / int64 / bool tensor
    str / bytes                 the list itself
    dict (Mapping)              the same keys, each value collated
    named tuple                 the same type, each field collated
    tuple                       a *list*, each position collated
    list (Sequence)             the same type, each position collated
    ==========================  =====================================================

    Example::

        >>> default_collate([(torch.tensor([1.0, 2.0]), 0), (torch.tensor([3.0, 4.0]), 1)])
        [tensor([[1., 2.],
                [3., 4.]]), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Convert NumPy arrays and scalars inside ``data`` to tensors, without batching.

    Containers are walked as in :func:`default_collate`; arrays of strings or
    objects, and anything else, are returned unchanged.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_text_array(data.dtype) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        fields = {key: default_convert(value) for key, value in data.items()}
        if isinstance(data, collections.abc.MutableMapping):
            out = copy.copy(data)
            out.update(fields)
            return out
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                out = copy.copy(data)
                for i, d in enumerate(data):
                    out[i] = default_convert(d)
                return out
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]
