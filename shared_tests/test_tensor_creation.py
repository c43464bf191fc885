"""Factory functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty (+ _like), arange,
linspace and eye."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from oracle import assert_close, contiguous_strides, dtype_name, gt_dtype, needs_torch, torch
from strategies import ALL_DTYPES

import glasstorch as gt

pytestmark = pytest.mark.creation


# ---------------------------------------------------------------------- tensor
@pytest.mark.parametrize(
    "data, dtype",
    [
        ([1, 2, 3], "int64"),
        ([1.0, 2.0], "float32"),
        ([True, False], "bool"),
        ([1, 2.5], "float32"),  # mixed int and float: float
        ([True, 2], "int64"),  # mixed bool and int: int
        ([[1, 2], [3, 4]], "int64"),
        ([[[1.0], [2.0]], [[3.0], [4.0]]], "float32"),
        (5, "int64"),
        (2.5, "float32"),
        (True, "bool"),
        ([], "float32"),  # an empty list is float
        ([[], []], "float32"),
    ],
)
def test_tensor_infers_dtype_and_shape(data, dtype, device):
    x = gt.tensor(data, device=device)
    assert_close(x, np.array(data, dtype=dtype))
    assert x.is_contiguous()
    if torch is not None:
        assert_close(x, torch.tensor(data), check_stride=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_with_dtype(dtype, device):
    x = gt.tensor([[0, 1], [2, 3]], dtype=gt_dtype(dtype), device=device)
    assert_close(x, np.array([[0, 1], [2, 3]]).astype(dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_from_numpy_array_copies_and_keeps_dtype(dtype, device):
    array = np.array([[1, 0, 3]]).astype(dtype)
    x = gt.tensor(array, device=device)
    assert_close(x, array)
    array[0, 0] = 0  # a copy: the tensor does not see later writes
    assert x[0, 0].item() == 1


def test_tensor_of_non_contiguous_numpy_array(device):
    array = np.arange(12.0).reshape(3, 4)[::2, 1:]
    x = gt.tensor(array, device=device)
    assert_close(x, array.copy())
    array[0, 0] = -1.0
    assert x[0, 0].item() == 1.0


# ------------------------------------------------------------------- as_tensor
@pytest.mark.cpu_only("as_tensor shares the memory of a NumPy array: host memory")
def test_as_tensor_shares_numpy_memory_when_it_can():
    array = np.array([1.0, 2.0, 3.0])
    x = gt.as_tensor(array)
    assert x.dtype == gt.float64
    array[0] = 10.0
    assert x[0].item() == 10.0
    y = gt.as_tensor(array, dtype=gt.float32)  # a different dtype needs a copy
    array[1] = 20.0
    assert_close(y, np.array([10.0, 2.0, 3.0], dtype=np.float32))


def test_as_tensor_of_tensor_and_list(device):
    x = gt.tensor([1, 2], device=device)
    assert gt.as_tensor(x) is x
    assert gt.as_tensor(x, device=device) is x
    assert_close(gt.as_tensor(x, dtype=gt.float32), np.array([1.0, 2.0], dtype=np.float32))
    listed = gt.as_tensor([[1.0, 2.0]], device=device)
    assert_close(listed, np.array([[1.0, 2.0]], dtype=np.float32))


# ------------------------------------------------------------------ from_numpy
@pytest.mark.cpu_only("from_numpy shares the memory of a NumPy array: host memory")
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_from_numpy_shares_memory_both_ways(dtype):
    array = np.zeros((2, 3), dtype=dtype)
    x = gt.from_numpy(array)
    assert_close(x, array, check_stride=True)
    array[1, 2] = 1
    assert x[1, 2].item() == 1
    x[0, 1] = 1
    assert array[0, 1] == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12.0).reshape(3, 4)[:, ::2],
        lambda: np.arange(12.0).reshape(3, 4).T,
        lambda: np.arange(24, dtype=np.int32).reshape(2, 3, 4)[1:, :, 1:3],
    ],
    ids=["step", "transposed", "offset"],
)
@pytest.mark.cpu_only("from_numpy views a NumPy array's host memory with its strides")
def test_from_numpy_keeps_strides(make):
    array = make()
    x = gt.from_numpy(array)
    assert_close(x, array, check_stride=True)
    array[(0,) * array.ndim] = -1
    assert x[(0,) * array.ndim].item() == -1


# ---------------------------------------------------------- filled factories
@pytest.mark.parametrize("factory, value", [("zeros", 0), ("ones", 1)])
@pytest.mark.parametrize("size", [(), (0,), (3,), (2, 3), (1, 0, 2)])
def test_zeros_ones(factory, value, size, device):
    fn = getattr(gt, factory)
    expected = np.full(size, value, dtype=np.float32)
    assert_close(fn(size, device=device), expected)
    assert fn(size, device=device).stride() == contiguous_strides(size)
    if size:
        assert_close(fn(*size, device=device), expected)
    assert_close(fn(list(size), device=device), expected)
    for dtype in ALL_DTYPES:
        assert_close(fn(size, dtype=gt_dtype(dtype), device=device), expected.astype(dtype))


@pytest.mark.parametrize(
    "fill, dtype", [(2, "int64"), (1.5, "float32"), (True, "bool"), (-3, "int64")]
)
def test_full_infers_dtype(fill, dtype, device):
    assert_close(gt.full((2, 2), fill, device=device), np.full((2, 2), fill, dtype=dtype))
    assert_close(
        gt.full((3,), fill, dtype=gt.float64, device=device), np.full((3,), fill, dtype=np.float64)
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_empty(dtype, device):
    x = gt.empty(2, 3, dtype=gt_dtype(dtype), device=device)
    assert x.shape == (2, 3)
    assert dtype_name(x.dtype) == dtype
    assert x.stride() == (3, 1)
    assert x.device.type == device
    assert gt.empty((0, 4), device=device).shape == (0, 4)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_like_factories(dtype, device):
    x = gt.tensor([[1, 0, 1]], dtype=gt_dtype(dtype), device=device)
    assert_close(gt.zeros_like(x), np.zeros((1, 3), dtype=dtype))
    assert_close(gt.ones_like(x), np.ones((1, 3), dtype=dtype))
    assert_close(gt.full_like(x, 1), np.full((1, 3), 1, dtype=dtype))
    e = gt.empty_like(x)
    assert e.shape == (1, 3) and e.dtype == x.dtype and e.device.type == device
    assert_close(gt.zeros_like(x, dtype=gt.float64), np.zeros((1, 3)))


@needs_torch
@pytest.mark.parametrize("factory", ["zeros_like", "ones_like", "empty_like"])
def test_like_factories_preserve_dense_strides(factory, device):
    for make in (
        lambda lib, **on: lib.ones(2, 3, **on).t(),
        lambda lib, **on: lib.ones(4, 6, **on)[:, ::2],
    ):
        expected = getattr(torch, factory)(make(torch))
        actual = getattr(gt, factory)(make(gt, device=device))
        assert actual.shape == expected.shape
        assert actual.stride() == expected.stride()
        assert actual.device.type == device


def test_factories_are_fresh_storage(device):
    x = gt.zeros(3, device=device)
    y = gt.zeros(3, device=device)
    x[0] = 1.0
    assert y[0].item() == 0.0


# ---------------------------------------------------------------------- arange
@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((0,), {}),
        ((2, 7), {}),
        ((1, 10, 3), {}),
        ((5, 0, -2), {}),
        ((5.0,), {}),
        ((0, 1, 0.25), {}),
        ((0, 1, 0.1), {}),
        ((-1.5, 1.0, 0.5), {}),
        ((1, 2.5), {}),
        ((3,), {"dtype": "float64"}),
        ((0, 3, 0.5), {"dtype": "float64"}),
        ((4,), {"dtype": "int32"}),
        ((0.0, 4.0), {"dtype": "int64"}),
        ((6,), {"dtype": "uint8"}),
    ],
)
def test_arange(args, kwargs, device):
    dtype = kwargs.get("dtype")
    gt_kwargs = {"dtype": gt_dtype(dtype)} if dtype else {}
    x = gt.arange(*args, **gt_kwargs, device=device)
    if dtype is None:
        all_int = all(isinstance(a, int) for a in args)
        dtype = "int64" if all_int else "float32"
    assert_close(x, np.arange(*args, dtype=np.float64).astype(dtype))
    if torch is not None:
        torch_kwargs = {"dtype": getattr(torch, kwargs["dtype"])} if "dtype" in kwargs else {}
        assert_close(x, torch.arange(*args, **torch_kwargs), check_stride=True)


def test_arange_keywords(device):
    assert_close(gt.arange(start=1, end=4, device=device), np.array([1, 2, 3]))
    assert_close(gt.arange(0, 6, step=2, device=device), np.array([0, 2, 4]))


#: (start, step) pairs for the bit-exact arange comparisons: steps that no
#: float holds exactly, up and down, tiny and huge, int arguments for a float
#: dtype, and a start past 2**53 (which only rounds to a double).
ARANGE_STEPS = [
    (-3.7, 0.3),
    (0.1, 0.1),
    (11.2, -0.3),
    (0.0, 1 / 3),
    (-1e6, 1234.567),
    (1e-30, 3.3e-31),
    (5, 7),
    (2**60 + 1, 3),
]

#: Lengths around the blocks of 16 float32 / 8 float64 values, and long ones.
ARANGE_LENGTHS = [*range(1, 70), 1000, 4099]


def _arange_of_length(module, start, step, n, **kwargs):
    """``module.arange`` with ``end`` half a step past the last of ``n`` values."""
    return module.arange(start, start + (n - 0.5) * step, step, **kwargs)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start, step", ARANGE_STEPS)
def test_float_arange_matches_pytorch_bit_for_bit(start, step, dtype, device):
    """Every value is PyTorch's to the last bit, across whole blocks and tails."""
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("PyTorch without FMA (ATEN_CPU_CAPABILITY=default) rounds twice")
    for n in ARANGE_LENGTHS:
        theirs = _arange_of_length(torch, start, step, n, dtype=getattr(torch, dtype))
        mine = _arange_of_length(gt, start, step, n, dtype=gt_dtype(dtype), device=device)
        _same_bits(mine.cpu().numpy(), theirs.numpy(), f"{n} values")


@needs_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_arange_matches_pytorch(dtype, device):
    """Integer outputs are exact, the ends and step truncated first."""
    for start, end, step in [(0, 200, 3), (-5.5, 99.9, 2.5), (7, 250, 1.9), (3, 40, 1.7)]:
        if dtype == "uint8" and start < 0:
            continue
        mine = gt.arange(start, end, step, dtype=gt_dtype(dtype), device=device)
        theirs = torch.arange(start, end, step, dtype=getattr(torch, dtype))
        _same_bits(mine.cpu().numpy(), theirs.numpy(), f"{start, end, step}")


def _documented_arange(start: float, step: float, n: int, dtype: str) -> np.ndarray:
    """The contract's float arange, derived here with exact fractions: vectors of
    8 float32 / 4 float64 lanes in blocks of two vectors, each vector stepping from
    its first value rounded to the dtype; values after the last block from start."""
    as_dtype = np.dtype(dtype).type
    lanes = 8 if dtype == "float32" else 4
    in_blocks = n - n % (2 * lanes)
    values = []
    for i in range(n):
        if i < in_blocks:
            first = i - i % lanes
            base = float(as_dtype(_correctly_rounded_fma(step, first, start)))
            values.append(_correctly_rounded_fma(i - first, step, base))
        else:
            values.append(_correctly_rounded_fma(step, i, start))
    return np.array(values).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start, step", ARANGE_STEPS[:6])
def test_float_arange_follows_the_documented_formula(start, step, dtype, device):
    for n in range(1, 70):
        x = _arange_of_length(gt, start, step, n, dtype=gt_dtype(dtype), device=device)
        _same_bits(x.cpu().numpy(), _documented_arange(start, step, n, dtype), f"{n} values")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_arange_of_exact_steps_is_exact(dtype, device):
    """Where every value is a float, no rounding shows: NumPy's exact values."""
    for start, step, n in [(-8.0, 0.25, 100), (3.0, -0.5, 37), (1e9, 64.0, 50)]:
        x = _arange_of_length(gt, start, step, n, dtype=gt_dtype(dtype), device=device)
        expected = (start + np.arange(n, dtype=np.float64) * step).astype(dtype)
        _same_bits(x.cpu().numpy(), expected, f"{start, step, n}")


# -------------------------------------------------------------------- linspace
@pytest.mark.parametrize(
    "start, end, steps, dtype",
    [
        (0, 1, 5, None),
        (-1.0, 1.0, 7, None),
        (2, -2, 4, None),
        (0, 1, 1, None),
        (0, 1, 0, None),
        (0, 10, 6, "float64"),
        (0.1, 0.9, 9, "float64"),
    ],
)
def test_linspace(start, end, steps, dtype, device):
    kwargs = {"dtype": gt_dtype(dtype)} if dtype else {}
    x = gt.linspace(start, end, steps, **kwargs, device=device)
    assert_close(x, np.linspace(start, end, steps).astype(dtype or "float32"))
    if torch is not None:
        torch_kwargs = {"dtype": getattr(torch, dtype)} if dtype else {}
        assert_close(x, torch.linspace(start, end, steps, **torch_kwargs))
    assert_close(gt.linspace(start, end, steps=steps, **kwargs, device=device), x.cpu().numpy())


#: Ranges for the bit-exact comparisons: up and reversed, negative, across zero,
#: huge, tiny, a single value, and ends that float32 cannot hold exactly.
LINSPACE_RANGES = [
    (-1.0, 1.0),
    (1.0, -1.0),
    (0.0, 1.0),
    (-5.0, -2.0),
    (-3.7, 11.2),
    (0.1, 0.3),
    (1e6, -2e7),
    (-1e30, 1e30),
    (1e-30, 3e-30),
    (2.5, 2.5),
]


def _same_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    assert actual.tobytes() == expected.tobytes(), f"{what}: {actual} != {expected}"


@needs_torch
@pytest.mark.parametrize(
    "start, end, dtype",
    [(*ends, dtype) for ends in LINSPACE_RANGES for dtype in ("float32", "float64")]
    # an integer linspace spaces the truncated ends: ranges of int64
    + [(a * 1000, b * 1000, "int64") for a, b in LINSPACE_RANGES if abs(a) < 1e9],
)
def test_linspace_matches_pytorch_bit_for_bit(start, end, dtype, device):
    """Every value is PyTorch's to the last bit, for 1 to 64 points."""
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("PyTorch without FMA (ATEN_CPU_CAPABILITY=default) rounds twice")
    for steps in range(1, 65):
        mine = gt.linspace(start, end, steps, dtype=gt_dtype(dtype), device=device)
        theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
        _same_bits(mine.cpu().numpy(), theirs.numpy(), f"{steps} points")


@needs_torch
@pytest.mark.parametrize(
    "start, end, dtype",
    [
        (-(2**40), 2**40 + 7, "int64"),
        (5, -123456789, "int64"),
        (-7, 13, "int32"),
        (3, 250, "uint8"),
    ],
)
def test_integer_linspace_matches_pytorch(start, end, dtype, device):
    """Integer outputs: double arithmetic, each value truncated toward zero."""
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("PyTorch without FMA (ATEN_CPU_CAPABILITY=default) rounds twice")
    for steps in (2, 3, 7, 10, 33, 64, 100):
        mine = gt.linspace(start, end, steps, dtype=gt_dtype(dtype), device=device)
        theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
        _same_bits(mine.cpu().numpy(), theirs.numpy(), f"{steps} points")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("start, end", [(-1.0, 1.0), (1.0, -1.0), (-3.7, 11.2), (-1e30, 1e30)])
def test_linspace_halves_meet_at_exact_ends(start, end, dtype, device):
    """The first half counts from start, the second from end: both ends are exact,
    the values move one way, and a range symmetric about zero gives mirrored halves."""
    as_dtype = np.dtype(dtype).type
    for steps in range(2, 65):
        x = gt.linspace(start, end, steps, dtype=gt_dtype(dtype), device=device).cpu().numpy()
        assert x[0] == as_dtype(start) and x[-1] == as_dtype(end), steps
        differences = np.diff(x) * np.sign(end - start)
        assert (differences > 0).all(), steps
        if start == -end:
            half = steps // 2
            np.testing.assert_array_equal(x[:half], -x[::-1][:half])


def _correctly_rounded_fma(a: float, b: float, c: float) -> float:
    """``a * b + c`` rounded once to double (exact fractions, then one rounding)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


@pytest.mark.parametrize("start, end", [(-1.0, 1.0), (0.1, 0.3), (1e6, -2e7), (-3.7, 11.2)])
def test_float64_linspace_is_one_rounding_per_point(start, end, device):
    """float64 values follow the documented formula: step ``(end - start) / (n - 1)``,
    then ``start + i * step`` (first half) or ``end - (n - 1 - i) * step``, each
    rounded once; derived here with exact fractions."""
    for steps in range(2, 65):
        step = (end - start) / (steps - 1)
        expected = np.array(
            [
                _correctly_rounded_fma(step, i, start)
                if i < steps // 2
                else _correctly_rounded_fma(-step, steps - 1 - i, end)
                for i in range(steps)
            ]
        )
        x = gt.linspace(start, end, steps, dtype=gt.float64, device=device).cpu().numpy()
        _same_bits(x, expected, f"{steps} points")


def test_integer_linspace_of_exact_steps(device):
    """Where the step is a whole number, an integer linspace is the arange of it."""
    x = gt.linspace(-7, 13, 21, dtype=gt.int64, device=device)
    assert_close(x, np.arange(-7, 14))
    assert_close(
        gt.linspace(250, 0, 6, dtype=gt.uint8, device=device),
        np.arange(250, -1, -50, dtype=np.uint8),
    )


def test_float32_linspace_refuses_ends_past_its_range():
    """PyTorch converts both ends to float32 first and refuses an overflow (a single
    point converts only ``start``)."""
    for args in [(0.0, 1e39, 2), (1e39, 0.0, 5)]:
        with pytest.raises(
            RuntimeError, match="value cannot be converted to type float without overflow"
        ):
            gt.linspace(*args)
    assert gt.linspace(0.0, 1e39, 1).tolist() == [0.0]
    assert gt.linspace(0.0, 1e39, 3, dtype=gt.float64).tolist() == [0.0, 5e38, 1e39]


# ------------------------------------------------------------------------- eye
@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (1, 1)])
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "bool"])
def test_eye(args, dtype, device):
    kwargs = {"dtype": gt_dtype(dtype)} if dtype else {}
    expected = np.eye(*args).astype(dtype or "float32")
    assert_close(gt.eye(*args, **kwargs, device=device), expected)


def test_as_tensor_of_a_tensor_converts_like_to():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    assert gt.as_tensor(x) is x
    doubled = gt.as_tensor(x, dtype=gt.float64)
    assert doubled.dtype == gt.float64
    doubled.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "name, args",
    [("arange", (5,)), ("linspace", (0.0, 1.0, 4)), ("eye", (3,))],
)
def test_factories_write_into_out(name, args):
    out = gt.empty(0)
    result = getattr(gt, name)(*args, out=out)
    assert result is out
    assert_close(out, getattr(gt, name)(*args).to(gt.float32).numpy())
    if torch is not None:
        theirs = torch.empty(0)
        getattr(torch, name)(*args, out=theirs)
        assert_close(out, theirs)


def test_diag_writes_into_out():
    out = gt.empty(0)
    assert gt.diag(gt.tensor([1.0, 2.0]), out=out) is out
    assert_close(out, np.diag([1.0, 2.0]).astype(np.float32))


def test_full_and_randperm_write_into_out():
    out = gt.empty(0)
    assert gt.full((2, 3), 1.5, out=out) is out
    assert out.shape == (2, 3) and (out.numpy() == 1.5).all()
    perm = gt.empty(0, dtype=gt.int64)
    assert gt.randperm(6, out=perm) is perm and sorted(perm.tolist()) == list(range(6))
    if torch is not None:
        theirs = torch.empty(0, dtype=torch.int64)
        torch.randperm(6, out=theirs)
        assert theirs.shape == perm.shape and theirs.dtype == torch.int64


LAYOUT_CALLS = [
    "arange(5, layout={t}.strided)", "arange(1, 4, 0.5, layout={t}.strided)",
    "linspace(0, 1, 4, layout={t}.strided)", "eye(3, layout={t}.strided)",
    "full((2,), 3.0, layout={t}.strided)", "zeros(2, 3, layout={t}.strided)",
    "ones(2, layout={t}.strided)", "empty(2, layout={t}.strided).zero_()",
    "randperm(0, layout={t}.strided)",
]  # fmt: skip


@pytest.mark.parametrize("call", LAYOUT_CALLS)
def test_factories_take_the_strided_layout(call):
    ours = eval("gt." + call.format(t="gt"))
    assert ours.layout is gt.strided and ours.is_contiguous()
    if torch is not None:
        assert_close(ours, eval("torch." + call.format(t="torch")))


@pytest.mark.parametrize("name, args", [("arange", (3,)), ("eye", (2,)), ("linspace", (0, 1, 3)),
                                        ("randperm", (3,)), ("zeros", (2,)), ("full", ((2,), 1.0))])  # fmt: skip
def test_factories_refuse_another_layout(name, args):
    with pytest.raises(NotImplementedError, match="only torch.strided"):
        getattr(gt, name)(*args, layout=gt.sparse_coo)


PINNED_CALLS = [
    ("tensor", ([1.0, 2.0],)), ("arange", (4,)), ("linspace", (0, 1, 3)), ("eye", (2,)),
    ("full", ((2,), 7.0)), ("zeros", (3,)), ("ones", (3,)), ("empty", (3,)), ("randperm", (5,)),
]  # fmt: skip


@pytest.mark.parametrize("name, args", PINNED_CALLS)
def test_factories_pin_memory(name, args):
    """pin_memory=True gives a pinned CPU tensor where glasstorch can pin (a CUDA
    device, the simulator's too), PyTorch's error for a CUDA target, and
    Tensor.pin_memory's error without CUDA; pin_memory=False changes nothing."""
    plain = getattr(gt, name)(*args, pin_memory=False)
    assert not plain.is_pinned()
    if not gt.cuda.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            getattr(gt, name)(*args, pin_memory=True)
        return
    pinned = getattr(gt, name)(*args, pin_memory=True)
    assert pinned.is_pinned() and pinned.device.type == "cpu"
    assert pinned.shape == plain.shape and pinned.dtype == plain.dtype
    if name not in ("empty", "randperm"):
        assert np.array_equal(pinned.numpy(), plain.numpy())
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        getattr(gt, name)(*args, device="cuda", pin_memory=True)
