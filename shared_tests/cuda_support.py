"""Whether a CUDA driver is active in this test process, and the marker that says so.

The driver is chosen once, when glasstorch is imported, from ``GLASSTORCH_CUDA``
(``auto``, ``cupy``, ``simulator``, ``off``). ``make test`` runs the tests marked
``cuda`` once more with ``GLASSTORCH_CUDA=simulator``; in the ordinary run, without
a GPU, the device tests below are skipped with the reason shown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import glasstorch as gt

#: True when a CUDA driver (the simulator or a GPU through CuPy) runs in this process.
CUDA_ACTIVE: bool = gt.cuda.is_available()

#: Skip a test that needs a CUDA device, visibly, when none is active.
requires_cuda = pytest.mark.skipif(
    not CUDA_ACTIVE,
    reason="no CUDA driver in this process: run with GLASSTORCH_CUDA=simulator (make test does)",
)

#: Skip a test that checks the answers of a process without CUDA.
requires_no_cuda = pytest.mark.skipif(
    CUDA_ACTIVE, reason="a CUDA driver is active (GLASSTORCH_CUDA): this test checks its absence"
)


def driver_name() -> str | None:
    """``"simulator"`` or ``"cupy"`` (None without CUDA)."""
    from glasstorch._gpu import runtime as _runtime

    return None if _runtime.driver is None else _runtime.driver.name


# ------------------------------------------------------------ test kernels and devices

#: The kernels the simulator's tests run first (fill, a binary-op table, a
#: warp-shuffle sum, and ``spin``, which keeps a stream busy).
EXAMPLES_CU = Path(__file__).resolve().parent / "cuda" / "examples.cu"


def example_binary_ops() -> dict[str, int]:
    """The op codes of ``binary_f32`` in examples.cu, bound by name from its GT_BINARY_OPS."""
    from glasstorch.fast.cuda.sources import op_codes

    return op_codes(EXAMPLES_CU, "GT_BINARY_OPS")


class SimulatorDevice:
    """The simulator as a :class:`glasstorch._gpu.allocator.Device` for the caching
    allocator's tests (without the runtime: the tests number streams by hand).

    Streams are numbered as the allocator wants them: 0 is the default stream,
    :meth:`new_stream` hands out the next number.
    """

    def __init__(self, sim=None, index: int = 0) -> None:
        from glasstorch.fast.cuda.simulator.simulator import get_simulator

        self.sim = sim if sim is not None else get_simulator()
        self.index = index
        self.streams = {0: self.sim.default_stream}

    def new_stream(self) -> int:
        """Create a stream; return its number."""
        from glasstorch.fast.cuda.simulator.simulator import Stream

        number = len(self.streams)
        self.streams[number] = Stream(self.sim)
        return number

    def raw_malloc(self, nbytes: int) -> int:
        """Arena memory; raises DeviceOutOfMemory when the arena is full."""
        return self.sim.malloc(nbytes)

    def raw_free(self, ptr: int) -> None:
        """Give arena memory back."""
        self.sim.free(ptr)

    def new_event(self):
        """A simulator event."""
        from glasstorch.fast.cuda.simulator.simulator import Event

        return Event(self.sim)

    def record_event(self, event, stream: int) -> None:
        """Record ``event`` on stream number ``stream``."""
        event.record(self.streams[stream])

    def query_event(self, event) -> bool:
        """Whether ``event`` completed."""
        return event.query()

    def synchronize_event(self, event) -> None:
        """Wait for ``event``."""
        event.synchronize()

    def total_memory(self) -> int:
        """The arena's size."""
        return self.sim.mem_get_info()[1]

    def free_memory(self) -> int:
        """The arena's free bytes."""
        return self.sim.mem_get_info()[0]


# ------------------------------------------------------------ NVRTC without a GPU


def find_nvrtc() -> str | None:
    """The path of NVRTC's shared library (``libnvrtc.so``), or None.

    NVRTC is the run-time CUDA compiler CuPy compiles kernels with. It needs no
    GPU, so a CPU-only machine can check that every ``.cu`` file compiles as the
    CuPy driver compiles it. It is found in the ``nvidia-cuda-nvrtc-cu12`` wheel
    (``pip install nvidia-cuda-nvrtc-cu12``; ``.ci/run`` installs it), in
    ``$CUDA_PATH/lib64``, or on the system's library path.
    """
    import ctypes.util
    import glob
    import os
    import site

    roots = [*site.getsitepackages(), site.getusersitepackages()]
    patterns = [os.path.join(root, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*") for root in roots]
    if os.environ.get("CUDA_PATH"):
        patterns.append(os.path.join(os.environ["CUDA_PATH"], "lib64", "libnvrtc.so*"))
    for pattern in patterns:
        found = sorted(p for p in glob.glob(pattern) if ".alt." not in p)
        if found:
            return found[0]
    return ctypes.util.find_library("nvrtc")


def compile_with_nvrtc(library: str, source: str, name: str, options: list[str]) -> str | None:
    """Compile ``source`` to PTX with NVRTC; return None on success, else the log.

    Four calls of NVRTC's C API through ctypes: create a program, compile it
    with ``options``, read the log, destroy the program.
    """
    import ctypes

    nvrtc = ctypes.CDLL(library)
    program = ctypes.c_void_p()
    status = nvrtc.nvrtcCreateProgram(
        ctypes.byref(program), source.encode(), name.encode(), 0, None, None
    )
    if status != 0:
        return f"nvrtcCreateProgram failed with status {status}"
    try:
        encoded = [option.encode() for option in options]
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        status = nvrtc.nvrtcCompileProgram(program, len(encoded), array)
        if status == 0:
            return None
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        return log.value.decode(errors="replace") or f"NVRTC status {status}"
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
