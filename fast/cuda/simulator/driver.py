"""The CUDA simulator as a driver: the device interface over the simulator of this folder.

The simulator compiles the ``.cu`` files of ``fast/cuda`` with the host C++
compiler and runs them on the CPU with CUDA's execution model; each stream is
a worker thread, so the host really runs ahead of the "device". Device memory
is a fixed arena (``GLASSTORCH_SIM_MEMORY`` bytes, default 1 GiB), so running
out of it really happens. See ``docs/guide/gpu.md``.
"""

from __future__ import annotations

import os
from typing import Any

from glasstorch._gpu.driver import Driver
from glasstorch._gpu.sanitizer import ALL_CHECKS, check_mask

from .simulator import Event, Stream, get_simulator


class SimulatorDriver(Driver):
    """The device interface on the CUDA simulator (one simulated device)."""

    name = "simulator"

    #: The most blocks of a 1-D grid-stride launch. The simulator runs a stream's
    #: blocks one after another on one thread, so more blocks add only the cost
    #: of starting their threads (a coroutine each); 64 blocks of 256 threads
    #: keep every launch's threads few while still exercising a real grid.
    max_grid = 64

    def __init__(self) -> None:
        self.sim = get_simulator()
        self.ffi = self.sim.ffi
        self.lib = self.sim.lib
        self._functions: dict[tuple[str, str], Any] = {}

    # ---- the device
    def device_count(self) -> int:
        return 1

    def device_name(self, index: int = 0) -> str:
        return "glasstorch CUDA simulator"

    def mem_get_info(self) -> tuple[int, int]:
        return self.sim.mem_get_info()

    def capability(self) -> tuple[int, int]:
        return (9, 0)  # what the kernels are written for (sm_90)

    def multi_processor_count(self) -> int:
        return 1  # one block at a time per stream

    # ---- memory
    def malloc(self, nbytes: int) -> int:
        return self.sim.malloc(nbytes)

    def free(self, ptr: int) -> None:
        self.sim.free(ptr)

    def memcpy_h2d(self, dst: int, src: Any, stream: Any) -> None:
        self.sim.copy_from_host(dst, src, stream)

    def memcpy_d2h(self, dst: Any, src: int, stream: Any) -> None:
        stream.synchronize()
        target = self.ffi.from_buffer(dst, require_writable=True)
        self.ffi.memmove(target, self.ffi.cast("void *", src), len(target))

    def memcpy_d2d(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        cast = self.ffi.cast
        self.lib.gt_sim_memcpy_async(
            cast("void *", dst), cast("void *", src), nbytes, stream.handle
        )

    def memset(self, ptr: int, value: int, nbytes: int, stream: Any) -> None:
        self.sim.memset(ptr, value, nbytes, stream)

    # ---- kernels
    def get_function(self, source: str, name: str) -> Any:
        key = (source, name)
        function = self._functions.get(key)
        if function is None:
            function = self.sim.load(source).get_function(name)
            self._functions[key] = function
        return function

    def compile_source(
        self,
        code: str,
        options: tuple[str, ...],
        sim_check: str | None = None,
        filename: str = "raw_module.cu",
    ) -> Any:
        # The host compiler builds it with the simulator's header; of NVRTC's
        # options only --fmad=false means something there (no FMA contraction).
        # The sanitizer's checks: the user's `sim_check`, else GLASSTORCH_SIM_CHECK,
        # else all of them, a user's kernels' default (see glasstorch.cuda.RawModule).
        setting = sim_check if sim_check is not None else os.environ.get("GLASSTORCH_SIM_CHECK")
        checks = check_mask(setting, ALL_CHECKS)
        return self.sim.load_source(code, filename=filename, checks=checks, options=options)

    def launch(
        self,
        kernel: Any,
        grid: tuple,
        block: tuple,
        args: tuple,
        stream: Any,
        shared_mem: int = 0,
        extents: list[tuple[int, int]] | None = None,
    ) -> None:
        kernel(grid, block, args, stream=stream, shared_mem=shared_mem, extents=extents)

    def note_allocation(self, ptr: int, nbytes: int, stream: Any) -> None:
        """The caching allocator handed out a block for ``stream`` (for the sanitizer)."""
        self.sim.note_allocation(ptr, nbytes, stream)

    # ---- streams
    def create_stream(self, priority: int = 0) -> Any:
        return Stream(self.sim)  # the simulator has no priorities: accepted, not used

    def default_stream(self) -> Any:
        return self.sim.default_stream

    def stream_synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def stream_query(self, stream: Any) -> bool:
        return stream.query()

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        stream.wait_event(event)

    def synchronize(self) -> None:
        self.sim.synchronize()

    # ---- events
    def create_event(self, enable_timing: bool = False) -> Any:
        return Event(self.sim)  # every simulator event times, by the host clock

    def event_record(self, event: Any, stream: Any) -> None:
        event.record(stream)

    def event_query(self, event: Any) -> bool:
        return event.query()

    def event_synchronize(self, event: Any) -> None:
        event.synchronize()
        self.sim.check_error()

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end)
