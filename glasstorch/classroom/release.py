"""Building the releases: a student repository and a Gradescope autograder per assignment.

For assignment number *k* of the course the build makes

* ``dist/classroom/<id>/student/``: the repository with the solution regions of
  assignment *k* **and of every later assignment** replaced by stubs and their
  speed tricks cut out (a student never holds a later assignment's solution,
  nor a fast path that computes a task without them), the regions of earlier
  assignments solved (the reference solution; ``sync`` puts the student's own
  code there instead), the hidden test functions taken out of the test files,
  the teacher notes taken out of the docs, plus ``classroom.json`` (what
  ``check`` runs) and a GitHub Classroom workflow;
* ``dist/classroom/<id>/autograder/`` and ``autograder.zip`` (the same files):
  at the root ``setup.sh``, ``run_autograder`` and ``requirements.txt`` (every
  package pinned), beside them the release's package (``glasstorch/``, the
  grader included) and ``.classroom/`` (the full test files, hidden tests
  included, and ``manifest.json``). Gradescope extracts the zip into
  ``/autograder/source``, runs ``setup.sh`` there once, and runs a copy of
  ``run_autograder`` at ``/autograder/run_autograder`` for each submission.

The build refuses to ship (:class:`BuildError`) when a marker is wrong, when a
task has no region, when solution text of a removed region appears anywhere
in the release (:mod:`.leaks`), when a graded test does not pass on the
reference solution, when a graded test does not fail on the release, or when
the release fails a test of the assignment's scope that is not graded. Every
test runs with the optional dependencies hidden (``grading.HIDDEN_MODULES``,
PyTorch first), as on the grading image: a graded test that skips there is
refused, and a test of the scope that skips is left ungraded, never counted
as a failure.

Those last checks run the tests in batches, one process per tree (see
``docs/guide/classroom-teachers.md`` for why this is safe: the trees are the
teacher's own code), while ``grade`` runs each graded test in a process of
its own.
"""

from __future__ import annotations

import ast
import concurrent.futures
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field

from .course import Assignment, Course, node_starts
from .grading import RUNNER_NEEDS, local_nodeid, make_package, make_tests_dir, run_tests
from .leaks import find_leaks
from .markers import (
    MarkerError,
    Region,
    body_digest,
    find_regions,
    region_bodies,
    region_text,
    strip_regions,
)

#: Where the regions may be (the reference tier and the frontend); the classroom package is not.
REGION_ROOTS = ("glasstorch/", "reference/")
REGION_EXCLUDE = ("glasstorch/classroom/",)
#: Never copied into a release.
RELEASE_EXCLUDE = ("dist/", ".ci/")
TEACHER_NOTES = re.compile(
    r"^<!-- teacher-notes -->\n.*?^<!-- end teacher-notes -->\n?", flags=re.DOTALL | re.MULTILINE
)
#: A solution shown in prose (a guide quoting a kernel): removed with its task.
MD_SOLUTION = re.compile(
    r"^<!-- solution: (?P<tag>[a-z0-9_/-]+) -->\n.*?^<!-- end solution -->\n?",
    flags=re.DOTALL | re.MULTILINE,
)
SUITE = "shared_tests"


class BuildError(RuntimeError):
    """The build refuses to ship; the message lists every reason."""


@dataclass
class AssignmentReport:
    """What the build found for one assignment (printed and kept in the manifest)."""

    id: str
    tasks: int = 0
    graded: int = 0
    hidden: int = 0
    cases: int = 0
    points: float = 0.0
    scope: int = 0
    excluded: int = 0
    skipped: int = 0
    speed_trick_tests: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def repository_files(root: str) -> list[str]:
    """The repository's files (tracked and untracked-but-not-ignored), ``/``-separated."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        names = sorted(set(out.split("\n")) - {""})
        return [n for n in names if os.path.isfile(os.path.join(root, n))]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [
                d for d in dirs if d not in {".git", ".venv", "dist", "__pycache__", "build"}
            ]
            for name in files:
                path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                found.append(path)
        return sorted(found)


def region_files(tree: str) -> list[str]:
    """The files of ``tree`` (a repository or a release) that may hold regions.

    Walks the folders themselves (a release inside ``dist/`` is ignored by git)."""
    found = []
    for top in REGION_ROOTS:
        for folder, dirs, names in os.walk(os.path.join(tree, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                path = os.path.relpath(os.path.join(folder, name), tree).replace(os.sep, "/")
                if is_region_file(path):
                    found.append(path)
    return found


def is_region_file(path: str) -> bool:
    return (
        path.endswith(".py")
        and path.startswith(REGION_ROOTS)
        and not path.startswith(REGION_EXCLUDE)
    )


def scan_regions(root: str, files: list[str], course: Course) -> dict[str, list[Region]]:
    """Every region of the repository, checked against the course.

    Raises:
        BuildError: listing every marker error and every task without a region.
    """
    tags, problems, regions = course.tags(), [], {}
    for path in files:
        if not is_region_file(path):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as file:
            source = file.read()
        try:
            found = find_regions(source, path, tags)
        except MarkerError as error:
            problems.append(str(error))
            continue
        if found:
            regions[path] = found
    used = {r.tag for found in regions.values() for r in found}
    for tag in sorted(tags - used):
        problems.append(f"task {tag!r} has no solution region in the source")
    if problems:
        raise BuildError("solution markers:\n  " + "\n  ".join(problems))
    return regions


def hide_tests(source: str, names: set[str]) -> str:
    """``source`` (a test file) without the test functions called ``names``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            spans.append((first, node.end_lineno))
    for first, last in sorted(spans, reverse=True):
        del lines[first - 1 : last]
    return re.sub(r"\n{4,}", "\n\n\n", "".join(lines))


# ------------------------------------------------------------------------- the trees
def write_tree(
    root: str,
    files: list[str],
    dest: str,
    remove: set[str],
    course: Course,
    hidden: dict[str, set[str]] | None = None,
    only=None,
) -> dict[str, str]:
    """Copy ``files`` from ``root`` to ``dest``, stubbing the regions tagged in ``remove``
    and cutting out their speed tricks.

    Returns ``tag -> concatenated solution text`` of the blocks removed (a
    task's speed trick is its teacher's code too: the leak check looks for it).
    """
    hints, solutions = course.hints(), {}
    for path in files:
        if only is not None and not only(path):
            continue
        source_path, target = os.path.join(root, path), os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if is_region_file(path):
            with open(source_path, encoding="utf-8") as file:
                source = file.read()
            text, removed = strip_regions(source, path, remove, hints)
            for region in removed:
                solutions[region.tag] = solutions.get(region.tag, "") + region_text(source, region)
            with open(target, "w", encoding="utf-8") as file:
                file.write(text)
        elif hidden and path in hidden:
            with open(source_path, encoding="utf-8") as file:
                text = hide_tests(file.read(), hidden[path])
            with open(target, "w", encoding="utf-8") as file:
                file.write(text)
        elif path.endswith(".md") and hidden is not None:
            with open(source_path, encoding="utf-8") as file:
                text = TEACHER_NOTES.sub("", file.read())
            text = MD_SOLUTION.sub(
                lambda m: (
                    f"*(This code is part of the assignment task `{m['tag']}`.)*\n"
                    if m["tag"] in remove
                    else m[0]
                ),
                text,
            )
            with open(target, "w", encoding="utf-8") as file:
                file.write(text)
        else:
            shutil.copy2(source_path, target)
    return solutions


def _in_package(path: str) -> bool:
    """Whether the build's test trees need ``path``: the package, without the C
    tier's sources (the tests run the reference tier), but with the CUDA
    simulator's runtime, which the simulator compiles when first used."""
    return path.startswith(("glasstorch/", "reference/", "fast/")) and not (
        path.endswith(".c") and not path.startswith("fast/cuda/simulator/")
    )


# ------------------------------------------------------------------------- graded tests
def resolve_tests(assignment: Assignment, items: list[dict], course: Course) -> list[dict]:
    """The graded tests of ``assignment``: one entry per selected test function and task.

    A test selected by an ``only_failing`` entry may be a candidate of several
    tasks (the build later gives it to one); any other test may be selected
    by one task only.

    Raises:
        BuildError: for a selection that matches nothing, or a test graded twice.
    """
    problems, graded, owner = [], {}, {}
    for task in assignment.tasks:
        for selection in task.tests:
            matched = [
                item for item in items if selection.matches(item["nodeid"], set(item["markers"]))
            ]
            if not matched:
                problems.append(
                    f"task {task.tag!r}: the tests entry {selection.select!r} selects no test"
                )
            for item in matched:
                name = item["nodeid"].split("[", 1)[0]
                key = (name, task.id)
                if key in graded:
                    continue
                if name in owner and not (selection.only_failing and owner[name][1]):
                    problems.append(f"{name} is graded by both {owner[name][0]!r} and {task.tag!r}")
                    continue
                owner.setdefault(name, (task.tag, selection.only_failing))
                graded[key] = {
                    "name": name,
                    "task": task.id,
                    "points": selection.points,
                    "hidden": selection.hidden,
                    "time_limit": selection.time_limit or assignment.time_limit,
                    "file": name.split("::", 1)[0],
                    "only_failing": selection.only_failing,
                    "items": [],
                }
    if problems:
        raise BuildError(f"assignment {assignment.id!r}:\n  " + "\n  ".join(problems))
    # A test function is graded whole: every case of it, whatever the selection said.
    for entry in graded.values():
        entry["items"] = [
            i["nodeid"] for i in items if i["nodeid"].split("[", 1)[0] == entry["name"]
        ]
    return list(graded.values())


# ------------------------------------------------------------------------- the build
def check_test_environment(error=None) -> None:
    """Make sure this Python can run the tests (pytest and Hypothesis), or say what to do.

    Raises:
        BuildError (or ``error``): naming the missing package and the fix.
    """
    missing = [name for name in RUNNER_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise (error or BuildError)(
            f"{sys.executable} cannot run the tests: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed. Install the test extra "
            "(make install, or: python -m pip install -e '.[test]') and run again"
        )


def build(
    course: Course,
    root: str,
    out: str,
    only: list[str] | None = None,
    log=print,
    jobs: int | None = None,
) -> list[AssignmentReport]:
    """Build every assignment (or those in ``only``) into ``out``; see the module docstring.

    ``jobs`` assignments are built at once (default: one per core).

    Raises:
        BuildError: when any check fails (after trying every assignment).
    """
    check_test_environment()
    pinned_requirements()  # what grading will install must be here: say so before any test runs
    files = [f for f in repository_files(root) if not f.startswith(RELEASE_EXCLUDE)]
    scan_regions(root, files, course)
    chosen = [a for a in course.assignments if not only or a.id in only]

    def build_one(assignment: Assignment) -> tuple[AssignmentReport, list[str]]:
        lines: list[str] = []
        start = time.monotonic()
        try:
            report = build_assignment(course, assignment, root, files, out, lines.append)
        except (BuildError, MarkerError) as error:
            report = AssignmentReport(assignment.id, problems=[str(error)])
        report.seconds = time.monotonic() - start
        return report, lines

    # The assignments are independent: one at a time per core (their tests run in
    # processes of their own); each one's lines are printed together, in course order.
    workers = max(1, min(len(chosen), jobs or os.cpu_count() or 1))
    reports, problems = [], []
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for assignment, (report, lines) in zip(chosen, pool.map(build_one, chosen)):
            log(f"== {assignment.id}: {assignment.title}")
            for line in lines:
                log(line)
            reports.append(report)
            problems.extend(f"{assignment.id}: {p}" for p in report.problems)
            log(
                f"   {report.tasks} tasks, {report.graded} graded tests ({report.hidden} hidden, "
                f"{report.cases} cases, {report.points:g} points), scope {report.scope} cases "
                f"({report.excluded} left to later assignments, {report.skipped} skipped "
                f"without the optional dependencies, {report.speed_trick_tests} checking speed "
                f"tricks the release cuts out), {report.seconds:.0f} s"
                + (f", {len(report.problems)} PROBLEM(S)" if report.problems else "")
            )
            for problem in report.problems:
                log("   PROBLEM: " + problem.replace("\n", "\n   "))
    if problems:
        raise BuildError("the build refuses to ship:\n" + "\n".join(problems))
    return reports


def build_assignment(
    course: Course, assignment: Assignment, root: str, files: list[str], out: str, log
) -> AssignmentReport:
    report = AssignmentReport(assignment.id, tasks=len(assignment.tasks))
    index = course.index(assignment.id)
    later = {t.tag for a in course.assignments[index + 1 :] for t in a.tasks}
    removed = course.tags_from(assignment.id)
    target = os.path.join(out, assignment.id)
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    suite = os.path.join(root, SUITE)
    test_files = assignment.files()
    for path in test_files:
        if not os.path.isfile(os.path.join(root, path)):
            raise BuildError(f"test file {path} does not exist")

    with tempfile.TemporaryDirectory(prefix="glasstorch-build-") as work:
        # The reference solution of this assignment, later assignments removed.
        solution = os.path.join(work, "solution")
        write_tree(root, files, solution, later, course, only=_in_package)
        solution_pkg = make_package(solution, os.path.join(work, "solution-pkg"))
        tests = make_tests_dir(suite, os.path.join(work, "tests"), test_files)
        tier, limit = course.tier, 60 + 30 * len(test_files)

        log("   collecting the tests")
        collected = run_tests(
            solution_pkg,
            tests,
            [local_nodeid(p) for p in test_files],
            tier=tier,
            time_limit=limit,
            collect_only=True,
        )
        trouble = collected.trouble(solution_pkg, tier) or _collect_trouble(collected)
        if trouble:
            raise BuildError(f"collecting the tests on the reference solution failed: {trouble}")
        items = [dict(i, nodeid=f"{SUITE}/{i['nodeid']}") for i in collected.items]
        # A test of a speed trick this release cuts out is never graded, nor required on it.
        trick_tests = {
            i["nodeid"] for i in items if course.checks_speed_trick(i["nodeid"], removed)
        }
        for task in assignment.tasks:
            for prefix in task.speed_trick_tests:
                if not any(node_starts(i["nodeid"], prefix) for i in items):
                    report.problems.append(
                        f"task {task.tag!r}: the speed_trick_tests entry {prefix!r} selects no test"
                    )
        graded = resolve_tests(
            assignment, [i for i in items if i["nodeid"] not in trick_tests], course
        )
        graded_items = {i for g in graded for i in g["items"]}
        scope = [
            i["nodeid"]
            for i in items
            if i["nodeid"] in graded_items or i["nodeid"].split("::")[0] in assignment.scope
        ]
        report.graded = len(graded)
        report.hidden = sum(g["hidden"] for g in graded)
        report.cases = len(graded_items)
        report.points = sum(g["points"] for g in graded)

        log(f"   running {len(scope)} cases on the reference solution")
        on_solution = run_tests(
            solution_pkg,
            tests,
            [local_nodeid(n) for n in scope],
            tier=tier,
            time_limit=limit + 10 * len(scope),
        )
        trouble = on_solution.trouble(solution_pkg, tier)
        if trouble:
            raise BuildError(f"running the tests on the reference solution failed: {trouble}")
        # A test that skips here (it needs an optional dependency, hidden as on the
        # grading image) cannot be graded: an only_failing selection leaves it out,
        # a test named by the course is refused below.
        skipped = {n for n in scope if on_solution.status(local_nodeid(n))[0] == "skipped"}
        graded = [
            e
            for e in graded
            if not e["only_failing"]
            or all(on_solution.outcome(local_nodeid(i))[0] for i in e["items"])
        ]  # an only_failing test that needs a later assignment is left to it
        for entry in graded:
            for item in entry["items"]:
                status, text = on_solution.status(local_nodeid(item))
                if status == "skipped":
                    report.problems.append(
                        f"graded test {item} skips on the reference solution ({text}): it "
                        "needs what the grading image lacks (PyTorch and the other optional "
                        "dependencies are hidden), so it cannot be graded; give it a NumPy "
                        "path or stored expectations, or leave it out of the course"
                    )
                elif status != "passed":
                    report.problems.append(
                        f"graded test {item} fails on the reference solution "
                        f"(later assignments removed):\n{_indent(text)}"
                    )
        kept = [n for n in scope if on_solution.outcome(local_nodeid(n))[0]]
        report.scope, report.skipped = len(kept), len(skipped)
        report.speed_trick_tests = len(trick_tests.intersection(kept))
        report.excluded = len(scope) - len(kept) - len(skipped)

        # only_failing: a test is graded by a task when removing that task alone breaks it.
        for task in assignment.tasks:
            candidates = [e for e in graded if e["only_failing"] and e["task"] == task.id]
            if not candidates:
                continue
            log(f"   running {len(candidates)} test(s) without task {task.tag!r} alone")
            alone = os.path.join(work, f"without-{task.id}")
            write_tree(root, files, alone, later | {task.tag}, course, only=_in_package)
            alone_pkg = make_package(alone, os.path.join(work, f"without-{task.id}-pkg"))
            names = [local_nodeid(e["name"]) for e in candidates]
            batch = run_tests(
                alone_pkg, tests, names, tier=tier, time_limit=limit + 10 * len(names)
            )
            trouble = batch.trouble(alone_pkg, tier)
            if trouble:
                raise BuildError(f"running the tests without task {task.tag!r}: {trouble}")
            for entry in candidates:
                entry["keep"] = not all(batch.outcome(local_nodeid(i))[0] for i in entry["items"])
        # A test several tasks break goes to the last of them in the assignment's order:
        # tasks go from foundations to specifics, and the test checks the specific one.
        order = {task.id: n for n, task in enumerate(assignment.tasks)}
        chosen: dict[str, dict] = {}
        for entry in graded:
            if not entry.pop("keep", True):
                continue
            best = chosen.get(entry["name"])
            if best is None or order[entry["task"]] > order[best["task"]]:
                chosen[entry["name"]] = entry
        graded = [e for e in graded if chosen.get(e["name"]) is e]
        for entry in graded:
            del entry["only_failing"]

        # The student release.
        hidden = {}
        for entry in graded:
            if entry["hidden"]:
                hidden.setdefault(entry["file"], set()).add(entry["name"].split("::")[-1])
        student = os.path.join(target, "student")
        solutions = write_tree(root, files, student, removed, course, hidden=hidden)
        manifest = _manifest(course, assignment, graded, files, root)
        _write_student_extras(student, manifest, course, assignment)

        log("   checking the release for solution text")
        for leak in find_leaks(student, solutions.items(), _background(root, files, course)):
            report.problems.append(str(leak))

        log(f"   running {len(kept)} cases on the student release")
        student_pkg = make_package(student, os.path.join(work, "student-pkg"))
        on_student = run_tests(
            student_pkg,
            tests,
            [local_nodeid(n) for n in kept],
            tier=tier,
            time_limit=limit + 10 * len(kept),
        )
        trouble = on_student.trouble(student_pkg, tier)
        if trouble:
            raise BuildError(f"running the tests on the student release failed: {trouble}")
        graded_items = {i for g in graded for i in g["items"]}
        report.graded = len(graded)
        report.hidden = sum(g["hidden"] for g in graded)
        report.cases = len(graded_items)
        report.points = sum(g["points"] for g in graded)
        if not graded:
            report.problems.append("no graded test is left")
        for task in assignment.tasks:
            if not any(e["task"] == task.id for e in graded):
                report.problems.append(f"task {task.tag!r} has no graded test left")
        _rewrite_hidden(root, student, graded)
        manifest = _manifest(course, assignment, graded, files, root)
        _write_student_extras(student, manifest, course, assignment)
        for entry in graded:
            if all(on_student.outcome(local_nodeid(i))[0] for i in entry["items"]):
                report.problems.append(
                    f"graded test {entry['name']} passes on the student release: the regions "
                    f"of task {entry['task']!r} do not cover what it checks"
                )
        for nodeid in kept:
            if nodeid not in graded_items and nodeid not in trick_tests:
                status, text = on_student.status(local_nodeid(nodeid))
                if status != "passed":
                    report.problems.append(
                        f"{nodeid} is not graded but {'skips' if status == 'skipped' else 'fails'}"
                        f" on the student release:\n" + _indent(text)
                    )

        manifest["build"] = {
            "scope_cases": report.scope,
            "left_to_later_assignments": report.excluded,
            "skipped_without_optional_dependencies": report.skipped,
        }
        _write_autograder(target, student, manifest, suite, test_files, assignment)
    return report


def _rewrite_hidden(root: str, student: str, graded: list[dict]) -> None:
    """Write the release's test files again, without exactly the hidden tests kept."""
    hidden: dict[str, set[str]] = {}
    for entry in graded:
        if entry["hidden"]:
            hidden.setdefault(entry["file"], set()).add(entry["name"].split("::")[-1])
    for path in {e["file"] for e in graded}:
        with open(os.path.join(root, path), encoding="utf-8") as file:
            text = file.read()
        if path in hidden:
            text = hide_tests(text, hidden[path])
        with open(os.path.join(student, path), "w", encoding="utf-8") as file:
            file.write(text)


def _background(root: str, files: list[str], course: Course):
    """The library's Python code with every region cut out (see :mod:`.leaks`)."""
    everything = course.tags()
    for path in files:
        if is_region_file(path):
            with open(os.path.join(root, path), encoding="utf-8") as file:
                text, _ = strip_regions(file.read(), path, everything, {})
            yield text
        elif path.startswith(("fast/",)) and path.endswith(".py"):
            with open(os.path.join(root, path), encoding="utf-8") as file:
                yield file.read()


def _collect_trouble(batch) -> str:
    if batch.collect_errors:
        return "; ".join(e["nodeid"] + ": " + e["text"][-500:] for e in batch.collect_errors)
    return ""


def _indent(text: str, limit: int = 1500) -> str:
    text = text.strip()
    if len(text) > limit:
        text = "..." + text[-limit:]
    return "    " + text.replace("\n", "\n    ")


def _manifest(course: Course, assignment: Assignment, graded, files, root) -> dict:
    return {
        "course": course.title,
        "assignment": assignment.id,
        "title": assignment.title,
        "tier": course.tier,
        "hidden_visibility": course.hidden_visibility,
        "tasks": [
            {"id": t.id, "tag": t.tag, "title": t.title, "hint": t.hint} for t in assignment.tasks
        ],
        "order": [a.id for a in course.assignments],
        "python": _python_version(),
        "requirements": list(pinned_requirements()),
        "tests": graded,
    }


def student_manifest(manifest: dict) -> dict:
    """What a student repository may know: the visible tests only."""
    visible = [t for t in manifest["tests"] if not t["hidden"]]
    hidden_points = sum(t["points"] for t in manifest["tests"] if t["hidden"])
    return dict(
        {k: v for k, v in manifest.items() if k not in ("tests", "build")},
        tests=visible,
        hidden_tests=len(manifest["tests"]) - len(visible),
        hidden_points=hidden_points,
    )


#: What grading needs: the library's dependencies and the test runner. Not PyTorch.
GRADING_PACKAGES = ("numpy", "cffi", "tqdm", "pytest", "hypothesis")


@functools.cache
def pinned_requirements(roots=GRADING_PACKAGES) -> tuple[str, ...]:
    """``name==version`` for ``roots`` and everything they need, as installed here.

    The build has just run every test with these versions; ``setup.sh`` and the
    student's workflow install exactly them (``--no-deps``: nothing unpinned).
    Dependencies are followed through the installed metadata, with their
    environment markers evaluated for this Python.
    """
    from importlib import metadata

    from packaging.requirements import Requirement  # pytest's own dependency
    from packaging.utils import canonicalize_name

    versions: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in versions:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise BuildError(
                f"{name} is not installed in {sys.executable}; the build pins the versions "
                "it tests with, so install the test extra first (make install)"
            ) from None
        versions[name] = distribution.version
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return tuple(f"{name}=={versions[name]}" for name in sorted(versions))


def _python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


#: The pinned packages, in a student release (the workflow installs them).
STUDENT_REQUIREMENTS = "classroom-requirements.txt"

WORKFLOW = """\
# Runs the visible tests of this assignment on every push (GitHub Classroom).
# The grade itself comes from the autograder; this is the student's feedback.
# Every version is pinned: the Python, the actions, and the packages in
# classroom-requirements.txt (the versions the release was built and tested with;
# installed without their dependencies, which are pinned there too). No PyTorch.
name: classroom
on: [push, workflow_dispatch]
permissions:
  contents: read
jobs:
  check:
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4.2.2
      - uses: actions/setup-python@v5.6.0
        with:
          python-version: "{python}"
      - name: Install
        run: python -m pip install --no-deps --only-binary=:all: -r {requirements}
      - name: Check
        env:
          GLASSTORCH_TIER: reference
        run: python -m glasstorch.classroom check --no-progress
"""


def _write_student_extras(student: str, manifest: dict, course: Course, assignment) -> None:
    with open(os.path.join(student, "classroom.json"), "w") as file:
        json.dump(
            dict(student_manifest(manifest), regions=shipped_regions(student)), file, indent=1
        )
        file.write("\n")
    with open(os.path.join(student, STUDENT_REQUIREMENTS), "w") as file:
        file.write("# The packages the classroom tools need, pinned (no PyTorch):\n")
        file.write(f"#   python -m pip install --no-deps -r {STUDENT_REQUIREMENTS}\n")
        file.write("\n".join(manifest["requirements"]) + "\n")
    workflows = os.path.join(student, ".github", "workflows")
    os.makedirs(workflows, exist_ok=True)
    with open(os.path.join(workflows, "classroom.yml"), "w") as file:
        file.write(WORKFLOW.format(python=manifest["python"], requirements=STUDENT_REQUIREMENTS))


def shipped_regions(tree: str) -> dict[str, dict[str, str]]:
    """``path -> {"tag#k": digest}`` of every region body as the release ships it.

    ``sync`` compares a student's region with this to tell their own work from
    the stub (or the reference solution) they were given.
    """
    shipped: dict[str, dict[str, str]] = {}
    for path in region_files(tree):
        with open(os.path.join(tree, path), encoding="utf-8") as file:
            bodies = region_bodies(file.read(), path)
        if bodies:
            shipped[path] = {f"{tag}#{k}": body_digest(body) for (tag, k), body in bodies.items()}
    return shipped


SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source (this zip, extracted),
# when it builds the autograder's image. Python {python} and exactly the package
# versions the build tested with (requirements.txt, beside this file; installed
# without their dependencies, which are pinned there too). No PyTorch.
# GLASSTORCH_AUTOGRADER_ROOT (default /autograder) exists for the classroom's own tests.
set -euo pipefail
cd "$(dirname "$0")"
root="${{GLASSTORCH_AUTOGRADER_ROOT:-/autograder}}"
PYTHON=python{python}
if ! command -v "$PYTHON" >/dev/null || ! "$PYTHON" -c "import ensurepip" 2>/dev/null; then
    apt-get update
    apt-get install -y --no-install-recommends "$PYTHON" "$PYTHON-venv"
fi
# The CUDA simulator compiles kernels with the C and C++ compilers (the cuda assignment).
if ! command -v cc >/dev/null || ! command -v c++ >/dev/null; then
    apt-get update
    apt-get install -y --no-install-recommends gcc g++
fi
"$PYTHON" -m venv "$root/venv"
"$root/venv/bin/python" -m pip install --no-cache-dir --no-deps --only-binary=:all: \\
    -r requirements.txt
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope copies this file to /autograder/run_autograder and runs it for every
# submission: the zip is in /autograder/source, the submission in
# /autograder/submission, and the grader alone writes /autograder/results/results.json.
# GLASSTORCH_AUTOGRADER_ROOT (default /autograder) exists for the classroom's own tests.
set -u
root="${{GLASSTORCH_AUTOGRADER_ROOT:-/autograder}}"
cd "$root/source" || exit 1
GLASSTORCH_TIER={tier} exec "$root/venv/bin/python" -m glasstorch.classroom grade \\
    --assignment {assignment} --autograder "$root/source" \\
    --submission "$root/submission" --out "$root/results/results.json"
"""


def _write_autograder(target, student, manifest, suite, test_files, assignment) -> None:
    """The autograder folder and ``autograder.zip``: both hold the same files at their root."""
    folder = os.path.join(target, "autograder")
    make_package(student, folder)
    tests = os.path.join(folder, ".classroom", "tests")
    make_tests_dir(suite, tests, test_files)
    # Teachers' tools stay out of the zip except what grading needs.
    with open(os.path.join(folder, ".classroom", "manifest.json"), "w") as file:
        json.dump(manifest, file, indent=1)
        file.write("\n")
    for name, text, mode in (
        ("setup.sh", SETUP_SH.format(python=manifest["python"]), 0o755),
        (
            "run_autograder",
            RUN_AUTOGRADER.format(assignment=assignment.id, tier=manifest["tier"]),
            0o755,
        ),
        ("requirements.txt", "\n".join(manifest["requirements"]) + "\n", 0o644),
    ):
        path = os.path.join(folder, name)
        with open(path, "w", newline="\n") as file:
            file.write(text)
        os.chmod(path, mode)
    with zipfile.ZipFile(os.path.join(target, "autograder.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for here, dirs, names in os.walk(folder):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(here, name)
                info = zipfile.ZipInfo.from_file(full, os.path.relpath(full, folder))
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(full, "rb") as data:
                    z.writestr(info, data.read())
