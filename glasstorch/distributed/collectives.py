"""The collectives and point-to-point calls: PyTorch's signatures, checks and errors.

Every function here does the same four things:

1. check its arguments as PyTorch does (types, sizes, dtypes, root ranks),
   raising PyTorch's errors;
2. in detail mode (``TORCH_DISTRIBUTED_DEBUG=DETAIL``), compare this call
   with the other ranks' calls before anything is sent
   (:mod:`glasstorch.distributed.debug`);
3. ask the group's backend for a :class:`~glasstorch.distributed.work.Work`
   (the ``"mpi"`` backend in :mod:`~glasstorch.distributed.mpi_backend`);
4. queue it on the group's communication thread and either wait for it or,
   with ``async_op=True``, return it.

What each collective computes, for ``p`` ranks holding tensors ``x_0 ... x_{p-1}``:

======================  =============================================================
``all_reduce``          every rank gets ``x_0 + ... + x_{p-1}`` (or max, min, ...)
``reduce``              only rank ``dst`` gets it
``broadcast``           every rank gets ``x_src``
``all_gather``          every rank gets the list ``[x_0, ..., x_{p-1}]``
``gather``              only rank ``dst`` gets that list
``scatter``             rank ``i`` gets ``list_src[i]``
``reduce_scatter``      rank ``i`` gets chunk ``i`` of the reduction
======================  =============================================================

An all-reduce is a reduce-scatter followed by an all-gather: that is how the
ring algorithm of MPI libraries and NCCL moves only ``2 (p - 1) / p`` of the
data per rank whatever ``p`` is.
"""

from __future__ import annotations

from glasstorch.distributed import debug
from glasstorch.distributed.process_group import (
    ProcessGroup,
    not_member_warning,
    resolve_group,
)
from glasstorch.distributed.reduce_op import ReduceOp, as_reduce_op
from glasstorch.distributed.work import Work
from glasstorch.tensor import Tensor


# ------------------------------------------------------------------------- checks
def _check_tensor(tensor, name: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
            f"             but got {type(tensor)} instead."
        )


def _check_tensor_list(tensors, name: str) -> None:
    if not isinstance(tensors, list) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
            f"             but got {type(tensors)} instead."
        )


def _check_same_dtype(*tensors) -> None:
    """PyTorch's check that a call's tensors share one dtype (its wording, spacing included)."""
    first = tensors[0].dtype
    for tensor in tensors[1:]:
        if tensor.dtype != first:
            raise ValueError(
                f"Invalid usage of tensors with different dtypesFound {first} and  {tensor.dtype}"
            )


def _sizes(tensor) -> str:
    return "(" + ", ".join(str(n) for n in tensor.shape) + ")"


def _options(tensor) -> str:
    """A tensor's type as PyTorch's C++ errors print it (``TensorOptions(dtype=float, ...)``)."""
    return (
        f"TensorOptions(dtype={tensor.dtype.c_name}, device={tensor.device}, layout=Strided, "
        "requires_grad=false (default), pinned_memory=false (default), "
        "memory_format=(nullopt))"
    )


def _check_like(collective: str, expected, tensors: list) -> None:
    """Each of ``tensors`` must have ``expected``'s type, device and size (gloo's errors)."""
    for index, tensor in enumerate(tensors):
        if tensor.dtype != expected.dtype or tensor.device != expected.device:
            raise RuntimeError(
                f"ProcessGroupMPI::{collective}: invalid tensor type at index {index} "
                f"(expected {_options(expected)}, got {_options(tensor)})"
            )
        if tuple(tensor.shape) != tuple(expected.shape):
            raise RuntimeError(
                f"ProcessGroupMPI::{collective}: invalid tensor size at index {index} "
                f"(expected {_sizes(expected)}, got {_sizes(tensor)})"
            )


def _check_same_device(collective: str, *tensors) -> None:
    devices = {t.device.type for t in tensors}
    if len(devices) > 1:
        raise RuntimeError(
            f"ProcessGroupMPI::{collective}: tensors must all be on the same device, got "
            + " and ".join(sorted(devices))
        )


def _root(group: ProcessGroup, rank, group_rank, collective: str, role: str) -> int:
    """The group rank of a collective's root, from a global ``rank`` or a ``group_rank``."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {role} and group_{role}")
    if group_rank is None:
        if rank is None:
            rank = 0
        if group.ranks == list(range(len(group.ranks))):  # the world, or a prefix of it
            group_rank = rank
        elif rank not in group.ranks:
            raise ValueError(f"Global rank {rank} is not part of group {group}")
        else:
            group_rank = group.ranks.index(rank)
    if not 0 <= group_rank < group.size():
        raise RuntimeError(f"ProcessGroupMPI::{collective}: invalid root rank: {group_rank}")
    return group_rank


def _run(group: ProcessGroup, work_maker, async_op: bool, fingerprint) -> Work | None:
    """Steps 2 to 4 of the module docstring for one call."""
    group.sequence_number += 1
    if group.check_comm is not None:
        debug.check_collective(group, fingerprint)
    work = work_maker()
    debug.record_in_profiler(work, group)
    group.queue.submit(work, async_op)
    return work if async_op else None


# -------------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group's ranks, in place on every rank.

    Args:
        tensor: the input and the output (every rank's tensor has the same
            shape and dtype).
        op: a :class:`ReduceOp` (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR).
        group: the process group (the default group if None).
        async_op: return a :class:`Work` instead of waiting.

    Example::

        t = torch.tensor([float(dist.get_rank() + 1)])
        dist.all_reduce(t)          # on 2 ranks every t is now tensor([3.])
    """
    _check_tensor(tensor, "tensor")
    op = as_reduce_op(op, "all_reduce")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("all_reduce")
    return _run(
        group,
        lambda: group.backend_for(tensor).all_reduce(tensor, op),
        async_op,
        debug.fingerprint("all_reduce", [tensor], op),
    )


def broadcast(
    tensor: Tensor, src: int | None = None, group=None, async_op: bool = False, group_src=None
):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every other rank of the group."""
    _check_tensor(tensor, "tensor")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("broadcast")
    root = _root(group, src, group_src, "broadcast", "src")
    return _run(
        group,
        lambda: group.backend_for(tensor).broadcast(tensor, root),
        async_op,
        debug.fingerprint("broadcast", [tensor], root=root),
    )


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op=ReduceOp.SUM,
    group=None,
    async_op: bool = False,
    group_dst=None,
):
    """Reduce ``tensor`` across the group; only rank ``dst`` receives the result."""
    _check_tensor(tensor, "tensor")
    op = as_reduce_op(op, "reduce")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("reduce")
    root = _root(group, dst, group_dst, "reduce", "dst")
    return _run(
        group,
        lambda: group.backend_for(tensor).reduce(tensor, root, op),
        async_op,
        debug.fingerprint("reduce", [tensor], op, root=root),
    )


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` with rank ``i``'s ``tensor``, on every rank.

    ``tensor_list`` has one tensor per rank, each shaped and typed like ``tensor``.
    """
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    if tensor_list:
        _check_same_dtype(tensor, *tensor_list)
    group = resolve_group(group)
    if group is None:
        return not_member_warning("all_gather")
    if len(tensor_list) != group.size():
        raise RuntimeError(
            "ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
            f"(expected length {group.size()}, got {len(tensor_list)})"
        )
    _check_like("allgather", tensor, tensor_list)
    return _run(
        group,
        lambda: group.backend_for(tensor).all_gather(tensor_list, tensor),
        async_op,
        debug.fingerprint("all_gather", [tensor]),
    )


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False
):
    """Gather every rank's ``input_tensor`` into one ``output_tensor``, rank by rank.

    ``output_tensor`` holds ``world_size`` times the elements of
    ``input_tensor``: concatenated (``[p * n, ...]``) or stacked
    (``[p, n, ...]``), rank 0's first. MPI writes straight into it.
    """
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("all_gather_into_tensor")
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    _check_same_device("all_gather_into_tensor", output_tensor, input_tensor)
    if output_tensor.numel() != input_tensor.numel() * group.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    return _run(
        group,
        lambda: group.backend_for(input_tensor).all_gather_into_tensor(output_tensor, input_tensor),
        async_op,
        debug.fingerprint("all_gather_into_tensor", [input_tensor]),
    )


def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False
):
    """Reduce ``input`` across the group and give rank ``i`` the ``i``-th chunk of the result.

    ``input`` holds ``world_size`` times the elements of ``output``.
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    op = as_reduce_op(op, "reduce_scatter_tensor")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("reduce_scatter_tensor")
    if output.dtype != input.dtype:
        raise TypeError("input tensor must be the same type as the output tensor.")
    _check_same_device("reduce_scatter_tensor", output, input)
    if input.numel() != output.numel() * group.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    return _run(
        group,
        lambda: group.backend_for(input).reduce_scatter_tensor(output, input, op),
        async_op,
        debug.fingerprint("reduce_scatter_tensor", [input], op),
    )


def _check_tensor_and_list(name: str, tensor: Tensor, tensors) -> None:
    """``gather``'s or ``scatter``'s tensor and list (if any), checked on every rank."""
    _check_tensor(tensor, "tensor")
    if tensors is not None:
        _check_tensor_list(tensors, f"{name}_list")
        if tensors:
            _check_same_dtype(tensor, *tensors)


def _check_list_at_root(name: str, tensor, tensors, group, root: int, side: str, kind: str):
    """The list of ``gather`` (``side`` "destination", ``kind`` "output") or of
    ``scatter`` ("source", "input"): given, one per rank and like ``tensor`` on
    the root, and on no other rank, in PyTorch's words."""
    if group.rank() == root:
        if not tensors:
            raise ValueError(f"Argument ``{name}_list`` must be specified on {side} rank.")
        if len(tensors) != group.size():
            raise RuntimeError(
                f"ProcessGroupMPI::{name}: Incorrect {kind} list size {len(tensors)}. "
                f"{kind.capitalize()} list size should be {group.size()}, same as size of "
                "the process group."
            )
        _check_like(name, tensor, tensors)
    elif tensors:
        raise ValueError(f"Argument ``{name}_list`` must NOT be specified on non-{side} ranks.")


def gather(
    tensor: Tensor,
    gather_list: list | None = None,
    dst: int | None = None,
    group=None,
    async_op: bool = False,
    group_dst=None,
):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst`` only."""
    _check_tensor_and_list("gather", tensor, gather_list)
    group = resolve_group(group)
    if group is None:
        return not_member_warning("gather")
    root = _root(group, dst, group_dst, "gather", "dst")
    _check_list_at_root("gather", tensor, gather_list, group, root, "destination", "output")
    return _run(
        group,
        lambda: group.backend_for(tensor).gather(tensor, gather_list, root),
        async_op,
        debug.fingerprint("gather", [tensor], root=root),
    )


def scatter(
    tensor: Tensor,
    scatter_list: list | None = None,
    src: int | None = None,
    group=None,
    async_op: bool = False,
    group_src=None,
):
    """Send ``scatter_list[i]`` from rank ``src`` into ``tensor`` on rank ``i``."""
    _check_tensor_and_list("scatter", tensor, scatter_list)
    group = resolve_group(group)
    if group is None:
        return not_member_warning("scatter")
    root = _root(group, src, group_src, "scatter", "src")
    _check_list_at_root("scatter", tensor, scatter_list, group, root, "source", "input")
    return _run(
        group,
        lambda: group.backend_for(tensor).scatter(tensor, scatter_list, root),
        async_op,
        debug.fingerprint("scatter", [tensor], root=root),
    )


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None,
    group=None,
    async_op: bool = False,
):
    """Every rank sends slice ``j`` of ``input`` (along dim 0) to rank ``j``; ``output`` holds
    what each rank sent here, in rank order.

    Without split sizes, dim 0 is cut into ``world_size`` equal slices.
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("all_to_all_single")
    if output.dtype != input.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    _check_same_device("all_to_all_single", output, input)
    size = group.size()
    splits = []
    for tensor, given in ((input, input_split_sizes), (output, output_split_sizes)):
        rows = tensor.shape[0] if tensor.dim() else 1
        if not given:
            if rows % size:
                raise RuntimeError("Tensor's dim 0 does not divide equally across group size")
            given = [rows // size] * size
        elif len(given) != size or sum(given) != rows:
            raise RuntimeError(
                f"Split sizes {list(given)} do not cut dim 0 ({rows}) into {size} parts"
            )
        splits.append(list(given))
    return _run(
        group,
        lambda: group.backend_for(input).all_to_all_single(output, input, splits[1], splits[0]),
        async_op,
        debug.fingerprint("all_to_all_single", [input]),
    )


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached this call."""
    group = resolve_group(group)
    if group is None:
        return not_member_warning("barrier")
    return _run(group, group.backends["cpu"].barrier, async_op, debug.fingerprint("barrier", []))


# ---------------------------------------------------------------- point to point
def _peer(group: ProcessGroup, rank, group_rank, role: str) -> int:
    """The group rank of a send's destination or a receive's source."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {role} and group_{role}")
    if group_rank is None:
        if rank not in group.ranks:
            raise ValueError(f"Global rank {rank} is not part of group {group}")
        group_rank = group.ranks.index(rank)
    if group_rank == group.rank():
        word = "destination" if role == "dst" else "source"
        raise ValueError(
            f"Invalid {word} rank: {word} rank should not be the same as the rank of the "
            "current process."
        )
    return group_rank


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a :class:`Work` (or None off-group)."""
    _check_tensor(tensor, "tensor")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("isend")
    peer = _peer(group, dst, group_dst, "dst")
    work = group.backend_for(tensor).isend(tensor, peer, tag)
    work.group = group  # whose timeout applies while waiting
    return work


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank if None); returns a Work."""
    _check_tensor(tensor, "tensor")
    group = resolve_group(group)
    if group is None:
        return not_member_warning("irecv")
    peer = None if src is None and group_src is None else _peer(group, src, group_src, "src")
    work = group.backend_for(tensor).irecv(tensor, peer, tag)
    work.group = group
    return work


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` and wait until it is out."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank if None); returns the sender's rank.

    The sender's rank is global, as in PyTorch.
    """
    group_ = resolve_group(group)
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return group_.ranks[work._source_rank()]
