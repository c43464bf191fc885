"""``torch.distributed``: several processes training one model, over MPI.

Data-parallel training runs one copy of the program per *rank* (a process,
usually one per GPU or per group of cores); the ranks exchange tensors with
*collectives* such as ``all_reduce``. This package is PyTorch's API for that:

* process groups (:mod:`~glasstorch.distributed.process_group`):
  ``init_process_group``, ``new_group``, ``get_rank``, ``get_world_size``;
* collectives and point-to-point messages
  (:mod:`~glasstorch.distributed.collectives`; of Python objects:
  :mod:`~glasstorch.distributed.objects`), each with ``async_op=True``
  returning a :class:`Work` (:mod:`~glasstorch.distributed.work` explains why
  that needs a communication thread on MPI);
* backends: ``"mpi"`` (:mod:`~glasstorch.distributed.mpi_backend`, mpi4py over
  Open MPI or any MPI library; zero copy on CPU tensors) and ``"nccl"``
  (:mod:`~glasstorch.distributed.nccl_backend`, tensors on a real GPU);
* debugging (:mod:`~glasstorch.distributed.debug`): detail mode
  (``TORCH_DISTRIBUTED_DEBUG=DETAIL``), the timeout watchdog, ending the job
  when a rank raises;
* the launcher, ``python -m glasstorch.distributed.run`` (torchrun's flags,
  :mod:`~glasstorch.distributed.run`).

Importing this package does not start MPI; :func:`init_process_group` does.
"""

from __future__ import annotations

from glasstorch.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_tensor,
    scatter,
    send,
)
from glasstorch.distributed.objects import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    scatter_object_list,
)
from glasstorch.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)
from glasstorch.distributed.reduce_op import ReduceOp
from glasstorch.distributed.work import Work

group = GroupMember  # PyTorch's dist.group.WORLD

__all__ = [
    "Backend",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
]
