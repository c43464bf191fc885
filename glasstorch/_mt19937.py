"""The Mersenne Twister (MT19937): the engine behind PyTorch's CPU random numbers.

MT19937 (Matsumoto and Nishimura, 1998) keeps 624 32-bit words of state. It
hands them out one at a time, each passed through a *tempering* step (four
xor-shifts that spread its bits), and when all 624 are used it *twists* the
whole state into 624 new words. Its period is 2**19937 - 1, hence the name.

PyTorch seeds it as C++'s ``std::mt19937`` does, from the low 32 bits of the
seed (so seeds that differ only above bit 31 give the same numbers), and makes
a 64-bit number from two draws, the first one as the high half.

Unlike Philox, the state changes as it runs: number ``k`` can only be reached
by drawing numbers ``0 .. k-1`` first. That is why this stream runs on the
CPU only, one number after the other.

The twist and the tempering are written on NumPy arrays of words, a whole
state at a time, so that drawing a million numbers takes milliseconds; each
step says which word it reads.
"""

from __future__ import annotations

import numpy as np

#: Words of state, and the distance to the word each twist step mixes in.
STATE_WORDS = 624
SHIFT = 397

UPPER_BIT = np.uint32(0x80000000)  # the top bit of word i ...
LOWER_BITS = np.uint32(0x7FFFFFFF)  # ... joined to the 31 low bits of word i + 1
TWIST_MATRIX = np.uint32(0x9908B0DF)  # xor-ed in when that joined word is odd

#: The initialisation multiplier of Knuth's linear congruential seeding.
SEED_MULTIPLIER = 1812433253


def seeded_state(seed: int) -> np.ndarray:
    """The 624 words after seeding with ``seed`` (its low 32 bits, as ``std::mt19937``)."""
    words = [seed & 0xFFFFFFFF]
    for j in range(1, STATE_WORDS):
        previous = words[-1]
        words.append((SEED_MULTIPLIER * (previous ^ (previous >> 30)) + j) & 0xFFFFFFFF)
    return np.array(words, dtype=np.uint32)


def twist(state: np.ndarray) -> None:
    """Replace the 624 words of ``state`` by the next 624, in place.

    Word ``i`` becomes ``state[i + 397] ^ (y >> 1) ^ (TWIST_MATRIX if y is odd)``
    with ``y`` the top bit of word ``i`` and the low 31 bits of word ``i + 1``
    (indices modulo 624). Done word by word, step ``i`` reads word ``i + 397``
    *after* it was replaced whenever ``i + 397 >= 624``. So the words are
    replaced in runs no longer than 227 (= 624 - 397): each run reads only
    words that earlier runs have finished, exactly as the one-by-one loop.
    """
    runs = ((0, 227), (227, 454), (454, 623), (623, 624))
    for start, stop in runs:
        i = np.arange(start, stop)
        y = (state[i] & UPPER_BIT) | (state[(i + 1) % STATE_WORDS] & LOWER_BITS)
        odd = (y & np.uint32(1)).astype(bool)
        mixed = state[(i + SHIFT) % STATE_WORDS] ^ (y >> np.uint32(1))
        state[i] = np.where(odd, mixed ^ TWIST_MATRIX, mixed)


def temper(words: np.ndarray) -> np.ndarray:
    """The output of each state word: four xor-shifts that spread its bits."""
    y = words ^ (words >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    return y ^ (y >> np.uint32(18))


class MT19937:
    """A Mersenne Twister: ``uint32(n)`` and ``uint64(n)`` draw the next numbers.

    Args:
        seed: any integer; only its low 32 bits matter.
    """

    def __init__(self, seed: int):
        self.state = seeded_state(seed)
        self.position = STATE_WORDS  # all words used: the first draw twists

    def uint32(self, count: int) -> np.ndarray:
        """The next ``count`` 32-bit numbers, as a uint32 array."""
        pieces = []
        while count > 0:
            if self.position == STATE_WORDS:
                twist(self.state)
                self.position = 0
            take = min(count, STATE_WORDS - self.position)
            pieces.append(temper(self.state[self.position : self.position + take]))
            self.position += take
            count -= take
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint32)

    def uint64(self, count: int) -> np.ndarray:
        """The next ``count`` 64-bit numbers: two 32-bit draws each, the first as the high half."""
        pairs = self.uint32(2 * count).astype(np.uint64).reshape(count, 2)
        return (pairs[:, 0] << np.uint64(32)) | pairs[:, 1]

    def get_state(self) -> bytes:
        """The 624 words and the position, as bytes (for :meth:`set_state`)."""
        return self.state.astype("<u4").tobytes() + self.position.to_bytes(4, "little")

    def set_state(self, data: bytes) -> None:
        """Restore what :meth:`get_state` returned."""
        self.state = np.frombuffer(data[: 4 * STATE_WORDS], dtype="<u4").astype(np.uint32)
        self.position = int.from_bytes(data[4 * STATE_WORDS : 4 * STATE_WORDS + 4], "little")
