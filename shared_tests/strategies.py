"""Hypothesis strategies: small shapes, dtypes and non-contiguous layouts.

A *layout* is a recipe for one logical tensor stored in one of several ways:

``contiguous``
    the plain row-major tensor;
``permuted``
    a contiguous tensor of permuted shape, permuted back, so its strides are
    out of order;
``sliced``
    a larger tensor sliced with step 2 along one dimension (``[1::2]`` gives it a
    storage offset too);
``expanded``
    a tensor with size-1 dimensions expanded, so those strides are 0 and many
    indices share one storage element.

The recipe is applied with the same calls to glasstorch and to real PyTorch
(:meth:`Layout.build`), so their strides can be compared too, and to NumPy
(:attr:`Layout.array`) for the expected values. The values come from a NumPy
generator seeded by hypothesis, so a failure reproduces from its printed example.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

#: The dtypes of issue 2, by name.
ALL_DTYPES = ("float32", "float64", "int64", "int32", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float64")
INT_DTYPES = ("int64", "int32", "uint8")
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES

LAYOUT_KINDS = ("contiguous", "permuted", "sliced", "expanded")
#: Layouts whose elements each have a storage slot of their own (writable in place).
WRITABLE_KINDS = ("contiguous", "permuted", "sliced")

#: Elements never exceed this many, to keep the pure-Python tier quick.
MAX_NUMEL = 64


# --------------------------------------------------------------------- shapes
@st.composite
def shapes(
    draw: st.DrawFn,
    *,
    min_dims: int = 0,
    max_dims: int = 4,
    min_side: int = 0,
    max_side: int = 4,
    max_numel: int = MAX_NUMEL,
) -> tuple[int, ...]:
    """A shape with ``min_dims..max_dims`` sizes in ``min_side..max_side``.

    Zero-size and size-1 dimensions are drawn often. Sizes are lowered, last first,
    until the shape holds at most ``max_numel`` elements.
    """
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = draw(st.lists(st.integers(min_side, max_side), min_size=ndim, max_size=ndim))
    i = len(sizes) - 1
    while int(np.prod(sizes, dtype=np.int64)) > max_numel and i >= 0:
        sizes[i] = max(min_side, min(sizes[i], 2))
        i -= 1
    return tuple(sizes)


def broadcastable_shapes(
    *, num_shapes: int = 2, min_dims: int = 0, max_dims: int = 4, min_side: int = 0
) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """``num_shapes`` shapes that broadcast together (as a tuple of shapes)."""
    return mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=3
    ).map(lambda drawn: tuple(drawn.input_shapes))


def dtypes(names: tuple[str, ...] = ALL_DTYPES) -> st.SearchStrategy[str]:
    """A dtype name among ``names``; see :func:`oracle.gt_dtype` for the object."""
    return st.sampled_from(names)


def float_dtypes() -> st.SearchStrategy[str]:
    return st.sampled_from(FLOAT_DTYPES)


# --------------------------------------------------------------------- values
def random_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, elements: str = "any"
) -> np.ndarray:
    """A contiguous NumPy array of ``shape`` and ``dtype`` with small values.

    ``elements`` is ``"any"`` (floats in [-3, 3], integers in [-9, 9], uint8 in
    [0, 19]), ``"positive"`` (floats in [0.1, 3], integers in [1, 9]) or
    ``"unit"`` (floats in (-1, 1)).
    """
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in FLOAT_DTYPES:
        low, high = {"any": (-3.0, 3.0), "positive": (0.1, 3.0), "unit": (-0.99, 0.99)}[elements]
        return np.asarray(rng.uniform(low, high, shape)).astype(dtype)
    low, high = (1, 10) if elements == "positive" or dtype == "uint8" else (-9, 10)
    if dtype == "uint8" and elements != "positive":
        low, high = 0, 20
    return np.asarray(rng.integers(low, high, shape)).astype(dtype)


# -------------------------------------------------------------------- layouts
@dataclass
class Layout:
    """How one logical tensor of ``shape`` is stored; see the module docstring."""

    kind: str
    shape: tuple[int, ...]
    base: np.ndarray  # the contiguous storage the view is taken of
    perm: tuple[int, ...] = ()  # permuted: base.permute(perm) has ``shape``
    dim: int = 0  # sliced: the dimension sliced with step 2
    start: int = 0  # sliced: the slice's start (0 or 1)
    array: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.array = np.array(self._view(np), copy=True)

    def _view(self, lib: Any, device: str | None = None) -> Any:
        """Apply the recipe to ``np`` (views of ``base``) or to a torch-like module."""
        if lib is np:
            t = self.base
        else:
            t = lib.from_numpy(self.base.copy())
            if device is not None:
                t = t.to(device)  # the storage on the device, the view taken there
        if self.kind == "permuted":
            return t.transpose(self.perm) if lib is np else t.permute(*self.perm)
        if self.kind == "sliced":
            return t[(slice(None),) * self.dim + (slice(self.start, None, 2),)]
        if self.kind == "expanded":
            return np.broadcast_to(t, self.shape) if lib is np else t.expand(*self.shape)
        return t

    def build(self, lib: Any = None, device: str | None = None) -> Any:
        """A fresh tensor of this layout made by ``lib`` (glasstorch by default, or torch),
        its storage on ``device`` (the CPU by default)."""
        if lib is None:
            import glasstorch as lib
        return self._view(lib, device)


@st.composite
def layouts(
    draw: st.DrawFn,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
    dtype: str | st.SearchStrategy[str] = "float32",
    *,
    kinds: tuple[str, ...] = LAYOUT_KINDS,
    elements: str = "any",
) -> Layout:
    """A :class:`Layout` of ``shape`` (drawn when None) and ``dtype``, of one of ``kinds``."""
    if shape is None:
        shape = shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    if isinstance(dtype, st.SearchStrategy):
        dtype = draw(dtype)
    shape = tuple(shape)
    ndim = len(shape)
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "permuted" and ndim >= 2:
        perm = tuple(draw(st.permutations(range(ndim))))
        inverse = tuple(int(i) for i in np.argsort(perm))
        base = random_values(rng, tuple(shape[p] for p in perm), dtype, elements)
        layout = Layout(kind, shape, base, perm=inverse)
    elif kind == "sliced" and ndim >= 1:
        dim = draw(st.integers(0, ndim - 1))
        start = draw(st.integers(0, 1))
        base_shape = list(shape)
        base_shape[dim] = 2 * shape[dim] + start
        base = random_values(rng, tuple(base_shape), dtype, elements)
        layout = Layout(kind, shape, base, dim=dim, start=start)
    elif kind == "expanded" and ndim >= 1:
        mask = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
        base_shape = tuple(1 if expand else size for expand, size in zip(mask, shape, strict=True))
        layout = Layout(kind, shape, random_values(rng, base_shape, dtype, elements))
    else:
        layout = Layout("contiguous", shape, random_values(rng, shape, dtype, elements))
    note(f"layout: {layout.kind} {layout.shape} {dtype} base={layout.base.shape}")
    return layout


def tensors(
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
    dtype: str | st.SearchStrategy[str] = "float32",
    *,
    kinds: tuple[str, ...] = LAYOUT_KINDS,
    elements: str = "any",
) -> st.SearchStrategy[tuple[Any, np.ndarray]]:
    """``(glasstorch_tensor, numpy_array)`` pairs holding the same values."""
    return layouts(shape, dtype, kinds=kinds, elements=elements).map(
        lambda layout: (layout.build(), layout.array)
    )
