"""The fast tier's reductions (``fast/csrc/reductions.c``) against the reference tier.

The kernels are called directly through the contract, with inputs stored in
every layout the frontend can hand them (contiguous, permuted, sliced with gaps,
broadcast with stride 0, at an offset) and outputs in every writable layout.
Output buffers start filled with a sentinel and are compared *whole*, so a
kernel that skips an element or writes outside its view fails.

Integer and bool results (and indices) must be bit-identical to the
reference's; float results agree within float tolerance. A few larger cases
(>= 40k elements) go through the OpenMP paths. The layout helpers here are
shared by ``test_fast_indexing.py`` and ``test_fast_nn.py``.

On ``--device=cuda`` the same calls run the CUDA tier's kernels
(:func:`kernel_views.kernels_under_test`) against the reference tier's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from kernel_views import kernels_under_test

from glasstorch._kernels import REDUCE_OPS, Strided
from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_reductions = pytest.importorskip(
    "glasstorch.fast.reductions",
    reason="the fast tier's C extension is not built",
    exc_type=ImportError,
)

FAST = kernels_under_test(fast_reductions.ReductionKernels())
REFERENCE = ReferenceKernels()

ALL_DTYPES = ("float32", "float64", "int64", "int32", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float64")
INPUT_KINDS = ("contiguous", "offset", "permuted", "sliced", "broadcast")
OUTPUT_KINDS = ("contiguous", "offset", "permuted", "sliced")


# ------------------------------------------------------------------- helpers
def to_strided(array: np.ndarray, base: np.ndarray) -> Strided:
    """The :class:`Strided` view of ``array``, a NumPy view into 1-D ``base``."""
    itemsize = base.itemsize
    start = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    strides = tuple(s // itemsize for s in array.strides)
    return Strided(base, tuple(array.shape), strides, start // itemsize)


def lay_out(values: np.ndarray, kind: str, rng: np.random.Generator) -> tuple[Strided, np.ndarray]:
    """Store ``values`` in a layout of ``kind``: (its Strided view, its logical values).

    ``broadcast`` keeps one entry along some dimensions and expands it with
    stride 0, so the logical values change; use the returned array.
    """
    shape, ndim = values.shape, values.ndim
    if kind == "offset" or (kind != "contiguous" and ndim == 0):
        base = np.zeros(values.size + 3, values.dtype)
        view = base[3:].reshape(shape)
        view[...] = values
        return to_strided(view, base), values.copy()
    if kind == "contiguous":
        base = values.copy().reshape(-1)
        return to_strided(base.reshape(shape), base), values.copy()
    if kind == "permuted":
        perm = rng.permutation(ndim)
        inverse = np.argsort(perm)
        stored = np.ascontiguousarray(values.transpose(perm))
        base = stored.reshape(-1)
        return to_strided(base.reshape(stored.shape).transpose(inverse), base), values.copy()
    if kind == "sliced":  # every other entry along one dimension, starting at 1
        dim = int(rng.integers(ndim))
        big = list(shape)
        big[dim] = 2 * shape[dim] + 1
        base = np.zeros(int(np.prod(big)), values.dtype)
        index = (slice(None),) * dim + (slice(1, None, 2),)
        view = base.reshape(big)[index]
        view[...] = values
        return to_strided(view, base), values.copy()
    if kind == "broadcast":
        keep = tuple(slice(0, 1) if rng.random() < 0.5 else slice(None) for _ in shape)
        small = values[keep].copy()
        base = small.reshape(-1)
        view = np.broadcast_to(base.reshape(small.shape), shape)
        return to_strided(view, base), np.array(view)
    raise ValueError(kind)


def output_pair(
    shape: tuple[int, ...], dtype: str, kind: str, seed: int
) -> tuple[Strided, Strided]:
    """Two identical output views (fast, reference), their buffers full of a sentinel."""
    sentinel = {"bool": True, "uint8": 77, "int32": -77, "int64": -77}.get(dtype, np.nan)
    fill = np.full(shape, sentinel, dtype)
    fast, _ = lay_out(fill, kind, np.random.default_rng(seed))
    ref, _ = lay_out(fill, kind, np.random.default_rng(seed))
    fast.buffer[...] = sentinel
    ref.buffer[...] = sentinel
    return fast, ref


def assert_same(fast: np.ndarray, ref: np.ndarray, *, rtol: float | None = None) -> None:
    """Bit-identical for integers and bool; within float tolerance (NaN == NaN) for floats."""
    assert fast.dtype == ref.dtype
    if fast.dtype.kind == "f":
        if rtol is None:
            rtol = 2e-5 if fast.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(fast, ref, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(fast, ref)


def random_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, specials: tuple = ()
) -> np.ndarray:
    """Small values of ``dtype``; ints sometimes huge (to wrap); floats with ``specials``."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in FLOAT_DTYPES:
        values = rng.uniform(-3, 3, shape).astype(dtype)
        if specials and values.size and rng.random() < 0.5:
            flat = values.reshape(-1)
            for _ in range(int(rng.integers(1, 3))):
                flat[rng.integers(flat.size)] = specials[rng.integers(len(specials))]
        return values
    info = np.iinfo(dtype)
    if rng.random() < 0.3:  # extreme values, so sums and products wrap
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    low = 0 if dtype == "uint8" else -9
    return rng.integers(low, 10, shape).astype(dtype)


@st.composite
def shapes(draw, min_dims: int = 0, max_dims: int = 4, max_numel: int = 96) -> tuple[int, ...]:
    """0-4 dimensions, sizes 0-5 (0 and 1 often), at most ``max_numel`` elements."""
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = draw(st.lists(st.sampled_from((0, 1, 1, 2, 3, 4, 5)), min_size=ndim, max_size=ndim))
    while int(np.prod(sizes)) > max_numel:
        sizes[int(np.argmax(sizes))] -= 1
    return tuple(sizes)


def keepdim_shape(shape: tuple[int, ...], dims) -> tuple[int, ...]:
    return tuple(1 if d in dims else size for d, size in enumerate(shape))


def check_reduce(op, values, dims, in_kind, out_kind, seed) -> None:
    rng = np.random.default_rng(seed)
    a, _ = lay_out(values, in_kind, rng)
    out_dtype = str(values.dtype)
    if op in ("all", "any") and out_dtype != "uint8":
        out_dtype = "bool"
    fast, ref = output_pair(keepdim_shape(values.shape, dims), out_dtype, out_kind, seed)
    FAST.reduce(op, fast, a, tuple(dims))
    REFERENCE.reduce(op, ref, a, tuple(dims))
    assert_same(fast.buffer, ref.buffer)


# --------------------------------------------------------------------- tests
@given(
    shape=shapes(),
    dtype=st.sampled_from(ALL_DTYPES),
    op=st.sampled_from(REDUCE_OPS),
    in_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_reduce_matches_reference(shape, dtype, op, in_kind, out_kind, data, seed, device):
    dims = data.draw(st.sets(st.integers(0, len(shape) - 1)) if shape else st.just(set()))
    dims = tuple(sorted(dims))
    if op in ("amax", "amin") and any(shape[d] == 0 for d in dims):
        return  # the frontend refuses an empty max
    if op in ("amax", "amin") and not dims and 0 in shape:
        return
    specials = (np.nan, np.inf, -0.0) if op in ("sum", "prod") else (np.nan, np.inf, -np.inf)
    values = random_values(np.random.default_rng(seed), shape, dtype, specials)
    note(f"dims={dims}")
    check_reduce(op, values, dims, in_kind, out_kind, seed)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize(
    ("shape", "dims", "in_kind"),
    [
        ((40000,), (0,), "contiguous"),  # one long reduction: blocks across threads
        ((200, 210), (1,), "sliced"),  # row sums
        ((210, 200), (0,), "offset"),  # column sums: the outer path
        ((30, 40, 50), (0, 2), "permuted"),
        ((3, 20000), (1,), "contiguous"),  # few long rows
    ],
)
@pytest.mark.parametrize("dtype", ("float32", "int64", "uint8"))
def test_reduce_large(op, shape, dims, in_kind, dtype, device):
    rng = np.random.default_rng(sum(shape) + len(op))
    values = random_values(rng, shape, dtype)
    if op == "prod" and dtype == "float32":  # keep the product finite and away from 0
        values = rng.uniform(0.999, 1.001, shape).astype(dtype)
    check_reduce(op, values, dims, in_kind, "contiguous", 7)


@pytest.mark.parametrize("op", ("sum", "amax", "amin"))
def test_column_reductions_over_two_unmerged_dimensions(op, device):
    """The outer path takes 16 rows at a time where they lie evenly spaced:
    40 rows of each of 5 blocks (not a multiple of 16, and rows 41 apart so
    that the two reduced dimensions cannot merge) leave single rows at the
    end of every block and a carry into the next one."""
    rng = np.random.default_rng(11)
    base = rng.standard_normal((5, 41, 48)).astype(np.float32)
    view = base[:, 1:, :]
    out = Strided(np.zeros((1, 1, 48), np.float32), (1, 1, 48), (48, 48, 1), 0)
    FAST.reduce(op, out, Strided(base.reshape(-1), view.shape, (41 * 48, 48, 1), 48), (0, 1))
    expected = {"sum": np.sum, "amax": np.max, "amin": np.min}[op](view.astype(np.float64), (0, 1))
    np.testing.assert_allclose(out.buffer[0, 0], expected, rtol=1e-6, atol=1e-6)


def test_sum_is_careful(device):
    """A float32 sum of 2^22 copies of 0.1 is exact to float32, unlike a running sum."""
    values = np.full(1 << 22, 0.1, np.float32)
    out = Strided(np.zeros(1, np.float32), (1,), (1,), 0)
    FAST.reduce("sum", out, Strided(values, values.shape, (1,), 0), (0,))
    assert out.buffer[0] == np.float32(float(np.float32(0.1)) * (1 << 22))


@given(
    shape=shapes(min_dims=1),
    dtype=st.sampled_from(ALL_DTYPES),
    op=st.sampled_from(("max", "min")),
    in_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_arg_reduce_matches_reference(shape, dtype, op, in_kind, out_kind, data, seed, device):
    dim = data.draw(st.integers(0, len(shape) - 1))
    if shape[dim] == 0:
        return  # refused by the frontend
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype, (np.nan, np.inf, -np.inf))
    if dtype not in FLOAT_DTYPES and rng.random() < 0.5:  # many ties
        values = (values % 2).astype(dtype)
    a, _ = lay_out(values, in_kind, rng)
    out_shape = keepdim_shape(shape, (dim,))
    fast_v, ref_v = output_pair(out_shape, dtype, out_kind, seed)
    fast_i, ref_i = output_pair(out_shape, "int64", out_kind, seed + 1)
    FAST.arg_reduce(op, fast_v, fast_i, a, dim)
    REFERENCE.arg_reduce(op, ref_v, ref_i, a, dim)
    assert_same(fast_v.buffer, ref_v.buffer)
    assert_same(fast_i.buffer, ref_i.buffer)


@given(
    shape=shapes(min_dims=1),
    dtype=st.sampled_from(ALL_DTYPES),
    in_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_cumsum_matches_reference(shape, dtype, in_kind, out_kind, data, seed, device):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype, (np.nan, np.inf, -0.0))
    a, _ = lay_out(values, in_kind, rng)
    fast, ref = output_pair(shape, dtype, out_kind, seed)
    FAST.cumsum(fast, a, dim)
    REFERENCE.cumsum(ref, a, dim)
    assert_same(fast.buffer, ref.buffer)


@given(
    shape=shapes(min_dims=1),
    dtype=st.sampled_from(FLOAT_DTYPES),
    log=st.booleans(),
    in_kind=st.sampled_from(INPUT_KINDS),
    out_kind=st.sampled_from(OUTPUT_KINDS),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_softmax_matches_reference(shape, dtype, log, in_kind, out_kind, data, seed, device):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(seed)
    values = random_values(rng, shape, dtype, (np.nan, np.inf, -np.inf))
    if rng.random() < 0.3:  # far apart: exps underflow, the shift matters
        values = (values * 40).astype(dtype)
    a, _ = lay_out(values, in_kind, rng)
    fast, ref = output_pair(shape, dtype, out_kind, seed)
    FAST.softmax(fast, a, dim, log)
    REFERENCE.softmax(ref, a, dim, log)
    assert_same(fast.buffer, ref.buffer)


@pytest.mark.parametrize(("log", "dtype"), list(itertools.product((False, True), FLOAT_DTYPES)))
@pytest.mark.parametrize(
    ("shape", "dim", "kind"), [((200, 205), 1, "sliced"), ((205, 200), 0, "permuted")]
)
def test_softmax_and_cumsum_large(log, dtype, shape, dim, kind, device):
    rng = np.random.default_rng(3)
    values = (rng.standard_normal(shape) * 5).astype(dtype)
    a, _ = lay_out(values, kind, rng)
    fast, ref = output_pair(shape, dtype, "contiguous", 0)
    FAST.softmax(fast, a, dim, log)
    REFERENCE.softmax(ref, a, dim, log)
    assert_same(fast.buffer, ref.buffer)
    if not log:
        FAST.cumsum(fast, a, dim)
        REFERENCE.cumsum(ref, a, dim)
        assert_same(fast.buffer, ref.buffer)


def test_expf_extremes(device):
    """The vectorised exp: underflow to subnormals and 0, overflow to inf, NaN kept."""
    x = np.array(
        [0, 1, -1, 10, -10, 88.7, 88.8, 100, -87, -100, -104, -150, -1e30, np.inf, -np.inf, np.nan],
        np.float32,
    )
    y = np.empty((x.size, 2), np.float32)
    z = np.zeros_like(y)
    # softmax over pairs (x, -inf) is exp(x - x) = 1; use log-free pairs (x, 0) instead:
    pairs = np.stack([x, np.zeros_like(x)], axis=1)
    FAST.softmax(
        Strided(y.reshape(-1), y.shape, (2, 1), 0),
        Strided(pairs.reshape(-1), y.shape, (2, 1), 0),
        1,
        False,
    )
    REFERENCE.softmax(
        Strided(z.reshape(-1), z.shape, (2, 1), 0),
        Strided(pairs.reshape(-1), z.shape, (2, 1), 0),
        1,
        False,
    )
    assert_same(y, z)


def test_softmax_exp_is_accurate_over_its_whole_range(device):
    """Softmax's exp sees x - max <= 0 only, and flushes answers below 2^-126.5 to 0.

    Rows (0, x) for 200,000 values of x from 0 down to -120: softmax's second
    output is exp(x) / (1 + exp(x)). It must be within 2 ulp of the exact value
    (computed in float64) wherever that is a normal float32, and within the
    smallest normal float32, 1.2e-38, of it below. On the device 2,000 values cover
    the same range: the simulator runs a block per row.
    """
    x = np.linspace(0, -120, 200_000 if device == "cpu" else 2_000).astype(np.float32)
    rows = np.stack([np.zeros_like(x), x], axis=1)
    y = np.empty_like(rows)
    FAST.softmax(
        Strided(y.reshape(-1), y.shape, (2, 1), 0),
        Strided(rows.reshape(-1), rows.shape, (2, 1), 0),
        1,
        False,
    )
    e = np.exp(x.astype(np.float64))
    exact = e / (1 + e)
    got = y[:, 1].astype(np.float64)
    tiny = np.finfo(np.float32).tiny
    normal = exact >= tiny
    ulp = np.spacing(exact[normal].astype(np.float32)).astype(np.float64)
    assert (np.abs(got[normal] - exact[normal]) <= 2 * ulp).all()
    assert (np.abs(got[~normal] - exact[~normal]) <= tiny).all()
    np.testing.assert_allclose(y[:, 0], 1 / (1 + e), rtol=2.5e-7)
