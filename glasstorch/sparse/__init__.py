"""torch.sparse: products and sums of sparse COO tensors.

The sparse COO tensor itself, and how each of these is computed from dense
operations, is in :mod:`glasstorch.ops.sparse`.
"""

from __future__ import annotations

from glasstorch.ops.sparse import legacy_float_tensor as FloatTensor  # noqa: N812
from glasstorch.ops.sparse import sparse_mm as mm
from glasstorch.ops.sparse import sparse_sum as sum  # noqa: A004

__all__ = ["FloatTensor", "mm", "sum"]
