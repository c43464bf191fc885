"""How an operation is named in a profile: ``aten::add`` for the class ``Add``.

PyTorch's profiler names each operator after its ATen function (``aten::add``,
``aten::mm``, ``aten::conv2d``). glasstorch has no ATen, but every operation is
a :class:`~glasstorch.autograd.Function` subclass named after what it computes,
so the name is derived from the class name:

1. a trailing ``Function`` is dropped (``Conv2dFunction`` is ``conv2d``);
2. CamelCase becomes snake_case (``MaxPool2d`` is ``max_pool2d``,
   ``IndexSelect`` is ``index_select``, ``Log1P`` is ``log1p``);
3. ``aten::`` is put in front, for glasstorch's own operations only.

A few classes are named for how glasstorch computes them rather than for the
PyTorch function (``MaxDim`` is PyTorch's ``max`` with a ``dim``): the table
:data:`PYTORCH_NAMES` maps those. A user's own ``autograd.Function`` keeps its
class name, as in PyTorch (``MyOp``).
"""

from __future__ import annotations

import re

#: Class names whose PyTorch operator name is not their snake_case.
PYTORCH_NAMES = {
    "AMax": "amax",
    "MaxDim": "max",
    "ToCopy": "_to_copy",
    "PowTensor": "pow",
    "RPow": "pow",
    "LogSumExp": "logsumexp",
    "ContiguousClone": "clone",
    "CrossEntropyIndices": "cross_entropy_loss",
    "LSTMLayer": "lstm",
    "VectorNorm": "linalg_vector_norm",
    "IndexPutAdvanced": "index_put_",
    "IndexPut": "index_put_",
    "Copy": "copy_",
    "Fill": "fill_",
    "CopySlices": "copy_",
}

# A word starts at an upper-case letter that follows a lower-case one
# ("MaxPool" -> "Max", "Pool"), or that begins a capitalized word after an
# acronym ("LSTMLayer" -> "LSTM", "Layer"). A digit never starts a word.
_WORD_START = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

_cache: dict[type, str] = {}


def snake_case(name: str) -> str:
    """``"MaxPool2d"`` -> ``"max_pool2d"``."""
    return _WORD_START.sub("_", name).lower()


def operation_name(cls: type) -> str:
    """The profiler's name for calls of the ``autograd.Function`` subclass ``cls``."""
    name = _cache.get(cls)
    if name is None:
        name = _cache[cls] = _derive(cls)
    return name


def _derive(cls: type) -> str:
    if not cls.__module__.startswith("glasstorch."):
        return cls.__name__  # a user's Function: its own name
    base = cls.__name__
    if base in PYTORCH_NAMES:
        return "aten::" + PYTORCH_NAMES[base]
    if base.endswith("Function") and base != "Function":
        base = base[: -len("Function")]
    return "aten::" + snake_case(base.lstrip("_"))
