"""The operations: one short :class:`~glasstorch.autograd.Function` per differentiable op.

Each module holds one family. Every Function's ``forward`` allocates its output
and calls a kernel of the active tier; its ``backward`` is written with tensor
operations, so it is itself differentiable (``create_graph=True`` works).

* :mod:`~glasstorch.ops.core`: allocation, casting and broadcasting helpers;
* :mod:`~glasstorch.ops.pointwise`: arithmetic, unary math, comparisons, where;
* :mod:`~glasstorch.ops.reduction`: sum, mean, max, var, softmax, cumsum, ...;
* :mod:`~glasstorch.ops.views`: view, reshape, permute, expand, slicing, cat, ...;
* :mod:`~glasstorch.ops.indexing`: indexing with tensors and masks, gather, scatter;
* :mod:`~glasstorch.ops.linalg`: matmul and friends;
* :mod:`~glasstorch.ops.creation`: tensor, zeros, arange, rand, ...;
* :mod:`~glasstorch.ops.inplace`: how in-place ops update data, versions and history;
* :mod:`~glasstorch.ops.methods`: the table that attaches all of them to Tensor.
"""
