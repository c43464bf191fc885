"""``glasstorch.nn.parallel``: data-parallel training across processes.

* :class:`DistributedDataParallel` (:mod:`~glasstorch.nn.parallel.distributed`):
  the module wrapper that averages gradients over the processes of a group.
* :mod:`~glasstorch.nn.parallel.reducer`: how it does so, with buckets whose
  all-reduce overlaps the rest of backward.
"""

from glasstorch.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
