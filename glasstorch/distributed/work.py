"""``Work`` and the communication thread: how ``async_op=True`` overlaps communication.

With ``async_op=True`` a collective returns at once with a :class:`Work`, and
the program computes while the bytes travel; ``work.wait()`` blocks until the
collective is over. The obvious way to build that on MPI, a non-blocking call
(``MPI_Iallreduce``) and a ``MPI_Wait`` later, does not overlap anything: an
MPI library moves a large message in many steps (a ring all-reduce sends
``2 (p - 1)`` chunks), and it takes each step only while some thread is inside
an MPI call. A rank busy in a matrix multiply calls nothing, so its
non-blocking all-reduce sits still until ``wait()``.

So, like PyTorch's ``ProcessGroupMPI``, each process group owns one
*communication thread* and a queue. A collective becomes a job on the queue;
the thread takes jobs in order and runs each as a blocking MPI call (mpi4py
releases the GIL inside it), so MPI progresses while the main thread computes.
One thread per group keeps the order of the group's collectives the same on
every rank, which MPI requires: collectives on one communicator must be called
in the same order everywhere.

A synchronous collective (``async_op=False``) that finds the queue empty runs
on the calling thread itself: handing it to the thread and waiting would cost
two thread switches and give nothing back. One that finds jobs queued joins
the queue behind them and waits, so the order stays the order of the calls.

Errors raised by a job are kept and raised again by ``wait()``, on the
thread that asked for the result.

The price: an MPI library waits by polling. While a collective is in flight,
the communication thread keeps a core busy checking for arriving bytes, so a
rank computing beside it has one core fewer. With as many ranks as cores that
competes with the computation (Open MPI's ``mpi_yield_when_idle`` makes the
poll give the core away between checks; the launcher sets it when there are
fewer than two cores per rank). NCCL avoids the question on GPUs: its collectives are
kernels, and the host thread does not take part.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable


class Work:
    """The handle of one collective or point-to-point operation, as PyTorch's ``Work``.

    Made by every collective called with ``async_op=True`` (and by ``isend``
    and ``irecv``). The communication may still be running: read the tensors
    only after :meth:`wait`.

    Two parts make up a job. ``run`` is the communication itself, run on the
    group's communication thread (or inline); ``finish`` is what must happen
    on the thread that waits once the data has arrived: copying results into
    a tensor whose memory MPI could not write directly (a non-contiguous
    tensor, a tensor on the simulated GPU). That is why a result is only
    guaranteed to be in its tensor after ``wait()``, as in PyTorch.
    """

    def __init__(
        self,
        name: str,
        run: Callable[[], object],
        finish: Callable[[], None] | None = None,
        outputs: list | None = None,
    ) -> None:
        self.name = name  # "all_reduce", ... (used in errors and in the profiler)
        self._run = run
        self._finish = finish
        self._outputs = outputs or []
        self._done = threading.Event()
        self._exception: BaseException | None = None
        self._value = None  # what run() returned (recv: the sender's rank)
        self.start_time: float | None = None  # time.monotonic() when run() started
        self.inline = False  # run on the calling thread even when async (see WorkQueue.submit)

    # ------------------------------------------------------- the running side
    def _execute(self) -> None:
        """Run the communication and record how it ended (never raises)."""
        self.start_time = time.monotonic()
        try:
            self._value = self._run()
        except BaseException as error:  # kept for wait(), which raises it on the user's thread
            self._exception = error
        finally:
            self._done.set()

    # ---------------------------------------------------------- the user side
    def is_completed(self) -> bool:
        """Whether the communication is over (successfully or not); never blocks."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """Whether the communication finished without an error (False while it runs)."""
        return self._done.is_set() and self._exception is None

    def exception(self) -> BaseException | None:
        """The error the communication raised, or None."""
        return self._exception

    def wait(self, timeout=None) -> bool:
        """Block until the operation is over, then make its results visible.

        Args:
            timeout: a ``datetime.timedelta`` (or seconds) to wait at most;
                None waits as long as it takes (the process group's own
                timeout still ends a collective that never completes).

        Raises the error the communication raised, if any. Returns True.
        """
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
        if not self._done.wait(seconds):
            raise RuntimeError(f"Work.wait(): {self.name} did not complete within {timeout}")
        if self._exception is not None:
            raise self._exception
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()
        return True

    def result(self) -> list:
        """The output tensors of the operation (after :meth:`wait`)."""
        return list(self._outputs)

    def get_future(self) -> Future:
        """A :class:`Future` of the output tensors (what DDP's communication hooks chain on)."""
        return Future(self._wait_for_outputs)

    def _wait_for_outputs(self) -> list:
        self.wait()
        return self.result()

    def _source_rank(self) -> int:
        """For ``irecv``: the rank the message came from (after :meth:`wait`)."""
        return self._value

    def __repr__(self) -> str:
        state = "completed" if self.is_completed() else "pending"
        return f"<Work {self.name} ({state})>"


class Future:
    """A value that will be ready later, as ``torch.futures.Future`` (the parts DDP uses).

    ``wait()`` (or ``value()``) blocks until the value is there and returns it;
    ``then(callback)`` makes a new Future whose value is ``callback(this
    future)``. Callbacks run when their Future is waited for, on the waiting
    thread, not when the communication completes: results that need a copy
    (``Work.wait``) can only be read there.
    """

    def __init__(self, produce: Callable[[], object]) -> None:
        self._produce = produce
        self._lock = threading.Lock()
        self._ready = False
        self._value = None

    def wait(self):
        with self._lock:
            if not self._ready:
                self._value = self._produce()
                self._ready = True
        return self._value

    value = wait

    def done(self) -> bool:
        """Whether :meth:`wait` has produced the value."""
        return self._ready

    def then(self, callback: Callable[[Future], object]) -> Future:
        """A Future of ``callback(self)``, computed when it is waited for."""

        def produce():
            self.wait()
            return callback(self)

        return Future(produce)


class WorkQueue:
    """One process group's ordered queue of jobs and the thread that runs them.

    The thread starts with the first asynchronous job and sleeps while the
    queue is empty. :attr:`running` is the job in progress, on the thread or
    inline, which the timeout watchdog (:mod:`glasstorch.distributed.debug`)
    looks at.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: collections.deque[Work] = collections.deque()
        self._pending = 0  # jobs queued or running, inline ones included
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.running: Work | None = None

    def submit(self, work: Work, async_op: bool) -> Work:
        """Run ``work`` in order after every earlier job; wait for it unless ``async_op``."""
        with self._condition:
            if self._closed:
                raise RuntimeError(f"process group {self.name} has been destroyed")
            # A job that only queues device work (NCCL) runs inline whatever the queue holds.
            inline = work.inline or (not async_op and self._pending == 0)
            self._pending += 1
            if not inline:
                self._jobs.append(work)
                self._start_thread()
                self._condition.notify_all()
        if inline:
            self.running = work
            try:
                work._execute()
            finally:
                self.running = None
                with self._condition:
                    self._pending -= 1
                    self._condition.notify_all()
        if not async_op:
            work.wait()
        return work

    def drain(self) -> None:
        """Wait until every queued job has run (errors stay with their Work)."""
        with self._condition:
            while self._pending:
                self._condition.wait()

    def close(self) -> None:
        """Run what is queued, then stop the thread."""
        self.drain()
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"glasstorch-comm-{self.name}", daemon=True
            )
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._condition:
                while not self._jobs and not self._closed:
                    self._condition.wait()
                if not self._jobs:
                    return  # closed and empty
                work = self._jobs.popleft()
            self.running = work
            work._execute()
            self.running = None
            with self._condition:
                self._pending -= 1
                self._condition.notify_all()
