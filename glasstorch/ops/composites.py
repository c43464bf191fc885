"""Functions that real programs call, written from other glasstorch operations.

None of these needs a kernel of its own: each is a short composition of
operations that already have one (and a backward), so autograd and both tiers
come for free. They are gathered here because public programs (tutorials,
courses, examples) use them, not because they belong together.
"""

from __future__ import annotations

import math

import numpy as np

from glasstorch import _dtype
from glasstorch.autograd.grad_mode import _GradModeContext, is_grad_enabled
from glasstorch.tensor import Tensor

__all__ = [
    "addmm",
    "baddbmm",
    "e",
    "finfo",
    "iinfo",
    "inf",
    "inference_mode",
    "is_inference_mode_enabled",
    "lerp",
    "meshgrid",
    "nan",
    "pi",
    "repeat_interleave",
    "std_mean",
    "take_along_dim",
    "var_mean",
]

#: Mathematical constants, as ``torch.pi`` and friends.
pi = math.pi
e = math.e
inf = math.inf
nan = math.nan

_inference_depth = 0


class inference_mode(_GradModeContext):  # noqa: N801 - PyTorch's name
    """Context manager and decorator for code that only evaluates: no graph is recorded.

    In glasstorch it is :class:`no_grad` (PyTorch also skips some bookkeeping
    for "inference tensors" and refuses to use them in autograd later; here the
    tensors made inside are ordinary tensors that simply have no history).

    Args:
        mode: ``False`` makes it do nothing. Default: ``True``.

    Example::

        >>> with torch.inference_mode():
        ...     y = model(x)
        >>> y.requires_grad
        False
    """

    def __new__(cls, mode=True):
        if callable(mode):  # used as a bare decorator: @torch.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._inference = bool(mode)
        super().__init__(False)

    def __enter__(self):
        global _inference_depth
        self._previous = is_grad_enabled()
        if self._inference:
            _inference_depth += 1
            return super().__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        global _inference_depth
        if self._inference:
            _inference_depth -= 1
            super().__exit__(*exc_info)

    def __call__(self, fn):
        """Use as a decorator: ``@torch.inference_mode()`` runs ``fn`` inside it."""
        import functools

        mode = self._inference

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether code runs inside :class:`inference_mode`."""
    return _inference_depth > 0


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype: ``torch.finfo(torch.float32).eps``.

    Attributes:
        bits, eps, max, min, tiny (= smallest_normal), resolution, dtype.
    """

    def __init__(self, type: _dtype.dtype | None = None) -> None:  # noqa: A002 - PyTorch's name
        type = _dtype.get_default_dtype() if type is None else type
        if not type.is_floating_point:
            raise TypeError(
                f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle '{type}'"
            )
        info = np.finfo(type.numpy)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)
        self.dtype = type.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype: ``torch.iinfo(torch.int64).max``.

    Attributes:
        bits, max, min, dtype.
    """

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002 - PyTorch's name
        if type.is_floating_point or type is _dtype.bool_:
            raise TypeError(
                f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{type}'"
            )
        info = np.iinfo(type.numpy)
        self.bits, self.max, self.min, self.dtype = (
            int(info.bits),
            int(info.max),
            int(info.min),
            type.name,
        )

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``."""
    return input + weight * (end - input)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices (``input`` broadcasts)."""
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(
            f"mat1 must be a matrix, got {mat1.dim()}-D tensor"
            if mat1.dim() != 2
            else f"mat2 must be a matrix, got {mat2.dim()}-D tensor"
        )
    return _scaled_sum(input, mat1 @ mat2, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            "batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor"
        )
    return _scaled_sum(input, batch1 @ batch2, beta, alpha)


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:
    product = product if alpha == 1 else product * alpha
    if beta == 0:  # as in PyTorch, input is ignored (its NaNs too)
        return product
    return product + (input if beta == 1 else input * beta)


def meshgrid(*tensors, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``meshgrid(x, y, indexing="ij")``.

    With ``indexing="ij"`` output ``k`` varies along dimension ``k``; with
    ``"xy"`` the first two dimensions are swapped (NumPy's default). PyTorch's
    default is ``"ij"``, with a warning when ``indexing`` is not given.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        import warnings

        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    vectors = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(vectors) >= 2
    if swap:
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = tuple(v.shape[0] for v in vectors)
    grids = []
    for k, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[k] = shape[k]
        grids.append(v.reshape(view).expand(shape))
    if swap:  # the grids of (y, x, ...) in "ij" order, handed back as (x, y, ...)
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def std_mean(input: Tensor, dim=None, *, correction=1, keepdim: bool = False):
    """``(std, mean)`` over ``dim`` (all dims if None), in one call."""
    return (
        input.std(dim, correction=correction, keepdim=keepdim),
        input.mean(dim, keepdim=keepdim) if dim is not None else input.mean(),
    )


def var_mean(input: Tensor, dim=None, *, correction=1, keepdim: bool = False):
    """``(var, mean)`` over ``dim`` (all dims if None), in one call."""
    return (
        input.var(dim, correction=correction, keepdim=keepdim),
        input.mean(dim, keepdim=keepdim) if dim is not None else input.mean(),
    )


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size=None):
    """Repeat each element (each slice along ``dim``) ``repeats`` times, in place in the order.

    ``repeats`` is an int or an int tensor of one count per element. Without
    ``dim`` the input is flattened first. Called with one int tensor,
    ``repeat_interleave(counts)`` gives ``i`` repeated ``counts[i]`` times.

    Nothing here is sized by a count in Python: an int count is an
    ``expand`` of a new dimension, then one copy; a tensor of counts becomes an
    index tensor built by kernels (:func:`_interleave_index`). So a count too
    large for memory fails at once, in the allocation of the result, with
    PyTorch's error.

    Example::

        >>> torch.repeat_interleave(torch.tensor([1, 2]), 2)
        tensor([1, 1, 2, 2])
    """
    if repeats is None:  # the one-argument form: the counts themselves
        counts = _check_counts(input)
        return _interleave_index(counts, _total(counts, output_size))
    if dim is None:
        input, dim = input.reshape(-1), 0
    elif input.dim() == 0:
        input = input.reshape(1)
    dim = dim % input.dim()
    if isinstance(repeats, (list, tuple)):
        from glasstorch.ops.creation import tensor

        repeats = tensor(repeats, dtype=_dtype.int64)
    if not isinstance(repeats, Tensor):
        return _repeat_each(input, int(repeats), dim, output_size)
    counts = _check_counts(repeats)
    size = input.shape[dim]
    if counts.numel() == 1:
        counts = counts.reshape(1).expand(size)
    elif counts.shape[0] != size:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{counts.shape[0]} and input.size({dim}) = {size}"
        )
    return input.index_select(dim, _interleave_index(counts, _total(counts, output_size)))


def _repeat_each(input: Tensor, count: int, dim: int, output_size) -> Tensor:
    """``repeat_interleave`` by one int: a new dimension after ``dim``, expanded, then merged.

    The expand is a view (stride 0), so the only memory is the result's own,
    allocated by one copy. As in PyTorch the result is always a new row-major
    tensor, even for a count of 1 (``contiguous`` alone would return the input).
    """
    if count < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(input.shape)
    _check_output_size(output_size, shape[dim] * count)
    expanded = input.unsqueeze(dim + 1).expand(*shape[: dim + 1], count, *shape[dim + 1 :])
    copied = expanded.clone().contiguous()  # contiguous: a permuted input copied by a count of 1
    return copied.reshape(*shape[:dim], shape[dim] * count, *shape[dim + 1 :])


def _check_counts(repeats: Tensor) -> Tensor:
    """A tensor of counts as a 1-D int64 tensor, checked as PyTorch checks it."""
    if repeats.dtype not in (_dtype.int64, _dtype.int32):
        raise NotImplementedError(
            f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype.title}'"
        )
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    return repeats.reshape(-1).long()


def _total(counts: Tensor, output_size) -> int:
    """The sum of ``counts`` (all checked non-negative), as an exact Python int."""
    if counts.numel() == 0:
        total = 0
    else:
        if (counts < 0).any().item():
            raise RuntimeError("repeats can not be negative")
        largest = counts.max().item()
        if largest * counts.numel() < 2**63:
            total = counts.sum().item()  # cannot overflow int64: the kernel's sum is exact
        else:
            total = sum(counts.tolist())  # one int per row: exact where int64 would wrap
    _check_output_size(output_size, total)
    return total


def _check_output_size(output_size, total: int) -> None:
    if output_size is not None and output_size != total:
        raise RuntimeError(
            f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}"
        )


def _interleave_index(counts: Tensor, total: int) -> Tensor:
    """``[0] * counts[0] + [1] * counts[1] + ...`` as an int64 tensor, built by kernels.

    Each row marks the position where its run starts (``cumsum(counts) -
    counts``); the running sum of the marks, less one, is then the row that
    owns each position. An empty row marks the same place as the next row, so
    the count passes it by. For counts ``[2, 0, 1]`` the runs start at
    ``[0, 2, 2]``, the marks are ``[1, 0, 2]`` and the index is ``[0, 0, 2]``.
    Runs that start at ``total`` (empty rows at the end) mark nothing.

    The first allocation is the result's own (``total`` int64 elements), so
    a total too large for memory fails there, with PyTorch's error, before
    any other work.
    """
    from glasstorch.ops.creation import ones, zeros

    marks = zeros((total,), dtype=_dtype.int64, device=counts.device)
    starts = counts.cumsum(0) - counts
    starts = starts[starts < total]
    marks.index_add_(0, starts, ones(starts.shape, dtype=_dtype.int64, device=counts.device))
    return marks.cumsum(0).sub_(1)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``input`` gathered at ``indices`` along ``dim`` (the other dimensions broadcast).

    Without ``dim`` both are flattened. The partner of ``argsort``/``argmax`` with
    ``keepdim=True``: ``take_along_dim(x, x.argmax(1, keepdim=True), 1)``.
    """
    from glasstorch._shape import broadcast_shapes

    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    dim = dim % input.dim()
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[dim] = shape_ix[dim] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_ix)))
    input = input.expand(common[:dim] + [input.shape[dim]] + common[dim + 1 :])
    indices = indices.expand(common[:dim] + [indices.shape[dim]] + common[dim + 1 :])
    return input.gather(dim, indices)


# ------------------------------------------------------------- Tensor additions
def _nbytes(self: Tensor) -> int:
    """Bytes the elements take: ``numel() * element_size()``."""
    return self.numel() * self.dtype.itemsize


def _conjugate_transpose(self: Tensor) -> Tensor:
    """``x.H``: the (conjugate) transpose of a matrix; real tensors have no conjugate."""
    if self.dim() not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
        )
    return self.t() if self.dim() == 2 else self


_LEGACY_NAMES = {f"torch.{d.legacy_name}": d for d in _dtype.ALL_DTYPES}


def _with_legacy_type_names(type_method):
    """``x.type("torch.FloatTensor")``: a legacy type name is a dtype too."""

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):  # noqa: A001
        if isinstance(dtype, str):
            if dtype not in _LEGACY_NAMES:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = _LEGACY_NAMES[dtype]
        return type_method(self, dtype)

    type.__doc__ = type_method.__doc__
    return type


Tensor.nbytes = property(_nbytes, doc=_nbytes.__doc__)
Tensor.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per element.")
Tensor.H = property(_conjugate_transpose, doc=_conjugate_transpose.__doc__)
Tensor.mH = property(
    lambda self: self.transpose(-2, -1), doc="The last two dimensions transposed (conjugated)."
)
Tensor.lerp = lerp
Tensor.repeat_interleave = repeat_interleave
Tensor.take_along_dim = take_along_dim
Tensor.addmm = addmm
Tensor.baddbmm = baddbmm
Tensor.type = _with_legacy_type_names(Tensor.type)
