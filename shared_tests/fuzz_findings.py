"""The fuzzer's catalogue of known findings: classes of cases whose disagreement with
PyTorch is understood and owned by work not yet landed.

:func:`is_known` is the filter that ``test_fuzz_differential.py`` and
``python shared_tests/fuzz_driver.py`` apply to each finding; a finding that
matches no entry fails the test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """A class of findings: outcome ``kind``, ``op`` and ``detail`` patterns (``re.search``)."""

    owner: str
    kind: str
    op: str
    detail: str
    example: str

    def matches(self, kind: str, op: str, detail: str, program: str) -> bool:
        return (
            kind == self.kind
            and re.search(self.op, op) is not None
            and re.search(self.detail, detail + "\n" + program) is not None
        )


#: Findings whose fix has not landed; each matches a class of cases. The owner names
#: where the fix belongs ("safety": views/creation/indexing kernels, "answers":
#: pointwise/reduction numerics and overlapping in-place writes). Remove an entry when
#: its fix has landed.
KNOWN_FINDINGS: list[Known] = [
    Known(
        "safety: negative indices in gather/scatter/index_select/index_add",
        "torch-error-only",
        "^(indexing|backward)/.*(gather|scatter|index_select|index_add)",
        "out of bounds|out of range in self|INDICES element is out of DATA bounds",
        "x0 = T.tensor([-6, 2, -4], dtype=T.int64).reshape((1, 3)); x1 = T.tensor([0, -1, 0], dtype=T.int64).reshape((3,)); x2 = T.tensor([5, -1, -4, -1, -6, -1, -3, 3, 1], dtype=T.int64).reshape((3, 3)); T.index_add(x0, 0, x1, x2)",
    ),
    Known(
        "safety: index bounds error type/wording (IndexError vs PyTorch's RuntimeError)",
        "mismatch-error-type",
        "^(indexing|bad)/",
        "glasstorch IndexError: index .*(out of bounds|out of range in self).*; torch",
        "x0 = T.tensor([], dtype=T.float32).reshape((0, 2, 3, 1))[::2]; x1 = T.tensor([3, -1, -1], dtype=T.int64).reshape((3,)); T.index_select(x0, -4, x1)",
    ),
    Known(
        "safety: index bounds (index_add/setitem/getitem)",
        "glasstorch-error-only",
        "^(indexing|view)/(index_add|setitem|getitem)",
        "IndexError: index -?\\d+ is out of bounds",
        "x0 = T.tensor([-1, 3, 3, 5, 6, 2, -6, -5, 4, 3, 6, 4, -2, -4, -3, 5, 6, 2, -6, -5, -2, -6, 3, 2, 6], dtype=T.int32).reshape((5, 1, 1, 5)).expand((5, 1, 0, 5)); x1 = T.tensor([3, 5, 0], dtype=T.int64).reshape((3,)); x2 = T.tensor([], dtype=T.int32).reshape((3, 1, 0, 5)); T.index_add(x0, -4, x1, x2)",
    ),
    Known(
        "safety: masked_fill broadcasts the mask against the input (PyTorch's out-of-place masked_fill)",
        "glasstorch-error-only",
        "^indexing/masked_fill",
        "does not broadcast to the input's shape",
        "x0 = T.tensor([-2.534], dtype=T.float64).reshape(()); x1 = T.tensor([False], dtype=T.bool).reshape((1,)); T.masked_fill(x0, x1, 0.0)",
    ),
    Known(
        "safety: huge sizes: numel overflow / allocation failure must be RuntimeError",
        "mismatch-error-type",
        "^(creation|bad)/",
        "glasstorch (MemoryError|ValueError|OverflowError).*; torch RuntimeError",
        "x0 = T.tensor([1, 8, 6, 9, 5, 2], dtype=T.uint8).reshape((3, 2)); T.empty((1 << 62, 4))",
    ),
    Known(
        "safety: integer overflow at creation (uint8/bool ranges, inf into an integer)",
        "torch-error-only",
        "^creation/",
        "out of bounds for|without overflow",
        "T.randint(-2, 16, (1, 3), dtype=T.uint8)",
    ),
    Known(
        "answers: integer division by zero",
        "glasstorch-error-only",
        "^binary/(floor_divide|remainder)",
        "ZeroDivisionError",
        "x0 = T.tensor([], dtype=T.bool).reshape((0, 2, 1)); (x0 // 0)",
    ),
    Known(
        "answers: integer div(rounding_mode=...) by zero (PyTorch raises ZeroDivisionError)",
        "torch-error-only",
        "^binary/div",
        "ZeroDivisionError",
        "x0 = T.tensor([7, 7, 2, 1, 1, 0, 5, 5], dtype=T.uint8).reshape((4, 2)); x0.div(False, rounding_mode='trunc')",
    ),
    Known(
        "safety: scatter of NaN/inf into an integer tensor (PyTorch converts it)",
        "glasstorch-error-only",
        "^indexing/scatter",
        "cannot convert float",
        "x0 = T.tensor([-4, 4], dtype=T.int64).reshape((2,)); x1 = T.tensor([], dtype=T.int64).reshape((0,)); x2 = T.tensor([], dtype=T.int64).reshape((0,)); T.scatter(x0, 0, x1, float('nan'))",
    ),
    Known(
        "safety: scatter of NaN/inf into an integer tensor: PyTorch's RuntimeError",
        "mismatch-error-type",
        "^indexing/scatter",
        "glasstorch (OverflowError|ValueError): cannot convert float",
        "x0 = T.tensor([3, -4], dtype=T.int32).reshape((2,)); x1 = T.tensor([0], dtype=T.int64)"
        ".reshape((1,)); T.scatter(x0, 0, x1, float('-inf'))",
    ),
    Known(
        "answers: remainder of bool / by zero: PyTorch's NotImplementedError",
        "mismatch-error-type",
        "^binary/remainder",
        "",
        "x0 = T.tensor([False, True], dtype=T.bool).reshape((2,)); x1 = T.tensor([False], dtype=T.bool).reshape((1,)); x0.remainder(x1)",
    ),
    Known(
        "answers: remainder/pow of bool are refused by PyTorch",
        "torch-error-only",
        "^binary/(remainder|pow)",
        "not implemented for",
        "x0 = T.tensor([True, False, True, True, True, True, False, False, True, False, False, False, False, False, False, True, True, True, False, True, False, True, True, True], dtype=T.bool).reshape((4, 3, 1, 2)); x1 = T.tensor([True], dtype=T.bool).reshape((1, 1)).expand((1, 1)); T.pow(x0, x1)",
    ),
    Known(
        "answers: integer pow with a negative tensor exponent (PyTorch computes it)",
        "glasstorch-error-only",
        "^binary/pow",
        "Integers to negative integer powers",
        "x0 = T.tensor([-4, -1, -1, -3, -5, -2, 0, -3, 1, 4, 6, 4, 4, 0, -3, -4, -2, -3, 0, 5, -1, -6, -1, -2, 3, -2, 0, -4, 0, 4, 6, -6, 4, -6, -6, 3, -1, -6, 4, 4], dtype=T.int64).reshape((5, 2, 4)); x1 = T.tensor([-1, 5, -5, -2], dtype=T.int64).reshape((1, 4)); x0.pow(x1)",
    ),
    Known(
        "answers: div with rounding_mode of bool is refused by PyTorch",
        "torch-error-only",
        "^binary/div",
        "not implemented for 'Bool'",
        "T.tensor([True, False]).div(T.tensor([True]), rounding_mode='trunc')",
    ),
    Known(
        "answers: div rounding_mode error is RuntimeError in PyTorch",
        "mismatch-error-type",
        "^binary/div",
        "rounding_mode",
        "x0 = T.tensor([], dtype=T.int32).reshape((2, 0)); x0.div(10, rounding_mode='nearest')",
    ),
    Known(
        "answers: square of bool",
        "mismatch-value",
        "^unary/square",
        "dtype bool",
        "x0 = T.tensor([False, True, True], dtype=T.bool).reshape((3,)); x0.square()",
    ),
    Known(
        "answers: var/std of empty",
        "mismatch-value",
        "^reduction/(var|std)",
        "NaN positions",
        "x0 = T.tensor([], dtype=T.float64).reshape((1, 0)); T.std(x0)",
    ),
    Known(
        "answers: amax/amin of empty with dims: check order and type",
        "mismatch-error-type",
        "^reduction/am(ax|in)",
        "",
        "x0 = T.tensor([], dtype=T.bool).reshape((0, 1)); T.amin(x0, [], keepdim=False)",
    ),
    Known(
        "answers: logsumexp/all/any with dim=()",
        "torch-error-only",
        "^reduction/",
        "doesn't match the broadcast shape",
        "x0 = T.tensor([2.0, 0.657], dtype=T.float64).reshape((2,)); T.logsumexp(x0, (), keepdim=False)",
    ),
    Known(
        "answers: where with a uint8 condition (PyTorch accepts it)",
        "glasstorch-error-only",
        "^bad/",
        "where expected condition to be a boolean tensor",
        "x0 = T.tensor([5, 5, 6, 8, 11, 4, 9, 1, 1, 7, 1, 0, 8, 0, 0], dtype=T.uint8).reshape((5, 3)); T.where(x0, 1.0, 0.0)",
    ),
    Known(
        "answers: bmm/matmul of mixed dtypes with an empty operand (PyTorch accepts)",
        "glasstorch-error-only",
        "^matmul/",
        "to have the same dtype",
        "x0 = T.tensor([], dtype=T.float64).reshape((0, 1, 2)); x1 = T.tensor([], dtype=T.float32).reshape((0, 2, 4)); T.bmm(x0, x1)",
    ),
    Known(
        "answers: overlapping in-place writes (setitem/masked_fill_ on an expanded tensor)",
        "glasstorch-error-only",
        "^(indexing|binary|unary)/",
        "more than one element of the written-to tensor",
        "x0 = T.tensor([-1.296], dtype=T.float64).reshape((1, 1, 1)).expand((1, 1, 2)); x0[[0, 0], ...] = -0.746; x0",
    ),
    Known(
        "answers: overlapping in-place writes",
        "torch-error-only",
        "^(indexing|binary|unary)/",
        "more than one element of the written-to tensor",
        "x0 = T.tensor([-1.948], dtype=T.float32).reshape((1, 1)).expand((5, 2)); x0[...] = float('nan'); x0",
    ),
]


def is_known(finding) -> bool:
    """Whether a fuzz finding ``(kind, detail, case)`` is in :data:`KNOWN_FINDINGS`."""
    kind, detail, case = finding
    return any(k.matches(kind, case.op, detail, case.program()) for k in KNOWN_FINDINGS)
