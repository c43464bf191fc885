"""Data types and PyTorch's type-promotion rules.

A :class:`dtype` names an element type and the NumPy dtype the buffer uses.
Promotion decides the dtype an operation computes in when its inputs differ:
``int64 tensor + 0.5`` is float32, ``uint8 + int32`` is int32, and so on.
"""

from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - PyTorch's name
    """An element type, such as ``glasstorch.float32``.

    Attributes:
        name: the short name (``"float32"``).
        is_floating_point: whether values are floats.
        is_signed: whether the type has negative values.
        itemsize: bytes per element.
    """

    def __init__(self, name: str, numpy_name: str, category: int, legacy_name: str, c_name: str):
        self.name = name
        self.numpy = np.dtype(numpy_name)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.legacy_name = legacy_name  # e.g. "FloatTensor", used in error messages
        self.title = legacy_name[: -len("Tensor")]  # "Float", as errors spell it
        self.c_name = c_name  # "float", the C type some errors name
        self.is_floating_point = category == FLOATING
        self.is_signed = name != "uint8" and name != "bool"
        self.itemsize = self.numpy.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def to_python(self, value):
        """Convert a Python number to this type's Python type (float, int or bool)."""
        if self.category == FLOATING:
            return float(value)
        if self.category == INTEGRAL:
            return int(value)
        return bool(value)

    def __reduce__(self):
        return (_by_name, (self.name,))


BOOL, INTEGRAL, FLOATING = 0, 1, 2

bool_ = dtype("bool", "bool", BOOL, "BoolTensor", "bool")
uint8 = dtype("uint8", "uint8", INTEGRAL, "ByteTensor", "unsigned char")
int32 = dtype("int32", "int32", INTEGRAL, "IntTensor", "int")
int64 = dtype("int64", "int64", INTEGRAL, "LongTensor", "long int")
float32 = dtype("float32", "float32", FLOATING, "FloatTensor", "float")
float64 = dtype("float64", "float64", FLOATING, "DoubleTensor", "double")


class _NamedOnlyDtype(dtype):
    """A PyTorch dtype glasstorch names but has no tensors of (half precision).

    Programs mention ``torch.float16`` and ``torch.bfloat16`` even when they run
    in float32 (nanoGPT picks its autocast dtype from a table of all three), so
    the names exist and compare and print as PyTorch's do. Making a tensor of
    one raises a TypeError that says which dtypes glasstorch has.
    """

    def __init__(self, name: str, legacy_name: str, itemsize: int) -> None:
        self.name = name
        self.category = FLOATING
        self.legacy_name = legacy_name
        self.title = legacy_name[: -len("Tensor")]
        self.c_name = name
        self.is_floating_point = True
        self.is_signed = True
        self.itemsize = itemsize

    @property
    def numpy(self):
        raise TypeError(
            f"glasstorch has no torch.{self.name} tensors: its floating dtypes are "
            "torch.float32 and torch.float64 (use one of those)"
        )


float16 = _NamedOnlyDtype("float16", "HalfTensor", 2)
bfloat16 = _NamedOnlyDtype("bfloat16", "BFloat16Tensor", 2)

ALL_DTYPES = (bool_, uint8, int32, int64, float32, float64)
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_BY_NAME = {d.name: d for d in (*ALL_DTYPES, float16, bfloat16)}


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


_default_dtype = float32


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 to start)."""
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (float32 or float64)."""
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    d.numpy  # noqa: B018 - a named-only dtype (float16) raises its TypeError here
    _default_dtype = d


def from_numpy_dtype(np_dtype) -> dtype:
    """The glasstorch dtype for a NumPy dtype, or TypeError if unsupported."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype not in _BY_NUMPY:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types are: "
            "float64, float32, int64, int32, uint8, and bool."
        )
    return _BY_NUMPY[np_dtype]


# Python's and NumPy's scalar types of each kind (made once: NumPy's module
# attributes are slow lookups, and every number operand is asked its kind).
_BOOL_SCALARS = (bool, np.bool_)
_INT_SCALARS = (int, np.integer)
_FLOAT_SCALARS = (float, np.floating)


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar gets on its own: bool, int64 or the default float."""
    if isinstance(value, _BOOL_SCALARS):
        return bool_
    if isinstance(value, _INT_SCALARS):
        return int64
    if isinstance(value, _FLOAT_SCALARS):
        return _default_dtype
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


# -------------------------------------------------------------------- promotion
# Within a category the wider type wins. uint8 and int32 meet at int32, and any
# integer meets bool at the integer.
_ORDER = [bool_, uint8, int32, int64, float32, float64]


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to safely (``torch.promote_types``)."""
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """Merge a more important participant's dtype with a less important one's.

    The less important side (0-d tensors, then Python scalars) only matters when
    it is of a higher *category*: ``int32 tensor + 2.5`` is floating, but
    ``float32 tensor + float64 scalar`` stays float32.
    """
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == FLOATING:
        return higher
    if higher.category == BOOL or lower.category > higher.category:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """The dtype an operation on ``operands`` computes in (``torch.result_type``).

    Operands fall into three ranks: tensors with dimensions, 0-d tensors, and
    Python scalars. Each rank is promoted on its own, then the ranks are merged
    from the most important down, a lower rank winning only with a higher category.
    """
    from glasstorch.tensor import Tensor

    if len(operands) == 2:  # the common case first: two tensors of one dtype
        a, b = operands
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype is b.dtype:
            return a.dtype
    ranks: list[dtype | None] = [None, None, None]
    for operand in operands:
        if isinstance(operand, Tensor):
            rank, d = (0 if operand.dim() > 0 else 1), operand.dtype
        else:
            rank, d = 2, scalar_dtype(operand)
        ranks[rank] = d if ranks[rank] is None else promote_types(ranks[rank], d)
    return _combine(ranks[0], _combine(ranks[1], ranks[2]))


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether an in-place result of ``from_`` may be written into ``to`` (``torch.can_cast``)."""
    return from_.category <= to.category


# ------------------------------------------------- a Python number into a dtype
#
# PyTorch refuses to write a Python number that a tensor's dtype cannot hold
# (full, fill_, x[i] = v, masked_fill, clamp's bounds) instead of wrapping it
# around, and names the C type in its message.

#: The C type name PyTorch's overflow message uses for each dtype.
_C_TYPE_NAMES = {
    "uint8": "uint8_t",
    "int32": "int",
    "int64": "int64_t",
    "float32": "float",
    "float64": "double",
}

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int_range(d: dtype) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    info = np.iinfo(d.numpy)
    return int(info.min), int(info.max)


def check_scalar_fits(value, d: dtype) -> None:
    """Refuse a Python number that ``d`` cannot hold, as PyTorch does.

    Integer dtypes: a float must be finite and within the type's range; an
    int too, except that an unsigned type takes a negative int down to minus
    its largest value (it wraps around: -1 is 255 for uint8). Float dtypes: a
    finite value beyond the type's largest overflows (inf and nan pass), and an
    int must fit in int64. Bool takes anything.
    """
    if d is bool_ or isinstance(value, bool):
        return
    if d.is_floating_point:
        if isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise OverflowError("int too big to convert")
            return
        if (
            value == value
            and abs(value) != float("inf")
            and abs(value) > float(np.finfo(d.numpy).max)
        ):
            raise RuntimeError(_overflow_message(d))
        return
    low, high = int_range(d)
    if isinstance(value, int):
        if not d.is_signed:
            low = -high  # a negative int of magnitude up to the largest wraps around
        if not low <= value <= high:
            raise RuntimeError(_overflow_message(d))
    elif not (value == value and low <= value <= high):  # nan and inf fail
        raise RuntimeError(_overflow_message(d))


def _overflow_message(d: dtype) -> str:
    return f"value cannot be converted to type {_C_TYPE_NAMES[d.name]} without overflow"


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype: ``torch.finfo(torch.float32).eps``.

    Attributes:
        bits, eps, max, min, tiny (= smallest_normal), resolution, dtype.
    """

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002 - PyTorch's name
        type = get_default_dtype() if type is None else type
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

    def __init__(self, type: dtype) -> None:  # noqa: A002 - PyTorch's name
        if type.is_floating_point or type is bool_:
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
