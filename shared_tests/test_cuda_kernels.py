"""The CUDA tier's kernels, one contract call at a time, against the CPU tier.

Each test runs a kernel of ``glasstorch.fast.cuda.kernels`` on device buffers
(under ``GLASSTORCH_CUDA=simulator``: the very ``.cu`` source, compiled for the
CPU) and the same kernel of the CPU tier under test on NumPy buffers, and
compares the outputs: bit for bit where every tier computes the same
operations in the same order (random numbers, creation, cumsum, indexing,
sorting, pooling forward), to float tolerance elsewhere. Sizes are tiny: the
simulator runs each CUDA thread as a coroutine.

The first test needs no device: it lists the contract's kernels against the
CUDA tier's.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from cuda_support import requires_cuda

from glasstorch._kernels import Strided, contract_kernel_names

pytestmark = pytest.mark.cuda

FLOATS = ("float32", "float64")
DTYPES = ("bool", "uint8", "int32", "int64", "float32", "float64")


# ------------------------------------------------------------------ the contract
@pytest.mark.contract
def test_the_cuda_tier_implements_the_whole_contract():
    from glasstorch._kernels import KERNEL_FAMILIES
    from glasstorch._tier import missing_kernels
    from glasstorch.fast.cuda.kernels import CudaKernels

    missing = missing_kernels(CudaKernels.__new__(CudaKernels))
    print(f"CUDA families: {list(KERNEL_FAMILIES)}; missing kernels: {missing}")
    assert missing == [], f"contract kernels without a CUDA kernel: {missing}"
    for name in contract_kernel_names():  # each one the CUDA tier's own, none inherited
        owner = getattr(CudaKernels, name).__module__
        assert owner.startswith("glasstorch.fast.cuda.kernels."), (name, owner)


# ------------------------------------------------------------------ harness
@pytest.fixture(scope="module")
def cuda():
    """The CUDA tier's kernel object over the active driver."""
    from glasstorch._gpu import runtime
    from glasstorch._tier import cpu_kernels
    from glasstorch.fast.cuda.kernels import make_kernels

    return make_kernels(runtime.driver, cpu_kernels)


@pytest.fixture(scope="module")
def cpu():
    """The CPU tier under test (GLASSTORCH_TIER), the oracle of every test here."""
    from glasstorch._tier import DEFAULT_TIER, load_tier

    return load_tier(os.environ.get("GLASSTORCH_TIER", DEFAULT_TIER))


def host(array: np.ndarray) -> Strided:
    """A CPU view of a contiguous NumPy array (written in place by CPU kernels)."""
    strides = tuple(s // array.itemsize for s in array.strides)
    return Strided(array.reshape(-1), array.shape, strides, 0)


def device(kernels, array: np.ndarray) -> Strided:
    """A contiguous device copy of ``array``."""
    array = np.array(array, order="C")  # (ascontiguousarray would make a 0-d array 1-D)
    buffer = kernels.driver.device_empty(array.size, array.dtype)
    if array.size:
        kernels.copy_to_device(buffer.ptr, array.reshape(-1))
    return Strided(buffer, array.shape, tuple(s // array.itemsize for s in array.strides), 0)


def fetch(kernels, view: Strided) -> np.ndarray:
    """The elements of a device view, as a NumPy array of its shape."""
    buffer = view.buffer
    flat = np.empty(buffer.size, buffer.dtype)
    if buffer.size:
        kernels.copy_to_host(flat, buffer.ptr)
    if not view.shape:
        return flat[view.offset].copy().reshape(())
    itemsize = buffer.dtype.itemsize
    strides = [s * itemsize for s in view.strides]
    return np.lib.stride_tricks.as_strided(flat[view.offset :], view.shape, strides).copy()


def optional(kernels, array):
    return None if array is None else device(kernels, array)


def optional_host(array):
    return None if array is None else host(array)


def numbers(shape, dtype, seed=0, scale=3.0):
    """Small random values of ``dtype`` (integers in [0, 4] for integer dtypes: ties)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * scale).astype(dtype)
    return rng.integers(0, 5 if dtype != "bool" else 2, shape).astype(dtype)


def same_bits(actual, expected):
    assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes(), (
        actual,
        expected,
    )


def close(actual, expected, dtype):
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-11
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)


# ------------------------------------------------------------------ random
@requires_cuda
@pytest.mark.random
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kernel, args",
    [("random_uniform", (-2.0, 3.0)), ("random_normal", (0.5, 2.0)), ("random_integers", (-3, 9))],
)
def test_random_kernels_give_the_cpu_tiers_bits(cuda, cpu, kernel, args, dtype):
    for shape in [(7,), (2, 5), ()]:
        expected = np.zeros(shape, dtype)
        getattr(cpu, kernel)(host(expected), 1234, 7, *args)
        out = device(cuda, np.zeros(shape, dtype))
        getattr(cuda, kernel)(out, 1234, 7, *args)
        same_bits(fetch(cuda, out), expected)


@requires_cuda
@pytest.mark.random
def test_random_into_a_strided_view_and_randperm(cuda, cpu):
    base = device(cuda, np.zeros((3, 8), np.float32))
    strided = base._replace(shape=(3, 4), strides=(8, 2))
    cuda.random_normal(strided, 99, 3, 0.0, 1.0)
    expected = np.zeros((3, 4), np.float32)
    cpu.random_normal(host(expected), 99, 3, 0.0, 1.0)
    same_bits(fetch(cuda, strided), expected)
    for n in (1, 2, 9):
        expected = np.zeros(n, np.int64)
        cpu.randperm(host(expected), 42, 11)
        out = device(cuda, np.zeros(n, np.int64))
        cuda.randperm(out, 42, 11)
        same_bits(fetch(cuda, out), expected)


# ------------------------------------------------------------------ slices
SLICE_CASES = [((3, 5), 1), ((3, 5), 0), ((2, 3, 40), 2), ((6,), 0)]


@requires_cuda
@pytest.mark.reduction
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_softmax(cuda, cpu, dtype, log):
    for shape, dim in SLICE_CASES:
        a = numbers(shape, dtype)
        expected = np.zeros(shape, dtype)
        cpu.softmax(host(expected), host(a), dim, log)
        out = device(cuda, np.zeros(shape, dtype))
        cuda.softmax(out, device(cuda, a), dim, log)
        close(fetch(cuda, out), expected, dtype)


@requires_cuda
@pytest.mark.reduction
def test_softmax_of_a_transposed_view(cuda, cpu):
    a = numbers((4, 6), "float32")
    expected = np.zeros((6, 4), np.float32)
    cpu.softmax(host(expected), host(np.ascontiguousarray(a.T)), 1, False)
    transposed = device(cuda, a)._replace(shape=(6, 4), strides=(1, 6))
    out = device(cuda, np.zeros((6, 4), np.float32))
    cuda.softmax(out, transposed, 1, False)
    close(fetch(cuda, out), expected, "float32")


@requires_cuda
@pytest.mark.reduction
@pytest.mark.parametrize("dtype", DTYPES)
def test_arg_reduce_finds_the_first_extreme(cuda, cpu, dtype):
    for shape, dim in SLICE_CASES + [((2, 300), 1)]:
        a = numbers(shape, dtype)
        if dtype == "float32" and a.size > 8:
            a.reshape(-1)[5] = np.nan
        kept = tuple(1 if d == dim else s for d, s in enumerate(shape))
        for op in ("max", "min"):
            values, indices = np.zeros(kept, dtype), np.zeros(kept, np.int64)
            cpu.arg_reduce(op, host(values), host(indices), host(a), dim)
            dv, di = device(cuda, np.zeros(kept, dtype)), device(cuda, np.zeros(kept, np.int64))
            cuda.arg_reduce(op, dv, di, device(cuda, a), dim)
            same_bits(fetch(cuda, di), indices)
            same_bits(fetch(cuda, dv), values)


@requires_cuda
@pytest.mark.reduction
@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_adds_in_the_cpu_tiers_order(cuda, cpu, dtype):
    for shape, dim in SLICE_CASES:
        a = numbers(shape, dtype)
        expected = np.zeros(shape, dtype)
        cpu.cumsum(host(expected), host(a), dim)
        out = device(cuda, np.zeros(shape, dtype))
        cuda.cumsum(out, device(cuda, a), dim)
        same_bits(fetch(cuda, out), expected)


# ------------------------------------------------------------------ cross-entropy
@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_its_gradient(cuda, cpu, dtype, weighted):
    rows, classes = 4, 37
    logits = numbers((rows, classes), dtype)
    target = np.array([3, -100, 36, 0], np.int64)
    weight = np.linspace(0.5, 2.0, classes).astype(dtype) if weighted else None
    shapes = [(rows,), (rows,), (3,), (rows, classes)]
    expected = [np.zeros(s, dtype) for s in shapes]
    assert cpu.cross_entropy(*map(host, expected), host(logits), host(target),
                             optional_host(weight), -100) == -1  # fmt: skip
    outs = [device(cuda, np.zeros(s, dtype)) for s in shapes]
    assert cuda.cross_entropy(*outs, device(cuda, logits), device(cuda, target),
                              optional(cuda, weight), -100) == -1  # fmt: skip
    for out, want in zip(outs, expected):
        close(fetch(cuda, out), want, dtype)
    grad_losses = numbers((rows,), dtype, seed=1)
    want = np.zeros((rows, classes), dtype)
    cpu.cross_entropy_backward(host(want), host(expected[3]), host(target),
                               optional_host(weight), host(grad_losses), -100)  # fmt: skip
    grad = device(cuda, np.zeros((rows, classes), dtype))
    cuda.cross_entropy_backward(grad, device(cuda, expected[3]), device(cuda, target),
                                optional(cuda, weight), device(cuda, grad_losses), -100)  # fmt: skip
    close(fetch(cuda, grad), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.errors
def test_cross_entropy_returns_the_first_row_with_a_bad_label(cuda):
    logits = device(cuda, numbers((5, 3), "float32"))
    target = device(cuda, np.array([0, 1, 7, -3, 2], np.int64))
    outs = [device(cuda, np.zeros(s, np.float32)) for s in [(5,), (5,), (3,), (5, 3)]]
    assert cuda.cross_entropy(*outs, logits, target, None, -100) == 2


# ------------------------------------------------------------------ optimizers
OPTIMIZER_CASES = [
    ("sgd_step", 1, (), (0.1, 0.01, 0.9, 0.1, True, False, False)),
    ("sgd_step", 1, (2,), (0.1, 0.0, 0.0, 0.0, False, True, False)),
    ("adam_step", 3, (), (3, 0.01, 0.9, 0.999, 1e-8, 0.01, True, True, False)),
    ("adam_step", 3, (4,), (1, 0.01, 0.9, 0.999, 1e-8, 0.1, False, False, True)),
    ("rmsprop_step", 3, (), (0.01, 0.99, 1e-8, 0.01, 0.9, True, False)),
    ("rmsprop_step", 3, (3, 4), (0.01, 0.99, 1e-8, 0.0, 0.0, False, True)),
    ("adagrad_step", 1, (), (3, 0.1, 0.01, 0.01, 1e-10, False)),
    ("adadelta_step", 2, (), (1.0, 0.9, 1e-6, 0.01, True)),
]


@requires_cuda
@pytest.mark.optim
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kernel, states, unused, scalars", OPTIMIZER_CASES)
def test_fused_optimizer_steps(cuda, cpu, dtype, kernel, states, unused, scalars):
    arrays = [numbers(11, dtype, seed=k) for k in range(2 + states)]
    arrays[2:] = [np.abs(a) for a in arrays[2:]]  # second moments are not negative
    expected = [a.copy() for a in arrays]
    on_device = [device(cuda, a) for a in arrays]
    cpu_args = [None if k in unused else host(a) for k, a in enumerate(expected)]
    cuda_args = [None if k in unused else v for k, v in enumerate(on_device)]
    for _ in range(2):
        getattr(cpu, kernel)(*cpu_args, *scalars)
        getattr(cuda, kernel)(*cuda_args, *scalars)
    for k, (view, want) in enumerate(zip(on_device, expected)):
        if k not in unused:
            close(fetch(cuda, view), want, dtype)


# ------------------------------------------------------------------ creation
@requires_cuda
@pytest.mark.creation
@pytest.mark.parametrize("dtype", DTYPES)
def test_arange_and_linspace(cuda, cpu, dtype):
    for n in (0, 1, 6, 45):  # 45: whole blocks of vectors and a tail
        for start, step in [(3, 2), (-1.5, 3), (0.1, 0.3)]:
            if isinstance(start, float) and not np.issubdtype(dtype, np.floating):
                continue  # an integer output gets integer arguments (the contract)
            expected = np.zeros(n, dtype)
            cpu.arange(host(expected), start, step)
            out = device(cuda, np.zeros(n, dtype))
            cuda.arange(out, start, step)
            same_bits(fetch(cuda, out), expected)
        for start, end in [(0.0, 1.0), (-3.0, 7.5)]:
            expected = np.zeros(n, dtype)
            cpu.linspace(host(expected), start, end)
            out = device(cuda, np.zeros(n, dtype))
            cuda.linspace(out, start, end)
            same_bits(fetch(cuda, out), expected)


# ------------------------------------------------------------------ indexing
GATHER_CASES = [((3, 4), (3, 2), 1), ((3, 4), (2, 4), 0), ((2, 3, 4), (2, 2, 4), 1)]


@requires_cuda
@pytest.mark.indexing
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_and_scatter(cuda, cpu, dtype):
    rng = np.random.default_rng(3)
    for a_shape, index_shape, dim in GATHER_CASES:
        a = numbers(a_shape, dtype)
        index = rng.integers(0, a_shape[dim], index_shape).astype(np.int64)
        expected = np.zeros(index_shape, dtype)
        assert cpu.gather(host(expected), host(a), dim, host(index)) is None
        out = device(cuda, np.zeros(index_shape, dtype))
        assert cuda.gather(out, device(cuda, a), dim, device(cuda, index)) is None
        same_bits(fetch(cuda, out), expected)
        for accumulate in (False, True):
            src = numbers(index_shape, dtype, seed=2)
            expected = a.copy()
            assert cpu.scatter(host(expected), dim, host(index), host(src), accumulate) is None
            out = device(cuda, a)
            assert (
                cuda.scatter(out, dim, device(cuda, index), device(cuda, src), accumulate) is None
            )
            if dtype in FLOATS:  # scatter_add's atomics add in any order
                close(fetch(cuda, out), expected, dtype)
            else:
                same_bits(fetch(cuda, out), expected)


@requires_cuda
@pytest.mark.indexing
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_and_index_put(cuda, cpu, dtype):
    rng = np.random.default_rng(4)
    for a_shape, dim, count in [((3, 4), 1, 5), ((3, 4), 0, 2), ((6,), 0, 9)]:
        a = numbers(a_shape, dtype)
        index = rng.integers(0, a_shape[dim], count).astype(np.int64)
        picked = tuple(count if d == dim else s for d, s in enumerate(a_shape))
        expected = np.zeros(picked, dtype)
        cpu.index_select(host(expected), host(a), dim, host(index))
        out = device(cuda, np.zeros(picked, dtype))
        assert cuda.index_select(out, device(cuda, a), dim, device(cuda, index)) is None
        same_bits(fetch(cuda, out), expected)
        for accumulate in (False, True):
            src = numbers(picked, dtype, seed=5)
            expected = a.copy()
            cpu.index_put(host(expected), dim, host(index), host(src), accumulate)
            out = device(cuda, a)
            assert (
                cuda.index_put(out, dim, device(cuda, index), device(cuda, src), accumulate) is None
            )
            if dtype in FLOATS:
                close(fetch(cuda, out), expected, dtype)
            else:
                same_bits(fetch(cuda, out), expected)


@requires_cuda
@pytest.mark.indexing
@pytest.mark.errors
def test_indexing_kernels_return_a_bad_index(cuda):
    a = device(cuda, np.arange(12, dtype=np.float32).reshape(3, 4))
    index = device(cuda, np.array([[0, 1], [9, 2], [1, -1]], np.int64))
    ones = device(cuda, np.ones((3, 2), np.float32))
    assert cuda.gather(device(cuda, np.zeros((3, 2), np.float32)), a, 1, index) == 9
    assert cuda.scatter(a, 1, index, ones, True) == 9  # atomic scatter_add
    assert cuda.scatter(a, 1, index, ones, False) == 9  # scatter by fibers
    picked = device(cuda, np.zeros((3, 2), np.float32))
    assert cuda.index_select(picked, a, 1, device(cuda, np.array([3, 4], np.int64))) == 4
    row = device(cuda, np.ones((1, 4), np.float32))
    assert cuda.index_put(a, 0, device(cuda, np.array([-2], np.int64)), row, True) == -2


@requires_cuda
@pytest.mark.indexing
def test_gather_between_0d_and_1d(cuda):
    out = device(cuda, np.zeros((), np.float32))
    a = device(cuda, np.array([5.0, 6.0, 7.0], np.float32))
    assert cuda.gather(out, a, 0, device(cuda, np.array(2, np.int64))) is None
    assert fetch(cuda, out).item() == 7.0
    out = device(cuda, np.zeros(3, np.float32))
    scalar = device(cuda, np.array(4.0, np.float32))
    assert cuda.gather(out, scalar, 0, device(cuda, np.zeros(3, np.int64))) is None
    assert fetch(cuda, out).tolist() == [4.0, 4.0, 4.0]
    assert cuda.gather(out, scalar, 0, device(cuda, np.array([0, 1, 0], np.int64))) == 1


@requires_cuda
@pytest.mark.indexing
@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_keeps_row_major_order(cuda, cpu, dtype):
    for shape in [(3, 4), (7,), (2, 3, 5)]:
        a = numbers(shape, dtype)
        count = int(np.count_nonzero(a))
        expected = np.zeros((count, len(shape)), np.int64)
        cpu.nonzero(host(expected), host(a))
        out = device(cuda, np.zeros((count, len(shape)), np.int64))
        cuda.nonzero(out, device(cuda, a))
        same_bits(fetch(cuda, out), expected)


# ------------------------------------------------------------------ sorting
@requires_cuda
@pytest.mark.reduction
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tile", [1024, 4])  # shared-memory bitonic sort, then merge sort
def test_sort_is_stable_and_puts_nan_last(cuda, cpu, dtype, tile, monkeypatch):
    from glasstorch.fast.cuda.kernels import sorting

    monkeypatch.setattr(sorting, "SORT_TILE", tile)
    for shape, dim in [((3, 9), 1), ((9, 3), 0), ((2, 37), 1), ((1,), 0)]:
        a = numbers(shape, dtype)
        if dtype in FLOATS and a.size > 4:
            a.reshape(-1)[[1, 3]] = np.nan
        for descending in (False, True):
            values, indices = np.zeros(shape, dtype), np.zeros(shape, np.int64)
            cpu.sort(host(values), host(indices), host(a), dim, descending)
            dv, di = device(cuda, np.zeros(shape, dtype)), device(cuda, np.zeros(shape, np.int64))
            cuda.sort(dv, di, device(cuda, a), dim, descending)
            same_bits(fetch(cuda, di), indices)
            same_bits(fetch(cuda, dv), values)


# ------------------------------------------------------------------ convolution
def _out_size(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


CONV_CASES = [  # N, C, H, W, C_out, KH, KW, stride, padding, dilation, groups
    (2, 2, 5, 6, 3, 3, 2, (1, 2), (1, 0), (1, 1), 1),
    (1, 4, 6, 5, 4, 2, 3, (2, 1), (1, 1), (2, 1), 2),
]


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("via_gemm", [False, True])  # direct kernels; im2col + matmul
def test_conv2d_its_gradients_im2col_and_col2im(cuda, cpu, dtype, case, via_gemm, monkeypatch):
    from glasstorch.fast.cuda.kernels import conv

    monkeypatch.setattr(conv, "CONV_VIA_GEMM", via_gemm)
    n, c, h, w, c_out, kh, kw, stride, padding, dilation, groups = case
    oh = _out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = _out_size(w, kw, stride[1], padding[1], dilation[1])
    x, weight = numbers((n, c, h, w), dtype), numbers((c_out, c // groups, kh, kw), dtype, 1)
    bias = numbers((c_out,), dtype, 2)
    geometry = (stride, padding, dilation, groups)
    want = np.zeros((n, c_out, oh, ow), dtype)
    cpu.conv2d(host(want), host(x), host(weight), host(bias), *geometry)
    out = device(cuda, np.zeros_like(want))
    cuda.conv2d(out, device(cuda, x), device(cuda, weight), device(cuda, bias), *geometry)
    close(fetch(cuda, out), want, dtype)
    dy = numbers((n, c_out, oh, ow), dtype, 3)
    want = np.zeros_like(x)
    cpu.conv2d_backward_input(host(want), host(dy), host(weight), *geometry)
    grad = device(cuda, np.zeros_like(x))
    cuda.conv2d_backward_input(grad, device(cuda, dy), device(cuda, weight), *geometry)
    close(fetch(cuda, grad), want, dtype)
    want = np.zeros_like(weight)
    cpu.conv2d_backward_weight(host(want), host(dy), host(x), *geometry)
    grad = device(cuda, np.zeros_like(weight))
    cuda.conv2d_backward_weight(grad, device(cuda, dy), device(cuda, x), *geometry)
    close(fetch(cuda, grad), want, dtype)
    columns = np.zeros((n, c * kh * kw, oh * ow), dtype)
    cpu.im2col(host(columns), host(x), (kh, kw), stride, padding, dilation)
    out = device(cuda, np.zeros_like(columns))
    cuda.im2col(out, device(cuda, x), (kh, kw), stride, padding, dilation)
    same_bits(fetch(cuda, out), columns)
    want = np.zeros_like(x)
    cpu.col2im(host(want), host(columns), (kh, kw), stride, padding, dilation)
    out = device(cuda, np.zeros_like(x))
    cuda.col2im(out, device(cuda, columns), (kh, kw), stride, padding, dilation)
    close(fetch(cuda, out), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d_and_its_gradient(cuda, cpu, dtype):
    for n, c, h, w, kh, kw, stride, padding, dilation in [
        (2, 3, 5, 6, 2, 2, (2, 2), (0, 0), (1, 1)),
        (1, 2, 7, 5, 3, 3, (2, 1), (1, 1), (1, 2)),
    ]:
        x = numbers((n, c, h, w), dtype)
        x[0, 0, 1, 1] = np.nan
        x[0, 1, 2, 2] = x[0, 1, 2, 3]  # a tie
        shape = (n, c, _out_size(h, kh, stride[0], padding[0], dilation[0]),
                 _out_size(w, kw, stride[1], padding[1], dilation[1]))  # fmt: skip
        values, indices = np.zeros(shape, dtype), np.zeros(shape, np.int64)
        cpu.max_pool2d(host(values), host(indices), host(x), (kh, kw), stride, padding, dilation)
        dv, di = device(cuda, np.zeros(shape, dtype)), device(cuda, np.zeros(shape, np.int64))
        cuda.max_pool2d(dv, di, device(cuda, x), (kh, kw), stride, padding, dilation)
        same_bits(fetch(cuda, di), indices)
        same_bits(fetch(cuda, dv), values)
        dy = numbers(shape, dtype, 1)
        want = np.zeros_like(x)
        cpu.max_pool2d_backward(host(want), host(dy), host(indices))
        grad = device(cuda, np.zeros_like(x))
        cuda.max_pool2d_backward(grad, device(cuda, dy), device(cuda, indices))
        close(fetch(cuda, grad), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("count_include_pad, divisor_override", [(False, 0), (True, 0), (True, 5)])
def test_avg_pool2d_and_its_gradient(cuda, cpu, dtype, count_include_pad, divisor_override):
    n, c, h, w, kh, kw, stride, padding = 1, 2, 7, 5, 3, 3, (2, 1), (1, 1)
    x = numbers((n, c, h, w), dtype)
    shape = (n, c, _out_size(h, kh, stride[0], padding[0], 1),
             _out_size(w, kw, stride[1], padding[1], 1))  # fmt: skip
    rule = (count_include_pad, divisor_override)
    want = np.zeros(shape, dtype)
    cpu.avg_pool2d(host(want), host(x), (kh, kw), stride, padding, *rule)
    out = device(cuda, np.zeros(shape, dtype))
    cuda.avg_pool2d(out, device(cuda, x), (kh, kw), stride, padding, *rule)
    same_bits(fetch(cuda, out), want)
    dy = numbers(shape, dtype, 1)
    want = np.zeros_like(x)
    cpu.avg_pool2d_backward(host(want), host(dy), (kh, kw), stride, padding, *rule)
    grad = device(cuda, np.zeros_like(x))
    cuda.avg_pool2d_backward(grad, device(cuda, dy), (kh, kw), stride, padding, *rule)
    close(fetch(cuda, grad), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_kernels(cuda, cpu, dtype, affine):
    n, c, length = 3, 4, 5
    x = numbers((n, c, length), dtype)
    mean, var = np.zeros(c, dtype), np.zeros(c, dtype)
    cpu.batch_norm_stats(host(mean), host(var), host(x))
    dm, dv = device(cuda, np.zeros(c, dtype)), device(cuda, np.zeros(c, dtype))
    cuda.batch_norm_stats(dm, dv, device(cuda, x))
    close(fetch(cuda, dm), mean, dtype)
    close(fetch(cuda, dv), var, dtype)
    for running in (True, False):  # invstd and the running statistics, every step rounded
        stats = [numbers((c,), dtype, 4), numbers((c,), dtype, 5)] if running else [None, None]
        wants = [np.zeros(c, dtype)] + [None if s is None else s.copy() for s in stats]
        cpu.batch_norm_update_stats(*map(optional_host, wants), host(mean), host(var), 0.1,
                                    1e-5, n * length)  # fmt: skip
        got = [device(cuda, np.zeros(c, dtype))] + [optional(cuda, s) for s in stats]
        cuda.batch_norm_update_stats(*got, device(cuda, mean), device(cuda, var), 0.1, 1e-5,
                                     n * length)  # fmt: skip
        for value, want in zip(got, wants):
            if want is not None:
                same_bits(fetch(cuda, value), want)
    invstd = (1 / np.sqrt(var + 1e-5)).astype(dtype)
    weight = numbers((c,), dtype, 1) if affine else None
    bias = numbers((c,), dtype, 2) if affine else None
    want = np.zeros_like(x)
    cpu.batch_norm_apply(host(want), host(x), host(mean), host(invstd), optional_host(weight),
                         optional_host(bias))  # fmt: skip
    out = device(cuda, np.zeros_like(x))
    cuda.batch_norm_apply(out, device(cuda, x), device(cuda, mean), device(cuda, invstd),
                          optional(cuda, weight), optional(cuda, bias))  # fmt: skip
    close(fetch(cuda, out), want, dtype)
    dy = numbers(x.shape, dtype, 3)
    for training in (True, False):
        wants = [np.zeros_like(x), np.zeros(c, dtype), np.zeros(c, dtype)]
        cpu.batch_norm_backward(*map(host, wants), host(dy), host(x), host(mean), host(invstd),
                                optional_host(weight), training)  # fmt: skip
        grads = [device(cuda, np.zeros_like(w)) for w in wants]
        cuda.batch_norm_backward(*grads, device(cuda, dy), device(cuda, x), device(cuda, mean),
                                 device(cuda, invstd), optional(cuda, weight), training)  # fmt: skip
        for grad, want in zip(grads, wants):
            close(fetch(cuda, grad), want, dtype)


# ------------------------------------------------------------------ LSTM cell
@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
def test_lstm_cell_and_its_gradient(cuda, cpu, dtype):
    batch, hidden = 3, 5
    gates, c_prev = numbers((batch, 4 * hidden), dtype), numbers((batch, hidden), dtype, 1)
    shapes = [(batch, hidden), (batch, hidden), (batch, 4 * hidden), (batch, hidden)]
    wants = [np.zeros(s, dtype) for s in shapes]
    cpu.lstm_cell(*map(host, wants), host(gates), host(c_prev))
    outs = [device(cuda, np.zeros(s, dtype)) for s in shapes]
    cuda.lstm_cell(*outs, device(cuda, gates), device(cuda, c_prev))
    for out, want in zip(outs, wants):
        close(fetch(cuda, out), want, dtype)
    d_h, d_c = numbers((batch, hidden), dtype, 2), numbers((batch, hidden), dtype, 3)
    # both tiers differentiate the CPU's activations: (1 - g * g) near g = 1
    # would magnify last-bit differences between the two tanh implementations
    saved = [host(wants[2]), host(wants[3]), host(c_prev)]
    grads = [np.zeros((batch, 4 * hidden), dtype), np.zeros((batch, hidden), dtype)]
    cpu.lstm_cell_backward(*map(host, grads), host(d_h), host(d_c), *saved)
    on_device = [device(cuda, np.zeros_like(g)) for g in grads]
    cuda.lstm_cell_backward(*on_device, device(cuda, d_h), device(cuda, d_c),
                            *(device(cuda, v.buffer.reshape(v.shape)) for v in saved))  # fmt: skip
    for grad, want in zip(on_device, grads):
        close(fetch(cuda, grad), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reverse", (False, True), ids=("forward", "reverse"))
def test_lstm_layer_and_its_gradient(cuda, cpu, dtype, reverse):
    """The whole-layer kernels (composed from the cell kernels on the device) against
    the CPU tier's."""
    steps, batch, hidden = 3, 2, 5
    first = steps if reverse else 0
    inputs = numbers((steps, batch, 4 * hidden), dtype, 1, 1.0)
    bias, w_hh = numbers((4 * hidden,), dtype, 2, 0.5), numbers((4 * hidden, hidden), dtype, 3, 0.4)
    hs, cs = (
        np.zeros((steps + 1, batch, hidden), dtype),
        np.zeros((steps + 1, batch, hidden), dtype),
    )
    hs[first], cs[first] = (
        numbers((batch, hidden), dtype, 4, 0.5),
        numbers((batch, hidden), dtype, 5),
    )
    saved = [
        hs,
        cs,
        np.zeros((steps, batch, 4 * hidden), dtype),
        np.zeros((steps, batch, hidden), dtype),
    ]
    on_device = [device(cuda, a) for a in saved]
    cpu.lstm_forward(*map(host, saved), host(inputs), host(bias), host(w_hh), reverse)
    cuda.lstm_forward(
        *on_device, device(cuda, inputs), device(cuda, bias), device(cuda, w_hh), reverse
    )
    for out, want in zip(on_device, saved):
        close(fetch(cuda, out), want, dtype)
    d_outputs = numbers((steps, batch, hidden), dtype, 6, 1.0)
    grads = [np.zeros((steps, batch, 4 * hidden), dtype), numbers((batch, hidden), dtype, 7, 1.0),
             numbers((batch, hidden), dtype, 8, 1.0)]  # fmt: skip
    grads_on_device = [device(cuda, g) for g in grads]
    # both tiers differentiate the CPU's saved buffers (see the cell's test above)
    activations, tanh_c = saved[2], saved[3]
    cuda.lstm_backward(*grads_on_device, device(cuda, d_outputs), device(cuda, activations),
                       device(cuda, tanh_c), device(cuda, cs), device(cuda, w_hh), reverse)  # fmt: skip
    cpu.lstm_backward(*map(host, grads), host(d_outputs), host(activations), host(tanh_c),
                      host(cs), host(w_hh), reverse)  # fmt: skip
    for grad, want in zip(grads_on_device, grads):
        close(fetch(cuda, grad), want, dtype)


@requires_cuda
@pytest.mark.nn
@pytest.mark.parametrize("dtype", FLOATS)
def test_lstm_weight_grad(cuda, cpu, dtype):
    """Both weight gradients (two products on the device) against the CPU tier's."""
    rows, hidden, input_size = 12, 5, 3
    d_gates = numbers((rows, 4 * hidden), dtype, 1, 1.0)
    inputs, h_prev = numbers((rows, input_size), dtype, 2, 1.0), numbers((rows, hidden), dtype, 3)
    wants = [np.zeros((4 * hidden, input_size), dtype), np.zeros((4 * hidden, hidden), dtype)]
    cpu.lstm_weight_grad(*map(host, wants), host(d_gates), host(inputs), host(h_prev))
    on_device = [device(cuda, np.zeros_like(w)) for w in wants]
    cuda.lstm_weight_grad(*on_device, *(device(cuda, a) for a in (d_gates, inputs, h_prev)))
    for out, want in zip(on_device, wants):
        close(fetch(cuda, out), want, dtype)


# ------------------------------------------------------------------ whole programs
def _train(device: str, optimizer: str, convolutional: bool) -> list:
    """Losses of two seeded training steps, then values of the random and sorting ops."""
    import glasstorch as gt
    import glasstorch.nn as nn
    import glasstorch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.lstm = nn.LSTM(4, 5, batch_first=True)
            self.fc = nn.Linear(5, 3)

        def forward(self, x):
            x = F.avg_pool2d(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2), 2)
            seq = x.flatten(2).transpose(1, 2)  # (N, 4 positions, 4 channels)
            out, _ = self.lstm(seq)  # its zero initial state on the input's device
            return self.fc(F.dropout(out[:, -1], 0.3))

    gt.manual_seed(1)
    if convolutional:
        x, model = gt.randn(6, 1, 8, 8, device=device), Net().to(device)
    else:
        x = gt.randn(6, 8, device=device)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
        model = model.to(device)
    y = gt.randint(0, 3, (6,), device=device)
    step = getattr(gt.optim, optimizer)(model.parameters(), lr=0.01)
    results = []
    for _ in range(2):
        step.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        step.step()
        results.append(loss.item())
    results.append(model(x).argmax(1).tolist())
    results.append(gt.randperm(9, device=device).tolist())
    results.append(gt.sort(gt.randn(7, device=device)).indices.tolist())
    return results


@requires_cuda
@pytest.mark.optim
@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
@pytest.mark.parametrize("convolutional", [False, True])
def test_a_seeded_program_trains_on_the_device_as_on_the_cpu(optimizer, convolutional):
    """Same seed, same numbers: the CPU tier's losses, recorded in this very process
    (never hard-coded), against the device's. test_tiers_agree adds the reference tier."""
    on_cpu = _train("cpu", optimizer, convolutional)
    on_device = _train("cuda", optimizer, convolutional)
    assert on_device[:2] == pytest.approx(on_cpu[:2], rel=1e-5)  # the losses (with dropout)
    assert on_device[2:] == on_cpu[2:]  # predictions, randperm, sort
