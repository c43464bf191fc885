"""Moving a tensor between devices: ``Tensor.to(device)``, ``.cuda()``, ``.cpu()``.

A move is a copy into new storage on the other device, and a differentiable
operation: the gradient of ``x.to("cuda")`` with respect to ``x`` is the
incoming gradient moved back to ``x``'s device, so a model's parameters on
the CPU can receive gradients computed on the GPU, as in PyTorch.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch.autograd.function import Function
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


def copy_to(tensor: Tensor, target, non_blocking: bool = False) -> Tensor:
    """A copy of ``tensor`` on ``target``, contiguous, without autograd.

    The copy kernel moves the data (host-to-device or device-to-host). A copy
    to the host waits for the device, so its values are ready when it returns;
    a copy to the device returns once queued.
    """
    out = empty_tensor(tensor.shape, tensor.dtype, device=target)
    kernels.copy(out._strided(), tensor._strided())
    if tensor._storage.pinned and non_blocking:
        pass  # pinned memory would let the copy overlap; queued either way
    return out


class ToDevice(Function):
    """``tensor.to(device)``; backward moves the gradient back."""

    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, tensor: Tensor, target, non_blocking: bool) -> Tensor:
        ctx.source = tensor.device
        return copy_to(tensor, target, non_blocking)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return copy_to(grad, ctx.source), None, None


def to_device(tensor: Tensor, target, non_blocking: bool = False) -> Tensor:
    """``tensor`` on device ``target`` (itself when it is there already)."""
    if tensor.device == target:
        return tensor
    return ToDevice.apply(tensor, target, non_blocking)
