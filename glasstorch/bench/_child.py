"""Run the harness for one tier in a fresh interpreter (used by ``--other-tier``).

Usage: ``python _child.py RESULT.json [harness options...]`` with
``GLASSTORCH_TIER`` set. The file is run by path, not as ``glasstorch.bench``,
because importing anything inside glasstorch imports glasstorch itself, which
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
    result_path, options = sys.argv[1], sys.argv[2:]
    try:
        import glasstorch  # noqa: F401  (loads the tier named by GLASSTORCH_TIER)
    except Exception as error:
        with open(result_path, "w", encoding="utf-8") as file:
            json.dump({"unavailable": f"{type(error).__name__}: {error}"}, file)
        return 0

    from glasstorch.bench.__main__ import main as bench_main

    return bench_main([*options, "--json", result_path])


if __name__ == "__main__":
    sys.exit(main())
