"""The random number generator: Philox 4x32-10 with a seed and an offset.

A counter-based generator has no hidden state beyond two numbers: the **seed**
(the Philox key) and the **offset** (the next unused 128-bit counter block).
Each random kernel call reads blocks ``offset, offset+1, ...`` and the generator
moves its offset past them, so the same seed gives the same numbers on every
tier. See :mod:`glasstorch.reference.random` for the algorithm itself.
"""

from __future__ import annotations

import time

from glasstorch.tensor import Tensor


class Generator:
    """A Philox generator: ``manual_seed`` sets the seed and resets the offset.

    Args:
        device: only ``"cpu"`` for now.
    """

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # PyTorch's default seed value, for familiarity
        self._offset = 0

    def manual_seed(self, seed: int) -> Generator:
        """Seed the generator (any integer; taken modulo 2**64) and start from block 0."""
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the clock, returning the new seed."""
        new_seed = time.time_ns() % 2**63
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self) -> int:
        """The seed last given to :meth:`manual_seed`."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state (seed and offset) as a uint8 tensor."""
        from glasstorch.ops.creation import tensor

        data = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        from glasstorch import _dtype

        return tensor(list(data), dtype=_dtype.uint8)

    def set_state(self, state: Tensor) -> Generator:
        """Restore a state from :meth:`get_state`."""
        data = bytes(state.tolist())
        if len(data) != 16:
            raise RuntimeError("Expected a generator state of 16 bytes")
        self._seed = int.from_bytes(data[:8], "little")
        self._offset = int.from_bytes(data[8:], "little")
        return self

    def take_blocks(self, count: int) -> tuple[int, int]:
        """Reserve ``count`` counter blocks; returns ``(seed, first block)``."""
        first = self._offset
        self._offset += count
        return self._seed, first


#: The generator used when none is passed.
default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator, so later random tensors repeat exactly."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the clock."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state."""
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    """Restore the default generator's state."""
    default_generator.set_state(state)
