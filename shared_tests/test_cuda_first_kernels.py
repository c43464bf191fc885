"""The three first kernels of ``glasstorch.cuda.first_kernels``, run on the CUDA simulator.

The kernels' sources are launched on the simulator directly (its own memory,
raw addresses), so these tests need no CUDA driver in the process: they run
wherever a C++ compiler is, as the classroom's ``cuda`` assignment grades
them. The last tests launch them on CUDA tensors, where a driver is active.
The kernels run with every check of the simulator's sanitizer (memcheck,
racecheck, synccheck, initcheck), each pointer checked against the array it
points into, so a kernel that reads or writes out of bounds, misses a
``__syncthreads()`` or reads memory nothing wrote fails its test with the
sanitizer's report: the check, the line, the thread and the block.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cuda_support import requires_cuda

import glasstorch as gt
from glasstorch.cuda import first_kernels

pytestmark = pytest.mark.cuda

if shutil.which("c++") is None or shutil.which("cc") is None:
    pytest.skip(
        "the CUDA simulator needs a C and a C++ compiler (cc, c++)", allow_module_level=True
    )


def _launch(source: str, name: str, grid, block, args: tuple) -> list[np.ndarray]:
    """Run kernel ``name`` of ``source`` on the simulator; NumPy arrays among ``args``
    go to device memory and come back (in order) once the kernel is done."""
    from glasstorch.fast.cuda.simulator.simulator import ALL_CHECKS, get_simulator

    sim = get_simulator()
    kernel = sim.load_source(source, f"{name}.cu", checks=ALL_CHECKS).get_function(name)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    pointers = {}
    try:
        for array in arrays:
            pointers[id(array)] = sim.malloc(max(array.nbytes, 1))
            sim.copy_from_host(pointers[id(array)], np.ascontiguousarray(array))
        values = tuple(pointers[id(a)] if isinstance(a, np.ndarray) else a for a in args)
        extents = [(pointers[id(a)], a.nbytes) for a in arrays]  # what memcheck checks against
        kernel(grid, block, values, extents=extents)
        sim.synchronize()
        return [
            np.frombuffer(sim.copy_to_host(pointers[id(a)], a.nbytes), a.dtype).reshape(a.shape)
            for a in arrays
        ]
    finally:
        sim.synchronize()
        for ptr in pointers.values():
            sim.free(ptr)


def _numbers(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


# ------------------------------------------------------------------ elementwise


@pytest.mark.parametrize(
    "n, blocks, threads",
    [(1000, 2, 64), (100, 4, 256), (1, 1, 32), (4099, 3, 32)],
    ids=["grid-smaller-than-n", "grid-larger-than-n", "one-element", "odd-length"],
)
def test_saxpy_covers_every_element_with_any_grid(n, blocks, threads):
    x, y = _numbers(n, 0), _numbers(n, 1)
    out = np.full(n + 8, np.nan, np.float32)  # 8 elements past the end must stay untouched
    (_, _, result) = _launch(
        first_kernels.saxpy_source(), "saxpy", blocks, threads, (x, y, out, 2.5, n)
    )
    np.testing.assert_allclose(result[:n], 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert np.isnan(result[n:]).all(), "saxpy wrote past out[n - 1]"


def test_saxpy_of_no_elements_writes_nothing():
    out = np.full(4, np.nan, np.float32)
    (_, _, result) = _launch(
        first_kernels.saxpy_source(), "saxpy", 2, 32, (out.copy(), out.copy(), out, 1.0, 0)
    )
    assert np.isnan(result).all()


# ------------------------------------------------------------------ reduction


def _shares(x: np.ndarray, blocks: int, threads: int) -> np.ndarray:
    """What each block of a grid-stride loop over ``x`` adds up, in float64."""
    thread_of = np.arange(x.size) % (blocks * threads)
    return np.array([x[thread_of // threads == b].astype(np.float64).sum() for b in range(blocks)])


@pytest.mark.parametrize(
    "n, blocks, threads",
    [(1000, 3, 64), (10, 4, 32), (4096, 1, 1024), (777, 2, 128), (0, 2, 32)],
    ids=["several-rounds", "idle-blocks", "one-full-block", "odd-length", "empty"],
)
def test_block_sum_writes_each_blocks_share(n, blocks, threads):
    x = _numbers(n, 2)
    partial = np.full(blocks + 1, np.nan, np.float32)
    (_, result) = _launch(
        first_kernels.block_sum_source(), "block_sum", blocks, threads, (x, partial, n)
    )
    np.testing.assert_allclose(result[:blocks], _shares(x, blocks, threads), rtol=1e-5, atol=1e-4)
    assert np.isnan(result[blocks]), "block_sum wrote past partial[gridDim.x - 1]"


def test_a_second_launch_of_one_block_adds_the_blocks_sums():
    x = _numbers(5000, 3)
    source = first_kernels.block_sum_source()
    (_, partial) = _launch(source, "block_sum", 8, 256, (x, np.zeros(8, np.float32), x.size))
    (_, total) = _launch(source, "block_sum", 1, 256, (partial, np.zeros(1, np.float32), 8))
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)


# ------------------------------------------------------------------ matrix product


@pytest.mark.parametrize(
    "m, k, n",
    [(16, 16, 16), (33, 17, 5), (1, 40, 1), (48, 64, 32), (3, 0, 4)],
    ids=["one-tile", "ragged-edges", "vectors", "several-tiles", "empty-inner"],
)
def test_tiled_matmul_multiplies_row_major_matrices(m, k, n):
    tile = first_kernels.MATMUL_TILE
    a = _numbers(m * k, 4).reshape(m, k)
    b = _numbers(k * n, 5).reshape(k, n)
    c = np.full((m * n + 8,), np.nan, np.float32)
    grid = (-(-n // tile), -(-m // tile))
    (_, _, result) = _launch(
        first_kernels.tiled_matmul_source(), "tiled_matmul", grid, (tile, tile), (a, b, c, m, k, n)
    )
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(result[: m * n].reshape(m, n), expected, rtol=1e-5, atol=1e-5)
    assert np.isnan(result[m * n :]).all(), "tiled_matmul wrote outside c"


# ------------------------------------------------------------------ on CUDA tensors


@requires_cuda
def test_the_kernels_run_on_cuda_tensors():
    x = gt.tensor(_numbers(3000, 6), device="cuda")
    y = gt.tensor(_numbers(3000, 7), device="cuda")
    np.testing.assert_allclose(
        first_kernels.saxpy(-0.5, x, y).cpu().numpy(),
        (-0.5 * x + y).cpu().numpy(),
        rtol=1e-6,
        atol=1e-6,
    )
    total = first_kernels.vector_sum(x)
    assert total.shape == () and total.device.type == "cuda"
    np.testing.assert_allclose(total.item(), x.cpu().numpy().astype(np.float64).sum(), atol=1e-3)
    a = gt.tensor(_numbers(20 * 30, 8).reshape(20, 30), device="cuda")
    b = gt.tensor(_numbers(30 * 9, 9).reshape(30, 9), device="cuda")
    np.testing.assert_allclose(
        first_kernels.tiled_matmul(a, b).cpu().numpy(), (a @ b).cpu().numpy(), rtol=1e-5, atol=1e-5
    )


@requires_cuda
def test_the_tensor_functions_refuse_what_the_kernels_cannot_take():
    x = gt.ones(4, device="cuda")
    with pytest.raises(TypeError, match="expected CUDA tensors"):
        first_kernels.saxpy(1.0, x, gt.ones(4))
    with pytest.raises(TypeError, match="float32"):
        first_kernels.vector_sum(gt.ones(4, dtype=gt.float64, device="cuda"))
    with pytest.raises(ValueError, match="differ in shape"):
        first_kernels.saxpy(1.0, x, gt.ones(5, device="cuda"))
    with pytest.raises(ValueError, match="cannot multiply"):
        first_kernels.tiled_matmul(gt.ones(2, 3, device="cuda"), gt.ones(2, 3, device="cuda"))
