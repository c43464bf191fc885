"""Run a program written with ``import torch`` against glasstorch or PyTorch.

A program file is ordinary PyTorch code. :func:`load` executes its source as a fresh
module while ``sys.modules`` maps ``torch`` (and every ``torch.*`` submodule it imports)
to the library asked for, then puts ``sys.modules`` back, so the two libraries live side
by side in one process. The program's functions keep the names they imported.

Run one program by hand on glasstorch with ``python shared_tests/programs/loader.py NAME``.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))

#: The submodules the programs import, as PyTorch names them. One left out would be
#: found through its package's path and executed a second time as a new module.
SUBMODULES = (
    "nn",
    "nn.functional",
    "nn.init",
    "nn.utils",
    "nn.utils.rnn",
    "nn.parallel",
    "optim",
    "optim.lr_scheduler",
    "utils",
    "utils.data",
    "utils.data.distributed",
    "distributed",
    "autograd",
    "autograd.function",
    "serialization",
    "sparse",
    "linalg",
    "distributions",
    "cuda",
    "backends",
    "backends.mps",
)


def _modules_of(library: str) -> dict[str, types.ModuleType]:
    """The ``torch``-named modules of ``library`` (``'glasstorch'`` or ``'torch'``)."""
    mapping = {"torch": importlib.import_module(library)}
    for name in SUBMODULES:
        try:
            mapping["torch." + name] = importlib.import_module(f"{library}.{name}")
        except ImportError:  # a submodule the library lacks fails in the program, visibly
            pass
    return mapping


def load(name: str, library: str) -> types.ModuleType:
    """Execute ``programs/<name>.py`` with ``import torch`` meaning ``library``."""
    path = os.path.join(HERE, name + ".py")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    module = types.ModuleType(f"program_{name}_{library}")
    module.__file__ = path
    mapping = _modules_of(library)
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    saved = {key: sys.modules.get(key) for key in mapping}
    sys.modules.update(mapping)
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
    return module


if __name__ == "__main__":
    program = load(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "glasstorch")
    program.main()
