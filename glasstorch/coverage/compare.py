"""glasstorch against PyTorch's snapshot, name by name and argument by argument.

Each of PyTorch's names gets one status:

* **supported**: glasstorch has the name and accepts every argument PyTorch
  names (or PyTorch's arguments are not known: then the row says so);
* **partial**: glasstorch has the name but not some of its arguments, listed;
* **missing**: glasstorch does not have it;
* **out of scope**: glasstorch leaves it out on purpose (:mod:`.scope`, with
  the reason).

glasstorch is read live, so the table follows the code; PyTorch's side comes
from the snapshot (:mod:`.snapshot`), so no PyTorch is needed.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from glasstorch.coverage.namespaces import format_parameters, kind_of, parameters, parse, resolve
from glasstorch.coverage.scope import out_of_scope_reason

#: What :func:`_glasstorch_member` answers for a name glasstorch does not have.
ABSENT = object()

#: The statuses, in the order the page shows them.
STATUSES = ("supported", "partial", "missing", "out of scope")


@dataclass
class Row:
    """One of PyTorch's names and what glasstorch makes of it."""

    namespace: str
    name: str
    kind: str
    status: str
    missing_arguments: list[str] = field(default_factory=list)
    note: str = ""  # the out-of-scope reason, or why the arguments were not compared
    uses: int = 0  # programs of the corpus that use the name


def _glasstorch_member(space: object, namespace: str, name: str) -> object:
    """``space.name`` in glasstorch, or :data:`ABSENT`; a Tensor's members are read from a tensor."""
    if namespace == "torch.Tensor":
        import glasstorch

        try:
            return getattr(glasstorch.zeros(1), name)
        except AttributeError:
            return ABSENT
        except Exception:  # a property that needs another kind of tensor: it exists
            return inspect.getattr_static(space, name)
    return getattr(space, name, ABSENT)


def our_parameters(obj: object, name: str) -> str | None:
    """glasstorch's parameter line for ``obj``, with what its wrappers add.

    ``inspect.signature`` follows ``functools.wraps`` to the innermost function,
    which hides what a wrapper takes itself: :func:`glasstorch.ops.out.accepts_out`
    adds ``out=`` to a function that does not name it. Each wrapper's own
    named parameters are added here as keyword arguments.
    """
    line, _ = parameters(obj, name)
    if line is None:
        return None
    params = parse(line)
    layer = obj
    while hasattr(layer, "__wrapped__"):
        try:
            outer = inspect.signature(layer, follow_wrapped=False)
        except (TypeError, ValueError):
            break
        known = {name for name, _ in params}
        for param in outer.parameters.values():
            plain = param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)
            if plain and param.name not in known:
                params.append((param.name, "KEYWORD_ONLY"))
        layer = layer.__wrapped__
    return format_parameters(params)


def missing_arguments(theirs: str, ours: str, keyword_only: bool = False) -> list[str]:
    """PyTorch's argument names (``theirs``) that glasstorch's parameters (``ours``) do not take.

    With ``keyword_only``, only PyTorch's keyword-only arguments are compared:
    the names a docstring gives its positional arguments are often not the
    ones the function takes (``Tensor.mul(value)`` takes ``other=``).
    Positional-only and ``*args``/``**kwargs`` names are never passed by name,
    so they do not count; glasstorch's ``**kwargs`` takes every name, and its
    ``*args`` takes every argument PyTorch lets a caller pass by position.
    """
    our_params = parse(ours)
    our_kinds = {kind for _, kind in our_params}
    if "VAR_KEYWORD" in our_kinds:
        return []
    our_names = {name for name, _ in our_params}
    missing = []
    for name, kind in parse(theirs):
        if kind in ("POSITIONAL_ONLY", "VAR_POSITIONAL", "VAR_KEYWORD") or name in our_names:
            continue
        if (keyword_only and kind != "KEYWORD_ONLY") or name.startswith("_"):
            continue  # a leading underscore: PyTorch's own switch, not part of its API
        if kind == "POSITIONAL_OR_KEYWORD" and "VAR_POSITIONAL" in our_kinds:
            continue
        missing.append(name)
    return missing


def compare_namespace(namespace: str, entries: dict, counts: dict[str, int]) -> list[Row]:
    """The rows of one namespace: ``entries`` is its part of the snapshot."""
    space = resolve(namespace, "glasstorch")
    rows = []
    for name, entry in entries.items():
        row = Row(
            namespace, name, entry["kind"], "missing", uses=counts.get(f"{namespace}.{name}", 0)
        )
        ours = ABSENT if space is None else _glasstorch_member(space, namespace, name)
        if ours is ABSENT:
            reason = out_of_scope_reason(namespace, name)
            if reason:
                row.status, row.note = "out of scope", reason
            rows.append(row)
            continue
        row.status = "supported"
        if kind_of(ours) in ("class", "function"):
            our_params = our_parameters(ours, name)
            if entry["params"] is None:
                row.note = "arguments not compared: PyTorch's are not known"
            elif our_params is None:
                row.note = "arguments not compared: glasstorch's are not known"
            else:
                from_docstring = entry["params_from"] == "docstring"
                row.missing_arguments = missing_arguments(
                    entry["params"], our_params, keyword_only=from_docstring
                )
                if row.missing_arguments:
                    row.status = "partial"
        rows.append(row)
    return rows


def compare(snapshot: dict, counts: dict[str, int]) -> dict[str, list[Row]]:
    """Every namespace of the snapshot, compared; ``counts`` maps full names to uses."""
    return {
        namespace: compare_namespace(namespace, entries, counts)
        for namespace, entries in snapshot["namespaces"].items()
    }


def tally(rows: list[Row]) -> dict[str, int]:
    """How many rows have each status."""
    return {status: sum(row.status == status for row in rows) for status in STATUSES}


def flagged(table: dict[str, list[Row]], threshold: int = 1) -> list[Row]:
    """Missing names used by more than ``threshold`` programs, most used first."""
    rows = [row for rows in table.values() for row in rows if row.status == "missing"]
    return sorted(
        (row for row in rows if row.uses > threshold), key=lambda r: (-r.uses, r.namespace, r.name)
    )
