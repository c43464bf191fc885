"""Neural-network kernels of the CUDA tier: the fused cross-entropy and its gradient
(``fast/cuda/nn.cu``).

The forward pass checks every label on the device first and reads the check's
report back (a device-to-host copy, so it waits for the device): the contract
returns the first bad row, and no row is computed through a bad label.
"""

from __future__ import annotations

from glasstorch._kernels import Strided

from ._views import MAX_ROW_BLOCKS, row_threads


def _step(view: Strided | None) -> int:
    """Stride of a 1-D view (0 for None)."""
    return view.strides[0] if view is not None else 0


class NNKernels:
    """cross_entropy and cross_entropy_backward."""

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
        """``log_probs = log_softmax(logits, 1)``; ``losses[i] = -w[t_i] * log_probs[i, t_i]``.

        Returns -1, or the first row whose label is out of range.
        """
        rows, classes = logits.shape
        sfx = self.suffix(logits)
        if rows:
            labels = self.scratch_int64(rows)
            report = self.scratch_int64(2)
            self.launch(
                "nn.cu", "cross_entropy_labels", rows, labels.ptr, self.ptr(target),
                _step(target), rows, classes, ignore_index, report.ptr,
            )  # fmt: skip
            bad = self.read_int64(report)[0]
            if bad != self.SENTINEL:
                return bad
            self.launch_grid(
                "nn.cu", f"cross_entropy_rows_{sfx}", min(rows, MAX_ROW_BLOCKS),
                row_threads(classes), self.ptr(losses), _step(losses), self.ptr(row_weights),
                _step(row_weights), self.ptr(log_probs), *log_probs.strides, self.ptr(logits),
                *logits.strides, labels.ptr, self.ptr(weight) if weight is not None else 0,
                _step(weight), rows, classes, ignore_index,
            )  # fmt: skip
        self.launch_grid(
            "nn.cu", f"cross_entropy_totals_{sfx}", 1, 1, self.ptr(totals), _step(totals),
            self.ptr(losses), _step(losses), self.ptr(row_weights), _step(row_weights), rows,
        )  # fmt: skip
        return -1

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
        rows, classes = log_probs.shape
        if rows == 0 or classes == 0:
            return
        self.launch_grid(
            "nn.cu", f"cross_entropy_backward_{self.suffix(log_probs)}",
            min(rows, MAX_ROW_BLOCKS), row_threads(classes), self.ptr(grad_logits),
            *grad_logits.strides, self.ptr(log_probs), *log_probs.strides, self.ptr(target),
            _step(target), self.ptr(weight) if weight is not None else 0, _step(weight),
            self.ptr(grad_losses), _step(grad_losses), rows, classes, ignore_index,
        )  # fmt: skip
