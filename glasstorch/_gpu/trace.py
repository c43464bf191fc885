"""Observers of the device's work: how the profiler sees kernels and copies.

The kernels call every observer in :data:`observers` for each kernel launch
and memory copy they queue (through :meth:`glasstorch._gpu.driver.Driver.traced`),
but only while the list is not empty, so an unobserved program pays one list
test per launch.
"""

from __future__ import annotations

#: Callables ``observer(kind, name, stream, start_event, end_event)``: ``kind``
#: is ``"kernel"`` or ``"memcpy"``, ``name`` the kernel's name (or
#: ``"Memcpy HtoD"``, ``"Memcpy DtoH"``, ``"Memcpy DtoD"``), ``stream`` the
#: glasstorch.cuda.Stream it ran on, and the two events (glasstorch.cuda.Event,
#: created with enable_timing=True) were recorded on that stream just before
#: and just after the work.
observers: list = []

#: Makes an Event that times (``glasstorch.cuda.Event(enable_timing=True)``;
#: registered by ``glasstorch.cuda`` when imported).
make_timing_event = None
