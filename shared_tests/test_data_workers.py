"""DataLoader worker processes: shared-memory batches, errors, death, timeout, shutdown, seeding.

Every loader here has at most 2 workers and a ``timeout`` (or a deliberate
failure) so that a bug shows up as an error, not a hang. Datasets are defined
at module level so that the ``spawn`` start method can pickle them.
"""

from __future__ import annotations

import gc
import os
import pickle
import random
import signal
import time

import numpy as np
import pytest
from multiprocessing_children import MULTI_THREADED_PARENT, run_script

import glasstorch as gt
from glasstorch.multiprocessing import reductions
from glasstorch.multiprocessing import shared_memory as shm
from glasstorch.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

pytestmark = [
    pytest.mark.data,
    pytest.mark.cpu_only(
        "DataLoader worker processes produce CPU batches (a program moves them to the device)"
    ),
]

SAFETY = 20  # seconds: a loader that should never wait this long


class Rows(Dataset):
    """Sample i is a float32 row full of i, plus i as a Python int."""

    def __init__(self, n=10, width=3):
        self.n, self.width = n, width

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return gt.full((self.width,), float(i)), i


class Failing(Dataset):
    """Sample 5 misbehaves in the way ``mode`` says."""

    def __init__(self, mode, n=8):
        self.mode, self.n = mode, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 5:
            if self.mode == "raise":
                raise ValueError("sample 5 is broken")
            if self.mode == "keyerror":
                raise KeyError("missing")
            if self.mode == "exit":
                os._exit(1)
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == "sleep":
                time.sleep(5)
        return gt.tensor([i])


class Pids(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


class Slow(Dataset):
    """Index 0 is slow, so its batch (from worker 0) arrives after later ones."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.5)
        return i


class Info(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return info.id, info.num_workers, info.seed, type(info.dataset).__name__, _init_mark


class Augment(Dataset):
    """Random 'augmentations' from every generator a worker seeds."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return gt.rand(2).tolist() + [random.random(), float(np.random.rand())]


class Shard(IterableDataset):
    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


_init_mark = None


def mark_init(worker_id):
    global _init_mark
    _init_mark = f"init-{worker_id}"


def failing_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def epoch(loader):
    return [b[0].tolist() if isinstance(b, list) else b.tolist() for b in loader]


def leftover_blocks(prefix):
    return [name for name in os.listdir(shm.BLOCK_DIR) if name.startswith(prefix)]


def pool_of(iterator):
    """The worker processes and block prefix of a multi-process iterator."""
    return iterator.workers, iterator._pool.block_prefix


def assert_shut_down(workers, prefix):
    """Call after the last reference to the iterator is gone."""
    gc.collect()
    assert all(not w.is_alive() for w in workers)
    assert leftover_blocks(prefix) == []


# ----------------------------------------------------------- same batches
@pytest.mark.parametrize("shuffle", [False, True])
def test_two_workers_give_the_same_batches_as_none(shuffle):
    ds = TensorDataset(gt.randn(37, 5), gt.arange(37))

    def run(workers):
        loader = DataLoader(
            ds,
            batch_size=4,
            shuffle=shuffle,
            num_workers=workers,
            generator=gt.Generator().manual_seed(9),
            timeout=SAFETY if workers else 0,
        )
        return [(x.tolist(), y.tolist()) for x, y in loader]

    assert run(2) == run(0)


def test_batch_size_none_and_custom_collate_in_workers():
    loader = DataLoader(Rows(5), batch_size=None, num_workers=2, timeout=SAFETY)
    assert [(x.tolist(), i) for x, i in loader] == [([float(i)] * 3, i) for i in range(5)]
    loader = DataLoader(
        Rows(5),
        batch_size=2,
        num_workers=2,
        timeout=SAFETY,
        collate_fn=lambda batch: {"names": [f"s{i}" for _, i in batch], "n": len(batch)},
    )
    assert list(loader) == [
        {"names": ["s0", "s1"], "n": 2},
        {"names": ["s2", "s3"], "n": 2},
        {"names": ["s4"], "n": 1},
    ]


def test_spawn_start_method():
    loader = DataLoader(
        Rows(6), batch_size=4, num_workers=2, timeout=60, multiprocessing_context="spawn"
    )
    batches = [(x.tolist(), i.tolist()) for x, i in loader]
    assert batches == [(x.tolist(), i.tolist()) for x, i in DataLoader(Rows(6), batch_size=4)]


# ------------------------------------------------ kernels in forked workers
# The parent runs a multi-threaded product first (the fast tier's OpenMP pool
# then exists), then its forked workers compute products in __getitem__ and
# collate_fn: before the fast tier handed its pool back at fork, they hung.
# Workers compute in one thread; with ``worker_threads`` set, worker_init_fn
# raises the count again, and the workers' kernels use a pool of their own.
# run_script kills the program and its workers if they hang.
FORKED_WORKERS = (
    MULTI_THREADED_PARENT
    + """
import sys
from glasstorch.utils.data import DataLoader, Dataset

worker_threads = int(sys.argv[1])  # 0: leave the workers' count alone

class Products(Dataset):
    def __init__(self, a):
        self.a = a

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return (self.a @ self.a)[i], gt.get_num_threads()

def collate(samples):
    rows = gt.stack([row for row, _ in samples])
    return rows @ gt.eye(len(a)), [threads for _, threads in samples]

def init(worker_id):
    if worker_threads:
        gt.set_num_threads(worker_threads)

loader = DataLoader(Products(a), batch_size=8, num_workers=2, collate_fn=collate,
                    worker_init_fn=init, multiprocessing_context="fork", timeout=50)
rows, threads = [], set()
for batch, counts in loader:
    rows.append(batch)
    threads.update(counts)
got = gt.cat(rows)
print(json.dumps({
    "parent": parent,
    "close": bool(gt.allclose(got, expected[:16], rtol=1e-6, atol=1e-6)),
    "worker_threads": sorted(threads),
    "parent_threads_after": gt.get_num_threads(),
}))
"""
)


@pytest.mark.parametrize("worker_threads", [0, 2])
def test_forked_workers_compute_after_a_multi_threaded_parent(worker_threads):
    out = run_script(FORKED_WORKERS, args=(str(worker_threads),))
    assert out["parent"]["threads"] >= 2
    if out["parent"]["pool"] and out["parent"]["os_threads"] > 0:
        assert out["parent"]["os_threads"] >= 2  # the parent's product ran on the pool
    # The workers' numbers are the parent's (a one-thread product could round
    # differently only if a kernel split its sums by thread, hence allclose).
    assert out["close"]
    # Each worker computes in one thread, as in PyTorch, unless worker_init_fn says otherwise.
    assert out["worker_threads"] == [worker_threads or 1]
    assert out["parent_threads_after"] == out["parent"]["threads"]  # the parent's is kept


# ----------------------------------------------------------- shared memory
def test_worker_batches_live_in_shared_memory():
    loader = DataLoader(Rows(8, width=1000), batch_size=4, num_workers=2, timeout=SAFETY)
    for x, i in loader:
        assert shm.is_shared(x) and shm.is_shared(i)
        block = shm.shared_block_of(x)
        # The block has no name in any file system ...
        assert not os.path.exists(shm.block_path(block.name))
        # ... and the tensor's memory is its mapping, not a private copy.
        if os.path.exists("/proc/self/maps"):
            address = x.data_ptr()
            with open("/proc/self/maps") as maps:
                lines = [line for line in maps if block.name in line]
            assert lines, "the block is not mapped"
            start, end = (int(part, 16) for part in lines[0].split()[0].split("-"))
            assert start <= address < end
        assert x[:, 0].tolist() == [float(v) for v in i.tolist()]
    # Main-process batches are ordinary memory.
    x, _ = next(iter(DataLoader(Rows(2), batch_size=2)))
    assert not shm.is_shared(x)


def test_handles_are_small_and_round_trip():
    t = gt.from_numpy(np.random.default_rng(0).random((256, 1024), dtype=np.float32))  # 1 MiB
    expected = t.numpy().copy()
    payload = reductions.dumps({"x": t, "pair": (t.t(), 3)})
    assert len(payload) < 2000  # the bytes went to shared memory, not into the pickle
    out = pickle.loads(payload)
    assert np.array_equal(out["x"].numpy(), expected) and out["pair"][1] == 3
    assert out["pair"][0].stride() == (1, 1024)  # a transposed view keeps its strides
    assert np.array_equal(out["pair"][0].numpy(), expected.T)
    # Sending moved the sender's storage itself to shared memory, as in PyTorch.
    assert shm.is_shared(out["x"]) and shm.is_shared(t)


def test_blocks_never_have_a_file_name():
    shm.set_block_prefix("glasstorch_test_sweep_")
    try:
        t = gt.ones(4).share_memory_()
    finally:
        shm.set_block_prefix(f"glasstorch_{os.getpid()}_")
    assert shm.shared_block_of(t).name.startswith("glasstorch_test_sweep_")
    assert leftover_blocks("glasstorch_test_sweep_") == []
    assert pickle.loads(reductions.dumps(t)).tolist() == [1.0] * 4


def test_orphaned_block_files_are_swept():
    # A process killed inside create_block, where there is no memfd_create, leaves a file.
    with open(shm.block_path("glasstorch_test_sweep_0_abcd"), "wb") as f:
        f.write(b"\0" * 16)
    assert shm.unlink_blocks("glasstorch_test_sweep_") == 1
    assert leftover_blocks("glasstorch_test_sweep_") == []


# ----------------------------------------------------------- errors
def test_worker_exception_is_reraised_with_traceback():
    loader = DataLoader(Failing("raise"), batch_size=2, num_workers=2, timeout=SAFETY)
    with pytest.raises(ValueError) as info:
        list(loader)
    message = str(info.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\n")
    assert "Original Traceback (most recent call last):" in message
    assert 'raise ValueError("sample 5 is broken")' in message
    assert message.rstrip().endswith("ValueError: sample 5 is broken")


def test_worker_keyerror_keeps_its_type():
    loader = DataLoader(Failing("keyerror"), batch_size=2, num_workers=1, timeout=SAFETY)
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(loader)


def test_batches_before_the_error_are_delivered():
    loader = DataLoader(Failing("raise"), batch_size=2, num_workers=2, timeout=SAFETY)
    it = iter(loader)
    assert [next(it).tolist() for _ in range(2)] == [[[0], [1]], [[2], [3]]]
    with pytest.raises(ValueError):
        next(it)
    pool = pool_of(it)
    del it
    assert_shut_down(*pool)


def test_worker_init_fn_error_is_reraised():
    loader = DataLoader(
        Rows(4), batch_size=2, num_workers=1, worker_init_fn=failing_init, timeout=SAFETY
    )
    with pytest.raises(RuntimeError, match="init failed in 0"):
        list(loader)


@pytest.mark.parametrize(
    "mode, pattern",
    [
        ("exit", r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"),
        ("kill", r"DataLoader worker \(pid \d+\) is killed by signal: Killed"),
    ],
)
def test_dead_worker_raises_instead_of_hanging(mode, pattern):
    loader = DataLoader(Failing(mode), batch_size=2, num_workers=2, timeout=SAFETY)
    it = iter(loader)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=pattern):
        for _ in it:
            pass
    assert time.monotonic() - start < SAFETY  # detected by polling, not by the timeout
    pool = pool_of(it)
    del it
    assert_shut_down(*pool)


def test_timeout():
    loader = DataLoader(Failing("sleep"), batch_size=2, num_workers=1, timeout=0.5)
    it = iter(loader)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.5 seconds$"):
        for _ in it:
            pass
    pool = pool_of(it)
    del it
    assert_shut_down(*pool)


# ----------------------------------------------------------- order, epochs, shutdown
def test_out_of_order_arrivals_are_yielded_in_order():
    loader = DataLoader(Slow(), batch_size=1, num_workers=2, timeout=SAFETY)
    assert [b.tolist() for b in loader] == [[i] for i in range(8)]


def test_prefetch_keeps_tasks_in_flight_per_worker():
    loader = DataLoader(Rows(40), batch_size=1, num_workers=2, prefetch_factor=3, timeout=SAFETY)
    it = iter(loader)
    assert len(it._task_info) == 6  # prefetch_factor * num_workers, before any next()
    next(it)
    assert it._send_idx - it._rcvd_idx == 6  # one taken, one more handed out
    pool = pool_of(it)
    del it
    assert_shut_down(*pool)


def test_iterating_twice_starts_fresh_workers_and_stops_them():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, timeout=SAFETY)
    it = iter(loader)
    first = [b.tolist() for b in it]
    assert all(not w.is_alive() for w in it.workers)  # an exhausted epoch shuts down
    second = [b.tolist() for b in loader]
    assert len(first) == len(second) == 4
    assert set(sum(first, [])).isdisjoint(sum(second, []))  # new processes each epoch
    pool = pool_of(it)
    del it
    assert_shut_down(*pool)


def test_break_shuts_workers_down():
    loader = DataLoader(Rows(40), batch_size=2, num_workers=2, timeout=SAFETY)
    it = iter(loader)
    workers, prefix = it.workers, it._pool.block_prefix
    for _ in it:
        break
    assert all(w.is_alive() for w in workers)
    del it
    gc.collect()
    assert all(not w.is_alive() for w in workers)
    assert leftover_blocks(prefix) == []  # batches in flight were swept


def test_persistent_workers_are_reused_across_epochs():
    loader = DataLoader(
        Pids(), batch_size=2, num_workers=2, persistent_workers=True, timeout=SAFETY
    )
    epochs = [[b.tolist() for b in loader] for _ in range(2)]
    it = loader._iterator
    pids = {w.pid for w in it.workers}
    assert set(sum(epochs[0], [])) == set(sum(epochs[1], [])) == pids
    assert all(w.is_alive() for w in it.workers)
    # An epoch abandoned half-way does not leak into the next one.
    rows = DataLoader(
        Rows(12), batch_size=2, num_workers=2, persistent_workers=True, timeout=SAFETY
    )
    for _ in rows:
        break
    assert [i.tolist() for _, i in rows] == [[2 * k, 2 * k + 1] for k in range(6)]
    workers = it.workers + rows._iterator.workers
    del loader, rows, it
    gc.collect()
    assert all(not w.is_alive() for w in workers)


# ----------------------------------------------------------- worker info, seeding
def test_worker_info_and_init_fn():
    generator = gt.Generator().manual_seed(123)
    loader = DataLoader(
        Info(),
        batch_size=None,
        num_workers=2,
        worker_init_fn=mark_init,
        generator=generator,
        timeout=SAFETY,
    )
    rows = list(loader)
    base_seed = gt.randint(0, 2**63 - 1, (1,), generator=gt.Generator().manual_seed(123)).item()
    for k, (worker_id, num_workers, seed, dataset_name, mark) in enumerate(rows):
        assert worker_id == k % 2 and num_workers == 2  # round-robin over the workers
        assert seed == base_seed + worker_id
        assert dataset_name == "Info" and mark == f"init-{worker_id}"
    assert get_worker_info() is None


def test_worker_info_is_read_only():
    from glasstorch.utils.data import WorkerInfo

    info = WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        info.id = 3
    assert repr(info) == "WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)"


def test_seeded_generator_reproduces_shuffle_and_augmentations():
    def run(seed):
        loader = DataLoader(
            Augment(),
            batch_size=2,
            shuffle=True,
            num_workers=2,
            generator=gt.Generator().manual_seed(seed),
            timeout=SAFETY,
        )
        return [[column.tolist() for column in batch] for batch in loader]

    first = run(0)
    assert run(0) == first
    assert run(1) != first
    # The two workers draw different streams (their seeds differ).
    assert first[0] != first[1]


# ----------------------------------------------------------- iterable datasets
def test_iterable_dataset_sharded_by_worker_info():
    loader = DataLoader(Shard(11), batch_size=2, num_workers=2, timeout=SAFETY)
    seen = sum((b.tolist() for b in loader), [])
    assert sorted(seen) == list(range(11))


def test_iterable_dataset_without_sharding_repeats_per_worker():
    loader = DataLoader(Shard(5, shard=False), batch_size=2, num_workers=2, timeout=SAFETY)
    seen = sum((b.tolist() for b in loader), [])
    assert sorted(seen) == sorted(list(range(5)) * 2)


def test_iterable_dataset_drop_last_in_workers():
    loader = DataLoader(Shard(11), batch_size=2, num_workers=2, drop_last=True, timeout=SAFETY)
    batches = [b.tolist() for b in loader]
    assert all(len(b) == 2 for b in batches) and len(batches) == 5
