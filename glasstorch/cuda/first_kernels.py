"""Three first CUDA kernels: a grid-stride loop, a shared-memory sum, a tiled matrix product.

These are the three patterns nearly every CUDA kernel is built from, written
by hand as CUDA C and launched with :class:`~glasstorch.cuda.RawKernel` on
CUDA tensors, on a GPU or on the CUDA simulator (``GLASSTORCH_CUDA=simulator``):

* :func:`saxpy_source`: an elementwise kernel, ``out = alpha * x + y``, whose
  *grid-stride loop* lets any grid cover any length;
* :func:`block_sum_source`: a reduction, each block adding its elements as a
  tree in ``__shared__`` memory, with ``__syncthreads()`` between the steps;
* :func:`tiled_matmul_source`: a matrix product that stages tiles of both
  operands in shared memory, so each element read from global memory serves
  a whole row or column of a tile.

Each ``*_source`` function returns the kernel's CUDA C source (a string, as
CuPy's ``RawKernel`` takes it); its docstring is the kernel's specification.
:func:`saxpy`, :func:`vector_sum` and :func:`tiled_matmul` launch them on
CUDA tensors. The classroom's ``cuda`` assignment cuts the three sources out:
see ``docs/classroom/cuda.md`` and ``docs/guide/first_kernel.md``.
"""

from __future__ import annotations

from functools import cache

from glasstorch.cuda.raw_kernels import RawKernel
from glasstorch.tensor import Tensor

__all__ = [
    "MATMUL_TILE",
    "SUM_THREADS",
    "block_sum_source",
    "saxpy",
    "saxpy_source",
    "tiled_matmul",
    "tiled_matmul_source",
    "vector_sum",
]

#: Threads per block of :func:`vector_sum`'s launches (a power of two).
SUM_THREADS = 256

#: The side of :func:`tiled_matmul`'s square tiles and blocks.
MATMUL_TILE = 16


def saxpy_source() -> str:
    """CUDA C of ``saxpy``: ``out[i] = alpha * x[i] + y[i]`` for every ``i < n``.

    The kernel::

        extern "C" __global__ void saxpy(const float *x, const float *y, float *out,
                                         float alpha, long long n)

    It is launched with any grid and any block (one dimension each), whether
    they have more threads than ``n`` or fewer. Thread ``t`` of the whole grid
    (``blockIdx.x * blockDim.x + threadIdx.x``) handles elements ``t``,
    ``t + T``, ``t + 2T``, ... below ``n``, where ``T = gridDim.x * blockDim.x``
    is the number of threads of the grid: a *grid-stride loop*. Compute the
    index in ``long long``: ``blockIdx.x * blockDim.x`` overflows an ``int``
    for large ``n``. It writes nothing at or past ``out[n]``.
    """
    # -- solution: cuda/elementwise
    return r"""
// out = alpha * x + y, every thread stepping through the vector by the grid's size.
extern "C" __global__ void saxpy(const float *x, const float *y, float *out,
                                 float alpha, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = alpha * x[i] + y[i];
}
"""
    # -- end solution


def block_sum_source() -> str:
    """CUDA C of ``block_sum``: each block writes the sum of its share of ``x``.

    The kernel::

        extern "C" __global__ void block_sum(const float *x, float *partial, long long n)

    It is launched with a one-dimensional grid of any size and blocks of
    ``blockDim.x`` threads, a power of two of at most 1024. Each thread first
    adds the elements of its grid-stride loop (as in :func:`saxpy_source`:
    elements ``t``, ``t + T``, ... below ``n``, where ``t`` is its index in the
    grid and ``T`` the grid's number of threads), starting from 0. Then the
    block adds its threads' sums as a tree in ``__shared__`` memory (an array
    of 1024 floats): in each step the first half of the threads adds the
    second half's values to its own, until one value is left, with a
    ``__syncthreads()`` after every step (and before the first), so no thread
    reads a slot before it is written. Thread 0 writes the block's sum to
    ``partial[blockIdx.x]``.

    The sum of ``partial`` is the sum of ``x``; one more launch, of one block
    over ``partial``, adds the blocks' sums (:func:`vector_sum` does that).
    """
    # -- solution: cuda/reduction
    return r"""
// Each block's share of x, added per thread, then as a tree in shared memory.
extern "C" __global__ void block_sum(const float *x, float *partial, long long n) {
    __shared__ float sums[1024];
    long long stride = (long long)gridDim.x * blockDim.x;
    float mine = 0.0f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        mine += x[i];
    sums[threadIdx.x] = mine;
    __syncthreads();
    // Halve the threads that add each step; the others wait at the barrier.
    for (unsigned int active = blockDim.x / 2; active > 0; active /= 2) {
        if (threadIdx.x < active) sums[threadIdx.x] += sums[threadIdx.x + active];
        __syncthreads();
    }
    // One value is left, in slot 0: the block's sum.
    if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}
"""
    # -- end solution


def tiled_matmul_source() -> str:
    """CUDA C of ``tiled_matmul``: ``c = a @ b`` for row-major float matrices.

    The kernel::

        #define TILE 16
        extern "C" __global__ void tiled_matmul(const float *a, const float *b, float *c,
                                                int m, int k, int n)

    ``a`` is ``m x k``, ``b`` is ``k x n`` and ``c`` is ``m x n``, each
    contiguous and row-major (``a[i * k + p]`` is row ``i``, column ``p``).
    It is launched with blocks of ``TILE x TILE`` threads and a grid of
    ``ceil(n / TILE) x ceil(m / TILE)`` blocks: thread ``(threadIdx.x,
    threadIdx.y)`` of block ``(blockIdx.x, blockIdx.y)`` computes ``c[row,
    col]`` with ``row = blockIdx.y * TILE + threadIdx.y`` and ``col =
    blockIdx.x * TILE + threadIdx.x``.

    The block walks the ``k`` dimension one tile at a time. For each, every
    thread loads one element of ``a``'s tile (rows of the block, columns
    ``t * TILE ...``) and one of ``b``'s (rows ``t * TILE ...``, columns of
    the block) into two ``__shared__ float [TILE][TILE]`` arrays, 0 for an
    element outside the matrix; ``__syncthreads()``; adds the ``TILE``
    products of its row of ``a``'s tile and column of ``b``'s tile;
    ``__syncthreads()`` again, before the next tile overwrites the arrays.
    A thread outside ``c`` (the last blocks may overhang it) takes part in
    the loads and barriers but writes nothing.
    """
    # -- solution: cuda/matmul
    return r"""
// c = a @ b, a TILE x TILE block per tile of c, staging tiles of a and b in shared memory.
#define TILE 16
extern "C" __global__ void tiled_matmul(const float *a, const float *b, float *c,
                                        int m, int k, int n) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int start = 0; start < k; start += TILE) {
        int a_col = start + threadIdx.x, b_row = start + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = row < m && a_col < k ? a[row * k + a_col] : 0.0f;
        b_tile[threadIdx.y][threadIdx.x] = b_row < k && col < n ? b[b_row * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < TILE; p++) acc += a_tile[threadIdx.y][p] * b_tile[p][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
"""
    # -- end solution


# ------------------------------------------------------------------ on CUDA tensors


@cache
def _compiled(source: str, name: str) -> RawKernel:
    return RawKernel(source, name)


def _check(name: str, *tensors: Tensor) -> None:
    from glasstorch import float32

    for tensor in tensors:
        if not isinstance(tensor, Tensor) or tensor.device.type != "cuda":
            raise TypeError(f"{name}: expected CUDA tensors, got {tensor!r}")
        if tensor.dtype != float32:
            raise TypeError(f"{name}: the kernel takes float32 tensors, got {tensor.dtype}")


def saxpy(alpha: float, x: Tensor, y: Tensor, blocks: int = 64, threads: int = 256) -> Tensor:
    """``alpha * x + y`` by the ``saxpy`` kernel, over ``blocks`` blocks of ``threads``.

    Args:
        alpha: a number.
        x, y: float32 CUDA tensors of one shape.
        blocks, threads: the launch's grid and block (any sizes: the grid-stride
            loop covers every element).
    """
    _check("saxpy", x, y)
    if x.shape != y.shape:
        raise ValueError(f"saxpy: x and y differ in shape, {tuple(x.shape)} and {tuple(y.shape)}")
    x, y = x.contiguous(), y.contiguous()
    out = x.new_empty(x.shape)
    _compiled(saxpy_source(), "saxpy")((blocks,), (threads,), (x, y, out, alpha, x.numel()))
    return out


def vector_sum(x: Tensor, blocks: int = 64) -> Tensor:
    """The sum of ``x``'s elements (a 0-d tensor) by two launches of ``block_sum``.

    The first launch leaves one partial sum per block; the second, one block,
    adds them.
    """
    _check("vector_sum", x)
    kernel = _compiled(block_sum_source(), "block_sum")
    x = x.contiguous()
    partial = x.new_empty((blocks,))
    kernel((blocks,), (SUM_THREADS,), (x, partial, x.numel()))
    total = x.new_empty(())
    kernel((1,), (SUM_THREADS,), (partial, total, blocks))
    return total


def tiled_matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for two float32 CUDA matrices, by the ``tiled_matmul`` kernel."""
    _check("tiled_matmul", a, b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"tiled_matmul: cannot multiply {tuple(a.shape)} by {tuple(b.shape)} "
            "(two matrices, a's columns equal to b's rows)"
        )
    (m, k), n = a.shape, b.shape[1]
    out = a.new_empty((m, n))
    grid = (-(-n // MATMUL_TILE), -(-m // MATMUL_TILE))
    block = (MATMUL_TILE, MATMUL_TILE)
    kernel = _compiled(tiled_matmul_source(), "tiled_matmul")
    kernel(grid, block, (a.contiguous(), b.contiguous(), out, m, k, n))
    return out
