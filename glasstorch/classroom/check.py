"""``check`` and ``sync``: the two commands a student runs in their repository."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field

from .grading import local_nodeid, make_package, make_tests_dir, run_tests
from .markers import MarkerError, body_digest, is_stub, region_bodies, replace_regions
from .release import check_test_environment, region_files


class CheckError(ValueError):
    """A student command cannot do what was asked; the message says why and what to do."""


def load_student_manifest(repo: str) -> dict:
    path = os.path.join(repo, "classroom.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} does not exist: run this inside a student repository made by "
            "'make assignments' (or pass --repo)"
        )
    with open(path) as file:
        return json.load(file)


def task_status(batch, items: list[str], tag: str, trouble: str) -> tuple[str, str]:
    """("passed" | "not started" | "waiting" | "failed", detail) for one task's cases.

    *waiting* means every failure is some other task's stub."""
    if trouble:
        return "failed", trouble
    failures = []
    for item in items:
        passed, text = batch.outcome(item)
        if not passed:
            crash = ""
            for report in batch.phases.get(item, []):
                if report["outcome"] != "passed":
                    crash = report.get("crash", "")
                    break
            failures.append((item, crash or text.strip().splitlines()[-1:] or [""]))
    if not failures:
        return "passed", ""
    if all(str(crash).startswith(f"NotImplementedError: {tag}") for _, crash in failures):
        return "not started", failures[0][1]
    crashes = [str(crash) for _, crash in failures]
    if all(c.startswith("NotImplementedError: ") for c in crashes):
        others = {c.split(":")[1].strip() for c in crashes} - {tag}
        return "waiting", "needs " + ", ".join(sorted(others)) + " first"
    item, crash = failures[0]
    return "failed", f"{item}: {crash if isinstance(crash, str) else crash[0]}"


def check(repo: str = ".", tasks: list[str] | None = None, progress: bool = True, log=print) -> int:
    """Run the visible tests of the repository's assignment; print a report per task.

    Returns the number of tasks not passed (0 when all pass).
    """
    repo = os.path.realpath(repo)
    manifest = load_student_manifest(repo)
    known = [task["id"] for task in manifest["tasks"]]
    unknown = [name for name in tasks or () if name not in known]
    if unknown:
        raise CheckError(
            f"no task {', '.join(map(repr, unknown))} in assignment {manifest['assignment']!r}; "
            f"its tasks are: {', '.join(known)}"
        )
    check_test_environment(CheckError)
    tier = manifest["tier"]
    log(f"{manifest['title']} ({manifest['assignment']}): visible tests, tier {tier}")
    by_task: dict[str, list[dict]] = {}
    for test in manifest["tests"]:
        by_task.setdefault(test["task"], []).append(test)
    total = sum(len(t["items"]) for t in manifest["tests"])
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="test", leave=False)
    rows, not_passed = [], 0
    with tempfile.TemporaryDirectory(prefix="glasstorch-check-") as work:
        package = make_package(repo, os.path.join(work, "pkg"))
        files = sorted({t["file"] for t in manifest["tests"]})
        tests_dir = make_tests_dir(
            os.path.join(repo, "shared_tests"), os.path.join(work, "tests"), files
        )
        for task in manifest["tasks"]:
            if tasks and task["id"] not in tasks:
                continue
            entries = by_task.get(task["id"], [])
            items = [local_nodeid(i) for t in entries for i in t["items"]]
            if not items:
                rows.append((task, "hidden only", ""))
                continue

            def advance(report, bar=bar):
                if bar is not None and report["when"] == "teardown":
                    bar.update(1)

            limit = 60 + sum(t["time_limit"] for t in entries)
            batch = run_tests(
                package,
                tests_dir,
                [local_nodeid(t["name"]) for t in entries],
                tier=tier,
                time_limit=limit,
                on_phase=advance,
            )
            status, detail = task_status(batch, items, task["tag"], batch.trouble(package, tier))
            not_passed += status != "passed"
            rows.append((task, status, detail))
    if bar is not None:
        bar.close()
    for task, status, detail in rows:
        mark = {"passed": "PASS", "not started": "TODO", "waiting": "WAIT", "hidden only": "----"}
        mark = mark.get(status, "FAIL")
        log(f"  [{mark}] {task['tag']:<28} {task['title']}: {status}")
        if detail and status != "passed":
            first = detail.strip().splitlines()[0] if detail.strip() else ""
            log(f"         {first[:300]}")
    if manifest.get("hidden_tests"):
        log(
            f"  {manifest['hidden_tests']} hidden test(s) ({manifest['hidden_points']:g} points) "
            "are graded by the autograder only: passing every visible test is not a full score."
        )
    return not_passed


@dataclass
class SyncResult:
    """What ``sync`` did: regions copied, regions in conflict (left alone), regions skipped."""

    copied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def sync(source: str, target: str = ".", force: bool = False, log=print) -> SyncResult:
    """Copy the student's own code of earlier assignments from ``source`` into ``target``.

    For each region of an assignment *before* the target's (the target holds the
    reference solution there), the region of ``source`` is copied only when the
    student changed it: its body differs from what the source release shipped
    (``classroom.json`` keeps a fingerprint of every region as shipped). A stub
    is never copied, so an unsolved task keeps the reference solution. When
    the student changed the target's region too (and differently), the region
    is a *conflict*: reported and left alone, unless ``force``.
    """
    target_manifest = load_student_manifest(target)
    source_manifest = load_student_manifest(source)
    order = target_manifest["order"]
    earlier = set(order[: order.index(target_manifest["assignment"])])
    shipped_source = source_manifest.get("regions")  # None: a release built before fingerprints
    shipped_target = target_manifest.get("regions", {})
    result = SyncResult()
    for path in region_files(target):
        mine = os.path.join(source, path)
        if not os.path.isfile(mine):
            continue
        with open(os.path.join(target, path), encoding="utf-8") as file:
            text = file.read()
        with open(mine, encoding="utf-8") as file:
            old = file.read()
        try:
            here = region_bodies(text, path)
            theirs = region_bodies(old, path)
        except MarkerError as error:
            log(f"skipped {path}: {error}")
            continue
        wanted = {}
        for (tag, k), body in here.items():
            if tag.split("/", 1)[0] not in earlier or (tag, k) not in theirs:
                continue
            name = f"{path}: {tag}" + (f" (region {k + 1})" if k else "")
            key = f"{tag}#{k}"
            incoming = theirs[(tag, k)]
            given_here = shipped_target.get(path, {}).get(key)
            if shipped_source is not None:
                given_there = shipped_source.get(path, {}).get(key)
            else:  # an older release: its solved regions are the reference, as here
                given_there = given_here
            if (
                is_stub(incoming)
                or body_digest(incoming) == given_there
                or body_digest(incoming) == body_digest(body)
            ):
                result.unchanged.append(name)  # not the student's work, or already here
                continue
            if body_digest(body) != given_here and not force:
                result.conflicts.append(name)
                continue
            wanted[(tag, k)] = incoming
            result.copied.append(name)
        if wanted:
            with open(os.path.join(target, path), "w", encoding="utf-8") as file:
                file.write(replace_regions(text, path, wanted))
            log(f"{path}: {len(wanted)} region(s) of yours copied")
    for name in result.conflicts:
        log(
            f"CONFLICT {name}: you changed it in both repositories; kept this one "
            "(sync --force takes the one from --from)"
        )
    log(
        f"sync: {len(result.copied)} region(s) copied from {source}, "
        f"{len(result.conflicts)} conflict(s), {len(result.unchanged)} left as they were"
    )
    return result
