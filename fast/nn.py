"""Neural-network kernels of the fast tier: the fused cross-entropy and its gradient."""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._glue import lib, optional_view, refused, view


class NNKernels:
    """cross_entropy and cross_entropy_backward, one call into C each."""

    def cross_entropy(
        self,
        losses: Strided,
        row_weights: Strided,
        totals: Strided,
        log_probs: Strided,
        logits: Strided,
        target: Strided,
        weight: Strided | None,
        ignore_index: int,
    ) -> int:
        """``log_probs = log_softmax(logits, 1)``; ``losses[i] = -w[t_i] * log_probs[i, t_i]``."""
        status = lib.gt_cross_entropy(
            view(losses),
            view(row_weights),
            view(totals),
            view(log_probs),
            view(logits),
            view(target),
            optional_view(weight),
            ignore_index,
        )
        if status == -2:
            raise refused("cross_entropy", logits, target)
        if status == -3:
            raise MemoryError("cross_entropy: no memory for the copy of the labels")
        return status

    def cross_entropy_backward(
        self,
        grad_logits: Strided,
        log_probs: Strided,
        target: Strided,
        weight: Strided | None,
        grad_losses: Strided,
        ignore_index: int,
    ) -> None:
        """``grad_logits[i] = grad_losses[i] * w[t_i] * (softmax(row i) - one_hot(t_i))``."""
        if lib.gt_cross_entropy_backward(
            view(grad_logits),
            view(log_probs),
            view(target),
            optional_view(weight),
            view(grad_losses),
            ignore_index,
        ):
            raise refused("cross_entropy_backward", log_probs, grad_losses, target)
