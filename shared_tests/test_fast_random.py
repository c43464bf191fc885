"""The fast tier's Philox kernels against the reference tier's, bit for bit.

Same seed and offset, same bits: every test runs a fast random kernel and the
reference one into copies of one view and asserts the buffers are identical
(floats included, since both evaluate the same double formulas with the same
C library). Views may be strided; one large case exercises the OpenMP path.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_views import (
    ALL_DTYPES,
    WRITABLE_LAYOUTS,
    contiguous,
    copy_view,
    kernels_under_test,
    shapes,
    views,
)

from glasstorch.reference import ReferenceKernels
from glasstorch.reference.random import random_block

fast_rng = pytest.importorskip(
    "glasstorch.fast.rng", reason="the fast tier's C extension is not built"
)

pytestmark = [pytest.mark.contract, pytest.mark.random]

FAST = kernels_under_test(fast_rng.RandomKernels())
REFERENCE = ReferenceKernels()

seeds = st.one_of(
    st.sampled_from([0, 1, 42, -5, 2**64 - 1, 0x1234_5678_9ABC_DEF0]), st.integers(0, 2**64 - 1)
)
offsets = st.one_of(st.integers(0, 1000), st.sampled_from([2**32 - 1, 2**64 - 2]))


def assert_identical(kernel: str, out, *args) -> None:
    fast_out, reference_out = copy_view(out), copy_view(out)
    getattr(FAST, kernel)(fast_out, *args)
    getattr(REFERENCE, kernel)(reference_out, *args)
    np.testing.assert_array_equal(
        fast_out.buffer.view(np.uint8), reference_out.buffer.view(np.uint8)
    )


# ------------------------------------------------------------------- Philox
@pytest.mark.parametrize(
    ("seed", "block"), [(0, 0), (2**64 - 1, 2**64 - 1), (0x299F31D0A4093822, 0x85A308D3243F6A88)]
)
@pytest.mark.cpu_only("the C tier's Philox block function, called through cffi")
def test_c_philox_block_matches_reference(seed, block, device):
    from glasstorch.fast._glue import ffi, lib

    words = ffi.new("uint32_t[4]")
    lib.gt_philox_block(seed, block, words)
    assert tuple(words) == random_block(seed, block)


# ------------------------------------------------------------------ kernels
UNIFORM_RANGES = [
    (0.0, 1.0),
    (-3.0, 5.5),
    (1.0, 2.0),
    (1.0, 1.0000001),  # narrower than one float32 step: rounding reaches high
    (1.00000001, 1.00000002),  # no float32 lies inside: values are kept as rounded
    (-1e30, 1e30),
    (5.0, 5.0),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@settings(max_examples=15)
@given(data=st.data(), seed=seeds, offset=offsets, bounds=st.sampled_from(UNIFORM_RANGES))
def test_random_uniform_matches_reference(dtype, data, seed, offset, bounds, device):
    out = data.draw(views(data.draw(shapes()), dtype, kinds=WRITABLE_LAYOUTS))
    assert_identical("random_uniform", out, seed, offset, *bounds)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@settings(max_examples=15)
@given(
    data=st.data(),
    seed=seeds,
    offset=offsets,
    mean=st.sampled_from([0.0, 1.5, -100.0]),
    std=st.sampled_from([1.0, 0.01, 7.0]),
)
def test_random_normal_matches_reference(dtype, data, seed, offset, mean, std, device):
    out = data.draw(views(data.draw(shapes()), dtype, kinds=WRITABLE_LAYOUTS))
    assert_identical("random_normal", out, seed, offset, mean, std)


INTEGER_RANGES = [
    (0, 10),
    (-5, 5),
    (0, 256),
    (3, 4),
    (-(2**63), 2**63 - 1),
    (-(2**63), 2**63),  # a span of exactly 2**64
    (0, 2**63),
    (2**40, 2**40 + 7),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@settings(max_examples=15)
@given(data=st.data(), seed=seeds, offset=offsets, bounds=st.sampled_from(INTEGER_RANGES))
def test_random_integers_matches_reference(dtype, data, seed, offset, bounds, device):
    out = data.draw(views(data.draw(shapes()), dtype, kinds=WRITABLE_LAYOUTS))
    assert_identical("random_integers", out, seed, offset, *bounds)


@settings(max_examples=25)
@given(
    n=st.one_of(st.integers(0, 40), st.sampled_from([1000, 4097])),
    step=st.integers(1, 2),
    seed=seeds,
    offset=offsets,
)
def test_randperm_matches_reference(n, step, seed, offset, device):
    buffer = np.full(n * step + 1, -7, dtype=np.int64)
    out = contiguous((n,), "int64")._replace(buffer=buffer, strides=(step,), offset=1)
    assert_identical("randperm", out, seed, offset)
    values = out.buffer.copy()
    FAST.randperm(out, seed, offset)
    assert sorted(out.buffer[1::step][:n].tolist()) == list(range(n))
    assert values[0] == -7


# ------------------------------------------------------ large: OpenMP blocks
@pytest.mark.parametrize(
    ("kernel", "args"),
    [
        ("random_uniform", (0.0, 1.0)),
        ("random_normal", (0.0, 1.0)),
        ("random_integers", (-3, 1000)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("kind", ["contiguous", "permuted"])
@settings(max_examples=1)
@given(data=st.data())
def test_large_draws_match_reference(kernel, args, dtype, kind, data, device):
    out = data.draw(views((201, 203), dtype, kinds=(kind,)))  # 40,803 elements
    assert_identical(kernel, out, 0xC0FFEE, 12345, *args)


def test_large_randperm_matches_reference(device):
    n = 50_001
    assert_identical("randperm", contiguous((n,), "int64"), 7, 3)
