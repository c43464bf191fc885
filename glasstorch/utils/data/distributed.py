"""``DistributedSampler``: each process of a data-parallel job reads its own share of a dataset.

In data-parallel training (:class:`glasstorch.nn.parallel.DistributedDataParallel`)
every process holds a copy of the model and trains on different examples; the
gradients are averaged across processes, so together they take one step on the
union of their batches. The sampler decides who reads what:

1. all processes put the indices in the same order (shuffled with the same
   seed, so no communication is needed to agree on it);
2. the list is padded, by repeating its first indices, to a multiple of the
   number of processes (or, with ``drop_last``, cut down to one), so that every
   process gets the same number of examples: a process that ran out early
   would leave the others waiting forever in the gradient all-reduce;
3. process ``rank`` takes every ``num_replicas``-th index starting at
   ``rank``, so the shares are disjoint (apart from the padding).

Call :meth:`DistributedSampler.set_epoch` at the start of each epoch: the
shuffle is seeded with ``seed + epoch``, so the order changes between epochs
while staying the same on every process.

The permutation comes from :func:`glasstorch.randperm` with a fresh
:class:`glasstorch.Generator`. Under the ``"pytorch"`` random stream
(``GLASSTORCH_RNG=pytorch``) that is PyTorch's permutation, so every process
reads exactly the indices it would read under PyTorch; under the default
``"philox"`` stream the shares have the same sizes and properties but another
order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from glasstorch.ops.creation import randperm
from glasstorch.random import Generator
from glasstorch.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_process_group(what: str) -> int:
    """The world size or this process's rank, from the default process group."""
    from glasstorch import distributed

    if not distributed.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return distributed.get_world_size() if what == "world_size" else distributed.get_rank()


class DistributedSampler(Sampler[int]):
    """The indices of a dataset that process ``rank`` of ``num_replicas`` reads.

    Args:
        dataset: a map-style dataset (only its length is used).
        num_replicas: how many processes share the dataset; by default the
            world size of the default process group.
        rank: this process's number among them, ``0 <= rank < num_replicas``;
            by default its rank in the default process group.
        shuffle: visit the indices in a random order, the same on every process.
        seed: the shuffle's seed; must be the same on every process.
        drop_last: drop the tail so that the shares divide evenly, instead of
            padding with repeated indices.

    Example::

        sampler = DistributedSampler(dataset)  # inside a launched process
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)  # a new order each epoch, shared by all ranks
            for batch in loader:
                ...

    Raises:
        ValueError: ``rank`` is outside ``[0, num_replicas - 1]``.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _from_process_group("world_size")
        if rank is None:
            rank = _from_process_group("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        size = len(dataset)
        if drop_last and size % num_replicas != 0:
            # The largest share that every process can fill from the dataset alone.
            self.num_samples = math.ceil((size - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        #: The length of the padded (or cut) list that the shares are taken from.
        self.total_size = self.num_samples * num_replicas

    def _ordered_indices(self) -> list[int]:
        """Every index of the dataset, in this epoch's order (the same on every process)."""
        if not self.shuffle:
            return list(range(len(self.dataset)))
        generator = Generator()
        generator.manual_seed(self.seed + self.epoch)
        return randperm(len(self.dataset), generator=generator).tolist()

    def __iter__(self) -> Iterator[int]:
        indices = self._ordered_indices()
        if self.drop_last:
            indices = indices[: self.total_size]
        else:  # pad by repeating from the start (more than once if the dataset is tiny)
            missing = self.total_size - len(indices)
            repeats = math.ceil(missing / len(indices)) if indices else 0
            indices += (indices * repeats)[:missing]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` for the next shuffle: ``seed + epoch`` seeds the permutation.

        Call it before each epoch's iteration, on every process with the same
        value; without it every epoch repeats the first one's order.
        """
        self.epoch = epoch
