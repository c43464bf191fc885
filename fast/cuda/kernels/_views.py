"""Helpers the CUDA mixins of this package share: views as kernel arguments.

Every kernel of ``fast/cuda/gt_cuda_util.cuh``'s families receives a view as a
pointer to its element 0 (``self.ptr``) and, when it walks the view, a
``(meta, ndim)`` pair: the device address of the shapes and strides of the
views it walks (``self.meta``) and their common number of dimensions. A view
that is contiguous in row-major order needs no walk: ``(0, 0)`` tells the
kernel to use the linear index as the position (its contiguous fast path).
"""

from __future__ import annotations

from glasstorch._kernels import Strided
from glasstorch._shape import is_contiguous


def walk(kernels, *views: Strided) -> tuple[int, int]:
    """``(meta, ndim)`` for a kernel walking ``views`` in row-major order of their shape.

    ``(0, 0)`` when every view is contiguous (or 0-d): the kernels then index
    by the linear index alone. The views must share a number of dimensions.
    """
    ndim = len(views[0].shape)
    # is_contiguous is cached by (shape, strides): this runs on every launch.
    if ndim == 0 or all(is_contiguous(v.shape, v.strides) for v in views):
        return 0, 0
    return kernels.meta(*views), ndim


def without_dim(view: Strided, dim: int) -> Strided:
    """``view`` with dimension ``dim`` left out: walking it visits the start of each
    1-D slice along ``dim``."""
    return view._replace(
        shape=view.shape[:dim] + view.shape[dim + 1 :],
        strides=view.strides[:dim] + view.strides[dim + 1 :],
    )


def slices_walk(kernels, dim: int, *views: Strided) -> tuple[int, int]:
    """``(meta, ndim)`` addressing the start of every slice along ``dim`` of ``views``.

    Never the contiguous shortcut: slice starts are not consecutive elements.
    ``(0, 0)`` only when the views are 1-D (one slice, starting at element 0).
    """
    reduced = [without_dim(v, dim) for v in views]
    if len(reduced[0].shape) == 0:
        return 0, 0
    return kernels.meta(*reduced), len(reduced[0].shape)


def row_threads(length: int) -> int:
    """Threads for a block that shares one row of ``length`` elements: a power of
    two from 32 (a warp) to 256, no more than the row can keep busy."""
    threads = 32
    while threads < length and threads < 256:
        threads *= 2
    return threads


#: Most blocks a launch of one block per row uses; more rows loop (block-stride).
MAX_ROW_BLOCKS = 4096
