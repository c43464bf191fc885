"""Neural-network kernels of the fast tier: the fused cross-entropy.

One call into ``fast/csrc/nn.c``, which computes log_softmax and the negative
log-likelihood in one pass over each row of logits.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, view


class NNKernels:
    """cross_entropy, one call into C."""

    def cross_entropy(
        self,
        losses: Strided,
        log_probs: Strided,
        logits: Strided,
        target: Strided,
        ignore_index: int,
    ) -> None:
        """``log_probs = log_softmax(logits, 1)``; ``losses[i] = -log_probs[i, target[i]]``."""
        if lib.gt_cross_entropy(
            view(losses), view(log_probs), view(logits), view(target), ignore_index
        ):
            dtypes = f"{logits.buffer.dtype}, {target.buffer.dtype}"
            raise TypeError(
                f"the fast tier's cross_entropy kernel does not support dtypes ({dtypes})"
            )
