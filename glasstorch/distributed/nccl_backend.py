"""The ``"nccl"`` backend: collectives on tensors in GPU memory, through NCCL.

NCCL (NVIDIA Collective Communications Library) runs collectives as CUDA
kernels that read and write GPU memory directly and move data over NVLink,
PCIe or InfiniBand without a trip through host memory. CuPy exposes it as
``cupy.cuda.nccl``. A NCCL call only *queues* work on a CUDA stream, so it
needs no communication thread: it returns at once, and ordering comes from
the streams, as in PyTorch's ``ProcessGroupNCCL``:

1. the collective runs on the group's own communication stream, after an
   event recorded on the program's current stream (so it sees the tensor's
   latest values);
2. ``Work.wait()`` makes the current stream wait for an event recorded after
   the collective, so later kernels see the result; the host does not block.

The ranks find each other through MPI: rank 0 makes NCCL's unique id and
broadcasts it over the group's communicator.

This backend is used only with a real GPU (``GLASSTORCH_CUDA=cupy``). The
simulated GPU has no NCCL; there the ``"mpi"`` backend moves CUDA tensors
through host memory. glasstorch's test machines have no GPU, so this file is
not exercised by the test suite.
"""

from __future__ import annotations

from glasstorch.distributed.reduce_op import RedOpType
from glasstorch.distributed.work import Work


def nccl_available() -> bool:
    """Whether NCCL can run: the CuPy driver is active and CuPy was built with NCCL."""
    from glasstorch._gpu import runtime

    if runtime.driver is None or getattr(runtime.driver, "name", "") != "cupy":
        return False
    try:
        from cupy.cuda import nccl
    except ImportError:
        return False
    return nccl.available if hasattr(nccl, "available") else True


class NcclBackend:
    """The collectives of one process group on CUDA tensors, over a NCCL communicator."""

    name = "nccl"

    def __init__(self, comm) -> None:
        import cupy
        from cupy.cuda import nccl

        self.cupy = cupy
        self.nccl = nccl
        self.size = comm.Get_size()
        self.rank = comm.Get_rank()
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        unique_id = comm.bcast(unique_id, root=0)
        self.comm = nccl.NcclCommunicator(self.size, unique_id, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.dtypes = {
            "bool": nccl.NCCL_UINT8,
            "uint8": nccl.NCCL_UINT8,
            "int32": nccl.NCCL_INT32,
            "int64": nccl.NCCL_INT64,
            "float32": nccl.NCCL_FLOAT32,
            "float64": nccl.NCCL_FLOAT64,
        }
        self.ops = {
            RedOpType.SUM: nccl.NCCL_SUM,
            RedOpType.PRODUCT: nccl.NCCL_PROD,
            RedOpType.MIN: nccl.NCCL_MIN,
            RedOpType.MAX: nccl.NCCL_MAX,
            RedOpType.AVG: getattr(nccl, "NCCL_AVG", nccl.NCCL_SUM),
        }

    # ------------------------------------------------------------------ helpers
    def _check(self, *tensors) -> None:
        for tensor in tensors:
            if not tensor.is_contiguous():
                raise RuntimeError("Tensors must be contiguous")
            if not tensor.is_cuda:
                raise RuntimeError("Tensors must be CUDA and dense")

    def _op(self, op: RedOpType, tensor):
        if op not in self.ops:
            raise ValueError(f"ReduceOp.{op.name} is not supported by the nccl backend")
        return self.ops[op]

    def _queue(self, name: str, call, outputs: list, average=None) -> Work:
        """A Work whose run queues ``call`` on the communication stream, ordered by events."""
        from glasstorch import cuda

        current = self.cupy.cuda.ExternalStream(cuda.current_stream()._handle.ptr)
        done = self.cupy.cuda.Event(disable_timing=True)

        def run():
            ready = self.cupy.cuda.Event(disable_timing=True)
            ready.record(current)
            self.stream.wait_event(ready)
            call(self.stream.ptr)
            done.record(self.stream)

        def finish():
            current.wait_event(done)
            if average is not None:  # glasstorch queues it on the current stream: after `done`
                average()

        work = Work(name, run, finish, outputs)
        work.inline = True  # queued on a stream: returns at once, no thread needed
        return work

    def _average(self, tensor, op: RedOpType):
        """NCCL builds without ncclAvg: divide the sum afterwards (floats; integers truncate)."""
        if op is not RedOpType.AVG or hasattr(self.nccl, "NCCL_AVG"):
            return None
        if tensor.is_floating_point():
            return lambda: tensor.div_(self.size)
        return lambda: tensor.copy_(tensor.div(self.size, rounding_mode="trunc"))

    def _count_type(self, tensor):
        return tensor.numel(), self.dtypes[tensor.dtype.name]

    # ---------------------------------------------------------------- collectives
    def all_reduce(self, tensor, op: RedOpType) -> Work:
        self._check(tensor)
        count, dtype = self._count_type(tensor)
        pointer, reduction = tensor.data_ptr(), self._op(op, tensor)
        return self._queue(
            "all_reduce",
            lambda s: self.comm.allReduce(pointer, pointer, count, dtype, reduction, s),
            [tensor],
            self._average(tensor, op),
        )

    def broadcast(self, tensor, root: int) -> Work:
        self._check(tensor)
        count, dtype = self._count_type(tensor)
        pointer = tensor.data_ptr()
        return self._queue(
            "broadcast",
            lambda s: self.comm.broadcast(pointer, pointer, count, dtype, root, s),
            [tensor],
        )

    def reduce(self, tensor, root: int, op: RedOpType) -> Work:
        self._check(tensor)
        count, dtype = self._count_type(tensor)
        pointer, reduction = tensor.data_ptr(), self._op(op, tensor)
        return self._queue(
            "reduce",
            lambda s: self.comm.reduce(pointer, pointer, count, dtype, reduction, root, s),
            [tensor],
            self._average(tensor, op) if self.rank == root else None,
        )

    def all_gather_into_tensor(self, output, input) -> Work:
        self._check(output, input)
        count, dtype = self._count_type(input)
        source, target = input.data_ptr(), output.data_ptr()
        return self._queue(
            "all_gather_into_tensor",
            lambda s: self.comm.allGather(source, target, count, dtype, s),
            [output],
        )

    def all_gather(self, outputs: list, input) -> Work:
        from glasstorch import empty

        self._check(input)
        gathered = empty((self.size, *input.shape), dtype=input.dtype, device=input.device)
        work = self.all_gather_into_tensor(gathered, input)
        copy_ready = work._finish

        def finish():
            copy_ready()
            for index, tensor in enumerate(outputs):
                tensor.copy_(gathered[index])

        work._finish = finish
        work.name, work._outputs = "all_gather", list(outputs)
        return work

    def reduce_scatter_tensor(self, output, input, op: RedOpType) -> Work:
        self._check(output, input)
        count, dtype = self._count_type(output)
        source, target, reduction = input.data_ptr(), output.data_ptr(), self._op(op, input)
        return self._queue(
            "reduce_scatter_tensor",
            lambda s: self.comm.reduceScatter(source, target, count, dtype, reduction, s),
            [output],
            self._average(output, op),
        )

    def _not_here(self, name: str):
        raise RuntimeError(
            f"{name} on CUDA tensors is not implemented by glasstorch's nccl backend; "
            "move the tensors to the CPU (the mpi backend) for it"
        )

    def gather(self, input, outputs, root: int) -> Work:
        self._not_here("gather")

    def scatter(self, output, inputs, root: int) -> Work:
        self._not_here("scatter")

    def isend(self, tensor, dst: int, tag: int) -> Work:
        self._not_here("send")

    def irecv(self, tensor, src, tag: int) -> Work:
        self._not_here("recv")
