"""``python -m glasstorch.classroom build|grade|check|sync``."""

from __future__ import annotations

import argparse
import os
import sys
import time


def _repo_root() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m glasstorch.classroom", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="build the student releases and autograders")
    build.add_argument(
        "--course", help="the course file (default: glasstorch/classroom/course.toml)"
    )
    build.add_argument("--root", default=None, help="the repository (default: this one)")
    build.add_argument("--out", default=None, help="output folder (default: <root>/dist/classroom)")
    build.add_argument("--only", action="append", help="build only this assignment (repeatable)")

    grade = commands.add_parser("grade", help="grade a submission; write results.json")
    grade.add_argument("--assignment", required=True)
    grade.add_argument("--submission", required=True, help="the student's repository")
    grade.add_argument("--out", required=True, help="where results.json goes")
    grade.add_argument(
        "--autograder",
        default=None,
        help="the autograder's source/ folder (default: the current folder inside an "
        "autograder, else dist/classroom/<assignment>/autograder/source)",
    )

    check = commands.add_parser("check", help="run this assignment's visible tests")
    check.add_argument("--repo", default=".")
    check.add_argument("--task", action="append", help="only this task (repeatable)")
    check.add_argument("--no-progress", action="store_true")

    sync = commands.add_parser("sync", help="copy your earlier assignments' code into this release")
    sync.add_argument("--from", dest="source", required=True, help="your earlier repository")
    sync.add_argument("--to", dest="target", default=".", help="this release (default: .)")

    args = parser.parse_args(argv)
    if args.command == "build":
        from .course import DEFAULT_COURSE, load_course
        from .release import BuildError
        from .release import build as run_build

        root = os.path.realpath(args.root or _repo_root())
        out = args.out or os.path.join(root, "dist", "classroom")
        course = load_course(args.course or DEFAULT_COURSE)
        start = time.monotonic()
        try:
            reports = run_build(course, root, out, only=args.only)
        except BuildError as error:
            print(f"\nBUILD FAILED\n{error}", file=sys.stderr)
            return 1
        print(
            f"\nbuilt {len(reports)} assignment(s) into {out} in {time.monotonic() - start:.0f} s"
        )
        return 0
    if args.command == "grade":
        from .grade import grade as run_grade

        source = args.autograder
        if source is None:
            if os.path.isfile(os.path.join(".classroom", "manifest.json")):
                source = "."
            else:
                source = os.path.join(
                    _repo_root(), "dist", "classroom", args.assignment, "autograder", "source"
                )
        results = run_grade(source, args.submission, args.out, assignment=args.assignment)
        print(
            f"score {results['score']:g} / {results['max_score']:g} ({results['execution_time']} s)"
        )
        return 0
    if args.command == "check":
        from .check import check as run_check

        return 1 if run_check(args.repo, args.task, progress=not args.no_progress) else 0
    if args.command == "sync":
        from .check import sync as run_sync

        run_sync(args.source, args.target)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
