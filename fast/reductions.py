"""Reduction kernels of the fast tier: reduce, arg_reduce, cumsum, softmax.

Each method makes one call into ``fast/csrc/reductions.c``. The C file says how
the loops are laid out: careful (pairwise, double-accumulated) sums, the
stride-1 dimension innermost, OpenMP across outputs or across the blocks of one
long reduction, and a vectorised exp for the fused softmax.

``reduce`` passes no list of dimensions: C reads which dimensions are reduced
from the shapes (``out.shape[d] != a.shape[d]``), which is exact, since a
reduced dimension of size 1 reduces nothing.
"""

from __future__ import annotations

from glasstorch._kernels import REDUCE_OPS, Strided

from ._glue import lib, refused, view

#: Contract name -> C code, e.g. ``"sum" -> lib.GT_REDUCE_SUM``.
REDUCE_CODES: dict[str, int] = {
    name: getattr(lib, f"GT_REDUCE_{name.upper()}") for name in REDUCE_OPS
}


class ReductionKernels:
    """reduce, arg_reduce, cumsum and softmax, each one call into C."""

    def reduce(self, op: str, out: Strided, a: Strided, dims: tuple[int, ...]) -> None:
        """Reduce ``a`` over ``dims`` into the keepdim-shaped ``out``."""
        if lib.gt_reduce(REDUCE_CODES[op], view(out), view(a)):
            raise refused(op, out, a)

    def arg_reduce(self, op: str, values: Strided, indices: Strided, a: Strided, dim: int) -> None:
        """First maximum (``op="max"``) or minimum of ``a`` along ``dim``, NaN winning."""
        if lib.gt_arg_reduce(op == "max", view(values), view(indices), view(a), dim):
            raise refused(op, values, a)

    def cumsum(self, out: Strided, a: Strided, dim: int) -> None:
        """Running sum of ``a`` along ``dim``."""
        if lib.gt_cumsum(view(out), view(a), dim):
            raise refused("cumsum", out, a)

    def softmax(self, out: Strided, a: Strided, dim: int, log: bool) -> None:
        """Fused softmax (or log_softmax) of a float tensor along ``dim``."""
        if lib.gt_softmax(view(out), view(a), dim, log):
            raise refused("log_softmax" if log else "softmax", out, a)
