"""``torch.autograd.profiler``: PyTorch's older home of the profiler's pieces.

Programs written for it mostly use :class:`record_function`, which is the very
class of :mod:`glasstorch.profiler`; the profiler itself is
:class:`glasstorch.profiler.profile`.
"""

from glasstorch.profiler import EventList, FunctionEvent, FunctionEventAvg, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "record_function"]
