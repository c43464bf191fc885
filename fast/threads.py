"""The fast tier's thread count: OpenMP's.

Kernels split large loops across an OpenMP thread pool (its size defaults to
``OMP_NUM_THREADS``, or the number of cores). ``set_num_threads`` sets it for
the calling thread's later kernel calls (``omp_set_num_threads``).
"""

from __future__ import annotations

from ._glue import lib


class ThreadKernels:
    """set_num_threads and get_num_threads, through OpenMP."""

    def set_num_threads(self, n: int) -> None:
        lib.gt_set_num_threads(n)

    def get_num_threads(self) -> int:
        return lib.gt_max_threads()
