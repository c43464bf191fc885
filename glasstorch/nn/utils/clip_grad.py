"""Gradient clipping: keep one bad batch from throwing the parameters far away."""

from __future__ import annotations

import math
from collections.abc import Iterable

from glasstorch.autograd.grad_mode import no_grad
from glasstorch.ops.creation import tensor as _tensor
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor


def _as_list(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _norm(values: Tensor, norm_type: float) -> Tensor:
    """The ``norm_type``-norm of all elements of ``values`` (``inf``: the largest magnitude)."""
    magnitudes = values.abs()
    if norm_type == math.inf:
        return magnitudes.amax() if values.numel() else _tensor(0.0, dtype=values.dtype)
    if norm_type == -math.inf:
        return magnitudes.amin()
    if norm_type == 0:
        return (magnitudes != 0).to(values.dtype).sum()
    return (magnitudes**norm_type).sum() ** (1.0 / norm_type)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients together so that their joint norm is at most ``max_norm``.

    The joint norm is the norm of the vector of every gradient element (the
    norm of the per-tensor norms). Each gradient is multiplied in place by
    ``min(1, max_norm / (total_norm + 1e-6))``.

    Args:
        parameters: tensors (or one tensor) whose ``.grad`` is clipped.
        max_norm: the largest allowed norm.
        norm_type: which p-norm; ``float('inf')`` for the largest magnitude.
        error_if_nonfinite: raise if the total norm is NaN or infinite.

    Returns:
        The total norm before clipping, as a 0-d tensor.

    Example::

        >>> loss.backward()
        >>> nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        >>> optimizer.step()
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return _tensor(0.0)
    with no_grad():
        # Gradients may lie on several devices (a model split over CPU and GPU), as
        # PyTorch allows: the per-tensor norms meet on the first one's device.
        first = grads[0].device
        norms = stack([_norm(g.detach(), norm_type).to(first) for g in grads])
        total_norm = _norm(norms, norm_type)
        if error_if_nonfinite and not math.isfinite(total_norm.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        coefficient = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(coefficient.to(device=grad.device, dtype=grad.dtype))
    return total_norm


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for param in _as_list(parameters):
            if param.grad is not None:
                param.grad.clamp_(-clip_value, clip_value)
