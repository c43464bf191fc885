"""Tensor methods for the operations real PyTorch programs use beyond the core.

A second table in the style of :mod:`glasstorch.ops.methods`: each line
attaches a function (sorting, einsum, ...) to :class:`Tensor`, so
``x.sort()`` and ``torch.sort(x)`` are the same code.
"""

from __future__ import annotations

from glasstorch import linalg
from glasstorch.ops import sampling, shaping, sorting
from glasstorch.ops.methods import _running_inplace
from glasstorch.tensor import Tensor

_METHODS = {
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "msort": sorting.msort,
    "topk": sorting.topk,
    # sampling
    "multinomial": sampling.multinomial,
    "bernoulli": sampling.bernoulli,
    "bernoulli_": sampling.bernoulli_,
    # matrices and layout
    "tril": shaping.tril,
    "triu": shaping.triu,
    "diagonal": shaping.diagonal,
    "diag": shaping.diag,
    "trace": shaping.trace,
    "outer": shaping.outer,
    "ger": shaping.outer,
    "repeat": shaping.repeat,
    "tile": shaping.tile,
    "roll": shaping.roll,
    "cumprod": shaping.cumprod,
    "log2": shaping.log2,
    "log10": shaping.log10,
    "norm": linalg.tensor_norm,
}
for _name, _function in _METHODS.items():
    setattr(Tensor, _name, _function)

Tensor.cumprod_ = _running_inplace(shaping.cumprod, "cumprod")

# Counting, binning and scanning (glasstorch/ops/counting.py).
from glasstorch.ops import counting  # noqa: E402

for _name in [
    "bincount", "diff", "histc", "isfinite", "isinf", "logcumsumexp",
    "nan_to_num", "nan_to_num_", "unique", "unique_consecutive",
]:  # fmt: skip
    setattr(Tensor, _name, getattr(counting, _name))

# More math, layout and statistics (glasstorch/ops/more_math.py).
from glasstorch.ops import more_math  # noqa: E402

for _name in [
    "addbmm", "addcdiv", "addcmul", "addmv", "aminmax", "arctan2", "atan2", "copysign",
    "corrcoef", "cov", "cross", "cummax", "cummin", "deg2rad", "diag_embed", "dist",
    "fliplr", "flipud", "fmod", "frac", "heaviside", "hypot", "index_fill", "index_fill_",
    "inner", "kron", "logaddexp", "logit", "median", "moveaxis", "movedim", "nanmean",
    "nanmedian", "nanquantile", "nansum", "quantile", "rad2deg", "rot90", "sgn", "signbit",
    "tensor_split", "unfold", "vdot", "xlogy", "fill_diagonal_",
]:  # fmt: skip
    setattr(Tensor, _name, getattr(more_math, _name))

# In-place forms, written into the tensor (more_math's in-place section).
for _name, _function in more_math.INPLACE_METHODS.items():
    setattr(Tensor, _name, _function)
