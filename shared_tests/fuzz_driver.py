"""A differential fuzzer: random calls on glasstorch and on PyTorch, outcomes compared.

Each *case* is a short program: setup lines that build input tensors (random
shape, dtype and layout: contiguous, permuted, sliced or expanded) and one call
(an elementwise op, a reduction, a view, an indexing op, a creation function,
matmul, softmax, cat/stack/split, an in-place op or a backward pass), often with
bad arguments (negative sizes, out-of-range dims and indices, mismatched shapes,
wrong dtypes, huge sizes). The case is run with ``T`` bound to glasstorch and
then to PyTorch, and the two outcomes are classified:

==========================  ==================================================
``agree-value``             both returned equal values (shape, dtype, values
                            within float tolerance, NaN in the same places),
                            and in-place changes to the inputs agree too
``agree-error``             both raised, glasstorch the same built-in class
``mismatch-value``          both returned, with different results
``mismatch-error-type``     both raised, glasstorch another class
``glasstorch-error-only``   only glasstorch raised
``torch-error-only``        only PyTorch raised
``crash``                   the process died (a segfault, an abort)
``hang``                    the case ran longer than the per-case time limit
``wrong-device``            (``--device cuda``) a glasstorch result or gradient
                            came back on another device than the inputs'
==========================  ==================================================

Without PyTorch the cases still run: a case then counts as ``ok-value`` or
``ok-error`` unless glasstorch raised a class a user would not expect
(``unexpected-error``: anything outside RuntimeError, IndexError, ValueError,
TypeError, NotImplementedError), crashed, hung, or disagreed with NumPy on the
few ops NumPy computes simply (``mismatch-value``).

Every case is generated from ``(seed, index)`` alone, so any finding is
reproduced by its printed program or by ``--seed S --start I --calls 1``.
The calls run in *worker* processes (this file run with ``--worker``) under a
memory limit; the supervisor restarts a worker past a case that killed it or
ran too long, so a crash or a hang is one finding, not the end of the run.

With ``--device cuda`` the workers make glasstorch's tensors on the device
(``set_default_device``; the driver is ``GLASSTORCH_CUDA``'s, the simulator
unless it says otherwise), so the CUDA kernels meet the same cases; PyTorch's
side stays on the CPU.

Run it::

    python shared_tests/fuzz_driver.py --calls 10000 --seed 7 --tier fast
    python shared_tests/fuzz_driver.py --calls 1 --seed 7 --start 1234 --verbose
    python shared_tests/fuzz_driver.py --calls 500 --seed 7 --tier fast --device cuda
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import random
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

#: The outcome classes that are findings (everything else is agreement).
FINDINGS = (
    "mismatch-value",
    "mismatch-error-type",
    "glasstorch-error-only",
    "torch-error-only",
    "unexpected-error",
    "crash",
    "hang",
    "wrong-device",
)

#: The exception classes a glasstorch user may expect (PyTorch raises these too).
EXPECTED_ERRORS = (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError)

DTYPES = ("bool", "uint8", "int32", "int64", "float32", "float64")
FLOATS = ("float32", "float64")
INTEGERS = ("uint8", "int32", "int64")
#: Extreme floats: near float32's largest (3.4e38), squares past it, tiny, signed zeros.
EXTREMES = (3e38, -3e38, 1e30, -1e30, 1e-30, 0.0, -0.0)

#: Address-space limit of a worker, so that a huge allocation fails instead of swapping.
WORKER_MEMORY_BYTES = 6 << 30


# ------------------------------------------------------------------ the cases
@dataclass
class Case:
    """One generated program: ``setup`` builds inputs, ``call`` is the operation."""

    seed: int
    index: int
    op: str
    setup: list[str] = field(default_factory=list)
    call: str = ""
    #: "value": compare the result's values; "meta": only shape and dtype (random,
    #: empty); "backward": run the call, then compare the inputs' gradients.
    compare: str = "value"
    #: A NumPy expression over the inputs (as arrays) giving the expected result, or "".
    numpy: str = ""
    #: "float32": compare float64 results at float32's tolerance (a float32 input
    #: bounds the precision: PyTorch's vectorised float32 log differs in the last bit);
    #: "class": compare floats only by where they are finite (see :func:`same`).
    tolerance: str = ""
    inputs: list[str] = field(default_factory=list)

    def program(self) -> str:
        """The case as a program a user can paste (``T`` is glasstorch or torch)."""
        lines = [*self.setup]
        if self.compare == "backward":
            lines.append(f"{self.call}.sum().backward()")
            lines.append("[" + ", ".join(f"{v}.grad" for v in self.inputs) + "]")
        else:
            lines.append(self.call)
        return "\n".join(lines)

    def describe(self) -> str:
        return f"seed={self.seed} index={self.index} op={self.op}\n{self.program()}"


class Generator:
    """Random inputs and calls for one case (all randomness from one ``random.Random``)."""

    def __init__(self, seed: int, index: int):
        self.rng = random.Random(f"{seed}:{index}")
        self.case = Case(seed, index, "")
        #: True while making inputs of ordinary numbers only (no NaN, inf, extremes)
        self.plain = False

    # -- numbers, shapes, dtypes
    def draws_huge(self, lines=None) -> bool:
        """Whether the setup ``lines`` (all of them by default) hold a huge
        finite value (1e30 or 3e38), which makes some results depend on an
        order of operations that PyTorch does not fix."""
        lines = self.case.setup if lines is None else lines
        return any(big in line for line in lines for big in ("e+30", "e+38"))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options):
        return self.rng.choice(list(options))

    def size(self) -> int:
        return self.pick((0, 1, 1, 2, 2, 3, 3, 4, 5))

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = self.pick((0, 1, 1, 2, 2, 2, 3, 3, 4))
        shape = tuple(self.size() for _ in range(rank))
        while _numel(shape) > 60:
            shape = tuple(max(1, s // 2) for s in shape)
        return shape

    def dtype(self, allowed=DTYPES) -> str:
        return self.pick(allowed)

    def value(self, dtype: str, special: bool = True):
        """A number for a ``dtype`` tensor; floats include -0.0, NaN and infinities."""
        if dtype == "bool":
            return self.chance(0.5)
        if dtype == "uint8":
            return self.rng.randint(0, 12)
        if dtype in INTEGERS:
            return self.rng.randint(-6, 6)
        if self.chance(0.03) and special:
            return self.pick((float("nan"), float("inf"), float("-inf")))
        if self.chance(0.03) and special:  # extremes: float32 overflow and underflow
            return self.pick(EXTREMES)
        if self.chance(0.3):
            return self.pick((0.0, -0.0, 0.5, -1.5, 1.0, 2.0) if special else (0.5, -1.5, 1.0, 2.0))
        return round(self.rng.uniform(-3.0, 3.0), 3)

    def dim(self, rank: int, bad: float = 0.08) -> int:
        """A dim of a rank-``rank`` tensor, sometimes out of range."""
        if self.chance(bad):
            return self.pick((rank, rank + 1, -rank - 1, 5))
        if rank == 0:
            return self.pick((0, -1))
        return self.rng.randint(-rank, rank - 1)

    # -- inputs
    def tensor(
        self, shape=None, dtype: str | None = None, layout: str | None = None, grad: bool = False
    ) -> str:
        """Add a setup line making an input; return its variable name."""
        shape = self.shape() if shape is None else tuple(shape)
        dtype = self.dtype() if dtype is None else dtype
        name = f"x{len(self.case.inputs)}"
        if layout is None:
            layout = self.pick(("contiguous",) * 4 + ("permuted", "sliced", "expanded"))
        if grad:
            layout = "contiguous"
        expr = self._layout(shape, dtype, layout)
        if grad:
            expr += ".requires_grad_()"  # (values without NaN, inf or -0.0: see gen_backward)
        self.case.setup.append(f"{name} = {expr}")
        self.case.inputs.append(name)
        return name

    def _literal(self, shape, dtype: str) -> str:
        special = "backward" not in self.case.op and not self.plain
        values = [self.value(dtype, special) for _ in range(_numel(shape))]
        text = ", ".join(_number(v) for v in values)
        return f"T.tensor([{text}], dtype=T.{dtype}).reshape({_tuple(shape)})"

    def _layout(self, shape, dtype: str, layout: str) -> str:
        rank = len(shape)
        if layout == "permuted" and rank >= 2:
            order = list(range(rank))
            self.rng.shuffle(order)
            stored = tuple(shape[i] for i in order)
            inverse = [order.index(i) for i in range(rank)]
            return f"{self._literal(stored, dtype)}.permute({_tuple(inverse)})"
        if layout == "sliced" and rank >= 1:
            d = self.rng.randrange(rank)
            stored = list(shape)
            stored[d] = 2 * shape[d]
            index = ", ".join([":"] * d + ["::2"])
            return f"{self._literal(stored, dtype)}[{index}]"
        if layout == "expanded" and rank >= 1:
            stored = tuple(1 if self.chance(0.5) else s for s in shape)
            return f"{self._literal(stored, dtype)}.expand({_tuple(shape)})"
        return self._literal(shape, dtype)

    def index_tensor(self, shape, high: int, bad: float = 0.08) -> str:
        """An int64 index tensor with entries in ``[-high, high)`` (some bad ones)."""
        name = f"x{len(self.case.inputs)}"
        values = []
        for _ in range(_numel(shape)):
            if self.chance(bad) or high <= 0:
                values.append(self.pick((high, high + 3, -high - 1)))
            else:
                values.append(self.rng.randint(0, high - 1) - (high if self.chance(0.1) else 0))
        dtype = "int64" if not self.chance(0.05) else self.pick(("int32", "float32"))
        text = ", ".join(str(v) for v in values)
        self.case.setup.append(
            f"{name} = T.tensor([{text}], dtype=T.{dtype}).reshape({_tuple(shape)})"
        )
        self.case.inputs.append(name)
        return name

    def broadcast_partner(self, shape) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape`` (or, rarely, one that does not)."""
        if self.chance(0.08):
            return tuple(s + 1 for s in shape) or (2,)
        keep = self.rng.randint(0, len(shape))
        partner = [1 if self.chance(0.3) else s for s in shape[len(shape) - keep :]]
        if self.chance(0.15):
            partner = [1] + partner
        return tuple(partner)


def _numel(shape) -> int:
    count = 1
    for s in shape:
        count *= s
    return count


def _tuple(values) -> str:
    values = list(values)
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _number(value) -> str:
    if isinstance(value, float):
        if value != value:
            return "float('nan')"
        if value in (float("inf"), float("-inf")):
            return f"float('{value}')"
    return repr(value)


# -------------------------------------------------------------- op generators
UNARY_FLOAT = (
    "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf",
    "expm1", "log1p", "reciprocal",
)  # fmt: skip
UNARY_ANY = ("abs", "neg", "relu", "sign", "floor", "ceil", "round", "trunc", "square")
UNARY_OTHER = ("logical_not", "bitwise_not", "isnan", "clone", "contiguous")
BINARY = (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor",
)  # fmt: skip
NUMPY_UNARY = {"exp", "sin", "cos", "tanh", "abs", "floor", "ceil", "trunc", "square"}
NUMPY_BINARY = {"add", "mul", "maximum", "minimum"}


def gen_unary(g: Generator) -> None:
    op = g.pick(UNARY_FLOAT + UNARY_ANY + UNARY_OTHER)
    x = g.tensor()
    style = g.pick(("function", "method", "inplace"))
    if op in ("clone", "contiguous"):
        style = "method"
    if style == "function":
        g.case.call = f"T.{op}({x})"
    elif style == "method":
        g.case.call = f"{x}.{op}()"
    else:
        g.case.call = f"{x}.{op}_()"
    g.case.op = f"{op}:{style}"
    if op in NUMPY_UNARY and style != "inplace" and "float" in g.case.setup[-1]:
        g.case.numpy = f"np.{op}({x})"


def gen_binary(g: Generator) -> None:
    op = g.pick(BINARY)
    dtype = g.dtype()
    a = g.tensor(dtype=dtype)
    shape_a = _shape_of(g, a)
    if g.chance(0.25):
        b = _number(g.value(g.dtype()))
    else:
        other_dtype = dtype if g.chance(0.6) else g.dtype()
        b = g.tensor(shape=g.broadcast_partner(shape_a), dtype=other_dtype)
    style = g.pick(("function", "method", "inplace", "operator"))
    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floor_divide": "//"}
    symbols.update({"remainder": "%", "pow": "**", "bitwise_and": "&", "bitwise_or": "|"})
    symbols.update({"bitwise_xor": "^", "eq": "==", "lt": "<", "ge": ">="})
    if style == "operator" and op in symbols:
        g.case.call = f"({a} {symbols[op]} {b})"
    elif style == "inplace" and op not in ("maximum", "minimum"):
        g.case.call = f"{a}.{op}_({b})"
    elif style == "method":
        g.case.call = f"{a}.{op}({b})"
    else:
        style = "function"
        g.case.call = f"T.{op}({a}, {b})"
    if op == "div" and style in ("function", "method") and g.chance(0.3):
        mode = g.pick(("'floor'", "'trunc'", "'nearest'"))
        g.case.call = g.case.call[:-1] + f", rounding_mode={mode})"
    g.case.op = f"{op}:{style}"
    if op in NUMPY_BINARY and style != "inplace" and dtype in FLOATS and b.startswith("x"):
        if f"dtype=T.{dtype}" in g.case.setup[-1]:
            g.case.numpy = f"np.{op if op != 'mul' else 'multiply'}({a}, {b})"


def _shape_of(g: Generator, name: str) -> tuple[int, ...]:
    """The shape of input ``name``, read back from its setup line (its last shape tuple)."""
    line = next(line for line in g.case.setup if line.startswith(name + " = "))
    return _parse_shape(line)


def _parse_shape(line: str) -> tuple[int, ...]:
    # Every layout ends in the logical shape: reshape(S), permute(...) of a permuted
    # shape, a [..., ::2] slice, or expand(S). Evaluate the setup line with a stand-in.
    import numpy as np

    namespace = {"T": _ShapeOnly(), "float": float, "np": np}
    exec(line, namespace)
    return namespace[line.split(" = ")[0]].shape


class _ShapeOnly:
    """A stand-in for ``T`` that builds NumPy arrays, to learn a setup line's shape."""

    def __getattr__(self, name):
        import numpy as np

        if name == "tensor":
            return lambda values, dtype=None: _NpTensor(np.array(values, dtype=np.float64))
        return name


class _NpTensor:
    def __init__(self, array):
        self.array = array

    @property
    def shape(self):
        return tuple(self.array.shape)

    def reshape(self, shape):
        return _NpTensor(self.array.reshape(shape))

    def permute(self, order):
        return _NpTensor(self.array.transpose(order))

    def expand(self, shape):
        return _NpTensor(__import__("numpy").broadcast_to(self.array, shape))

    def requires_grad_(self):
        return self

    def __getitem__(self, index):
        return _NpTensor(self.array[index])


REDUCTIONS = (
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max", "min", "var", "std",
    "logsumexp", "all", "any", "count_nonzero", "cumsum", "softmax", "log_softmax",
)  # fmt: skip


def gen_reduction(g: Generator) -> None:
    op = g.pick(REDUCTIONS)
    x = g.tensor()
    rank = len(_shape_of(g, x))
    args = []
    mode = g.pick(("none", "dim", "dim", "dims"))
    if op in ("cumsum", "softmax", "log_softmax", "logsumexp"):
        mode = "dim" if op != "logsumexp" or g.chance(0.7) else "dims"
    if mode == "dim":
        args.append(str(g.dim(rank)))
    elif mode == "dims" and op in ("sum", "mean", "amax", "amin", "var", "std", "logsumexp"):
        count = g.rng.randint(0, rank + (1 if g.chance(0.1) else 0))
        dims = [g.dim(rank) for _ in range(count)]
        args.append(_tuple(dims) if g.chance(0.7) else str(dims))
    if args and op not in ("cumsum", "softmax", "log_softmax", "count_nonzero") and g.chance(0.5):
        args.append(f"keepdim={g.chance(0.5)}")
    if op == "cumsum" and g.chance(0.2):
        g.case.call = f"{x}.cumsum_({', '.join(args)})"
    else:
        g.case.call = f"T.{op}({', '.join([x, *args])})"
    g.case.op = f"{op}:{mode}"
    huge = g.draws_huge()
    if op in ("sum", "mean", "cumsum") and huge:
        # Which small terms a huge one absorbs (3e38 + 1e30 - 3e38) depends on
        # the order of the additions: PyTorch's float32 cascade, glasstorch's
        # exact sum (reference) or float32 trees into double lanes (fast).
        # Compared by class (docs/guide/errors.md).
        g.case.tolerance = "class"
    if op == "prod" and huge:
        # Huge factors: whether a float32 product overflows on the way depends
        # on the order of the multiplications (PyTorch's float32 vector lanes);
        # glasstorch multiplies in double, which overflows only where the
        # product itself does. Compared by shape and dtype (docs/guide/errors.md).
        g.case.compare = "meta"
    if op == "sum" and mode == "none" and "float64" in g.case.setup[-1]:
        g.case.numpy = f"np.sum({x})"


def gen_view(g: Generator) -> None:
    op = g.pick(
        ("view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze",
         "flatten", "unflatten", "narrow", "select", "unbind", "split", "chunk", "as_strided",
         "getitem", "flip", "T")
    )  # fmt: skip
    x = g.tensor()
    shape = _shape_of(g, x)
    rank, numel = len(shape), _numel(shape)
    d = g.dim(rank)
    if op in ("view", "reshape"):
        target = _factor(g, numel)
        if g.chance(0.15):
            target = (-1, *target[1:]) if target else (-1,)
        if g.chance(0.08):
            target = (numel + 1,) if not g.chance(0.5) else (-1, -1)
        call = f"{x}.{op}{_tuple(target)}" if target else f"{x}.{op}(())"
    elif op == "permute":
        order = list(range(rank))
        g.rng.shuffle(order)
        if g.chance(0.1):
            order = order + [0] if g.chance(0.5) else [0] * rank
        call = f"{x}.permute({_tuple(order)})"
    elif op == "transpose":
        call = f"{x}.transpose({d}, {g.dim(rank)})"
    elif op in ("t", "T"):
        call = f"{x}.t()" if op == "t" else f"{x}.T"
    elif op == "expand":
        target = [s if s != 1 or g.chance(0.5) else g.pick((1, 2, 3)) for s in shape]
        target = [-1 if g.chance(0.1) else s for s in target]
        if g.chance(0.3):
            target = [2, *target]
        if g.chance(0.08):
            target = [s + 1 for s in target]
        call = f"{x}.expand({_tuple(target)})"
    elif op in ("squeeze", "unsqueeze"):
        extra = 1 if op == "unsqueeze" else 0
        dim = g.dim(rank + extra)
        call = f"{x}.{op}({dim})" if op == "unsqueeze" or g.chance(0.7) else f"{x}.squeeze()"
    elif op == "flatten":
        call = f"{x}.flatten({d}, {g.dim(rank)})" if g.chance(0.7) else f"T.flatten({x})"
    elif op == "unflatten":
        size = shape[d] if rank and -rank <= d < rank else 1
        call = f"{x}.unflatten({d}, {_tuple(_factor(g, size) or (1,))})"
    elif op == "narrow":
        size = shape[d] if rank and -rank <= d < rank else 1
        start = g.rng.randint(-size - 1, size + 1)
        length = g.rng.randint(-1, size + 1)
        call = f"T.narrow({x}, {d}, {start}, {length})"
    elif op == "select":
        size = shape[d] if rank and -rank <= d < rank else 1
        call = f"{x}.select({d}, {g.rng.randint(-size - 1, size)})"
    elif op == "unbind":
        call = f"T.unbind({x}, {d})"
    elif op == "split":
        size = shape[d] if rank and -rank <= d < rank else 1
        if g.chance(0.5):
            call = f"T.split({x}, {g.rng.randint(-1, size + 1)}, {d})"
        else:
            sizes = _parts(g, size)
            call = f"{x}.split({sizes}, {d})"
    elif op == "chunk":
        call = f"T.chunk({x}, {g.rng.randint(-1, 4)}, {d})"
    elif op == "as_strided":
        target = g.shape(g.rng.randint(0, 3))
        strides = tuple(g.rng.randint(0, 3) for _ in target)
        offset = g.rng.randint(0, 2)
        call = f"T.as_strided({x}, {_tuple(target)}, {_tuple(strides)}, {offset})"
        # Stay within the storage: the base is made contiguous, so its numel bounds it.
        reach = offset + sum((s - 1) * st for s, st in zip(target, strides) if s > 0)
        if 0 in target or reach < numel:
            call = f"T.as_strided({x}.contiguous(), {_tuple(target)}, {_tuple(strides)}, {offset})"
        else:
            call = f"T.as_strided({x}.contiguous(), {_tuple(target)}, {_tuple(strides)}, 0)"
            if reach - offset >= numel:
                call = f"{x}.contiguous()"  # out-of-bounds as_strided is the safety tests' job
    elif op == "flip":
        dims = tuple({g.dim(rank) for _ in range(g.rng.randint(1, max(1, rank)))})
        call = f"T.flip({x}, {_tuple(dims)})"
    else:
        call = f"{x}[{_index_expr(g, shape)}]"
    g.case.call = call
    g.case.op = op


def _factor(g: Generator, n: int) -> tuple[int, ...]:
    """A random shape with ``n`` elements."""
    if n == 0:
        return g.pick(((0,), (0, 2), (2, 0, 1)))
    parts = []
    while n > 1 and len(parts) < 3:
        divisors = [k for k in range(2, n + 1) if n % k == 0]
        k = g.pick(divisors)
        parts.append(k)
        n //= k
    if n > 1:
        parts.append(n)
    if g.chance(0.3):
        parts.insert(g.rng.randint(0, len(parts)), 1)
    return tuple(parts)


def _parts(g: Generator, size: int) -> list[int]:
    parts, left = [], size
    while left > 0:
        k = g.rng.randint(0, left)
        parts.append(k)
        left -= k
    if g.chance(0.1):
        parts.append(1)
    return parts or [0]


def _index_expr(g: Generator, shape) -> str:
    """A subscript: ints, slices, None, Ellipsis, lists, index or mask tensors."""
    items = []
    for d in range(min(len(shape), g.rng.randint(0, len(shape) + 1))):
        size = shape[d]
        kind = g.pick(("int", "slice", "slice", "none", "list", "tensor", "ellipsis"))
        if kind == "int":
            items.append(str(g.rng.randint(-size - 1, size)))
        elif kind == "slice":
            start = g.pick(("", str(g.rng.randint(-size - 1, size + 1))))
            stop = g.pick(("", str(g.rng.randint(-size - 1, size + 1))))
            step = g.pick(("", "", "2", "3"))
            items.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        elif kind == "none":
            items.append("None")
        elif kind == "list":
            items.append(str([g.rng.randint(-size, max(size - 1, 0)) for _ in range(2)]))
        elif kind == "tensor":
            items.append(g.index_tensor((g.rng.randint(0, 3),), size, bad=0.05))
        elif "..." not in items:
            items.append("...")
    if g.chance(0.1):
        items = [g.tensor(shape=shape, dtype="bool", layout="contiguous")]
    return ", ".join(items) if items else "..."


def gen_indexing(g: Generator) -> None:
    op = g.pick(
        ("gather", "scatter", "scatter_add", "index_select", "index_add", "masked_fill",
         "masked_select", "take", "where", "setitem")
    )  # fmt: skip
    x = g.tensor(dtype=g.dtype(("float32", "float64", "int64", "int32")))
    shape = _shape_of(g, x)
    rank = len(shape)
    d = g.dim(rank)
    size = shape[d] if rank and -rank <= d < rank else 1
    inplace = g.chance(0.3) and op in ("scatter", "scatter_add", "index_add", "masked_fill")
    name = f"{x}.{op}_" if inplace else f"T.{op}"
    first = "" if inplace else f"{x}, "
    if op in ("gather", "scatter", "scatter_add"):
        index_shape = tuple(g.rng.randint(0, s) if s else 0 for s in shape)
        index = g.index_tensor(index_shape, size)
        if op == "gather":
            call = f"T.gather({x}, {d}, {index})"
        else:
            src = g.tensor(shape=index_shape, dtype=_dtype_of(g, x), layout="contiguous")
            if op == "scatter" and g.chance(0.3):
                src = _number(g.value("float32"))
            call = f"{name}({first}{d}, {index}, {src})"
    elif op in ("index_select", "index_add"):
        index = g.index_tensor((g.rng.randint(0, 3),), size)
        if op == "index_select":
            call = f"T.index_select({x}, {d}, {index})"
        else:
            src_shape = list(shape)
            if rank and -rank <= d < rank:
                src_shape[d] = _numel(_shape_of(g, index))
            src = g.tensor(shape=src_shape, dtype=_dtype_of(g, x), layout="contiguous")
            call = f"{name}({first}{d}, {index}, {src})"
    elif op in ("masked_fill", "masked_select", "where"):
        mask = g.tensor(shape=g.broadcast_partner(shape), dtype="bool")
        if op == "masked_fill":
            call = f"{name}({first}{mask}, {_number(g.value(_dtype_of(g, x)))})"
        elif op == "masked_select":
            call = f"T.masked_select({x}, {mask})"
        else:
            other = g.tensor(shape=g.broadcast_partner(shape), dtype=g.dtype())
            call = f"T.where({mask}, {x}, {other})"
    elif op == "take":
        index = g.index_tensor(g.shape(g.rng.randint(0, 2)), max(1, _numel(shape)))
        call = f"T.take({x}, {index})"
    else:
        target = _index_expr(g, shape)
        value = _number(g.value(_dtype_of(g, x)))
        g.case.setup.append(f"{x}[{target}] = {value}")
        call = x
    g.case.call = call
    g.case.op = op + (":inplace" if inplace else "")


def _dtype_of(g: Generator, name: str) -> str:
    line = next(line for line in g.case.setup if line.startswith(name + " = "))
    return line.split("dtype=T.")[1].split(")")[0]


def gen_creation(g: Generator) -> None:
    op = g.pick(
        ("zeros", "ones", "full", "empty", "arange", "linspace", "eye", "tensor", "zeros_like",
         "full_like", "rand", "randn", "randint")
    )  # fmt: skip
    shape = list(g.shape())
    if g.chance(0.1):
        shape.append(g.pick((-1, -3)))
    if g.chance(0.05):
        shape = [g.pick((1 << 40, 1 << 62))]
    dtype = g.pick((None, *DTYPES))
    kw = f", dtype=T.{dtype}" if dtype else ""
    compare = "value"
    if op in ("zeros", "ones", "empty", "rand", "randn"):
        call = f"T.{op}({_tuple(shape)}{kw})"
        compare = "meta" if op in ("empty", "rand", "randn") else "value"
    elif op == "full":
        value = _number(g.value(g.dtype()))
        call = f"T.full({_tuple(shape)}, {value}{kw})"
    elif op == "randint":
        call = f"T.randint({g.rng.randint(-2, 3)}, {g.rng.randint(1, 20)}, {_tuple(shape)}{kw})"
        compare = "meta"
    elif op == "arange":
        start = g.pick((0, 1, -3, 2.5))
        end = g.pick((5, 7.5, 0, -2, 10))
        step = g.pick((1, 2, -1, 0.5, 3))
        call = f"T.arange({start}, {end}, {step}{kw})"
    elif op == "linspace":
        call = (
            f"T.linspace({g.pick((0, -1.5, 2))}, {g.pick((1, 4, -3))}, {g.rng.randint(-1, 7)}{kw})"
        )
    elif op == "eye":
        call = f"T.eye({g.rng.randint(0, 4)}, {g.rng.randint(0, 4)}{kw})"
    elif op == "tensor":
        rows = g.rng.randint(0, 3)
        nested = [
            [g.value(g.pick(("bool", "int64", "float32"))) for _ in range(2)] for _ in range(rows)
        ]
        if g.chance(0.1):
            nested.append([1])  # ragged
        text = (
            "[" + ", ".join("[" + ", ".join(_number(v) for v in row) + "]" for row in nested) + "]"
        )
        call = f"T.tensor({text}{kw})"
    else:
        x = g.tensor()
        extra = f", {_number(g.value(g.dtype()))}" if op == "full_like" else ""
        call = f"T.{op}({x}{extra}{kw})"
    g.case.call, g.case.op, g.case.compare = call, op, compare


def gen_matmul(g: Generator) -> None:
    op = g.pick(("matmul", "mm", "bmm", "mv", "dot", "operator"))
    dtype = g.dtype(("float32", "float64", "float64", "int64"))
    n, k, m, b = (g.pick((0, 1, 2, 3, 4)) for _ in range(4))
    if g.chance(0.1):
        k2 = k + 1
    else:
        k2 = k
    shapes = {
        "mm": ((n, k), (k2, m)),
        "bmm": ((b, n, k), (b, k2, m)),
        "mv": ((n, k), (k2,)),
        "dot": ((k,), (k2,)),
    }
    if op in shapes:
        sa, sb = shapes[op]
    else:
        sa = tuple(g.shape(g.rng.randint(1, 3))[:-1]) + (k,) if g.chance(0.9) else (k,)
        sb = (k2,) + ((m,) if g.chance(0.7) else ())
        if g.chance(0.3):
            sb = (g.pick((1, 2)),) + sb
    a = g.tensor(shape=sa, dtype=dtype)
    bb = g.tensor(shape=sb, dtype=dtype if g.chance(0.9) else g.dtype(FLOATS))
    g.case.call = f"({a} @ {bb})" if op == "operator" else f"T.{op}({a}, {bb})"
    g.case.op = op
    if g.draws_huge():
        # Huge finite values: whether a sum of products overflows, or which small
        # term a huge one absorbs, depends on the order of the additions, and
        # PyTorch's BLAS picks its order by CPU and size. Not reproducible:
        # compared by shape and dtype only (docs/guide/errors.md).
        g.case.compare = "meta"


def gen_join(g: Generator) -> None:
    op = g.pick(("cat", "stack", "split_cat", "clamp", "clamp_tensor", "softmax_dtype"))
    if op in ("cat", "stack", "split_cat"):
        shape = g.shape()
        dtype = g.dtype()
        names = []
        for _ in range(g.rng.randint(1, 3)):
            other = list(shape)
            if op == "cat" and shape and g.chance(0.6):
                other[g.rng.randrange(len(shape))] = g.size()
            if g.chance(0.1):
                other = [0]  # the legacy empty tensor
            names.append(g.tensor(shape=other, dtype=dtype if g.chance(0.8) else g.dtype()))
        d = g.dim(len(shape) + (1 if op == "stack" else 0))
        if op == "split_cat":
            size = shape[d] if shape and -len(shape) <= d < len(shape) else 1
            call = f"T.cat(T.split({names[0]}, {max(1, size // 2)}, {d}), {d})"
        else:
            call = f"T.{op}([{', '.join(names)}], {d})"
    elif op == "clamp":
        x = g.tensor()
        low = g.pick(("None", _number(g.value("float32")), _number(g.value("int64"))))
        high = g.pick(("None", _number(g.value("float32")), _number(g.value("int64"))))
        call = f"T.clamp({x}, {low}, {high})" if g.chance(0.7) else f"{x}.clamp_({low}, {high})"
    elif op == "clamp_tensor":
        x = g.tensor(dtype=g.dtype(FLOATS))
        shape = _shape_of(g, x)
        low = g.tensor(shape=g.broadcast_partner(shape), dtype=_dtype_of(g, x))
        call = f"T.clamp({x}, min={low})"
    else:
        x = g.tensor(dtype=g.dtype(("float32", "int64")))
        call = f"T.softmax({x}, {g.dim(len(_shape_of(g, x)))}, dtype=T.float64)"
    g.case.call, g.case.op = call, op


DIFFERENTIABLE = (
    "exp", "sin", "tanh", "sigmoid", "sqrt", "abs", "relu", "square",
    "add", "mul", "div", "sub", "pow", "maximum",
    "sum_dim", "mean_dim", "amax_dim", "var", "logsumexp", "cumsum",
    "softmax", "log_softmax", "matmul", "view_ops", "gather", "index_select", "cat", "where",
    "clamp", "masked_fill",
)  # fmt: skip


def gen_backward(g: Generator) -> None:
    """A differentiable op on float64 leaves, then ``.sum().backward()``; grads compared.

    The inputs hold ordinary numbers (no NaN, infinity or -0.0): the forward cases
    cover special values, and a gradient's value at a kink is a convention.
    """
    g.case.op = "backward"
    op = g.pick(DIFFERENTIABLE)
    shape = tuple(max(1, s) for s in g.shape(g.rng.randint(1, 3)))
    rank = len(shape)
    x = g.tensor(shape=shape, dtype="float64", grad=True)
    d = g.dim(rank, bad=0.0)
    if op in ("exp", "sin", "tanh", "sigmoid", "sqrt", "abs", "relu", "square"):
        call = f"T.{op}({x})"
    elif op in ("add", "mul", "div", "sub", "pow", "maximum"):
        y = g.tensor(shape=g.broadcast_partner(shape), dtype="float64", grad=True)
        call = f"T.{op}({x}, {y})"
    elif op in ("sum_dim", "mean_dim", "amax_dim"):
        call = f"{x}.{op[:-4]}({d}, keepdim={g.chance(0.5)})"
    elif op in ("var", "logsumexp", "cumsum", "softmax", "log_softmax"):
        call = f"T.{op}({x}, {d})"
    elif op == "matmul":
        y = g.tensor(shape=(shape[-1], g.pick((1, 2, 3))), dtype="float64", grad=True)
        call = f"T.matmul({x}, {y})"
    elif op == "view_ops":
        call = g.pick(
            (f"{x}.t()" if rank <= 2 else f"{x}.transpose(0, 1)", f"{x}.unsqueeze(0).expand(2, *{x}.shape)",
             f"{x}.flip({d})", f"{x}[..., ::2]", f"{x}.reshape(-1)", f"{x}.narrow({d}, 0, 1)")
        )  # fmt: skip
    elif op == "gather":
        index = g.index_tensor(shape, shape[d], bad=0.0)
        call = f"T.gather({x}, {d}, {index})"
    elif op == "index_select":
        index = g.index_tensor((3,), shape[d], bad=0.0)
        call = f"T.index_select({x}, {d}, {index})"
    elif op == "cat":
        y = g.tensor(shape=shape, dtype="float64", grad=True)
        call = f"T.cat([{x}, {y}, {x}], {d})"
    elif op == "where":
        mask = g.tensor(shape=shape, dtype="bool", layout="contiguous")
        y = g.tensor(shape=shape, dtype="float64", grad=True)
        call = f"T.where({mask}, {x}, {y})"
    elif op == "clamp":
        call = f"T.clamp({x}, -0.5, 1.0)"
    else:
        mask = g.tensor(shape=shape, dtype="bool", layout="contiguous")
        call = f"{x}.masked_fill({mask}, 2.0)"
    g.case.call, g.case.op, g.case.compare = call, f"backward:{op}", "backward"


LOSSES = (
    "cross_entropy", "cross_entropy_probabilities", "nll_loss", "mse_loss", "l1_loss",
    "huber_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div",
)  # fmt: skip


def gen_loss(g: Generator) -> None:
    """A loss of ``torch.nn.functional`` on inputs and targets of mixed float dtypes."""
    op = g.pick(LOSSES)
    dtype = g.dtype(FLOATS)
    other = dtype if g.chance(0.5) else g.dtype(FLOATS)
    reduction = g.pick(("'mean'", "'sum'", "'none'"))
    classes = g.rng.randint(1, 4)
    batch = g.rng.randint(0, 3) if g.chance(0.9) else None  # None: an unbatched input
    f = "T.nn.functional"
    if op in ("cross_entropy", "nll_loss", "cross_entropy_probabilities"):
        shape = (classes,) if batch is None else (batch, classes)
        if batch is not None and g.chance(0.2):
            shape += (g.rng.randint(1, 3),)
        x = g.tensor(shape=shape, dtype=dtype)
        options = [f"reduction={reduction}"]
        if g.chance(0.3):
            options.append(f"weight={g.tensor(shape=(classes,), dtype=dtype, layout='contiguous')}")
        if op == "cross_entropy_probabilities":
            target = g.tensor(shape=shape, dtype=other)
        else:
            target_shape = () if batch is None else (shape[0],) + shape[2:]
            target = g.index_tensor(target_shape, classes, bad=0.03)
            if g.chance(0.2):
                options.append("ignore_index=0")
        if op != "nll_loss" and g.chance(0.25):
            options.append(f"label_smoothing={g.pick((0.1, 0.5))}")
        name = "nll_loss" if op == "nll_loss" else "cross_entropy"
        call = f"{f}.{name}({x}, {target}, {', '.join(options)})"
    else:
        shape = g.shape()
        x = g.tensor(shape=shape, dtype=dtype)
        y = g.tensor(shape=shape if g.chance(0.9) else g.broadcast_partner(shape), dtype=other)
        options = [f"reduction={reduction}"]
        if op == "huber_loss" and g.chance(0.5):
            options.append(f"delta={g.pick((0.5, 2.0))}")
        if op == "smooth_l1_loss" and g.chance(0.5):
            options.append(f"beta={g.pick((0.0, 0.5, 2.0))}")
        if op == "kl_div" and g.chance(0.5):
            options.append("log_target=True")
        if op == "binary_cross_entropy":
            x, y = f"T.sigmoid({x})", f"T.sigmoid({y})" if g.chance(0.8) else y
        if op == "binary_cross_entropy_with_logits" and g.chance(0.3):
            options.append(f"pos_weight={g.tensor(shape=shape[-1:], dtype=other)}")
        call = f"{f}.{op}({x}, {y}, {', '.join(options)})"
    if other != dtype:
        g.case.tolerance = "float32"  # the float32 side's precision bounds the result
    g.case.call, g.case.op = call, op


def gen_norm(g: Generator) -> None:
    """layer_norm, batch_norm (training or not, running statistics) or group_norm."""
    op = g.pick(("layer_norm", "batch_norm", "group_norm"))
    dtype = g.dtype(FLOATS)
    f = "T.nn.functional"
    if op == "layer_norm":
        shape = tuple(max(1, s) for s in g.shape(g.rng.randint(1, 3)))
        if g.chance(0.3):
            shape = shape[:-1] + (g.rng.randint(6, 20),)  # a row of several vectors
        x = g.tensor(shape=shape, dtype=dtype)
        k = g.rng.randint(1, len(shape))
        normalized = shape[-k:] if not g.chance(0.05) else shape[-k:] + (2,)
        args = [x, _tuple(normalized)]
        g.plain = True  # affine parameters of ordinary size (as for batch/group norm)
        for kind in ("weight", "bias"):
            if g.chance(0.5):
                args.append(f"{kind}={g.tensor(shape=normalized, dtype=dtype)}")
        g.plain = False
        call = f"{f}.layer_norm({', '.join(args)})"
    else:
        n = g.rng.randint(1, 4)
        groups = g.rng.randint(1, 3)
        channels = groups * g.rng.randint(1, 3) if op == "group_norm" else g.rng.randint(1, 4)
        rest = tuple(g.rng.randint(1, 4) for _ in range(g.pick((0, 1, 1, 2))))
        x = g.tensor(shape=(n, channels) + rest, dtype=dtype)
        params = []
        # Affine parameters hold ordinary numbers: the extremes go into the input,
        # whose statistics are the point. (A weight of 1e30 times a rounding residue
        # of a float64 fused multiply-add is noise PyTorch's kernels compute with an
        # FMA instruction that tensor operations cannot reproduce.)
        g.plain = True
        for kind in ("weight", "bias"):
            if g.chance(0.5):
                params.append(f"{kind}={g.tensor(shape=(channels,), dtype=dtype)}")
        g.plain = False
        if op == "group_norm":
            call = (
                f"{f}.group_norm({x}, {groups if not g.chance(0.05) else 4}, {', '.join(params)})"
            )
        else:
            training = g.chance(0.6)
            mean = g.tensor(shape=(channels,), dtype=dtype, layout="contiguous")
            var = g.tensor(shape=(channels,), dtype=dtype, layout="contiguous")
            g.case.setup.append(f"{var} = {var}.abs()")
            args = [x, mean, var, *params, f"training={training}"]
            if g.chance(0.3):
                args.append(f"momentum={g.pick((0.0, 0.5, 1.0))}")
            call = f"{f}.batch_norm({', '.join(args)})"
            layout = g.case.setup[0].split(").reshape(")[-1]
            strided = len(rest) == 0 or any(m in layout for m in (".permute", "[", ".expand"))
            if strided and g.draws_huge(g.case.setup[:1]):
                # PyTorch sums an (N, C) or strided input's channels in float32
                # partial sums split across its threads (or by its vectorised
                # mean): which term a huge one absorbs depends on the machine's
                # thread count. Compared by class (docs/guide/errors.md); in
                # training the running variance is the squared residue of that
                # mean (0, or past float32's range: inf), so not even its class
                # is reproducible, and the case compares shape and dtype only.
                g.case.tolerance = "class"
                if training:
                    g.case.compare = "meta"
            elif not training and g.draws_huge():
                # Evaluation with huge running statistics or parameters: PyTorch
                # folds them into per-channel constants whose rounding residue
                # (x * scale + shift against (x - mean) * invstd * w + b) we have
                # not reproduced for every layout. Compared by class; open
                # (docs/guide/errors.md).
                g.case.tolerance = "class"
            elif strided and training and ".expand" in layout:
                # An expanded input can hold constant channels: a variance of 0,
                # so the output is the float32 mean's rounding residue times
                # 1 / sqrt(eps), and PyTorch's strided path sums that mean in
                # float32 in its own order. Compared by class.
                g.case.tolerance = "class"
    g.case.call, g.case.op = call, op


SECOND_ORDER = (
    "exp", "sin", "tanh", "sigmoid", "square", "sqrt", "reciprocal", "relu", "abs",
    "mul", "div", "pow", "maximum", "minimum", "prod", "prod_dim", "sum", "mean_dim",
    "var", "std", "logsumexp", "softmax", "log_softmax", "amax", "clamp", "norm",
)  # fmt: skip


def gen_double_backward(g: Generator) -> None:
    """``autograd.grad`` with ``create_graph=True``, then a gradient of that gradient.

    float64 leaves of ordinary numbers (no NaN, infinity or -0.0), often with
    ties and zeros (maximum's and prod's special cases). The case's value is
    both the first gradients and the second.
    """
    g.case.op = "double_backward"
    op = g.pick(SECOND_ORDER)
    shape = tuple(max(1, s) for s in g.shape(g.rng.randint(1, 3)))
    rank = len(shape)
    x = g.tensor(shape=shape, dtype="float64", grad=True)
    leaves = [x]
    d = g.dim(rank, bad=0.0)
    if op in ("mul", "div", "pow", "maximum", "minimum"):
        y = g.tensor(shape=g.broadcast_partner(shape), dtype="float64", grad=True)
        leaves.append(y)
        call = f"T.{op}({x}, {y})"
    elif op == "prod_dim":
        call = f"{x}.prod({d})"
    elif op == "mean_dim":
        call = f"{x}.mean({d}, keepdim=True)"
    elif op in ("var", "std", "logsumexp", "softmax", "log_softmax", "amax"):
        call = f"T.{op}({x}, {d})"
    elif op == "clamp":
        call = f"T.clamp({x}, -0.5, 1.0)"
    elif op == "norm":
        call = f"{x}.norm()"
    else:
        call = f"T.{op}({x})"
    names = "[" + ", ".join(leaves) + "]"
    g.case.setup.append(f"first = T.autograd.grad(({call}).sum(), {names}, create_graph=True)")
    second = f"T.autograd.grad(sum((gi * gi).sum() for gi in first), {names}, allow_unused=True)"
    g.case.call, g.case.op = f"(first, {second})", op


def gen_cast(g: Generator) -> None:
    """Conversions to integer and bool dtypes (NaN, infinities, out-of-range floats)."""
    x = g.tensor(dtype=g.dtype(FLOATS + ("int64", "int32")))
    if g.chance(0.2):
        g.case.setup.append(f"{x} = {x} * {g.pick((1e10, 3e9, -3e9, 1e20, 300.0))}")
    call = g.pick(
        (f"{x}.int()", f"{x}.long()", f"{x}.to(T.int32)", f"{x}.to(T.int64)", f"{x}.to(T.uint8)",
         f"{x}.to(T.bool)", f"{x}.int().long()", f"{x}.long().float()", f"{x}.to(T.float32)")
    )  # fmt: skip
    g.case.call, g.case.op = call, call.split(".", 1)[1].split("(")[0]


def gen_bad_arguments(g: Generator) -> None:
    """Calls with arguments of the wrong kind: None, strings, floats as sizes, ..."""
    x = g.tensor()
    rank = len(_shape_of(g, x))
    call = g.pick(
        (f"{x}.sum(dim='a')", f"{x}.view(2.5)", f"{x}.reshape(None)", "T.zeros(2.5)",
         "T.zeros((2, None))", f"{x}.permute(0.5)" if rank else f"{x}.permute(1)",
         f"{x}.expand(-2)", f"{x}.unsqueeze(None)", f"T.cat({x}, 0)", "T.cat([], 0)",
         f"T.stack([{x}, 1])", f"{x} + 'a'", f"{x}.to('float')", "T.full((2,), [1])",
         f"{x}.transpose(0)", "T.ones(-1)", "T.arange(0, 10, 0)", "T.arange(5, 0, 1)",
         "T.empty((1 << 62, 4))", "T.zeros((1 << 31, 1 << 31, 4))", f"{x}.index_select(0, {x})",
         f"T.where({x}, 1.0, 0.0)", f"{x}.masked_fill({x}, 1.0)", f"{x}.item()",
         f"{x}.split(0, {max(0, rank - 1)})", f"{x}.view(-1, -1)", f"{x}.flatten(1, 0)",
         "T.tensor([1, 2]).view(2, 2)", f"{x}[{x}]", f"{x}.narrow(0, 0, -1)")
    )  # fmt: skip
    g.case.call, g.case.op = call, "bad-arguments"


GENERATORS = {
    "unary": (gen_unary, 12),
    "binary": (gen_binary, 16),
    "reduction": (gen_reduction, 12),
    "view": (gen_view, 14),
    "indexing": (gen_indexing, 12),
    "creation": (gen_creation, 7),
    "matmul": (gen_matmul, 5),
    "join": (gen_join, 7),
    "backward": (gen_backward, 9),
    "bad": (gen_bad_arguments, 4),
    "loss": (gen_loss, 8),
    "norm": (gen_norm, 7),
    "double_backward": (gen_double_backward, 6),
    "cast": (gen_cast, 4),
}


def generate(seed: int, index: int) -> Case:
    """The case number ``index`` of the run with ``seed`` (deterministic)."""
    g = Generator(seed, index)
    names = list(GENERATORS)
    weights = [GENERATORS[n][1] for n in names]
    family = g.rng.choices(names, weights)[0]
    GENERATORS[family][0](g)
    g.case.op = f"{family}/{g.case.op}"
    return g.case


# ------------------------------------------------------------- running a case
@dataclass
class Outcome:
    """What one library did with a case: a value (normalized) or an exception."""

    value: object = None
    error: BaseException | None = None
    inputs: list = field(default_factory=list)
    devices: set = field(default_factory=set)  # the device types of the result's tensors


def run(case: Case, lib) -> Outcome:
    """Run ``case`` with ``T = lib``; the result and the inputs after the call, normalized."""
    namespace = {"T": lib}
    try:
        exec("\n".join(case.setup), namespace)  # noqa: S102 - generated test programs
        result = eval(case.call, namespace)  # noqa: S307
        if case.compare == "backward":
            result.sum().backward()
            result = [
                namespace[name].grad for name in case.inputs if _requires_grad(namespace, name)
            ]
        inputs = [_normalize(namespace[name], "value") for name in case.inputs]
        return Outcome(
            value=_normalize(result, case.compare), inputs=inputs, devices=_devices(result)
        )
    except Exception as error:  # noqa: BLE001 - every outcome is recorded
        return Outcome(error=error)


def _devices(value) -> set:
    """The device types (``"cpu"``, ``"cuda"``) of the tensors in ``value``."""
    if hasattr(value, "device") and hasattr(value, "dtype"):
        return {value.device.type}
    if isinstance(value, (tuple, list)):
        return set().union(*(_devices(v) for v in value))
    return set()


def _requires_grad(namespace, name: str) -> bool:
    return bool(getattr(namespace[name], "requires_grad", False))


def _normalize(value, compare: str):
    """Plain data for comparing: tensors become ``('tensor', shape, dtype, array)``."""
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "dtype"):
        value = value.detach()
        if getattr(value, "_is_zerotensor", lambda: False)():  # PyTorch's lazy zeros
            value = value.new_zeros(value.shape)
        dtype = str(value.dtype).rsplit(".", 1)[-1]
        shape = tuple(value.shape)
        if compare == "meta":
            return ("tensor", shape, dtype, None)
        array = np.array(value.contiguous().cpu().numpy(), copy=True).reshape(shape)
        return ("tensor", shape, dtype, array)
    if isinstance(value, (tuple, list)):
        return ("seq", [_normalize(v, compare) for v in value])
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("scalar", value)
    if hasattr(value, "__iter__") and not isinstance(value, (dict,)):  # torch.Size
        return ("seq", [_normalize(v, compare) for v in value])
    return ("other", type(value).__name__)


def same(a, b, tolerance: str = "") -> str | None:
    """``None`` when normalized values ``a`` and ``b`` agree, else what differs.

    ``tolerance="float32"`` compares float64 values at float32's tolerance;
    ``"class"`` compares floats only by where they are finite (for results whose
    finite values depend on an order of additions PyTorch does not fix).
    """
    import numpy as np

    if a[0] != b[0]:
        return f"kind {a[0]} != {b[0]}"
    if a[0] == "seq":
        if len(a[1]) != len(b[1]):
            return f"length {len(a[1])} != {len(b[1])}"
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            problem = same(x, y, tolerance)
            if problem:
                return f"[{i}]: {problem}"
        return None
    if a[0] == "scalar":
        x, y = a[1], b[1]
        if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
            return None
        if type(x) is not type(y) and not (
            isinstance(x, (int, float)) and isinstance(y, (int, float))
        ):
            return f"{x!r} != {y!r}"
        if x == y:  # exact, and the only way two infinities agree (inf - inf is NaN)
            return None
        if isinstance(x, float) or isinstance(y, float):
            close = math.isfinite(x) and math.isfinite(y) and abs(x - y) <= 1e-5 + 1e-4 * abs(y)
            return None if close else f"{x!r} != {y!r}"
        return f"{x!r} != {y!r}"
    if a[0] == "tensor":
        if a[1] != b[1]:
            return f"shape {a[1]} != {b[1]}"
        if a[2] != b[2]:
            return f"dtype {a[2]} != {b[2]}"
        if a[3] is None or b[3] is None:
            return None
        x, y = a[3], b[3]
        if x.dtype.kind == "f" and tolerance == "class":
            if not np.array_equal(np.isfinite(x), np.isfinite(y)):
                where = np.argwhere(np.isfinite(x) != np.isfinite(y))
                first = tuple(int(i) for i in where[0])
                return f"finite and non-finite at {first}: {x[first]!r} != {y[first]!r}"
            return None
        if x.dtype.kind == "f":
            low = x.dtype.itemsize == 4 or tolerance == "float32"
            rtol, atol = (1e-4, 1e-5) if low else (1e-8, 1e-10)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                return "NaN positions differ"
            if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                where = np.argwhere(~np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
                first = tuple(int(i) for i in where[0])
                return f"values differ at {first}: {x[first]!r} != {y[first]!r}"
            return None
        if not np.array_equal(x, y):
            where = np.argwhere(x != y)
            first = tuple(int(i) for i in where[0])
            return f"values differ at {first}: {x[first]!r} != {y[first]!r}"
        return None
    return None if a == b else f"{a} != {b}"


def _builtin_base(error: BaseException) -> type:
    for cls in type(error).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def classify(case: Case, mine: Outcome, theirs: Outcome | None) -> tuple[str, str]:
    """The outcome class of a case and a one-line detail."""
    if theirs is None:
        return _classify_alone(case, mine)
    if mine.error is not None and theirs.error is not None:
        base = _builtin_base(theirs.error)
        detail = f"glasstorch {_describe(mine.error)}; torch {_describe(theirs.error)}"
        return ("agree-error" if isinstance(mine.error, base) else "mismatch-error-type"), detail
    if mine.error is not None:
        return "glasstorch-error-only", f"glasstorch {_describe(mine.error)}"
    if theirs.error is not None:
        return "torch-error-only", f"torch {_describe(theirs.error)}"
    problem = same(mine.value, theirs.value, case.tolerance)
    if problem is None and case.compare != "meta":
        for i, (x, y) in enumerate(zip(mine.inputs, theirs.inputs)):
            problem = same(x, y, case.tolerance)
            if problem:
                problem = f"input {case.inputs[i]} after the call: {problem}"
                break
    return ("agree-value", "") if problem is None else ("mismatch-value", problem)


def _classify_alone(case: Case, mine: Outcome) -> tuple[str, str]:
    if mine.error is not None:
        if not isinstance(mine.error, EXPECTED_ERRORS):
            return "unexpected-error", f"glasstorch {_describe(mine.error)}"
        return "ok-error", _describe(mine.error)
    if case.numpy:
        import numpy as np

        expected = _numpy_expected(case, np)
        if expected is not None:
            problem = same(_strip_dtype(mine.value), _strip_dtype(expected))
            if problem:
                return "mismatch-value", f"NumPy: {problem}"
    return "ok-value", ""


def _numpy_expected(case: Case, np):
    import glasstorch

    namespace = {"T": glasstorch}
    try:
        exec("\n".join(case.setup), namespace)  # noqa: S102
        arrays = {n: np.array(namespace[n].cpu().numpy(), copy=True) for n in case.inputs}
        with np.errstate(all="ignore"):
            value = eval(case.numpy, {"np": np, **arrays})  # noqa: S307
    except Exception:  # noqa: BLE001 - NumPy cannot say; no check
        return None
    array = np.asarray(value)
    return ("tensor", tuple(array.shape), array.dtype.name, array)


def _strip_dtype(value):
    if value[0] == "tensor":
        return ("tensor", value[1], "any", value[3])
    return value


def _describe(error: BaseException) -> str:
    message = str(error).split("\n")[0]
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{type(error).__name__}: {message}"


# ------------------------------------------------------------------ the worker
def worker(seed: int, start: int, stop: int, use_torch: bool, device: str = "cpu") -> None:
    """Run cases ``start`` to ``stop``, one JSON line before and after each, on stdout.

    glasstorch's tensors are made on ``device``.
    """
    import resource
    import warnings

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = (
        WORKER_MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(hard, WORKER_MEMORY_BYTES)
    )
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    warnings.simplefilter("ignore")
    import glasstorch

    if device != "cpu":
        glasstorch.set_default_device(device)
    torch = None
    if use_torch:
        try:
            import torch
        except ImportError:
            torch = None
    out = sys.stdout
    # The harness's own test makes chosen cases crash or hang: "crash:3,hang:5".
    inject = dict(
        reversed(item.split(":"))
        for item in os.environ.get("GLASSTORCH_FUZZ_INJECT", "").split(",")
        if item
    )
    for index in range(start, stop):
        out.write(json.dumps({"index": index, "event": "start"}) + "\n")
        out.flush()
        if inject.get(str(index)) == "crash":
            os.abort()
        if inject.get(str(index)) == "hang":
            time.sleep(3600)
        case = generate(seed, index)
        try:
            mine = run(case, glasstorch)
            theirs = run(case, torch) if torch is not None else None
            kind, detail = classify(case, mine, theirs)
            if mine.devices - {device}:
                kind, detail = "wrong-device", f"a result on {sorted(mine.devices)}, not {device}"
        except Exception:  # noqa: BLE001 - a bug in the fuzzer itself is a finding too
            kind, detail = "crash", "fuzzer error: " + traceback.format_exc(limit=3)
        out.write(json.dumps({"index": index, "event": "done", "class": kind, "detail": detail}))
        out.write("\n")
        out.flush()


# -------------------------------------------------------------- the supervisor
@dataclass
class Report:
    """Counts per outcome class and the findings (class, detail, case)."""

    seed: int
    tier: str
    calls: int
    device: str = "cpu"
    counts: Counter = field(default_factory=Counter)
    findings: list = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"fuzz: tier={self.tier} device={self.device} seed={self.seed} calls={self.calls} "
            f"in {self.seconds:.1f}s"
        ]
        for kind, count in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {kind:24s} {count}")
        return "\n".join(lines)

    def finding_text(self, finding) -> str:
        kind, detail, case = finding
        return f"--- {kind}: {detail}\n{case.describe()}"


def run_fuzz(
    calls: int,
    seed: int,
    tier: str,
    *,
    start: int = 0,
    use_torch: bool = True,
    case_timeout: float = 20.0,
    on_finding=None,
    device: str = "cpu",
) -> Report:
    """Run cases ``start .. start+calls`` in worker processes; classify every case.

    A worker that dies makes its current case a ``crash``; one that says nothing
    for ``case_timeout`` seconds is killed and its case is a ``hang``. Either way
    a new worker carries on from the next case. glasstorch's tensors are made on
    ``device`` (``"cuda"``: through ``GLASSTORCH_CUDA``'s driver, the simulator
    when it names none).
    """
    report = Report(seed, tier, calls, device)
    began = time.monotonic()
    env = dict(os.environ, GLASSTORCH_TIER=tier)
    if device != "cpu" and env.get("GLASSTORCH_CUDA", "auto") in ("auto", "off"):
        env["GLASSTORCH_CUDA"] = "simulator"
    next_index, stop = start, start + calls
    while next_index < stop:
        command = [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(seed)]
        command += ["--start", str(next_index), "--stop", str(stop)]
        if not use_torch:
            command.append("--no-torch")
        command += ["--device", device]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
        stderr_lines: list[str] = []
        threading.Thread(target=_collect, args=(process.stderr, stderr_lines), daemon=True).start()
        current = None
        # The first case waits for the imports too.
        timeout = case_timeout + 60.0
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                process.kill()
                process.wait()
                index = current if current is not None else next_index
                _record(
                    report, "hang", f"no answer in {case_timeout:.0f}s", seed, index, on_finding
                )
                next_index = index + 1
                break
            if line is None:  # end of output: the worker exited
                process.wait()
                if current is not None:
                    detail = f"worker died (exit status {process.returncode})"
                    tail = "".join(stderr_lines[-5:]).strip()
                    if tail:
                        detail += f": {tail[-300:]}"
                    _record(report, "crash", detail, seed, current, on_finding)
                    next_index = current + 1
                elif process.returncode != 0:
                    tail = "".join(stderr_lines[-20:])
                    raise RuntimeError(f"fuzz worker failed before its first case:\n{tail}")
                else:
                    next_index = stop
                break
            message = json.loads(line)
            timeout = case_timeout
            if message["event"] == "start":
                current = message["index"]
                continue
            current = None
            kind = message["class"]
            next_index = message["index"] + 1
            if kind in FINDINGS:
                _record(report, kind, message["detail"], seed, message["index"], on_finding)
            else:
                report.counts[kind] += 1
    report.seconds = time.monotonic() - began
    return report


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _collect(stream, into: list) -> None:
    for line in stream:
        into.append(line)


def _record(report: Report, kind: str, detail: str, seed: int, index: int, on_finding) -> None:
    case = generate(seed, index)
    finding = (kind, detail, case)
    if on_finding is not None and on_finding(finding):
        report.counts["known-finding"] += 1
        return
    report.counts[kind] += 1
    report.findings.append(finding)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="how many cases to run")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: random)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--tier", default=os.environ.get("GLASSTORCH_TIER", "reference"))
    parser.add_argument("--no-torch", action="store_true", help="run without the PyTorch oracle")
    parser.add_argument(
        "--device", default="cpu", help="where glasstorch's tensors live: cpu, cuda"
    )
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds allowed per case")
    parser.add_argument("--verbose", action="store_true", help="print every case's program")
    parser.add_argument("--show-known", action="store_true", help="report known findings too")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    seed = random.randrange(1 << 30) if args.seed is None else args.seed
    if args.worker:
        worker(seed, args.start, args.stop, use_torch=not args.no_torch, device=args.device)
        return 0
    if args.verbose:
        for index in range(args.start, args.start + args.calls):
            print(generate(seed, index).describe(), end="\n\n")
    known = None
    if not args.show_known:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from fuzz_findings import is_known

        known = is_known
    report = run_fuzz(
        args.calls,
        seed,
        args.tier,
        start=args.start,
        use_torch=not args.no_torch,
        case_timeout=args.timeout,
        on_finding=known,
        device=args.device,
    )
    for finding in report.findings:
        print(report.finding_text(finding), end="\n\n")
    print(report.summary())
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
