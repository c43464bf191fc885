"""Samplers: orders, lengths, drop_last, replacement, generators, errors."""

from __future__ import annotations

import pytest
from oracle import needs_torch, torch

import glasstorch as gt
from glasstorch.utils.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)

pytestmark = [
    pytest.mark.data,
    pytest.mark.cpu_only(
        "samplers yield Python int indices drawn from the CPU generator; no tensor data"
    ),
]


def test_sampler_base_is_abstract():
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_sequential_sampler():
    sampler = SequentialSampler(range(5))
    assert list(sampler) == [0, 1, 2, 3, 4] and len(sampler) == 5


def test_random_sampler_is_a_permutation_and_reproducible():
    data = range(20)
    sampler = RandomSampler(data, generator=gt.Generator().manual_seed(3))
    order = list(sampler)
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert len(sampler) == 20
    assert list(RandomSampler(data, generator=gt.Generator().manual_seed(3))) == order
    # A sampler's generator moves on, so the next epoch is a new order.
    assert list(sampler) != order


def test_random_sampler_without_generator_follows_global_seed():
    gt.manual_seed(11)
    first = list(RandomSampler(range(30)))
    gt.manual_seed(11)
    assert list(RandomSampler(range(30))) == first


def test_random_sampler_num_samples_without_replacement_walks_permutations():
    order = list(RandomSampler(range(5), num_samples=12, generator=gt.Generator().manual_seed(0)))
    assert len(order) == 12
    assert sorted(order[:5]) == sorted(order[5:10]) == list(range(5))
    assert len(set(order[10:])) == 2


@pytest.mark.parametrize("num_samples", [1, 31, 32, 33, 100])
def test_random_sampler_with_replacement(num_samples):
    sampler = RandomSampler(
        range(4), replacement=True, num_samples=num_samples, generator=gt.Generator().manual_seed(0)
    )
    order = list(sampler)
    assert len(order) == len(sampler) == num_samples
    assert all(0 <= i < 4 for i in order)
    if num_samples == 100:
        assert len(set(order)) == 4 and len(set(order)) < len(order)  # repeats happen


@needs_torch
@pytest.mark.parametrize(
    "kwargs",
    [
        {"replacement": 1},
        {"num_samples": 0},
        {"num_samples": -3},
        {"num_samples": 2.5},
    ],
)
def test_random_sampler_errors_like_torch(kwargs):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.RandomSampler(range(5), **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        RandomSampler(range(5), **kwargs)
    assert str(ours.value) == str(theirs.value)


@needs_torch
def test_random_sampler_empty_dataset_like_torch():
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.RandomSampler([])
    with pytest.raises(ValueError) as ours:
        RandomSampler([])
    assert str(ours.value) == str(theirs.value)


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    sampler = SubsetRandomSampler(indices, generator=gt.Generator().manual_seed(0))
    order = list(sampler)
    assert sorted(order) == indices and len(sampler) == 4
    again = SubsetRandomSampler(indices, generator=gt.Generator().manual_seed(0))
    assert list(again) == order


@needs_torch
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_like_torch(n, batch_size, drop_last):
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    theirs = torch.utils.data.BatchSampler(
        torch.utils.data.SequentialSampler(range(n)), batch_size, drop_last
    )
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_batch_sampler_over_any_iterable():
    assert list(BatchSampler([5, 6, 7], 2, False)) == [[5, 6], [7]]


@needs_torch
@pytest.mark.parametrize(
    "batch_size, drop_last", [(0, False), (-1, False), (True, False), (2.0, False), (2, 1)]
)
def test_batch_sampler_errors_like_torch(batch_size, drop_last):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.BatchSampler(range(5), batch_size, drop_last)
    with pytest.raises(ValueError) as ours:
        BatchSampler(range(5), batch_size, drop_last)
    assert str(ours.value) == str(theirs.value)


@pytest.fixture
def pytorch_stream():
    """The "pytorch" random stream for one test, then Philox again."""
    gt.random.set_stream("pytorch")
    yield
    gt.random.set_stream("philox")


def _shuffled_epochs(library, seed: int, n: int, epochs: int = 3) -> list[list[int]]:
    library.manual_seed(seed)
    loader = library.utils.data.DataLoader(library.arange(n), batch_size=4, shuffle=True)
    orders = [[int(i) for batch in loader for i in batch] for _ in range(epochs)]
    return orders + [library.rand(2).tolist()]  # and where the global stream stands after


@pytest.mark.usefixtures("pytorch_stream")
def test_seeded_shuffle_repeats_and_each_epoch_reshuffles_with_the_pytorch_stream():
    first, again = _shuffled_epochs(gt, 5, 12), _shuffled_epochs(gt, 5, 12)
    assert first == again
    assert all(sorted(order) == list(range(12)) for order in first[:3])
    assert first[0] != first[1]


@needs_torch
@pytest.mark.usefixtures("pytorch_stream")
@pytest.mark.parametrize("seed, n", [(0, 10), (1, 12), (2**40 + 7, 33)])
def test_seeded_shuffle_gives_pytorchs_order_with_the_pytorch_stream(seed, n):
    # A loader's iterator and a RandomSampler each draw one 63-bit seed as PyTorch
    # does (an int64 random_()), so the epochs and the stream after them match.
    assert _shuffled_epochs(gt, seed, n) == _shuffled_epochs(torch, seed, n)


# ------------------------------------------------------------ DistributedSampler
def _shares(sampler_class, n: int, replicas: int, **kwargs) -> list[list[int]]:
    """Every rank's indices for one epoch (``num_replicas`` and ``rank`` given explicitly)."""
    return [
        list(sampler_class(range(n), num_replicas=replicas, rank=rank, **kwargs))
        for rank in range(replicas)
    ]


def test_distributed_sampler_pads_to_equal_shares_by_repeating_the_first_indices():
    shares = _shares(DistributedSampler, 10, 4, shuffle=False)
    # 10 indices padded to 12 with 0 and 1, then dealt out: rank r takes r, r + 4, r + 8.
    assert shares == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    assert len(DistributedSampler(range(10), num_replicas=4, rank=2, shuffle=False)) == 3


def test_distributed_sampler_pads_a_dataset_smaller_than_the_world():
    assert _shares(DistributedSampler, 2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]


def test_distributed_sampler_drop_last_cuts_the_tail():
    shares = _shares(DistributedSampler, 10, 4, shuffle=False, drop_last=True)
    assert shares == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert len(DistributedSampler(range(10), 4, 0, drop_last=True)) == 2
    # A dataset that divides evenly loses nothing.
    assert _shares(DistributedSampler, 8, 4, shuffle=False, drop_last=True)[3] == [3, 7]


def test_distributed_sampler_shuffle_is_shared_by_ranks_and_changes_with_set_epoch():
    shares = _shares(DistributedSampler, 20, 2, seed=7)
    assert sorted(shares[0] + shares[1]) == list(range(20))  # disjoint, everything once
    assert shares == _shares(DistributedSampler, 20, 2, seed=7)  # no state between calls
    sampler = DistributedSampler(range(20), num_replicas=2, rank=0, seed=7)
    epoch0 = list(sampler)
    assert list(sampler) == epoch0  # without set_epoch every epoch repeats
    sampler.set_epoch(1)
    assert list(sampler) != epoch0 and sampler.epoch == 1
    # seed + epoch is what counts: seed 6 at epoch 1 is seed 7 at epoch 0.
    other = DistributedSampler(range(20), num_replicas=2, rank=0, seed=6)
    other.set_epoch(1)
    assert list(other) == epoch0


def test_distributed_sampler_does_not_touch_the_global_stream():
    gt.manual_seed(0)
    expected = gt.rand(3).tolist()
    gt.manual_seed(0)
    list(DistributedSampler(range(10), num_replicas=2, rank=1))
    assert gt.rand(3).tolist() == expected


@needs_torch
@pytest.mark.usefixtures("pytorch_stream")
@pytest.mark.parametrize(
    "n, replicas, kwargs",
    [
        (10, 4, {}),
        (103, 3, {"seed": 11}),
        (103, 3, {"seed": 11, "drop_last": True}),
        (7, 2, {"shuffle": False}),
        (3, 8, {"seed": 2}),
    ],
)
def test_distributed_sampler_gives_pytorchs_shares_with_the_pytorch_stream(n, replicas, kwargs):
    theirs = torch.utils.data.distributed.DistributedSampler
    for epoch in (0, 3):
        ours_all, theirs_all = [], []
        for rank in range(replicas):
            mine = DistributedSampler(range(n), replicas, rank, **kwargs)
            their = theirs(range(n), replicas, rank, **kwargs)
            mine.set_epoch(epoch)
            their.set_epoch(epoch)
            assert len(mine) == len(their)
            ours_all.append(list(mine))
            theirs_all.append(list(their))
        assert ours_all == theirs_all


@needs_torch
@pytest.mark.parametrize("rank, replicas", [(2, 2), (-1, 2), (5, 3)])
def test_distributed_sampler_rejects_a_bad_rank_as_pytorch(rank, replicas):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.distributed.DistributedSampler(range(4), replicas, rank)
    with pytest.raises(ValueError) as ours:
        DistributedSampler(range(4), replicas, rank)
    assert str(ours.value) == str(theirs.value)


def test_distributed_sampler_feeds_a_dataloader():
    data = gt.utils.data.TensorDataset(gt.arange(10))
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=False)
        loader = gt.utils.data.DataLoader(data, batch_size=2, sampler=sampler)
        seen.append([batch[0].tolist() for batch in loader])
    assert seen == [[[0, 2], [4, 6], [8]], [[1, 3], [5, 7], [9]]]
