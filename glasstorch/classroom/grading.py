"""Running tests on a submission's code, and deciding what passed.

The grading process never runs submission code itself. For each graded test it

* lays out a package folder holding the submission's ``glasstorch`` and
  ``reference`` (see :func:`make_package`), and a test folder holding the
  grader's own copies of the tests (never the submission's);
* runs ``_runner.py`` in a process of its own, with a random nonce, and reads
  its reports from a private pipe: :func:`run_tests` starts a fresh
  interpreter (``python -I``: no ``PYTHONPATH``, no user site, no current
  folder on ``sys.path``) in a process group of its own, and kills the group at
  the time limit; :func:`run_forked` has the fork server (``forkserver.py``)
  fork one into the sandbox (``sandbox.py``: an unprivileged user when root,
  limits, every process of that user killed afterwards);
* hides the optional dependencies (:data:`HIDDEN_MODULES`) from the tests, so a
  verdict never depends on whether PyTorch is installed;
* counts a test as passed only when every fact checks out (:class:`Batch`):
  the pipe carried a ``done`` line with the right nonce and nothing after it,
  pytest's protocol was unchanged, the runner's guard refused nothing, the
  ``glasstorch`` that ran was the package's, the tier was the course's, the
  collected cases are exactly the expected ones, and each passed its setup,
  call and teardown.

:func:`run_tests` runs a batch in one process (the build's checks and
``check``, on the user's own code); ``grade`` calls :func:`run_forked` once
per graded test.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_runner.py")

#: Optional dependencies that the tests never see, in the build, in ``check`` and in
#: ``grade`` alike: the grading image does not install them (``setup.sh``), so a test
#: that needs one skips everywhere and is never graded, and a graded test gives the
#: same verdict on a teacher's machine with PyTorch as on a student's without it.
HIDDEN_MODULES = ("torch", "graphviz", "matplotlib", "cupy", "scipy", "jax", "tensorflow")
#: What the test process imports before any test runs (the build checks them first).
RUNNER_NEEDS = ("pytest", "hypothesis")

#: Folders of a repository that make up the importable package, and where they go.
PACKAGE_LAYOUT = {"glasstorch": "glasstorch", "reference": "glasstorch/reference"}
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.o", "_native.c")


def make_package(tree: str, dest: str) -> str:
    """Lay out ``tree``'s ``glasstorch/`` and ``reference/`` as an importable package.

    Args:
        tree: a repository (a release, or the reference repository), or a
            folder already laid out as the package.
        dest: an empty folder; ``dest/glasstorch`` is created.

    Returns:
        ``dest``, the folder to put first on ``sys.path``.
    """
    if not os.path.isdir(os.path.join(tree, "reference")) and os.path.isdir(
        os.path.join(tree, "glasstorch", "reference")
    ):  # already laid out as a package (an autograder)
        shutil.copytree(
            os.path.join(tree, "glasstorch"), os.path.join(dest, "glasstorch"), ignore=_IGNORE
        )
        return dest
    for source, target in PACKAGE_LAYOUT.items():
        shutil.copytree(os.path.join(tree, source), os.path.join(dest, target), ignore=_IGNORE)
    fast = os.path.join(tree, "fast")
    if os.path.isdir(fast):  # the fast tier's Python glue (without its compiled library)
        shutil.copytree(fast, os.path.join(dest, "glasstorch", "fast"), ignore=_IGNORE)
    return dest


def repository_path(path: str) -> str:
    """The repository path of ``path`` inside :func:`make_package`'s layout."""
    for prefix, source in (("glasstorch/reference/", "reference/"), ("glasstorch/fast/", "fast/")):
        if path.startswith(prefix):
            return source + path[len(prefix) :]
    return path


def make_tests_dir(suite: str, dest: str, files, replace: dict[str, str] | None = None) -> str:
    """Copy the suite's helpers and the test ``files`` (repository paths) into ``dest``.

    ``replace`` maps a repository path to the file to copy instead (the full
    version of a test file whose hidden tests the release lacks).
    """
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(suite)):
        if name.endswith(".py") and not name.startswith("test_"):
            shutil.copyfile(os.path.join(suite, name), os.path.join(dest, name))
    for path in files:
        source = (replace or {}).get(path, os.path.join(suite, os.path.basename(path)))
        shutil.copyfile(source, os.path.join(dest, os.path.basename(path)))
    with open(os.path.join(dest, "pytest.ini"), "w") as file:
        file.write("[pytest]\n")
    return dest


def local_nodeid(nodeid: str) -> str:
    """A repository node id (``shared_tests/test_a.py::t``) as seen in a tests folder."""
    path, _, rest = nodeid.partition("::")
    return os.path.basename(path) + ("::" + rest if rest else "")


@dataclass
class Batch:
    """What one test process reported, checked."""

    items: list[dict] = field(default_factory=list)  # collected cases, with markers
    phases: dict[str, list[dict]] = field(default_factory=dict)  # nodeid -> its reports
    collect_errors: list[dict] = field(default_factory=list)
    hooks: dict[str, object] = field(default_factory=dict)  # "start"/"finish" -> pytest's hooks
    setup_error: str = ""  # the runner could not start pytest (the grader's environment)
    done: dict | None = None
    returncode: int | None = None
    timed_out: bool = False
    forged: bool = False  # a line on the pipe without the nonce
    log: str = ""  # the process's own stdout and stderr (for teachers only)
    seconds: float = 0.0

    def receive(self, line: str, nonce: str, on_phase=None) -> None:
        """Take one line of the result pipe; a line the runner did not write marks the batch."""
        try:
            message = json.loads(line)
        except ValueError:
            self.forged = True
            return
        if not isinstance(message, dict) or message.get("nonce") != nonce:
            self.forged = True
            return
        if self.done is not None:  # nothing may follow the final line
            self.forged = True
            return
        kind = message.get("kind")
        if kind == "collected":
            self.items = message["items"]
        elif kind == "collect_error":
            self.collect_errors.append(message)
        elif kind == "setup_error":
            self.setup_error = str(message.get("text", ""))
        elif kind == "phase":
            self.phases.setdefault(message["nodeid"], []).append(message)
            if on_phase is not None:
                on_phase(message)
        elif kind == "hooks" and message.get("when") in ("start", "finish"):
            self.hooks[message["when"]] = message.get("hooks")
        elif kind == "done":
            self.done = message
        else:
            self.forged = True

    def trouble(self, package_root: str, tier: str) -> str:
        """Why nothing this process says can be trusted, or ``""``."""
        if self.timed_out:
            return "timed out: the test did not finish within its time limit (an endless loop?)"
        if self.forged:
            return "the result channel carried a line the grader did not write"
        if self.setup_error:
            return f"the grader's Python cannot run the tests: {self.setup_error}"
        if self.done is None:
            if self.returncode is not None and self.returncode < 0:
                try:
                    name = signal.Signals(-self.returncode).name
                except ValueError:
                    name = f"signal {-self.returncode}"
                return f"crashed: the test process was killed by {name}"
            return (
                "the test process ended before the tests finished "
                f"(exit status {self.returncode}); something called exit() or crashed"
            )
        if self.done.get("refused"):
            reached = ", ".join(self.done["refused"][:3])
            return f"the submission's code reached for the test runner's internals ({reached})"
        if not self.done.get("intact"):
            changed = ", ".join(self.done.get("changed", [])[:3])
            return f"the test runner (pytest) was modified while the tests ran ({changed})"
        if self.hooks.get("start") is None or self.hooks.get("start") != self.hooks.get("finish"):
            return "the test runner (pytest) was modified while the tests ran (its hooks)"
        root = os.path.realpath(package_root) + os.sep
        for name, path in self.done.get("imported", {}).items():
            if path is None or not os.path.realpath(path).startswith(root):
                return f"{name} was imported from {path}, not from the submission"
        if self.done.get("tier") != tier:
            return f"the tests ran on tier {self.done.get('tier')!r}, not {tier!r}"
        return ""

    def status(self, nodeid: str) -> tuple[str, str]:
        """(``"passed"``, ``"failed"`` or ``"skipped"``, the text that says why) for one case."""
        reports = self.phases.get(nodeid, [])
        whens = {r["when"]: r for r in reports}
        for report in reports:
            if report["outcome"] == "failed":
                return "failed", report.get("text") or report.get("crash", "")
            if report["outcome"] == "skipped":
                return "skipped", report.get("reason") or report.get("crash", "")
        if "call" not in whens:
            return "failed", "the test did not run"
        return "passed", ""

    def outcome(self, nodeid: str) -> tuple[bool, str]:
        """(passed, first failure text) for one collected case; a skip is not a pass."""
        status, text = self.status(nodeid)
        if status == "skipped":
            return False, f"skipped: {text} (a skipped test earns nothing)"
        return status == "passed", text


def test_environment(tier: str) -> dict[str, str]:
    """The environment of a test process: this one's, without what changes Python or pytest.

    Every thread pool gets one thread: a test measures the reference tier, not
    the machine, and the fork server must fork before any pool exists."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GLASSTORCH_", "PYTEST_", "PYTHON"))
    }
    env.update(
        GLASSTORCH_TIER=tier,
        GLASSTORCH_HYPOTHESIS_PROFILE="classroom",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTEST_PLUGINS="_hypothesis_pytestplugin",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONFAULTHANDLER="1",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


def run_tests(
    package_root: str,
    tests_dir: str,
    nodeids: list[str],
    *,
    tier: str,
    time_limit: float,
    collect_only: bool = False,
    on_phase: Callable[[dict], None] | None = None,
    python: str | None = None,
    hide_modules: tuple[str, ...] = HIDDEN_MODULES,
) -> Batch:
    """Run ``nodeids`` (local to ``tests_dir``) in one fresh, isolated process.

    Args:
        package_root: the folder holding the ``glasstorch`` package to test.
        tests_dir: the folder made by :func:`make_tests_dir`.
        nodeids: what pytest should run.
        tier: the value of ``GLASSTORCH_TIER`` in the process.
        time_limit: seconds before the process group is killed.
        collect_only: only collect (to learn the cases and their markers).
        on_phase: called with each report as it arrives (a progress bar).
        python: the interpreter (default: this one).
        hide_modules: modules the tests must not import (they look uninstalled).
    """
    nonce = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    env = test_environment(tier)
    request = {
        "nonce": nonce,
        "package_root": package_root,
        "tests_dir": tests_dir,
        "nodeids": nodeids,
        "collect_only": collect_only,
        "hide_modules": list(hide_modules),
    }
    batch = Batch()
    start = time.monotonic()
    log_path = os.path.join(tests_dir, f".log-{nonce[:8]}")
    with open(log_path, "w+b") as log:
        process = subprocess.Popen(
            [python or sys.executable, "-I", RUNNER, str(write_end)],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(write_end,),
            cwd=tests_dir,
            env=env,
            start_new_session=True,
        )
        os.close(write_end)
        reader = threading.Thread(
            target=_read_channel, args=(read_end, nonce, batch, on_phase), daemon=True
        )
        reader.start()
        try:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            batch.returncode = process.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            batch.timed_out = True
        _kill_group(process)
        reader.join(timeout=5)
        log.seek(0)
        batch.log = log.read().decode("utf-8", "replace")[-20000:]
    os.remove(log_path)
    batch.seconds = time.monotonic() - start
    return batch


def _kill_group(process: subprocess.Popen) -> None:
    """Kill the test process and everything it started (its session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _read_channel(fd: int, nonce: str, batch: Batch, on_phase) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as channel:
        for line in channel:
            batch.receive(line, nonce, on_phase)


def run_forked(
    server,
    package_root: str,
    tests_dir: str,
    nodeids: list[str],
    *,
    time_limit: float,
    scratch: str,
    untrusted: list[str] = (),
    cache_tests: bool = True,
) -> Batch:
    """Like :func:`run_tests`, in a process forked by ``server`` (a ``forkserver.ForkServer``).

    The process runs in the server's sandbox (``sandbox.py``) with a fresh home
    folder made in ``scratch`` and deleted afterwards; the time limit, the
    kill and the sweep of the sandbox user are the server's. ``untrusted`` are
    the package's files that hold the submission's code (``_runner._Guard``);
    ``cache_tests`` lets the server cache pytest's rewrite of the test files
    (never while a hidden test's file is there: the cache would outlive it)."""
    nonce = secrets.token_hex(16)
    home = server.sandbox.make_home(scratch)
    request = {
        "nonce": nonce,
        "package_root": package_root,
        "tests_dir": tests_dir,
        "nodeids": nodeids,
        "home": home,
        "log": os.path.join(scratch, f".log-{nonce[:8]}"),
        "untrusted": list(untrusted),
        "cache_tests": cache_tests,
    }
    try:
        answer = server.run(request, time_limit)
    finally:
        server.sandbox.remove_home(home)
        if os.path.exists(request["log"]):
            os.remove(request["log"])
    batch = Batch(returncode=answer["returncode"], timed_out=answer["timed_out"])
    for line in answer["channel"].splitlines():
        batch.receive(line, nonce)
    batch.forged = batch.forged or answer["overflow"]
    batch.log, batch.seconds = answer["log"], answer["seconds"]
    return batch
