"""Arithmetic in the input's precision, for the normalisation kernels.

PyTorch's CPU kernels for layer, group and batch normalisation compute their
statistics in the input's own dtype (float32 for a float32 input), not in
double precision. For ordinary numbers that changes only the last bits; for
extreme ones it decides the answer. A float32 row holding ``1e30`` has a
squared deviation of about ``1e60``, past float32's largest number, so its
variance is ``inf``, ``1 / sqrt(inf + eps)`` is 0, and every output of that
row is ``0 * (x - mean) + bias`` (or NaN where ``x - mean`` is infinite).
A double-precision variance would be finite and give other numbers.

To give PyTorch's answers the reference tier repeats PyTorch's arithmetic:

* :func:`rounder` rounds each intermediate result to the dtype, as a float32
  unit does after every operation;
* :func:`fma` is a fused multiply-add (``a * b + c`` rounded once), which
  PyTorch's vectorised loops use for the final scale-and-shift (and its
  linspace for every point, see ``creation.py``);
* :func:`row_moments` is PyTorch's row mean and variance: Welford's update
  in 8 float32 (4 float64) lanes, as its 256-bit vector loop runs, combined in
  a fixed order at the end.

Every number here is a Python float (a double); rounding a double result of
``+ - * /`` or ``sqrt`` to float32 gives exactly the float32 operation's
result, so these loops reproduce float32 arithmetic bit for bit.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

#: From here on float32 rounds to infinity (halfway to the next power of two).
_FLOAT32_OVERFLOW = 3.4028235677973366e38


def _to_float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (infinity past its range, NaN as is)."""
    if value != value:
        return value
    if -_FLOAT32_OVERFLOW < value < _FLOAT32_OVERFLOW:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    return math.copysign(math.inf, value)


def rounder(dtype_name: str):
    """The rounding that follows every operation in ``dtype_name``'s arithmetic."""
    return _to_float32 if dtype_name == "float32" else float


def reciprocal_sqrt(x: float, round_=float) -> float:
    """``1 / sqrt(x)`` as two rounded operations (IEEE: ``inf`` at 0, NaN below)."""
    if x != x or x < 0:
        return math.nan
    root = round_(math.sqrt(x))
    return round_(1.0 / root) if root else math.inf


def fma(a: float, b: float, c: float, round_=float) -> float:
    """``a * b + c`` with one rounding: to double, or to float32 by ``round_``.

    Finite operands are multiplied and added exactly, as fractions; with an
    infinity or a NaN among them the plain expression gives the IEEE answer.
    An exact zero has IEEE's sign: ``-0.0`` only from ``-0.0 + -0.0``.
    """
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return round_(a * b + c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        # With c == 0 the product is an exact zero too, and the plain sum has its sign.
        return round_(a * b + c) if c == 0 else 0.0
    try:
        return round_(float(exact) if round_ is float else _round_to_odd(exact))
    except OverflowError:  # the exact result is past the largest double
        return math.inf if exact > 0 else -math.inf


def _round_to_odd(exact: Fraction) -> float:
    """``exact`` as a double, rounded "to odd": a value it does not hold exactly
    becomes the neighbour whose last bit is 1.

    Rounding to nearest twice (to double, then to float32) can miss by one
    float32 step where the first rounding lands on a float32 halfway point; a
    double rounded to odd never lands there, so the second rounding is the
    single correct one (double keeps more than two bits beyond float32's 24).
    """
    nearest = float(exact)
    last_bit = struct.unpack("<q", struct.pack("<d", nearest))[0] & 1
    if Fraction(nearest) == exact or last_bit:
        return nearest
    return math.nextafter(nearest, math.inf if exact > nearest else -math.inf)


# ---------------------------------------------------------------- row moments
#: Lanes of one 256-bit vector register: how many running sums PyTorch keeps.
LANES = {"float32": 8, "float64": 4}
#: Vectors per chunk: the Welford update restarts every CHUNK vectors.
CHUNK = 16


def _combine(a, b, round_):
    """Two partial moments ``(count, mean, m2)`` of one lane, merged (Chan et al.).

    ``a`` is the running total, ``b`` the part added to it. An empty side
    leaves the other as it is (PyTorch 2.13's vector merge behaves so: the
    product ``delta * delta * 0`` that would give NaN for a huge ``delta``
    is never formed).
    """
    (na, ma, sa), (nb, mb, sb) = a, b
    if nb == 0:
        return a
    if na == 0:
        return b
    n = na + nb
    c = round_(nb / n)
    delta = round_(mb - ma)
    mean = round_(ma + round_(c * delta))
    spread = round_(round_(round_(delta * delta) * c) * na)
    return n, mean, round_(sa + round_(sb + spread))


def _ceil_log2(m: int) -> int:
    """``ceil(log2(m))``, at least 1: the number of levels of the merge stack."""
    return 1 if m <= 2 else (m - 1).bit_length()


def _lane_moments(x: list[float], lane: int, lanes: int, vectors: int, round_):
    """``(count, mean, m2)`` of one lane of the first ``vectors`` vectors of ``x``.

    Welford's update over each chunk of CHUNK vectors (multiplying by a
    rounded ``1 / (j + 1)``, as PyTorch does), then the chunks merged as a
    binary counter counts: chunk ``i`` joins level 0, and while ``i + 1`` is
    even, level ``k - 1`` moves into level ``k``; so partial sums of similar
    size meet (a cascade, for accuracy). The top level keeps accumulating.
    At the end the higher levels are merged into level 0.
    """
    chunks = -(-vectors // CHUNK)
    depth = _ceil_log2(chunks)
    empty = (0, 0.0, 0.0)
    stack = [empty] * depth
    for i in range(chunks):
        mean = m2 = 0.0
        count = min(CHUNK, vectors - i * CHUNK)
        for j in range(count):
            value = x[(i * CHUNK + j) * lanes + lane]
            delta = round_(value - mean)
            mean = round_(mean + round_(delta * round_(1.0 / (j + 1))))
            m2 = round_(m2 + round_(delta * round_(value - mean)))
        stack[0] = _combine(stack[0], (count, mean, m2), round_)
        carry, k = i + 1, 1
        while k < depth and carry % 2 == 0:
            stack[k] = _combine(stack[k], stack[k - 1], round_)
            stack[k - 1] = empty
            carry //= 2
            k += 1
    total = stack[0]
    for level in stack[1:]:
        total = _combine(total, level, round_)
    return total


def row_moments(x: list[float], dtype_name: str) -> tuple[float, float]:
    """PyTorch's CPU mean and biased variance of the row ``x``, in its dtype.

    The first ``lanes * (N // lanes)`` values form vectors; each lane keeps
    its own Welford sums (:func:`_lane_moments`). The last ``N % lanes``
    values are added one at a time (Welford with a division). Then the lanes
    are merged into those, in lane order, with the plain formula::

        n = m + k;  c = k / n;  d = mean_k - mean;  mean += c * d
        m2 += m2_k + d * d * c * m

    which, unlike the vector merge, *does* form ``d * d * c * m`` with a zero
    weight: a row of fewer than ``lanes`` values, or lane 0 of a row without a
    remainder, turns a huge ``d`` (``d * d = inf``) into NaN.
    """
    round_ = rounder(dtype_name)
    lanes = LANES[dtype_name]
    n = len(x)
    vectors = n // lanes
    count, mean, m2 = 0, 0.0, 0.0
    for value in x[vectors * lanes :]:
        count += 1
        delta = round_(value - mean)
        mean = round_(mean + round_(delta / count))
        m2 = round_(m2 + round_(delta * round_(value - mean)))
    for lane in range(lanes):
        k, lane_mean, lane_m2 = _lane_moments(x, lane, lanes, vectors, round_)
        total = count + vectors
        c = round_(vectors / total) if total else 0.0
        delta = round_(lane_mean - mean)
        mean = round_(mean + round_(c * delta))
        spread = round_(round_(round_(delta * delta) * c) * count)
        m2 = round_(m2 + round_(lane_m2 + spread))
        count = total
    return mean, round_(m2 / n) if n else math.nan
