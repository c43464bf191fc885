"""DLPack: hand a tensor's memory to another library, or take one in, without a copy.

DLPack (section 4.2 of the PyTorch paper) is a small C struct that describes a
strided array: a data pointer, the device, the dtype, the shape and the
strides. A producer wraps it in a Python *capsule*; a consumer takes the
pointer out of the capsule, builds its own array over the same memory, and
calls the producer's *deleter* when it no longer needs the memory. No byte is
copied, and any two libraries that speak DLPack (NumPy, PyTorch, CuPy, JAX,
...) can exchange arrays this way.

This module builds the structs with :mod:`ctypes`, exactly as the C header
``dlpack.h`` lays them out:

- :meth:`Tensor.__dlpack__` makes a capsule. Its ``manager_ctx`` points at a
  small Python object that holds the tensor's buffer (so the memory outlives
  the tensor if the consumer still uses it) and the shape and strides arrays;
  the deleter drops that object. A capsule nobody consumed calls the deleter
  itself when it is garbage collected.
- :func:`from_dlpack` takes any object with ``__dlpack__`` (or a capsule),
  marks the capsule used, and returns a tensor over the producer's memory;
  the producer's deleter runs when the last tensor over that memory goes.

Both the versioned capsule of DLPack 1.x (``"dltensor_versioned"``, asked for
with ``max_version``) and the older ``"dltensor"`` are produced and consumed.

Differences from PyTorch: only CPU memory is imported; a CUDA tensor's
storage reports ``kDLCUDA`` from :meth:`Tensor.__dlpack_device__`, but
importing device memory waits for the GPU runtime. Negative strides (a NumPy
``a[::-1]``) are refused with an error, where PyTorch 2.13 aborts. A
read-only NumPy array is taken in as PyTorch does: without a copy and without
a warning, so writing to the tensor would write to memory the array's owner
considers read-only.
"""

from __future__ import annotations

import ctypes
import enum

import numpy as np

from glasstorch import _dtype
from glasstorch._shape import contiguous_strides, numel
from glasstorch.tensor import Storage, Tensor


class DLDeviceType(enum.IntEnum):
    """Where DLPack memory lives (the codes of ``dlpack.h``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3


#: DLPack's dtype codes (``DLDataTypeCode``).
kDLInt, kDLUInt, kDLFloat, kDLBool = 0, 1, 2, 6

#: The DLPack version this module writes and understands.
DLPACK_VERSION = (1, 0)

#: Flags of a versioned tensor.
DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1

# glasstorch dtype <-> (type code, bits)
_CODES = {
    _dtype.bool_: (kDLBool, 8),
    _dtype.uint8: (kDLUInt, 8),
    _dtype.int32: (kDLInt, 32),
    _dtype.int64: (kDLInt, 64),
    _dtype.float32: (kDLFloat, 32),
    _dtype.float64: (kDLFloat, 64),
}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


# ------------------------------------------------------------ the C structs
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL: row-major
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    """The pre-1.0 managed tensor, in a ``"dltensor"`` capsule."""

    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),  # void (*)(DLManagedTensor *)
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """The DLPack 1.x managed tensor, in a ``"dltensor_versioned"`` capsule."""

    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),  # void (*)(DLManagedTensorVersioned *)
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# ------------------------------------------------------- CPython's capsules
# Own function objects (not ctypes.pythonapi's shared ones), so that setting
# their argument types changes nothing for other users of ctypes.pythonapi.
def _capi(name: str, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(PyObject *)
_capsule_new = _capi(
    "PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _Destructor
)
_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_capsule_get_pointer = _capi(
    "PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p
)
_capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# In a capsule's destructor the capsule is being freed: it is passed as a plain
# address, since turning it into a Python object would resurrect it.
_dying_capsule_name = _capi("PyCapsule_GetName", ctypes.c_void_p, ctypes.c_void_p)
_dying_capsule_pointer = _capi(
    "PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)

# Capsule names. The bytes objects live as long as the module, as the names must.
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = {_LEGACY: b"used_dltensor", _VERSIONED: b"used_dltensor_versioned"}

INVALID_CAPSULE = (
    "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
    "only once, so you might have already constructed a tensor from it once."
)


# ------------------------------------------------------------------ export
class _Export:
    """What a capsule made by :meth:`Tensor.__dlpack__` keeps alive until its deleter runs.

    Attributes:
        managed: the ``DLManagedTensor(Versioned)`` struct the capsule points at.
        shape, strides: the ``int64_t`` arrays the struct points at.
        memory: the object that owns the elements (the storage's buffer).
    """

    def __init__(self, managed, shape, strides, memory):
        self.managed, self.shape, self.strides, self.memory = managed, shape, strides, memory


#: Exports whose deleter has not run yet, by ``id`` (their ``manager_ctx``).
_exports: dict[int, _Export] = {}


def _release(manager_ctx: int | None) -> None:
    """The deleter's work: drop the export, and with it the reference to the memory."""
    _exports.pop(manager_ctx or 0, None)


def _legacy_deleter(managed: int) -> None:
    _release(DLManagedTensor.from_address(managed).manager_ctx)


def _versioned_deleter(managed: int) -> None:
    _release(DLManagedTensorVersioned.from_address(managed).manager_ctx)


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Module-level references keep the C callbacks alive for the life of the process.
_LEGACY_DELETER = _Deleter(_legacy_deleter)
_VERSIONED_DELETER = _Deleter(_versioned_deleter)


def _capsule_destructor(capsule: int) -> None:
    """Runs when a capsule is freed: a capsule nobody consumed releases its export.

    A consumed capsule (renamed ``"used_..."``) belongs to its consumer, who
    calls the deleter when done with the memory.
    """
    name_address = _dying_capsule_name(capsule)
    name = ctypes.string_at(name_address) if name_address else b""
    if name == _LEGACY:
        _legacy_deleter(_dying_capsule_pointer(capsule, name_address))
    elif name == _VERSIONED:
        _versioned_deleter(_dying_capsule_pointer(capsule, name_address))


# The deleters and the destructor are Python functions called from C. Python
# code cannot run while an exception is pending, so a consumer that drops
# one of these capsules (or calls the deleter) on its own error path, with
# its exception already set, leaks the export and loses its exception. PyTorch
# writes these in C++; a pure-Python frontend accepts that corner.
_CAPSULE_DESTRUCTOR = _Destructor(_capsule_destructor)


def _device_of(tensor: Tensor) -> tuple[DLDeviceType, int]:
    """The tensor's DLPack device: its storage's device when the storage names one."""
    device = getattr(tensor._storage, "device", None) or tensor.device
    if getattr(device, "type", str(device)).startswith("cuda"):
        return DLDeviceType.kDLCUDA, getattr(device, "index", None) or 0
    return DLDeviceType.kDLCPU, 0


def _memory_owner(tensor: Tensor):
    """The object whose lifetime the exported memory depends on."""
    buffer = tensor._storage.buffer
    if isinstance(buffer, np.ndarray):
        tensor._storage.exported = True  # another library shares the memory from now on
        return buffer
    return tensor._storage  # a device storage (the GPU runtime's): keep it whole


def to_capsule(tensor: Tensor, versioned: bool, copied: bool = False):
    """A DLPack capsule over ``tensor``'s memory (see :meth:`Tensor.__dlpack__`)."""
    if tensor.dtype not in _CODES:
        raise BufferError(f"DLPack export does not support dtype {tensor.dtype}")
    ndim = tensor.dim()
    shape = (ctypes.c_int64 * max(ndim, 1))(*tensor.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*tensor.stride())
    code, bits = _CODES[tensor.dtype]
    device_type, device_id = _device_of(tensor)
    dl_tensor = DLTensor(
        data=tensor.data_ptr(),
        device=DLDevice(device_type, device_id),
        ndim=ndim,
        dtype=DLDataType(code, bits, 1),
        shape=ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
        strides=ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)),
        byte_offset=0,
    )
    if versioned:
        managed = DLManagedTensorVersioned(
            version=DLPackVersion(*DLPACK_VERSION),
            deleter=ctypes.cast(_VERSIONED_DELETER, ctypes.c_void_p),
            flags=DLPACK_FLAG_BITMASK_IS_COPIED if copied else 0,
            dl_tensor=dl_tensor,
        )
    else:
        managed = DLManagedTensor(
            dl_tensor=dl_tensor, deleter=ctypes.cast(_LEGACY_DELETER, ctypes.c_void_p)
        )
    export = _Export(managed, shape, strides, _memory_owner(tensor))
    managed.manager_ctx = id(export)
    _exports[id(export)] = export
    name = _VERSIONED if versioned else _LEGACY
    return _capsule_new(ctypes.addressof(managed), name, _CAPSULE_DESTRUCTOR)


def _tensor_dlpack(
    self: Tensor, *, stream=None, max_version=None, dl_device=None, copy: bool | None = None
):
    """A DLPack capsule over this tensor's memory, for ``from_dlpack`` in another library.

    ``np.from_dlpack(t)`` and ``torch.from_dlpack(t)`` call it; the array
    they return shares the tensor's memory (the same data pointer, the same
    strides).

    Args:
        stream: the consumer's CUDA stream; ignored for CPU tensors. For a
            CUDA tensor the device is synchronized before the export.
        max_version: the newest DLPack version the consumer understands, as
            ``(major, minor)``; ``None`` or a major version below 1 gives the
            older ``"dltensor"`` capsule.
        dl_device: the device the consumer wants; only the tensor's own.
        copy: ``True`` exports a copy; ``False`` or ``None`` never copies.

    Raises:
        BufferError: the tensor requires grad (detach it first), or the
            export cannot be done as asked.
    """
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if dl_device is not None and tuple(dl_device) != tuple(_device_of(self)):
        raise BufferError(
            f"__dlpack__ cannot export to device {tuple(dl_device)}: the tensor is on "
            f"{tuple(_device_of(self))}; move it with .to() first"
        )
    if _device_of(self)[0] == DLDeviceType.kDLCUDA and stream is not None:
        _synchronize_cuda()
    source = self.clone() if copy else self
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return to_capsule(source, versioned, copied=bool(copy))


def _synchronize_cuda() -> None:
    """Wait for queued GPU work, so the consumer's stream sees finished data."""
    from glasstorch import cuda

    synchronize = getattr(cuda, "synchronize", None)
    if synchronize is not None:
        synchronize()


def _tensor_dlpack_device(self: Tensor) -> tuple[DLDeviceType, int]:
    """The ``(device type, device index)`` DLPack consumers ask before importing.

    ``(kDLCPU, 0)`` for a CPU tensor; ``(kDLCUDA, index)`` for a tensor whose
    storage lives on a GPU.
    """
    return _device_of(self)


# ------------------------------------------------------------------ import
class _Imported:
    """Owns a consumed DLPack struct: calls its producer's deleter when freed."""

    def __init__(self, managed_address: int, deleter_address: int | None):
        self.managed_address = managed_address
        self.deleter_address = deleter_address

    def __del__(self):
        if self.deleter_address:
            _Deleter(self.deleter_address)(self.managed_address)
            self.deleter_address = None


def _read_capsule(capsule):
    """Consume a capsule: its managed struct (legacy or versioned) and the struct's address."""
    for name, struct in ((_VERSIONED, DLManagedTensorVersioned), (_LEGACY, DLManagedTensor)):
        if type(capsule).__name__ == "PyCapsule" and _capsule_is_valid(capsule, name):
            address = _capsule_get_pointer(capsule, name)
            managed = struct.from_address(address)
            if struct is DLManagedTensorVersioned and managed.version.major > DLPACK_VERSION[0]:
                raise BufferError(
                    f"from_dlpack understands DLPack {DLPACK_VERSION[0]}.x; the producer "
                    f"sent version {managed.version.major}.{managed.version.minor}"
                )
            _capsule_set_name(capsule, _USED[name])  # consumed: the deleter is ours to call
            return managed, address
    raise RuntimeError(INVALID_CAPSULE)


def _dtype_of(dl_dtype: DLDataType):
    dtype = _DTYPES.get((dl_dtype.code, dl_dtype.bits))
    if dtype is None or dl_dtype.lanes != 1:
        supported = ", ".join(str(d) for d in _CODES)
        raise TypeError(
            f"from_dlpack: glasstorch has no dtype for DLPack type code {dl_dtype.code} with "
            f"{dl_dtype.bits} bits and {dl_dtype.lanes} lanes (it has {supported}); convert "
            "the array in its own library first"
        )
    return dtype


def _from_capsule(capsule) -> Tensor:
    """A tensor over the memory a DLPack capsule describes (consuming the capsule)."""
    managed, address = _read_capsule(capsule)
    owner = _Imported(address, managed.deleter)  # from here on the deleter runs when freed
    dl = managed.dl_tensor
    if dl.device.device_type not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        raise BufferError(
            f"from_dlpack: glasstorch imports CPU memory only, got device type "
            f"{dl.device.device_type} ({_device_name(dl.device.device_type)}); copy the array to "
            "the host in its own library first"
        )
    dtype = _dtype_of(dl.dtype)
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(dl.ndim))
    else:  # NULL strides: compact row-major
        strides = contiguous_strides(shape)
    if any(s < 0 for s in strides):
        raise ValueError(
            "from_dlpack: the array has negative strides, which glasstorch tensors do not "
            "support; copy it first (e.g. numpy.ascontiguousarray)"
        )
    count = numel(shape)
    np_dtype = dtype.numpy
    if count == 0 or not dl.data:
        buffer = np.empty(0, dtype=np_dtype)  # nothing to share: the struct can go now
        del owner
    else:
        span = 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))
        memory = (ctypes.c_char * (span * np_dtype.itemsize)).from_address(dl.data + dl.byte_offset)
        memory.owner = owner  # the array keeps the memory object, which keeps the owner
        buffer = np.frombuffer(memory, dtype=np_dtype)
    storage = Storage(buffer, exported=True)  # another library shares the memory
    return Tensor._make(storage, shape, strides, 0, dtype)


def _device_name(code: int) -> str:
    try:
        return DLDeviceType(code).name
    except ValueError:
        return "unknown"


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor that shares the memory of another library's array, through DLPack.

    Args:
        ext_tensor: an object with ``__dlpack__`` and ``__dlpack_device__``
            (a NumPy array, a PyTorch or glasstorch tensor, ...), or a DLPack
            capsule (which can be consumed only once).

    Returns:
        A tensor over the same memory, with the array's shape, strides and
        dtype (bool, uint8, int32, int64, float32 or float64). Writes through
        either one show in the other.

    Example::

        >>> a = numpy.arange(6.0).reshape(2, 3)
        >>> t = torch.from_dlpack(a)
        >>> t.data_ptr() == a.ctypes.data
        True
    """
    if hasattr(ext_tensor, "__dlpack__"):
        device = ext_tensor.__dlpack_device__()
        if device[0] not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
            raise BufferError(
                f"from_dlpack: glasstorch imports CPU memory only, got device {tuple(device)} "
                f"({_device_name(device[0])}); copy the array to the host first"
            )
        try:
            capsule = ext_tensor.__dlpack__(max_version=DLPACK_VERSION)
        except TypeError:  # a producer older than DLPack 1.0 takes no max_version
            capsule = ext_tensor.__dlpack__()
    else:
        capsule = ext_tensor
    return _from_capsule(capsule)


def to_dlpack(tensor: Tensor):
    """A ``"dltensor"`` capsule over ``tensor``'s memory (``torch.utils.dlpack.to_dlpack``).

    The capsule can be consumed once, by any library's ``from_dlpack``. New
    code passes the tensor itself to ``from_dlpack`` instead.
    """
    return tensor.__dlpack__()


Tensor.__dlpack__ = _tensor_dlpack
Tensor.__dlpack_device__ = _tensor_dlpack_device
_tensor_dlpack.__name__ = _tensor_dlpack.__qualname__ = "__dlpack__"
_tensor_dlpack_device.__name__ = _tensor_dlpack_device.__qualname__ = "__dlpack_device__"

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
