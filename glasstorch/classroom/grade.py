"""``grade``: score one submission and write Gradescope's ``results.json``.

The submission's *regions* of the assignment (the code between its markers)
are spliced into a fresh copy of the release's package; everything else
(earlier assignments' code, the frontend, the tests, pytest) is the grader's
own. Each graded test then runs in a process of its own
(:func:`glasstorch.classroom.grading.run_tests`), visible tests first, hidden
tests last, and the score follows from the facts that process reports and the
grader checks.

``results.json`` follows Gradescope's specification: ``score``,
``max_score``, ``execution_time``, ``output`` and ``tests``, each test with
``name``, ``score``, ``max_score``, ``status``, ``output`` and
``visibility``. A hidden test's output never shows its source: it says
passed or failed, and for a failure only the exception's type (or the message
of a stub the student did not fill in, which is their own code's message).
"""

from __future__ import annotations

import ast
import builtins
import compileall
import json
import os
import re
import shutil
import sys
import tempfile
import time

from .forkserver import ForkServer
from .grading import (
    HIDDEN_MODULES,
    Batch,
    local_nodeid,
    make_package,
    make_tests_dir,
    repository_path,
    run_forked,
    test_environment,
)
from .leaks import fingerprints, text_tokens
from .markers import MarkerError, find_regions, region_bodies, replace_regions
from .release import hide_tests
from .sandbox import Sandbox

OUTPUT_LIMIT = 3000
#: Seconds for one whole grading (``grade --budget``): a submission that sleeps
#: to every test's limit cannot hold the grader longer.
BUDGET = 600
#: Runs of this many tokens of a hidden test's source make an output withheld.
REDACT_RUN = 8
_PYTEST_PREFIX = re.compile(r"^(E   |>   |\s*\d+\s*[|:] ?)")


def load_manifest(source: str) -> dict:
    path = os.path.join(source, ".classroom", "manifest.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} does not exist: run grade inside an autograder (the folder holding "
            "setup.sh and run_autograder) or pass --autograder dist/classroom/<assignment>/autograder"
        )
    with open(path) as file:
        return json.load(file)


def splice_submission(package: str, submission: str, tags: set[str]) -> tuple[list[str], list[str]]:
    """Put the submission's regions tagged ``tags`` into the package at ``package``.

    A file is looked for at its repository path in ``submission``, or, if its
    name is unique in the package, at the top of ``submission`` (loose files
    uploaded to Gradescope). Returns notes for the student (a file or a region
    that could not be found) and the files of the package that hold the
    submission's code (the test runner trusts the others: they are the release's).
    """
    notes, spliced = [], []
    unique: dict[str, int] = {}
    for _, _, names in os.walk(os.path.join(package, "glasstorch")):
        for name in names:
            unique[name] = unique.get(name, 0) + 1
    for folder, _, names in os.walk(os.path.join(package, "glasstorch")):
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            full = os.path.join(folder, name)
            inside = os.path.relpath(full, package).replace(os.sep, "/")
            with open(full, encoding="utf-8") as file:
                pristine = file.read()
            if not any(tag in pristine for tag in tags):
                continue  # no marker of these tasks can be there (parsing every file is slow)
            try:
                wanted = [r for r in find_regions(pristine, inside) if r.tag in tags]
            except MarkerError:
                continue
            if not wanted:
                continue
            repo_path = repository_path(inside)
            mine_path = os.path.join(submission, repo_path)
            flat = os.path.join(submission, os.path.basename(repo_path))
            if not os.path.isfile(mine_path) and os.path.isfile(flat) and unique.get(name) == 1:
                mine_path = flat  # an upload of loose files (Gradescope's drag and drop)
            if not os.path.isfile(mine_path) or os.path.islink(mine_path):
                notes.append(f"{repo_path} is missing from the submission: its tasks stay unsolved")
                continue
            with open(mine_path, encoding="utf-8", errors="replace") as file:
                mine = file.read()
            try:
                bodies = region_bodies(mine, repo_path)
            except MarkerError as error:
                notes.append(f"{error} (the regions of this file stay unsolved)")
                continue
            texts = {}
            ordinal: dict[str, int] = {}
            for region in find_regions(pristine, inside):
                k = ordinal.get(region.tag, 0)
                ordinal[region.tag] = k + 1
                if region.tag not in tags:
                    continue
                if (region.tag, k) in bodies:
                    texts[(region.tag, k)] = bodies[(region.tag, k)]
                else:
                    notes.append(
                        f"{repo_path}: solution region {region.tag!r} not found (keep the "
                        "'# -- solution:' and '# -- end solution' lines around your code)"
                    )
            with open(full, "w", encoding="utf-8") as file:
                file.write(replace_regions(pristine, inside, texts))
            spliced.append(full)
    return notes, spliced


def _hidden_fingerprints(
    tests_dir: str, hidden: list[dict], public: list[str]
) -> set[tuple[str, ...]]:
    """Token runs of every hidden test's source, to redact from any output.

    Runs that also appear in ``public`` (the texts the student has: the visible
    tests, the suite's helpers, the package) give nothing away and are left
    out: a visible failure that quotes a helper line a hidden test shares is
    the student's own business. Tokens are compared in lower case (see
    :func:`_folded`)."""
    runs = set()
    for entry in hidden:
        path = os.path.join(tests_dir, os.path.basename(entry["file"]))
        with open(path, encoding="utf-8") as file:
            source = file.read()
        name = entry["name"].split("::")[-1]
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                segment = ast.get_source_segment(source, node) or ""
                runs |= {_folded(run) for run in fingerprints(segment, REDACT_RUN)}
    by_first: dict[str, set[tuple[str, ...]]] = {}
    for run in runs:
        by_first.setdefault(run[0], set()).add(run)
    for text in public if runs else ():
        tokens = _folded(text_tokens(text))
        for i, token in enumerate(tokens):  # only where a hidden run could start
            if token in by_first and tokens[i : i + REDACT_RUN] in by_first[token]:
                runs.discard(tokens[i : i + REDACT_RUN])
    return runs


def _folded(tokens) -> tuple[str, ...]:
    """Tokens in lower case, so that a case-swapped copy still matches."""
    return tuple(token.casefold() for token in tokens)


def _redact(text: str, runs: set[tuple[str, ...]]) -> str:
    """``text``, or a notice if it quotes a hidden test (pytest's line prefixes ignored)."""
    if not runs:
        return text
    plain = "\n".join(_PYTEST_PREFIX.sub("", line) for line in text.splitlines())
    tokens = _folded(text_tokens(plain))
    lengths = {len(r) for r in runs}
    for length in lengths:
        for i in range(len(tokens) - length + 1):
            if tokens[i : i + length] in runs:
                return "[output withheld: it quoted the source of a hidden test]"
    return text


def _student_text(text: str, work: str) -> str:
    """A failure report in the student's terms: repository paths, trimmed."""
    text = text.replace(os.path.join(work, "pkg", "glasstorch", "reference") + os.sep, "reference/")
    text = text.replace(os.path.join(work, "pkg") + os.sep, "")
    text = text.replace(os.path.join(work, "tests") + os.sep, "shared_tests/")
    # pytest names files relative to the test process's folder (its home in the work folder)
    text = re.sub(r"(\.\./)+pkg/glasstorch/reference/", "reference/", text)
    text = re.sub(r"(\.\./)+pkg/", "", text)
    text = re.sub(r"(\.\./)+tests/", "shared_tests/", text)
    text = re.sub(r"(?m)^test_(\w+)\.py", r"shared_tests/test_\1.py", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if len(text) > OUTPUT_LIMIT:
        text = "[... trimmed ...]\n" + text[-OUTPUT_LIMIT:]
    return text


#: Exception names a hidden test's output may show: Python's own (a submission
#: can name a class of its own anything, and so spell out what it read).
_BUILTIN_ERRORS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


def _hidden_text(passed: bool, trouble: str, batch, local_items, stubs: set[str]) -> str:
    """The output of a hidden test: fixed sentences only, nothing the submission wrote.

    ``stubs`` are the crash lines of the release's own stubs
    (``NotImplementedError: <tag>: <hint>``), the one message shown as is."""
    if passed:
        return "Passed."
    if trouble:
        return f"Failed: {trouble.split(':')[0]}."
    for item in local_items:
        status, _ = batch.status(item)
        if status == "skipped":
            return "Failed: the test skipped; a skipped test earns nothing."
        for report in batch.phases.get(item, []):
            if report["outcome"] == "failed":
                crash = report.get("crash", "").strip()
                if crash in stubs:
                    return f"Failed: {crash}"
                kind = crash.split(":", 1)[0].strip()
                kind = kind if kind in _BUILTIN_ERRORS else "an exception"
                return f"Failed with {kind} (this test is hidden: its details are not shown)."
    return "Failed (this test is hidden: its details are not shown)."


def _result(entry, batch, package, manifest, titles, stubs, runs, work, log) -> dict:
    """One test's entry of ``results.json``, from what its process reported."""
    expected = [local_nodeid(i) for i in entry["items"]]
    trouble = batch.trouble(package, manifest["tier"])
    passed, text = False, ""
    if trouble:
        text = trouble
    elif batch.collect_errors:
        text = "the test could not be collected:\n" + batch.collect_errors[0]["text"]
    elif sorted(i["nodeid"] for i in batch.items) != sorted(expected):
        text = f"expected {len(expected)} test case(s), the run collected {len(batch.items)}"
    else:
        failures = [
            (item, batch.outcome(item)[1]) for item in expected if not batch.outcome(item)[0]
        ]
        passed = not failures
        if failures:
            text = f"{len(failures)} of {len(expected)} case(s) failed; the first:\n"
            text += f"{failures[0][0]}\n{failures[0][1]}"
    if entry["hidden"]:
        output = _hidden_text(passed, trouble, batch, expected, stubs)
    else:
        output = "Passed." if passed else _student_text(text, work)
    output = _redact(output, runs)
    log(
        f"{'PASS' if passed else 'FAIL'} {entry['name']} ({batch.seconds:.1f} s)"
        + ("" if passed else f": {trouble or text.splitlines()[0] if text else ''}")
    )
    if trouble and batch.log.strip():  # for the teacher (Gradescope hides stdout from students)
        log(
            "    the test process's last output:\n    "
            + batch.log.strip()[-1500:].replace("\n", "\n    ")
        )
    return _entry(entry, manifest, titles, passed, output)


def _not_run(entry, manifest, titles) -> dict:
    output = (
        "Not run: the grading's time budget was spent (earlier tests ran to their time limits)."
    )
    return _entry(entry, manifest, titles, False, output)


def _entry(entry, manifest, titles, passed: bool, output: str) -> dict:
    short = entry["name"].split("::", 1)[-1]
    return {
        "name": f"{titles.get(entry['task'], entry['task'])}: {short}",
        "score": entry["points"] if passed else 0.0,
        "max_score": entry["points"],
        "status": "passed" if passed else "failed",
        "output": output,
        "visibility": manifest["hidden_visibility"] if entry["hidden"] else "visible",
        "tags": [entry["task"]],
    }


def _public_texts(tests_dir: str, package: str) -> list[str]:
    """What the student holds anyway: the visible test files, the helpers, the package."""
    texts = []
    for top in (tests_dir, package):
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), encoding="utf-8") as file:
                        texts.append(file.read())
    return texts


def grade(
    source: str,
    submission: str,
    out: str,
    assignment: str | None = None,
    python: str | None = None,
    log=print,
    only: list[str] | None = None,
    time_limit: float | None = None,
    budget: float | None = None,
) -> dict:
    """Grade ``submission`` with the autograder at ``source``; write ``out``; return the results.

    Args:
        source: the autograder's folder, the zip's root (with ``.classroom/manifest.json``);
            ``/autograder/source`` on Gradescope.
        submission: the student's repository.
        out: where ``results.json`` goes (written last, replacing any file there).
        assignment: if given, must be the autograder's assignment.
        python: the interpreter that runs the tests (default: this one).
        log: where progress lines go (Gradescope keeps stdout for teachers).
        only: grade only the tests with these node ids (a teacher's spot check).
        time_limit: seconds per test instead of the manifest's limits.
        budget: seconds for the whole grading (default :data:`BUDGET`); tests
            that cannot start within it fail, unrun.
    """
    start = time.monotonic()
    manifest = load_manifest(source)
    if assignment is not None and assignment != manifest["assignment"]:
        raise ValueError(f"this autograder grades {manifest['assignment']!r}, not {assignment!r}")
    tags = {task["tag"] for task in manifest["tasks"]}
    titles = {task["id"]: task["title"] for task in manifest["tasks"]}
    stubs = {
        f"NotImplementedError: {task['tag']}: {task['hint']}".strip() for task in manifest["tasks"]
    }
    tests = sorted(manifest["tests"], key=lambda t: t["hidden"])  # hidden ones last
    if only is not None:
        tests = [t for t in tests if t["name"] in only]
    deadline = start + (budget or BUDGET)
    results = []
    sandbox = Sandbox.open()
    if sandbox.note:
        log(sandbox.note)
    sandbox.let_through(python or sys.executable)  # e.g. /root, above /root/.pyenv
    if not sandbox.can_run(python or sys.executable):
        log(
            f"warning: the sandbox user cannot enter the folders of {python or sys.executable} "
            "(no access lists on this file system?): "
            "the tests import through descriptors opened before the switch, but a test that "
            "starts a new Python (multiprocessing's spawn) fails. Install the grading Python "
            "where every user may read it (setup.sh's /autograder/venv on Gradescope is)."
        )
    try:
        # The fork server imports pytest while the package is laid out.
        server = ForkServer(sandbox, test_environment(manifest["tier"]), python, HIDDEN_MODULES)
        with server, tempfile.TemporaryDirectory(prefix="glasstorch-grade-") as work:
            work = os.path.realpath(work)
            package = make_package(source, os.path.join(work, "pkg"))
            notes, spliced = splice_submission(package, os.path.realpath(submission), tags)
            full_tests = os.path.join(source, ".classroom", "tests")
            files = sorted({t["file"] for t in tests})
            tests_dir = make_tests_dir(full_tests, os.path.join(work, "tests"), files)
            hidden_names: dict[str, set[str]] = {}
            for entry in tests:
                if entry["hidden"]:
                    hidden_names.setdefault(entry["file"], set()).add(entry["name"].split("::")[-1])
            visible_copies = {}
            for path, names in hidden_names.items():
                local = os.path.join(tests_dir, os.path.basename(path))
                with open(local, encoding="utf-8") as file:
                    visible_copies[path] = hide_tests(file.read(), names)
                with open(local, "w", encoding="utf-8") as file:
                    file.write(visible_copies[path])
            runs = _hidden_fingerprints(
                full_tests, [t for t in tests if t["hidden"]], _public_texts(tests_dir, package)
            )
            # Compiled once here, by the grader (compiling runs none of the code):
            # no test process compiles the package again.
            compileall.compile_dir(package, quiet=2, workers=1)
            compileall.compile_dir(
                tests_dir, quiet=2, workers=1, rx=re.compile(r"/test_[^/]*\.py$")
            )
            # The test processes read the package and the tests, write nothing of
            # them, and never see the autograder's own copy of the hidden tests.
            scratch = os.path.join(work, "scratch")
            os.mkdir(scratch)
            sandbox.traversable(work)
            sandbox.share(package)
            sandbox.share(tests_dir)
            sandbox.traversable(scratch)  # the homes inside are private, the logs root's
            sandbox.share(source)  # the grader itself: root's, read-only
            sandbox.hide(os.path.join(source, ".classroom"))
            for entry in tests:
                remaining = deadline - time.monotonic()
                if server.setup_error:
                    batch = Batch(setup_error=server.setup_error)
                elif remaining < 1:
                    results.append(_not_run(entry, manifest, titles))
                    log(f"NOT RUN {entry['name']}: the grading's time budget is spent")
                    continue
                else:
                    local = os.path.join(tests_dir, os.path.basename(entry["file"]))
                    if entry["hidden"]:  # the hidden version is there only while it runs
                        shutil.copyfile(
                            os.path.join(full_tests, os.path.basename(entry["file"])), local
                        )
                    batch = run_forked(
                        server,
                        package,
                        tests_dir,
                        [local_nodeid(entry["name"])],
                        time_limit=min(time_limit or entry["time_limit"], remaining),
                        scratch=scratch,
                        untrusted=spliced,
                        cache_tests=not entry["hidden"],
                    )
                    if entry["hidden"] and entry["file"] in visible_copies:
                        with open(local, "w", encoding="utf-8") as file:
                            file.write(visible_copies[entry["file"]])
                results.append(
                    _result(entry, batch, package, manifest, titles, stubs, runs, work, log)
                )
    finally:
        sandbox.close()  # nothing of the submission runs from here on
    score = sum(r["score"] for r in results)
    visible = [r for r in results if r["visibility"] == "visible"]
    summary = [
        f"Visible tests: {sum(r['status'] == 'passed' for r in visible)} of {len(visible)} passed.",
    ]
    if len(visible) < len(results):
        summary.append(
            f"{len(results) - len(visible)} hidden test(s) are graded too; their results "
            "appear when the grades are published."
        )
    summary.extend(notes)
    document = {
        "score": round(score, 4),
        "max_score": round(sum(r["max_score"] for r in results), 4),
        "execution_time": round(time.monotonic() - start, 1),
        "output": "\n".join(summary),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": results,
    }
    folder = os.path.dirname(os.path.abspath(out))
    os.makedirs(folder, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=".results-", dir=folder)  # a new file
    with os.fdopen(descriptor, "w") as file:
        json.dump(document, file, indent=1)
        file.write("\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, out)
    return document
