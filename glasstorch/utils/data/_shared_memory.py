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
A block is a file in ``/dev/shm``, a RAM-backed file system on Linux (this is
what POSIX ``shm_open`` does too). Where there is no ``/dev/shm`` the block is a
file in the temporary directory, which the operating system still shares
through its page cache.

1. The sender creates the file (:func:`create_block`), sizes it, maps it with
   :mod:`mmap` and copies the tensor's elements in (:func:`share_tensor`).
2. It sends the :class:`SharedTensorHandle` (a few hundred bytes when pickled).
3. The receiver opens the file, maps it, and **unlinks the name at once**
   (:func:`attach_block`). The memory stays valid while a mapping exists: the
   kernel frees it when the last process unmaps it. Nothing is left in
   ``/dev/shm`` however the receiver later exits.
4. The receiver's tensor storage is a NumPy array over the :class:`SharedBlock`
   (an ``mmap`` object). The array holds the mapping alive; when the last
   tensor or array that uses it is garbage collected, the mapping is closed.

The one gap is a handle that is sent but never received (the receiver stopped
listening, or the sender died half-way). Every block name starts with a prefix
the owner chooses (:func:`set_block_prefix`), so the owner can remove such
orphans with :func:`unlink_blocks` once the senders are gone. The DataLoader
gives each iterator's workers their own prefix and sweeps it at shutdown.

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

import io
import itertools
import mmap
import os
import secrets
import tempfile
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler

import numpy as np

from glasstorch.ops.creation import from_numpy
from glasstorch.tensor import Tensor

#: Where blocks live: RAM-backed ``/dev/shm`` on Linux, the temporary directory elsewhere.
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


def create_block(nbytes: int) -> SharedBlock:
    """Create a new block of ``nbytes`` (> 0) bytes and map it for reading and writing."""
    if nbytes <= 0:
        raise ValueError(f"a shared block needs a positive size, got {nbytes}")
    name = f"{_prefix}{next(_counter)}_{secrets.token_hex(4)}"
    path = block_path(name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, nbytes)
        block = SharedBlock(fd, nbytes)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    block.name = name
    return block


def attach_block(name: str, nbytes: int) -> SharedBlock:
    """Map the existing block ``name`` and unlink its name: this mapping is now its owner."""
    path = block_path(name)
    fd = os.open(path, os.O_RDWR)
    try:
        block = SharedBlock(fd, nbytes)
    finally:
        os.close(fd)
        os.unlink(path)
    block.name = name
    return block


def unlink_blocks(prefix: str) -> int:
    """Remove every block whose name starts with ``prefix``; returns how many.

    Call it only when no process will attach those blocks any more (for
    example after the workers that created them have exited). Mappings that
    already exist stay valid.
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
        name: the block's name (``None`` for a tensor with no elements).
        nbytes: the block's size in bytes.
        dtype: the tensor's glasstorch dtype.
        shape: the tensor's sizes.
        strides: the tensor's strides, in elements, within the block.
        offset: the index of the tensor's first element within the block.
        requires_grad: the tensor's flag (leaf tensors only).
    """

    name: str | None
    nbytes: int
    dtype: object
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    requires_grad: bool


def _span(shape, strides) -> int:
    """How many storage elements a view reaches, from its first to its last element."""
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def share_tensor(tensor: Tensor) -> SharedTensorHandle:
    """Copy ``tensor``'s elements into a new block and return the handle to send.

    The copy is a plain ``memcpy`` of bytes (moving data is not a kernel). A view
    whose elements are dense or overlap (``expand``) keeps its strides and only
    the storage span it reaches is copied; a view with gaps (a slice with a
    step) is made contiguous.
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
        return SharedTensorHandle(
            None, 0, dtype, shape, _contiguous_strides(shape), 0, tensor.requires_grad
        )
    buffer = tensor.untyped_storage().buffer
    if not isinstance(buffer, np.ndarray):
        raise TypeError(
            "only CPU tensors can be moved to shared memory; call .cpu() before sending the tensor"
        )
    strides = tuple(tensor.stride())
    span = _span(shape, strides)
    if span <= numel:  # dense or overlapping: copy the span, keep the layout
        block = create_block(span * dtype.itemsize)
        target = np.frombuffer(block, dtype=buffer.dtype, count=span)
        start = tensor.storage_offset()
        np.copyto(target, buffer[start : start + span])
    else:  # gaps between elements: copy only the elements, row-major
        strides = _contiguous_strides(shape)
        block = create_block(numel * dtype.itemsize)
        target = np.frombuffer(block, dtype=buffer.dtype, count=numel)
        np.copyto(target.reshape(shape), tensor.detach().numpy())
    del target  # the mapping closes when the last array over it goes
    return SharedTensorHandle(
        block.name, len(block), dtype, shape, strides, 0, tensor.requires_grad
    )


def rebuild_tensor(handle: SharedTensorHandle) -> Tensor:
    """The tensor a handle describes, built over the mapped block without copying."""
    np_dtype = handle.dtype.numpy
    if handle.name is None:
        out = from_numpy(np.empty(handle.shape, dtype=np_dtype))
    else:
        block = attach_block(handle.name, handle.nbytes)
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


def register_reductions() -> None:
    """Make every ``multiprocessing`` queue and pipe send Tensors through shared memory."""
    ForkingPickler.register(Tensor, reduce_tensor)


__all__ = [
    "BLOCK_DIR",
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
