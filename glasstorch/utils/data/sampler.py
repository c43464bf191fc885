"""Samplers: the order in which a map-style dataset's indices are visited.

A sampler is any iterable of indices. :class:`BatchSampler` groups another
sampler's indices into lists, one list per batch. Random samplers draw from a
:class:`glasstorch.Generator`, so a seeded generator repeats the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

from glasstorch._dtype import float64
from glasstorch.ops.creation import as_tensor, randint, randperm
from glasstorch.ops.sampling import multinomial
from glasstorch.random import Generator, default_generator

T_co = TypeVar("T_co", covariant=True)


def draw_seed(generator: Generator | None = None) -> int:
    """A 63-bit seed from ``generator`` (or the global one), for a sampler or a loader.

    With the ``"pytorch"`` stream on the CPU this is the draw PyTorch takes,
    ``torch.empty((), dtype=torch.int64).random_()``: one 64-bit word modulo
    ``2**63``, so a seeded ``shuffle=True`` gives PyTorch's order.
    """
    gen = generator if generator is not None else default_generator
    if gen.uses_pytorch_stream:
        return int(gen.engine.uint64(1)[0]) % 2**63
    return int(randint(0, 2**63 - 1, (1,), generator=generator).item())


def _fresh_generator() -> Generator:
    """A generator seeded from the global one (what a sampler without ``generator`` uses)."""
    return Generator().manual_seed(draw_seed())


class Sampler(Generic[T_co]):
    """The base class: subclasses implement ``__iter__`` and usually ``__len__``."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``, always in that order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in random order.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw each index independently (repeats allowed) instead of
            permuting.
        num_samples: how many indices to yield (default ``len(data_source)``).
            Without replacement, more than the length walks several fresh
            permutations one after the other.
        generator: where the randomness comes from. Without one, each
            ``iter()`` seeds a new generator from the global generator.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        # -- solution: data/samplers
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            # Draw in chunks of 32 so a long pass does not hold one huge tensor.
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=generator).tolist()
            rest = self.num_samples % 32
            if rest:
                yield from randint(0, n, (rest,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            rest = self.num_samples % n
            if rest:
                yield from randperm(n, generator=generator).tolist()[:rest]
        # -- end solution

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in random order, without replacement.

    Args:
        indices: the indices to visit.
        generator: where the randomness comes from (default: the global generator).
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices from 0 to ``len(weights) - 1``, each drawn with probability
    proportional to its weight (e.g. to rebalance classes).

    The draws are :func:`glasstorch.multinomial` over the weights, with or
    without replacement.

    Args:
        weights: a 1-D sequence of non-negative weights (they need not sum to 1).
        num_samples: how many indices to draw (a positive int).
        replacement: draw with replacement (default); without it an index
            comes at most once, and ``num_samples`` must not exceed ``len(weights)``.
        generator: where the randomness comes from (default: the global generator).

    Example::

        >>> class_weight = [1.0, 9.0]          # the rare class 0 drawn as often as class 1
        >>> sampler = WeightedRandomSampler([class_weight[y] for y in labels], len(labels))
    """

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights_tensor = as_tensor(weights, dtype=float64)
        if weights_tensor.dim() != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        draws = multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from draws.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Group another sampler's indices into lists of ``batch_size``.

    Args:
        sampler: any iterable of indices.
        batch_size: the size of each list.
        drop_last: drop the last, shorter list instead of yielding it.

    Example::

        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        # -- solution: data/samplers
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch
        # -- end solution

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)


class _InfiniteConstantSampler(Sampler[None]):
    """``None`` forever: the sampler of an iterable-style dataset, whose samples need no index."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]
