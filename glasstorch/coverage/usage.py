"""Which PyTorch names a corpus of programs uses, counted program by program.

The coverage page ranks what is missing by use: a name used by many public
programs matters more than one none of them uses. ``python -m
glasstorch.coverage usage FOLDER`` reads every ``*.py`` file under ``FOLDER``
(one subfolder per program, or one file per program), finds the PyTorch names
each program reaches and writes, for each name, the number of programs that use
it. Only those counts and the list of sources are kept in the repository
(``data/usage_counts.json``), never the programs themselves.

A name is found by following the program's imports: after ``import
torch.nn.functional as F``, ``F.relu`` is ``torch.nn.functional.relu``; after
``from torch.utils.data import DataLoader``, ``DataLoader`` is
``torch.utils.data.DataLoader``. A method or attribute of a tensor cannot be
told apart from one of any other object without running the program, so
``x.view(...)`` counts as ``torch.Tensor.view`` whenever ``view`` is a name of
``torch.Tensor`` and ``x`` is not an imported name: the Tensor counts are an
upper bound.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from glasstorch.coverage.namespaces import NAMESPACES


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``['a', 'b', 'c']``; ``None`` when the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _imports(tree: ast.AST) -> dict[str, str]:
    """The program's local names bound to PyTorch: ``{'F': 'torch.nn.functional', ...}``."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "torch":
                    continue
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "torch":
                continue
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def split_name(full: str, namespaces: Iterable[str] = NAMESPACES) -> tuple[str, str] | None:
    """``'torch.nn.functional.relu'`` as ``('torch.nn.functional', 'relu')``, by the longest namespace.

    ``None`` for a name in none of the namespaces, or for a namespace itself.
    """
    best = None
    for namespace in namespaces:
        if full.startswith(namespace + ".") and (best is None or len(namespace) > len(best)):
            best = namespace
    if best is None:
        return None
    return best, full[len(best) + 1 :].split(".")[0]


def names_used(source: str, tensor_names: set[str]) -> set[str]:
    """The full PyTorch names (``'torch.nn.Linear'``, ``'torch.Tensor.view'``) in one program's source."""
    tree = ast.parse(source)
    aliases = _imports(tree)
    found = set()
    for target in aliases.values():  # `from torch.optim import Adam` uses torch.optim.Adam
        if split_name(target):
            found.add(target)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts = _dotted(node)
        if parts and parts[0] in aliases:
            full = ".".join([aliases[parts[0]], *parts[1:]])
            place = split_name(full)
            if place:
                found.add(".".join(place))
        elif node.attr in tensor_names:
            found.add(f"torch.Tensor.{node.attr}")
    return found


def programs_in(folder: Path) -> dict[str, list[Path]]:
    """The programs under ``folder``: each subfolder is one program, each top-level file another."""
    programs = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            files = sorted(entry.rglob("*.py"))
            if files:
                programs[entry.name] = files
        elif entry.suffix == ".py":
            programs[entry.stem] = [entry]
    return programs


def count_usage(programs: dict[str, list[Path]], tensor_names: set[str]) -> dict[str, int]:
    """For each full name, the number of programs that use it (a program counts once)."""
    counts: Counter[str] = Counter()
    for files in programs.values():
        used = set()
        for path in files:
            used |= names_used(path.read_text(), tensor_names)
        counts.update(used)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
