"""Elementwise kernels: one walk over the output, one Python function per element.

The frontend hands every input already broadcast to the output's shape (stride
0 where a value repeats) and cast to the computation's dtype, so each kernel is
the same loop: zip the positions of the output and the inputs, apply the
operation, store. The operations themselves live in two tables, so adding an
operation means adding one line, not one loop.

Python's ``math`` raises where IEEE-754 gives ``inf`` or ``nan`` (``log(0)``,
``exp(1000)``, ``1.0 / 0.0``, ``math.fsum([inf, -inf])``); the small functions
below return what a float unit would, so the reference tier agrees with C and
with PyTorch. The other reference kernels (reductions, matmul, optimizers,
cross-entropy) use them too.
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
    return math.copysign(inf, x) if x == 0 else nan  # 1 / sqrt(-0.0) = 1 / -0.0 = -inf


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
    """floor/ceil/round/trunc leave integers, infinities and NaN as they are.

    Python's versions return an int, which has no -0: a zero result takes the
    sign of x back, as IEEE's do (``ceil(-0.5)`` is ``-0.0``)."""

    def rounded(x):
        if not (isinstance(x, float) and math.isfinite(x)):
            return x
        return float(fn(x)) or math.copysign(0.0, x)

    return rounded


def _sign(x):
    """-1, 0 or 1; NaN gives 0, as PyTorch's ``(0 < x) - (x < 0)`` does."""
    return (x > 0) - (x < 0)


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
    "sign": _sign,
    "floor": _rounding(math.floor),
    "ceil": _rounding(math.ceil),
    "round": _rounding(round),  # Python's round() is half-to-even, like PyTorch
    "trunc": _rounding(math.trunc),
    "logical_not": lambda x: not x,
    "bitwise_not": _bitwise_not,
    "isnan": lambda x: x != x,
}


def _fsum(values):
    """The sum of floats, added exactly and rounded once (``math.fsum``).

    fsum raises where a float unit does not: ``inf + -inf`` (ValueError; IEEE
    gives NaN) and a partial sum past the largest double (OverflowError; IEEE
    gives inf). Then the values are added one by one, as C adds them, which
    gives exactly those IEEE answers."""
    values = list(values)
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        total = 0.0
        for value in values:
            total += value
        return total


# -------------------------------------------------------------- binary helpers
def _div(a, b):
    if b != 0:
        return a / b
    if a == 0 or a != a:
        return nan  # 0/0 and NaN/0
    return math.copysign(inf, a) * math.copysign(1.0, b)


def _fmod(a, b):
    """C's fmod: the remainder of truncated division, with the sign of a.

    Python's math.fmod raises where C returns NaN (an infinite a, b == 0)."""
    if a != a or b != b or math.isinf(a) or b == 0:
        return nan
    return math.fmod(a, b)  # exact; fmod(a, inf) is a


def _remainder(a, b):
    """torch.remainder: the remainder takes the sign of the divisor.

    Floats follow PyTorch's formula on top of fmod, so a zero result keeps the
    sign of a (``-0.0 % 1`` is ``-0.0``, where Python's % gives ``0.0``)."""
    if not (isinstance(a, float) or isinstance(b, float)):
        return a % b  # integers: Python's % is the same; the frontend rules out b == 0
    mod = _fmod(a, b)
    if mod != 0 and (b < 0) != (mod < 0):
        mod += b
    return mod


def _floor_divide(a, b):
    """Division rounded toward minus infinity, as PyTorch (and Python's //) compute it.

    For floats: the quotient of ``a - fmod(a, b)``, which is a whole multiple of
    b, less 1 when the remainder's sign says so; a zero quotient keeps the
    sign of ``a / b``. Dividing by 0 gives the IEEE quotient (inf or NaN), an
    infinite a gives NaN, a finite a over an infinite b gives 0 or -1."""
    if not (isinstance(a, float) or isinstance(b, float)):
        return a // b  # integers: the frontend has ruled out b == 0
    if b == 0:
        return _div(a, b)
    mod = _fmod(a, b)
    quotient = _div(a - mod, b)
    if mod != 0 and (b < 0) != (mod < 0):
        quotient -= 1.0
    if quotient == 0:
        return math.copysign(0.0, _div(a, b))
    if not math.isfinite(quotient):
        return quotient
    floored = float(math.floor(quotient))
    return floored + 1.0 if quotient - floored > 0.5 else floored


def _is_odd_integer(x) -> bool:
    return math.isfinite(x) and x == int(x) and int(x) % 2 == 1


def _pow(a, b):
    """C's pow. Python's math.pow raises where C returns inf or NaN."""
    if not (isinstance(a, float) or isinstance(b, float)):
        return a**b  # integers: the frontend has ruled out negative exponents
    if a == 0 and b < 0:
        # 0 to a negative power: inf, with a's sign for an odd integer power (-0.0 ** -1).
        return math.copysign(inf, a) if _is_odd_integer(b) else inf
    try:
        return math.pow(a, b)
    except OverflowError:  # the result is too large for a double
        return -inf if (a < 0 and _is_odd_integer(b)) else inf
    except ValueError:  # a negative base to a fraction
        return nan


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
        # -- solution: kernels/elementwise
        fn, store = UNARY[op], converter(out.buffer.dtype)
        out_mem, a_mem = memory(out), memory(a)
        for p_out, p_a in zip(positions(out), positions(a)):
            out_mem[p_out] = store(fn(a_mem[p_a]))
        # -- end solution

    def binary(self, op: str, out: Strided, a: Strided, b: Strided) -> None:
        # -- solution: kernels/elementwise
        fn, store = BINARY[op], converter(out.buffer.dtype)
        out_mem, a_mem, b_mem = memory(out), memory(a), memory(b)
        for p_out, p_a, p_b in zip(positions(out), positions(a), positions(b)):
            out_mem[p_out] = store(fn(a_mem[p_a], b_mem[p_b]))
        # -- end solution

    def add_scaled(self, out: Strided, a: Strided, b: Strided, alpha) -> None:
        store = converter(out.buffer.dtype)
        if out.buffer.dtype.kind == "f":
            alpha = float(out.buffer.dtype.type(alpha))  # alpha rounded to the dtype
        out_mem, a_mem, b_mem = memory(out), memory(a), memory(b)
        for p_out, p_a, p_b in zip(positions(out), positions(a), positions(b)):
            # Python numbers: a double for floats (rounded once by store), an
            # unbounded int for integers (wrapped by store).
            out_mem[p_out] = store(a_mem[p_a] + alpha * b_mem[p_b])

    def where(self, out: Strided, cond: Strided, a: Strided, b: Strided) -> None:
        store = converter(out.buffer.dtype)
        out_mem, c_mem, a_mem, b_mem = memory(out), memory(cond), memory(a), memory(b)
        for p_out, p_c, p_a, p_b in zip(
            positions(out), positions(cond), positions(a), positions(b)
        ):
            out_mem[p_out] = store(a_mem[p_a] if c_mem[p_c] else b_mem[p_b])
