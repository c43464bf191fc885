"""Collectives of Python objects: ``broadcast_object_list``, ``all_gather_object``, ...

Programs send small Python values between ranks too: a configuration read by
rank 0, every rank's accuracy, a random seed. These calls pickle each object
and move the bytes with MPI (mpi4py's lower-case methods, ``comm.bcast``,
``comm.allgather``, which pickle for you); PyTorch does the same through
tensors of bytes. Tensors inside the objects travel pickled, as copies.

As in PyTorch, unpickling runs code chosen by the sender: use these only
between ranks of your own job. They run in order with the group's other
collectives and always wait (no ``async_op``).
"""

from __future__ import annotations

from typing import Any

from glasstorch.distributed import debug
from glasstorch.distributed.collectives import _root
from glasstorch.distributed.process_group import not_member_warning, resolve_group
from glasstorch.distributed.work import Work


def _call(group, name: str, run, root: int | None = None):
    """Run ``run()`` (an mpi4py object collective) in the group's order; return its value."""
    group.sequence_number += 1
    if group.check_comm is not None:
        debug.check_collective(group, debug.fingerprint(name, [], root=root))
    work = Work(name, run)
    debug.record_in_profiler(work, group)
    group.queue.submit(work, async_op=False)
    return work._value


def broadcast_object_list(
    object_list: list[Any], src: int | None = None, group=None, device=None, group_src=None
) -> None:
    """Replace ``object_list``'s items on every rank with rank ``src``'s (in place).

    Every rank passes a list of the same length; the non-source ranks' items
    are placeholders.
    """
    group = resolve_group(group)
    if group is None:
        return not_member_warning("broadcast_object_list")
    root = _root(group, src, group_src, "broadcast", "src")
    is_root = group.rank() == root
    sent = list(object_list) if is_root else None
    received = _call(
        group, "broadcast_object_list", lambda: group.comm.bcast(sent, root=root), root
    )
    object_list[:] = received


def all_gather_object(object_list: list[Any], obj: Any, group=None) -> None:
    """Fill ``object_list`` (one item per rank) with every rank's ``obj``, on every rank."""
    group = resolve_group(group)
    if group is None:
        return not_member_warning("all_gather_object")
    if len(object_list) != group.size():
        raise ValueError(
            f"object_list has {len(object_list)} items; it needs one per rank ({group.size()})"
        )
    object_list[:] = _call(group, "all_gather_object", lambda: group.comm.allgather(obj))


def gather_object(
    obj: Any,
    object_gather_list: list[Any] | None = None,
    dst: int | None = None,
    group=None,
    group_dst=None,
) -> None:
    """Collect every rank's ``obj`` into ``object_gather_list`` on rank ``dst`` only."""
    group = resolve_group(group)
    if group is None:
        return not_member_warning("gather_object")
    root = _root(group, dst, group_dst, "gather", "dst")
    if group.rank() == root and (
        object_gather_list is None or len(object_gather_list) != group.size()
    ):
        raise ValueError(
            "Argument ``object_gather_list`` must be specified on destination rank, with one "
            f"item per rank ({group.size()})."
        )
    gathered = _call(group, "gather_object", lambda: group.comm.gather(obj, root=root), root)
    if group.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(
    scatter_object_output_list: list[Any],
    scatter_object_input_list: list[Any] | None = None,
    src: int | None = None,
    group=None,
    group_src=None,
) -> None:
    """Give rank ``i`` item ``i`` of rank ``src``'s input list, in ``output_list[0]``."""
    group = resolve_group(group)
    if group is None:
        return not_member_warning("scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError(
            "Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    root = _root(group, src, group_src, "scatter", "src")
    items = None
    if group.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != group.size():
            raise ValueError(
                "Argument ``scatter_object_input_list`` must be specified on source rank, with "
                f"one item per rank ({group.size()})."
            )
        items = list(scatter_object_input_list)
    scatter_object_output_list[0] = _call(
        group, "scatter_object_list", lambda: group.comm.scatter(items, root=root), root
    )
