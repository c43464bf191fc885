"""python -m glasstorch.classroom build|grade|check|sync

Teachers: build makes the student releases and the Gradescope autograders of
the course (make assignments); grade scores one submission the way the
autograder does. Students: check runs the visible tests of the assignment in
this repository, task by task; sync brings your code of earlier assignments
into the release of a new one. Guides: docs/guide/classroom-teachers.md and
docs/guide/classroom-students.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _repo_root() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def _parser() -> argparse.ArgumentParser:
    plain = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.classroom",
        description=__doc__.split("\n", 2)[2],
        formatter_class=plain,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = commands.add_parser(
        "build", help="build the student releases and autograders", formatter_class=plain
    )
    build.add_argument(
        "--course", help="the course file (default: glasstorch/classroom/course.toml)"
    )
    build.add_argument("--root", default=None, help="the repository (default: this one)")
    build.add_argument("--out", default=None, help="output folder (default: <root>/dist/classroom)")
    build.add_argument("--only", action="append", help="build only this assignment (repeatable)")

    grade = commands.add_parser(
        "grade", help="grade a submission; write results.json", formatter_class=plain
    )
    grade.add_argument("--assignment", required=True)
    grade.add_argument("--submission", required=True, help="the student's repository")
    grade.add_argument("--out", required=True, help="where results.json goes")
    grade.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds for the whole grading (default 600); tests that cannot start "
        "within it fail, unrun",
    )
    grade.add_argument(
        "--autograder",
        default=None,
        help="the autograder's folder, the zip's root (default: the current folder inside "
        "an autograder, else dist/classroom/<assignment>/autograder)",
    )

    check = commands.add_parser(
        "check", help="run this assignment's visible tests", formatter_class=plain
    )
    check.add_argument("--repo", default=".")
    check.add_argument("--task", action="append", help="only this task (repeatable)")
    check.add_argument("--no-progress", action="store_true", help="no progress bar")

    sync = commands.add_parser(
        "sync",
        help="copy your code of earlier assignments into this release",
        description="Copies the regions of earlier assignments that you changed in your "
        "earlier repository; never a stub, never over code you changed here (a conflict, "
        "reported) unless --force.",
        formatter_class=plain,
    )
    sync.add_argument("--from", dest="source", required=True, help="your earlier repository")
    sync.add_argument("--to", dest="target", default=".", help="this release (default: .)")
    sync.add_argument(
        "--force", action="store_true", help="overwrite regions you changed here too (conflicts)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "build":
        from .course import DEFAULT_COURSE, CourseError, load_course
        from .release import BuildError
        from .release import build as run_build

        root = os.path.realpath(args.root or _repo_root())
        out = args.out or os.path.join(root, "dist", "classroom")
        start = time.monotonic()
        try:
            course = load_course(args.course or DEFAULT_COURSE)
            reports = run_build(course, root, out, only=args.only)
        except (BuildError, CourseError) as error:
            print(f"\nBUILD FAILED\n{error}", file=sys.stderr)
            return 1
        print(
            f"\nbuilt {len(reports)} assignment(s) into {out} in {time.monotonic() - start:.0f} s"
        )
        return 0
    if args.command == "grade":
        return _grade(args)
    if args.command == "check":
        from .check import CheckError
        from .check import check as run_check

        try:
            return 1 if run_check(args.repo, args.task, progress=not args.no_progress) else 0
        except (CheckError, FileNotFoundError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if args.command == "sync":
        from .check import CheckError
        from .check import sync as run_sync

        try:
            result = run_sync(args.source, args.target, force=args.force)
        except (CheckError, FileNotFoundError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        return 1 if result.conflicts and not args.force else 0
    return 2


def _grade(args) -> int:
    from .grade import grade as run_grade

    source = args.autograder
    if source is None:
        if os.path.isfile(os.path.join(".classroom", "manifest.json")):
            source = "."
        else:
            source = os.path.join(_repo_root(), "dist", "classroom", args.assignment, "autograder")
    try:
        results = run_grade(
            source, args.submission, args.out, assignment=args.assignment, budget=args.budget
        )
    except Exception as error:
        # Gradescope shows results.json only: say there that the grader failed (not the student).
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as file:
            message = f"The autograder failed ({type(error).__name__}: {error}); tell your teacher."
            json.dump({"score": 0, "output": message, "tests": []}, file, indent=1)
        raise
    print(f"score {results['score']:g} / {results['max_score']:g} ({results['execution_time']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
