"""Queues whose ``put`` raises when an item cannot be sent, instead of losing it.

A :class:`multiprocessing.Queue`'s ``put`` only appends the item to a buffer;
a background "feeder" thread pickles it later and writes it to the pipe. When
the pickling fails (a non-leaf tensor that requires grad, a lambda), the
caller never hears of it: the feeder thread prints the error and drops the
item, and the consumer's ``get`` waits forever for it. (A CUDA tensor, which
glasstorch cannot share between processes, travels from the feeder as a
refusal that the consumer's ``get`` raises: see
:func:`~glasstorch.multiprocessing.reductions.reduce_tensor`.)

The :class:`Queue` and :class:`JoinableQueue` of :mod:`glasstorch.multiprocessing`
(and those of the contexts its :func:`get_context` returns) check the item in
``put`` first, in the caller's thread, with
:func:`~glasstorch.multiprocessing.reductions.check_can_send`: an item that
cannot be sent raises there, and nothing is queued. Everything else is
:mod:`multiprocessing`'s own queue, which pickles the item later as before.
The check walks the item once more than a plain queue does, but never a
tensor's elements (a tensor is checked, not pickled).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import context as _context
from multiprocessing import queues as _queues

from glasstorch.multiprocessing.reductions import check_can_send


# ---------------------------------------------------------------- the queues
class _ChecksItemsInPut:
    """Mixed into a ``multiprocessing`` queue: ``put`` checks the item first, in
    the caller's thread, and raises if it cannot be sent."""

    def __init__(self, maxsize: int = 0, *, ctx=None) -> None:
        super().__init__(maxsize, ctx=ctx if ctx is not None else multiprocessing.get_context())

    def put(self, obj, block: bool = True, timeout: float | None = None) -> None:
        check_can_send(obj)
        super().put(obj, block, timeout)


class Queue(_ChecksItemsInPut, _queues.Queue):
    """``multiprocessing.Queue`` whose ``put`` raises if the item cannot be sent.

    A CUDA tensor, say, raises a ``TypeError`` in ``put``, in the caller.
    """


class JoinableQueue(_ChecksItemsInPut, _queues.JoinableQueue):
    """``multiprocessing.JoinableQueue`` whose ``put`` raises if the item cannot be sent."""


# -------------------------------------------------------------- the contexts
class QueuesCheckInPut:
    """Mixed into a ``multiprocessing`` context: its queues are the ones above."""

    def Queue(self, maxsize: int = 0) -> Queue:  # noqa: N802 - multiprocessing's name
        return Queue(maxsize, ctx=self.get_context())

    def JoinableQueue(self, maxsize: int = 0) -> JoinableQueue:  # noqa: N802
        return JoinableQueue(maxsize, ctx=self.get_context())


class SpawnContext(QueuesCheckInPut, _context.SpawnContext):
    """The ``"spawn"`` context, with queues that check items in ``put``."""


_CONTEXTS: dict[str, _context.BaseContext] = {"spawn": SpawnContext()}

if sys.platform != "win32":

    class ForkContext(QueuesCheckInPut, _context.ForkContext):
        """The ``"fork"`` context, with queues that check items in ``put``."""

    class ForkServerContext(QueuesCheckInPut, _context.ForkServerContext):
        """The ``"forkserver"`` context, with queues that check items in ``put``."""

    _CONTEXTS["fork"] = ForkContext()
    _CONTEXTS["forkserver"] = ForkServerContext()


def get_context(method: str | None = None) -> _context.BaseContext:
    """``multiprocessing.get_context``: the context of a start method (the default one
    for ``None``), whose ``Queue`` and ``JoinableQueue`` check each item in ``put``."""
    standard = multiprocessing.get_context(method)  # checks the method, fixes the default
    return _CONTEXTS.get(standard.get_start_method(), standard)


__all__ = ["JoinableQueue", "Queue", "get_context"]
