"""How tensors are pickled when they go to another process: as shared memory.

``multiprocessing`` pickles everything it sends (queue items, pipe messages,
a spawned process's arguments, a pool's tasks) with its ``ForkingPickler``.
:func:`init_reductions` teaches that pickler three rules, as
``torch.multiprocessing`` does when it is imported:

- a :class:`~glasstorch.Tensor` (or ``nn.Parameter``) is pickled as its
  metadata (dtype, shape, strides, offset, ``requires_grad``) and its
  *storage*, so a view arrives as a view, with its geometry;
- a :class:`~glasstorch.tensor.Storage` is first moved to shared memory (in
  place, see :func:`~glasstorch.multiprocessing.shared_memory.share_storage_`)
  and pickled as a small handle whose block descriptor the receiver takes
  through a :func:`multiprocessing.reduction.DupFd`;
- pickle's memo sends a storage once per message, however many tensors view it.

A CUDA tensor is refused with a ``TypeError`` (:data:`CUDA_MESSAGE`):
glasstorch has no CUDA IPC to share device memory with. :func:`check_can_send`
raises, without moving anything, the error that pickling an object would
raise: the queues of :mod:`glasstorch.multiprocessing` call it in ``put``.

The receiver maps the same block, so a write in either process shows in the
other. That is what makes Hogwild training work, and what lets DataLoader
workers hand batches over without copying.

A DataLoader worker sends many batches to one parent, and a ``DupFd`` costs a
connection per block; its :class:`FdChannel` sends all of a message's
descriptors over one socket it keeps instead. Both routes use the same tensor
rule and the same storage handles: only the way the descriptor travels differs.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
from multiprocessing.reduction import DupFd, ForkingPickler

from glasstorch.multiprocessing import shared_memory
from glasstorch.tensor import Storage, Tensor

CUDA_MESSAGE = (
    "Cannot send a CUDA tensor to another process: glasstorch shares CPU tensors only "
    "(PyTorch shares CUDA memory through CUDA IPC, which glasstorch does not have). "
    "Send tensor.cpu() and call .cuda() on it in the receiving process."
)

NON_LEAF_MESSAGE = (
    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
    "does not support crossing process boundaries.  If you just want to transfer the "
    "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
)


# ------------------------------------------------------------------- tensors
def _refuse_in_receiver(message: str):
    """Unpickled in place of a CUDA tensor that a plain queue's feeder could not send."""
    raise TypeError(message)


class _RefusedInReceiver(Exception):
    """Raised by :func:`check_tensor` in a plain ``multiprocessing.Queue``'s feeder
    thread: the reduction then sends :func:`_refuse_in_receiver` instead."""


def _in_queue_feeder() -> bool:
    """Whether this is the thread in which a plain ``multiprocessing.Queue`` pickles.

    Its ``put`` only appends to a buffer; a feeder thread pickles later, and an
    error there is printed, never seen by the caller, while the receiver
    waits forever. glasstorch's own queues check in ``put`` (:func:`check_can_send`).
    """
    import threading

    return threading.current_thread().name == "QueueFeederThread"


def check_tensor(tensor: Tensor) -> None:
    """Raise if ``tensor`` cannot go to another process (on CUDA, or a non-leaf needing grad)."""
    if tensor.device.type == "cuda":
        raise _RefusedInReceiver() if _in_queue_feeder() else TypeError(CUDA_MESSAGE)
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(NON_LEAF_MESSAGE)


def check_storage(storage: Storage) -> None:
    """Raise if ``storage`` cannot go to another process (it is on CUDA)."""
    if storage.device.type == "cuda":
        raise _RefusedInReceiver() if _in_queue_feeder() else TypeError(CUDA_MESSAGE)


def _tensor_fields(tensor: Tensor) -> tuple:
    """What a tensor is besides its storage: the arguments of :func:`rebuild_tensor`."""
    check_tensor(tensor)
    return (
        tensor.untyped_storage(),
        tensor.dtype,
        tuple(tensor.shape),
        tensor.stride(),
        tensor.storage_offset(),
        tensor.requires_grad,
    )


def rebuild_tensor(storage: Storage, dtype, shape, stride, offset: int, requires_grad: bool):
    """A tensor over a received storage, with the sender's geometry (no copy)."""
    tensor = Tensor._make(storage, tuple(shape), tuple(stride), offset, dtype)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def rebuild_parameter(storage: Storage, dtype, shape, stride, offset: int, requires_grad: bool):
    """An ``nn.Parameter`` over a received storage."""
    from glasstorch.nn.parameter import Parameter

    data = rebuild_tensor(storage, dtype, shape, stride, offset, False)
    return Parameter(data, requires_grad=requires_grad)


def reduce_tensor(tensor: Tensor):
    """The pickle rule for a Tensor: its fields, its storage pickled by :func:`reduce_storage`.

    A CUDA tensor raises, except in a plain ``multiprocessing.Queue``'s feeder
    thread, where nobody would see the error: there it travels as a refusal,
    and the receiver's ``get`` raises the message instead of waiting forever.
    """
    try:
        return rebuild_tensor, _tensor_fields(tensor)
    except _RefusedInReceiver:
        return _refuse_in_receiver, (CUDA_MESSAGE,)


def reduce_parameter(param):
    """The pickle rule for an ``nn.Parameter``: like a tensor, rebuilt as a Parameter."""
    try:
        return rebuild_parameter, _tensor_fields(param)
    except _RefusedInReceiver:
        return _refuse_in_receiver, (CUDA_MESSAGE,)


# ------------------------------------------------------------------ storages
def rebuild_storage(handle: shared_memory.StorageHandle) -> Storage:
    """The storage a handle from :func:`reduce_storage` describes, over the same block."""
    return shared_memory.storage_from_handle(handle, handle.fd.detach())


def reduce_storage(storage: Storage):
    """The pickle rule for a Storage: move it to shared memory, send a handle and a DupFd."""
    try:
        check_storage(storage)
    except _RefusedInReceiver:  # a plain queue's feeder: see reduce_tensor
        return _refuse_in_receiver, (CUDA_MESSAGE,)
    handle, fd = shared_memory.storage_handle(storage)
    # DupFd duplicates the descriptor now and hands the duplicate to whichever
    # process unpickles the handle (over a Unix socket, or inherited by a
    # process being spawned).
    return rebuild_storage, (_with_fd(handle, DupFd(fd)),)


def _with_fd(handle: shared_memory.StorageHandle, fd) -> shared_memory.StorageHandle:
    return shared_memory.StorageHandle(
        handle.name, handle.nbytes, handle.numpy_dtype, handle.length, fd
    )


_registered = False


def init_reductions() -> None:
    """Make every ``multiprocessing`` queue, pipe and process send tensors as shared memory.

    Called when :mod:`glasstorch.multiprocessing` is imported (``import
    glasstorch`` does); calling it again does nothing.
    """
    global _registered
    if _registered:
        return
    from glasstorch.nn.parameter import Parameter

    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_parameter)
    ForkingPickler.register(Storage, reduce_storage)
    _registered = True


class _Discard:
    """A file that forgets what is written to it."""

    def write(self, data) -> int:
        return len(data)


class _CheckingPickler(ForkingPickler):
    """Walks an object as ``ForkingPickler`` does, but only checks its tensors and storages.

    Nothing moves to shared memory and no descriptor is handed out: each
    tensor or storage is checked, then pickled as an empty tuple, and the
    pickle itself is thrown away.
    """

    def __init__(self) -> None:
        super().__init__(_Discard())
        from glasstorch.nn.parameter import Parameter

        for kind, check in (
            (Tensor, check_tensor),
            (Parameter, check_tensor),
            (Storage, check_storage),
        ):
            self.dispatch_table[kind] = _checked(check)


def _checked(check):
    """A pickle rule that runs ``check`` on the object and pickles it as ``()``."""

    def reduce(obj):
        check(obj)
        return tuple, ()

    return reduce


def check_can_send(obj) -> None:
    """Raise now the error that pickling ``obj`` for another process would raise.

    A CUDA tensor anywhere in ``obj`` raises a ``TypeError`` (:data:`CUDA_MESSAGE`),
    a non-leaf tensor that requires grad a ``RuntimeError``, and anything
    pickle refuses (a lambda, an open file) pickle's own error. It costs one
    pickling of ``obj`` without its tensors' elements (a tensor is checked,
    not pickled), and changes nothing: no storage moves to shared memory.
    """
    init_reductions()
    _CheckingPickler().dump(obj)


def dumps(obj, protocol=None) -> bytes:
    """Pickle ``obj`` as ``multiprocessing`` does: its tensors' storages go to shared memory.

    ``pickle.loads`` on the result (in any process that can still reach this
    one) rebuilds the tensors over the shared blocks.
    """
    init_reductions()
    return bytes(ForkingPickler.dumps(obj, protocol))


# ------------------------------------------------------------------- channel
class _ChannelPickler(ForkingPickler):
    """Pickles each Storage as a persistent id (its handle), its descriptor set aside."""

    def __init__(self, file, protocol=None):
        super().__init__(file, protocol)
        self.fds: list[int] = []
        self.sent: dict[int, int] = {}  # id(storage) -> its position in fds

    def persistent_id(self, obj):
        if type(obj) is not Storage:
            return None
        position = self.sent.get(id(obj))
        if position is None:
            handle, fd = shared_memory.storage_handle(obj)
            position = self.sent[id(obj)] = len(self.fds)
            self.fds.append(fd)
        else:
            handle = None  # the same storage again: the receiver has it already
        return ("glasstorch.storage", position, handle)


class _ChannelUnpickler(pickle.Unpickler):
    """Rebuilds the storages of a :class:`_ChannelPickler` payload over received descriptors."""

    def __init__(self, file, fds: list[int]):
        super().__init__(file)
        self.fds = fds
        self.storages: dict[int, Storage] = {}

    def persistent_load(self, pid):
        tag, position, handle = pid
        if tag != "glasstorch.storage":
            raise pickle.UnpicklingError(f"unknown persistent id {tag!r}")
        if position not in self.storages:
            fd, self.fds[position] = self.fds[position], -1  # the storage owns it now
            self.storages[position] = shared_memory.storage_from_handle(handle, fd)
        return self.storages[position]


class FdChannel:
    """One end of a Unix socket pair that carries payloads' block descriptors.

    Pickling a tensor for ``multiprocessing`` hands each block's descriptor to
    the receiver through a ``DupFd``, which costs a connection (and an
    authentication) per block. A DataLoader worker sends many batches to one
    parent, so it has a channel of its own instead: :meth:`dumps` pickles a
    payload (tensors by the rule of :func:`reduce_tensor`) and sends all its
    blocks' descriptors in one message (``SCM_RIGHTS``); the payload itself
    travels by any other route (a queue), and the receiver calls
    :meth:`loads` with it. Payloads must be loaded in the order they were
    dumped: the descriptors queue up in the socket in that order.

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
        """Pickle ``obj`` with its tensors' storages in shared memory, and send their descriptors.

        Returns ``(count, payload)``: how many descriptors were sent, and the
        pickle for :meth:`loads` on the other end.
        """
        init_reductions()
        stream = io.BytesIO()
        pickler = _ChannelPickler(stream, protocol)
        pickler.dump(obj)
        fds = pickler.fds  # owned by their blocks: the kernel copies them into the message
        for start in range(0, len(fds), self.MAX_FDS):
            group = fds[start : start + self.MAX_FDS]
            socket.send_fds(self.sock, [len(group).to_bytes(2, "little")], group)
        return len(fds), stream.getvalue()

    def loads(self, count: int, payload: bytes):
        """Receive ``count`` descriptors and unpickle ``payload`` over their blocks."""
        fds: list[int] = []
        try:
            while len(fds) < count:
                _, received, _, _ = socket.recv_fds(self.sock, 2, self.MAX_FDS)
                if not received:
                    raise EOFError(
                        "the sender closed its channel before sending a payload's blocks"
                    )
                fds += received
            return _ChannelUnpickler(io.BytesIO(payload), fds).load()
        finally:
            for fd in fds:
                if fd >= 0:  # not taken by a storage (an error half-way)
                    os.close(fd)

    def close(self) -> None:
        """Close this end."""
        self.sock.close()


__all__ = [
    "CUDA_MESSAGE",
    "FdChannel",
    "check_can_send",
    "check_storage",
    "check_tensor",
    "dumps",
    "init_reductions",
    "rebuild_parameter",
    "rebuild_storage",
    "rebuild_tensor",
    "reduce_parameter",
    "reduce_storage",
    "reduce_tensor",
]
