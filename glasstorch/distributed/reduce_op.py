"""``ReduceOp``: how a reduction combines the ranks' values (``dist.ReduceOp.SUM`` and friends)."""

from __future__ import annotations

import enum


class RedOpType(enum.Enum):
    """The reductions, numbered as PyTorch numbers them."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class ReduceOp:
    """The element-wise operation of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``.

    ``SUM``, ``PRODUCT``, ``MIN`` and ``MAX`` are MPI's own reductions
    (``MPI_SUM``, ``MPI_PROD``, ...), run inside the MPI library. ``AVG`` is
    not an MPI operation: it runs as ``SUM`` and then divides by the group's
    size (integer tensors divide rounding toward zero, as NCCL's average does).
    ``BAND``, ``BOR`` and ``BXOR`` are bitwise, for integer and bool tensors.
    On bool tensors MPI has only logical reductions, so ``SUM`` and ``MAX``
    become logical or, ``PRODUCT`` and ``MIN`` logical and (the same results).

    As in PyTorch the members are the values of :class:`RedOpType`:
    ``ReduceOp.SUM`` prints as ``<RedOpType.SUM: 0>``.
    """

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


def as_reduce_op(op, collective: str) -> RedOpType:
    """``op`` as a :class:`RedOpType`, or PyTorch's error for anything else."""
    if isinstance(op, RedOpType):
        if op is RedOpType.PREMUL_SUM:
            raise ValueError(
                f"{collective} does not support ReduceOp.PREMUL_SUM: it needs a scale factor "
                "(torch.distributed._make_nccl_premul_sum), which glasstorch does not have"
            )
        return op
    raise TypeError(
        f"{collective}(): argument 'op' must be a torch.distributed.ReduceOp "
        f"(e.g. ReduceOp.SUM), not {type(op).__name__}"
    )
