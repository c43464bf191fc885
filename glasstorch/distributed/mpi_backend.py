"""The ``"mpi"`` backend: collectives as MPI calls through mpi4py, on host memory.

MPI (the Message Passing Interface) is the communication library of
supercomputers: Open MPI, MPICH and the vendors' builds implement the same
calls (``MPI_Allreduce``, ``MPI_Bcast``, ...), each choosing an algorithm
(ring, tree, recursive doubling) by message size and network. mpi4py is its
Python binding, and it takes any object with the buffer protocol as a message,
without copying.

A glasstorch CPU tensor's storage is a flat NumPy array, so a contiguous
tensor's elements are a slice of it: :class:`HostBuffer` hands MPI exactly that
slice, and MPI reads the tensor's memory and writes its results into it (zero
copy; ``dist.all_reduce(t)`` changes ``t`` in place). Other tensors are staged:

- a non-contiguous CPU tensor is copied into a contiguous array and copied
  back after the collective (PyTorch's gloo backend accepts them the same way);
- a tensor on the simulated GPU (``GLASSTORCH_CUDA=simulator``) goes through
  host memory: copied to the host before, back to the device after, the way
  an MPI library without CUDA support is used for GPU tensors. On a real GPU
  the ``"nccl"`` backend (:mod:`glasstorch.distributed.nccl_backend`) is used
  instead.

Each method returns a :class:`~glasstorch.distributed.work.Work` that has not
run yet: the process group puts it on its queue (:mod:`~glasstorch.distributed.work`).
"""

from __future__ import annotations

import numpy as np

from glasstorch.distributed.reduce_op import RedOpType
from glasstorch.distributed.work import Work


def load_mpi():
    """mpi4py's ``MPI`` module, initialising MPI with full thread support on first use.

    ``MPI_THREAD_MULTIPLE`` lets the communication thread, the watchdog and
    the program's thread all call MPI. Importing ``mpi4py.MPI`` is what runs
    ``MPI_Init_thread``; mpi4py calls ``MPI_Finalize`` when Python exits.
    """
    import mpi4py

    mpi4py.rc.threads = True
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


# ---------------------------------------------------------------------------- buffers
class HostBuffer:
    """A tensor's elements as one flat, contiguous NumPy array that MPI can use.

    Args:
        tensor: the glasstorch tensor.
        read: whether MPI reads the tensor's values (copy them in when staging).
        write: whether MPI writes results (copy them back when staging, in
            :meth:`copy_back`).

    ``array`` is the storage itself for a contiguous CPU tensor: MPI then reads
    and writes the tensor's own memory and ``copy_back`` does nothing.
    """

    def __init__(self, tensor, read: bool = True, write: bool = False) -> None:
        self.tensor = tensor
        self.write = write
        self.staged = True
        count = tensor.numel()
        if not tensor.is_cuda and tensor.is_contiguous():
            start = tensor._offset
            self.array = tensor._storage.buffer[start : start + count]  # a view: zero copy
            self.staged = False
        elif not tensor.is_cuda:
            view = _strided_array(tensor)
            self.array = (
                np.ascontiguousarray(view).reshape(-1) if read else np.empty(count, view.dtype)
            )
        else:  # a (simulated) GPU tensor: through host memory
            if read:
                from glasstorch.ops.device import copy_to

                self.array = copy_to(tensor, "cpu")._storage.buffer
            else:
                self.array = np.empty(count, tensor.dtype.numpy)

    def copy_back(self) -> None:
        """Write the staged results into the tensor (nothing for a zero-copy buffer)."""
        if not (self.staged and self.write):
            return
        write_into(self.tensor, self.array)


def _strided_array(tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor's elements with its strides (shares its memory)."""
    buffer = tensor._storage.buffer
    item = buffer.itemsize
    return np.lib.stride_tricks.as_strided(
        buffer[tensor._offset :] if tensor.numel() else buffer[:0],
        shape=tensor.shape,
        strides=tuple(s * item for s in tensor.stride()),
    )


def write_into(tensor, flat: np.ndarray) -> None:
    """Copy the flat host array ``flat`` into ``tensor`` (any layout, CPU or GPU)."""
    if not tensor.is_cuda:
        _strided_array(tensor)[...] = flat.reshape(tensor.shape)
        return
    from glasstorch import from_numpy
    from glasstorch._tier import kernels

    host = from_numpy(np.ascontiguousarray(flat).reshape(tensor.shape))
    kernels.copy(tensor._strided(), host._strided())  # host-to-device


# ------------------------------------------------------------------------- reductions
def mpi_op(MPI, op: RedOpType, dtype):  # noqa: N803 - the module's own name
    """The MPI reduction for ``op`` on tensors of ``dtype`` (AVG reduces as SUM)."""
    if dtype.name == "bool":  # MPI defines only logical reductions on booleans
        table = {
            RedOpType.SUM: MPI.LOR,
            RedOpType.MAX: MPI.LOR,
            RedOpType.BOR: MPI.LOR,
            RedOpType.PRODUCT: MPI.LAND,
            RedOpType.MIN: MPI.LAND,
            RedOpType.BAND: MPI.LAND,
            RedOpType.BXOR: MPI.LXOR,
        }
        if op not in table:
            raise ValueError(f"ReduceOp.{op.name} is not supported on bool tensors")
        return table[op]
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and dtype.is_floating_point:
        raise ValueError(f"ReduceOp.{op.name} needs integer or bool tensors, got {dtype}")
    return {
        RedOpType.SUM: MPI.SUM,
        RedOpType.AVG: MPI.SUM,
        RedOpType.PRODUCT: MPI.PROD,
        RedOpType.MIN: MPI.MIN,
        RedOpType.MAX: MPI.MAX,
        RedOpType.BAND: MPI.BAND,
        RedOpType.BOR: MPI.BOR,
        RedOpType.BXOR: MPI.BXOR,
    }[op]


def divide_for_average(array: np.ndarray, size: int) -> None:
    """Finish an AVG in place: the sum divided by the number of ranks.

    Integers round toward zero (as NCCL's ``ncclAvg``), never through float64,
    which would lose int64 values above 2**53.
    """
    if array.dtype.kind == "f":
        array /= size
    elif array.dtype.kind == "b":
        raise ValueError("ReduceOp.AVG is not supported on bool tensors")
    else:
        quotient = np.abs(array) // size
        np.copyto(array, np.where(array < 0, -quotient, quotient).astype(array.dtype))


# ------------------------------------------------------------------------ the backend
class MpiBackend:
    """The collectives of one process group over its MPI communicator.

    Args:
        comm: the group's communicator (its own duplicate: a program's other
            MPI traffic can never match the group's messages).
    """

    name = "mpi"

    def __init__(self, comm) -> None:
        self.MPI = load_mpi()
        self.comm = comm
        self.size = comm.Get_size()

    # Each method makes the Work; the process group queues it.
    def all_reduce(self, tensor, op: RedOpType) -> Work:
        buffer = HostBuffer(tensor, read=True, write=True)
        reduction = mpi_op(self.MPI, op, tensor.dtype)

        def run():
            self.comm.Allreduce(self.MPI.IN_PLACE, buffer.array, op=reduction)
            if op is RedOpType.AVG:
                divide_for_average(buffer.array, self.size)

        return Work("all_reduce", run, buffer.copy_back, [tensor])

    def broadcast(self, tensor, root: int) -> Work:
        is_root = self.comm.Get_rank() == root
        buffer = HostBuffer(tensor, read=is_root, write=not is_root)

        def run():
            self.comm.Bcast(buffer.array, root=root)

        return Work("broadcast", run, buffer.copy_back, [tensor])

    def reduce(self, tensor, root: int, op: RedOpType) -> Work:
        is_root = self.comm.Get_rank() == root
        buffer = HostBuffer(tensor, read=True, write=is_root)
        reduction = mpi_op(self.MPI, op, tensor.dtype)

        def run():
            if is_root:
                self.comm.Reduce(self.MPI.IN_PLACE, buffer.array, op=reduction, root=root)
                if op is RedOpType.AVG:
                    divide_for_average(buffer.array, self.size)
            else:
                self.comm.Reduce(buffer.array, None, op=reduction, root=root)

        return Work("reduce", run, buffer.copy_back, [tensor])

    def all_gather_into_tensor(self, output, input) -> Work:
        source = HostBuffer(input, read=True)
        target = HostBuffer(output, read=False, write=True)

        def run():
            self.comm.Allgather(source.array, target.array)

        return Work("all_gather_into_tensor", run, target.copy_back, [output])

    def all_gather(self, outputs: list, input) -> Work:
        source = HostBuffer(input, read=True)
        gathered = np.empty(self.size * input.numel(), input.dtype.numpy)

        def run():
            self.comm.Allgather(source.array, gathered)

        return Work("all_gather", run, _split_into(outputs, gathered), list(outputs))

    def reduce_scatter_tensor(self, output, input, op: RedOpType) -> Work:
        source = HostBuffer(input, read=True)
        target = HostBuffer(output, read=False, write=True)
        reduction = mpi_op(self.MPI, op, input.dtype)

        def run():
            self.comm.Reduce_scatter_block(source.array, target.array, op=reduction)
            if op is RedOpType.AVG:
                divide_for_average(target.array, self.size)

        return Work("reduce_scatter_tensor", run, target.copy_back, [output])

    def gather(self, input, outputs: list | None, root: int) -> Work:
        source = HostBuffer(input, read=True)
        is_root = self.comm.Get_rank() == root
        gathered = np.empty(self.size * input.numel(), input.dtype.numpy) if is_root else None

        def run():
            self.comm.Gather(source.array, gathered, root=root)

        finish = _split_into(outputs, gathered) if is_root else None
        return Work("gather", run, finish, list(outputs or []))

    def scatter(self, output, inputs: list | None, root: int) -> Work:
        target = HostBuffer(output, read=False, write=True)
        chunks = None
        if self.comm.Get_rank() == root:
            chunks = np.concatenate([HostBuffer(t, read=True).array for t in inputs])

        def run():
            self.comm.Scatter(chunks, target.array, root=root)

        return Work("scatter", run, target.copy_back, [output])

    def all_to_all_single(self, output, input, output_splits, input_splits) -> Work:
        """Rank ``i`` sends its ``j``-th slice of ``input`` (along dim 0) to rank ``j``.

        The splits are numbers of rows; a row of a contiguous tensor is a run
        of elements, so ``MPI_Alltoallv`` gets element counts and offsets.
        """
        source = HostBuffer(input, read=True)
        target = HostBuffer(output, read=False, write=True)
        send_row = input.numel() // max(1, input.shape[0]) if input.dim() else 1
        receive_row = output.numel() // max(1, output.shape[0]) if output.dim() else 1
        send_counts = [n * send_row for n in input_splits]
        receive_counts = [n * receive_row for n in output_splits]

        def run():
            self.comm.Alltoallv(
                [source.array, (send_counts, _offsets(send_counts))],
                [target.array, (receive_counts, _offsets(receive_counts))],
            )

        return Work("all_to_all_single", run, target.copy_back, [output])

    def barrier(self) -> Work:
        return Work("barrier", self.comm.Barrier)

    # Point to point: posted at once as non-blocking MPI calls (see RequestWork).
    def isend(self, tensor, dst: int, tag: int) -> Work:
        buffer = HostBuffer(tensor, read=True)
        request = self.comm.Isend(buffer.array, dest=dst, tag=tag)
        return RequestWork("send", request, None, keep=buffer)

    def irecv(self, tensor, src: int | None, tag: int) -> Work:
        buffer = HostBuffer(tensor, read=False, write=True)
        source = self.MPI.ANY_SOURCE if src is None else src
        request = self.comm.Irecv(buffer.array, source=source, tag=tag)
        return RequestWork("recv", request, buffer.copy_back, keep=buffer, status=self.MPI.Status())


def _offsets(counts: list[int]) -> list[int]:
    """Where each rank's part starts: the running sum of the counts before it."""
    offsets, total = [], 0
    for count in counts:
        offsets.append(total)
        total += count
    return offsets


def _split_into(outputs: list, gathered: np.ndarray):
    """A ``finish`` that copies the rank-by-rank chunks of ``gathered`` into ``outputs``."""

    def finish():
        count = gathered.size // len(outputs)
        for index, tensor in enumerate(outputs):
            write_into(tensor, gathered[index * count : (index + 1) * count])

    return finish


class RequestWork(Work):
    """The Work of ``isend``/``irecv``: an MPI request posted when the call was made.

    Point-to-point messages do not go through the group's queue: a blocking
    ``MPI_Send`` of a large message waits for the matching receive, so two
    ranks that both send first would wait for each other forever. The
    non-blocking ``MPI_Isend``/``MPI_Irecv`` are posted at once, in the order
    of the calls, and :meth:`wait` completes them with ``MPI_Wait``.
    """

    def __init__(self, name, request, finish, keep, status=None) -> None:
        super().__init__(name, run=lambda: None, finish=finish)
        self._request = request
        self._keep = keep  # the host buffer must live until the request completes
        self._status = status

    def is_completed(self) -> bool:
        if not self._done.is_set() and self._request.Test(self._status):
            self._complete()
        return self._done.is_set()

    def _complete(self) -> None:
        if self._status is not None:
            self._value = self._status.Get_source()
        self._done.set()

    def wait(self, timeout=None) -> bool:
        if not self._done.is_set():
            from glasstorch.distributed import debug

            with debug.watched(self):  # the timeout watchdog sees the wait
                self._request.Wait(self._status)
            self._complete()
        return super().wait(timeout)
