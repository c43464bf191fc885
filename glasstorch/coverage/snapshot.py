"""PyTorch's side of the coverage table, read once and kept in a data file.

The docs build must run without PyTorch, so PyTorch's names are read here, where
it is installed, by ``python -m glasstorch.coverage snapshot``, and written to
``data/pytorch_api.json``: the PyTorch version, and for every namespace of
:data:`~glasstorch.coverage.namespaces.NAMESPACES` each public name's kind and
parameters. Rerun it when the PyTorch that glasstorch targets changes.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from glasstorch.coverage.namespaces import NAMESPACES, kind_of, parameters, public_names, resolve

#: Where the snapshot is kept.
SNAPSHOT = Path(__file__).resolve().parent / "data" / "pytorch_api.json"


def read_pytorch() -> dict:
    """PyTorch's namespaces, name by name: ``{"torch_version", "namespaces": {ns: {name: entry}}}``.

    An entry is ``{"kind": ..., "params": line or None, "params_from": ...}``
    (see :func:`~glasstorch.coverage.namespaces.parameters`).
    """
    torch = importlib.import_module("torch")
    namespaces = {}
    for namespace in NAMESPACES:
        obj = resolve(namespace, "torch")
        entries = {}
        for name in public_names(namespace, obj):
            value = getattr(obj, name)
            params, source = parameters(value, name)
            entries[name] = {"kind": kind_of(value), "params": params, "params_from": source}
        namespaces[namespace] = entries
    return {"torch_version": torch.__version__.split("+")[0], "namespaces": namespaces}


def write_snapshot(path: Path = SNAPSHOT) -> dict:
    """Read PyTorch and write the snapshot to ``path``, one name per line; return it."""
    data = read_pytorch()
    lines = ["{", f'"torch_version": {json.dumps(data["torch_version"])},', '"namespaces": {']
    spaces = list(data["namespaces"].items())
    for index, (namespace, entries) in enumerate(spaces):
        lines.append(f"{json.dumps(namespace)}: {{")
        items = list(entries.items())
        for number, (name, entry) in enumerate(items):
            comma = "," if number < len(items) - 1 else ""
            lines.append(f"  {json.dumps(name)}: {json.dumps(entry, sort_keys=True)}{comma}")
        lines.append("}" + ("," if index < len(spaces) - 1 else ""))
    lines += ["}", "}"]
    path.write_text("\n".join(lines) + "\n")
    return data


def load_snapshot(path: Path = SNAPSHOT) -> dict:
    """The snapshot written by :func:`write_snapshot` (no PyTorch needed)."""
    return json.loads(path.read_text())
