"""The backends a workload runs on, and moving arrays in and out of them.

A backend is a library plus a *kind* that says which of a workload's builders
to use: ``"glasstorch"`` (the tier loaded in this process), ``"numpy"`` or
``"torch"``. Every backend receives the same NumPy input arrays; tensors are
made from them without copying where the library allows it, so all backends
work on identical numbers.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np

#: The kinds of backend a workload knows how to build for.
KINDS = ("glasstorch", "numpy", "torch")


@dataclass(frozen=True)
class Backend:
    """One library to run workloads on.

    Attributes:
        name: the column name in the table and key in the JSON file: the tier's
            name (``"reference"`` or ``"fast"``), ``"numpy"`` or ``"torch"``.
        kind: which builder a workload uses for it (one of :data:`KINDS`).
        module: the imported library (``glasstorch``, ``numpy`` or ``torch``).
    """

    name: str
    kind: str
    module: ModuleType

    def tensor(self, array: np.ndarray):
        """The backend's tensor for ``array`` (shared memory where possible)."""
        if self.kind == "numpy":
            return array
        return self.module.from_numpy(array)

    def parameter(self, array: np.ndarray):
        """A trainable leaf tensor holding a private copy of ``array``."""
        if self.kind == "numpy":
            return array.copy()
        return self.module.nn.Parameter(self.module.from_numpy(array.copy()))


def glasstorch_backend(threads: int | None = None) -> Backend:
    """The glasstorch tier loaded in this process, named after the tier, using
    ``threads`` threads (``None``: the tier's default, all cores)."""
    import glasstorch

    if threads is not None:
        glasstorch.set_num_threads(threads)
    return Backend(name=glasstorch.tier, kind="glasstorch", module=glasstorch)


def numpy_backend() -> Backend:
    """NumPy, the oracle every result is checked against."""
    return Backend(name="numpy", kind="numpy", module=np)


def torch_backend(threads: int) -> Backend | None:
    """PyTorch on the CPU with ``threads`` threads, or ``None`` if not installed."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return Backend(name="torch", kind="torch", module=torch)


def as_numpy(result) -> list[np.ndarray]:
    """A workload's result as a list of NumPy arrays (copies), for the correctness check.

    A result is one tensor, array or number, or a tuple of them (the MLP step
    returns its loss and its updated parameters).
    """
    items = result if isinstance(result, (tuple, list)) else (result,)
    arrays = []
    for item in items:
        if hasattr(item, "detach"):  # a glasstorch or torch tensor
            item = item.detach().numpy()
        arrays.append(np.array(item, copy=True))
    return arrays
