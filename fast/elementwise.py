"""Elementwise kernels of the fast tier: fill, copy, unary, binary, where.

Each method turns its :class:`~glasstorch._kernels.Strided` arguments into
``gt_view`` structs and makes one call into ``fast/csrc/elementwise.c``. The
operation names of the contract become the C enum codes once, at import, so a
call costs a dict lookup rather than a chain of string comparisons.

The C functions return -1 for a combination their tables do not hold (a bitwise
operation on floats, an output of the wrong dtype); that becomes a
``TypeError`` here instead of a silent wrong answer.
"""

from __future__ import annotations

from glasstorch._kernels import BINARY_OPS, UNARY_OPS, Strided

from ._glue import CODES_BY_DTYPE, VIEW_TYPE, from_buffer, lib, new_struct, refused, view

#: Contract name -> C code, e.g. ``"add" -> lib.GT_BINARY_ADD``.
UNARY_CODES: dict[str, int] = {name: getattr(lib, f"GT_UNARY_{name.upper()}") for name in UNARY_OPS}
BINARY_CODES: dict[str, int] = {
    name: getattr(lib, f"GT_BINARY_{name.upper()}") for name in BINARY_OPS
}

_INT64_MIN = -(1 << 63)


def _wrap64(value: int) -> int:
    """``value`` modulo 2**64, as a signed 64-bit number (C keeps the low bits from there)."""
    return (value - _INT64_MIN) % (1 << 64) + _INT64_MIN


class ElementwiseKernels:
    """fill, copy, unary, binary and where, each one call into C."""

    def fill(self, out: Strided, value) -> None:
        """Set every element of ``out`` to ``value`` (converted as the reference does)."""
        if isinstance(value, float) or out.buffer.dtype.kind == "f":
            lib.gt_fill_float(view(out), float(value))  # an int rounds as Python's float()
            return
        if not _INT64_MIN <= value < -_INT64_MIN:  # beyond 64 bits: reduce it here
            value = bool(value) if out.buffer.dtype.kind == "b" else _wrap64(value)
        lib.gt_fill_int(view(out), value)

    def copy(self, out: Strided, src: Strided) -> None:
        """``out[i] = src[i]``, converting between any two dtypes."""
        if lib.gt_copy(view(out), view(src)):
            raise refused("copy", out, src)

    def unary(self, op: str, out: Strided, a: Strided) -> None:
        """``out[i] = op(a[i])`` for ``op`` in ``UNARY_OPS``."""
        if lib.gt_unary(UNARY_CODES[op], view(out), view(a)):
            raise refused(op, out, a)

    def binary(self, op: str, out: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = op(a[i], b[i])`` for ``op`` in ``BINARY_OPS``."""
        # Speed: a struct already built (an input's, nearly always) is read from its
        # slot here, sparing a call to view() (see _glue): a small tensor's add is
        # mostly such fixed costs.
        native_a = a.native or view(a)
        native_b = b.native or view(b)
        if out.native is None and out.shape is a.shape and out.strides is a.strides:
            # Optimization (a fresh output laid out as a): the frontend hands a
            # new output a's very shape and strides tuples; C fills its struct
            # from a's in the same call as the sum (see gt_binary_fresh).
            out.native = native_out = new_struct(VIEW_TYPE)
            buffer = out.buffer
            status = lib.gt_binary_fresh(
                BINARY_CODES[op],
                native_out,
                from_buffer(buffer),
                out.offset,
                CODES_BY_DTYPE[buffer.dtype],
                native_a,
                native_b,
            )
        else:
            status = lib.gt_binary(BINARY_CODES[op], view(out), native_a, native_b)
        if status:
            raise refused(op, out, a, b)

    def add_scaled(self, out: Strided, a: Strided, b: Strided, alpha) -> None:
        """``out[i] = a[i] + alpha * b[i]`` in one pass (no temporary for ``alpha * b``)."""
        floating = out.buffer.dtype.kind == "f"
        falpha, ialpha = (float(alpha), 0) if floating else (0.0, _wrap64(int(alpha)))
        if lib.gt_add_scaled(view(out), view(a), view(b), falpha, ialpha):
            raise refused("add_scaled", out, a, b)

    def where(self, out: Strided, cond: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = a[i] if cond[i] else b[i]``."""
        if lib.gt_where(view(out), view(cond), view(a), view(b)):
            raise refused("where", out, cond, a, b)
