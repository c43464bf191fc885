"""The fast tier's matmul kernel (``fast/csrc/gemm.c``) against the reference tier and NumPy.

The kernel is called directly through the contract (``out, a, b`` as
:class:`~glasstorch._kernels.Strided` views), so every layout the frontend can
hand it is tested: transposed, sliced (with gaps and an offset), broadcast
batch dimensions (stride 0), and sizes 0 and 1. Outputs start filled with NaN
(or a sentinel), so a kernel that forgets to write an element, or writes
outside its view, is caught.

Small shapes go through the direct loop and are compared with the reference
tier (exact for integers and bool, which wrap). Larger float shapes, not
multiples of the register tile or of the KC block, go through the packed,
blocked path and its OpenMP split, and are compared with NumPy in float64.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided
from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_linalg = pytest.importorskip(
    "glasstorch.fast.linalg",
    reason="the fast tier's C extension is not built",
    exc_type=ImportError,
)

FAST = kernels_under_test(fast_linalg.LinalgKernels())
REFERENCE = ReferenceKernels()

ALL_DTYPES = ("float32", "float64", "int64", "int32", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float64")
#: Input layouts: how a logical matrix stack is laid out in its buffer.
INPUT_LAYOUTS = ("contiguous", "transposed", "sliced", "broadcast")
#: Output layouts (every element needs a storage slot of its own).
OUTPUT_LAYOUTS = ("contiguous", "transposed", "sliced")


# ------------------------------------------------------------------- helpers
def strided(array: np.ndarray, base: np.ndarray) -> Strided:
    """The :class:`Strided` view of ``array``, a NumPy view into contiguous ``base``."""
    itemsize = base.itemsize
    offset = (
        array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    ) // itemsize
    strides = tuple(s // itemsize for s in array.strides)
    return Strided(base.reshape(-1), array.shape, strides, offset)


def lay_out(values: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """Store ``values`` in ``layout``; return (the view, its contiguous base).

    ``broadcast`` keeps only the first entry of each batch dimension and
    expands it (stride 0), so ``values`` changes: use the returned view's values.
    """
    if layout == "contiguous":
        base = values.copy()
        return base, base
    if layout == "transposed":
        base = np.ascontiguousarray(values.swapaxes(-1, -2))
        return base.swapaxes(-1, -2), base
    if layout == "sliced":  # every other column, starting at 1: gaps and an offset
        shape = values.shape[:-1] + (2 * values.shape[-1] + 1,)
        base = np.zeros(shape, values.dtype)
        base[..., 1::2] = values
        return base[..., 1::2], base
    if layout == "broadcast":
        first = values[tuple(slice(0, 1) for _ in values.shape[:-2])]
        base = first.copy()
        return np.broadcast_to(base, values.shape), base
    raise ValueError(layout)


def random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values spread over the dtype's range: integers overflow, so wrapping is tested."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in FLOAT_DTYPES:
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def sentinel(dtype: str):
    """What an output holds before the kernel runs: NaN for floats, 7 otherwise."""
    return np.array(np.nan if dtype in FLOAT_DTYPES else 7).astype(dtype)


def empty_output(shape: tuple[int, ...], dtype: str, layout: str):
    """An output view in ``layout``, every slot of its base (gaps too) holding the sentinel."""
    view, base = lay_out(np.zeros(shape, dtype), layout)
    base[...] = sentinel(dtype)
    return view, base


def run_fast(out_view, out_base, a_view, a_base, b_view, b_base) -> np.ndarray:
    FAST.matmul(strided(out_view, out_base), strided(a_view, a_base), strided(b_view, b_base))
    return np.array(out_view)


def float_tolerance(a: np.ndarray, b: np.ndarray, dtype: str) -> float:
    """Error bound for a K-term dot product accumulated in ``dtype``."""
    k = a.shape[-1]
    scale = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0))
    return 4 * float(np.finfo(dtype).eps) * max(k, 1) * scale + 1e-30


def assert_gaps_untouched(out_base: np.ndarray, layout: str, dtype: str) -> None:
    """A sliced output's gaps (even columns) still hold their sentinel."""
    if layout == "sliced" and out_base.size:
        gaps = out_base[..., 0::2]
        np.testing.assert_array_equal(
            gaps, np.full(gaps.shape, sentinel(dtype)), "the kernel wrote outside its output view"
        )


# ---------------------------------------------------------------- small cases
@st.composite
def small_problems(draw: st.DrawFn):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    m, n, k = (draw(st.integers(0, 6)) for _ in range(3))
    layouts = [draw(st.sampled_from(INPUT_LAYOUTS)) for _ in range(2)]
    out_layout = draw(st.sampled_from(OUTPUT_LAYOUTS))
    seed = draw(st.integers(0, 2**32 - 1))
    return dtype, batch, m, n, k, layouts, out_layout, seed


@given(small_problems())
def test_small_matches_reference_and_numpy(device, problem) -> None:
    dtype, batch, m, n, k, (a_layout, b_layout), out_layout, seed = problem
    rng = np.random.default_rng(seed)
    a_view, a_base = lay_out(random_values(rng, batch + (m, k), dtype), a_layout)
    b_view, b_base = lay_out(random_values(rng, batch + (k, n), dtype), b_layout)

    out_view, out_base = empty_output(batch + (m, n), dtype, out_layout)
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    assert_gaps_untouched(out_base, out_layout, dtype)

    ref_view, ref_base = empty_output(batch + (m, n), dtype, "contiguous")
    REFERENCE.matmul(strided(ref_view, ref_base), strided(a_view, a_base), strided(b_view, b_base))
    with np.errstate(over="ignore"):
        numpy_result = np.matmul(np.array(a_view), np.array(b_view))

    if dtype in FLOAT_DTYPES:
        tolerance = float_tolerance(a_view, b_view, dtype)
        np.testing.assert_allclose(got, ref_view, rtol=0, atol=tolerance)
        np.testing.assert_allclose(got, numpy_result, rtol=0, atol=tolerance)
    else:  # exact: wrapping integer arithmetic, bool "any product"
        np.testing.assert_array_equal(got, ref_view)
        np.testing.assert_array_equal(got, numpy_result)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_empty_shared_dimension_writes_zeros(dtype: str, device) -> None:
    a_view, a_base = lay_out(np.zeros((2, 3, 0), dtype), "contiguous")
    b_view, b_base = lay_out(np.zeros((2, 0, 4), dtype), "contiguous")
    out_view, out_base = empty_output((2, 3, 4), dtype, "contiguous")
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    np.testing.assert_array_equal(got, np.zeros((2, 3, 4), dtype))


@pytest.mark.parametrize("dtype", ("int64", "int32", "uint8"))
def test_integer_sums_wrap_like_the_reference(dtype: str, device) -> None:
    info = np.iinfo(dtype)
    a = np.full((2, 40), info.max, dtype)
    b = np.full((40, 3), info.max, dtype)
    a[1] = info.min
    a_view, a_base = lay_out(a, "contiguous")
    b_view, b_base = lay_out(b, "transposed")
    out_view, out_base = empty_output((2, 3), dtype, "contiguous")
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    ref_view, ref_base = empty_output((2, 3), dtype, "contiguous")
    REFERENCE.matmul(strided(ref_view, ref_base), strided(a_view, a_base), strided(b_view, b_base))
    np.testing.assert_array_equal(got, ref_view)


def test_large_integer_and_bool_products_match_numpy(device) -> None:
    rng = np.random.default_rng(0)
    for dtype in ("int64", "int32", "uint8", "bool"):
        # wide enough to need several 256-column strips and the OpenMP split
        a_view, a_base = lay_out(random_values(rng, (70, 90), dtype), "sliced")
        b_view, b_base = lay_out(random_values(rng, (90, 600), dtype), "transposed")
        out_view, out_base = empty_output((70, 600), dtype, "contiguous")
        got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got, np.matmul(np.array(a_view), np.array(b_view)))


# ---------------------------------------------------- the blocked (packed) path
@st.composite
def blocked_problems(draw: st.DrawFn):
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    m = draw(st.integers(1, 80))
    n = draw(st.integers(1, 80))
    k = draw(st.integers(40, 600))  # crosses the KC block boundary (256) often
    layouts = [draw(st.sampled_from(INPUT_LAYOUTS)) for _ in range(2)]
    out_layout = draw(st.sampled_from(OUTPUT_LAYOUTS))
    seed = draw(st.integers(0, 2**32 - 1))
    return dtype, batch, m, n, k, layouts, out_layout, seed


@given(blocked_problems())
def test_blocked_edges_match_numpy(device, problem) -> None:
    dtype, batch, m, n, k, (a_layout, b_layout), out_layout, seed = problem
    rng = np.random.default_rng(seed)
    a_view, a_base = lay_out(random_values(rng, batch + (m, k), dtype), a_layout)
    b_view, b_base = lay_out(random_values(rng, batch + (k, n), dtype), b_layout)
    out_view, out_base = empty_output(batch + (m, n), dtype, out_layout)
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    assert_gaps_untouched(out_base, out_layout, dtype)
    want = np.matmul(np.array(a_view, np.float64), np.array(b_view, np.float64))
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 13, 16, 30, 32, 33, 36])
@pytest.mark.parametrize("out_layout", ["contiguous", "transposed"])
def test_rows_past_the_last_whole_sliver_match_numpy(
    dtype: str, m: int, out_layout: str, device
) -> None:
    """Every remainder of M over the register tile's MR rows (6 with AVX2 and
    SSE, 8 with AVX-512): the last partial sliver is computed in tiles of
    fewer rows (1-2, 3-4) or as a padded whole sliver. N and K are not
    multiples of the tile (an odd K leaves a step past the two-step loop)."""
    rng = np.random.default_rng(m)
    n, k = 70, 301
    a_view, a_base = lay_out(random_values(rng, (m, k), dtype), "contiguous")
    b_view, b_base = lay_out(random_values(rng, (k, n), dtype), "contiguous")
    out_view, out_base = empty_output((m, n), dtype, out_layout)
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    assert_gaps_untouched(out_base, out_layout, dtype)
    want = np.array(a_view, np.float64) @ np.array(b_view, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "layouts",
    [
        ("contiguous", "contiguous", "contiguous"),
        ("transposed", "transposed", "transposed"),
        ("sliced", "contiguous", "sliced"),
    ],
)
def test_large_products_match_numpy(dtype: str, layouts: tuple[str, str, str], device) -> None:
    """Big enough for several MC, KC and NR blocks and the OpenMP split."""
    a_layout, b_layout, out_layout = layouts
    rng = np.random.default_rng(1)
    m, n, k = 300, 257, 529
    a_view, a_base = lay_out(random_values(rng, (m, k), dtype), a_layout)
    b_view, b_base = lay_out(random_values(rng, (k, n), dtype), b_layout)
    out_view, out_base = empty_output((m, n), dtype, out_layout)
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    assert_gaps_untouched(out_base, out_layout, dtype)
    want = np.array(a_view, np.float64) @ np.array(b_view, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("b_layout", ["contiguous", "transposed"])
def test_large_products_of_a_row_major_a_match_numpy(dtype: str, b_layout: str, device) -> None:
    """Over 2^24 multiply-adds with A's rows contiguous (a linear layer's ``x @ W.t()``,
    or its input gradient ``grad @ W``): A is read where it lies, B packed whole; M is
    not a multiple of the register tile's height, so the last rows come packed too."""
    rng = np.random.default_rng(4)
    m, n, k = 1027, 131, 130
    a_view, a_base = lay_out(random_values(rng, (m, k), dtype), "contiguous")
    b_view, b_base = lay_out(random_values(rng, (k, n), dtype), b_layout)
    out_view, out_base = empty_output((m, n), dtype, "contiguous")
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    want = np.array(a_view, np.float64) @ np.array(b_view, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.cpu_only("the C tier's blocked BLIS loops (a 1100 x 1000 product)")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_products_too_big_to_pack_whole_take_the_five_loop_path(dtype: str, device) -> None:
    """More than 8 MiB of packed operands: the blocked BLIS loops, not the small path."""
    rng = np.random.default_rng(3)
    m, n, k = 1100, 1030, 1000
    a_view, a_base = lay_out(random_values(rng, (m, k), dtype), "transposed")
    b_view, b_base = lay_out(random_values(rng, (k, n), dtype), "contiguous")
    out_view, out_base = empty_output((m, n), dtype, "contiguous")
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    want = np.array(a_view, np.float64) @ np.array(b_view, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_broadcast_batch_of_large_products(dtype: str, device) -> None:
    """A batch where one operand is shared (stride 0), as in ``x @ weight``."""
    rng = np.random.default_rng(2)
    a_view, a_base = lay_out(random_values(rng, (3, 130, 70), dtype), "contiguous")
    b_view, b_base = lay_out(random_values(rng, (3, 70, 150), dtype), "broadcast")
    out_view, out_base = empty_output((3, 130, 150), dtype, "contiguous")
    got = run_fast(out_view, out_base, a_view, a_base, b_view, b_base)
    want = np.array(a_view, np.float64) @ np.array(b_view, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a_view, b_view, dtype))


@pytest.mark.cpu_only("the C tier's scratch state under Python threads (cffi releases the GIL)")
def test_concurrent_calls_from_python_threads(device) -> None:
    """cffi releases the GIL: calls from several threads share no scratch state."""
    rng = np.random.default_rng(3)
    problems = [
        (random_values(rng, (150 + i, 200), "float32"), random_values(rng, (200, 170), "float32"))
        for i in range(6)
    ]
    results: list[np.ndarray | None] = [None] * len(problems)

    def work(i: int) -> None:
        a, b = problems[i]
        for _ in range(5):
            out = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
            FAST.matmul(strided(out, out), strided(a, a), strided(b, b))
        results[i] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(problems))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (a, b), got in zip(problems, results, strict=True):
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=0, atol=float_tolerance(a, b, "float32"))
