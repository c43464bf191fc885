"""``glasstorch.amp``: automatic mixed precision, as programs spell it.

PyTorch's ``autocast`` runs chosen operations in a lower precision (float16 or
bfloat16) and ``GradScaler`` scales the loss so float16 gradients do not
underflow. glasstorch has no half-precision tensors, so:

* :class:`autocast` is a context manager (and decorator) that checks its
  arguments and then leaves every operation in its inputs' own dtype: a program
  using it computes in float32, the numbers PyTorch gives with
  ``enabled=False``.
* :class:`GradScaler` is the full algorithm (scale the loss, unscale the
  gradients, skip a step whose gradients overflowed, grow or shrink the
  scale), so a float32 program that uses one behaves as on PyTorch.
"""

from __future__ import annotations

import functools
import math

from glasstorch import _dtype

__all__ = ["GradScaler", "autocast"]

_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "xla", "hpu", "mtia", "meta")


class autocast:  # noqa: N801 - PyTorch's name
    """Mixed precision for a region of code; in glasstorch, every operation keeps its dtype.

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (the device whose operations would be cast).
        dtype: the lower precision PyTorch would use (``torch.bfloat16``, ``torch.float16``).
        enabled: whether autocasting is on in the region. Default: ``True``.
        cache_enabled: accepted for compatibility.

    Example::

        >>> with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        ...     y = model(x)   # computed in float32 by glasstorch
    """

    def __init__(
        self,
        device_type: str,
        dtype: _dtype.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else _dtype.bfloat16
        self._enabled = enabled

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self:
                return function(*args, **kwargs)

        return wrapper


class GradScaler:
    """Loss scaling against gradient underflow, with PyTorch's schedule.

    ``scale(loss)`` multiplies the loss by the current scale; ``step(optimizer)``
    divides the gradients by it (unless :meth:`unscale_` already did) and steps
    unless a gradient is infinite or NaN; ``update()`` multiplies the scale by
    ``backoff_factor`` after such a skipped step, and by ``growth_factor`` after
    ``growth_interval`` good steps in a row. With ``enabled=False`` every method
    passes its argument through.

    Args:
        device: the device type of the gradients. Default: ``"cuda"``.
        init_scale: the first scale. Default: ``2.0**16``.
        growth_factor: the scale's growth after enough good steps. Default: 2.0.
        backoff_factor: the scale's shrink after a bad step. Default: 0.5.
        growth_interval: good steps between two growths. Default: 2000.
        enabled: whether to scale at all. Default: ``True``.

    Example::

        >>> scaler = torch.amp.GradScaler()
        >>> scaler.scale(loss).backward()
        >>> scaler.step(optimizer)
        >>> scaler.update()
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._unscaled: dict[int, bool] = {}  # id(optimizer) -> found an inf/NaN
        self._found_inf = False

    def is_enabled(self) -> bool:
        """Whether this scaler scales."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, once per step, noting infinities."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        from glasstorch.autograd.grad_mode import no_grad

        found_inf = False
        inverse = 1.0 / self._scale
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inverse)
                    if not math.isfinite(p.grad.abs().max().item() if p.grad.numel() else 0.0):
                        found_inf = True
        self._unscaled[id(optimizer)] = found_inf

    def step(self, optimizer, *args, **kwargs):
        """Unscale if needed, then ``optimizer.step()`` unless a gradient overflowed."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            self._found_inf = True
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Adjust the scale for the next iteration (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif self._found_inf:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf = False
        self._unscaled.clear()

    def state_dict(self) -> dict:
        """The scale and schedule, for checkpoints (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` saved."""
        if not self._enabled:
            return
        self._scale = float(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]
