"""Debugging a distributed program: detail mode, the timeout watchdog, ending the job.

Three failures are typical of programs that run on several processes, and
plain MPI handles none of them well:

**Mismatched collectives.** Rank 0 calls ``all_reduce`` on a tensor of 4
elements while rank 1 calls it on 3, or calls ``broadcast``. MPI does not
know: it matches calls by their order on a communicator, so it moves the
wrong bytes, returns a wrong result somewhere and usually hangs at the next
call. With ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (PyTorch's variable), every
collective first exchanges a *fingerprint* (operation, reduction, root,
shapes, dtypes, device types) with all ranks of its group, on a separate
communicator, and every rank raises the same error naming the ranks and what
differed, before any data moves. That costs one small all-gather per
collective, hence a mode and not the default.

**A collective that never completes** (a rank stuck in a loop, a rank that
skipped a call). Every process runs a *watchdog* thread that looks at each
group's running job; when one has run longer than the group's ``timeout``
(``init_process_group(timeout=...)``), it prints what timed out, asks every
other rank to print its Python stack (``faulthandler``, all threads), prints
its own, and ends the job with ``MPI_Abort``.

**A rank that raises.** The others would wait forever in their next
collective. After ``init_process_group``, an uncaught exception prints its
traceback and then calls ``MPI_Abort``, which ends every rank of the job
within a second (mpi4py's ``python -m mpi4py`` does the same).
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import sys
import threading
import time

WATCHDOG_PERIOD = 0.2  # seconds between the watchdog's looks
STACK_DUMP_GRACE = 2.0  # seconds the other ranks get to print their stacks before the abort


def detail_mode() -> bool:
    """Whether ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` is set (read when a group is made)."""
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper() == "DETAIL"


# ------------------------------------------------------------------- detail mode
def fingerprint(name: str, tensors: list, op=None, root: int | None = None) -> dict:
    """What must agree across ranks for one collective call."""
    return {
        "op type": name,
        "reduce op": None if op is None else op.name,
        "root": root,
        "tensor shapes": [list(t.shape) for t in tensors],
        "tensor dtypes": [t.dtype.name for t in tensors],
        "tensor device types": [t.device.type for t in tensors],
    }


def _describe(sequence_number: int, print_: dict) -> str:
    fields = ", ".join(f"{key}={value}" for key, value in print_.items() if value is not None)
    return f"CollectiveFingerPrint(sequence number={sequence_number}, {fields})"


def check_collective(group, print_: dict) -> None:
    """Compare this rank's call with every rank's; raise the same error everywhere if they differ.

    The exchange runs on the calling thread, on the group's ``check_comm``
    (a communicator of its own), so it never mixes with the group's queued
    collectives; calls are made in program order, so the fingerprints of the
    n-th collective meet on every rank.
    """
    prints = group.check_comm.allgather(print_)
    first = prints[0]
    differing = [rank for rank, other in enumerate(prints) if other != first]
    if not differing:
        return
    sequence = group.sequence_number
    lines = ["Detected mismatch between collectives on ranks."]
    for rank in differing:
        aspects = [
            f"{key}: {first[key]} vs {prints[rank][key]}"
            for key in first
            if first[key] != prints[rank][key]
        ]
        lines.append(
            f"Rank {group.ranks[0]} is running collective: {_describe(sequence, first)}, but "
            f"Rank {group.ranks[rank]} is running collective: "
            f"{_describe(sequence, prints[rank])}. Collectives differ in the following "
            "aspects: " + "; ".join(aspects)
        )
    raise RuntimeError("\n".join(lines))


def check_end(group) -> None:
    """Detail mode at ``destroy_process_group`` and at exit: no rank may still expect a collective.

    A rank that skipped a collective reaches the end while another waits in
    that collective's fingerprint exchange; comparing an "end of program"
    fingerprint turns that hang into the mismatch error.
    """
    if group.check_comm is not None:
        group.sequence_number += 1
        check_collective(group, fingerprint("destroy_process_group", []))


# ------------------------------------------------------------------ the profiler
def record_in_profiler(work, group) -> None:
    """When a profile records, time ``work``'s communication as a span named ``mpi:<op>``.

    The span is recorded on the thread that runs the communication (the
    group's communication thread for asynchronous work), so the Chrome trace
    shows it on that thread's track, beside the computation it overlaps.
    """
    from glasstorch.autograd import function as _function

    recorder = _function.profiler_hook
    if recorder is None:
        return
    run = work._run
    label = f"{group.name()}:{work.name}"

    def run_in_span():
        with recorder.user_span(label):
            return run()

    work._run = run_in_span


# ----------------------------------------------------------- ending a failed job
_watched: set = set()  # point-to-point Works being waited for (the watchdog looks at them)


@contextlib.contextmanager
def watched(work):
    """While the block runs, ``work`` counts as running for the timeout watchdog."""
    work.start_time = time.monotonic()
    _watched.add(work)
    try:
        yield
    finally:
        _watched.discard(work)


def install_abort_on_error(MPI) -> None:  # noqa: N803
    """Make an uncaught exception end every rank of the job (``MPI_Abort``) after its traceback."""
    if MPI.COMM_WORLD.Get_size() == 1 or getattr(sys.excepthook, "_glasstorch", False):
        return
    previous = sys.excepthook
    rank_process = os.getpid()

    def abort_job(kind, value, traceback):
        previous(kind, value, traceback)  # the rank's traceback first
        if os.getpid() != rank_process:  # a forked child (a DataLoader worker) is not a rank
            return
        sys.stderr.flush()
        sys.stdout.flush()
        code = 1
        if issubclass(kind, SystemExit):
            code = value.code if isinstance(value.code, int) else 1
        MPI.COMM_WORLD.Abort(code or 1)

    abort_job._glasstorch = True
    sys.excepthook = abort_job


class _Watchdog:
    """The thread that ends collectives running past their group's timeout.

    It also listens on a communicator of its own for other ranks' requests to
    print this rank's Python stack (a one-integer message from any rank).
    """

    def __init__(self, MPI) -> None:  # noqa: N803
        self.MPI = MPI
        self.process = os.getpid()
        self.comm = MPI.COMM_WORLD.Dup()  # collective: every rank is in init_process_group
        self.request_buffer = bytearray(4)
        self.request = self.comm.Irecv(self.request_buffer, source=MPI.ANY_SOURCE, tag=1)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="glasstorch-watchdog", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        from glasstorch.distributed.process_group import _world

        while not self.stopping.wait(WATCHDOG_PERIOD):
            if self.request.Test():
                self._dump_stack("another rank's collective timed out")
                self.request = self.comm.Irecv(
                    self.request_buffer, source=self.MPI.ANY_SOURCE, tag=1
                )
            running = [(group, group.queue.running) for group in list(_world.groups)]
            running += [(work.group, work) for work in list(_watched)]
            for group, work in running:
                if work is None or work.start_time is None:
                    continue
                elapsed = time.monotonic() - work.start_time
                if elapsed > group.timeout.total_seconds():
                    self._time_out(group, work, elapsed)

    def _dump_stack(self, why: str) -> None:
        rank = self.comm.Get_rank()
        sys.stderr.write(f"[Rank {rank}] Python stack of every thread ({why}):\n")
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()

    def _time_out(self, group, work, elapsed: float) -> None:
        rank = self.comm.Get_rank()
        sys.stderr.write(
            f"[Rank {rank}] Watchdog caught collective operation timeout: {work.name} "
            f"(sequence number {group.sequence_number}) on process group {group.group_name} "
            f"ran for {elapsed * 1000:.0f} milliseconds before timing out "
            f"(timeout {group.timeout.total_seconds() * 1000:.0f} ms). "
            "Every rank prints its Python stack; then the job ends.\n"
        )
        for other in range(self.comm.Get_size()):
            if other != rank:
                self.comm.Isend(bytearray(4), dest=other, tag=1)
        self._dump_stack("this rank's collective timed out")
        time.sleep(STACK_DUMP_GRACE)
        self.MPI.COMM_WORLD.Abort(1)

    def stop(self) -> None:
        """End the thread and withdraw the pending receive (before MPI_Finalize)."""
        self.stopping.set()
        self.thread.join()
        self.request.Cancel()
        self.request.Wait()
        self.comm.Free()


_watchdog: _Watchdog | None = None


def start_watchdog(MPI) -> None:  # noqa: N803
    """Start this process's watchdog (once) and stop it before MPI finalises at exit."""
    global _watchdog
    if _watchdog is None:
        _watchdog = _Watchdog(MPI)
        atexit.register(_at_exit)  # registered after mpi4py's finaliser, so it runs before


def stop_watchdog() -> None:
    global _watchdog
    if _watchdog is not None:
        _watchdog.stop()
        _watchdog = None


def _at_exit() -> None:
    """At exit: in detail mode, check that no rank still expects a collective; stop the watchdog."""
    from glasstorch.distributed.process_group import _world

    if _watchdog is None or os.getpid() != _watchdog.process:
        return  # a forked child (a DataLoader worker) inherited the handler: not a rank
    if _world.default is not None:
        try:
            check_end(_world.default)
        except RuntimeError as error:  # a rank still expects a collective: end the job
            sys.stderr.write(f"{error}\n")
            sys.stderr.flush()
            _world.default.comm.Abort(1)
        for group in _world.groups:
            group.queue.drain()
    stop_watchdog()
