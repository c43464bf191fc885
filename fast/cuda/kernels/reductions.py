"""The reduce kernel on the device (``fast/cuda/reduce.cu``): sum, prod, amax,
amin, all and any over any dimensions, one block per output element with a
deterministic shared-memory tree."""

from __future__ import annotations

import numpy as np

from glasstorch._kernels import Strided
from glasstorch._shape import numel

from ..sources import op_codes
from ._views import row_threads
from .slices import SliceKernels

#: Contract op name -> reduce.cu's code (its ``GT_REDUCE_<NAME>`` lines), bound by name.
REDUCE_CODES = op_codes("reduce.cu", "GT_REDUCE")


class ReductionKernels(SliceKernels):
    """reduce on the device; softmax, arg_reduce and cumsum along one dimension
    come from :class:`~glasstorch.fast.cuda.kernels.slices.SliceKernels`."""

    def reduce(self, op: str, out: Strided, a: Strided, dims: tuple[int, ...]) -> None:
        """Reduce ``a`` over ``dims`` into the keepdim-shaped ``out``."""
        ndim = len(a.shape)
        n_out = numel(out.shape)
        if n_out == 0:
            return
        reduced = set(d % ndim for d in dims) if ndim else set()
        inner_shape = tuple(s if d in reduced else 1 for d, s in enumerate(a.shape))
        n_inner = numel(inner_shape)
        boolean = out.buffer.dtype == np.dtype(np.bool_) and a.buffer.dtype != np.dtype(np.bool_)
        if out.buffer.dtype != a.buffer.dtype and not boolean:
            raise TypeError(
                f"the CUDA reduce kernel cannot write {out.buffer.dtype} from {a.buffer.dtype}"
            )
        # Three views in meta: out's offsets, each row's start in a, the element in the row.
        meta = self.meta(
            out,
            Strided(a.buffer, out.shape, a.strides, a.offset),
            Strided(a.buffer, inner_shape, a.strides, a.offset),
        )
        name = f"reduce_{'bool_' if boolean else ''}{self.suffix(a)}"
        grid = min(n_out, self.max_grid)  # blocks loop over the outputs beyond it
        self.launch_grid(
            "reduce.cu",
            name,
            grid,
            row_threads(n_inner),
            REDUCE_CODES[op],
            self.ptr(out),
            self.ptr(a),
            meta,
            max(ndim, 1) if ndim else 0,
            n_out,
            n_inner,
        )
