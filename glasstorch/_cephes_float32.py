"""Float32 ``log`` and ``sincos`` as PyTorch's AVX2 normal kernel computes them.

PyTorch's CPU kernel for float32 normals of 16 elements or more (built for
AVX2, and used by its AVX-512 build too) does not call the C library: it
evaluates ``log``, ``sin`` and ``cos`` with the SSE/AVX ports of Stephen
Moshier's Cephes single-precision routines (``logf``, ``sinf``/``cosf``), 8
lanes at a time, in float32. Its compiler fuses a multiply followed by an add
into one fused multiply-add (rounded once) at the places marked below; which
ones was established by comparing with PyTorch 2.13's ``randn`` bit for bit.

The algorithms and coefficients are Cephes' published ones:

* ``log``: ``x = m * 2**e`` with ``m`` in ``[sqrt(1/2), sqrt(2))``; then
  ``log x = e * ln 2 + f - f**2 / 2 + f**3 * P(f)`` for ``f = m - 1``, with
  ``ln 2`` split in two (``0.693359375 - 2.12194440e-4``) so that ``e * ln 2``
  adds almost exactly, and ``P`` a degree-8 polynomial.
* ``sincos``: ``|x|`` reduced by a multiple ``j`` of ``pi/4`` (``j`` made even),
  with ``pi/4`` split in three parts (Cody and Waite) so the reduction loses
  no bits; then a degree-3 polynomial in ``z = x**2`` for sine
  (``x + x z S(z)``) and for cosine (``1 - z/2 + z**2 C(z)``), swapped and
  sign-flipped by the octant ``j``.

Arguments must be finite and positive for ``log`` (Box-Muller's ``1 - u`` is
in ``(0, 1]``) and of moderate size for ``sincos`` (``2 pi u`` is in
``[0, 2 pi)``): the integer octant is a 32-bit integer as in the vector code.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32

# -- Cephes logf: the split ln 2 and the polynomial P(f), highest power first.
LOG_SQRT_HALF = F32(0.707106781186547524)  # sqrt(1/2): below it, m doubles and e drops by one
LN2_HIGH = F32(
    0.693359375
)  # ln 2 = LN2_HIGH + LN2_LOW; LN2_HIGH has few bits, so e * LN2_HIGH is exact
LN2_LOW = F32(-2.12194440e-4)
LOG_POLYNOMIAL = [
    F32(c)
    for c in (
        7.0376836292e-2,
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    )
]

# -- Cephes sinf/cosf: 4/pi, pi/4 in three parts (Cody-Waite), and the polynomials.
FOUR_OVER_PI = F32(1.27323954473516)
PI_OVER_4_PARTS = (F32(0.78515625), F32(2.4187564849853515625e-4), F32(3.77489497744594108e-8))
SINE_POLYNOMIAL = (F32(-1.9515295891e-4), F32(8.3321608736e-3), F32(-1.6666654611e-1))
COSINE_POLYNOMIAL = (
    F32(2.443315711809948e-5),
    F32(-1.388731625493765e-3),
    F32(4.166664568298827e-2),
)


def fma_float32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32, as the FMA instruction does.

    The product of two float32 numbers is exact in float64, but the float64
    sum is a first rounding, and rounding that to float32 can differ from
    rounding the exact sum (double rounding). Rounding the float64 sum "to
    odd" (moving to the odd neighbour when the sum was inexact) avoids that:
    53 bits are enough for a float32 rounding from an odd value to be right.
    """
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (a, b, c))
    product = a * b  # exact: 24 + 24 bits
    total = product + c
    # Knuth's two-sum: the sum's rounding error, exactly.
    product_part = total - c
    error = (product - product_part) + (c - (total - product_part))
    bits = total.view(np.int64)
    inexact_and_even = (error != 0) & (bits % 2 == 0)
    away_from_zero = (error > 0) == (total > 0)
    bits = np.where(inexact_and_even, bits + np.where(away_from_zero, 1, -1), bits)
    return bits.view(np.float64).astype(F32)


def log(x: np.ndarray) -> np.ndarray:
    """Natural logarithm of positive normal float32 ``x``, Cephes' ``logf`` in float32."""
    bits = np.asarray(x, dtype=F32).view(np.int32)
    exponent = ((bits >> 23) - 127 + 1).astype(F32)  # x = m * 2**exponent, m in [0.5, 1)
    mantissa = ((bits & 0x007FFFFF) | 0x3F000000).view(F32)
    small = mantissa < LOG_SQRT_HALF
    # m in [sqrt(1/2), sqrt(2)): f = 2m - 1 (one exponent less) when m < sqrt(1/2), else m - 1.
    f = (mantissa - F32(1)) + np.where(small, mantissa, F32(0))
    exponent = exponent - np.where(small, F32(1), F32(0))
    f_squared = f * f
    y = np.full_like(f, LOG_POLYNOMIAL[0])
    for coefficient in LOG_POLYNOMIAL[1:]:
        y = fma_float32(y, f, coefficient)  # Horner step, fused
    y = y * f
    y = fma_float32(y, f_squared, exponent * LN2_LOW)  # f**3 P(f) + e ln2_low, fused
    y = fma_float32(f_squared, F32(-0.5), y)  # - f**2 / 2, fused
    return fma_float32(exponent, LN2_HIGH, f + y)  # + e ln2_high, fused


def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin x, cos x)`` of float32 ``x``, Cephes' ``sinf``/``cosf`` in float32."""
    x = np.asarray(x, dtype=F32)
    negative = x < 0
    x = np.abs(x)
    octant = (x * FOUR_OVER_PI).astype(np.int32)  # truncated
    octant = (octant + 1) & ~1  # rounded up to even: x - octant * pi/4 in [-pi/4, pi/4]
    y = octant.astype(F32)
    for part in PI_OVER_4_PARTS:
        x = fma_float32(y, -part, x)  # x - octant * pi/4, one part at a time, fused
    sine_negative = negative ^ ((octant & 4) != 0)
    cosine_negative = ((octant - 2) & 4) == 0
    use_sine_polynomial = (octant & 2) == 0  # octants 0 and 4: sin from S, cos from C
    z = x * x
    cosine = fma_float32(COSINE_POLYNOMIAL[0], z, COSINE_POLYNOMIAL[1])
    cosine = fma_float32(cosine, z, COSINE_POLYNOMIAL[2])
    cosine = cosine * z
    cosine = fma_float32(cosine, z, -(z * F32(0.5)))  # z**2 C(z) - z/2, fused
    cosine = cosine + F32(1)
    sine = fma_float32(SINE_POLYNOMIAL[0], z, SINE_POLYNOMIAL[1])
    sine = fma_float32(sine, z, SINE_POLYNOMIAL[2])
    sine = sine * z
    sine = fma_float32(sine, x, x)  # x + x z S(z), fused
    sin = np.where(use_sine_polynomial, sine, cosine)
    cos = np.where(use_sine_polynomial, cosine, sine)
    return np.where(sine_negative, -sin, sin), np.where(cosine_negative, -cos, cos)
