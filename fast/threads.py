"""The fast tier's thread count: OpenMP's.

Kernels split large loops across an OpenMP thread pool (its size defaults to
``OMP_NUM_THREADS``, or the number of cores). ``set_num_threads`` sets it for
the calling thread's later kernel calls (``omp_set_num_threads``).

After ``fork()`` (a DataLoader worker, a ``multiprocessing`` process started
with the fork method, a plain ``os.fork``) the child keeps the forking
thread's count, and ``set_num_threads`` works there as anywhere: the C
extension hands the forking thread's pool back just before each fork (a
``pthread_atfork`` handler in ``fast/csrc/threads.c``), so the child builds a
fresh pool instead of waiting forever on the parent's, whose threads fork does
not copy. DataLoader workers then choose one thread themselves, as PyTorch's do.
"""

from __future__ import annotations

from ._glue import lib


class ThreadKernels:
    """set_num_threads and get_num_threads, through OpenMP."""

    def set_num_threads(self, n: int) -> None:
        lib.gt_set_num_threads(n)

    def get_num_threads(self) -> int:
        return lib.gt_max_threads()
