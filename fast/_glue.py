"""Glue between the kernel contract and the C functions: views and dtypes.

A kernel receives :class:`~glasstorch._kernels.Strided` views; C receives
``gt_view`` structs (see ``fast/csrc/gt_common.h``). :func:`view` makes one from
the other. It is on the path of every kernel call, so it is kept short:

* the buffer's address is read once per NumPy array and cached (a dict keyed by
  the array's id, holding the array so the id stays valid);
* the struct is filled field by field, with no intermediate lists.
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch.fast import load_native

_native = load_native()
ffi, lib = _native.ffi, _native.lib

#: The C code of each NumPy dtype name (the GT_* enum in gt_common.h).
DTYPE_CODES = {
    "bool": lib.GT_BOOL,
    "uint8": lib.GT_UINT8,
    "int32": lib.GT_INT32,
    "int64": lib.GT_INT64,
    "float32": lib.GT_FLOAT32,
    "float64": lib.GT_FLOAT64,
}

MAX_DIMS = 16

_addresses: dict[int, tuple] = {}


def buffer_address(buffer) -> object:
    """``char *`` to the start of a NumPy buffer (cached per array)."""
    key = id(buffer)
    cached = _addresses.get(key)
    if cached is not None and cached[0] is buffer:
        return cached[1]
    address = ffi.cast("char *", buffer.__array_interface__["data"][0])
    if len(_addresses) > 4096:  # forget old arrays; their ids may be reused
        _addresses.clear()
    _addresses[key] = (buffer, address)
    return address


def view(strided: Strided):
    """A ``gt_view *`` describing ``strided`` (the C side of a kernel argument)."""
    buffer, shape, strides, offset = strided
    ndim = len(shape)
    if ndim > MAX_DIMS:
        raise ValueError(f"the fast tier supports at most {MAX_DIMS} dimensions, got {ndim}")
    v = ffi.new("gt_view *")
    v.data = buffer_address(buffer)
    v.offset = offset
    v.ndim = ndim
    v.dtype = DTYPE_CODES[buffer.dtype.name]
    v.shape[0:ndim] = shape
    v.strides[0:ndim] = strides
    return v


def optional_view(strided: Strided | None):
    """:func:`view`, or NULL for an unused buffer."""
    return ffi.NULL if strided is None else view(strided)
