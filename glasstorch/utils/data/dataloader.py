"""DataLoader: batches from a dataset, in this process or in worker processes.

One ``iter(loader)`` is one epoch. The pieces, in the order data flows:

sampler -> batch sampler -> (indices) -> fetcher: dataset[i] + collate_fn -> batch

With ``num_workers=0`` the fetcher runs right here (:class:`_SingleProcessDataLoaderIter`).
With ``num_workers > 0`` (:class:`_MultiProcessingDataLoaderIter`) the parent
keeps the sampler and hands out tasks, each ``(task_id, indices)``, to the
workers round-robin through one index queue per worker, keeping
``prefetch_factor`` tasks in flight per worker. Workers put their batches on
one shared result queue, as shared-memory tensors (see
:mod:`glasstorch.multiprocessing`); each worker has a socket of its
own (an ``FdChannel``) on which the file descriptors of its batches' blocks
travel, so no block ever has a name that a killed process could leave behind.
Batches can arrive out of order; the parent buffers early ones and yields in
task order.

Waiting is never blind: while the result queue is empty the parent checks,
several times a second, whether a worker has died and whether ``timeout`` has
passed, so a crashed worker gives an error, not a hang.

Start methods: workers start with the default :mod:`multiprocessing` start
method (``fork`` on Linux up to Python 3.13), or the one named by
``multiprocessing_context``. Everything a worker needs (dataset, collate_fn,
worker_init_fn) is passed as process arguments, so ``spawn`` and
``forkserver`` work too, provided those objects can be pickled (defined at
module level, not in ``__main__`` of an interactive session).
"""

from __future__ import annotations

import collections.abc
import copy
import multiprocessing
import os
import queue
import secrets
import signal
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from glasstorch.multiprocessing import reductions, shared_memory
from glasstorch.utils.data.collate import default_collate, default_convert
from glasstorch.utils.data.dataset import Dataset, IterableDataset
from glasstorch.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    _InfiniteConstantSampler,
    draw_seed,
)
from glasstorch.utils.data.worker import (
    ExceptionWrapper,
    _IterableDatasetStopIteration,
    _ResumeIteration,
    make_fetcher,
    worker_loop,
)

#: How often (seconds) the parent checks worker health while waiting for a batch.
STATUS_CHECK_INTERVAL = 0.1
#: How long (seconds) shutdown waits for a worker to exit before terminating it.
JOIN_TIMEOUT = 0.5


class DataLoader:
    """Iterate over a dataset in batches, optionally with worker processes.

    Args:
        dataset: a map-style :class:`Dataset` (anything with ``__getitem__`` and
            ``__len__``) or an :class:`IterableDataset`.
        batch_size: samples per batch (default 1); ``None`` turns batching off,
            and each sample is only converted (:func:`default_convert`).
        shuffle: visit samples in a new random order every epoch.
        sampler: the order of indices (any iterable); excludes ``shuffle``.
        batch_sampler: yields whole lists of indices; excludes ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers: worker processes to load with; 0 loads in this process.
        collate_fn: merges a list of samples into a batch (default
            :func:`default_collate`).
        pin_memory: when a CUDA device is available, copy each batch's tensors
            (those inside mappings, tuples and lists too) to pinned (page-locked)
            host memory, so that moving them with ``non_blocking=True`` can overlap
            with computation; without one, a warning says so and batches stay as
            they are.
        drop_last: drop the last, incomplete batch.
        timeout: seconds to wait for a worker's batch before raising (0: forever).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker,
            after seeding and before loading.
        multiprocessing_context: a start method name (``"fork"``, ``"spawn"``,
            ``"forkserver"``) or a context; default: multiprocessing's default.
        generator: where shuffling and the workers' base seed come from.
        prefetch_factor: batches in flight per worker (default 2 with workers).
        persistent_workers: keep the workers alive between epochs.

    Seeding: every ``iter(loader)`` draws a ``base_seed`` from ``generator`` (or
    the global generator). Worker ``i`` seeds glasstorch's default generator and
    Python's :mod:`random` with ``base_seed + i``, and NumPy's global generator
    with words derived from both, so a seeded ``generator`` repeats the same
    order and the same random augmentations.

    Example::

        >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=2)
        >>> for xb, yb in loader:
        ...     loss = loss_fn(model(xb), yb)
    """

    dataset: Dataset
    batch_size: int | None
    num_workers: int
    drop_last: bool
    timeout: float
    sampler: Sampler | Iterable
    prefetch_factor: int | None
    _iterator: Any | None
    __initialized = False

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._is_iterable = True
            if shuffle not in {False, None}:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        else:
            self._is_iterable = False
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    # ------------------------------------------------------------ attributes
    @property
    def multiprocessing_context(self):
        """The :mod:`multiprocessing` context workers start from (``None``: the default)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method in "
                        f"{methods!r}, but got multiprocessing_context={context!r}"
                    )
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a string "
                    f"specifying the start method, but got multiprocessing_context={context}"
                )
        self.__multiprocessing_context = context

    def __setattr__(self, attr, value) -> None:
        if self.__initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the iterator draws from: lists of indices when batching, else single indices."""
        return self.batch_sampler if self._auto_collation else self.sampler

    # ------------------------------------------------------------- iteration
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        """A new epoch. With ``persistent_workers`` the same workers serve every epoch."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        """Batches per epoch (for an iterable dataset: computed from ``len(dataset)``)."""
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length //= self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """What every loader iterator shares: the sampler iterator and the base seed."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._pin_memory = loader.pin_memory and _accelerator_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, then device "
                "pinned memory won't be used.",
                stacklevel=3,
            )
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_seed(loader.generator)  # once per iterator
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        if self._pin_memory:
            data = _pin_batch(data)
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


def _accelerator_available() -> bool:
    """Whether a CUDA device is there to pin batches for (``glasstorch.cuda.is_available``)."""
    from glasstorch import cuda

    return cuda.is_available()


def _pin_batch(data: Any) -> Any:
    """``data`` with every tensor in it replaced by a pinned copy (``Tensor.pin_memory``).

    What ``pin_memory=True`` does to each batch when a CUDA device is available, so
    that ``batch.to("cuda", non_blocking=True)`` copies from page-locked memory.
    Mappings, named tuples, tuples and lists are rebuilt around their pinned
    contents (a mutable mapping and a named tuple keep their type); other values
    pass unchanged.
    """
    if hasattr(data, "pin_memory") and not isinstance(data, type):
        return data.pin_memory()  # a tensor, or a custom batch that pins itself
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {key: _pin_batch(value) for key, value in data.items()}
        if isinstance(data, collections.abc.MutableMapping):
            result = copy.copy(data)
            result.update(pinned)
            return result
        return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a named tuple
        return type(data)(*(_pin_batch(item) for item in data))
    if isinstance(data, tuple):
        return tuple(_pin_batch(item) for item in data)
    if isinstance(data, list):
        return [_pin_batch(item) for item in data]
    return data


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Load in this process: fetch and collate on each ``next()``."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = make_fetcher(
            self._dataset, self._auto_collation, self._collate_fn, self._drop_last
        )

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


class _WorkerPool:
    """The processes and queues of one multi-process iterator.

    Kept apart from the iterator so that a :func:`weakref.finalize` can shut the
    pool down when the iterator is garbage collected (or at interpreter exit)
    without keeping the iterator alive.
    """

    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        self.block_prefix = f"glasstorch_{os.getpid()}_{secrets.token_hex(4)}_"
        self.workers: list = []
        self.index_queues: list = []
        self.channels: list = []  # this end of each worker's FdChannel
        self.result_queue = None
        self.done_event = None
        self.shut_down = False


def _shutdown_pool(pool: _WorkerPool) -> None:
    """Stop the workers, close the queues and remove orphaned shared-memory blocks.

    Safe to call twice, and a no-op in a forked child that inherited the pool.
    """
    if pool.shut_down or os.getpid() != pool.owner_pid:
        return
    pool.shut_down = True
    if pool.done_event is not None:
        pool.done_event.set()
    for index_queue in pool.index_queues:
        try:
            index_queue.put(None)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + JOIN_TIMEOUT
    for worker in pool.workers:
        worker.join(timeout=max(0.0, deadline - time.monotonic()))
    for worker in pool.workers:
        if worker.is_alive():  # busy in a slow __getitem__, or stuck: stop it
            worker.terminate()
            worker.join(timeout=JOIN_TIMEOUT)
            if worker.is_alive():
                worker.kill()
                worker.join()
    for q in [*pool.index_queues, pool.result_queue]:
        if q is not None:
            q.cancel_join_thread()
            q.close()
    for channel in pool.channels:
        channel.close()  # descriptors still in flight are freed with the socket
    # Batches sent but never received are the only blocks left; their senders are gone.
    shared_memory.unlink_blocks(pool.block_prefix)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Load in worker processes; see the module docstring for the protocol."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        context = loader.multiprocessing_context or multiprocessing.get_context()
        pool = self._pool = _WorkerPool()
        pool.result_queue = context.Queue()
        pool.done_event = context.Event()
        # Registered before any process starts, so an error half-way still cleans up.
        self._finalizer = weakref.finalize(self, _shutdown_pool, pool)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            channel, worker_channel = reductions.FdChannel.pair()
            pool.channels.append(channel)
            worker = context.Process(
                target=worker_loop,
                args=(
                    self._dataset,
                    index_queue,
                    pool.result_queue,
                    pool.done_event,
                    self._auto_collation,
                    self._collate_fn,
                    self._drop_last,
                    self._base_seed,
                    loader.worker_init_fn,
                    worker_id,
                    self._num_workers,
                    pool.block_prefix,
                    os.getpid(),
                    worker_channel,
                ),
                name=f"glasstorch-dataloader-worker-{worker_id}",
                daemon=True,
            )
            try:
                worker.start()
            finally:
                worker_channel.close()  # the worker has its own copy now
            pool.index_queues.append(index_queue)
            pool.workers.append(worker)
        self._reset(loader, first_iter=True)

    # ------------------------------------------------------------- bookkeeping
    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task id to hand out
        self._rcvd_idx = 0  # the next task id to yield
        # task id -> (worker_id,) while in flight, (worker_id, data) once arrived early
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._next_worker = 0
        if not first_iter:
            # Persistent workers: tell each to start over, and drop what the last
            # (possibly abandoned) epoch left in flight until every worker has answered.
            for index_queue in self._pool.index_queues:
                index_queue.put(_ResumeIteration())
            waiting = self._num_workers
            while waiting:
                _, task_id, _ = self._get_data()
                if isinstance(task_id, _ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        """Hand the next task to the next active worker, round-robin."""
        # -- solution: data/workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = self._next_worker
            self._next_worker = (self._next_worker + 1) % self._num_workers
            if self._workers_status[worker_id]:
                break
        else:
            return  # no active worker left (every iterable shard is exhausted)
        self._pool.index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1
        # -- end solution

    def _check_workers(self) -> None:
        """Raise if a worker that should be alive has died."""
        dead = [
            worker
            for worker_id, worker in enumerate(self._pool.workers)
            if self._workers_status[worker_id] and not worker.is_alive()
        ]
        if not dead:
            return
        self._shutdown_workers()
        for worker in dead:
            if worker.exitcode is not None and worker.exitcode < 0:
                name = signal.Signals(-worker.exitcode).name
                description = signal.strsignal(-worker.exitcode) or name
                raise RuntimeError(
                    f"DataLoader worker (pid {worker.pid}) is killed by signal: {description}. "
                )
        pids = ", ".join(str(worker.pid) for worker in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _get_data(self):
        """The next ``(worker_id, task_id, data)`` from the result queue, watching the workers."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                item = self._pool.result_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers()
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown_workers()
                    raise RuntimeError(
                        f"DataLoader timed out after {self._timeout} seconds"
                    ) from None
                continue
            worker_id, count, payload = item
            # Tensors come back over shared memory, their blocks through the worker's channel.
            return self._pool.channels[worker_id].loads(count, payload)

    def _next_data(self):
        # -- solution: data/workers
        while True:
            # Skip tasks whose worker has stopped (its iterable shard ended) and has no data.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_status[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:  # arrived earlier, out of order
                del self._task_info[self._rcvd_idx]
                return self._process_data(info[1])

            worker_id, task_id, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._mark_worker_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task_id != self._rcvd_idx:
                self._task_info[task_id] += (data,)  # keep it until its turn
                continue
            del self._task_info[task_id]
            return self._process_data(data)
        # -- end solution

    def _process_data(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_unavailable(self, worker_id: int) -> None:
        """Send no more tasks to ``worker_id``; a non-persistent worker is told to exit."""
        self._workers_status[worker_id] = False
        if not self._persistent_workers:
            self._pool.index_queues[worker_id].put(None)

    def _shutdown_workers(self) -> None:
        self._finalizer()

    @property
    def workers(self) -> list:
        """The worker processes (for inspection and tests)."""
        return list(self._pool.workers)


__all__ = ["DataLoader"]
