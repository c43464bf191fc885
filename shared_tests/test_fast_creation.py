"""The fast tier's creation kernels (allocate, arange, linspace) against the reference tier's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from kernel_views import ALL_DTYPES, contiguous, copy_view, kernels_under_test

fast_creation = pytest.importorskip(
    "glasstorch.fast.creation", reason="the fast tier's C extension is not built"
)

from glasstorch.reference import ReferenceKernels  # noqa: E402

pytestmark = [pytest.mark.contract, pytest.mark.creation]

FAST = kernels_under_test(fast_creation.CreationKernels())
REFERENCE = ReferenceKernels()


def strided_1d(n: int, dtype: str, step: int):
    """A 1-D view of n elements, every ``step``-th of a buffer, at offset 1."""
    view = contiguous((n * step + 2,), dtype)
    return view._replace(shape=(n,), strides=(step,), offset=1)


def assert_identical(kernel: str, out, *args) -> None:
    fast_out, reference_out = copy_view(out), copy_view(out)
    getattr(FAST, kernel)(fast_out, *args)
    getattr(REFERENCE, kernel)(reference_out, *args)
    np.testing.assert_array_equal(
        fast_out.buffer.view(np.uint8), reference_out.buffer.view(np.uint8)
    )


numbers = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -3, 2**62, -(2**63)]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0.1, -0.25, 1e-3, 3.7]),
)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@given(n=st.one_of(st.integers(0, 50), st.just(40_000)), step=st.integers(1, 2),
       start=numbers, delta=numbers)  # fmt: skip
@example(n=40_000, step=1, start=0, delta=230_590_065_673_012)  # past 2**63: exact, then rounded
def test_arange_matches_reference(dtype, n, step, start, delta, device):
    if np.dtype(dtype).kind != "f":  # the contract gives an integer output integer arguments
        start, delta = int(start), int(delta)
    assert_identical("arange", strided_1d(n, dtype, step), start, delta)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@given(
    n=st.one_of(st.integers(0, 50), st.just(40_001)),
    step=st.integers(1, 2),
    start=st.floats(-1e6, 1e6),
    end=st.floats(-1e6, 1e6),
)
def test_linspace_matches_reference(dtype, n, step, start, end, device):
    assert_identical("linspace", strided_1d(n, dtype, step), start, end)


@pytest.mark.cpu_only("the CPU tier's allocate returns a NumPy buffer")
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("numel", [0, 1, 7, 1000, 100_000])
def test_allocate_gives_a_flat_writable_buffer(dtype, numel, device):
    buffer = FAST.allocate(numel, np.dtype(dtype))
    assert buffer.shape == (numel,) and buffer.dtype == np.dtype(dtype)
    assert buffer.flags.c_contiguous and buffer.flags.writeable
    assert buffer.base is None  # its own memory, shared with no other buffer


# ------------------------------------------- keeping freed memory (fast/csrc/heap.c)
@pytest.mark.cpu_only("a setting of the host's malloc")
@pytest.mark.skipif(
    fast_creation.KEPT_FREED_MEMORY_MIB == 0,
    reason="glibc's malloc keeps no freed memory here (another C library, or turned off)",
)
def test_freed_tensor_memory_is_reused_without_page_faults(device):
    import resource

    def make_and_drop():
        # A step's worth of tensors: eight of 4 MiB from the fast tier's
        # allocator, every page touched (by NumPy's fill), then all freed. Left
        # to itself glibc hands most of the 32 MiB back to the system each time.
        buffers = [FAST.allocate(1 << 20, np.dtype("float32")) for _ in range(8)]
        for buffer in buffers:
            buffer.fill(1.0)
        del buffers

    make_and_drop()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        make_and_drop()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # Returned to the system, each round faults in most of its 8,192 pages again
    # (about 20,000 in all, measured with GLASSTORCH_KEEP_FREED_MEMORY=0).
    assert faults < 1000, f"{faults} page faults for 5 rounds of 32 MiB of tensors"


@pytest.mark.parametrize("setting", ["0", "-5"])
def test_keep_freed_memory_can_be_turned_off(setting):
    assert fast_creation.keep_freed_memory(setting) == 0


def test_keep_freed_memory_refuses_a_setting_that_is_no_number():
    with pytest.raises(ValueError, match="GLASSTORCH_KEEP_FREED_MEMORY must be a whole number"):
        fast_creation.keep_freed_memory("lots")
