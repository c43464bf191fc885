"""``torch.multiprocessing``: Python's :mod:`multiprocessing`, with tensors shared, not copied.

Everything :mod:`multiprocessing` offers is here under the same names
(``Process``, ``Queue``, ``SimpleQueue``, ``Pool``, ``Pipe``, ``get_context``,
``set_start_method``, ...), and one thing changes: a tensor sent to another
process (through a queue, a pipe, a pool's task, or a new process's
arguments) is not pickled. Its storage moves into shared memory, and the
receiver gets a tensor over the *same* memory, with the same shape, strides
and offset. A write in one process is seen by the others: that is what
Hogwild training needs (section 5.4 of the PyTorch paper), and what makes a
DataLoader's workers cheap (the loader uses the same machinery).

- :meth:`Tensor.share_memory_` moves a tensor's storage to shared memory
  ahead of time, :meth:`Tensor.is_shared` tells whether it is there, and
  :meth:`nn.Module.share_memory` does it for every parameter and buffer.
- :func:`spawn` starts ``nprocs`` processes running ``fn(i, *args)`` and
  re-raises a child's error in the parent.
- A child started by ``fork`` (this module's, :mod:`multiprocessing`'s or a
  plain :func:`os.fork`) keeps its parent's thread count
  (:func:`glasstorch.get_num_threads`) and may change it; its kernels run as
  in the parent, even after the parent ran multi-threaded ones (the fast tier
  hands its OpenMP pool back before each fork, so the child does not wait for
  threads that fork did not copy). DataLoader workers use one thread, as in
  PyTorch.
- :mod:`~glasstorch.multiprocessing.shared_memory` has the blocks,
  :mod:`~glasstorch.multiprocessing.reductions` the pickling rules and
  :mod:`~glasstorch.multiprocessing.queues` the queues that check items in ``put``.

Differences from PyTorch:

- One sharing strategy, ``"file_descriptor"`` (each shared storage keeps an
  anonymous memory file's descriptor open; the descriptor is what travels).
  ``"file_system"`` is not offered: glasstorch's blocks never have a name in
  a file system, so none can be leaked.
- Only CPU tensors are shared; CUDA tensors (which PyTorch shares through
  CUDA IPC) are refused with a ``TypeError``. ``Queue`` and ``JoinableQueue``
  (this module's, and those of the contexts its :func:`get_context` returns)
  check an item in ``put``, so the error is raised there; a queue of
  :mod:`multiprocessing` itself pickles later, in a feeder thread, which
  prints the error and drops the item while the consumer waits for it (see
  :mod:`~glasstorch.multiprocessing.queues`).
- Like PyTorch, sending a tensor moves its storage to shared memory in the
  *sender* too, so NumPy arrays that shared its memory (``from_numpy``,
  ``.numpy()``) stop sharing it; ``.grad`` is not sent, and a non-leaf
  tensor that requires grad is refused.
- The sender must still be alive when the receiver unpickles a tensor (the
  receiver fetches the block's descriptor from it), as in PyTorch.
"""

from __future__ import annotations

import multiprocessing as _multiprocessing
from multiprocessing import (
    Array,
    AuthenticationError,
    Barrier,
    BoundedSemaphore,
    BufferTooShort,
    Condition,
    Event,
    Lock,
    Manager,
    Pipe,
    Pool,
    Process,
    ProcessError,
    RawArray,
    RawValue,
    RLock,
    Semaphore,
    SimpleQueue,
    TimeoutError,  # noqa: A004 - multiprocessing's name
    Value,
    active_children,
    allow_connection_pickling,
    cpu_count,
    current_process,
    freeze_support,
    get_all_start_methods,
    get_logger,
    get_start_method,
    log_to_stderr,
    parent_process,
    set_executable,
    set_forkserver_preload,
    set_start_method,
)

from glasstorch.multiprocessing import shared_memory
from glasstorch.multiprocessing.queues import JoinableQueue, Queue, get_context
from glasstorch.multiprocessing.reductions import init_reductions
from glasstorch.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)
from glasstorch.tensor import Storage, Tensor

reducer = _multiprocessing.reducer

_SHARING_STRATEGIES = {"file_descriptor"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how storages are shared; only ``"file_descriptor"`` exists in glasstorch."""
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(
            f"unknown sharing strategy {new_strategy!r}: glasstorch shares storages by "
            "'file_descriptor' only (its blocks never have a file name to leak)"
        )


def get_sharing_strategy() -> str:
    """The sharing strategy in use: always ``"file_descriptor"``."""
    return "file_descriptor"


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system offers: ``{"file_descriptor"}``."""
    return set(_SHARING_STRATEGIES)


# --------------------------------------- methods of Tensor and Storage given here
def _is_cuda(tensor: Tensor) -> bool:
    return getattr(tensor.device, "type", "cpu") == "cuda"


def _tensor_share_memory_(self: Tensor) -> Tensor:
    """Move the tensor's storage to shared memory, in place; returns ``self``.

    A no-op if the storage is shared already, and for CUDA tensors. Every
    tensor over the same storage (every view) is then in shared memory too,
    with its geometry unchanged; NumPy arrays that shared the old memory keep
    the old memory (as in PyTorch).
    """
    if not _is_cuda(self):
        shared_memory.share_storage_(self._storage)
    return self


def _tensor_is_shared(self: Tensor) -> bool:
    """Whether the tensor's storage is in shared memory (always True on CUDA, as in PyTorch)."""
    return _is_cuda(self) or shared_memory.is_shared(self._storage)


def _storage_share_memory_(self: Storage) -> Storage:
    """Move this storage to shared memory, in place; returns ``self``."""
    return shared_memory.share_storage_(self)


def _storage_is_shared(self: Storage) -> bool:
    """Whether this storage is in shared memory."""
    return shared_memory.is_shared(self)


Tensor.share_memory_ = _tensor_share_memory_
Tensor.is_shared = _tensor_is_shared
Storage.share_memory_ = _storage_share_memory_
Storage.is_shared = _storage_is_shared
for _method, _name in [
    (_tensor_share_memory_, "share_memory_"),
    (_tensor_is_shared, "is_shared"),
    (_storage_share_memory_, "share_memory_"),
    (_storage_is_shared, "is_shared"),
]:
    _method.__name__ = _method.__qualname__ = _name

init_reductions()

__all__ = [
    "Array",
    "AuthenticationError",
    "Barrier",
    "BoundedSemaphore",
    "BufferTooShort",
    "Condition",
    "Event",
    "JoinableQueue",
    "Lock",
    "Manager",
    "Pipe",
    "Pool",
    "Process",
    "ProcessContext",
    "ProcessError",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "Queue",
    "RLock",
    "RawArray",
    "RawValue",
    "Semaphore",
    "SimpleQueue",
    "TimeoutError",
    "Value",
    "active_children",
    "allow_connection_pickling",
    "cpu_count",
    "current_process",
    "freeze_support",
    "get_all_sharing_strategies",
    "get_all_start_methods",
    "get_context",
    "get_logger",
    "get_sharing_strategy",
    "get_start_method",
    "init_reductions",
    "log_to_stderr",
    "parent_process",
    "reducer",
    "set_executable",
    "set_forkserver_preload",
    "set_sharing_strategy",
    "set_start_method",
    "spawn",
    "start_processes",
]
