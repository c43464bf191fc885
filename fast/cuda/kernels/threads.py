"""The thread-count kernels on the device: CPU threads do not apply to it."""

from __future__ import annotations


class ThreadKernels:
    """set_num_threads, get_num_threads."""

    def set_num_threads(self, n: int) -> None:
        """CPU threads do not apply to the device: nothing to set."""

    def get_num_threads(self) -> int:
        """One host thread queues the device's work."""
        return 1
