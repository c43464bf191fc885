"""Elementwise kernels: one walk over the output, one Python function per element.

The frontend hands every input already broadcast to the output's shape (stride
0 where a value repeats) and cast to the computation's dtype, so each kernel is
the same loop: zip the positions of the output and the inputs, apply the
operation, store. The operations themselves live in two tables, so adding an
operation means adding one line, not one loop.

Python's ``math`` raises where IEEE-754 gives ``inf`` or ``nan`` (``log(0)``,
``exp(1000)``, ``1.0 / 0.0``); the small functions below return what a float
unit would, so the reference tier agrees with C and with PyTorch.
"""

from __future__ import annotations

import math

from glasstorch._kernels import Strided

from .strided import converter, memory, positions

inf, nan = math.inf, math.nan


# --------------------------------------------------------------- unary helpers
def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return inf


def _expm1(x):
    try:
        return math.expm1(x)
    except OverflowError:
        return inf


def _log(x):
    if x > 0:
        return math.log(x)
    return -inf if x == 0 else nan  # log(0) = -inf; log of a negative or NaN is NaN


def _log1p(x):
    if x > -1:
        return math.log1p(x)
    return -inf if x == -1 else nan


def _sqrt(x):
    return math.sqrt(x) if x >= 0 else nan


def _rsqrt(x):
    if x > 0:
        return 1.0 / math.sqrt(x)
    return inf if x == 0 else nan


def _reciprocal(x):
    return 1.0 / x if x != 0 else math.copysign(inf, x)


def _finite_only(fn):
    """Wrap a math function that raises on infinities (sin, cos): give NaN instead."""
    return lambda x: fn(x) if math.isfinite(x) else nan


def _sigmoid(x):
    # Two forms of 1 / (1 + e^-x), each of which never overflows on its half.
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = _exp(x)
    return e / (1.0 + e)


def _rounding(fn):
    """floor/ceil/round/trunc leave integers, infinities and NaN as they are."""
    return lambda x: fn(x) if isinstance(x, float) and math.isfinite(x) else x


def _bitwise_not(x):
    return not x if isinstance(x, bool) else ~x


UNARY = {
    "neg": lambda x: -x,
    "abs": abs,
    "exp": _exp,
    "log": _log,
    "log1p": _log1p,
    "expm1": _expm1,
    "sqrt": _sqrt,
    "rsqrt": _rsqrt,
    "reciprocal": _reciprocal,
    "sin": _finite_only(math.sin),
    "cos": _finite_only(math.cos),
    "tanh": math.tanh,
    "sigmoid": _sigmoid,
    "erf": math.erf,
    "relu": lambda x: 0 if x < 0 else x,  # NaN passes through, as in PyTorch
    "sign": lambda x: (x > 0) - (x < 0) if x == x else x,
    "floor": _rounding(math.floor),
    "ceil": _rounding(math.ceil),
    "round": _rounding(round),  # Python's round() is half-to-even, like PyTorch
    "trunc": _rounding(math.trunc),
    "logical_not": lambda x: not x,
    "bitwise_not": _bitwise_not,
    "isnan": lambda x: x != x,
}


# -------------------------------------------------------------- binary helpers
def _div(a, b):
    if b != 0:
        return a / b
    if a == 0 or a != a:
        return nan  # 0/0 and NaN/0
    return math.copysign(inf, a) * math.copysign(1.0, b)


def _floor_divide(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.floor(_div(a, b)) if b != 0 and math.isfinite(a / b) else _div(a, b)
    return a // b  # integers: the frontend has ruled out b == 0


def _remainder(a, b):
    if b == 0:
        return nan  # floats only: the frontend has ruled out integer b == 0
    return a % b  # Python's % takes the sign of the divisor, like torch.remainder


def _pow(a, b):
    if not (isinstance(a, float) or isinstance(b, float)):
        return a**b  # integers: the frontend has ruled out negative exponents
    try:
        return math.pow(a, b)
    except OverflowError:  # the result is too large for a double
        odd_power = b == int(b) and int(b) % 2 == 1
        return -inf if (a < 0 and odd_power) else inf
    except ValueError:  # 0 to a negative power, or a negative base to a fraction
        return inf if a == 0 else nan


def _maximum(a, b):
    return a if (a > b or a != a) else b  # a NaN on either side wins


def _minimum(a, b):
    return a if (a < b or a != a) else b


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _div,
    "floor_divide": _floor_divide,
    "remainder": _remainder,
    "pow": _pow,
    "maximum": _maximum,
    "minimum": _minimum,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "threshold_backward": lambda a, b: 0 if b <= 0 else a,
}


class ElementwiseKernels:
    """fill, copy, unary, binary and where: one loop each, operations from the tables."""

    def fill(self, out: Strided, value) -> None:
        out_mem, value = memory(out), converter(out.buffer.dtype)(value)
        for p in positions(out):
            out_mem[p] = value

    def copy(self, out: Strided, src: Strided) -> None:
        out_mem, src_mem = memory(out), memory(src)
        store = converter(out.buffer.dtype)
        # Read everything first: src and out may be the same view.
        values = [src_mem[p] for p in positions(src)]
        for p, value in zip(positions(out), values):
            out_mem[p] = store(value)

    def unary(self, op: str, out: Strided, a: Strided) -> None:
        fn, store = UNARY[op], converter(out.buffer.dtype)
        out_mem, a_mem = memory(out), memory(a)
        for p_out, p_a in zip(positions(out), positions(a)):
            out_mem[p_out] = store(fn(a_mem[p_a]))

    def binary(self, op: str, out: Strided, a: Strided, b: Strided) -> None:
        fn, store = BINARY[op], converter(out.buffer.dtype)
        out_mem, a_mem, b_mem = memory(out), memory(a), memory(b)
        for p_out, p_a, p_b in zip(positions(out), positions(a), positions(b)):
            out_mem[p_out] = store(fn(a_mem[p_a], b_mem[p_b]))

    def where(self, out: Strided, cond: Strided, a: Strided, b: Strided) -> None:
        store = converter(out.buffer.dtype)
        out_mem, c_mem, a_mem, b_mem = memory(out), memory(cond), memory(a), memory(b)
        for p_out, p_c, p_a, p_b in zip(
            positions(out), positions(cond), positions(a), positions(b)
        ):
            out_mem[p_out] = store(a_mem[p_a] if c_mem[p_c] else b_mem[p_b])
