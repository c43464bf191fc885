"""Random numbers: the Philox 4x32-10 generator and the random kernels built on it.

A *counter-based* generator has no hidden state that changes as it runs. It is a
pure function: a 128-bit **counter** and a 64-bit **key** go in, 128 random-looking
bits come out. Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC 2011; the generator PyTorch uses on CUDA) scrambles the counter
with ten rounds of multiplications and xors, so that neighbouring counters give
unrelated outputs.

glasstorch uses it like this:

* the **key** is the 64-bit seed given to ``manual_seed``;
* the **counter** is a block number. Block ``b`` yields four 32-bit words, and
  the frontend's generator remembers an ``offset``: the first block not used yet.

Because block ``b`` can be computed without computing blocks ``0 .. b-1``, every
element of a tensor can be drawn independently (one GPU thread per block), and
the reference tier, the C tier and CUDA all produce the same numbers for the
same seed and offset.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator

from glasstorch._kernels import Strided

from .strided import converter, memory, numel, positions

# ---------------------------------------------------------------------- Philox

MASK32 = 0xFFFFFFFF  # keeps the low 32 bits: Python ints never overflow, C ones wrap

#: The two round multipliers, chosen by Philox's authors for good mixing.
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57

#: The Weyl sequence increments added to the key after each round (the
#: fractional parts of the golden ratio and of sqrt(3), as 32-bit numbers).
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85

PHILOX_ROUNDS = 10


def mulhilo32(a: int, b: int) -> tuple[int, int]:
    """Multiply two 32-bit numbers into a 64-bit product; return its (high, low) halves."""
    product = a * b
    return product >> 32, product & MASK32


def philox_round(
    counter: tuple[int, int, int, int], key: tuple[int, int]
) -> tuple[int, int, int, int]:
    """One Philox round: two multiplications, then a shuffle with xors.

    Words 0 and 2 are multiplied by the two constants. The *low* halves of the
    products move to positions 1 and 3 unchanged; the *high* halves (the well
    mixed bits) are xor-ed with the other two counter words and with the key,
    and move to positions 0 and 2.
    """
    c0, c1, c2, c3 = counter
    hi0, lo0 = mulhilo32(PHILOX_M0, c0)
    hi1, lo1 = mulhilo32(PHILOX_M1, c2)
    return (hi1 ^ c1 ^ key[0], lo1, hi0 ^ c3 ^ key[1], lo0)


def bump_key(key: tuple[int, int]) -> tuple[int, int]:
    """The key for the next round: add the Weyl increments, modulo 2**32."""
    return (key[0] + PHILOX_W0) & MASK32, (key[1] + PHILOX_W1) & MASK32


def philox4x32_10(
    counter: tuple[int, int, int, int], key: tuple[int, int]
) -> tuple[int, int, int, int]:
    """Philox 4x32-10: scramble a 4-word counter under a 2-word key.

    Ten rounds; the first uses ``key`` as given, and the key is bumped before
    each of the nine others. All words are 32-bit unsigned integers.

    >>> [hex(w) for w in philox4x32_10((0, 0, 0, 0), (0, 0))]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    for round_number in range(PHILOX_ROUNDS):
        if round_number > 0:
            key = bump_key(key)
        counter = philox_round(counter, key)
    return counter


def seed_to_key(seed: int) -> tuple[int, int]:
    """Split a 64-bit seed into the two key words, least significant first.

    A negative seed is read as its 64-bit two's complement, as in C.
    """
    seed &= (1 << 64) - 1
    return seed & MASK32, (seed >> 32) & MASK32


def block_to_counter(block: int) -> tuple[int, int, int, int]:
    """Split a block number into the four 32-bit counter words, least significant first."""
    return (
        block & MASK32,
        (block >> 32) & MASK32,
        (block >> 64) & MASK32,
        (block >> 96) & MASK32,
    )


def random_block(seed: int, block: int) -> tuple[int, int, int, int]:
    """The four random 32-bit words of block number ``block`` under ``seed``."""
    return philox4x32_10(block_to_counter(block), seed_to_key(seed))


def blocks_needed(count: int, per_block: int) -> int:
    """How many blocks ``count`` values take at ``per_block`` values per block (rounded up)."""
    return (count + per_block - 1) // per_block


def random_words(seed: int, offset: int, count: int) -> Iterator[int]:
    """``count`` random 32-bit words: all four words of block ``offset``, then ``offset + 1``, ...

    Word ``i`` is word ``i % 4`` of block ``offset + i // 4``. One Philox call
    serves four values, which is why it pays to walk block by block.
    """
    key = seed_to_key(seed)
    for block in range(offset, offset + blocks_needed(count, 4)):
        words = philox4x32_10(block_to_counter(block), key)
        yield from words[: min(4, count)]  # the last block may be only partly used
        count -= 4


def random_uint64s(seed: int, offset: int, count: int) -> Iterator[int]:
    """``count`` random 64-bit numbers, two per block.

    Number ``i`` joins words ``2 * (i % 2)`` (low half) and ``2 * (i % 2) + 1``
    (high half) of block ``offset + i // 2``.
    """
    key = seed_to_key(seed)
    for block in range(offset, offset + blocks_needed(count, 2)):
        w0, w1, w2, w3 = philox4x32_10(block_to_counter(block), key)
        yield w0 + (w1 << 32)
        if count >= 2:  # the last block's second number may be unused
            yield w2 + (w3 << 32)
        count -= 2


# ------------------------------------------------------------ from bits to numbers


def unit_float32(word: int) -> float:
    """A 32-bit word as a float in ``[0, 1)`` with 24 random bits (all a float32 holds)."""
    return (word >> 8) * 2.0**-24


def unit_float64(word: int) -> float:
    """A 32-bit word as a float in ``[0, 1)`` with all 32 bits."""
    return word * 2.0**-32


def box_muller(x0: int, x1: int, mean: float, std: float) -> tuple[float, float]:
    """Two independent normal numbers from two random 32-bit words.

    The expressions are evaluated left to right exactly as the contract writes
    them (``mean + std * r * cos(2 pi u2)``), in float64, so that other tiers
    can match them operation for operation.
    """
    u1 = (x0 + 1) * 2.0**-32  # in (0, 1]: log(u1) is never -inf
    u2 = x1 * 2.0**-32  # in [0, 1)
    r = math.sqrt(-2.0 * math.log(u1))
    angle = 2.0 * math.pi * u2
    return mean + std * r * math.cos(angle), mean + std * r * math.sin(angle)


def random_normals(seed: int, offset: int, count: int, mean: float, std: float) -> Iterator[float]:
    """``count`` normal numbers, two per block, from words 0 and 1 of each block.

    Numbers ``2k`` and ``2k + 1`` come from block ``offset + k``; words 2 and 3
    are not used. With an odd ``count`` the last block's second number is dropped.
    """
    key = seed_to_key(seed)
    for block in range(offset, offset + blocks_needed(count, 2)):
        x0, x1, _, _ = philox4x32_10(block_to_counter(block), key)
        first, second = box_muller(x0, x1, mean, std)
        yield first
        if count >= 2:
            yield second
        count -= 2


FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32


def float32_below(value: float) -> float:
    """The largest float32 number strictly smaller than ``value``.

    Works on the bit pattern: for positive floats, the next float down has the
    bit pattern minus one; for negative floats, plus one.
    """
    if value > FLOAT32_MAX:  # too big to pack as a float32
        return FLOAT32_MAX
    if value <= -FLOAT32_MAX:
        return -math.inf
    rounded = struct.unpack("<f", struct.pack("<f", value))[0]
    if rounded < value:
        return rounded
    if rounded == 0.0:
        return -(2.0**-149)  # the smallest negative subnormal float32
    bits = struct.unpack("<I", struct.pack("<f", rounded))[0]
    bits += -1 if rounded > 0 else 1
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def float64_below(value: float) -> float:
    """The largest float64 number strictly smaller than ``value``."""
    return math.nextafter(value, -math.inf)


def _store(out: Strided, values: Iterator) -> None:
    """Write ``values`` into ``out`` in row-major order, converted to out's dtype."""
    buffer = memory(out)
    convert = converter(out.buffer.dtype)
    for position, value in zip(positions(out), values, strict=True):
        buffer[position] = convert(value)


# -------------------------------------------------------------------- kernels


class RandomKernels:
    """The random kernels of the reference tier (a mixin for ``ReferenceKernels``).

    Each kernel draws exactly the blocks the contract in
    :class:`glasstorch._kernels.Kernels` promises, so the frontend can advance
    its offset without knowing which tier ran.
    """

    def random_uniform(self, out: Strided, seed: int, offset: int, low: float, high: float) -> None:
        """Uniform numbers in ``[low, high)`` by scaling random bits; ``ceil(numel / 4)`` blocks.

        Idea: a random integer divided by a power of two is uniform in
        ``[0, 1)``; stretch and shift that interval onto ``[low, high)``.

        Element i takes word ``i % 4`` of block ``offset + i // 4``, turns it
        into ``u`` (:func:`unit_float32` for float32, :func:`unit_float64`
        otherwise), and stores ``low + u * (high - low)``, computed in float64.

        Keeping ``high`` out: rounding to out's dtype can push a value up onto
        ``high`` (in float32, ``1 + (1 - 2**-24)`` rounds to ``2.0``). When the
        stored value is ``>= high``, it is replaced by the largest number of
        out's dtype below ``high`` -- unless that would fall below ``low``
        (an interval narrower than one step of the dtype), where the rounded
        value is kept.
        """
        dtype = str(out.buffer.dtype)
        to_unit = unit_float32 if dtype == "float32" else unit_float64
        below_high = None
        if dtype == "float32":
            below_high = float32_below(high)
        elif dtype == "float64":
            below_high = float64_below(high)
        if below_high is not None and below_high < low:
            below_high = None  # no number of this dtype lies in [low, high)

        buffer = memory(out)
        convert = converter(out.buffer.dtype)
        span = high - low
        words = random_words(seed, offset, numel(out.shape))
        for position, word in zip(positions(out), words, strict=True):
            buffer[position] = convert(low + to_unit(word) * span)
            # Read back what the dtype kept: rounding may have reached ``high``.
            if below_high is not None and buffer[position] >= high:
                buffer[position] = below_high

    def random_normal(self, out: Strided, seed: int, offset: int, mean: float, std: float) -> None:
        """Normal numbers by the Box-Muller transform; ``ceil(numel / 2)`` blocks.

        Idea: two independent uniform numbers pick a point in the plane at
        angle ``2 pi u2`` and distance ``sqrt(-2 log u1)``; its two coordinates
        are then two independent standard normal numbers.

        Elements ``2k`` and ``2k + 1`` come from words 0 and 1 of block
        ``offset + k`` (words 2 and 3 are unused). ``u1`` is in ``(0, 1]`` so
        that its logarithm is finite. With an odd numel the last block's second
        value is simply not used. Computed in float64, then stored.
        """
        count = numel(out.shape)
        _store(out, random_normals(seed, offset, count, mean, std))

    def random_integers(self, out: Strided, seed: int, offset: int, low: int, high: int) -> None:
        """Integers in ``[low, high)`` from 64 random bits each; ``ceil(numel / 2)`` blocks.

        Idea: the remainder of a random 64-bit number divided by ``high - low``
        lands in ``0 .. high - low - 1``. (It favours small remainders very
        slightly, by at most ``(high - low) / 2**64``: negligible here.)

        Element i joins words ``2 * (i % 2)`` and ``2 * (i % 2) + 1`` of block
        ``offset + i // 2`` into ``x = lo + (hi << 32)``; the value is
        ``low + x % (high - low)``.
        """
        span = high - low
        draws = random_uint64s(seed, offset, numel(out.shape))
        _store(out, (low + x % span for x in draws))

    def randperm(self, out: Strided, seed: int, offset: int) -> None:
        """A random permutation of ``0 .. n-1`` by the Fisher-Yates shuffle; ``ceil(n / 2)`` blocks.

        Idea: walk from the last slot to the second, and swap each slot ``i``
        with a slot ``j`` picked uniformly from ``0 .. i`` (possibly itself).
        Every one of the ``n!`` orders is then equally likely.

        The ``k``-th swap (``i = n - 1 - k``) uses ``j = x % (i + 1)``, where
        ``x`` is the 64-bit number :meth:`random_integers` would draw for
        element ``k``. The shuffle runs on a Python list, which is then
        written into ``out`` (a 1-D int64 view).
        """
        n = out.shape[0]
        permutation = list(range(n))
        draws = random_uint64s(seed, offset, max(n - 1, 0))
        for i, x in zip(range(n - 1, 0, -1), draws, strict=True):
            j = x % (i + 1)
            permutation[i], permutation[j] = permutation[j], permutation[i]
        _store(out, iter(permutation))
