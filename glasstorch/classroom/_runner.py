"""The test process of the grader (never imported by glasstorch).

It runs one graded test (or, for ``check`` and the build's own checks, one
batch of tests), in one of two ways: as a script (``python -I _runner.py
<fd>``, :func:`main`), or in a child of the fork server (``forkserver.py``
calls :func:`prepare` once, then :func:`run` in each forked child). Either
way it is the only code that runs before the submission's code does:

1. :func:`prepare` imports pytest, its protocol and the grader's plugins, and
   hides the optional dependencies (PyTorch, ...) behind an import hook, so
   every test sees the grading image's environment (if pytest cannot be
   imported it says so on the pipe and stops);
2. :func:`run` takes the request's fresh random nonce into the only writer of
   the result pipe (:func:`_sender`), installs the guard (:class:`_Guard`, an
   audit hook that refuses the submission's code the ways into the runner's
   memory), snapshots the code of pytest's test protocol and of its own
   recorder, puts the submission's package folder first on ``sys.path`` and
   runs pytest in-process on the requested node ids, with a recorder plugin
   that writes one JSON line per test phase to the pipe (not stdout, not a
   file);
3. after pytest returns, it writes a final ``done`` line with facts: whether
   pytest's protocol and the recorder are unchanged (pytest's hook
   implementations go down the pipe at the start and at the end of the
   session, for the grading process to compare), what the guard refused,
   and which files ``glasstorch`` and ``glasstorch.reference`` were imported
   from.

Every line carries the nonce. The grading process trusts nothing else: no line,
no nonce, no ``done`` line, a changed protocol, a refusal or a glasstorch
imported from elsewhere all mean failure (see ``grading.py``). This file does
not import glasstorch (that would import the grader's copy, not the
submission's).
"""

import _thread
import gc
import json
import os
import signal
import sys

_PROTOCOL_MODULES = (
    "_pytest.runner",
    "_pytest.python",
    "_pytest.reports",
    "_pytest.main",
    "_pytest.outcomes",
    "_pytest.nodes",
    "_pytest.fixtures",
    "_pytest.skipping",
    "_pytest.unittest",
    "pluggy._callers",
    "pluggy._hooks",
    "pluggy._manager",
)
#: Imported once by the fork server too (the tests' own imports, trusted and slow).
_PRELOADED = ("numpy", "hypothesis", "hypothesis.strategies")
_WATCHED_HOOKS = (
    "pytest_runtest_protocol",
    "pytest_runtest_makereport",
    "pytest_runtest_logreport",
    "pytest_runtest_call",
    "pytest_pyfunc_call",
    "pytest_report_teststatus",
    "pytest_runtestloop",
)


def _code_of(value):
    code = getattr(value, "__code__", None)
    if code is None and hasattr(value, "__func__"):
        code = getattr(value.__func__, "__code__", None)
    return code


def _snapshot(modules, extra_classes=()) -> dict:
    """(module, name[, method]) -> (function, its code) for every function of ``modules``.

    The objects themselves are kept (not their ids), so a replaced function
    is seen even if Python reuses the old one's address."""
    facts = {}

    def keep(key, value):
        code = _code_of(value)
        if code is not None:
            facts[key] = (value, code)

    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            keep((name, attr), value)
            if isinstance(value, type) and value.__module__ == name:
                for method, member in list(vars(value).items()):
                    keep((name, attr, method), member)
    for cls in extra_classes:
        for method, member in list(vars(cls).items()):
            keep(("recorder", method), member)
    return facts


def _same(before: dict, after: dict) -> list[str]:
    """The keys whose function or code changed (or appeared, or went)."""
    changed = []
    for key in set(before) | set(after):
        a, b = before.get(key), after.get(key)
        if a is None or b is None or a[0] is not b[0] or a[1] is not b[1]:
            changed.append(str(key))
    return sorted(changed)


def _hook_snapshot(pluginmanager) -> dict:
    hooks = {}
    for name in _WATCHED_HOOKS:
        caller = getattr(pluginmanager.hook, name, None)
        if caller is None:
            continue
        hooks[name] = [
            (impl.plugin_name, id(impl.function), id(_code_of(impl.function)))
            for impl in caller.get_hookimpls()
        ]
    return hooks


class _HiddenModules:
    """An import hook that makes some modules (PyTorch, ...) look uninstalled.

    Grading runs on an image without the optional dependencies; hiding them
    here too gives every test the verdict it gets there, whatever this
    machine has installed (a test that needs one skips, visibly)."""

    def __init__(self, names):
        self.names = tuple(names)

    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == name or fullname.startswith(name + ".") for name in self.names):
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (the grader hides the optional dependencies: "
                + ", ".join(self.names)
                + ")",
                name=fullname,
            )
        return None


class _Refused(RuntimeError):
    """What the guard raises (a RuntimeError, so that a refused audit hook is not added)."""


#: Audit events that hand out frames, objects or raw memory: refused while the
#: submission's code is running (see :class:`_Guard`).
_WATCHED_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._getframemodulename",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "code.__new__",
        "compile",
        "marshal.load",
        "marshal.loads",
    }
)
#: A suspended generator's or coroutine's frame (the sender's holds the nonce). A
#: traceback's ``tb_frame`` stays allowed: formatting an exception needs it, and a
#: worker pool of the course sends its workers' tracebacks.
_FRAME_ATTRIBUTES = frozenset({"gi_frame", "cr_frame", "ag_frame"})
#: Modules that ask for their caller's frame only to read its module's name.
_NAME_READERS = (
    "typing.py",
    "typing_extensions.py",
    "enum.py",
    os.path.join("collections", "__init__.py"),
)
#: Foreign-function interfaces, which read and write any memory.
_FFI_MODULES = frozenset({"cffi", "_cffi_backend"})


class _Guard:
    """An audit hook that keeps the submission's code out of the runner's memory.

    The nonce that authenticates the result lines lives in this process, beside
    the submission's code, as a variable of a suspended generator
    (:func:`_sender`). Python offers no wall inside a process, but the ways to
    a suspended generator's variables go through audited operations: its
    ``gi_frame``, the frames of another thread (``sys._current_frames``) or of
    the stack (``sys._getframe``, a trace function), the garbage collector's
    object lists, ``ctypes`` and ``cffi`` (any memory), ``/proc/self/mem``, or
    code made to look like the trusted libraries'. The guard refuses them
    whenever the call comes from *untrusted code*: a frame of the stack whose
    file is not in a trusted folder (the interpreter's libraries and the
    grader's tests, all read-only for the sandbox user), or any thread but the
    main one (pytest runs there; a thread is started by the submission).
    Code compiled or unmarshalled while untrusted code runs must be exactly a
    trusted file's, or it is refused too. No audit hook can be removed, and
    adding another is refused.

    The guard itself is held by the sender only (and by the interpreter's
    list of hooks), so no frame of the stack leads to it.
    What stays possible is documented in docs/guide/classroom-teachers.md
    (reading raw memory through NumPy's array interface, for one).
    """

    def __init__(self, trusted: list[str], untrusted: list[str]):
        self.trusted = tuple(os.path.join(os.path.realpath(p), "") for p in trusted)
        # Folders reached through a descriptor (sandbox.py): trusted while the
        # descriptor still leads where it did (a closed one can be reopened elsewhere).
        through = [p for p in trusted if p.startswith("/proc/self/fd/")]
        self.trusted += tuple(os.path.join(p, "") for p in through)
        self.links = {_descriptor(p): os.readlink(_descriptor(p)) for p in through}
        self.untrusted = frozenset(untrusted)
        self.refused: list[str] = []
        self._busy: set[int] = set()
        self._main = _thread.get_ident()

    def is_trusted(self, filename: str) -> bool:
        if filename in self.untrusted:
            return False
        if filename.startswith("/proc/self/fd/"):
            link = _descriptor(filename)
            try:
                if link not in self.links or os.readlink(link) != self.links[link]:
                    return False
            except OSError:
                return False
        return filename.startswith(self.trusted) or filename.startswith("<frozen ")

    def caller_untrusted(self) -> bool:
        """Whether untrusted code is on the stack of the caller's caller."""
        ident = _thread.get_ident()
        self._busy.add(ident)
        try:
            return self.untrusted_running(sys._getframe(2))
        finally:
            self._busy.discard(ident)

    def untrusted_running(self, frame) -> bool:
        """Whether untrusted code is on the stack from ``frame`` down (or off the main thread)."""
        if _thread.get_ident() != self._main:
            return True
        while frame is not None:
            if not self.is_trusted(frame.f_code.co_filename):
                return True
            frame = frame.f_back
        return False

    def __call__(self, event: str, args: tuple) -> None:
        if event == "sys.addaudithook":
            raise _Refused("the grader refuses another audit hook")
        watched = (
            event in _WATCHED_EVENTS
            or event.startswith("ctypes.")
            or (event == "object.__getattr__" and args[1] in _FRAME_ATTRIBUTES)
            or (event == "open" and _reads_a_process(args[0], self))
            or (event == "import" and str(args[0]).split(".")[0] in _FFI_MODULES)
        )
        ident = _thread.get_ident()
        if not watched or ident in self._busy:
            return
        self._busy.add(ident)
        try:
            caller = sys._getframe(1)
            if self._allowed(event, args, caller) or not self.untrusted_running(caller):
                return
            where = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_code.co_name}"
            self.refused.append(f"{event} in {where}")
            raise _Refused(f"the grader does not let a submission use {event} ({where})")
        finally:
            self._busy.discard(ident)

    def _allowed(self, event: str, args: tuple, caller) -> bool:
        """Uses that hand out nothing, even with untrusted code on the stack."""
        filename = caller.f_code.co_filename
        if event == "sys._getframe":  # typing, enum, namedtuple: the caller's module name
            return self.is_trusted(filename) and filename.endswith(_NAME_READERS)
        if event == "compile":  # importing a trusted module from its source
            return not self.is_trusted(str(args[1])) or _same_as_file(args[0], str(args[1]))
        if event == "marshal.loads":  # importing a module from its compiled file
            names = caller.f_locals
            path = names.get("bytecode_path")
            return (
                filename.startswith("<frozen importlib")
                and caller.f_code.co_name == "_compile_bytecode"
                and isinstance(path, str)
                and names.get("source_path") is not None
                and _same_as_file(args[0], path, skip=16)
            )
        return False


def _descriptor(path: str) -> str:
    """``/proc/self/fd/<n>`` of a path under it."""
    return "/".join(path.split("/")[:5])


def _reads_a_process(path, guard) -> bool:
    """Whether ``path`` is in ``/proc``, other than a trusted import folder reached there."""
    return isinstance(path, str) and path.startswith("/proc/") and not guard.is_trusted(path)


def _same_as_file(data, path: str, skip: int = 0) -> bool:
    """Whether ``data`` (text or bytes) is exactly the file at ``path`` (after ``skip`` bytes)."""
    try:
        with open(path, "rb") as file:
            content = file.read()[skip:]
    except OSError:
        return False
    if isinstance(data, str):
        data = data.encode("utf-8")
    return isinstance(data, (bytes, bytearray, memoryview)) and bytes(data) == content


def _sender(channel, nonce: str, guard):
    """The only writer of the result pipe: a generator, so the nonce is one of its locals.

    Reaching a generator's locals takes its ``gi_frame`` (refused by the guard
    to untrusted code). The first ``next()`` installs the guard. A line sent
    while untrusted code is running is not written but counted; the ``done``
    line gets the list of what the guard refused. While a line is written the
    garbage collector and signals wait, so no code of the submission (a
    ``__del__``, a signal handler) runs with this frame on the stack."""
    sys.addaudithook(guard)  # from here on, for the life of this process
    message = yield
    while True:
        if guard.caller_untrusted():
            guard.refused.append("the result pipe")
        else:
            collecting = gc.isenabled()
            gc.disable()
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            try:
                if message.get("kind") == "done":
                    message["refused"] = sorted(set(guard.refused))[:20]
                message["nonce"] = nonce
                channel.write(json.dumps(message) + "\n")
                channel.flush()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                if collecting:
                    gc.enable()
        message = yield


def _skip_reason(report) -> str:
    """Why a skipped test skipped (pytest keeps ``(path, line, reason)``)."""
    longrepr = getattr(report, "longrepr", None)
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def _trim(text: str, limit: int = 4000) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + "\n[... output trimmed ...]\n" + text[-limit // 2 :]


class _Recorder:
    """A pytest plugin that sends each test report down the result pipe as it happens."""

    def __init__(self, send, collect_only: bool):
        self._send = send
        self._collect_only = collect_only

    # The hook implementations at the start and at the end go down the pipe, and
    # the grading process compares them (no object here a test could rewrite).
    def pytest_sessionstart(self, session):
        hooks = _hook_snapshot(session.config.pluginmanager)
        self._send({"kind": "hooks", "when": "start", "hooks": hooks})

    def pytest_sessionfinish(self, session):
        hooks = _hook_snapshot(session.config.pluginmanager)
        self._send({"kind": "hooks", "when": "finish", "hooks": hooks})

    def pytest_collection_finish(self, session):
        items = [
            {"nodeid": item.nodeid, "markers": sorted({m.name for m in item.iter_markers()})}
            for item in session.items
        ]
        self._send({"kind": "collected", "items": items})

    def pytest_collectreport(self, report):
        if report.failed:
            self._send(
                {
                    "kind": "collect_error",
                    "nodeid": report.nodeid,
                    "text": _trim(str(report.longrepr)),
                }
            )

    def pytest_runtest_logreport(self, report):
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        self._send(
            {
                "kind": "phase",
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "crash": (crash.message if crash is not None else "")[:2000],
                "text": _trim(report.longreprtext) if report.failed else "",
                "reason": _skip_reason(report)[:2000] if report.skipped else "",
                "duration": report.duration,
            }
        )


def prepare(hide_modules=()) -> str:
    """Import pytest, its protocol and the grader's plugins; hide ``hide_modules``.

    Returns ``""``, or why the grader's own environment cannot run the tests.
    The fork server calls this once, before any test process is forked."""
    try:
        import pytest  # noqa: F401 - imported before any submission code runs

        for name in _PROTOCOL_MODULES + _PRELOADED:
            __import__(name)
        # Plugins named by the grader load now, before the snapshot (hypothesis's
        # plugin wraps one pytest function when it is imported).
        for name in filter(None, os.environ.get("PYTEST_PLUGINS", "").split(",")):
            __import__(name.strip())
    except ImportError as error:
        return f"{error} (in {sys.executable})"
    if hide_modules and not any(isinstance(h, _HiddenModules) for h in sys.meta_path):
        sys.meta_path.insert(0, _HiddenModules(hide_modules))
    return ""


def cache_rewritten_tests(tests_dir: str) -> None:
    """Write pytest's rewritten bytecode of the test files where pytest looks for it.

    pytest rewrites the ``assert`` statements of every test module it imports,
    a good part of a test process's start-up. A test process may not write the
    tests folder, so the fork server (the grader's rights, no submission code)
    writes the cache before it forks; pytest checks each entry against the
    file's hash before using it. Only a speed-up: any failure is ignored."""
    try:
        from pathlib import Path

        from _pytest.assertion import rewrite

        class _Quiet:
            trace = staticmethod(lambda *args: None)

        for name in sorted(os.listdir(tests_dir)):
            if not (name == "conftest.py" or (name.startswith("test_") and name.endswith(".py"))):
                continue
            source = Path(tests_dir, name)
            cache = rewrite.get_cache_dir(source)
            pyc = cache / (name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is None:
                cache.mkdir(exist_ok=True)
                source_hash, code = rewrite._rewrite_test(source, None)
                rewrite._write_pyc(_Quiet(), code, source_hash, pyc)
                os.chmod(pyc, 0o644)
    except Exception:  # noqa: BLE001 - pytest's private API moved: just slower
        pass


def run(request: dict, channel) -> int:
    """Run the request's tests with pytest, reporting on ``channel`` (a text file).

    ``request`` holds the nonce, the package and tests folders and the node
    ids (see ``grading.run_tests``); :func:`prepare` has run."""
    import pytest

    tests_dir = request["tests_dir"]
    here = os.path.dirname(os.path.abspath(__file__))  # the grader's own files
    # Trusted: the interpreter's libraries, the tests, the grader and the package's
    # files but those that hold the submission's code (``untrusted``; in a batch
    # of the build or of ``check`` there are none: that code is the user's own).
    folders = [p for p in sys.path if p and os.path.isdir(p)]
    sender = _sender(
        channel,
        request.pop("nonce"),
        _Guard(folders + [tests_dir, here, request["package_root"]], request.get("untrusted", [])),
    )
    next(sender)  # the guard is on
    send = sender.send

    before = tuple(_snapshot(_PROTOCOL_MODULES, (_Recorder,)).items())  # immutable

    # The submission's code, and only it, is importable as glasstorch.
    sys.path.insert(0, request["package_root"])
    sys.path.insert(1, request["tests_dir"])
    recorder = _Recorder(send, request.get("collect_only", False))
    args = [
        *(os.path.join(tests_dir, nodeid) for nodeid in request["nodeids"]),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rootdir",
        tests_dir,
        "-c",
        os.path.join(tests_dir, "pytest.ini"),
        "--tb=short",
        "--color=no",
        "-o",
        "console_output_style=classic",
    ]
    if request.get("collect_only"):
        args.append("--collect-only")
    exit_code = pytest.main(args, plugins=[recorder])

    changed = _same(dict(before), _snapshot(_PROTOCOL_MODULES, (_Recorder,)))
    imported = {}
    for name in ("glasstorch", "glasstorch.reference"):
        module = sys.modules.get(name)
        imported[name] = getattr(module, "__file__", None) if module else None
    tier_module = sys.modules.get("glasstorch._tier")
    send(
        {
            "kind": "done",
            "exit_code": int(exit_code),
            "intact": not changed,
            "changed": changed[:20],
            "imported": imported,
            "tier": getattr(tier_module, "tier", None),
        }
    )
    channel.close()
    return 0


def main() -> int:
    """One process for one request (``check`` and the build; ``grade`` forks instead)."""
    channel = os.fdopen(int(sys.argv[1]), "w", buffering=1, encoding="utf-8")
    request = json.loads(sys.stdin.readline())
    sys.stdin.close()
    trouble = prepare(request.get("hide_modules") or ())
    if trouble:  # the grader's own environment is incomplete
        message = {"kind": "setup_error", "text": trouble, "nonce": request["nonce"]}
        channel.write(json.dumps(message) + "\n")
        channel.close()
        return 3
    os.chdir(request["tests_dir"])
    return run(request, channel)


if __name__ == "__main__":
    sys.exit(main())
