"""The fast tier's indexing kernels (``fast/csrc/indexing.c``) against the reference tier.

gather, scatter (copy and accumulate), index_select, index_put (copy and
accumulate) and nonzero, called directly through the contract with every
input layout (contiguous, offset, permuted, sliced, broadcast) and every
writable output layout. Indices repeat often, so scatters collide: the fast
tier must then give exactly the reference's result (the last write in
row-major order wins; accumulations add in that order), bit for bit for
integers and bool. Larger cases (>= 40k elements) run the OpenMP paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_views import kernels_under_test
from test_fast_reductions import (
    ALL_DTYPES,
    INPUT_KINDS,
    OUTPUT_KINDS,
    assert_same,
    lay_out,
    output_pair,
    random_values,
    shapes,
)

from glasstorch._kernels import Strided
from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_indexing = pytest.importorskip(
    "glasstorch.fast.indexing",
    reason="the fast tier's C extension is not built",
    exc_type=ImportError,
)

FAST = kernels_under_test(fast_indexing.IndexingKernels())
REFERENCE = ReferenceKernels()


def writable_pair(values: np.ndarray, kind: str, seed: int) -> tuple[Strided, Strided]:
    """Two identical writable views (fast, reference) holding ``values``."""
    fast, _ = lay_out(values, kind, np.random.default_rng(seed))
    ref, _ = lay_out(values, kind, np.random.default_rng(seed))
    return fast, ref


def index_shape(rng, shape: tuple[int, ...], dim: int, limit: tuple[int, ...]) -> tuple[int, ...]:
    """A gather/scatter index shape: no larger than ``limit`` but along ``dim``."""
    return tuple(
        int(rng.integers(0, 5)) if d == dim else int(rng.integers(0, limit[d] + 1))
        for d in range(len(shape))
    )


def run_gather(shape, dtype, dim, seed, a_kind, idx_kind, out_kind):
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype)
    a, _ = lay_out(values, a_kind, rng)
    ishape = index_shape(rng, shape, dim, shape)
    if shape[dim] == 0:
        ishape = ishape[:dim] + (0,) + ishape[dim + 1 :]
    indices = rng.integers(0, max(shape[dim], 1), ishape)
    index, _ = lay_out(indices, idx_kind, rng)
    fast, ref = output_pair(ishape, dtype, out_kind, seed)
    FAST.gather(fast, a, dim, index)
    REFERENCE.gather(ref, a, dim, index)
    assert_same(fast.buffer, ref.buffer)


def run_scatter(shape, dtype, dim, seed, src_kind, idx_kind, out_kind, accumulate, ishape=None):
    rng = np.random.default_rng(seed)
    if ishape is None:
        ishape = index_shape(rng, shape, dim, shape)
    if shape[dim] == 0:
        ishape = ishape[:dim] + (0,) + ishape[dim + 1 :]
    indices = rng.integers(0, max(shape[dim], 1), ishape)
    index, _ = lay_out(indices, idx_kind, rng)
    src, _ = lay_out(random_values(rng, ishape, dtype), src_kind, rng)
    fast, ref = writable_pair(random_values(rng, shape, dtype), out_kind, seed)
    FAST.scatter(fast, dim, index, src, accumulate)
    REFERENCE.scatter(ref, dim, index, src, accumulate)
    assert_same(fast.buffer, ref.buffer)


def run_index_select(shape, dtype, dim, count, seed, a_kind, out_kind):
    rng = np.random.default_rng(seed)
    a, _ = lay_out(random_values(rng, shape, dtype), a_kind, rng)
    count = count if shape[dim] else 0
    index, _ = lay_out(rng.integers(0, max(shape[dim], 1), (count,)), "sliced", rng)
    out_shape = shape[:dim] + (count,) + shape[dim + 1 :]
    fast, ref = output_pair(out_shape, dtype, out_kind, seed)
    FAST.index_select(fast, a, dim, index)
    REFERENCE.index_select(ref, a, dim, index)
    assert_same(fast.buffer, ref.buffer)


def run_index_put(shape, dtype, dim, count, seed, src_kind, out_kind, accumulate):
    rng = np.random.default_rng(seed)
    count = count if shape[dim] else 0
    index, _ = lay_out(rng.integers(0, max(shape[dim], 1), (count,)), "offset", rng)
    src_shape = shape[:dim] + (count,) + shape[dim + 1 :]
    src, _ = lay_out(random_values(rng, src_shape, dtype), src_kind, rng)
    fast, ref = writable_pair(random_values(rng, shape, dtype), out_kind, seed)
    FAST.index_put(fast, dim, index, src, accumulate)
    REFERENCE.index_put(ref, dim, index, src, accumulate)
    assert_same(fast.buffer, ref.buffer)


# --------------------------------------------------------------------- tests
common = {
    "shape": shapes(min_dims=1),
    "dtype": st.sampled_from(ALL_DTYPES),
    "data": st.data(),
    "seed": st.integers(0, 2**32 - 1),
}


@given(
    **common,
    a_kind=st.sampled_from(INPUT_KINDS),
    idx_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
)
def test_gather_matches_reference(shape, dtype, data, seed, a_kind, idx_kind, out_kind, device):
    dim = data.draw(st.integers(0, len(shape) - 1))
    run_gather(shape, dtype, dim, seed, a_kind, idx_kind, out_kind)


@given(
    **common,
    src_kind=st.sampled_from(INPUT_KINDS),
    idx_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    accumulate=st.booleans(),
)
def test_scatter_matches_reference(
    shape, dtype, data, seed, src_kind, idx_kind, out_kind, accumulate, device
):
    dim = data.draw(st.integers(0, len(shape) - 1))
    run_scatter(shape, dtype, dim, seed, src_kind, idx_kind, out_kind, accumulate)


@given(
    **common,
    count=st.integers(0, 6),
    a_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
)
def test_index_select_matches_reference(shape, dtype, data, seed, count, a_kind, out_kind, device):
    dim = data.draw(st.integers(0, len(shape) - 1))
    run_index_select(shape, dtype, dim, count, seed, a_kind, out_kind)


@given(
    **common,
    count=st.integers(0, 6),
    src_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    accumulate=st.booleans(),
)
def test_index_put_matches_reference(
    shape, dtype, data, seed, count, src_kind, out_kind, accumulate, device
):
    dim = data.draw(st.integers(0, len(shape) - 1))
    run_index_put(shape, dtype, dim, count, seed, src_kind, out_kind, accumulate)


@given(
    shape=shapes(),
    dtype=st.sampled_from(ALL_DTYPES),
    kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    seed=st.integers(0, 2**32 - 1),
)
def test_nonzero_matches_reference(shape, dtype, kind, out_kind, seed, device):
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype, (np.nan, -0.0))
    values = np.where(rng.random(shape) < 0.5, np.zeros((), dtype), values).astype(dtype)
    check_nonzero(values, kind, out_kind, seed)


def check_nonzero(values, kind, out_kind, seed):
    a, logical = lay_out(values, kind, np.random.default_rng(seed))
    count = int(np.count_nonzero(logical))
    fast, ref = output_pair((count, logical.ndim), "int64", out_kind, seed)
    FAST.nonzero(fast, a)
    REFERENCE.nonzero(ref, a)
    assert_same(fast.buffer, ref.buffer)


@pytest.mark.parametrize("dtype", ("float32", "int64", "bool"))
@pytest.mark.parametrize("dim", (0, 1))
def test_large_cases(dtype, dim, device):
    """>= 40k elements: the threaded paths, with many colliding scatter targets."""
    shape = (200, 210)
    run_gather(shape, dtype, dim, 1, "permuted", "contiguous", "contiguous")
    ishape = (150, 210) if dim == 0 else (200, 150)
    for accumulate in (False, True):
        run_scatter(shape, dtype, dim, 2, "contiguous", "sliced", "contiguous", accumulate, ishape)
        run_index_put(shape, dtype, dim, 300, 3, "contiguous", "offset", accumulate)
    run_index_select(shape, dtype, dim, 300, 4, "sliced", "contiguous")
    values = random_values(np.random.default_rng(5), shape, dtype)
    check_nonzero((values * (np.arange(210) % 3 == 0)).astype(dtype), "permuted", "contiguous", 6)


@pytest.mark.parametrize("kernel", ("index_select", "index_put", "index_put_accumulate"))
@pytest.mark.parametrize("kind", ("contiguous", "sliced"))
def test_whole_slices_report_the_first_bad_index(kernel, kind, device):
    """index_select and index_put move whole slices along ``dim`` (the fast tier reads
    each slice's index once): an index outside the operand is reported, the first
    one in order, as the reference reports it."""
    rng = np.random.default_rng(7)
    table, _ = lay_out(random_values(rng, (5, 8), "float32"), kind, rng)
    index = Strided(np.array([1, 4, 6, -2, 0], dtype=np.int64), (5,), (1,), 0)
    outcomes = []
    for kernels in (FAST, REFERENCE):
        if kernel == "index_select":
            out = Strided(np.zeros(40, np.float32), (5, 8), (8, 1), 0)
            outcomes.append(kernels.index_select(out, table, 0, index))
        else:
            target = Strided(np.zeros(40, np.float32), (5, 8), (8, 1), 0)
            accumulate = kernel == "index_put_accumulate"
            outcomes.append(kernels.index_put(target, 0, index, table, accumulate))
    assert outcomes == [6, 6]
