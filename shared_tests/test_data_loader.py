"""DataLoader in the main process: batching, shuffling, lengths and argument checks."""

from __future__ import annotations

import warnings

import pytest
from oracle import assert_close, needs_torch, torch

import glasstorch as gt
from glasstorch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)

pytestmark = pytest.mark.data

#: Most tests here check the loader's bookkeeping (order, batching, arguments) on CPU
#: batches of Python values; the device tests pin batches and move them to the device.
HOST_BATCHES = pytest.mark.cpu_only(
    "the loader's order, batching and argument checks on CPU batches of Python values"
)


class Range(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class Batched(Dataset):
    """A dataset that fetches whole batches through ``__getitems__``."""

    def __init__(self):
        self.calls = []

    def __len__(self):
        return 6

    def __getitem__(self, i):
        raise AssertionError("__getitems__ should be used")

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [i * 10 for i in indices]


def values(loader):
    return [b.tolist() for b in loader]


@HOST_BATCHES
def test_sequential_batches_and_drop_last():
    ds = TensorDataset(gt.arange(10))
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=4)] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9],
    ]
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(loader) == 2 and len(DataLoader(ds, batch_size=4)) == 3


@HOST_BATCHES
def test_default_batch_size_is_one():
    batches = list(DataLoader(list(range(3))))
    assert [b.tolist() for b in batches] == [[0], [1], [2]]


@HOST_BATCHES
def test_batch_size_none_converts_without_batching():
    batches = list(DataLoader([1, 2, 3], batch_size=None))
    assert batches == [1, 2, 3]
    import numpy as np

    arrays = list(DataLoader([np.arange(2)], batch_size=None))
    assert isinstance(arrays[0], gt.Tensor) and arrays[0].tolist() == [0, 1]


@HOST_BATCHES
def test_shuffle_is_reproducible_with_generator():
    ds = list(range(50))

    def epoch(seed):
        loader = DataLoader(
            ds, batch_size=7, shuffle=True, generator=gt.Generator().manual_seed(seed)
        )
        return sum(values(loader), [])

    order = epoch(0)
    assert sorted(order) == ds and order != ds
    assert epoch(0) == order
    assert epoch(1) != order


@HOST_BATCHES
def test_shuffle_changes_every_epoch_and_follows_global_seed():
    ds = list(range(30))
    loader = DataLoader(ds, batch_size=30, shuffle=True)
    gt.manual_seed(4)
    first, second = values(loader), values(loader)
    assert first != second
    gt.manual_seed(4)
    assert values(loader) == first


@HOST_BATCHES
def test_custom_sampler_batch_sampler_and_collate_fn():
    ds = list(range(10))
    assert values(DataLoader(ds, batch_size=3, sampler=[9, 8, 7, 6])) == [[9, 8, 7], [6]]
    batch_sampler = BatchSampler(SequentialSampler(ds), 4, drop_last=False)
    assert values(DataLoader(ds, batch_sampler=batch_sampler)) == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9],
    ]
    loader = DataLoader(ds, batch_size=5, collate_fn=lambda batch: sum(batch))
    assert list(loader) == [10, 35]


@HOST_BATCHES
def test_getitems_is_used_for_batches():
    ds = Batched()
    assert values(DataLoader(ds, batch_size=4)) == [[0, 10, 20, 30], [40, 50]]
    assert ds.calls == [[0, 1, 2, 3], [4, 5]]


@HOST_BATCHES
def test_iterable_dataset_in_main_process():
    loader = DataLoader(Range(7), batch_size=3)
    assert values(loader) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    assert values(DataLoader(Range(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Range(7), batch_size=3, drop_last=True)) == 2
    assert list(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]


@HOST_BATCHES
def test_iterating_twice_gives_two_epochs():
    loader = DataLoader(list(range(5)), batch_size=2)
    assert values(loader) == values(loader) == [[0, 1], [2, 3], [4]]


@HOST_BATCHES
def test_worker_info_is_none_in_main_process():
    assert get_worker_info() is None


def test_pin_memory_pins_batches_that_move_to_the_device(device):
    x = gt.arange(12.0, device="cpu").reshape(6, 2)
    y = gt.arange(6, device="cpu")
    loader = DataLoader(TensorDataset(x, y), batch_size=4, pin_memory=True)
    if gt.cuda.is_available():  # PyTorch pins every tensor of each batch
        batches = list(loader)
        assert all(xb.is_pinned() and yb.is_pinned() for xb, yb in batches)
    else:  # no accelerator: PyTorch warns and leaves the batches as they are
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = list(loader)
        assert any("pin_memory" in str(w.message) for w in caught)
        assert values(DataLoader([1, 2], batch_size=2, pin_memory=True)) == [[1, 2]]
    assert [yb.tolist() for _, yb in batches] == [[0, 1, 2, 3], [4, 5]]
    samples = [{"x": gt.ones(2, device="cpu"), "pair": (k, "name")} for k in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = next(iter(DataLoader(samples, batch_size=2, pin_memory=True)))
    pinning = gt.cuda.is_available()  # tensors inside containers are pinned too
    assert first["x"].is_pinned() == pinning and first["pair"][0].is_pinned() == pinning
    assert first["pair"][0].tolist() == [0, 1] and first["pair"][1] == ["name", "name"]
    for xb, yb in batches:
        xd, yd = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        assert xd.device.type == device and yd.device.type == device
        assert_close(xd * 2, (xb * 2).cpu().numpy())
        assert gt.equal(xd.cpu(), x[yb])


def test_batches_from_worker_processes_are_pinned_and_move_to_the_device(device):
    x = gt.arange(20.0, device="cpu").reshape(10, 2)
    loader = DataLoader(TensorDataset(x), batch_size=4, num_workers=2, pin_memory=True)
    pinning = gt.cuda.is_available()  # without a device: a warning, batches left as they are
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (xb,) in loader:
            assert xb.is_pinned() == pinning  # pinned in the main process, after the worker
            seen.append(xb.to(device, non_blocking=True).sum(1))
    assert all(s.device.type == device for s in seen)
    assert gt.cat([s.cpu() for s in seen]).tolist() == x.sum(1).tolist()


def test_tensor_dataset_batches_match_manual_stack(device):
    x = gt.randn(9, 4, device=device)
    y = gt.arange(9, device=device)
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
        assert xb.device.type == device and yb.device.type == device  # collated in place
        assert gt.equal(xb, x[yb])
        assert xb.shape[1] == 4 and yb.dtype == gt.int64


ARGUMENT_ERRORS = [
    {"num_workers": -1},
    {"timeout": -1},
    {"prefetch_factor": 2},
    {"num_workers": 1, "prefetch_factor": -1},
    {"persistent_workers": True},
    {"shuffle": True, "sampler": [0, 1]},
    {"batch_size": 2, "batch_sampler": [[0, 1]]},
    {"shuffle": True, "batch_sampler": [[0, 1]]},
    {"sampler": [0], "batch_sampler": [[0, 1]]},
    {"drop_last": True, "batch_sampler": [[0, 1]]},
    {"batch_size": None, "drop_last": True},
    {"batch_size": 0},
    {"multiprocessing_context": "spawn"},
    {"num_workers": 1, "multiprocessing_context": "no-such-method"},
    {"num_workers": 1, "multiprocessing_context": 3},
]


@HOST_BATCHES
@needs_torch
@pytest.mark.parametrize("kwargs", ARGUMENT_ERRORS, ids=[str(k) for k in ARGUMENT_ERRORS])
def test_argument_errors_like_torch(kwargs):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        DataLoader(list(range(4)), **kwargs)
    assert str(ours.value) == str(theirs.value)


@HOST_BATCHES
@needs_torch
@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_argument_errors_like_torch(kwargs):
    class TorchRange(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(TorchRange(), **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader(Range(3), **kwargs)
    assert str(ours.value) == str(theirs.value)


@HOST_BATCHES
@needs_torch
@pytest.mark.parametrize("attr", ["batch_size", "sampler", "dataset", "drop_last"])
def test_attributes_frozen_after_init_like_torch(attr):
    theirs_loader = torch.utils.data.DataLoader(list(range(4)))
    with pytest.raises(ValueError) as theirs:
        setattr(theirs_loader, attr, None)
    with pytest.raises(ValueError) as ours:
        setattr(DataLoader(list(range(4))), attr, None)
    assert str(ours.value) == str(theirs.value)


@HOST_BATCHES
@needs_torch
@pytest.mark.parametrize(
    "n, kwargs",
    [
        (10, {"batch_size": 3}),
        (10, {"batch_size": 3, "drop_last": True}),
        (9, {"batch_size": 3}),
        (10, {"batch_size": None}),
        (0, {"batch_size": 4}),
        (10, {"batch_size": 4, "shuffle": True}),
    ],
)
def test_len_like_torch(n, kwargs):
    ours = DataLoader(list(range(n)), **kwargs)
    theirs = torch.utils.data.DataLoader(list(range(n)), **kwargs)
    assert len(ours) == len(theirs)
    assert len(values(ours) if kwargs.get("batch_size") else list(ours)) == len(ours)


@HOST_BATCHES
@needs_torch
def test_timeout_without_workers_like_torch():
    with pytest.raises(AssertionError) as theirs:
        iter(torch.utils.data.DataLoader([1], timeout=1))
    with pytest.raises(AssertionError) as ours:
        iter(DataLoader([1], timeout=1))
    assert str(ours.value) == str(theirs.value)
