"""The fast tier's elementwise kernels against the reference tier's, call for call.

Each test builds the same :class:`Strided` views for both tiers (contiguous,
permuted, sliced, broadcast, at offsets; zero-size and size-1 dimensions), runs
the fast kernel and the reference kernel, and compares the *whole* output
buffers: integer, bool and copied results bit for bit, computed floats within
float tolerance. Comparing whole buffers also catches a write outside the view.

On ``--device=cuda`` the same calls run the CUDA tier's kernels
(:func:`kernel_views.kernels_under_test`) against the reference tier's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_views import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    LAYOUTS,
    WRITABLE_LAYOUTS,
    contiguous,
    copy_view,
    kernels_under_test,
    shapes,
    views,
)

from glasstorch._kernels import BINARY_OPS, BOOL_RESULT_OPS, UNARY_OPS, Strided
from glasstorch.reference import ReferenceKernels

fast_elementwise = pytest.importorskip(
    "glasstorch.fast.elementwise", reason="the fast tier's C extension is not built"
)

pytestmark = pytest.mark.contract

FAST = kernels_under_test(fast_elementwise.ElementwiseKernels())
REFERENCE = ReferenceKernels()
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-300)}
INTEGER_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor"}


def assert_same(fast: np.ndarray, reference: np.ndarray, exact: bool = False) -> None:
    """Equal bit for bit (integers, bools, ``exact``), or within float tolerance."""
    if exact or fast.dtype.name not in TOLERANCES:
        np.testing.assert_array_equal(fast.view(np.uint8), reference.view(np.uint8))
        return
    rtol, atol = TOLERANCES[fast.dtype.name]
    np.testing.assert_allclose(fast, reference, rtol=rtol, atol=atol, equal_nan=True)


def run_both(kernel: str, out: Strided, *inputs, op: str | None = None):
    """Run ``kernel`` of both tiers into copies of ``out``; return (fast, reference) buffers."""
    fast_out, reference_out = copy_view(out), copy_view(out)
    lead = () if op is None else (op,)
    getattr(FAST, kernel)(*lead, fast_out, *inputs)
    getattr(REFERENCE, kernel)(*lead, reference_out, *inputs)
    return fast_out.buffer, reference_out.buffer


def out_dtype(op: str, dtype: str) -> str:
    return "bool" if op in BOOL_RESULT_OPS else dtype


# ------------------------------------------------------------------ op tables
@pytest.mark.cpu_only("the C tier's op-code tables")
def test_every_contract_op_has_a_c_code():
    assert set(fast_elementwise.UNARY_CODES) == set(UNARY_OPS)
    assert set(fast_elementwise.BINARY_CODES) == set(BINARY_OPS)
    assert len(set(fast_elementwise.UNARY_CODES.values())) == len(UNARY_OPS)
    assert len(set(fast_elementwise.BINARY_CODES.values())) == len(BINARY_OPS)


def test_an_undefined_combination_raises_instead_of_writing(device):
    a = contiguous((3,), "float32")
    with pytest.raises(TypeError, match="bitwise_and"):
        FAST.binary("bitwise_and", contiguous((3,), "float32"), a, a)
    with pytest.raises(TypeError, match="add"):  # out of the wrong dtype
        FAST.binary("add", contiguous((3,), "float64"), a, a)


# ----------------------------------------------------------------------- unary
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", UNARY_OPS)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_matches_reference(op, dtype, data, device):
    if op in INTEGER_ONLY and dtype in FLOAT_DTYPES:
        return
    shape = data.draw(shapes())
    a = data.draw(views(shape, dtype))
    out = data.draw(views(shape, out_dtype(op, dtype), kinds=WRITABLE_LAYOUTS))
    fast, reference = run_both("unary", out, a, op=op)
    assert_same(fast, reference)


# ---------------------------------------------------------------------- binary
def _second_operand_elements(op: str, dtype: str) -> str:
    """What b may hold: integer division needs b != 0, integer pow b in 0..70."""
    if dtype not in FLOAT_DTYPES and op in ("floor_divide", "remainder"):
        return "nonzero"
    if dtype not in FLOAT_DTYPES and op == "pow":
        return "exponent"
    return "special"


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", BINARY_OPS)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_matches_reference(op, dtype, data, device):
    if op in INTEGER_ONLY and dtype in FLOAT_DTYPES:
        return
    shape = data.draw(shapes())
    a = data.draw(views(shape, dtype))
    b = data.draw(views(shape, dtype, elements=_second_operand_elements(op, dtype)))
    out = data.draw(views(shape, out_dtype(op, dtype), kinds=WRITABLE_LAYOUTS))
    fast, reference = run_both("binary", out, a, b, op=op)
    assert_same(fast, reference)


@pytest.mark.parametrize("op", ["add", "lt"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("offset", [0, 3])
def test_a_fresh_output_laid_out_as_its_first_operand(op, dtype, offset, device):
    """The frontend hands a new output its first operand's very shape and
    strides tuples (the fast tier then fills the output's C view in the
    kernel's call): the output's dtype and offset are its own, and its view
    describes it when it is an operand in turn."""
    rng = np.random.default_rng(0)
    a = contiguous((2, 3), dtype)
    a.buffer[:] = rng.integers(-5, 5, a.buffer.size)
    b = Strided(a.buffer[::-1].copy(), a.shape, a.strides, 0)

    def fresh():
        buffer = np.full(offset + 6, 7, dtype=out_dtype(op, dtype))
        return Strided(buffer, a.shape, a.strides, offset)

    fast_out, reference_out = fresh(), fresh()
    FAST.binary(op, fast_out, a, b)
    REFERENCE.binary(op, reference_out, a, b)
    assert_same(fast_out.buffer, reference_out.buffer)
    if op == "add":  # the output as an operand: its C view describes it
        again, expected = contiguous((2, 3), dtype), contiguous((2, 3), dtype)
        FAST.binary("add", again, fast_out, a)
        REFERENCE.binary("add", expected, reference_out, a)
        assert_same(again.buffer, expected.buffer)


def test_a_fresh_output_of_the_wrong_dtype_is_refused(device):
    a = contiguous((4,), "float32")
    out = Strided(np.zeros(4, dtype="float64"), a.shape, a.strides, 0)
    with pytest.raises(TypeError, match="add"):
        FAST.binary("add", out, a, a)
    assert not out.buffer.any()


ADD_SCALED_ALPHAS = (2, -3, 0, 1, 2**40 + 7, -(2**63))
ADD_SCALED_FLOAT_ALPHAS = (2.0, -1.5, 0.1, 1e-3)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
@settings(max_examples=12)
@given(data=st.data())
def test_add_scaled_matches_reference(dtype, data, device):
    shape = data.draw(shapes())
    a, b = data.draw(views(shape, dtype)), data.draw(views(shape, dtype))
    out = data.draw(views(shape, dtype, kinds=WRITABLE_LAYOUTS))
    floating = dtype in FLOAT_DTYPES
    alpha = data.draw(st.sampled_from(ADD_SCALED_FLOAT_ALPHAS if floating else ADD_SCALED_ALPHAS))
    fast, reference = run_both("add_scaled", out, a, b, alpha)
    assert_same(fast, reference)  # integers wrap bit for bit


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
@given(data=st.data())
def test_add_scaled_into_its_first_input(dtype, data, device):
    shape = data.draw(shapes())
    a = data.draw(views(shape, dtype, kinds=WRITABLE_LAYOUTS))
    b = data.draw(views(shape, dtype))
    alpha = 2.0 if dtype in FLOAT_DTYPES else -3
    expected = copy_view(a)
    REFERENCE.add_scaled(expected, copy_view(a), b, alpha)
    FAST.add_scaled(a, a, b, alpha)  # x.add_(y, alpha=...): out is a
    assert_same(a.buffer, expected.buffer)


# ------------------------------------------------------------- copy and casts
@pytest.mark.parametrize("src_dtype", ALL_DTYPES)
@pytest.mark.parametrize("dst_dtype", ALL_DTYPES)
@settings(max_examples=12)
@given(data=st.data())
def test_copy_casts_bit_for_bit(dst_dtype, src_dtype, data, device):
    shape = data.draw(shapes())
    src = data.draw(views(shape, src_dtype))
    out = data.draw(views(shape, dst_dtype, kinds=WRITABLE_LAYOUTS))
    fast, reference = run_both("copy", out, src)
    assert_same(fast, reference, exact=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@given(data=st.data())
def test_copy_onto_the_same_view(dtype, data, device):
    shape = data.draw(shapes())
    view = data.draw(views(shape, dtype, kinds=WRITABLE_LAYOUTS))
    before = view.buffer.copy()
    FAST.copy(view, view)
    np.testing.assert_array_equal(view.buffer.view(np.uint8), before.view(np.uint8))


# ------------------------------------------------------------------ fill, where
FILL_VALUES = (0, 1, -1, 7, 300, 2**40 + 3, -(2**63), 2**63 + 5, True, False)
FILL_FLOATS = (0.0, -0.0, 2.5, -7.9, 1e20, float("nan"), float("inf"), 3.5e38)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@given(data=st.data())
def test_fill_matches_reference(dtype, data, device):
    shape = data.draw(shapes())
    out = data.draw(views(shape, dtype, kinds=WRITABLE_LAYOUTS))
    value = data.draw(st.sampled_from(FILL_VALUES + FILL_FLOATS))
    fast, reference = run_both("fill", out, value)
    assert_same(fast, reference, exact=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@given(data=st.data())
def test_where_matches_reference(dtype, data, device):
    shape = data.draw(shapes())
    cond = data.draw(views(shape, "bool"))
    a, b = data.draw(views(shape, dtype)), data.draw(views(shape, dtype))
    out = data.draw(views(shape, dtype, kinds=WRITABLE_LAYOUTS))
    fast, reference = run_both("where", out, cond, a, b)
    assert_same(fast, reference, exact=True)


# -------------------------------------------- large: the OpenMP and SIMD paths
LARGE_SHAPE = (150, 300)  # 45,000 elements: above GT_PARALLEL_THRESHOLD


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize(
    ("kernel", "op", "dtype"),
    [
        ("binary", "add", "float32"),
        ("binary", "mul", "int64"),
        ("binary", "lt", "float64"),
        ("unary", "exp", "float32"),
        ("unary", "neg", "int32"),
        ("copy", None, "float64"),
        ("where", None, "float32"),
        ("fill", None, "uint8"),
    ],
)
@settings(max_examples=2)
@given(data=st.data())
def test_large_tensors_match_reference(kernel, op, dtype, kind, data, device):
    inputs = {"binary": 2, "unary": 1, "copy": 1, "where": 0, "fill": 0}[kernel]
    args = [data.draw(views(LARGE_SHAPE, dtype, kinds=(kind,))) for _ in range(inputs)]
    if kernel == "copy":
        args = [data.draw(views(LARGE_SHAPE, "int32", kinds=(kind,)))]  # a cast, too
    if kernel == "where":
        args = [data.draw(views(LARGE_SHAPE, "bool", kinds=(kind,)))] + [
            data.draw(views(LARGE_SHAPE, dtype, kinds=(kind,))) for _ in range(2)
        ]
    if kernel == "fill":
        args = [300]
    result_dtype = out_dtype(op, dtype) if op else dtype
    out_kind = kind if kind in WRITABLE_LAYOUTS else "contiguous"
    out = data.draw(views(LARGE_SHAPE, result_dtype, kinds=(out_kind,)))
    fast, reference = run_both(kernel, out, *args, op=op)
    assert_same(fast, reference)
