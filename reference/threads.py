"""The reference tier's thread count: one, always.

Every reference kernel is a plain Python loop in the calling thread. The
number given to ``set_num_threads`` is remembered, so that
``get_num_threads`` reads back what a program set, as it does in PyTorch, but
it changes nothing here.

As on the fast tier, a ``fork()``ed child inherits the number, and DataLoader
workers set it to 1 when they start.
"""

from __future__ import annotations


class ThreadKernels:
    """set_num_threads and get_num_threads."""

    _num_threads = 1

    def set_num_threads(self, n: int) -> None:
        self._num_threads = n

    def get_num_threads(self) -> int:
        return self._num_threads
