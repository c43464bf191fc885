"""The CUDA tier's kernels: the kernel contract on a GPU (or the CUDA simulator).

Mirrors the fast tier's layout: one mixin per kernel family
(:data:`glasstorch._kernels.KERNEL_FAMILIES`, the same names in every tier),
each binding contract methods to the ``.cu`` kernels of ``fast/cuda/<family>.cu``,
all on top of :class:`~glasstorch.fast.cuda.kernels._base.CudaKernelsBase`
(the launch helpers, which take the stream, device memory and trace hooks from
the driver). :data:`CudaKernels` is composed by :func:`glasstorch._kernels.compose`,
as every tier is; :func:`make_kernels` makes it over a driver. The dispatcher
(:mod:`glasstorch._dispatch`) sends a contract call here when its tensors live
on the GPU.
"""

from __future__ import annotations

from glasstorch._kernels import compose

from ._base import CudaKernelsBase
from .conv import ConvKernels
from .creation import CreationKernels
from .elementwise import ElementwiseKernels
from .indexing import IndexingKernels
from .linalg import LinalgKernels
from .nn import NNKernels
from .optim import OptimKernels
from .reductions import ReductionKernels
from .rng import RandomKernels
from .rnn import LSTMCellKernels
from .sorting import SortingKernels
from .threads import ThreadKernels
from .transformer import TransformerKernels

#: The whole contract on the device, one family of kernels per base class.
CudaKernels = compose(
    "cuda",
    {
        "creation": CreationKernels,
        "elementwise": ElementwiseKernels,
        "reductions": ReductionKernels,
        "linalg": LinalgKernels,
        "indexing": IndexingKernels,
        "nn": NNKernels,
        "rnn": LSTMCellKernels,
        "transformer": TransformerKernels,
        "conv": ConvKernels,
        "optim": OptimKernels,
        "random": RandomKernels,
        "sorting": SortingKernels,
        "threads": ThreadKernels,
    },
    base=CudaKernelsBase,
)
CudaKernels.__module__ = __name__


def make_kernels(driver, host) -> CudaKernels:
    """The CUDA kernels over ``driver`` (a :class:`glasstorch._gpu.driver.Driver`);
    ``host`` is the CPU tier's kernel object (the host side of copies)."""
    return CudaKernels(driver, host)
