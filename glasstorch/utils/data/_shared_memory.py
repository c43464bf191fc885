"""Tensors that cross a process boundary through shared memory, not pickled copies.

PyTorch's paper (section 5.4) explains why: a DataLoader worker that pickled
each batch would copy every byte twice (into the pickle, and out of it in the
parent) and push it through a pipe. Instead the worker writes the batch into a
block of shared memory and sends only a small *handle*: the block's name and
the tensor's shape, strides, offset and dtype. The parent maps the same block
and builds a Tensor over it, so the bytes are written once and never copied
again.

How a block lives and dies
--------------------------
A block never has a name that could outlive the processes using it: it exists
only as open file descriptors and mappings, and the kernel frees its memory
when the last of them is closed, however the processes end (even by
``SIGKILL``). Nothing is ever left behind in ``/dev/shm``.

1. The sender creates the block (:func:`create_block`) as an anonymous
   memory file (Linux's ``memfd_create``; where that does not exist, a file
   in ``/dev/shm`` or the temporary directory whose name is unlinked the
   moment it is opened). It sizes the file, maps it with :mod:`mmap` and
   copies the tensor's elements in (:func:`share_tensor`).
2. The handle it sends (a :class:`SharedTensorHandle`, a few hundred bytes
   pickled) carries a :func:`multiprocessing.reduction.DupFd`: a duplicate of
   the block's descriptor, kept in the sender, that the receiver fetches over
   a Unix socket (``SCM_RIGHTS``, the way file descriptors travel between
   processes). The sender closes its copy once the receiver has taken it.
3. The receiver maps the descriptor it got and closes it
   (:func:`attach_block`). The receiver's tensor storage is a NumPy array
   over the :class:`SharedBlock` (an ``mmap`` object); when the last tensor or
   array that uses it is garbage collected, the mapping is closed.

A handle that is sent but never received (the receiver stopped listening, or
was killed) costs the sender one descriptor until the sender exits, and then
nothing: the kernel frees the block with the sender's descriptors.

Blocks are named ``<prefix><counter>_<random>`` (:func:`set_block_prefix`; a
DataLoader worker's prefix holds its parent's process id). The name shows in
``/proc/<pid>/maps`` (as ``/memfd:<name> (deleted)``), which helps to see who
maps what. On systems without ``memfd_create``, a process killed between
creating a block's file and unlinking it (two system calls apart) would leave
the file; :func:`unlink_blocks` sweeps a prefix, and the DataLoader sweeps its
workers' prefix at shutdown.

Pickling
--------
:class:`SharingPickler` is a :class:`multiprocessing.reduction.ForkingPickler`
that reduces every :class:`~glasstorch.Tensor` to its handle, wherever it sits
in the object being pickled (a tuple, a dict, a user's class). :func:`dumps`
uses it; plain :func:`pickle.loads` rebuilds the tensors, since a handle
unpickles by calling :func:`rebuild_tensor`. :func:`register_reductions`
installs the same rule in ``ForkingPickler`` itself, so that every
``multiprocessing.Queue`` moves tensors through shared memory, as
``torch.multiprocessing`` does.

Only the elements a tensor can reach are copied (not the whole storage it views),
keeping its strides when they are dense or overlapping (expanded) and making it
contiguous otherwise. Subclasses of Tensor (such as ``nn.Parameter``) keep their
own pickling, which copies.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import mmap
import os
import pickle
import secrets
import socket
import tempfile
from dataclasses import dataclass
from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

import numpy as np

from glasstorch.ops.creation import from_numpy
from glasstorch.tensor import Tensor

#: Where a block's file is made (and unlinked at once) when ``memfd_create`` is
#: missing: RAM-backed ``/dev/shm`` on Linux, the temporary directory elsewhere.
BLOCK_DIR: str = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()

_prefix: str = f"glasstorch_{os.getpid()}_"
_counter = itertools.count()


class SharedBlock(mmap.mmap):
    """A mapped shared-memory block: an ``mmap`` that remembers the block's name."""

    name: str = ""


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
    """The file that holds block ``name``."""
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


def create_block(nbytes: int) -> tuple[SharedBlock, int]:
    """Create a new block of ``nbytes`` (> 0) bytes, with no name in any file system.

    Returns the block mapped for reading and writing, and its file descriptor,
    which the caller closes (after handing a duplicate to a receiver).
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
    block.name = name
    return block, fd


def attach_block(fd: int, name: str, nbytes: int) -> SharedBlock:
    """Map the block behind the received descriptor ``fd``, then close ``fd``.

    The mapping keeps the block alive on its own.
    """
    try:
        block = SharedBlock(fd, nbytes)
    finally:
        os.close(fd)
    block.name = name
    return block


def unlink_blocks(prefix: str) -> int:
    """Remove every block whose name starts with ``prefix``; returns how many.

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


@dataclass(frozen=True)
class SharedTensorHandle:
    """What travels through a queue instead of a tensor's bytes.

    Attributes:
        name: the block's name, for display (``None`` for a tensor with no elements).
        nbytes: the block's size in bytes.
        dtype: the tensor's glasstorch dtype.
        shape: the tensor's sizes.
        strides: the tensor's strides, in elements, within the block.
        offset: the index of the tensor's first element within the block.
        requires_grad: the tensor's flag (leaf tensors only).
        fd: a :func:`multiprocessing.reduction.DupFd` through which the
            receiver takes the block's file descriptor (``None`` with ``name``).
    """

    name: str | None
    nbytes: int
    dtype: object
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    requires_grad: bool
    fd: Any = None


def _span(shape, strides) -> int:
    """How many storage elements a view reaches, from its first to its last element."""
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _copy_to_block(tensor: Tensor) -> tuple[SharedTensorHandle, int | None]:
    """Copy ``tensor``'s elements into a new block: its handle (no ``fd`` yet) and descriptor.

    The descriptor is ``None`` for a tensor without elements (no block); the
    caller closes it once it has passed it on.
    """
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    shape = tuple(tensor.shape)
    dtype = tensor.dtype
    numel = tensor.numel()
    if numel == 0:
        empty = SharedTensorHandle(
            None, 0, dtype, shape, _contiguous_strides(shape), 0, tensor.requires_grad
        )
        return empty, None
    buffer = tensor.untyped_storage().buffer
    if not isinstance(buffer, np.ndarray):
        raise TypeError(
            "only CPU tensors can be moved to shared memory; call .cpu() before sending the tensor"
        )
    strides = tuple(tensor.stride())
    span = _span(shape, strides)
    keep_layout = span <= numel  # dense or overlapping: copy the span, keep the strides
    if not keep_layout:  # gaps between elements: copy only the elements, row-major
        strides = _contiguous_strides(shape)
    block, fd = create_block((span if keep_layout else numel) * dtype.itemsize)
    try:
        target = np.frombuffer(block, dtype=buffer.dtype)
        if keep_layout:
            start = tensor.storage_offset()
            np.copyto(target, buffer[start : start + span])
        else:
            np.copyto(target.reshape(shape), tensor.detach().numpy())
        del target  # the mapping closes when the last array over it goes
    except BaseException:
        os.close(fd)
        raise
    handle = SharedTensorHandle(
        block.name, len(block), dtype, shape, strides, 0, tensor.requires_grad
    )
    return handle, fd


def share_tensor(tensor: Tensor) -> SharedTensorHandle:
    """Copy ``tensor``'s elements into a new block and return the handle to send.

    The copy is a plain ``memcpy`` of bytes (moving data is not a kernel). A view
    whose elements are dense or overlap (``expand``) keeps its strides and only
    the storage span it reaches is copied; a view with gaps (a slice with a
    step) is made contiguous. The handle's ``fd`` is a ``DupFd``, which any
    process that unpickles the handle can take the block's descriptor from.
    """
    handle, fd = _copy_to_block(tensor)
    if fd is None:
        return handle
    try:
        return dataclasses.replace(handle, fd=DupFd(fd))  # a duplicate waits for the receiver
    finally:
        os.close(fd)


def _tensor_over_block(handle: SharedTensorHandle, fd: int | None) -> Tensor:
    """The tensor ``handle`` describes, over the block behind ``fd`` (closed here)."""
    np_dtype = handle.dtype.numpy
    if fd is None:
        out = from_numpy(np.empty(handle.shape, dtype=np_dtype))
    else:
        block = attach_block(fd, handle.name, handle.nbytes)
        flat = np.frombuffer(block, dtype=np_dtype)  # the array keeps the mapping alive
        item = flat.itemsize
        array = np.lib.stride_tricks.as_strided(
            flat[handle.offset :],
            shape=handle.shape,
            strides=tuple(s * item for s in handle.strides),
        )
        out = from_numpy(array)
    if handle.requires_grad:
        out.requires_grad_(True)
    return out


def rebuild_tensor(handle: SharedTensorHandle) -> Tensor:
    """The tensor a handle from :func:`share_tensor` describes, over its block, without copying."""
    return _tensor_over_block(handle, None if handle.name is None else handle.fd.detach())


def shared_block_of(tensor: Tensor) -> SharedBlock | None:
    """The shared block behind ``tensor``'s storage, or ``None`` if it is private memory."""
    obj = tensor.untyped_storage().buffer
    while obj is not None:
        if isinstance(obj, SharedBlock):
            return obj
        # ndarray.base, as_strided's helper .base, and memoryview.obj lead to the owner.
        obj = obj.obj if isinstance(obj, memoryview) else getattr(obj, "base", None)
    return None


def is_shared(tensor: Tensor) -> bool:
    """Whether ``tensor``'s storage lives in a shared-memory block."""
    return shared_block_of(tensor) is not None


def reduce_tensor(tensor: Tensor):
    """The pickle reduction of a tensor: move it to shared memory, send the handle."""
    return rebuild_tensor, (share_tensor(tensor),)


class SharingPickler(ForkingPickler):
    """A ForkingPickler that sends every (exact) Tensor through shared memory."""

    def reducer_override(self, obj):
        if type(obj) is Tensor:
            return reduce_tensor(obj)
        return NotImplemented


def dumps(obj, protocol=None) -> bytes:
    """Pickle ``obj``, moving the tensors inside it to shared memory (see :class:`SharingPickler`).

    ``pickle.loads`` on the result rebuilds the tensors over the shared blocks.
    """
    stream = io.BytesIO()
    SharingPickler(stream, protocol).dump(obj)
    return stream.getvalue()


class _ChannelPickler(ForkingPickler):
    """Pickles each (exact) Tensor as a persistent id: its handle, its descriptor set aside."""

    def __init__(self, file, protocol=None):
        super().__init__(file, protocol)
        self.fds: list[int] = []

    def persistent_id(self, obj):
        if type(obj) is not Tensor:
            return None
        handle, fd = _copy_to_block(obj)
        if fd is not None:
            self.fds.append(fd)
        return ("glasstorch.tensor", handle)


class _ChannelUnpickler(pickle.Unpickler):
    """Rebuilds the tensors of a :class:`_ChannelPickler` payload over received descriptors."""

    def __init__(self, file, fds: list[int]):
        super().__init__(file)
        self.fds = fds
        self.used = 0  # descriptors handed to blocks (which close them)

    def persistent_load(self, pid):
        tag, handle = pid
        if tag != "glasstorch.tensor":
            raise pickle.UnpicklingError(f"unknown persistent id {tag!r}")
        if handle.name is None:
            return _tensor_over_block(handle, None)
        fd = self.fds[self.used]
        self.used += 1
        return _tensor_over_block(handle, fd)


class FdChannel:
    """One end of a Unix socket pair that carries payloads' block descriptors.

    :func:`dumps` hands each block's descriptor to the receiver through a
    ``DupFd``, which costs a connection (and an authentication) per tensor.
    A DataLoader worker sends many batches to one parent, so it has a channel
    of its own instead: :meth:`dumps` pickles a payload and sends all its
    descriptors in one message (``SCM_RIGHTS``); the payload itself travels
    by any other route (a queue), and the receiver calls :meth:`loads` with
    it. Payloads must be loaded in the order they were dumped: the
    descriptors queue up in the socket in that order.

    Descriptors in flight belong to the socket: if the receiver dies, the
    kernel frees them (and their blocks) when the last end is closed.
    """

    #: The most descriptors one message carries (Linux's SCM_MAX_FD is 253).
    MAX_FDS = 253

    def __init__(self, sock: socket.socket):
        self.sock = sock

    @classmethod
    def pair(cls) -> tuple[FdChannel, FdChannel]:
        """Two connected ends: one for the receiver, one for the sender."""
        receiver, sender = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return cls(receiver), cls(sender)

    def dumps(self, obj, protocol=None) -> tuple[int, bytes]:
        """Pickle ``obj`` with its tensors in new blocks and send the blocks' descriptors.

        Returns ``(count, payload)``: how many descriptors were sent, and the
        pickle for :meth:`loads` on the other end.
        """
        stream = io.BytesIO()
        pickler = _ChannelPickler(stream, protocol)
        try:
            pickler.dump(obj)
            fds = pickler.fds
            for start in range(0, len(fds), self.MAX_FDS):
                group = fds[start : start + self.MAX_FDS]
                socket.send_fds(self.sock, [len(group).to_bytes(2, "little")], group)
        finally:
            for fd in pickler.fds:
                os.close(fd)  # sent (the socket holds them now) or abandoned
        return len(pickler.fds), stream.getvalue()

    def loads(self, count: int, payload: bytes):
        """Receive ``count`` descriptors and unpickle ``payload`` over their blocks."""
        fds: list[int] = []
        unpickler = _ChannelUnpickler(io.BytesIO(payload), fds)
        try:
            while len(fds) < count:
                _, received, _, _ = socket.recv_fds(self.sock, 2, self.MAX_FDS)
                if not received:
                    raise EOFError(
                        "the sender closed its channel before sending a payload's blocks"
                    )
                fds += received
            return unpickler.load()
        finally:
            for fd in fds[unpickler.used :]:
                os.close(fd)  # not taken by a block (an error, or a payload short of tensors)

    def close(self) -> None:
        """Close this end."""
        self.sock.close()


def register_reductions() -> None:
    """Make every ``multiprocessing`` queue and pipe send Tensors through shared memory."""
    ForkingPickler.register(Tensor, reduce_tensor)


__all__ = [
    "BLOCK_DIR",
    "FdChannel",
    "SharedBlock",
    "SharedTensorHandle",
    "attach_block",
    "block_path",
    "create_block",
    "dumps",
    "get_block_prefix",
    "is_shared",
    "rebuild_tensor",
    "reduce_tensor",
    "register_reductions",
    "set_block_prefix",
    "share_tensor",
    "shared_block_of",
    "unlink_blocks",
]
