"""Grad mode: whether operations record a graph for backward.

``no_grad``, ``enable_grad`` and ``set_grad_enabled`` work as context managers
and as decorators. The flag is per thread, as in PyTorch, so a DataLoader thread
turning grad mode off does not change it for the training loop.
"""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True  # each thread starts with grad mode on


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether new operations are recorded for backward (True unless switched off)."""
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradModeContext:
    """Shared machinery: enter sets a mode, exit restores the previous one."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)

    def __enter__(self):
        self._previous = is_grad_enabled()
        _set_enabled(self._mode)
        return self

    def __exit__(self, *exc_info) -> None:
        _set_enabled(self._previous)

    def __call__(self, fn):
        """Use the context as a decorator: ``@no_grad()`` runs ``fn`` inside it."""
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _GradModeContext(mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Context manager and decorator that turns off graph recording.

    Works as ``with torch.no_grad():``, ``@torch.no_grad()`` and ``@torch.no_grad``.

    Example::

        with torch.no_grad():
            w -= lr * w.grad   # not recorded
    """

    def __new__(cls, fn=None):
        if callable(fn):  # used as a bare decorator: @torch.no_grad
            return cls()(fn)
        return super().__new__(cls)

    def __init__(self, fn=None):
        super().__init__(False)


class enable_grad(_GradModeContext):  # noqa: N801
    """Context manager and decorator that turns graph recording back on."""

    def __new__(cls, fn=None):
        if callable(fn):
            return cls()(fn)
        return super().__new__(cls)

    def __init__(self, fn=None):
        super().__init__(True)


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Set grad mode to ``mode``: as a function call, a context manager or a decorator.

    Called on its own (``torch.set_grad_enabled(False)``) it takes effect at once.
    """

    def __init__(self, mode: bool):
        super().__init__(mode)
        self._previous = is_grad_enabled()
        _set_enabled(self._mode)

    def __enter__(self):
        return self  # the mode was already set by __init__

    def __call__(self, fn):
        _set_enabled(self._previous)  # as a decorator, creating it changes nothing
        return super().__call__(fn)


#: How many inference_mode blocks are open (is_inference_mode_enabled reads it).
_inference_depth = 0


class inference_mode(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Context manager and decorator for code that only evaluates: no graph is recorded.

    In glasstorch it is :class:`no_grad` (PyTorch also skips some bookkeeping
    for "inference tensors" and refuses to use them in autograd later; here the
    tensors made inside are ordinary tensors that simply have no history).

    Args:
        mode: ``False`` makes it do nothing. Default: ``True``.

    Example::

        >>> with torch.inference_mode():
        ...     y = model(x)
        >>> y.requires_grad
        False
    """

    def __new__(cls, mode=True):
        if callable(mode):  # used as a bare decorator: @torch.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._inference = bool(mode)
        super().__init__(False)

    def __enter__(self):
        global _inference_depth
        self._previous = is_grad_enabled()
        if self._inference:
            _inference_depth += 1
            return super().__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        global _inference_depth
        if self._inference:
            _inference_depth -= 1
            super().__exit__(*exc_info)

    def __call__(self, fn):
        """Use as a decorator: ``@torch.inference_mode()`` runs ``fn`` inside it."""
        mode = self._inference

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether code runs inside :class:`inference_mode`."""
    return _inference_depth > 0
