"""The random number generators: Philox 4x32-10, and PyTorch's CPU stream by choice.

Two *streams* are on offer, chosen with the environment variable
``GLASSTORCH_RNG=philox|pytorch`` (read at import) or :func:`set_stream`:

* ``"philox"`` (the default): the same numbers on every tier and device, so a
  run can be compared step by step between the reference tier, the fast tier
  and CUDA. Not PyTorch's numbers.
* ``"pytorch"``: on the CPU, PyTorch's own stream, a Mersenne Twister seeded as
  PyTorch seeds it, with PyTorch's transformations
  (:mod:`glasstorch._pytorch_cpu_random`), so ``manual_seed(s)`` then
  ``rand``/``randn``/``randint``/``randperm``/``bernoulli``/dropout/
  ``multinomial`` give PyTorch's CPU numbers. Tensors on CUDA still draw from
  Philox (PyTorch's CUDA stream is another generator again).

A counter-based generator has no hidden state beyond two numbers: the **seed**
(the Philox key) and the **offset** (the next unused 128-bit counter block).
Each random kernel call reads blocks ``offset, offset+1, ...`` and the generator
moves its offset past them, so the same seed gives the same numbers on every
tier. See :mod:`glasstorch.reference.random` for the algorithm itself.
"""

from __future__ import annotations

import os
import time

from glasstorch._mt19937 import MT19937
from glasstorch.tensor import Tensor

#: The streams :func:`set_stream` accepts.
STREAMS = ("philox", "pytorch")


def _stream_from_environment() -> str:
    stream = os.environ.get("GLASSTORCH_RNG", "philox").strip().lower() or "philox"
    if stream not in STREAMS:
        raise ValueError(f"GLASSTORCH_RNG must be 'philox' or 'pytorch', got {stream!r}")
    return stream


_stream = _stream_from_environment()


class Generator:
    """A random generator: ``manual_seed`` sets the seed and starts the stream over.

    It keeps a Philox seed and offset (used on every device with the
    ``"philox"`` stream, and on CUDA with either) and, with the ``"pytorch"``
    stream, a Mersenne Twister for CPU tensors.

    Args:
        device: only ``"cpu"`` for now.
        stream: ``"philox"`` or ``"pytorch"``; by default the one :func:`set_stream`
            (or ``GLASSTORCH_RNG``) chose.
    """

    def __init__(self, device="cpu", *, stream: str | None = None):
        self.device = device
        self.stream = _check_stream(stream if stream is not None else _stream)
        self.manual_seed(67280421310721)  # PyTorch's default seed value

    @property
    def uses_pytorch_stream(self) -> bool:
        """Whether CPU tensors draw from PyTorch's stream (the Mersenne Twister)."""
        return self.stream == "pytorch"

    def manual_seed(self, seed: int) -> Generator:
        """Seed the generator (any integer; taken modulo 2**64) and start from block 0."""
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed = seed % 2**64
        self._offset = 0
        #: The Mersenne Twister of the "pytorch" stream, and the second normal
        #: of the last Box-Muller pair, kept for the next single draw.
        self.engine = MT19937(self._seed) if self.uses_pytorch_stream else None
        self.next_normal = None
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
        """The generator's state (seed and offset; with the "pytorch" stream also the
        Mersenne Twister's words and the kept normal) as a uint8 tensor."""
        import struct

        from glasstorch import _dtype
        from glasstorch.ops.creation import tensor

        data = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        if self.engine is not None:
            kept = self.next_normal
            data += self.engine.get_state() + struct.pack("<?d", kept is not None, kept or 0.0)

        return tensor(list(data), dtype=_dtype.uint8)

    def set_state(self, state: Tensor) -> Generator:
        """Restore a state from :meth:`get_state`."""
        import struct

        data = bytes(state.tolist())
        expected = 16 if self.engine is None else 16 + 4 * 625 + 9
        if len(data) != expected:
            raise RuntimeError(f"Expected a generator state of {expected} bytes")
        self._seed = int.from_bytes(data[:8], "little")
        self._offset = int.from_bytes(data[8:16], "little")
        if self.engine is not None:
            self.engine.set_state(data[16 : 16 + 4 * 625])
            valid, kept = struct.unpack("<?d", data[16 + 4 * 625 :])
            self.next_normal = kept if valid else None
        return self

    def take_blocks(self, count: int) -> tuple[int, int]:
        """Reserve ``count`` counter blocks; returns ``(seed, first block)``."""
        first = self._offset
        self._offset += count
        return self._seed, first


def _check_stream(stream: str) -> str:
    if stream not in STREAMS:
        raise ValueError(f"stream must be 'philox' or 'pytorch', got {stream!r}")
    return stream


#: The generator used when none is passed.
default_generator = Generator()


def set_stream(stream: str) -> None:
    """Choose the random stream: ``"philox"`` (every tier and device alike) or
    ``"pytorch"`` (PyTorch's CPU numbers).

    The default generator switches and starts over from its seed; generators
    made later use the new stream. ``GLASSTORCH_RNG`` sets the same at import.

    Example:
        >>> glasstorch.random.set_stream("pytorch")
        >>> glasstorch.manual_seed(0); glasstorch.randn(3)  # PyTorch's numbers
        tensor([ 1.5410, -0.2934, -2.1788])
    """
    global _stream
    _stream = _check_stream(stream)
    default_generator.stream = _stream
    default_generator.manual_seed(default_generator.initial_seed())


def get_stream() -> str:
    """The stream new generators use: ``"philox"`` or ``"pytorch"``."""
    return _stream


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
