"""Glue between the kernel contract and the C functions: views and dtypes.

A kernel receives :class:`~glasstorch._kernels.Strided` views; C receives
``gt_view`` structs (see ``fast/csrc/gt_common.h``). :func:`view` makes one from
the other. It is on the path of every kernel call, so it is kept short:

* the buffer's address comes from ``ffi.from_buffer`` (about 0.2 us, where
  NumPy's ``__array_interface__`` takes over 1 us), and nothing is cached, so
  no buffer is kept alive longer than its tensor;
* the dtype code is looked up by NumPy dtype object (``dtype.name`` is a slow
  Python-level property in NumPy);
* the struct is filled field by field, with no intermediate lists.
"""

from __future__ import annotations

import numpy as np

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

#: The same codes keyed by NumPy dtype object, for the hot path.
_CODES_BY_DTYPE = {np.dtype(name): code for name, code in DTYPE_CODES.items()}

MAX_DIMS = 16


def view(strided: Strided):
    """A ``gt_view *`` describing ``strided`` (the C side of a kernel argument)."""
    buffer, shape, strides, offset = strided
    ndim = len(shape)
    if ndim > MAX_DIMS:
        raise ValueError(f"the fast tier supports at most {MAX_DIMS} dimensions, got {ndim}")
    v = ffi.new("gt_view *")
    v.data = ffi.from_buffer(buffer)
    v.offset = offset
    v.ndim = ndim
    v.dtype = _CODES_BY_DTYPE[buffer.dtype]
    v.shape[0:ndim] = shape
    v.strides[0:ndim] = strides
    return v


def optional_view(strided: Strided | None):
    """:func:`view`, or NULL for an unused buffer."""
    return ffi.NULL if strided is None else view(strided)
