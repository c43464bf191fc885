"""What runs inside a DataLoader worker process, and what it shares with the parent.

A worker is a loop (:func:`worker_loop`): take a task ``(task_id, indices)``
from its own index queue, fetch and collate the samples, and put the result
on the one result queue that all workers share. Results are pickled by the
worker's :class:`~glasstorch.multiprocessing.reductions.FdChannel`, so every
tensor in a batch travels as a shared-memory block plus a small handle, never
as pickled bytes; the blocks' file descriptors go to the parent through the
channel's socket.

A worker computes in one thread (``set_num_threads(1)`` when it starts, as in
PyTorch): ``num_workers`` processes already share the cores, and a worker
that split each kernel across every core would slow the others down. The
dataset or ``worker_init_fn`` may raise it again with
:func:`glasstorch.set_num_threads`.

Anything that goes wrong in the worker is caught and sent back as an
:class:`ExceptionWrapper`; the parent re-raises it with the worker's traceback
in the message. Besides tasks, the index queue carries two signals: ``None``
(exit) and :class:`_ResumeIteration` (a persistent worker starts a new epoch).
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

import glasstorch
from glasstorch.multiprocessing import shared_memory
from glasstorch.random import manual_seed
from glasstorch.utils.data.dataset import IterableDataset

#: How often (seconds) a waiting worker checks that its parent is still alive.
POLL_INTERVAL = 0.5


# --------------------------------------------------------------- worker info
class WorkerInfo:
    """Who this worker is: read it with :func:`get_worker_info` inside a worker.

    Attributes:
        id: this worker's number, ``0 .. num_workers - 1``.
        num_workers: how many workers the loader runs.
        seed: the seed this worker's generators were given (``base_seed + id``).
        dataset: this worker's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: object

    def __init__(self, **kwargs) -> None:
        for key, value in kwargs.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_keys", tuple(kwargs))

    def __setattr__(self, key, value) -> None:
        raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in self._keys)
        return f"{self.__class__.__name__}({fields})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo`, or ``None`` in the main process.

    Use it in an :class:`~glasstorch.utils.data.IterableDataset`'s ``__iter__`` to
    give each worker its own share of the samples, or in ``worker_init_fn`` to
    configure the worker's dataset copy.
    """
    return _worker_info


# ------------------------------------------------------------------- seeding
def numpy_seed(base_seed: int, worker_id: int) -> list[int]:
    """Four 32-bit words for ``numpy.random.seed``, mixed from the base seed and the id.

    NumPy's legacy generator takes 32-bit words. Mixing the full 64-bit seed
    through SplitMix64 keeps two seeds that differ only in their high bits
    from giving the same NumPy stream.
    """
    mask = 2**64 - 1
    state = (base_seed + worker_id * 0x9E3779B97F4A7C15) & mask
    words = []
    for _ in range(2):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        words += [z & 0xFFFFFFFF, z >> 32]
    return words


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed Python's ``random``, glasstorch's default generator and NumPy's global one.

    Returns the worker's seed, ``base_seed + worker_id``.
    """
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


# ---------------------------------------------------------------- exceptions
class KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError prints a traceback readably."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in one place, carried (pickled) to be re-raised in another.

    Args:
        exc_info: ``(type, value, traceback)``; the exception being handled by default.
        where: words for the message, such as ``"in DataLoader worker process 0"``.
    """

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise an exception of the original type whose message holds the original traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # the type needs other arguments: fall back to RuntimeError
            raise RuntimeError(msg) from None
        raise exception


# ------------------------------------------------------------------ fetchers
class _MapDatasetFetcher:
    """Fetch samples by index (or a batch of indices) and collate them."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, index):
        # -- solution: data/fetch
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            if getitems:
                data = getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)
        # -- end solution


class _IterableDatasetFetcher:
    """Take the next sample (or batch of samples) from an iterable dataset's iterator."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """The fetcher for ``dataset``'s kind (map-style or iterable-style)."""
    kind = _IterableDatasetFetcher if isinstance(dataset, IterableDataset) else _MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


# --------------------------------------------------------------- the loop
@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to a persistent worker at the start of a new epoch; echoed back as an ack."""


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted: the parent stops sending it tasks."""

    worker_id: int


def _send(result_queue, channel, worker_id: int, task_id, data) -> None:
    """Send ``(worker_id, task_id, data)``: tensors into shared memory, their blocks'
    descriptors through ``channel``, and ``(worker_id, count, payload)`` on the queue."""
    try:
        count, payload = channel.dumps((worker_id, task_id, data))
    except Exception:
        wrapped = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        count, payload = channel.dumps((worker_id, task_id, wrapped))
    result_queue.put((worker_id, count, payload))


def worker_loop(
    dataset,
    index_queue,
    result_queue,
    done_event,
    auto_collation: bool,
    collate_fn,
    drop_last: bool,
    base_seed: int,
    init_fn,
    worker_id: int,
    num_workers: int,
    block_prefix: str,
    parent_pid: int,
    channel,
) -> None:
    """The body of worker process ``worker_id`` (the target of its ``Process``)."""
    global _worker_info
    try:
        glasstorch.set_num_threads(1)  # the workers share the cores (see the module docstring)
        shared_memory.set_block_prefix(f"{block_prefix}w{worker_id}_")
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False

        while True:
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:  # orphaned: the parent is gone
                    break
                continue
            if task is None:  # the parent says: exit
                break
            if isinstance(task, _ResumeIteration):
                _send(result_queue, channel, worker_id, task, None)
                iteration_end = False
                if init_error is None:
                    fetcher = make_fetcher(dataset, auto_collation, collate_fn, drop_last)
                continue
            if done_event.is_set() or iteration_end:
                continue  # shutting down, or nothing left: ignore the task
            task_id, index = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as error:
                    if isinstance(error, StopIteration) and isinstance(dataset, IterableDataset):
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            _send(result_queue, channel, worker_id, task_id, data)
            del data, index, task
    except KeyboardInterrupt:
        pass  # the parent handles Ctrl-C; the worker just leaves
    if done_event.is_set():
        # Don't wait for the queue's feeder thread to flush results nobody will read.
        result_queue.cancel_join_thread()
        result_queue.close()


__all__ = ["WorkerInfo", "get_worker_info"]
