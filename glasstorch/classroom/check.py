"""``check`` and ``sync``: the two commands a student runs in their repository."""

from __future__ import annotations

import json
import os
import tempfile

from .grading import local_nodeid, make_package, make_tests_dir, run_tests
from .markers import MarkerError, find_regions, region_bodies, replace_regions
from .release import is_region_file, repository_files


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


def sync(source: str, target: str = ".", log=print) -> int:
    """Copy the student's own regions of earlier assignments from ``source`` into ``target``.

    Only regions of assignments *before* the target's assignment are copied
    (those the target holds as the reference solution); its own and later
    stubs are left alone. Returns the number of regions copied.
    """
    manifest = load_student_manifest(target)
    order = manifest["order"]
    earlier = set(order[: order.index(manifest["assignment"])])
    copied = 0
    for path in repository_files(target):
        if not is_region_file(path):
            continue
        mine = os.path.join(source, path)
        if not os.path.isfile(mine):
            continue
        with open(os.path.join(target, path), encoding="utf-8") as file:
            text = file.read()
        with open(mine, encoding="utf-8") as file:
            old = file.read()
        try:
            regions = find_regions(text, path)
            bodies = region_bodies(old, path)
        except MarkerError as error:
            log(f"skipped {path}: {error}")
            continue
        wanted, ordinal = {}, {}
        for region in regions:
            k = ordinal.get(region.tag, 0)
            ordinal[region.tag] = k + 1
            if region.assignment in earlier and (region.tag, k) in bodies:
                wanted[(region.tag, k)] = bodies[(region.tag, k)]
        if wanted:
            with open(os.path.join(target, path), "w", encoding="utf-8") as file:
                file.write(replace_regions(text, path, wanted))
            copied += len(wanted)
            log(f"{path}: {len(wanted)} region(s) of yours copied")
    log(f"sync: {copied} region(s) copied from {source}")
    return copied
