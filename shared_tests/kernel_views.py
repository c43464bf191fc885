"""Hypothesis strategies for calling kernels directly: :class:`Strided` views over NumPy buffers.

The fast-tier contract tests (``test_fast_*.py``) skip the frontend and hand the
same views to a fast kernel and to the reference kernel, then compare the
buffers. A view here is a :class:`~glasstorch._kernels.Strided` over a flat
buffer with spare elements before and after it, so a kernel that writes outside
its view changes the buffer and the comparison catches it.

Layouts (``kind``):

``contiguous``  row-major, at a nonzero offset;
``permuted``    a row-major block whose dimensions are permuted;
``sliced``      every dimension taken with a step of 1 to 3 from a larger block;
``broadcast``   some dimensions have stride 0 (inputs only: not writable).

On the device (``--device=cuda``), :func:`kernels_under_test` gives the CUDA
tier's kernels behind the same calls: :class:`OnDevice` copies each buffer to
device memory whole, runs the CUDA kernel, and copies it back, so the tests
compare whole buffers there too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import note
from hypothesis import strategies as st

from glasstorch._kernels import Strided, contract_kernel_names

ALL_DTYPES = ("bool", "uint8", "int32", "int64", "float32", "float64")
FLOAT_DTYPES = ("float32", "float64")
LAYOUTS = ("contiguous", "permuted", "sliced", "broadcast")
WRITABLE_LAYOUTS = ("contiguous", "permuted", "sliced")

#: Values a kernel must get right beyond the ordinary ones.
SPECIAL_FLOATS = (
    *(np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5),
    *(1e20, -1e20, 3e9, -3e9, 100.0, -100.0, 1e-30, 300.7, -1.5),
)
SPECIAL_INTS = {
    "int64": (-(2**63), 2**63 - 1, 2**62, -(2**31), 2**31 - 1, 2**32 + 5, 255, 256, -1),
    "int32": (-(2**31), 2**31 - 1, 2**30, 65537, 255, 256, -1),
    "uint8": (0, 255, 128, 127, 1),
}


def random_values(rng: np.random.Generator, shape, dtype: str, elements: str) -> np.ndarray:
    """Values of ``dtype``: ``"small"`` ordinary numbers, ``"special"`` with extremes mixed in,
    ``"nonzero"`` (no zeros), or ``"exponent"`` (integers 0..70)."""
    size = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        values = rng.random(size) < 0.5
        if elements == "nonzero":
            values[:] = True
        return values.reshape(shape)
    if dtype in FLOAT_DTYPES:
        values = rng.uniform(-4.0, 4.0, size)
        if elements == "special":
            mask = rng.random(size) < 0.3
            values[mask] = rng.choice(np.array(SPECIAL_FLOATS), int(mask.sum()))
        return values.astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    if elements == "exponent":
        values = rng.integers(0, 71, size)
    else:
        values = rng.integers(max(info.min, -9), min(info.max, 9) + 1, size)
        if elements == "special":
            mask = rng.random(size) < 0.3
            values[mask] = rng.choice(np.array(SPECIAL_INTS[dtype], dtype=object), int(mask.sum()))
        if elements == "nonzero":
            values[values == 0] = 1
    return np.array([int(v) for v in values], dtype=dtype).reshape(shape)


@st.composite
def shapes(draw, max_dims: int = 4, max_side: int = 4, max_numel: int = 64) -> tuple[int, ...]:
    """0 to ``max_dims`` sizes in 0..``max_side``, at most ``max_numel`` elements."""
    sizes = draw(st.lists(st.integers(0, max_side), min_size=0, max_size=max_dims))
    while int(np.prod(sizes, dtype=np.int64)) > max_numel:
        sizes[sizes.index(max(sizes))] -= 1
    return tuple(sizes)


def to_strided(buffer: np.ndarray, array: np.ndarray) -> Strided:
    """The :class:`Strided` description of ``array``, a NumPy view into the flat ``buffer``."""
    itemsize = buffer.itemsize
    offset = (
        array.__array_interface__["data"][0] - buffer.__array_interface__["data"][0]
    ) // itemsize
    strides = tuple(s // itemsize for s in array.strides)
    return Strided(buffer, tuple(array.shape), strides, int(offset))


@st.composite
def views(
    draw,
    shape: tuple[int, ...],
    dtype: str,
    *,
    kinds: tuple[str, ...] = LAYOUTS,
    elements: str = "special",
) -> Strided:
    """A :class:`Strided` of ``shape`` and ``dtype`` in one of the layouts ``kinds``."""
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ndim = len(shape)
    if kind == "permuted" and ndim >= 2:
        perm = draw(st.permutations(range(ndim)))
        block_shape = tuple(shape[p] for p in perm)
    elif kind == "sliced" and ndim >= 1:
        steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
        starts = draw(st.lists(st.integers(0, 1), min_size=ndim, max_size=ndim))
        block_shape = tuple(n * s + b for n, s, b in zip(shape, steps, starts, strict=True))
    elif kind == "broadcast" and ndim >= 1:
        mask = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
        block_shape = tuple(1 if m else n for m, n in zip(mask, shape, strict=True))
    else:
        kind, block_shape = "contiguous", shape
    before, after = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    block_size = int(np.prod(block_shape, dtype=np.int64))
    buffer = random_values(rng, (before + block_size + after,), dtype, elements)
    block = buffer[before : before + block_size].reshape(block_shape)
    if kind == "permuted":
        array = block.transpose(tuple(int(i) for i in np.argsort(perm)))
    elif kind == "sliced":
        array = block[
            tuple(slice(b, b + n * s, s) for n, s, b in zip(shape, steps, starts, strict=True))
        ]
    elif kind == "broadcast":
        array = np.broadcast_to(block, shape)
    else:
        array = block
    view = to_strided(buffer, array)
    if array.size == 0:  # NumPy may point an empty view anywhere; keep it in the buffer
        view = view._replace(offset=before)
    note(f"{kind} view of {shape} {dtype}: strides {view.strides}, offset {view.offset}")
    return view


def copy_view(view: Strided) -> Strided:
    """The same view over a copy of its buffer (so two kernels can each write one)."""
    return view._replace(buffer=view.buffer.copy())


def logical(view: Strided) -> np.ndarray:
    """The elements of ``view`` as a NumPy array of its shape (a copy)."""
    itemsize = view.buffer.itemsize
    base = view.buffer[view.offset :] if view.buffer.size > view.offset else view.buffer[:0]
    if 0 in view.shape:
        return np.empty(view.shape, view.buffer.dtype)
    return np.lib.stride_tricks.as_strided(
        base, view.shape, tuple(s * itemsize for s in view.strides)
    ).copy()


def contiguous(shape: tuple[int, ...], dtype: str) -> Strided:
    """A fresh row-major view of ``shape`` (zeros)."""
    n = int(np.prod(shape, dtype=np.int64))
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return Strided(np.zeros(n, dtype=dtype), tuple(shape), tuple(reversed(strides)), 0)


class OnDevice:
    """The CUDA tier's kernels, called with the host views the fast-tier tests build.

    Each contract call copies every NumPy buffer among its arguments (a view's
    whole buffer, spare elements included; one device copy per buffer, so views
    that share a buffer share it on the device too) to device memory, runs the
    CUDA kernel on views with the same shapes, strides and offsets, and copies
    every buffer back into its NumPy array. A test then compares whole buffers
    as it does on the CPU, so a write outside the view still shows.

    Args:
        cuda: the CUDA tier's kernel object (the dispatcher's ``cuda``).
    """

    def __init__(self, cuda) -> None:
        self.cuda = cuda
        self.name = cuda.name

    def __getattr__(self, name: str):
        kernel = getattr(self.cuda, name)
        if name not in contract_kernel_names() or name in ("allocate", "copy_to_device"):
            return kernel

        def call(*args, **kwargs):
            copies: dict[int, tuple[np.ndarray, object]] = {}
            device_args = [self._to_device(arg, copies) for arg in args]
            result = kernel(*device_args, **kwargs)
            for host, buffer in copies.values():
                if host.size:
                    self.cuda.copy_to_host(host, buffer.ptr)
            return result

        return call

    def _to_device(self, arg, copies: dict):
        """``arg`` with each :class:`Strided` over a NumPy buffer moved to a device buffer."""
        if isinstance(arg, (list, tuple)) and not isinstance(arg, Strided):
            return type(arg)(self._to_device(item, copies) for item in arg)
        if not isinstance(arg, Strided) or not isinstance(arg.buffer, np.ndarray):
            return arg
        host = arg.buffer
        if id(host) not in copies:
            buffer = self.cuda.driver.device_empty(host.size, host.dtype)
            if host.size:
                self.cuda.copy_to_device(buffer.ptr, host)
            copies[id(host)] = (host, buffer)
        return arg._replace(buffer=copies[id(host)][1])


def kernels_under_test(cpu_kernels, device: str | None = None):
    """The kernels a fast-tier test calls: ``cpu_kernels`` on the CPU, the CUDA tier's
    kernels behind :class:`OnDevice` on ``--device=cuda``.

    ``device`` defaults to the device of the run (``GLASSTORCH_TEST_DEVICE``).
    """
    import os

    device = device or os.environ.get("GLASSTORCH_TEST_DEVICE", "cpu")
    if device == "cpu":
        return cpu_kernels
    from glasstorch import _tier

    return OnDevice(_tier.kernels.cuda)
