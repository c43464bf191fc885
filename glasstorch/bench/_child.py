"""Run the harness for one backend in a fresh interpreter (``--other-tier``,
``--isolate``, ``--interleave``).

Usage: ``python _child.py RESULT.json [harness options...]`` with
``GLASSTORCH_TIER`` set, or ``python _child.py --serve [harness options...]``
to answer timing requests instead (``--interleave``; see ``runner.Child``).
The file is run by path, not as ``glasstorch.bench``, because importing anything inside glasstorch imports glasstorch itself, which
loads the tier, and that is exactly what may fail: a tier that is not built,
or not finished. Here that failure is caught and written to RESULT.json as
``{"unavailable": "<why>"}``, so the parent can say so in its table.
"""

import json
import sys

# Python put this folder first on sys.path; take it off, so that the modules
# here are only ever imported as parts of the glasstorch package.
sys.path.pop(0)


def main() -> int:
    if sys.argv[1] == "--serve":
        return serve(sys.argv[2:])
    result_path, options = sys.argv[1], sys.argv[2:]
    try:
        import glasstorch  # noqa: F401  (loads the tier named by GLASSTORCH_TIER)
    except Exception as error:
        with open(result_path, "w", encoding="utf-8") as file:
            json.dump({"unavailable": f"{type(error).__name__}: {error}"}, file)
        return 0

    from glasstorch.bench.__main__ import main as bench_main

    return bench_main([*options, "--json", result_path])


def serve(options: list[str]) -> int:
    """``--serve``: answer timing requests on stdin (see ``runner.serve``).

    The answers go to the real stdout; anything else printed here (a library's
    message, a warning) is sent to stderr, so that it cannot garble them.
    """
    import os

    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        import glasstorch  # noqa: F401
    except Exception as error:  # the tier cannot load: every workload is unavailable
        reason = f"{type(error).__name__}: {error}"
        for line in sys.stdin:
            command = json.loads(line)["cmd"]
            answer = {"status": "unavailable", "reason": reason} if command == "prepare" else {}
            answers.write(json.dumps(answer) + "\n")
            if command == "quit":
                break
        return 0

    from glasstorch.bench.__main__ import parser, settings_from
    from glasstorch.bench.runner import serve as serve_requests

    return serve_requests(settings_from(parser().parse_args(options)), sys.stdin, answers)


if __name__ == "__main__":
    sys.exit(main())
