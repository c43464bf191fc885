"""Elementwise CUDA kernels: fill, copy (on the device, and between host and device),
unary, binary and where, for every dtype (``fast/cuda/elementwise.cu``).

Each method picks the kernel for its operands' dtype (``unary_f32``,
``copy_i64_b8``, ...) and queues it with one launch. Operands that are all
contiguous go without a meta array (the kernel indexes them directly); any
other layout sends shapes and strides in one (see ``CudaKernelsBase.meta``).
"""

from __future__ import annotations

import numpy as np

from glasstorch._gpu.driver import DeviceBuffer
from glasstorch._kernels import BOOL_RESULT_OPS, Strided
from glasstorch._shape import is_contiguous, numel, row_major_strides

from ..sources import op_codes

#: Contract op name -> its code in elementwise.cu's op tables, bound by name (as
#: the C glue binds the C tier's enums); test_op_tables.py checks both against the contract.
UNARY_CODES = op_codes("elementwise.cu", "GT_UNARY_OPS")
BINARY_CODES = op_codes("elementwise.cu", "GT_BINARY_OPS")
_BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"})

_INT64_MIN = -(1 << 63)


def _refused(name: str, *views: Strided) -> TypeError:
    dtypes = ", ".join(str(v.buffer.dtype) for v in views)
    return TypeError(f"the CUDA kernel {name!r} does not accept dtypes ({dtypes})")


class ElementwiseKernels:
    """fill, copy, unary, binary and where on the device."""

    SOURCE = "elementwise.cu"

    def _layout(self, *views: Strided) -> tuple[int, int]:
        """(meta address or 0 when every view is contiguous, ndim) for a launch.

        ``is_contiguous`` is cached by (shape, strides): it runs on every launch."""
        if all(is_contiguous(v.shape, v.strides) for v in views):
            return 0, 0
        return self.meta(*views), len(views[0].shape)

    def fill(self, out: Strided, value) -> None:
        """Set every element of ``out`` to ``value``."""
        kind = out.buffer.dtype.kind
        if kind != "f" and isinstance(value, float):
            # A float into an integer or bool tensor (NaN, infinities and values out of
            # range included): converted on the host with the CPU tiers' rules, as copy is.
            one = np.empty(1, dtype=out.buffer.dtype)
            self.host.fill(Strided(one, (1,), (1,), 0), value)
            value = one[0].item()
        if kind == "f":
            fvalue, ivalue = float(value), 0
        else:
            ivalue = int(value)
            if not _INT64_MIN <= ivalue < -_INT64_MIN:  # beyond 64 bits: keep the low bits
                ivalue = (
                    bool(ivalue) if kind == "b" else (ivalue - _INT64_MIN) % (1 << 64) + _INT64_MIN
                )
            fvalue = 0.0
        meta, ndim = self._layout(out)
        name = f"fill_{self.suffix(out)}"
        n = numel(out.shape)
        self.launch(self.SOURCE, name, n, self.ptr(out), fvalue, ivalue, meta, ndim, n)

    def copy(self, out: Strided, src: Strided) -> None:
        """``out[i] = src[i]`` with conversion; either side may be on the host."""
        out_device = isinstance(out.buffer, DeviceBuffer)
        src_device = isinstance(src.buffer, DeviceBuffer)
        if out_device and src_device:
            self._copy_on_device(out, src)
        elif out_device:
            self._copy_from_host(out, src)
        elif src_device:
            self._copy_to_host(out, src)
        else:
            raise TypeError("CUDA copy called with two host buffers")

    def _copy_on_device(self, out: Strided, src: Strided) -> None:
        n = numel(out.shape)
        if n == 0:
            return
        same = out.buffer.dtype == src.buffer.dtype
        if same and is_contiguous(out.shape, out.strides) and is_contiguous(src.shape, src.strides):
            if out.buffer.ptr == src.buffer.ptr and out.offset == src.offset:
                return  # a view copied onto itself
            nbytes = n * out.buffer.dtype.itemsize
            self.copy_device_to_device(self.ptr(out), self.ptr(src), nbytes)
            return
        meta, ndim = self._layout(out, src)
        name = f"copy_{self.suffix(out)}_{self.suffix(src)}"
        self.launch(self.SOURCE, name, n, self.ptr(out), self.ptr(src), meta, ndim, n)

    def _copy_from_host(self, out: Strided, src: Strided) -> None:
        """Host to device: gather the host view into one contiguous array of
        out's dtype (NumPy does the conversion with the CPU tier's rules), one
        transfer, then a device copy when out is not contiguous."""
        n = numel(out.shape)
        if n == 0:
            return
        host = np.empty(n, dtype=out.buffer.dtype)
        staging = Strided(host, out.shape, row_major_strides(out.shape), 0)
        self.host.copy(staging, src)
        if is_contiguous(out.shape, out.strides):
            self.copy_to_device(self.ptr(out), host)
            return
        temp = self.driver.device_empty(n, out.buffer.dtype)
        self.copy_to_device(temp.ptr, host)
        self._copy_on_device(out, Strided(temp, out.shape, row_major_strides(out.shape), 0))

    def _copy_to_host(self, out: Strided, src: Strided) -> None:
        """Device to host: make src contiguous on the device if needed, one transfer
        (which waits for the stream), then the CPU tier lays it out into ``out``."""
        n = numel(src.shape)
        if n == 0:
            return
        if not is_contiguous(src.shape, src.strides):
            temp = self.driver.device_empty(n, src.buffer.dtype)
            dense = Strided(temp, src.shape, row_major_strides(src.shape), 0)
            self._copy_on_device(dense, src)
            src = dense
        host = np.empty(n, dtype=src.buffer.dtype)
        self.copy_to_host(host, self.ptr(src))
        self.host.copy(out, Strided(host, src.shape, row_major_strides(src.shape), 0))

    def unary(self, op: str, out: Strided, a: Strided) -> None:
        """``out[i] = op(a[i])`` for ``op`` in ``UNARY_OPS``."""
        kind = a.buffer.dtype.kind
        if op == "bitwise_not" and kind == "b":
            op = "logical_not"  # ~True would be 254: on bool, bitwise not is logical not
        if op in _BITWISE and kind == "f":
            raise _refused(op, out, a)
        boolean = op in BOOL_RESULT_OPS
        expected = np.dtype(np.bool_) if boolean else a.buffer.dtype
        if out.buffer.dtype != expected:
            raise _refused(op, out, a)
        meta, ndim = self._layout(out, a)
        name = f"unary_{'bool_' if boolean else ''}{self.suffix(a)}"
        self.launch(
            self.SOURCE,
            name,
            numel(out.shape),
            UNARY_CODES[op],
            self.ptr(out),
            self.ptr(a),
            meta,
            ndim,
            numel(out.shape),
        )

    def binary(self, op: str, out: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = op(a[i], b[i])`` for ``op`` in ``BINARY_OPS``."""
        if a.buffer.dtype != b.buffer.dtype or (op in _BITWISE and a.buffer.dtype.kind == "f"):
            raise _refused(op, out, a, b)
        boolean = op in BOOL_RESULT_OPS
        expected = np.dtype(np.bool_) if boolean else a.buffer.dtype
        if out.buffer.dtype != expected:
            raise _refused(op, out, a, b)
        meta, ndim = self._layout(out, a, b)
        name = f"binary_{'bool_' if boolean else ''}{self.suffix(a)}"
        self.launch(
            self.SOURCE,
            name,
            numel(out.shape),
            BINARY_CODES[op],
            self.ptr(out),
            self.ptr(a),
            self.ptr(b),
            meta,
            ndim,
            numel(out.shape),
        )

    def add_scaled(self, out: Strided, a: Strided, b: Strided, alpha) -> None:
        """``out[i] = a[i] + alpha * b[i]`` in one pass (no temporary for ``alpha * b``)."""
        dtype = out.buffer.dtype
        if a.buffer.dtype != dtype or b.buffer.dtype != dtype or dtype.kind == "b":
            raise _refused("add_scaled", out, a, b)
        if dtype.kind == "f":
            falpha, ialpha = float(alpha), 0
        else:
            falpha, ialpha = 0.0, (int(alpha) - _INT64_MIN) % (1 << 64) + _INT64_MIN
        meta, ndim = self._layout(out, a, b)
        n = numel(out.shape)
        self.launch(
            self.SOURCE,
            f"add_scaled_{self.suffix(out)}",
            n,
            self.ptr(out),
            self.ptr(a),
            self.ptr(b),
            falpha,
            ialpha,
            meta,
            ndim,
            n,
        )

    def where(self, out: Strided, cond: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = a[i] if cond[i] else b[i]``."""
        dtype = out.buffer.dtype
        if a.buffer.dtype != dtype or b.buffer.dtype != dtype or cond.buffer.dtype.kind != "b":
            raise _refused("where", out, cond, a, b)
        meta, ndim = self._layout(out, cond, a, b)
        self.launch(
            self.SOURCE,
            f"where_{self.suffix(out)}",
            numel(out.shape),
            self.ptr(out),
            self.ptr(cond),
            self.ptr(a),
            self.ptr(b),
            meta,
            ndim,
            numel(out.shape),
        )
