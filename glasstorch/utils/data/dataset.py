"""Datasets: where samples come from.

A **map-style** dataset (:class:`Dataset`) answers ``dataset[i]`` and usually
``len(dataset)``; a sampler decides which indices to ask for. An
**iterable-style** dataset (:class:`IterableDataset`) is a stream: the loader
just calls ``iter(dataset)``. Everything here is plain Python, the same on
every tier.
"""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

from glasstorch.ops.creation import randperm
from glasstorch.random import default_generator
from glasstorch.tensor import Tensor

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``).

    ``dataset[i]`` returns sample ``i``. A subclass may also implement
    ``__getitems__(indices)``, returning a list of samples, to fetch a whole
    batch at once. ``a + b`` concatenates two datasets (:class:`ConcatDataset`).

    Example::

        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 10
        ...     def __getitem__(self, i):
        ...         return i * i
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """An iterable-style dataset: subclasses implement ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset,
    so each would yield every sample; split the work inside ``__iter__`` with
    :func:`~glasstorch.utils.data.get_worker_info`::

        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, self.n, step))

    ``a + b`` chains two iterable datasets (:class:`ChainDataset`).
    """

    # No __iter__ here: it stays abstract (from Iterable), so IterableDataset()
    # itself cannot be instantiated, as in PyTorch.

    def __add__(self, other: Dataset[T_co]):
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the rows of some tensors: ``dataset[i] == (t[i] for t in tensors)``.

    Args:
        *tensors: tensors with the same size in dimension 0.

    Example::

        >>> ds = TensorDataset(torch.randn(100, 3), torch.arange(100))
        >>> x, y = ds[0]
    """

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class ConcatDataset(Dataset[T_co]):
    """Several map-style datasets one after the other.

    Args:
        datasets: the datasets (at least one; no iterable-style ones).

    Attributes:
        cumulative_sizes: ``cumulative_sizes[k]`` is the total length of the
            first ``k + 1`` datasets; a binary search in it finds the dataset
            that holds a given index.
    """

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """Running totals of the lengths of ``sequence``'s datasets."""
        totals, running = [], 0
        for dataset in sequence:
            running += len(dataset)
            totals.append(running)
        return totals

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable-style datasets one after the other (``a + b`` of iterable datasets)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(dataset)
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset: the whole dataset.
        indices: which of its samples this subset holds.
    """

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        """A batch of samples; uses the wrapped dataset's ``__getitems__`` when it has one."""
        wanted = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(wanted)
        return [self.dataset[i] for i in wanted]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence[int | float]) -> list[int]:
    """Turn fractions summing to 1 into lengths summing to ``n``; leave lengths alone."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(n * fraction))
        # Hand the remainder out one by one, round-robin from the first split.
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.",
                    stacklevel=3,
                )
        return sizes
    return list(lengths)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float], generator=None):
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s.

    Args:
        dataset: the dataset to split.
        lengths: the lengths of the splits, or fractions that sum to 1 (each
            split gets ``floor(len * fraction)`` samples, and the remainder is
            handed out one at a time from the first split on).
        generator: the generator for the permutation (default: the global one).

    Example::

        >>> train, test = random_split(range(10), [0.8, 0.2], generator=torch.Generator().manual_seed(0))
    """
    sizes = _split_lengths(len(dataset), lengths)
    if sum(sizes) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(sum(sizes), generator=generator or default_generator).tolist()
    subsets, start = [], 0
    for size in sizes:
        subsets.append(Subset(dataset, order[start : start + size]))
        start += size
    return subsets


__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]
