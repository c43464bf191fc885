"""The reference tier: every kernel of the contract as plain, readable Python loops.

Select it with ``GLASSTORCH_TIER=reference``. It is the executable definition of
:mod:`glasstorch._kernels`: when the fast tier and this one disagree, this one is
right. NumPy appears only as the storage buffer; no kernel calls NumPy's math.

The kernels are grouped by family, one module each:

* :mod:`~glasstorch.reference.strided`: the index math every kernel shares;
* :mod:`~glasstorch.reference.elementwise`: fill, copy, unary, binary, where;
* :mod:`~glasstorch.reference.reductions`: reduce, arg_reduce, cumsum, softmax;
* :mod:`~glasstorch.reference.linalg`: matmul;
* :mod:`~glasstorch.reference.indexing`: gather, scatter, index_select, index_put, nonzero;
* :mod:`~glasstorch.reference.creation`: allocate, arange, linspace;
* :mod:`~glasstorch.reference.nn`: the fused cross-entropy and its gradient, and
  the LSTM cell (the ``rnn`` family);
* :mod:`~glasstorch.reference.transformer`: LayerNorm, GELU and the attention softmax;
* :mod:`~glasstorch.reference.conv`: convolution, pooling and batch normalisation;
* :mod:`~glasstorch.reference.optim`: one fused update per optimizer;
* :mod:`~glasstorch.reference.random`: Philox 4x32-10 and the random kernels;
* :mod:`~glasstorch.reference.sorting`: a stable sort of each slice;
* :mod:`~glasstorch.reference.threads`: the thread count (always one thread here).

:func:`glasstorch._kernels.compose` makes them one class, as it does every tier.
"""

from glasstorch._kernels import compose

from .conv import ConvKernels
from .creation import CreationKernels
from .elementwise import ElementwiseKernels
from .indexing import IndexingKernels
from .linalg import LinalgKernels
from .nn import LSTMCellKernels, NNKernels
from .optim import OptimKernels
from .random import RandomKernels
from .reductions import ReductionKernels
from .sorting import SortingKernels
from .threads import ThreadKernels
from .transformer import TransformerKernels

#: The whole contract, one family of kernels per base class.
ReferenceKernels = compose(
    "reference",
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
)
ReferenceKernels.__module__ = __name__


def make_kernels():
    """The reference tier's kernel object (what ``glasstorch._tier`` loads)."""
    return ReferenceKernels()
