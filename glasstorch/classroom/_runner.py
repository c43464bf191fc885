"""The test process of the grader (run as a script, never imported by glasstorch).

The grading process starts this file with ``python -I _runner.py <fd>`` for one
graded test (or, for ``check`` and the build's own checks, one batch of
tests). It is the only code that runs before the submission's code does:

1. it reads its request (with a fresh random nonce) from stdin, which the
   grader then closes;
2. it imports pytest and snapshots the code of pytest's test protocol and of
   its own recorder, before a line of the submission runs (if pytest cannot
   be imported it says so on the pipe and stops);
3. it hides the optional dependencies the request names (PyTorch, ...) behind
   an import hook, so every test sees the grading image's environment;
4. it puts the submission's package folder first on ``sys.path`` and runs
   pytest in-process on the requested node ids, with a recorder plugin that
   writes one JSON line per test phase to the pipe ``<fd>`` (not stdout, not
   a file);
5. after pytest returns, it writes a final ``done`` line with facts: whether
   pytest's protocol and the recorder are unchanged, and which files
   ``glasstorch`` and ``glasstorch.reference`` were imported from.

Every line carries the nonce. The grading process trusts nothing else: no line,
no nonce, no ``done`` line, a changed protocol or a glasstorch imported from
elsewhere all mean failure (see ``grading.py``). This file does not import
glasstorch (that would import the grader's copy, not the submission's).
"""

import json
import os
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
        self.hooks_at_start = None
        self.pluginmanager = None

    def pytest_configure(self, config):
        self.pluginmanager = config.pluginmanager

    def pytest_sessionstart(self, session):
        self.hooks_at_start = _hook_snapshot(session.config.pluginmanager)

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


def main() -> int:
    channel = os.fdopen(int(sys.argv[1]), "w", buffering=1, encoding="utf-8")
    request = json.loads(sys.stdin.readline())
    sys.stdin.close()
    nonce = request.pop("nonce")

    def send(message: dict) -> None:
        message["nonce"] = nonce
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    try:
        import pytest  # noqa: F401 - imported before any submission code runs

        for name in _PROTOCOL_MODULES:
            __import__(name)
        # Plugins named by the grader load now, before the snapshot (hypothesis's
        # plugin wraps one pytest function when it is imported).
        for name in filter(None, os.environ.get("PYTEST_PLUGINS", "").split(",")):
            __import__(name.strip())
    except ImportError as error:  # the grader's own environment is incomplete
        send({"kind": "setup_error", "text": f"{error} (in {sys.executable})"})
        channel.close()
        return 3
    hidden = request.get("hide_modules") or ()
    if hidden:
        sys.meta_path.insert(0, _HiddenModules(hidden))
    before = _snapshot(_PROTOCOL_MODULES, (_Recorder,))

    # The submission's code, and only it, is importable as glasstorch.
    sys.path.insert(0, request["package_root"])
    sys.path.insert(1, request["tests_dir"])
    os.chdir(request["tests_dir"])
    recorder = _Recorder(send, request.get("collect_only", False))
    args = [
        *request["nodeids"],
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--rootdir",
        request["tests_dir"],
        "-c",
        os.path.join(request["tests_dir"], "pytest.ini"),
        "--tb=short",
        "--color=no",
        "-o",
        "console_output_style=classic",
    ]
    if request.get("collect_only"):
        args.append("--collect-only")
    exit_code = pytest.main(args, plugins=[recorder])

    after = _snapshot(_PROTOCOL_MODULES, (_Recorder,))
    hooks_now = _hook_snapshot(recorder.pluginmanager) if recorder.pluginmanager else None
    changed = _same(before, after)
    intact = not changed and hooks_now == recorder.hooks_at_start
    if hooks_now != recorder.hooks_at_start:
        changed.append(f"hooks: {recorder.hooks_at_start} -> {hooks_now}")
    imported = {}
    for name in ("glasstorch", "glasstorch.reference"):
        module = sys.modules.get(name)
        imported[name] = getattr(module, "__file__", None) if module else None
    tier_module = sys.modules.get("glasstorch._tier")
    send(
        {
            "kind": "done",
            "exit_code": int(exit_code),
            "intact": intact,
            "changed": changed[:20],
            "imported": imported,
            "tier": getattr(tier_module, "tier", None),
        }
    )
    channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
