"""The CuPy driver, checked where no GPU is needed: how it assembles a kernel's
source and options, and how it checks and converts a launch's arguments.

What needs a GPU (memory, streams, launches that run) is checked by the device
suite under ``GLASSTORCH_CUDA=cupy``. NVRTC compiling every ``.cu`` file with
the driver's options is in ``test_cuda_simulator.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from glasstorch.fast.cuda import sources
from glasstorch.fast.cuda.cupy_driver import NVRTC_OPTIONS, CupyDriver, _Kernel

pytestmark = pytest.mark.cuda


class _RecordingFunction:
    """Stands in for a compiled ``cupy.RawKernel``: remembers its last call."""

    def __init__(self):
        self.calls = []

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, args, shared_mem))


class _Stream:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _driver_without_gpu() -> CupyDriver:
    return object.__new__(CupyDriver)  # no CuPy, no device: launch needs neither


class _FakeStreamType:
    """Stands in for ``cupy.cuda.Stream``: records how each stream was made."""

    null = object()  # the legacy default stream

    def __init__(self, accepts_priority: bool = True):
        self.made = []
        self.accepts_priority = accepts_priority

    def __call__(self, **kwargs):
        if "priority" in kwargs and not self.accepts_priority:
            raise TypeError("unexpected keyword argument 'priority'")
        self.made.append(kwargs)
        return kwargs


def _driver_with_streams(stream_type: _FakeStreamType) -> CupyDriver:
    driver = _driver_without_gpu()
    driver.cupy = SimpleNamespace(cuda=SimpleNamespace(Stream=stream_type))
    return driver


@pytest.mark.parametrize("accepts_priority", [True, False])
def test_streams_are_non_blocking_as_pytorchs(accepts_priority):
    # A blocking stream would synchronize with the legacy default stream and
    # hide a missing wait_stream; PyTorch creates its streams non-blocking.
    stream_type = _FakeStreamType(accepts_priority)
    _driver_with_streams(stream_type).create_stream(priority=-1)
    assert stream_type.made[0]["non_blocking"] is True
    assert stream_type.made[0].get("priority", -1) == -1


def test_the_default_stream_is_the_one_legacy_stream_of_the_process():
    # PyTorch's default stream is handle 0, shared by every host thread (not
    # CuPy's per-thread default stream).
    stream_type = _FakeStreamType()
    assert _driver_with_streams(stream_type).default_stream() is _FakeStreamType.null


def test_nvrtc_options_include_what_creation_cu_needs():
    assert "--device-int128" in NVRTC_OPTIONS
    assert "--std=c++17" in NVRTC_OPTIONS


def test_launch_converts_pointers_and_scalars_by_parameter_type():
    function = _RecordingFunction()
    kernel = _Kernel(function, [("float *", "out"), ("const float *", "x"), ("long long", "n")])
    driver = _driver_without_gpu()
    driver.launch(kernel, (2, 1, 1), (128, 1, 1), (4096, 8192, 100), _Stream(), shared_mem=512)
    (grid, block, args, shared_mem) = function.calls[0]
    assert (grid, block, shared_mem) == ((2, 1, 1), (128, 1, 1), 512)
    assert [type(a) for a in args] == [np.uint64, np.uint64, np.int64]
    assert [int(a) for a in args] == [4096, 8192, 100]


def test_launch_passes_the_dynamic_shared_memory_size():
    function = _RecordingFunction()
    kernel = _Kernel(function, [("float *", "out")])
    _driver_without_gpu().launch(kernel, (1, 1, 1), (64, 1, 1), (4096,), _Stream(), shared_mem=256)
    assert function.calls[0][3] == 256


@pytest.mark.parametrize("args", [(1, 2), (1, 2, 3, 4)])
def test_launch_with_the_wrong_number_of_arguments_raises(args):
    function = _RecordingFunction()
    kernel = _Kernel(function, [("float *", "out"), ("const float *", "x"), ("int", "n")])
    with pytest.raises(TypeError, match=f"kernel takes 3 arguments but {len(args)} were given"):
        _driver_without_gpu().launch(kernel, (1, 1, 1), (32, 1, 1), args, _Stream())
    assert function.calls == []


def test_a_header_edit_changes_the_source_cupy_caches_by(tmp_path, monkeypatch):
    (tmp_path / "util.cuh").write_text("#define TILE 16\n")
    monkeypatch.setattr(sources, "CUDA_DIR", tmp_path)
    before = sources.headers_fingerprint()
    assert before.startswith("\n//") and before == sources.headers_fingerprint()
    (tmp_path / "util.cuh").write_text("#define TILE 32\n")
    assert sources.headers_fingerprint() != before
