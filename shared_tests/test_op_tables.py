"""The op tables that must agree: the C and CUDA op codes and op lists, and _kernels.py's tuples.

The kernel contract names elementwise operations by strings (``UNARY_OPS``,
``BINARY_OPS``) and says which give a bool result (``BOOL_RESULT_OPS``). The C
tier numbers them in enums (``fast/csrc/elementwise.h``) and lists them, with
their result kind, in X macros (``fast/csrc/elementwise.c``) that generate the
loops and dispatch tables. These tests read the C sources and check that the
three agree, so an operation added in one place and forgotten in another fails
here, on either tier, before any kernel runs. The CUDA kernels' op tables
(X-macros in ``fast/cuda/elementwise.cu``, ``#define`` lines in ``reduce.cu``)
are read by name the same way, and must match the contract and the codes the
CUDA mixins send.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from glasstorch import _kernels

pytestmark = [
    pytest.mark.contract,
    pytest.mark.cpu_only("reads the C tier's op tables (source text), no tensors"),
]


def csrc() -> Path:
    """The C sources of the fast tier (shipped with the package)."""
    spec = importlib.util.find_spec("glasstorch.fast")
    return Path(next(iter(spec.submodule_search_locations))) / "csrc"


def enum_codes(kind: str) -> dict[str, int]:
    """``{"neg": 0, ...}`` from ``GT_<KIND>_<NAME> = <n>`` in elementwise.h (COUNT apart)."""
    text = (csrc() / "elementwise.h").read_text()
    return {
        name.lower(): int(value) for name, value in re.findall(rf"\bGT_{kind}_(\w+) = (\d+)", text)
    }


def x_list(macro: str) -> dict[str, str]:
    """``{"neg": "SAME", ...}``: the entries of the X macro ``macro`` in elementwise.c."""
    lines = (csrc() / "elementwise.c").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"#define {macro}(X,"))
    body = [lines[start]]
    while body[-1].rstrip().endswith("\\"):
        body.append(lines[start + len(body)])
    return {
        name.lower(): result
        for name, result in re.findall(r"X\((\w+), (SAME|BOOL)", " ".join(body))
    }


@pytest.mark.parametrize(
    "kind, names", [("UNARY", _kernels.UNARY_OPS), ("BINARY", _kernels.BINARY_OPS)]
)
def test_enum_codes_match_the_contract(kind, names):
    codes = enum_codes(kind)
    count = codes.pop("count")
    assert set(codes) == set(names)  # every op has a code, every code an op
    assert sorted(codes.values()) == list(range(count))  # they index the tables: no gaps


@pytest.mark.parametrize(
    "kind, names", [("UNARY", _kernels.UNARY_OPS), ("BINARY", _kernels.BINARY_OPS)]
)
def test_op_lists_generate_every_op_and_its_result_kind(kind, names):
    lists = {**x_list(f"{kind}_OPS"), **x_list(f"{kind}_INTEGER_OPS")}
    assert set(lists) == set(names)  # a loop is generated for every op
    bool_in_c = {name for name, result in lists.items() if result == "BOOL"}
    assert bool_in_c == set(names) & _kernels.BOOL_RESULT_OPS


def test_bool_result_ops_are_contract_ops():
    assert _kernels.BOOL_RESULT_OPS <= set(_kernels.UNARY_OPS) | set(_kernels.BINARY_OPS)


def test_the_compiled_codes_are_the_headers():
    try:
        from glasstorch.fast import elementwise
    except ImportError as error:  # the C extension is not built: nothing compiled to compare
        pytest.fail(f"the fast tier's extension could not be imported: {error}")
    assert elementwise.UNARY_CODES == {n: c for n, c in enum_codes("UNARY").items() if n != "count"}
    assert elementwise.BINARY_CODES == {
        n: c for n, c in enum_codes("BINARY").items() if n != "count"
    }


# ------------------------------------------------------------------ the CUDA op tables


def cuda_op_codes(source: str, table: str) -> dict[str, int]:
    """The op codes of a ``.cu`` op table, read by name (as the CUDA kernels bind them)."""
    from glasstorch.fast.cuda.sources import op_codes

    return op_codes(source, table)


@pytest.mark.parametrize(
    "source, table, names",
    [
        ("elementwise.cu", "GT_UNARY_OPS", _kernels.UNARY_OPS),
        ("elementwise.cu", "GT_BINARY_OPS", _kernels.BINARY_OPS),
        ("reduce.cu", "GT_REDUCE", _kernels.REDUCE_OPS),
    ],
)
def test_cuda_op_tables_match_the_contract(source, table, names):
    codes = cuda_op_codes(source, table)
    assert set(codes) == set(names)  # every op has a code, every code an op
    assert sorted(codes.values()) == list(range(len(codes)))  # a switch case each: no gaps


def test_the_cuda_kernels_bind_the_codes_of_the_sources():
    from glasstorch.fast.cuda.kernels import elementwise, reductions

    assert elementwise.UNARY_CODES == cuda_op_codes("elementwise.cu", "GT_UNARY_OPS")
    assert elementwise.BINARY_CODES == cuda_op_codes("elementwise.cu", "GT_BINARY_OPS")
    assert reductions.REDUCE_CODES == cuda_op_codes("reduce.cu", "GT_REDUCE")
