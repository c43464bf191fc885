"""The ``out=``, ``keepdims=`` and ``axis=`` arguments of the public functions, in one place.

PyTorch's functions accept ``out=``, a tensor the result is written into, and,
for NumPy's users, ``keepdims=`` as another spelling of ``keepdim=`` and
``axis=`` as another spelling of ``dim=``.
Rather than each operation handling them, :func:`accepts_out` wraps a
public function once (``glasstorch/__init__.py`` applies it to the names in
:data:`WITH_OUT`): the operation computes its result as usual, then the
wrapper writes it into ``out``, following PyTorch's rules:

* no autograd: if grad mode is on and an input requires grad, it refuses;
* ``out`` must be on the device of the result (PyTorch's mixed-device error);
* the result's dtype must be castable to ``out``'s (float into int is refused);
* a shape mismatch resizes ``out`` (with PyTorch's warning, unless ``out``
  had no elements);
* the call returns ``out`` itself (a tuple of outs for ``max(dim=...)``,
  ``sort``, ``topk``).
"""

from __future__ import annotations

import functools
import inspect
import warnings

from glasstorch import _dtype
from glasstorch._dispatch import MIXED_DEVICES
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.tensor import Tensor


def _requires_grad(values) -> bool:
    for value in values:
        if isinstance(value, Tensor) and value.requires_grad:
            return True
        if isinstance(value, (list, tuple)) and _requires_grad(value):
            return True
    return False


def _write(result: Tensor, out: Tensor) -> None:
    """Copy ``result`` into ``out``, resizing ``out`` if its shape differs."""
    if out.device != result.device:
        # out= names an output of the operation: it must be on the operands' device.
        raise RuntimeError(MIXED_DEVICES)
    if not _dtype.can_cast(result.dtype, out.dtype):
        raise RuntimeError(
            f"result type {result.dtype.title} can't be cast to the desired output type "
            f"{out.dtype.title}"
        )
    if out.shape != result.shape:
        if out.numel() != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        from glasstorch.ops.creation import empty

        out.data = empty(tuple(result.shape), dtype=out.dtype, device=out.device)
    with no_grad():
        out.copy_(result)


def _numpy_spellings(kwargs: dict, name: str) -> None:
    """Rename NumPy's ``keepdims=`` and ``axis=`` to PyTorch's ``keepdim=`` and ``dim=``."""
    for numpy_name, torch_name in (("keepdims", "keepdim"), ("axis", "dim")):
        if numpy_name in kwargs:
            if torch_name in kwargs:
                raise TypeError(
                    f"{name}() received both {torch_name}= and its alias {numpy_name}=; "
                    "pass only one"
                )
            kwargs[torch_name] = kwargs.pop(numpy_name)


def accepts_out(function):
    """``function`` with ``out=`` added (and ``keepdims=``/``axis=`` where it has the dims)."""
    parameters = inspect.signature(function).parameters
    has_aliases = "keepdim" in parameters or "dim" in parameters
    name = function.__name__

    @functools.wraps(function)
    def wrapper(*args, out=None, **kwargs):
        if has_aliases and kwargs:
            _numpy_spellings(kwargs, name)
        if out is None:
            return function(*args, **kwargs)
        if is_grad_enabled() and _requires_grad((*args, *kwargs.values())):
            raise RuntimeError(
                f"{name}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad."
            )
        result = function(*args, **kwargs)
        if isinstance(result, tuple):
            for part, target in zip(result, out):
                _write(part, target)
            return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
        _write(result, out)
        return out

    return wrapper


def accepts_keepdims(method):
    """A method with ``keepdims=`` and ``axis=`` as other spellings of ``keepdim=`` and ``dim=``."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if kwargs:
            _numpy_spellings(kwargs, name)
        return method(*args, **kwargs)

    return wrapper


#: The public functions that take ``out=`` (those of PyTorch's that common programs use).
WITH_OUT = (
    "abs add all amax amin any arange argmax argmin bernoulli bmm cat ceil clamp clip concat "
    "concatenate cos cumprod cumsum diag div dot eq exp expm1 eye floor floor_divide full gather ge gt "
    "index_select le linspace log log10 log1p log2 logical_and logical_not logical_or logical_xor "
    "logsumexp lt matmul max maximum mean min minimum mm mul multinomial mv ne neg normal outer "
    "pow prod randperm reciprocal remainder round rsqrt sigmoid sign sin sort sqrt square stack std sub "
    "sum tanh topk tril triu true_divide trunc var where"
).split()

#: Methods whose ``keepdim`` and ``dim`` PyTorch also accepts as ``keepdims`` and ``axis``.
KEEPDIMS_METHODS = (
    "sum mean prod amax amin max min std var logsumexp argmax argmin all any cumsum cumprod "
    "softmax log_softmax argsort sort squeeze unsqueeze"
).split()

#: Public functions outside :data:`WITH_OUT` that take ``axis=`` for ``dim=``.
AXIS_FUNCTIONS = "softmax log_softmax argsort squeeze unsqueeze".split()
