"""The coverage page of the docs (``docs/api/coverage.md``), written on every docs build.

``docs/conf.py`` calls :func:`write_page`; ``python -m glasstorch.coverage page``
does the same by hand. The page is MyST markdown: a summary, the missing names
that more than one program of the corpus uses, then one section per namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

from glasstorch.coverage.compare import STATUSES, Row, compare, flagged, tally
from glasstorch.coverage.snapshot import SNAPSHOT, load_snapshot

#: The corpus counts: ``{"programs": [...sources...], "counts": {full name: programs}}``.
USAGE = Path(__file__).resolve().parent / "data" / "usage_counts.json"


def load_usage(path: Path = USAGE) -> dict:
    """The corpus counts and sources (:mod:`.usage` explains how they were made)."""
    return json.loads(path.read_text())


def _names(rows: list[Row]) -> str:
    """Names as inline code, the used ones with their count of programs."""
    return ", ".join(f"`{r.name}`" + (f" ({r.uses})" if r.uses else "") for r in rows) or "none"


def _by_use(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (-r.uses, r.name))


def _section(namespace: str, rows: list[Row]) -> list[str]:
    counts = tally(rows)
    lines = [f"## `{namespace}`", ""]
    lines.append(", ".join(f"{counts[s]} {s}" for s in STATUSES) + f", of {len(rows)} names.")
    lines.append("")
    picked = {status: _by_use([r for r in rows if r.status == status]) for status in STATUSES}
    if picked["missing"]:
        lines += ["**Missing**, most used first (programs using each in brackets):", ""]
        lines += [_names(picked["missing"]), ""]
    if picked["partial"]:
        lines += [
            "**Partial**:",
            "",
            "| name | programs | arguments not taken |",
            "| --- | --- | --- |",
        ]
        for r in picked["partial"]:
            missing = ", ".join(f"`{a}`" for a in r.missing_arguments)
            lines.append(f"| `{r.name}` | {r.uses} | {missing} |")
        lines.append("")
    if picked["out of scope"]:
        lines += ["**Out of scope**:", "", "| reason | names |", "| --- | --- |"]
        reasons: dict[str, list[Row]] = {}
        for r in picked["out of scope"]:
            reasons.setdefault(r.note, []).append(r)
        for reason, group in sorted(reasons.items()):
            lines.append(f"| {reason} | {_names(group)} |")
        lines.append("")
    if picked["supported"]:
        lines += ["**Supported**:", "", _names(picked["supported"]), ""]
        unchecked = [r for r in picked["supported"] if r.note]
        if unchecked:
            lines += ["Arguments not compared (no signature known on one side): "]
            lines += [_names(unchecked), ""]
    return lines


def render(snapshot: dict, usage: dict) -> str:
    """The page's text, from PyTorch's snapshot, the corpus counts and glasstorch as imported."""
    table = compare(snapshot, usage["counts"])
    lines = [
        "# API coverage",
        "",
        "<!-- Written by glasstorch/coverage/page.py on every docs build: do not edit. -->",
        "",
        f"This page compares glasstorch with PyTorch {snapshot['torch_version']} name by name "
        "and argument by argument. PyTorch's side was read once, where PyTorch was installed "
        "(`python -m glasstorch.coverage snapshot`, kept in "
        "`glasstorch/coverage/data/pytorch_api.json`); glasstorch's side is read from the code "
        "on every docs build, so the page follows the code.",
        "",
        "A name is **supported** when glasstorch has it and accepts every argument PyTorch "
        "names, **partial** when some arguments are not taken (listed), **missing** when "
        "glasstorch lacks it, and **out of scope** when it is left out on purpose, with the "
        "reason (`glasstorch/coverage/scope.py`). Arguments come from `inspect.signature`; "
        "PyTorch's functions written in C have none, so their docstrings' signature lines are "
        "read instead, and from those only the keyword-only arguments are compared (a "
        "docstring's names for positional arguments are not always the ones the function "
        "takes).",
        "",
        f"Use is counted in a corpus of {len(usage['programs'])} public programs (the PyTorch "
        "tutorials, pytorch/examples, minGPT and nanoGPT, course code; the sources are listed "
        "at the end): a name's count is the number of programs that use it. Counts for "
        "`torch.Tensor` are an upper bound, since a method call on any object with a Tensor "
        "method's name counts.",
        "",
        "## Summary",
        "",
        "| namespace | supported | partial | missing | out of scope | names |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    totals = dict.fromkeys(STATUSES, 0)
    for namespace, rows in table.items():
        counts = tally(rows)
        for status in STATUSES:
            totals[status] += counts[status]
        cells = " | ".join(str(counts[s]) for s in STATUSES)
        lines.append(f"| `{namespace}` | {cells} | {len(rows)} |")
    total_cells = " | ".join(f"**{totals[s]}**" for s in STATUSES)
    lines += [f"| all | {total_cells} | **{sum(totals.values())}** |", ""]
    wanted = flagged(table)
    lines += ["## Missing and used by more than one program", ""]
    if wanted:
        lines += ["| name | programs |", "| --- | --- |"]
        lines += [f"| `{r.namespace}.{r.name}` | {r.uses} |" for r in wanted]
    else:
        lines.append("None: every name that two or more programs of the corpus use is here.")
    lines.append("")
    for namespace, rows in table.items():
        lines += _section(namespace, rows)
    lines += [
        "## The corpus",
        "",
        "| program | files (repository, path, commit) |",
        "| --- | --- |",
    ]
    for program in usage["programs"]:
        files = "; ".join(f"{f['repo']} `{f['path']}` {f['commit'][:10]}" for f in program["files"])
        lines.append(f"| {program['name']} | {files} |")
    return "\n".join(lines) + "\n"


def write_page(path: Path, snapshot_path: Path = SNAPSHOT, usage_path: Path = USAGE) -> str:
    """Write the page to ``path`` (only when its text changed, to spare Sphinx a rebuild)."""
    text = render(load_snapshot(snapshot_path), load_usage(usage_path))
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return text
