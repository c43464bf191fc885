"""Storages in shared memory: the blocks that tensors share between processes.

PyTorch's paper (section 5.4) explains why tensors that cross a process
boundary are not pickled: a DataLoader worker that pickled each batch would
copy every byte twice (into the pickle, and out of it in the parent) and push
it through a pipe, and two processes that train one model (Hogwild) could not
see each other's updates at all. Instead a storage *moves* into a block of
shared memory (:func:`share_storage_`), and what travels is a small
:class:`StorageHandle` plus the block's file descriptor. The receiver maps the
same block and builds a storage over it (:func:`storage_from_handle`): both
processes now read and write the same bytes.

How a block lives and dies
--------------------------
A block never has a name that could outlive the processes using it: it exists
only as open file descriptors and mappings, and the kernel frees its memory
when the last of them is closed, however the processes end (even by
``SIGKILL``). Nothing is ever left behind in ``/dev/shm``.

1. :func:`create_block` makes the block as an anonymous memory file (Linux's
   ``memfd_create``; where that does not exist, a file in ``/dev/shm`` or the
   temporary directory whose name is unlinked the moment it is opened), sizes
   it and maps it with :mod:`mmap`.
2. A :class:`SharedBlock` (the ``mmap`` object) keeps its descriptor open for
   as long as it lives, so that the block can be sent again, by any process
   that has it: the descriptor is what a receiver needs, and it cannot be
   recovered from a mapping. (PyTorch's ``file_descriptor`` sharing strategy
   keeps one too.) The descriptor is closed when the block is garbage
   collected, that is when the last storage, tensor or array over it goes.
3. A descriptor travels between processes over a Unix socket (``SCM_RIGHTS``):
   through a :func:`multiprocessing.reduction.DupFd` when a handle is pickled
   by ``multiprocessing`` (see :mod:`glasstorch.multiprocessing.reductions`),
   or through an :class:`~glasstorch.multiprocessing.reductions.FdChannel`
   (a DataLoader worker's socket to its parent).
4. The receiver maps the descriptor it got (:func:`attach_block`). A block
   that arrives a second time (the same inode) gives back the storage already
   built for it, so two tensors sent apart still share one storage.

A block that is sent but never received (the receiver stopped listening, or
was killed) costs the sender one descriptor until the sender exits, and then
nothing: the kernel frees the block with the sender's descriptors.

Blocks are named ``<prefix><counter>_<random>`` (:func:`set_block_prefix`; a
DataLoader worker's prefix holds its parent's process id). The name shows in
``/proc/<pid>/maps`` (as ``/memfd:<name> (deleted)``), which helps to see who
maps what. On systems without ``memfd_create``, a process killed between
creating a block's file and unlinking it (two system calls apart) would leave
the file; :func:`unlink_blocks` sweeps a prefix, and the DataLoader sweeps its
workers' prefix at shutdown.
"""

from __future__ import annotations

import itertools
import mmap
import os
import secrets
import tempfile
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from glasstorch.tensor import Storage

#: Where a block's file is made (and unlinked at once) when ``memfd_create`` is
#: missing: RAM-backed ``/dev/shm`` on Linux, the temporary directory elsewhere.
BLOCK_DIR: str = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()

_prefix: str = f"glasstorch_{os.getpid()}_"
_counter = itertools.count()

#: The storage over each block this process maps, by the block's file identity
#: (device and inode), so that a block received twice gives one storage.
_storages: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class SharedBlock(mmap.mmap):
    """A mapped shared-memory block that keeps its file descriptor open.

    Attributes:
        name: the block's name, for display (``/proc/<pid>/maps`` shows it).
        fd: the block's file descriptor, owned by the block: it is closed when
            the block is garbage collected. Send it, never close it.
    """

    name: str = ""
    fd: int = -1


def _own_descriptor(block: SharedBlock, fd: int, name: str) -> SharedBlock:
    """Make ``block`` the owner of ``fd``: closed when the block is garbage collected."""
    block.name, block.fd = name, fd
    weakref.finalize(block, os.close, fd)
    return block


def get_block_prefix() -> str:
    """The prefix of the names of blocks this process creates."""
    return _prefix


def set_block_prefix(prefix: str) -> None:
    """Name the blocks this process creates from now on ``prefix + <counter>_<random>``.

    The prefix must be a plain file name part (no ``/``). A DataLoader worker
    uses its iterator's prefix, so the parent can sweep orphans with
    :func:`unlink_blocks`.
    """
    global _prefix
    if "/" in prefix or os.sep in prefix:
        raise ValueError(f"a block prefix must not contain a path separator, got {prefix!r}")
    _prefix = prefix


def block_path(name: str) -> str:
    """The file that would hold block ``name`` where ``memfd_create`` is missing."""
    return os.path.join(BLOCK_DIR, name)


def _anonymous_file(name: str) -> int:
    """A descriptor of a new shared-memory file that has no path (``name`` is for display)."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create(name, os.MFD_CLOEXEC)
        except OSError:
            pass  # forbidden (a seccomp filter) or unsupported: use a file
    path = block_path(name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)  # from now on only descriptors refer to the file
    return fd


def create_block(nbytes: int) -> SharedBlock:
    """Create a new block of ``nbytes`` (> 0) bytes, with no name in any file system.

    Returns the block mapped for reading and writing; it owns its descriptor.
    """
    if nbytes <= 0:
        raise ValueError(f"a shared block needs a positive size, got {nbytes}")
    name = f"{_prefix}{next(_counter)}_{secrets.token_hex(4)}"
    fd = _anonymous_file(name)
    try:
        os.ftruncate(fd, nbytes)
        block = SharedBlock(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return _own_descriptor(block, fd, name)


def attach_block(fd: int, name: str, nbytes: int) -> SharedBlock:
    """Map the block behind the received descriptor ``fd``, which the block then owns."""
    try:
        block = SharedBlock(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return _own_descriptor(block, fd, name)


def unlink_blocks(prefix: str) -> int:
    """Remove every block file whose name starts with ``prefix``; returns how many.

    Blocks have no names once made (see the module docstring); only a process
    killed half-way through :func:`create_block` on a system without
    ``memfd_create`` can leave a file behind, and this removes it. Mappings
    that already exist stay valid.
    """
    if not prefix:
        raise ValueError("unlink_blocks needs a non-empty prefix")
    removed = 0
    try:
        names = os.listdir(BLOCK_DIR)
    except OSError:
        return 0
    for name in names:
        if name.startswith(prefix):
            try:
                os.unlink(block_path(name))
                removed += 1
            except FileNotFoundError:
                pass
    return removed


# ------------------------------------------------------------------ storages
def shared_block_of(storage_or_tensor) -> SharedBlock | None:
    """The shared block behind a storage (or a tensor's storage), or ``None``."""
    storage = getattr(storage_or_tensor, "_storage", storage_or_tensor)
    obj = storage.buffer
    while obj is not None:
        if isinstance(obj, SharedBlock):
            return obj
        # ndarray.base and memoryview.obj lead from an array to the memory's owner.
        obj = obj.obj if isinstance(obj, memoryview) else getattr(obj, "base", None)
    return None


def is_shared(storage_or_tensor) -> bool:
    """Whether a storage (or a tensor's storage) lives in a shared-memory block."""
    return shared_block_of(storage_or_tensor) is not None


def _block_key(fd: int) -> tuple[int, int]:
    """What identifies a block's file across processes: its device and inode."""
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def share_storage_(storage: Storage) -> Storage:
    """Move ``storage`` into a new shared block, in place; a no-op if it is shared already.

    The elements are copied once into the block, and the storage's buffer
    becomes an array over the block: every tensor over the storage (views
    included) sees the shared memory from now on, with its shape, strides and
    offset unchanged. NumPy arrays that shared the old buffer (``.numpy()``,
    ``from_numpy``) keep the old memory, as in PyTorch.
    """
    if is_shared(storage):
        return storage
    old = storage.buffer
    if not isinstance(old, np.ndarray):
        raise TypeError(
            "only CPU tensors can be moved to shared memory; call .cpu() before sharing"
        )
    # A block cannot be empty (mmap refuses size 0): an empty storage gets one byte.
    block = create_block(max(old.nbytes, 1))
    new = np.frombuffer(block, dtype=old.dtype, count=len(old))  # the array keeps the mapping
    np.copyto(new, old)  # moving bytes is not a kernel: one memcpy
    storage.buffer = new
    _storages[_block_key(block.fd)] = storage
    return storage


@dataclass(frozen=True)
class StorageHandle:
    """What travels instead of a storage's bytes: enough to map its block again.

    Attributes:
        name: the block's name, for display.
        nbytes: the block's size in bytes.
        numpy_dtype: the dtype of the storage's buffer (a NumPy dtype string).
        length: how many elements the storage holds.
        fd: how the receiver gets the block's descriptor: a
            :func:`multiprocessing.reduction.DupFd` when the handle is pickled
            by ``multiprocessing``; ``None`` when it travels by an
            :class:`~glasstorch.multiprocessing.reductions.FdChannel`.
    """

    name: str
    nbytes: int
    numpy_dtype: str
    length: int
    fd: Any = None


def storage_handle(storage: Storage) -> tuple[StorageHandle, int]:
    """Move ``storage`` to shared memory (if needed): its handle and its block's descriptor.

    The descriptor belongs to the block: send it, never close it.
    """
    share_storage_(storage)
    block = shared_block_of(storage)
    handle = StorageHandle(block.name, len(block), storage.buffer.dtype.str, len(storage.buffer))
    return handle, block.fd


def storage_from_handle(handle: StorageHandle, fd: int) -> Storage:
    """The storage over the block behind the received descriptor ``fd`` (taken over here).

    A block this process already maps (sent twice, or sent back to its
    sender) gives the storage it has already: ``fd`` is then closed.
    """
    key = _block_key(fd)
    storage = _storages.get(key)
    if storage is not None and is_shared(storage):
        os.close(fd)
        return storage
    block = attach_block(fd, handle.name, handle.nbytes)
    buffer = np.frombuffer(block, dtype=np.dtype(handle.numpy_dtype), count=handle.length)
    storage = Storage(buffer)
    _storages[key] = storage
    return storage


__all__ = [
    "BLOCK_DIR",
    "SharedBlock",
    "StorageHandle",
    "attach_block",
    "block_path",
    "create_block",
    "get_block_prefix",
    "is_shared",
    "set_block_prefix",
    "share_storage_",
    "shared_block_of",
    "storage_from_handle",
    "storage_handle",
    "unlink_blocks",
]
