"""Glue between the kernel contract and the C functions: views and dtypes.

A kernel receives :class:`~glasstorch._kernels.Strided` views; C receives
``gt_view`` structs (see ``fast/csrc/gt_common.h``). :func:`view` makes one from
the other. It is on the path of every kernel call, so it is kept short:

* the struct is built once per ``Strided`` and kept in its ``native`` slot.
  A tensor hands the same ``Strided`` to every kernel call, so a tensor used
  by ten operations pays for one struct (about 0.9 us), not ten. The struct
  holds the buffer's address; the ``Strided`` holds the buffer itself, and
  lives as long as its tensor;
* the buffer's address comes from ``ffi.from_buffer`` (about 0.2 us, where
  NumPy's ``__array_interface__`` takes over 1 us);
* the dtype code is looked up by NumPy dtype object (``dtype.name`` is a slow
  Python-level property in NumPy);
* the struct is filled by one initializer, in C, rather than field by field.
"""

from __future__ import annotations

import types

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import MAX_DIMS, check_ndim
from glasstorch.fast import load_native

_native = load_native()
ffi = _native.ffi


def _as_module(native_lib) -> types.ModuleType:
    """The C functions and constants of ``native_lib`` (a cffi ``Lib``) as a module.

    Optimization: ``lib.gt_binary(...)`` looks the name up on every call. On a
    cffi ``Lib`` that lookup is a generic one, which Python cannot cache; on a
    module it is a cached dict read (``LOAD_ATTR_MODULE``), some 10 ns less per
    kernel call. The objects are the same C functions.
    """
    module = types.ModuleType(f"{__name__}.lib", "The fast tier's C functions (cffi).")
    for name in dir(native_lib):
        value = getattr(native_lib, name)
        if not callable(value) and _has_address(native_lib, name):
            # A C global variable's copy would keep the value it had at import.
            raise TypeError(f"the fast tier's C declarations may not hold a variable: {name}")
        setattr(module, name, value)
    return module


def _has_address(native_lib, name: str) -> bool:
    """Whether ``name`` in ``native_lib`` has an address: a function or a variable, not a constant."""
    try:
        ffi.addressof(native_lib, name)
    except AttributeError:  # cffi: "cannot take the address of the constant"
        return False
    return True


lib = _as_module(_native.lib)

# Optimization: ffi's methods looked up once. ``ffi.new(...)`` in a module that
# imported ``ffi`` makes a bound method on every call; these are made once.
# Every view is built with them (see view()).
new_struct = ffi.new
from_buffer = ffi.from_buffer

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
CODES_BY_DTYPE = {np.dtype(name): code for name, code in DTYPE_CODES.items()}


VIEW_TYPE = ffi.typeof("gt_view *")


#: Layout templates: ``(shape, strides, dtype) -> gt_view`` already filled in.
#: Optimization: filling a gt_view from Python tuples costs twice as much as
#: copying a filled one, and a program uses few layouts over and over; a new
#: view copies its layout's template and sets only the data pointer and offset.
_TEMPLATES: dict = {}
_MAX_TEMPLATES = 4096


def view(strided: Strided):
    """A ``gt_view *`` describing ``strided`` (the C side of a kernel argument)."""
    native = strided.native
    if native is not None:
        return native  # built by an earlier call with this same view
    buffer = strided.buffer
    key = (strided.shape, strided.strides, buffer.dtype)
    template = _TEMPLATES.get(key)
    if template is None:
        shape = strided.shape
        if len(shape) > MAX_DIMS:  # gt_view holds MAX_DIMS; the frontend never makes more
            check_ndim(len(shape))
        template = ffi.new(
            VIEW_TYPE,
            (ffi.NULL, 0, len(shape), CODES_BY_DTYPE[buffer.dtype], shape, strided.strides),
        )
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        _TEMPLATES[key] = template
    native = new_struct(VIEW_TYPE, template[0])
    native.data = from_buffer(buffer)
    if strided.offset:  # the template's offset is 0, as most views' is
        native.offset = strided.offset
    strided.native = native
    return native


def refused(kernel: str, *views: Strided) -> TypeError:
    """The error for a C kernel that returned -1: its tables hold no entry for
    these dtypes (raised instead of a silent wrong answer)."""
    dtypes = ", ".join(str(v.buffer.dtype) for v in views)
    return TypeError(f"the fast tier's {kernel} kernel does not support dtypes ({dtypes})")


def optional_view(strided: Strided | None):
    """:func:`view`, or NULL for an unused buffer."""
    return ffi.NULL if strided is None else view(strided)
