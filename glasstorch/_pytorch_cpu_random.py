"""PyTorch's CPU random numbers: how its kernels turn Mersenne Twister draws into values.

With the ``"pytorch"`` stream (see :mod:`glasstorch.random`) each random
function on the CPU draws from an :class:`~glasstorch._mt19937.MT19937` and
transforms the draws as PyTorch's CPU kernels do, one element after the other
in row-major order, so that ``manual_seed(s)`` gives PyTorch's numbers. Every
function here takes the generator and returns a NumPy array of the values;
the caller writes them into the tensor.

The transformations (facts about PyTorch's kernels, checked against its output):

* **uniform** in ``[low, high)``: float32 keeps the low 24 bits of one 32-bit
  draw, float64 the low 53 bits of one 64-bit draw, times ``2**-24`` or
  ``2**-53``; then ``u * (high - low) + low`` in the tensor's dtype.
* **normal**, fewer than 16 elements: Box-Muller in float64 on two uniform
  float64 numbers ``u1, u2``: ``r = sqrt(-2 log1p(-u2))``, ``theta = 2 pi u1``;
  the value is ``r cos(theta)``, and ``r sin(theta)`` is kept in the generator
  for the next single normal draw (a later ``randn(3)`` may start with it).
* **normal**, 16 elements or more (contiguous): first *all* elements are filled
  with uniform numbers in the dtype; then each run of 16 becomes 16 normals,
  element ``j < 8`` pairing with ``j + 8``: ``u1 = 1 - x[j]``, ``u2 = x[j + 8]``,
  ``r = sqrt(-2 log u1)``, ``theta = 2 pi u2``, ``x[j] = r cos theta``,
  ``x[j + 8] = r sin theta``. If the size is not a multiple of 16, the *last*
  16 elements are filled with 16 fresh uniforms and transformed again. The
  arithmetic is in the dtype; for float32 ``log``/``sin``/``cos`` are the
  Cephes float32 routines of PyTorch's AVX2 kernel (:mod:`glasstorch._cephes_float32`).
* **integers** in ``[low, high)``: ``low + draw % (high - low)``, the draw 64-bit
  when the range is at least ``2**28`` (whatever the dtype), else 32-bit.
  The whole int64 range (``random_(-2**63, None)``) takes the 64-bit draw
  itself, read as a signed integer.
* **random_()** with no bounds: ``draw % (largest + 1)``, ``largest`` the dtype's
  largest value (``2**24`` for float32, ``2**53`` for float64, 1 for bool), the
  draw 64-bit for int64 and float64 tensors and 32-bit for the others, whatever
  the range.
* **randperm(n)**: the identity, then for ``i`` from 0 to ``n - 2`` swap element
  ``i`` with element ``i + draw32 % (n - i)``. From ``n >= (2**32 - 1) // 20``
  PyTorch builds the permutation "inside-out" from 64-bit draws instead.
* **bernoulli** with probability ``p``: ``uniform < p``, the uniform float64
  for a number ``p`` or a float64 tensor of probabilities, float32 for a float32 one.
* **exponential** with rate ``lambd``: ``-1 / lambd * log1p(-u)``, ``u`` a uniform
  float64. ``multinomial`` without replacement (or of one sample) divides the
  weights by exponential draws (in the weights' dtype) and takes the largest;
  with replacement it draws a float64 uniform per sample and binary-searches
  the normalised running sum of each row.
* **cauchy**, **log_normal**, **geometric** (``cauchy_``, ``log_normal_``,
  ``geometric_``), one float64 draw per element, then rounded to the dtype:
  ``median + sigma * tan(pi * (u - 0.5))``; ``exp`` of a single normal (the
  Box-Muller pair, one element at a time, never the runs of 16);
  ``ceil(log(u) / log1p(-p))``.
"""

from __future__ import annotations

import math

import numpy as np

from glasstorch import _cephes_float32

#: PyTorch switches randperm to its 64-bit "inside-out" shuffle from this ``n`` on.
RANDPERM_LARGE = (2**32 - 1) // 20

#: The size from which PyTorch's normal kernel fills in runs of 16.
NORMAL_RUN = 16


def uniform(generator, count: int, dtype: np.dtype, low: float, high: float) -> np.ndarray:
    """``count`` uniform numbers in ``[low, high)`` of ``dtype`` (float32 or float64)."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        bits = generator.engine.uint64(count) & np.uint64(2**53 - 1)
        unit = bits.astype(np.float64) * 2.0**-53
    else:
        bits = generator.engine.uint32(count) & np.uint32(2**24 - 1)
        unit = bits.astype(np.float32) * np.float32(2.0**-24)
    low, high = dtype.type(low), dtype.type(high)
    return fused_multiply_add(unit, high - low, low, dtype)


def fused_multiply_add(a, b, c, dtype: np.dtype) -> np.ndarray:
    """``a * b + c`` rounded once to ``dtype``, as the FMA instruction computes it.

    PyTorch's CPU kernels are compiled for CPUs with FMA (AVX2, AVX-512), and
    the compiler fuses their ``x * scale + shift``; rounding the product first
    would differ in the last bit for about half the elements. For float32 the
    product of two float32 numbers is exact in float64. For float64 the
    product's rounding error ``e`` comes from Dekker's exact product (each
    factor split into two 26-bit halves) and the sum's from Knuth's two-sum,
    so ``a * b + c = s + t + e`` exactly and ``s + (t + e)`` rounds it.
    """
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (a, b, c))
    if np.dtype(dtype) == np.float32:
        return _cephes_float32.fma_float32(a, b, c)
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = product + c
    c_part = total - product
    sum_error = (product - (total - c_part)) + (c - c_part)
    return total + (sum_error + product_error)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: ``x = high + low``, each half with at most 26 significant bits."""
    scaled = x * float(2**27 + 1)
    high = scaled - (scaled - x)
    return high, x - high


def normal(generator, count: int, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """``count`` normal numbers of ``dtype``, as PyTorch's CPU kernel for a contiguous tensor."""
    if count >= NORMAL_RUN:
        return _normal_in_runs(generator, count, np.dtype(dtype), mean, std)
    values = np.array([_one_normal(generator) for _ in range(count)], dtype=np.float64)
    return fused_multiply_add(values, std, mean, np.float64).astype(dtype)


def _one_normal(generator) -> float:
    """One standard normal float64: the cached sine half of the last pair, else a new pair."""
    if generator.next_normal is not None:
        value, generator.next_normal = generator.next_normal, None
        return value
    u1, u2 = uniform(generator, 2, np.float64, 0.0, 1.0).tolist()
    radius = math.sqrt(-2.0 * math.log1p(-u2))
    theta = 2.0 * math.pi * u1
    generator.next_normal = radius * math.sin(theta)
    return radius * math.cos(theta)


def _normal_in_runs(generator, count: int, dtype: np.dtype, mean: float, std: float):
    """Uniforms for every element, then Box-Muller on each run of 16 (the last one redrawn)."""
    values = uniform(generator, count, dtype, 0.0, 1.0)
    full_runs = count // NORMAL_RUN
    runs = values[: full_runs * NORMAL_RUN].reshape(full_runs, NORMAL_RUN)
    runs[:] = _box_muller_16(runs, dtype, mean, std)
    if count % NORMAL_RUN:
        last = uniform(generator, NORMAL_RUN, dtype, 0.0, 1.0).reshape(1, NORMAL_RUN)
        values[-NORMAL_RUN:] = _box_muller_16(last, dtype, mean, std)[0]
    return values


def _box_muller_16(runs: np.ndarray, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """Each row of 16 uniforms made 16 normals, element j paired with j + 8, in ``dtype``.

    float64 uses the C library's ``log``, ``cos`` and ``sin`` (Python's ``math``
    calls the same ones), so its values are PyTorch's exactly. float32 uses
    the Cephes-derived float32 ``log`` and ``sincos`` of PyTorch's AVX2 kernel
    (:mod:`glasstorch._cephes_float32`), which its AVX-512 build runs too, so
    the values are those of PyTorch on any CPU with AVX2. Differs: PyTorch on a
    CPU without AVX2 (or ``ATEN_CPU_CAPABILITY=default``) calls the C library's
    float32 ``logf``/``cosf``/``sinf`` instead, with ``theta`` in float64.
    """
    u1 = 1 - runs[:, :8]
    u2 = runs[:, 8:]
    if dtype == np.float64:
        radius = np.array([math.sqrt(-2 * math.log(u)) for u in u1.ravel()]).reshape(u1.shape)
        theta = 2.0 * math.pi * u2
        cos = np.array([math.cos(t) for t in theta.ravel()]).reshape(theta.shape)
        sin = np.array([math.sin(t) for t in theta.ravel()]).reshape(theta.shape)
    else:
        radius = np.sqrt(np.float32(-2) * _cephes_float32.log(u1))
        theta = np.float32(2 * math.pi) * u2
        sin, cos = _cephes_float32.sincos(theta)
    halves = [fused_multiply_add(radius * trig, std, mean, dtype) for trig in (cos, sin)]
    return np.concatenate(halves, axis=1).astype(dtype)


#: PyTorch draws 64 bits per integer from this range on (keeping the modulo's
#: bias small), 32 below it.
WIDE_INTEGER_RANGE = 2**28


def integers(generator, count: int, low: int, high: int) -> np.ndarray:
    """``count`` integers in ``[low, high)`` as int64 values (cast by the caller)."""
    span = high - low
    if span == 2**64:  # the whole int64 range: the draw itself, as a signed integer
        return generator.engine.uint64(count).astype(np.int64)
    if span >= WIDE_INTEGER_RANGE:
        draws = generator.engine.uint64(count)
    else:
        draws = generator.engine.uint32(count).astype(np.uint64)
    offsets = draws % np.uint64(span)
    # low + offset wraps around as C's int64 arithmetic does.
    return (offsets + np.uint64(low % 2**64)).astype(np.int64)


def integers_up_to(generator, count: int, largest: int, draw_64_bits: bool) -> np.ndarray:
    """``count`` integers in ``[0, largest]`` as int64 values, for ``random_()``."""
    if draw_64_bits:
        draws = generator.engine.uint64(count)
    else:
        draws = generator.engine.uint32(count).astype(np.uint64)
    return (draws % np.uint64(largest + 1)).astype(np.int64)


def randperm(generator, n: int) -> np.ndarray:
    """A permutation of ``0 .. n-1`` as PyTorch's CPU kernel shuffles it (int64)."""
    if n < RANDPERM_LARGE:
        order = list(range(n))
        draws = generator.engine.uint32(max(n - 1, 0)).tolist()
        for i, draw in enumerate(draws):
            j = i + draw % (n - i)
            order[i], order[j] = order[j], order[i]
        return np.array(order, dtype=np.int64)
    # The inside-out shuffle: element i arrives at a random place z <= i,
    # and the one that stood there moves to the end.
    order = np.empty(n, dtype=np.int64)
    draws = generator.engine.uint64(n)
    for i in range(n):
        z = int(draws[i] % np.uint64(i + 1))
        order[i] = order[z]
        order[z] = i
    return order


def bernoulli(generator, probabilities: np.ndarray) -> np.ndarray:
    """``uniform < p`` for each probability (bool), the uniform in float64 unless the
    probabilities are float32, as PyTorch's kernel dispatches on their dtype."""
    dtype = np.float32 if probabilities.dtype == np.float32 else np.float64
    draws = uniform(generator, probabilities.size, dtype, 0.0, 1.0)
    return draws.reshape(probabilities.shape) < probabilities.astype(dtype)


def exponential(generator, count: int, dtype: np.dtype, lambd: float) -> np.ndarray:
    """``count`` exponential numbers of rate ``lambd``: ``-1 / lambd * log1p(-u)``."""
    draws = uniform(generator, count, np.float64, 0.0, 1.0).tolist()
    # The C library's log1p (Python's math calls it): NumPy's may differ in the last bit.
    return np.array([(-1.0 / lambd) * math.log1p(-u) for u in draws]).astype(dtype)


def multinomial_with_replacement(generator, rows: np.ndarray, num_samples: int) -> np.ndarray:
    """Category indices, ``num_samples`` per row of weights (rows: float32 or float64)."""
    samples = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for r, weights in enumerate(rows):
        running = np.cumsum(weights, dtype=weights.dtype)
        running = running / running[-1]
        running[-1] = 1
        points = uniform(generator, num_samples, np.float64, 0.0, 1.0)
        # The first category whose running total reaches the point.
        samples[r] = np.searchsorted(running.astype(np.float64), points, side="left")
    return samples


def cauchy(generator, count: int, median: float, sigma: float) -> np.ndarray:
    """``count`` Cauchy numbers as float64: ``median + sigma * tan(pi * (u - 0.5))``."""
    draws = uniform(generator, count, np.float64, 0.0, 1.0).tolist()
    tangents = np.array([math.tan(math.pi * (u - 0.5)) for u in draws])
    return fused_multiply_add(sigma, tangents, median, np.float64)


def log_normal(generator, count: int, mean: float, std: float) -> np.ndarray:
    """``count`` log-normal numbers as float64: ``exp`` of normals drawn one at a time."""
    normals = np.array([_one_normal(generator) for _ in range(count)], dtype=np.float64)
    return np.array([math.exp(v) for v in fused_multiply_add(normals, std, mean, np.float64)])


def geometric(generator, count: int, p: float) -> np.ndarray:
    """``count`` geometric numbers (trials up to the first success) as float64:
    ``ceil(log(u) / log1p(-p))``."""
    scale = math.log1p(-p)
    draws = uniform(generator, count, np.float64, 0.0, 1.0).tolist()
    # u = 0 would be log(0) = -inf: an infinite count, as in PyTorch.
    return np.array([float(math.ceil(math.log(u) / scale)) if u > 0 else math.inf for u in draws])
