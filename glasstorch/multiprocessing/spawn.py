"""``spawn``: start ``nprocs`` processes running ``fn(i, *args)`` and wait for them.

Each process runs its function inside :func:`_wrap`, which catches an
exception, sends its formatted traceback to the parent over a queue of its
own, and exits with status 1. The parent waits on all processes at once
(:meth:`ProcessContext.join`); when one fails it stops the others and raises
:class:`ProcessRaisedException` with the child's traceback in the message, or
:class:`ProcessExitedException` when the child died without raising (a
``sys.exit(3)``, a signal). PyTorch's ``torch.multiprocessing.spawn`` behaves
the same way and uses the same exception names and messages.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import time
import traceback
from collections.abc import Callable


class ProcessException(Exception):
    """A process started by :func:`spawn` failed.

    Attributes:
        msg: the message.
        error_index: which process failed (its ``i``).
        pid: its process id.
    """

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)

    @property
    def error_pid(self) -> int:
        """The failed process's id (another name for ``pid``)."""
        return self.pid


class ProcessRaisedException(ProcessException):
    """A process started by :func:`spawn` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process started by :func:`spawn` ended with a non-zero status or a signal, without raising.

    Attributes:
        exit_code: its exit status (negative: killed by a signal).
        signal_name: the signal's name, such as ``"SIGKILL"``, or ``None``.
    """

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_queue) -> None:
    """The body of process ``i``: run ``fn(i, *args)``; on an error, report it and exit 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping everyone: leave quietly
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by :func:`spawn` with ``join=False``; :meth:`join` waits for them.

    Attributes:
        processes: the :class:`multiprocessing.Process` objects, by index.
        error_queues: one queue per process, which carries its traceback if it raises.
    """

    def __init__(self, processes: list, error_queues: list):
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids, by index."""
        return [process.pid for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes to end.

        Args:
            timeout: the most seconds to wait (``None``: until something happens).
            grace_period: when one process fails, how long the others get to
                end after ``SIGTERM`` before they are killed (``None``: no
                ``SIGKILL``, wait for them).

        Returns:
            True once every process has ended with status 0; False if some are
            still running when ``timeout`` passes.

        Raises:
            ProcessRaisedException: a process raised (its traceback is in the message).
            ProcessExitedException: a process ended badly without raising.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_the_others(grace_period)
        self._raise_for(failed)

    def _stop_the_others(self, grace_period: float | None) -> None:
        """Send SIGTERM to the processes still running; SIGKILL after ``grace_period``."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        if grace_period is not None:
            deadline = time.monotonic() + grace_period
            for process in self.processes:
                process.join(max(0.0, deadline - time.monotonic()))
            for process in self.processes:
                if process.is_alive():
                    process.kill()
        for process in self.processes:
            process.join()

    def _raise_for(self, index: int):
        process = self.processes[index]
        queue = self.error_queues[index]
        if queue.empty():  # it did not raise: it exited or was killed
            code = process.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {index} terminated with signal {name}",
                    error_index=index,
                    error_pid=process.pid,
                    exit_code=code,
                    signal_name=name,
                )
            raise ProcessExitedException(
                f"process {index} terminated with exit code {code}",
                error_index=index,
                error_pid=process.pid,
                exit_code=code,
            )
        trace = queue.get()
        message = f"\n\n-- Process {index} terminated with the following error:\n{trace}"
        raise ProcessRaisedException(message, index, process.pid)


def start_processes(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with the given start method.

    See :func:`spawn`, which is this function with ``start_method="spawn"``.
    """
    context = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        error_queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(error_queue)
    process_context = ProcessContext(processes, error_queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Run ``fn(i, *args)`` in ``nprocs`` new processes, for ``i`` from 0 to ``nprocs - 1``.

    Tensors in ``args`` travel as shared memory (see
    :mod:`glasstorch.multiprocessing`), so the processes and the parent share
    them: that is how a Hogwild run hands every worker the same model.

    Args:
        fn: a function that can be pickled (defined at module level), called
            as ``fn(i, *args)``.
        args: the remaining arguments of ``fn``.
        nprocs: how many processes to start.
        join: wait for them (True) or return a :class:`ProcessContext` at once.
        daemon: start them as daemon processes.
        start_method: ``"spawn"`` (the default, as in PyTorch), ``"fork"``
            or ``"forkserver"``.

    Returns:
        ``None`` with ``join=True``; else the :class:`ProcessContext`.

    Raises:
        ProcessRaisedException: a process raised; the others are terminated,
            and the message holds the process's traceback.
        ProcessExitedException: a process ended with a non-zero status or a
            signal without raising.

    Example::

        def work(rank, shared):
            shared[rank] = rank + 1.0  # an in-place write into shared memory

        shared = torch.zeros(2).share_memory_()
        torch.multiprocessing.spawn(work, args=(shared,), nprocs=2)
        shared  # tensor([1., 2.])
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)


__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "spawn",
    "start_processes",
]
