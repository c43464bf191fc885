"""Creating tensors: from data, filled with a value, ranges, identity, random.

Every function here allocates storage through the tier (``kernels.allocate``)
and fills it with a kernel, except that Python data (nested lists) enters
through NumPy, which is the storage format anyway.
"""

from __future__ import annotations

import math

import numpy as np

from glasstorch import _dtype, _tier
from glasstorch._shape import check_sizes
from glasstorch.devices import get_default_device
from glasstorch.ops.device import copy_to
from glasstorch.random import Generator, default_generator
from glasstorch.tensor import CPU, Storage, Tensor, check_device, empty_tensor, strided

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels

# ------------------------------------------------------------------ helpers


def _size_arg(size, negative_message: str | None = None, keyword=None) -> tuple[int, ...]:
    """Accept ``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and ``zeros(size=(2, 3))``.

    ``keyword`` is the ``size=`` keyword argument, if one was given. A negative
    size raises PyTorch's error (``negative_message`` where the function words
    it its own way); too many dimensions too.
    """
    if keyword is not None:
        if size:
            raise TypeError("argument 'size' given by name and by position")
        size = (keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(
                f"zeros(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}"
            )
        if s < 0 and negative_message is not None:
            raise RuntimeError(negative_message)
    size = tuple(int(s) for s in size)
    check_sizes(size)
    return size


def _target_device(device, like: Tensor | None = None):
    """The device a creation function allocates on.

    Its ``device=`` argument if given; else, for the ``*_like`` functions, the
    device of the input (``like``); else the default device
    (:func:`glasstorch.set_default_device`, the CPU unless changed).
    """
    if device is not None:
        return check_device(device)
    if like is not None:
        return like.device
    return get_default_device()


def _check_layout(layout) -> None:
    """Accept ``layout=`` when it is ``torch.strided`` (the dense tensors these
    functions make); any other layout is refused rather than ignored. (PyTorch's
    ``zeros``/``empty`` make an empty sparse tensor for ``torch.sparse_coo`` and
    its other factories fail; glasstorch refuses them all, with this message.)"""
    if layout is not None and layout is not strided:
        raise NotImplementedError(
            f"glasstorch makes only torch.strided tensors here, not {layout} (build a sparse "
            "tensor with torch.sparse_coo_tensor or Tensor.to_sparse)"
        )


def _pinned(out: Tensor, pin_memory: bool) -> Tensor:
    """``out`` in page-locked memory when ``pin_memory=True`` (see
    :meth:`Tensor.pin_memory`: it needs a CUDA device, and a CPU tensor)."""
    if not pin_memory:
        return out
    if out.device != CPU:
        raise RuntimeError("Only dense CPU tensors can be pinned")
    return out.pin_memory()


def _finish(out: Tensor, requires_grad: bool) -> Tensor:
    """Mark a new tensor as requiring grad if asked (only floating tensors may)."""
    if requires_grad:
        if not out.dtype.is_floating_point:
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients"
            )
        out.requires_grad_(True)
    return out


# ------------------------------------------------- values that fit their dtype
#
# PyTorch refuses to create a tensor whose values do not fit its dtype, rather
# than wrapping them around; the rules (and the words) differ a little between
# tensor(), full() and randint(). One Python number is checked by
# _dtype.check_scalar_fits (full, fill_, x[i] = v, masked_fill share it); data
# and randint's bounds by the functions below.


def _check_data_values(array: np.ndarray, dtype) -> None:
    """Refuse Python data that ``dtype`` cannot hold, as ``torch.tensor`` does.

    ``array`` is NumPy's reading of the data: an int beyond int64 made it
    uint64 or object. Integer dtypes take floats within their range and ints
    within it (an unsigned type takes negative ints modulo 256); bool and
    float dtypes take anything.
    """
    if array.size == 0 or dtype is _dtype.bool_ or array.dtype.kind == "b":
        return
    if array.dtype.kind in "uO":
        if dtype.is_floating_point:
            return
        raise ValueError("Overflow when unpacking long long")
    if dtype.is_floating_point:
        return
    low, high = _dtype.int_range(dtype)
    if not dtype.is_signed:
        low = -high  # an unsigned type takes a negative int of magnitude up to its largest
    message = f"value cannot be converted to type {dtype.name} without overflow"
    if array.dtype.kind == "f":
        finite = bool(np.isfinite(array).all())
        if not finite or array.min() < _dtype.int_range(dtype)[0] or array.max() > high:
            raise RuntimeError(message)
    elif array.max() > high or array.min() < low:
        raise RuntimeError(message)


def _integer_data(data, array: np.ndarray, dtype) -> np.ndarray:
    """Python data that mixes ints and floats, read for an integer ``dtype``.

    NumPy reads such data as floats, but PyTorch checks and converts each value
    by its own type: an int is checked as an int (a negative one wraps around in
    an unsigned type) and a float as a float (truncated toward zero). The result
    is the values as int64, each checked; a cast to ``dtype`` wraps the negative
    ints. ``array`` is returned unchanged for any other data.
    """
    if dtype.is_floating_point or dtype is _dtype.bool_ or array.dtype.kind != "f":
        return array
    if not isinstance(data, (list, tuple)):
        return array
    try:
        leaves = np.array(data, dtype=object)
    except ValueError:
        return array
    if leaves.shape != array.shape:
        return array
    values = []
    for leaf in leaves.reshape(-1).tolist():
        if isinstance(leaf, (bool, np.bool_)):
            values.append(int(leaf))
        elif isinstance(leaf, (int, np.integer)):
            _check_data_values(np.array([int(leaf)], dtype=np.int64), dtype)
            values.append(int(leaf))
        else:
            _check_data_values(np.array([float(leaf)]), dtype)
            values.append(int(float(leaf)))
    return np.array(values, dtype=np.int64).reshape(array.shape)


def _filled(shape, value, dtype, device) -> Tensor:
    out = empty_tensor(shape, dtype, device=device)
    kernels.fill(out._strided(), dtype.to_python(value))
    return out


# ------------------------------------------------------------- from data


def _infer_dtype(array: np.ndarray, data) -> _dtype.dtype:
    """The dtype PyTorch gives Python data: bool, int64, or the default float."""
    if isinstance(data, np.ndarray):
        return _dtype.from_numpy_dtype(array.dtype)
    kind = array.dtype.kind
    if kind == "b":
        return _dtype.bool_
    if kind in "iu":
        return _dtype.int64
    if kind == "f":
        if array.dtype == np.float64 and _holds_float64_tensors(data):
            return _dtype.float64
        return _dtype.get_default_dtype()
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _holds_float64_tensors(data) -> bool:
    if isinstance(data, Tensor):
        return data.dtype is _dtype.float64
    if isinstance(data, (list, tuple)) and data:
        return _holds_float64_tensors(data[0])
    return False


def _check_ragged(data, dim: int = 0) -> None:
    """Give PyTorch's error for lists whose rows differ in length."""
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    if isinstance(first, (list, tuple)):
        for item in data:
            if not isinstance(item, (list, tuple)) or len(item) != len(first):
                got = len(item) if isinstance(item, (list, tuple)) else type(item).__name__
                raise ValueError(
                    f"expected sequence of length {len(first)} at dim {dim + 1} (got {got})"
                )
        for item in data:
            _check_ragged(item, dim + 1)


def _to_numpy(data) -> np.ndarray:
    if isinstance(data, Tensor):
        return data.detach().cpu().numpy()  # a CUDA tensor is copied to the host
    if isinstance(data, (list, tuple)):
        _check_ragged(data)
        if any(isinstance(x, Tensor) for x in data):
            data = [
                x.item() if isinstance(x, Tensor) and x.dim() == 0 else _to_numpy(x) for x in data
            ]
    if isinstance(data, (str, bytes)) or data is None:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    array = np.asarray(data)
    if array.dtype == object and not _holds_only_ints(array):
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    return array


def _holds_only_ints(array: np.ndarray) -> bool:
    """Whether an object array is Python ints (NumPy's form of ints beyond 64 bits)."""
    return all(isinstance(x, (int, float)) for x in array.reshape(-1).tolist())


def tensor(
    data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory=False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested lists, an array or a tensor).

    The dtype is inferred as PyTorch does: Python floats give the default float
    (float32), ints give int64, bools give bool; NumPy arrays keep their dtype.

    Example::

        >>> torch.tensor([[1, 2], [3, 4]])
        tensor([[1, 2],
                [3, 4]])
    """
    array = _to_numpy(data)
    if array.dtype.kind in "uO" and not isinstance(data, (np.ndarray, Tensor)):
        array = _read_big_ints(data, array, dtype)
    if dtype is None:
        dtype = _infer_dtype(array, data) if not isinstance(data, Tensor) else data.dtype
    if not isinstance(data, (np.ndarray, Tensor)):  # Python numbers: PyTorch checks each
        array = _integer_data(data, array, dtype)
        _check_data_values(array, dtype)
    out = empty_tensor(array.shape, dtype, device=CPU)  # the data is on the host
    with np.errstate(over="ignore"):  # a float beyond float32's range becomes inf, as in PyTorch
        out._storage.buffer[:] = array.astype(dtype.numpy, copy=False).reshape(-1)
    target = _target_device(device)
    if target != CPU:
        out = copy_to(out, target)
    return _finish(_pinned(out, pin_memory), requires_grad)


def _read_big_ints(data, array: np.ndarray, dtype) -> np.ndarray:
    """NumPy's reading of Python data that holds ints beyond int64 (uint64 or objects).

    A float or bool dtype takes them as floats (or truth values); any other is
    an overflow, as in PyTorch.
    """
    as_float = dtype is not None and (dtype.is_floating_point or dtype is _dtype.bool_)
    if dtype is None:  # a float among the values makes them all floats
        as_float = any(isinstance(x, float) for x in array.reshape(-1).tolist())
    if as_float:
        return np.asarray(data, dtype=np.float64)
    raise ValueError("Overflow when unpacking long long")


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor`, but shares memory with a tensor or NumPy array when it can.

    A tensor comes back as itself when its dtype and device are already the
    ones asked for, and otherwise as ``data.to(device, dtype)``: a copy that
    autograd records. A NumPy array is shared only on the CPU; ``device=``
    anywhere else copies it there.
    """
    if isinstance(data, Tensor):
        return data.to(device=check_device(device), dtype=dtype)
    on_cpu = _target_device(device) == CPU
    if isinstance(data, np.ndarray) and on_cpu and (dtype is None or dtype.numpy == data.dtype):
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor that shares ``ndarray``'s memory: writes to one show in the other.

    Constant time: the tensor's storage *is* the array's memory, seen as a flat
    buffer, and the array's byte strides become element strides.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtype = _dtype.from_numpy_dtype(ndarray.dtype)
    item = ndarray.itemsize
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative "
            "strides are not currently supported. (You can probably work around this by making a "
            "copy of your array  with array.copy().) "
        )
    if any(s % item for s in ndarray.strides):
        raise ValueError(
            "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory."
        )
    strides = tuple(s // item for s in ndarray.strides)
    span = (
        1 + sum((size - 1) * stride for size, stride in zip(ndarray.shape, strides))
        if ndarray.size
        else 0
    )
    flat = np.lib.stride_tricks.as_strided(ndarray, shape=(span,), strides=(item,))
    storage = Storage(flat, exported=True)  # the caller's array shares it
    return Tensor._make(storage, ndarray.shape, strides, 0, dtype)


def _rebuild_tensor(array: np.ndarray, requires_grad: bool, device=None) -> Tensor:
    """Rebuild a tensor from its pickled form (used by ``pickle`` and ``copy``)."""
    out = tensor(array, device=device)
    return out.requires_grad_(requires_grad) if requires_grad else out


# ------------------------------------------------------------- filled with


def _dtype_or_default(dtype):
    return dtype if dtype is not None else _dtype.get_default_dtype()


def empty(*size, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    """An uninitialised tensor of ``size``."""
    size = _size_arg(size, keyword=_ignored.get("size"))
    out = empty_tensor(size, _dtype_or_default(dtype), device=_target_device(device))
    _check_layout(_ignored.get("layout"))
    return _finish(_pinned(out, _ignored.get("pin_memory", False)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    """A tensor of ``size`` filled with 0."""
    size = _size_arg(size, "zeros: Dimension size must be non-negative.", _ignored.get("size"))
    out = _filled(size, 0, _dtype_or_default(dtype), _target_device(device))
    _check_layout(_ignored.get("layout"))
    return _finish(_pinned(out, _ignored.get("pin_memory", False)), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    """A tensor of ``size`` filled with 1."""
    size = _size_arg(size, keyword=_ignored.get("size"))
    out = _filled(size, 1, _dtype_or_default(dtype), _target_device(device))
    _check_layout(_ignored.get("layout"))
    return _finish(_pinned(out, _ignored.get("pin_memory", False)), requires_grad)


def full(
    size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    _check_layout(layout)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = dtype or _dtype.scalar_dtype(fill_value)
    _dtype.check_scalar_fits(fill_value, dtype)
    out = _filled(_size_arg((size,)), fill_value, dtype, _target_device(device))
    return _finish(_pinned(out, pin_memory), requires_grad)


def _like(input: Tensor, dtype):
    return tuple(input.shape), dtype or input.dtype


def _empty_like_layout(input: Tensor, dtype, device) -> Tensor:
    """Uninitialised, shaped like ``input``, keeping its strides if it is dense."""
    from glasstorch._shape import dense_strides

    shape, dtype = _like(input, dtype)
    target = _target_device(device, like=input)
    return empty_tensor(shape, dtype, dense_strides(shape, input.stride()), device=target)


def _filled_like(input: Tensor, value, dtype, device) -> Tensor:
    out = _empty_like_layout(input, dtype, device)
    kernels.fill(out._strided(), out.dtype.to_python(value))
    return out


def empty_like(
    input: Tensor, *, dtype=None, device=None, requires_grad=False, **_ignored
) -> Tensor:
    """An uninitialised tensor shaped like ``input``."""
    return _finish(_empty_like_layout(input, dtype, device), requires_grad)


def zeros_like(
    input: Tensor, *, dtype=None, device=None, requires_grad=False, **_ignored
) -> Tensor:
    """Zeros shaped like ``input``."""
    return _finish(_filled_like(input, 0, dtype, device), requires_grad)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    """Ones shaped like ``input``."""
    return _finish(_filled_like(input, 1, dtype, device), requires_grad)


def full_like(
    input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False, **_ignored
) -> Tensor:
    """``fill_value`` everywhere, shaped like ``input``."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    _dtype.check_scalar_fits(fill_value, dtype or input.dtype)
    return _finish(_filled_like(input, fill_value, dtype, device), requires_grad)


# ---------------------------------------------------------------- ranges


def arange(
    start, end=None, step=1, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """Values from ``start`` up to (not including) ``end`` in steps of ``step``.

    ``arange(5)`` is ``[0, 1, 2, 3, 4]``. Integer arguments give int64; any
    float argument gives the default float dtype.

    Float values are PyTorch's to the last bit (the kernel contract's formula:
    PyTorch's vectorised CPU loop of 256-bit vectors with fused multiply-adds).
    Past 32768 values PyTorch splits the loop between its threads, each part
    with its own blocks, so its last bits there depend on its thread count;
    glasstorch gives those of one thread.
    """
    _check_layout(layout)
    if dtype is _dtype.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = values
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        floating = any(isinstance(v, float) for v in values)
        dtype = _dtype.get_default_dtype() if floating else _dtype.int64
    if dtype is _dtype.int64:
        start, end, step = _integer_range(start, end, step)
        length = max(0, -((start - end) // step))  # exact: ceil((end - start) / step)
    elif not dtype.is_floating_point:
        length = max(0, math.ceil((end - start) / step))
        start, _, step = _integer_range(start, end, step, allow_zero_step=True)
    else:
        length = max(0, math.ceil((end - start) / step))
    out = empty_tensor((length,), dtype, device=_target_device(device))
    kernels.arange(out._strided(), start, step)
    return _finish(_pinned(out, pin_memory), requires_grad)


def _integer_range(start, end, step, allow_zero_step=False) -> tuple[int, int, int]:
    """arange's ends and step for an integer dtype: each truncated to an int first,
    as PyTorch does (so ``arange(0, 5, 1.5, dtype=int64)`` steps by 1).

    PyTorch counts the values of an int64 range from the truncated ends and step
    (a step truncated to 0 is an error), but those of a smaller integer dtype
    from the ends and step as given, the values then stepping by the truncated
    step (``arange(0, 1, 0.5, dtype=int32)`` is ``[0, 0]``): ``allow_zero_step``.
    """
    for value in (start, end, step):
        if not _dtype.INT64_MIN <= value <= _dtype.INT64_MAX:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
    start, end, step = int(start), int(end), int(step)
    if step == 0 and not allow_zero_step:
        raise ValueError("step must be nonzero")
    return start, end, step


def linspace(
    start, end, steps: int, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """``steps`` evenly spaced values from ``start`` to ``end``, both included.

    The values are PyTorch's to the last bit (the kernel contract's formula):
    the step is computed in the output's arithmetic (float32 for float32,
    double otherwise), the first half of the points counts up from ``start``
    and the second half down from ``end``, each with one fused multiply-add.
    PyTorch built without FMA (``ATEN_CPU_CAPABILITY=default``) rounds twice
    and can differ in the last bit.
    """
    _check_layout(layout)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = _dtype_or_default(dtype)
    if steps == 1:
        return full(
            (1,), start, dtype=dtype, device=device, pin_memory=pin_memory,
            requires_grad=requires_grad,
        )  # fmt: skip
    if steps > 1 and dtype is _dtype.bool_:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if steps > 1 and not dtype.is_floating_point:
        start, end = _as_integer(start, dtype), _as_integer(end, dtype)
    elif steps > 1:  # float32 refuses ends past its range, as PyTorch does
        _dtype.check_scalar_fits(start, dtype)
        _dtype.check_scalar_fits(end, dtype)
    out = empty_tensor((int(steps),), dtype, device=_target_device(device))
    kernels.linspace(out._strided(), float(start), float(end))
    return _finish(_pinned(out, pin_memory), requires_grad)


def _as_integer(value, dtype) -> int:
    """``value`` as ``dtype`` holds it, checked as ``full`` checks it: linspace of an
    integer dtype spaces the converted ends (PyTorch's rule), so ``linspace(-2.5,
    3.5, 5, dtype=int64)`` runs from -2 to 3 and ``-3`` as uint8 is 253."""
    _dtype.check_scalar_fits(value, dtype)
    low, high = _dtype.int_range(dtype)
    return (int(value) - low) % (high - low + 1) + low  # a negative int wraps (unsigned)


def eye(
    n: int, m: int | None = None, *, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """The ``n x m`` identity matrix.

    Built from zeros and one strided view: the diagonal of an ``n x m``
    contiguous matrix is the 1-D view with stride ``m + 1``.
    """
    _check_layout(layout)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else m
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    out = _filled((n, m), 0, _dtype_or_default(dtype), _target_device(device))
    diagonal = out._view((min(n, m),), (m + 1,), 0)
    kernels.fill(diagonal._strided(), out.dtype.to_python(1))
    return _finish(_pinned(out, pin_memory), requires_grad)


# ---------------------------------------------------------------- random


def _generator(generator: Generator | None) -> Generator:
    return generator if generator is not None else default_generator


#: Each random kernel, and how many elements one 128-bit Philox block serves
#: (the contract's docstrings define both).
_RANDOM_KERNELS = {
    "uniform": ("random_uniform", 4),
    "normal": ("random_normal", 2),
    "integers": ("random_integers", 2),
    "permutation": ("randperm", 2),
}


def fill_random(out: Tensor, kind: str, generator: Generator | None, *params) -> Tensor:
    """Fill ``out`` from the generator's next Philox blocks with a random kernel.

    The generator hands out as many blocks as the kernel will read and moves
    past them, so the next draw continues the stream on every tier alike.
    """
    gen = _generator(generator)
    if gen.uses_pytorch_stream and not out.is_cuda:
        return _fill_from_pytorch_stream(out, kind, gen, *params)
    name, per_block = _RANDOM_KERNELS[kind]
    blocks = -(-out.numel() // per_block)
    seed, offset = gen.take_blocks(blocks)
    getattr(kernels, name)(out._strided(), seed, offset, *params)
    return out


def _fill_from_pytorch_stream(out: Tensor, kind: str, gen: Generator, *params) -> Tensor:
    """Fill the CPU tensor ``out`` with PyTorch's CPU numbers (the "pytorch" stream).

    Element i of ``out``'s row-major order gets the stream's i-th value. (For
    a non-contiguous ``out``, PyTorch may walk memory order instead; and it
    draws normals one at a time there, as here.)
    """
    from glasstorch import _pytorch_cpu_random as stream

    count, dtype = out.numel(), out.dtype
    if kind == "uniform":
        values = stream.uniform(gen, count, _stream_float(dtype), *params)
    elif kind == "normal":
        if out.is_contiguous():
            values = stream.normal(gen, count, _stream_float(dtype), *params)
        else:  # PyTorch's kernel draws one at a time unless the tensor is contiguous
            pieces = [stream.normal(gen, 1, _stream_float(dtype), *params) for _ in range(count)]
            values = np.concatenate(pieces) if pieces else np.zeros(0)
    elif kind == "integers":
        values = stream.integers(gen, count, *params)
    else:
        values = stream.randperm(gen, count)
    source = from_numpy(np.ascontiguousarray(values).reshape(tuple(out.shape)))
    kernels.copy(out._strided(), source._strided())
    return out


def _stream_float(dtype) -> np.dtype:
    """The NumPy dtype PyTorch's stream computes ``dtype``'s values in (float16 and
    bfloat16 are drawn as float32 here; PyTorch draws them its own way)."""
    return np.float64 if dtype is _dtype.float64 else np.float32


def _size_keyword(kwargs: dict):
    """The ``size=`` keyword of ``rand``/``randn`` (the only extra keyword they take)."""
    unknown = set(kwargs) - {"size"}
    if unknown:
        raise TypeError(f"got an unexpected keyword argument '{sorted(unknown)[0]}'")
    return kwargs.get("size")


def rand(
    *size, generator=None, dtype=None, device=None, requires_grad=False, **size_keyword
) -> Tensor:
    """Uniform random numbers in ``[0, 1)``."""
    dtype = _dtype_or_default(dtype)
    size = _size_arg(size, keyword=_size_keyword(size_keyword))
    out = empty_tensor(size, dtype, device=_target_device(device))  # size checked before dtype
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{dtype.title}'")
    out = fill_random(out, "uniform", generator, 0.0, 1.0)
    return _finish(out, requires_grad)


def randn(
    *size, generator=None, dtype=None, device=None, requires_grad=False, **size_keyword
) -> Tensor:
    """Normal random numbers with mean 0 and standard deviation 1."""
    dtype = _dtype_or_default(dtype)
    size = _size_arg(size, keyword=_size_keyword(size_keyword))
    out = empty_tensor(size, dtype, device=_target_device(device))  # size checked before dtype
    if not dtype.is_floating_point:
        if out.numel() == 0:  # as in PyTorch: no number to draw, no kernel to refuse
            return _finish(out, requires_grad)
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{dtype.title}'")
    out = fill_random(out, "normal", generator, 0.0, 1.0)
    return _finish(out, requires_grad)


#: The two forms of randint, as PyTorch's error lists them.
_RANDINT_FORMS = (
    " * (int high, tuple of ints size, *, torch.Generator generator, torch.dtype dtype = None, "
    "torch.device device = None, bool requires_grad = False)\n"
    " * (int low, int high, tuple of ints size, *, torch.Generator generator, "
    "torch.dtype dtype = None, torch.device device = None, bool requires_grad = False)\n"
)


def _randint_bounds(args: tuple, keywords: dict) -> tuple[int, int, tuple]:
    """``(low, high, size)`` from randint's two forms, ``(high, size)`` and
    ``(low, high, size)``, each argument by position or by name; PyTorch's errors
    for anything else."""
    given = len(args) + len(keywords)
    names = ("high", "size") if given == 2 and "low" not in keywords else ("low", "high", "size")
    shown = [type(a).__name__ for a in args] + [
        f"{k}={type(v).__name__}" for k, v in keywords.items()
    ]
    invalid = TypeError(
        f"randint() received an invalid combination of arguments - got ({', '.join(shown)}), "
        f"but expected one of:\n{_RANDINT_FORMS}"
    )
    if len(args) > len(names) or given != len(names) or set(keywords) - set(names):
        raise invalid
    values = dict(zip(names, args))
    for name, value in keywords.items():
        if name in values:
            raise TypeError(f"randint(): argument '{name}' given by name and by position")
        values[name] = value
    for position, name in enumerate(names, start=1):
        value = values[name]
        where = f" (position {position})" if position <= len(args) else ""
        expected = (tuple, list) if name == "size" else (int, np.integer, Tensor)
        if len(names) == 3 and not isinstance(value, expected):
            raise invalid  # PyTorch names the argument only in the two-argument form
        if name == "size":
            if not isinstance(value, (tuple, list)):
                raise TypeError(
                    f"randint(): argument 'size'{where} must be tuple of ints, "
                    f"not {type(value).__name__}"
                )
        elif isinstance(value, bool) or not isinstance(value, (int, np.integer, Tensor)):
            raise TypeError(
                f"randint(): argument '{name}'{where} must be int, not {type(value).__name__}"
            )
    return int(values.get("low", 0)), int(values["high"]), tuple(values["size"])


def randint(
    *args, generator=None, dtype=None, device=None, requires_grad=False, **bounds
) -> Tensor:
    """Random integers in ``[low, high)``, shaped ``size``.

    The forms of PyTorch: ``randint(high, size)`` and ``randint(low, high, size)``,
    each argument by position or by name (``randint(10, size=(3,))``); ``size``
    is a tuple or list of ints. ``dtype`` defaults to int64 (a floating dtype
    holds the integers as floats).

    Example:
        >>> torch.randint(10, size=(2, 3)).shape
        torch.Size([2, 3])
    """
    low, high, size = _randint_bounds(args, bounds)
    if not (
        _dtype.INT64_MIN <= low <= _dtype.INT64_MAX and _dtype.INT64_MIN <= high <= _dtype.INT64_MAX
    ):
        raise ValueError("Overflow when unpacking long long")
    if high <= low:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    dtype = dtype or _dtype.int64
    if not dtype.is_floating_point:  # both ends must be values of the dtype
        smallest, largest = (0, 1) if dtype is _dtype.bool_ else _dtype.int_range(dtype)
        if not smallest <= low <= largest:
            raise RuntimeError(f"from is out of bounds for {dtype.c_name}")
        if not smallest <= high - 1 <= largest:
            raise RuntimeError(f"to - 1 is out of bounds for {dtype.c_name}")
    out = empty_tensor(_size_arg((size,)), dtype, device=_target_device(device))
    fill_random(out, "integers", generator, low, high)
    return _finish(out, requires_grad)


def randperm(
    n: int, *, generator=None, dtype=None, layout=None, device=None, pin_memory=False,
    requires_grad=False,
) -> Tensor:  # fmt: skip
    """A random permutation of the integers ``0`` to ``n - 1``."""
    _check_layout(layout)
    check_sizes((n,))
    out = empty_tensor((n,), _dtype.int64, device=_target_device(device))
    out = fill_random(out, "permutation", generator)
    if dtype is not None and dtype is not _dtype.int64:
        out = out.to(dtype)
    return _finish(_pinned(out, pin_memory), requires_grad)


def rand_like(input: Tensor, *, dtype=None, generator=None, **kwargs) -> Tensor:
    """Uniform ``[0, 1)`` numbers shaped like ``input``."""
    kwargs.setdefault("device", input.device)  # on the input's device unless told otherwise
    return rand(tuple(input.shape), dtype=dtype or input.dtype, generator=generator, **kwargs)


def randn_like(input: Tensor, *, dtype=None, generator=None, **kwargs) -> Tensor:
    """Normal numbers shaped like ``input``."""
    kwargs.setdefault("device", input.device)  # on the input's device unless told otherwise
    return randn(tuple(input.shape), dtype=dtype or input.dtype, generator=generator, **kwargs)


def randint_like(input: Tensor, low, high=None, *, dtype=None, generator=None, **kwargs) -> Tensor:
    """Random integers in ``[low, high)`` shaped like ``input`` (input's dtype)."""
    kwargs.setdefault("device", input.device)  # on the input's device unless told otherwise
    if high is None:
        low, high = 0, low
    return randint(
        low, high, tuple(input.shape), dtype=dtype or input.dtype, generator=generator, **kwargs
    )


def as_tensor_on(value, like: Tensor) -> Tensor:
    """``value`` itself if it is a tensor, else a number made a 0-d tensor on
    ``like``'s device (with PyTorch's scalar dtype)."""
    return value if isinstance(value, Tensor) else tensor(value, device=like.device)
