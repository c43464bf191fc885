"""``python -m glasstorch.coverage``: the API coverage table's command line.

Examples::

    python -m glasstorch.coverage snapshot            # read PyTorch (installed) into the data file
    python -m glasstorch.coverage usage CORPUS SOURCES.json  # recount the corpus's names
    python -m glasstorch.coverage page docs/api/coverage.md  # write the page (no PyTorch needed)
    python -m glasstorch.coverage summary             # the counts per namespace
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from glasstorch.coverage.compare import STATUSES, compare, tally
from glasstorch.coverage.page import USAGE, load_usage, write_page
from glasstorch.coverage.snapshot import load_snapshot, write_snapshot
from glasstorch.coverage.usage import count_usage, programs_in


def main(argv: list[str] | None = None) -> None:
    """Run one of the subcommands."""
    p = argparse.ArgumentParser(prog="python -m glasstorch.coverage", description=__doc__)
    commands = p.add_subparsers(dest="command", required=True)
    commands.add_parser("snapshot", help="read PyTorch's names into data/pytorch_api.json")
    usage = commands.add_parser("usage", help="count the names a corpus of programs uses")
    usage.add_argument("corpus", type=Path, help="a folder: one subfolder (or file) per program")
    usage.add_argument(
        "sources", type=Path, help="JSON list of {name, files: [{repo, path, commit}]}"
    )
    page = commands.add_parser("page", help="write the coverage page")
    page.add_argument("path", type=Path)
    commands.add_parser("summary", help="print the counts per namespace")
    args = p.parse_args(argv)

    if args.command == "snapshot":
        data = write_snapshot()
        print(
            f"PyTorch {data['torch_version']}: {sum(map(len, data['namespaces'].values()))} names"
        )
    elif args.command == "usage":
        tensor_names = set(load_snapshot()["namespaces"]["torch.Tensor"])
        counts = count_usage(programs_in(args.corpus), tensor_names)
        sources = json.loads(args.sources.read_text())
        USAGE.write_text(json.dumps({"programs": sources, "counts": counts}, indent=1) + "\n")
        print(f"{len(sources)} programs, {len(counts)} names")
    elif args.command == "page":
        write_page(args.path)
    else:
        table = compare(load_snapshot(), load_usage()["counts"])
        print("namespace".ljust(28) + "".join(s.rjust(14) for s in STATUSES))
        for namespace, rows in table.items():
            counts = tally(rows)
            print(namespace.ljust(28) + "".join(str(counts[s]).rjust(14) for s in STATUSES))


if __name__ == "__main__":
    main()
