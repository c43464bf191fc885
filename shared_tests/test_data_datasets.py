"""Datasets: TensorDataset, Subset, ConcatDataset, ChainDataset, random_split."""

from __future__ import annotations

import warnings

import pytest
from oracle import needs_torch, torch

import glasstorch as gt
from glasstorch.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)

# Every test makes its tensors on the device under test (conftest: --device): the
# factory functions allocate there.
pytestmark = [pytest.mark.data, pytest.mark.usefixtures("default_device")]


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, values):
        self.values = values

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


def test_dataset_base_requires_getitem():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement"):
        Dataset()[0]


def test_tensor_dataset_rows_are_views():
    x = gt.arange(12).reshape(4, 3)
    y = gt.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6, 7, 8] and yi.item() == 0
    assert xi.untyped_storage() is x.untyped_storage()  # a view, no copy
    assert ds.tensors[0] is x


@needs_torch
def test_tensor_dataset_size_mismatch_like_torch():
    with pytest.raises(AssertionError) as ours:
        TensorDataset(gt.zeros(3, 2), gt.zeros(4))
    with pytest.raises(AssertionError) as theirs:
        torch.utils.data.TensorDataset(torch.zeros(3, 2), torch.zeros(4))
    assert str(ours.value) == str(theirs.value) == "Size mismatch between tensors"


def test_subset_maps_indices():
    sub = Subset(Squares(10), [7, 2, 5])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [49, 4, 25]
    assert sub.__getitems__([2, 0]) == [25, 49]


def test_concat_dataset_indexing_and_add():
    a, b = Squares(3), Squares(4)
    cat = ConcatDataset([a, b])
    assert len(cat) == 7 and cat.cumulative_sizes == [3, 7]
    assert [cat[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert cat[-1] == 9 and cat[-7] == 0
    with pytest.raises(
        ValueError, match="absolute value of index should not exceed dataset length"
    ):
        cat[-8]
    added = a + b
    assert isinstance(added, ConcatDataset) and len(added) == 7


@needs_torch
def test_concat_dataset_errors_like_torch():
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter([1])

    for args in ([], [Stream([1])]):
        with pytest.raises(AssertionError) as ours:
            ConcatDataset(args)
        theirs_args = [] if not args else [TorchStream()]
        with pytest.raises(AssertionError) as theirs:
            torch.utils.data.ConcatDataset(theirs_args)
        assert str(ours.value) == str(theirs.value)


def test_iterable_dataset_is_abstract():
    with pytest.raises(TypeError):
        IterableDataset()


def test_chain_dataset():
    chained = Stream([1, 2]) + Stream([3])
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [1, 2, 3] and len(chained) == 3
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_random_split_lengths_cover_and_reproduce():
    ds = Squares(10)
    parts = random_split(ds, [3, 7], generator=gt.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [3, 7]
    indices = parts[0].indices + parts[1].indices
    assert sorted(indices) == list(range(10))
    again = random_split(ds, [3, 7], generator=gt.Generator().manual_seed(1))
    assert again[0].indices == parts[0].indices
    other = random_split(ds, [3, 7], generator=gt.Generator().manual_seed(2))
    assert other[0].indices + other[1].indices != indices
    # The global generator is used when none is given.
    gt.manual_seed(5)
    first = random_split(ds, [5, 5])[0].indices
    gt.manual_seed(5)
    assert random_split(ds, [5, 5])[0].indices == first


@needs_torch
@pytest.mark.parametrize(
    "n, fractions",
    [(10, [0.5, 0.5]), (11, [0.3, 0.3, 0.4]), (7, [0.1, 0.2, 0.7]), (5, [1 / 3] * 3)],
)
def test_random_split_fractions_like_torch(n, fractions):
    ours = random_split(Squares(n), fractions, generator=gt.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(
        range(n), fractions, generator=torch.Generator().manual_seed(0)
    )
    assert [len(p) for p in ours] == [len(p) for p in theirs]


@needs_torch
@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.2, -0.2], [2, 9]])
def test_random_split_errors_like_torch(lengths):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.random_split(range(10), lengths)
    with pytest.raises(type(theirs.value)) as ours:
        random_split(Squares(10), lengths)
    assert str(ours.value) == str(theirs.value)


def test_random_split_warns_on_empty_split():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = random_split(Squares(2), [0.1, 0.1, 0.8])
    assert [len(p) for p in parts] == [1, 0, 1]  # floor: 0, 0, 1; remainder 1 to the first
    assert any("Length of split at index" in str(w.message) for w in caught)
