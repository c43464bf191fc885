"""The fork server: one interpreter that imports pytest once and forks a process per test.

Starting a Python, importing pytest, Hypothesis and NumPy and setting pytest up
costs a good part of a second; ``grade`` runs every graded test in a process
of its own, so it pays that once per grading instead of once per test:

* :class:`ForkServer` (the grading side) starts this file as a script
  (``python -I forkserver.py``), which imports the test machinery through
  ``_runner.prepare`` (never glasstorch: that is the submission's code) and
  then waits for requests on stdin, one JSON line per test;
* for each request the server forks. The child starts a session of its own,
  keeps only its result pipe, its log and ``/dev/null`` open, becomes the
  sandbox user with the limits (``sandbox.Sandbox.enter``), and runs the tests
  with ``_runner.run``; its first line of submission code runs after all that;
* the server reads the result pipe until the child ends or its time limit
  passes, kills the child's session and every process of the sandbox user
  (``Sandbox.sweep``), and answers with the exit status and the pipe's text.
  The grading side checks the text exactly as for a process of its own
  (``grading.Batch``).

Fork safety: the server runs no thread and no parallel region before it
forks (the environment sets every thread pool to one thread: OpenMP,
OpenBLAS, MKL), so a child never inherits a lock held by a thread that does
not exist in it. The server stays root (when the grader is); only children
drop their rights, so no test can touch the server, and a test cannot reach
the server's pipes (closed in the child).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
#: At most this much of a test's result pipe is kept (a flood is cut, and fails).
CHANNEL_LIMIT = 8 << 20
#: The child's result pipe is always this descriptor.
CHANNEL_FD = 3


# ---------------------------------------------------------------- the grading side
class ForkServer:
    """A running fork server (see the module docstring). Use as a context manager."""

    def __init__(self, sandbox, environment: dict, python: str | None = None, hide_modules=()):
        self.sandbox = sandbox
        self.process = subprocess.Popen(
            [python or sys.executable, "-I", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            cwd="/",
            start_new_session=True,
        )
        self._send(
            {
                "hide_modules": list(hide_modules),
                "uid": sandbox.uid,
                "memory_limit": sandbox.memory_limit,
            }
        )
        self._ready: dict | None = None  # its first answer, once it has imported pytest

    @property
    def setup_error(self) -> str:
        """Why the server cannot run tests (pytest missing), or ``""``; waits until it knows."""
        if self._ready is None:
            self._ready = self._receive(timeout=120)
        return self._ready.get("setup_error", "")

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, request: dict, time_limit: float) -> dict:
        """Run one request (``_runner.run``'s); return the server's answer.

        The answer holds ``returncode``, ``timed_out``, ``channel`` (the text of
        the result pipe), ``log`` (the test's stdout and stderr) and ``seconds``.
        """
        if self.setup_error:
            raise RuntimeError(f"the fork server cannot run tests: {self.setup_error}")
        self._send(dict(request, time_limit=time_limit))
        return self._receive(timeout=time_limit + 60)

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()

    def _send(self, message: dict) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def _receive(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else b""
        if not line:
            self.process.kill()
            raise RuntimeError("the grader's fork server stopped answering")
        return json.loads(line)


# ---------------------------------------------------------------- the server
def _load(name: str, filename: str):
    """Import one of the grader's files by path (glasstorch itself is never imported)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def serve() -> int:
    requests = sys.stdin.buffer
    answers = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing else ever writes the answers
    config = json.loads(requests.readline())
    runner = _load("_glasstorch_runner", "_runner.py")
    sandbox_module = _load("_glasstorch_sandbox", "sandbox.py")
    sandbox = sandbox_module.Sandbox(config["uid"], config["memory_limit"])

    def answer(message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:  # a pipe may take a long answer in parts
            data = data[os.write(answers, data) :]

    trouble = runner.prepare(config["hide_modules"])
    answer({"setup_error": trouble})
    if trouble:
        return 3
    gc.freeze()  # what is imported now stays put: children share its pages, collect less
    for line in requests:
        answer(_run_one(json.loads(line), runner, sandbox))
    return 0


def _run_one(request: dict, runner, sandbox) -> dict:
    if request.get("cache_tests"):
        runner.cache_rewritten_tests(request["tests_dir"])
    read_end, write_end = os.pipe()
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(request, write_end, log, runner, sandbox)  # never returns
    os.close(write_end)
    os.close(log)
    try:  # readable when the child ends (Linux 5.3 and later)
        pidfd, poll = os.pidfd_open(pid), None
    except (AttributeError, OSError):
        pidfd, poll = None, 0.05  # look every 50 ms instead
    chunks, size, status, timed_out = [], 0, None, False
    waiting = [read_end] + ([pidfd] if pidfd is not None else [])
    deadline = start + request["time_limit"]
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select(waiting, [], [], min(remaining, poll or remaining))
        if read_end in ready:
            data = os.read(read_end, 1 << 16)
            if not data:
                waiting.remove(read_end)
            elif size < CHANNEL_LIMIT:
                chunks.append(data)
                size += len(data)
        if pidfd in ready or poll:
            ended, code = os.waitpid(pid, 0 if pidfd in ready else os.WNOHANG)
            status = code if ended else None
    # The test's session, then every process of the sandbox user (daemons included).
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    sandbox.sweep()
    if status is None:
        _, status = os.waitpid(pid, 0)
    if pidfd is not None:
        os.close(pidfd)
    os.set_blocking(read_end, False)
    try:  # what the test wrote before it ended (its writers are gone now, as root)
        while size < CHANNEL_LIMIT and (data := os.read(read_end, 1 << 16)):
            chunks.append(data)
            size += len(data)
    except BlockingIOError:
        pass  # not root: a process that left the session may still hold the pipe
    os.close(read_end)
    with open(request["log"], "rb") as file:
        file.seek(max(0, os.fstat(file.fileno()).st_size - 20000))
        text = file.read().decode("utf-8", "replace")
    return {
        "returncode": os.waitstatus_to_exitcode(status),
        "timed_out": timed_out,
        "channel": b"".join(chunks).decode("utf-8", "replace"),
        "overflow": size >= CHANNEL_LIMIT,
        "log": text,
        "seconds": time.monotonic() - start,
    }


def _child(request: dict, write_end: int, log: int, runner, sandbox) -> None:
    """The test process: its own session, the sandbox, then the tests. Never returns."""
    code = 70
    try:
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(write_end, CHANNEL_FD)
        os.closerange(CHANNEL_FD + 1, os.sysconf("SC_OPEN_MAX"))  # the server's pipes
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sandbox.enter(request.pop("home"))
        channel = os.fdopen(CHANNEL_FD, "w", buffering=1, encoding="utf-8")
        code = runner.run(request, channel)
    except BaseException:  # noqa: BLE001 - the grader reads the log; the status says it failed
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    sys.exit(serve())
