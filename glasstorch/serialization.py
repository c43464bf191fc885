"""Saving and loading tensors, state dicts and any picklable object: ``glasstorch.save`` / ``load``.

PyTorch's ``torch.save`` pickles the object, and ``torch.load`` unpickles it. Unpickling
can run any code the file names, which is why ``torch.load`` grew ``weights_only`` (and,
since PyTorch 2.6, defaults to ``weights_only=True``). glasstorch goes one step further
for the files programs save most: a checkpoint of tensors and containers (a state dict,
an optimizer state) describes its object tree as JSON data, and :func:`load` rebuilds
only the node kinds listed below, without unpickling at all.

Any other object (a NumPy array, a whole ``nn.Module``, an ``argparse.Namespace``) is
pickled, as PyTorch does, with the tensors inside it stored as in JSON checkpoints.
:func:`load` unpickles it with ``weights_only=False``; with ``weights_only=True``, the
default, it lets the pickle name only an allow-list of globals (see
:mod:`glasstorch._weights_only` and :func:`add_safe_globals`) and refuses anything else
with PyTorch's error, before importing or calling it.

The file format (versions 1 and 2)
----------------------------------
A checkpoint is a zip archive whose entries are *stored* (not compressed):

``manifest.json``
    A UTF-8 JSON object::

        {"format": "glasstorch.save", "version": 1, "byteorder": "little",
         "storages": [{"dtype": "float32", "numel": 6, "location": "cpu"}, ...],
         "root": <node>}

``storages/<k>``
    The raw bytes of storage ``k``: ``numel`` elements of ``dtype``, little-endian,
    one after another. A storage is saved once however many tensors view it.

``object.pkl`` (version 2 only)
    The pickled object, when it is not plain data. Version 2 is written only then,
    so a state dict's file stays version 1 and loads in any glasstorch.

A ``<node>`` is a JSON object with a ``"kind"``:

=================  =================================================================
kind               fields
=================  =================================================================
``none``           (none)
``bool``           ``value``: true or false
``int``            ``value``: a JSON integer (any size)
``float``          ``value``: ``repr(x)`` as a string, so ``nan``/``inf`` and every bit
                   of the double survive
``str``            ``value``: the string
``bytes``          ``value``: the bytes in base64
``list``           ``items``: list of nodes
``tuple``          ``items``: list of nodes
``size``           ``items``: list of ints (a ``torch.Size``)
``dict``           ``items``: list of ``[key node, value node]`` pairs (keys may be
                   ints, as in optimizer state dicts)
``ordered_dict``   like ``dict``; loads as :class:`collections.OrderedDict`
``dtype``          ``name``: a dtype name (``"float32"``)
``device``         ``type``, ``index``
``tensor``         ``id`` (an integer), ``storage`` (index into ``storages``), ``dtype``,
                   ``shape``, ``stride``, ``offset``, ``requires_grad`` and
                   ``parameter`` (whether it was an ``nn.Parameter``)
``tensor_ref``     ``id``: the same tensor *object* as an earlier ``tensor`` node
``pickle``         ``entry``: ``"object.pkl"``; the root of a version 2 file
=================  =================================================================

Only exact types are plain data: a ``defaultdict``, a ``bytearray`` or a named tuple
is pickled (and keeps its type), and so is a container that contains itself or nests
more than :data:`MAX_DEPTH` deep. NumPy scalars are the one exception: they are saved
as Python numbers. Inside a pickle, each tensor, dtype and device is written as a
*persistent id*: the JSON text of its node, which :func:`load` checks and builds as
above. So tensors keep the guarantees below, and a pickled object shares storages
and tensor objects just as a JSON tree does.

So, as with ``torch.save``: a tensor keeps its shape, strides and storage offset;
two tensors that view one storage load back viewing one storage (writes to one show
in the other); one tensor object saved twice loads back as one object; and
``requires_grad`` is saved (a loaded tensor is always a leaf).

Safety and errors
-----------------
:func:`load` checks everything before it builds anything: the zip's CRCs, the magic
and version, every node kind, dtype names, that each storage entry has exactly the
bytes its manifest promises, and that every view lies inside its storage. A problem
raises :class:`SerializationError` (a ``RuntimeError``) that says what is wrong and,
for a file of another kind (a real PyTorch checkpoint, a pickle, a NumPy file, a text
file, ...), what the file seems to be.

Memory is checked before it is spent. A zip entry's directory record declares its
size; :func:`load` compares that size with what the manifest promises (``numel`` times
the element size) and with the file's own length *before* reading a byte of the entry,
then reads exactly that many bytes into the storage's buffer (the pickle entry is
checked the same way). Entries must be stored uncompressed, as :func:`save` writes
them, and encrypted ones are refused: a compressed entry could inflate a small file
into gigabytes (a "zip bomb"). Since all the entries together may not claim more
bytes than the file holds, loading a file never allocates much more than the file's
own size. With ``weights_only=True`` this holds for a pickle too: every object it
builds comes from its own bytes, since no allowed global allocates a size it is told.

On the default path (``weights_only=True``) nothing the file names is ever imported
or called, except the allowed globals; ``weights_only=False`` unpickles in full, as
PyTorch does, and is only for files you trust. Either way, a file that is not a
glasstorch checkpoint (a bare pickle, a PyTorch checkpoint) is never unpickled.

Saving to a path is atomic: the checkpoint is written to a temporary file in the same
folder, flushed to disk (``fsync``), then moved over the target with ``os.replace``.
An error in the middle leaves any old file intact and removes the temporary file. A
process killed in the middle (``SIGKILL``, a power cut) cannot remove it, so the
temporary file's name holds the saving process's id (``.<name>.<pid>.<random>.tmp``),
and the next save to the same path removes the ones whose process no longer runs.
"""

from __future__ import annotations

import base64
import collections
import io
import json
import os
import pickle
import re
import struct
import sys
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, Any, BinaryIO

import numpy as np

from glasstorch import _dtype
from glasstorch._shape import INT64_MAX, MAX_DIMS, numel
from glasstorch._tier import cuda_active
from glasstorch._weights_only import (
    WeightsUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
    weights_only_message,
)
from glasstorch.tensor import (
    Size,
    Storage,
    Tensor,
    check_device,
    device,
    storage_to_device,
    storage_to_host,
)

__all__ = [
    "SerializationError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]

FORMAT = "glasstorch.save"
VERSION = 2
MANIFEST = "manifest.json"
STORAGE_PREFIX = "storages/"
#: The entry holding a pickled object (format version 2).
PICKLE_ENTRY = "object.pkl"
#: The pickle protocol ``save`` uses unless told otherwise (PyTorch's default).
DEFAULT_PROTOCOL = 2

#: How deeply containers may nest (a state dict nests 3 or 4 levels). The limit keeps
#: saving and loading well inside Python's recursion limit.
MAX_DEPTH = 100

#: What a storage's saved location may be.
_LOCATION = re.compile(r"(cpu|cuda)(:[0-9]{1,4})?")

#: Bytes read from an entry at a time.
_CHUNK = 1 << 20

#: Errors a damaged zip archive can raise from :mod:`zipfile` while it is opened or read.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    struct.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    OverflowError,
    IndexError,
    KeyError,
)

# Every entry gets this timestamp, so saving the same object twice gives the same bytes.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)

FileLike = str | os.PathLike | BinaryIO | IO[bytes]
MapLocation = None | str | device | dict | Callable[[Storage, str], Any]


class SerializationError(RuntimeError):
    """A file could not be loaded: it is truncated, corrupt, or not a glasstorch checkpoint."""


# ---------------------------------------------------------------------------- saving
class _NotPlainData(Exception):
    """Raised by :meth:`_Writer.node` for an object the JSON nodes cannot describe."""


class _Writer:
    """Turns an object tree into manifest nodes, collecting the storages it meets."""

    def __init__(self):
        self.storages: list[Storage] = []
        self._storage_index: dict[int, int] = {}  # id(Storage) -> index
        self._tensor_ids: dict[int, int] = {}  # id(Tensor) -> node id
        self._keep_alive: list[Any] = []  # so that ids stay unique while writing
        self._open: set[int] = set()  # containers being written (to refuse cycles)

    def node(self, obj: Any) -> dict:
        """The JSON node for ``obj``; raises :class:`_NotPlainData` if it has none."""
        kind = type(obj)
        if obj is None:
            return {"kind": "none"}
        if kind is bool or kind is np.bool_:
            return {"kind": "bool", "value": bool(obj)}
        if kind is int or isinstance(obj, np.integer):
            return {"kind": "int", "value": int(obj)}
        if kind is float or isinstance(obj, np.floating):
            return {"kind": "float", "value": repr(float(obj))}
        if kind is str:
            return {"kind": "str", "value": obj}
        if kind is bytes:
            return {"kind": "bytes", "value": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if kind is _dtype.dtype:
            return {"kind": "dtype", "name": obj.name}
        if kind is device:
            return {"kind": "device", "type": obj.type, "index": obj.index}
        if kind is Size:
            return {"kind": "size", "items": [int(n) for n in obj]}
        if kind in (list, tuple, dict, collections.OrderedDict):
            if id(obj) in self._open or len(self._open) >= MAX_DEPTH:
                raise _NotPlainData  # a cycle, or deep nesting: pickle keeps both
            self._open.add(id(obj))
            try:
                return self._container(obj)
            finally:
                self._open.discard(id(obj))
        raise _NotPlainData

    def _container(self, obj) -> dict:
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {"kind": kind, "items": [self.node(item) for item in obj]}
        kind = "ordered_dict" if isinstance(obj, collections.OrderedDict) else "dict"
        return {"kind": kind, "items": [[self.node(k), self.node(v)] for k, v in obj.items()]}

    def persistent_id(self, obj: Any) -> str | None:
        """What the pickler writes instead of a tensor, dtype or device: its JSON node.

        Tensors inside a pickled object are stored like any other (storages shared,
        views kept), and dtypes and devices stay the library's own objects.
        """
        if isinstance(obj, Tensor) or type(obj) in (_dtype.dtype, device):
            return json.dumps(self.node(obj))
        return None

    def pickle(self, obj: Any, pickle_module: Any, protocol: int) -> bytes:
        """``obj`` pickled, each tensor, dtype and device in it written as a persistent id."""
        stream = io.BytesIO()
        pickler = pickle_module.Pickler(stream, protocol=protocol)
        pickler.persistent_id = self.persistent_id
        pickler.dump(obj)
        return stream.getvalue()

    def _tensor(self, t: Tensor) -> dict:
        if id(t) in self._tensor_ids:
            return {"kind": "tensor_ref", "id": self._tensor_ids[id(t)]}
        node_id = len(self._tensor_ids)
        self._tensor_ids[id(t)] = node_id
        self._keep_alive.append(t)
        storage = t.untyped_storage()
        if id(storage) not in self._storage_index:
            self._storage_index[id(storage)] = len(self.storages)
            self.storages.append(storage)
        return {
            "kind": "tensor",
            "id": node_id,
            "storage": self._storage_index[id(storage)],
            "dtype": t.dtype.name,
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "offset": t.storage_offset(),
            "requires_grad": bool(t.requires_grad),
            "parameter": _is_parameter(t),
        }


def _is_parameter(t: Tensor) -> bool:
    """Whether ``t`` is an ``nn.Parameter`` (checked without importing nn)."""
    return any(
        cls.__name__ == "Parameter" and cls.__module__.startswith("glasstorch.nn")
        for cls in type(t).__mro__
    )


def _storage_bytes(storage: Storage) -> bytes:
    """The storage's elements as little-endian bytes (the on-disk form)."""
    buffer = np.ascontiguousarray(storage_to_host(storage))  # a GPU storage is copied over
    return buffer.astype(buffer.dtype.newbyteorder("<"), copy=False).tobytes()


def _write_checkpoint(obj: Any, stream: BinaryIO, pickle_module: Any, protocol: int) -> None:
    """Write the zip archive for ``obj`` to an open binary stream.

    ``obj`` is described in JSON nodes if it can be (format version 1), or else
    pickled into the entry :data:`PICKLE_ENTRY` (version 2).
    """
    writer = _Writer()
    pickled = None
    try:
        root = writer.node(obj)
    except _NotPlainData:
        writer = _Writer()  # start again: the storages met so far are counted anew
        pickled = writer.pickle(obj, pickle_module, protocol)
        root = {"kind": "pickle", "entry": PICKLE_ENTRY}
    storages = [
        {
            "dtype": _dtype.from_numpy_dtype(s.buffer.dtype).name,
            "numel": len(s),
            "location": str(s.device),
        }
        for s in writer.storages
    ]
    manifest = {
        "format": FORMAT,
        "version": 1 if pickled is None else 2,
        "byteorder": "little",
        "storages": storages,
        "root": root,
    }
    with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(
            zipfile.ZipInfo(MANIFEST, _ZIP_DATE), json.dumps(manifest, indent=1).encode("utf-8")
        )
        if pickled is not None:
            archive.writestr(zipfile.ZipInfo(PICKLE_ENTRY, _ZIP_DATE), pickled)
        for index, storage in enumerate(writer.storages):
            info = zipfile.ZipInfo(f"{STORAGE_PREFIX}{index}", _ZIP_DATE)
            archive.writestr(info, _storage_bytes(storage))


def save(
    obj: Any,
    f: FileLike,
    pickle_module: Any = pickle,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save ``obj`` to a file: a tensor, a state dict, or any object pickle can save.

    Args:
        obj: what to save. Tensors, numbers, strings, ``None``, bytes, dtypes,
            devices, sizes, and lists, tuples, dicts and OrderedDicts nesting these
            (``model.state_dict()``, ``optimizer.state_dict()``) are written as data,
            which :func:`load` rebuilds without unpickling. Anything else (a NumPy
            array, a whole ``nn.Module``, a class of your own) is pickled, with the
            tensors inside it stored the same way; loading it back needs
            ``weights_only=False`` or :func:`add_safe_globals`, as in PyTorch.
        f: a path (``str`` or ``pathlib.Path``) or a binary file object open for
            writing (``io.BytesIO``, ``open(..., "wb")``).
        pickle_module: the module whose ``Pickler`` pickles objects that are not data.
        pickle_protocol: the pickle protocol (PyTorch's default, 2).
        _use_new_zipfile_serialization, _disable_byteorder_record: accepted for
            PyTorch compatibility; glasstorch has one file format.

    Raises:
        pickle.PicklingError, AttributeError, TypeError: as pickle raises them, for an
            object it cannot pickle (a lambda, a local class, an open file).

    Saving to a path is atomic: either the new checkpoint is complete at ``f``, or
    the old file (if any) is still there, untouched.

    Example::

        >>> glasstorch.save({"weight": glasstorch.ones(2, 3)}, "checkpoint.pt")
        >>> glasstorch.load("checkpoint.pt")["weight"].shape
        torch.Size([2, 3])
        >>> glasstorch.save(model, "model.pt")  # a whole module: pickled
        >>> model = glasstorch.load("model.pt", weights_only=False)
    """

    def write(stream):
        _write_checkpoint(obj, stream, pickle_module, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        _save_atomically(write, os.fspath(f))
    elif hasattr(f, "write"):
        write(f)
    else:
        raise TypeError(f"save() expects a path or a writable binary file, got {type(f).__name__}")


def _save_atomically(write: Callable[[BinaryIO], None], path: str) -> None:
    """Write to a temporary file beside ``path``, fsync it, then ``os.replace`` it in."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    prefix = _temp_prefix(path)
    _remove_abandoned_temp_files(folder, prefix)
    fd, temp_path = tempfile.mkstemp(dir=folder, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_path, _new_file_mode(path))
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
        raise
    _fsync_folder(folder)


def _temp_prefix(path: str) -> str:
    """The start of the names of temporary files for ``path``: ``.<name>.``."""
    return f".{os.path.basename(path)}."


def _remove_abandoned_temp_files(folder: str, prefix: str) -> None:
    """Remove temporary files left in ``folder`` by saves whose process was killed.

    A name ``<prefix><pid>.<random>.tmp`` whose process has ended is abandoned; a
    running process's file may be a save in progress and is left alone.
    """
    for name in os.listdir(folder):
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid_text, dot, _ = name[len(prefix) : -len(".tmp")].partition(".")
        if dot and pid_text.isdigit() and not _process_exists(int(pid_text)):
            try:
                os.unlink(os.path.join(folder, name))
            except FileNotFoundError:
                pass  # another save removed it first


def _process_exists(pid: int) -> bool:
    """Whether a process with this id runs (or is a zombie not yet waited for)."""
    if pid <= 0 or os.name != "posix":
        return True  # not a process id, or no signal 0 to ask with: keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or an id no process can have): keep it
    return True


def _new_file_mode(path: str) -> int:
    """The permissions the file would get from ``open(path, "wb")``.

    ``mkstemp`` creates files readable by their owner only; a checkpoint keeps the
    mode of the file it replaces, or else gets the usual ``0o666`` less the umask.
    """
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- loading
def load(
    f: FileLike,
    map_location: MapLocation = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load an object saved by :func:`save`.

    Args:
        f: a path (``str`` or ``pathlib.Path``) or a binary file object; a file object
            is read from its current position.
        map_location: where to put the storages: ``"cpu"``, a ``glasstorch.device``,
            a dict mapping saved locations to new ones (``{"cuda:0": "cpu"}``), or a
            callable ``fn(storage, location)`` returning a storage (or ``None`` to keep
            it). Mapping to ``"cuda"`` without a CUDA device raises PyTorch's error.
        pickle_module: the module whose ``Unpickler`` unpickles a pickled object
            (``weights_only=False`` only; ``None`` means :mod:`pickle`).
        weights_only: ``None`` (the default) means ``True``, or ``False`` when a
            ``pickle_module`` is given, as in PyTorch 2.6 and later. With ``True``, a
            pickled object may only name the globals in the allow-list (containers,
            ``set``, ``complex``, ``Counter``, dtypes, devices, sizes) and those added
            with :func:`add_safe_globals`; anything else raises PyTorch's
            ``pickle.UnpicklingError`` "Weights only load failed ...". With ``False``
            a pickled object is unpickled in full, which can run any code the file
            names: do it only for files you trust. Files of tensors and containers
            (state dicts) hold no pickle and load the same either way.
            The environment variable ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces
            ``True``; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` turns the default to
            ``False`` (with a warning) but not an explicit ``True``.
        mmap: accepted for PyTorch compatibility; the file is always read into memory.
        pickle_load_args: ``encoding``, ``errors`` and ``fix_imports``, passed to the
            unpickler when ``weights_only=False`` (ignored, with PyTorch's warning,
            otherwise).

    Raises:
        SerializationError: the file is truncated, corrupt, or not a glasstorch
            checkpoint (the message says what it seems to be). A real PyTorch
            checkpoint or a bare pickle is never read, whatever ``weights_only``.
        pickle.UnpicklingError: ``weights_only=True`` and the pickled object names a
            global that is not allowed.

    Example::

        >>> state = glasstorch.load("checkpoint.pt", map_location="cpu")
        >>> model = glasstorch.load("model.pt", weights_only=False)  # a whole module
    """
    unknown = set(pickle_load_args) - {"encoding", "errors", "fix_imports"}
    if unknown:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(unknown)}")
    weights_only = _weights_only_setting(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError(
                "Can not safely load weights when explicit pickle_module is specified"
            )
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    elif pickle_module is None:
        pickle_module = pickle
    unpickling = _Unpickling(weights_only, pickle_module, pickle_load_args)
    name, data = _read_all(f)
    try:
        archive = _open_archive(data, name)
        with archive:
            manifest = _read_manifest(archive, name, len(data))
            return _Reader(archive, manifest, name, map_location, len(data), unpickling).build()
    except (MemoryError, OverflowError, RecursionError) as error:
        # The checks above should leave nothing this large to build; if something
        # still is, it is reported as a bad file rather than as a crash.
        raise SerializationError(
            f"{name} could not be loaded: {type(error).__name__} while reading it ({error}); "
            "the file is corrupt or describes more than fits in memory"
        ) from error


_TRUE_VALUES = ("1", "y", "yes", "true")


def _weights_only_setting(weights_only: bool | None, pickle_module: Any) -> bool:
    """``weights_only`` as PyTorch resolves it: the default and the environment overrides."""
    forced = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    forced_off = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    if forced and forced_off:
        raise RuntimeError(
            "Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
            "should be set, but both were set."
        )
    if forced:
        return True
    if weights_only is not None:
        return bool(weights_only)
    if forced_off:
        warnings.warn(
            "Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
            "`weights_only` argument was not explicitly passed to `torch.load`, forcing "
            "weights_only=False.",
            UserWarning,
            stacklevel=3,
        )
        return False
    return pickle_module is None


class _Unpickling:
    """How :func:`load` unpickles a pickled object: restricted, or with ``pickle_module``."""

    def __init__(self, weights_only: bool, pickle_module: Any, load_args: dict):
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.load_args = load_args

    def unpickler(self, data: bytes) -> pickle.Unpickler:
        if self.weights_only:
            return WeightsUnpickler(io.BytesIO(data), encoding="utf-8")
        args = {"encoding": "utf-8", **self.load_args}
        return self.pickle_module.Unpickler(io.BytesIO(data), **args)


def _read_all(f: FileLike) -> tuple[str, bytes]:
    """The file's name (for messages) and its bytes."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as stream:
            return repr(path), stream.read()
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("load() needs a file opened in binary mode ('rb')")
        return repr(getattr(f, "name", type(f).__name__)), bytes(data)
    raise TypeError(f"load() expects a path or a readable binary file, got {type(f).__name__}")


def _open_archive(data: bytes, name: str) -> zipfile.ZipFile:
    if not data:
        raise SerializationError(f"{name} is empty: it is not a glasstorch checkpoint")
    if not data.startswith(b"PK\x03\x04"):
        raise SerializationError(f"{name} is not a glasstorch checkpoint: it {_what_is_it(data)}.")
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except _ZIP_ERRORS as error:
        raise SerializationError(
            f"{name} starts like a zip archive (the container glasstorch checkpoints use) but "
            f"is truncated or corrupt ({error}); it cannot be loaded"
        ) from error


def _what_is_it(data: bytes) -> str:
    """A guess at a file's kind from its first bytes, for error messages."""
    head = data[:16]
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return (
            "looks like a Python pickle (perhaps a legacy torch.save file or a pickled "
            "object); glasstorch.load never unpickles a bare pickle, because unpickling "
            "can run code"
        )
    if head.startswith(b"\x93NUMPY"):
        return "looks like a NumPy .npy file: load it with numpy.load and glasstorch.from_numpy"
    if head.startswith(b"\x1f\x8b"):
        return "looks like a gzip-compressed file"
    if head.startswith(b"\x89HDF"):
        return "looks like an HDF5 file"
    try:
        text = data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\r\n\t" for c in text):
        return "looks like a text file"
    return f"has unrecognised binary content (first bytes {head!r})"


def _read_manifest(archive: zipfile.ZipFile, name: str, file_size: int) -> dict:
    names = set(archive.namelist())
    if MANIFEST not in names:
        if any(n.endswith("data.pkl") for n in names):
            raise SerializationError(
                f"{name} looks like a PyTorch checkpoint (a zip archive holding data.pkl, "
                "written by torch.save). glasstorch.load reads only files written by "
                "glasstorch.save, because PyTorch's format is a pickle and unpickling can run "
                "code. Convert it in PyTorch: load it, turn tensors into NumPy arrays, and save "
                "them with glasstorch.save(glasstorch.from_numpy(...))."
            )
        raise SerializationError(
            f"{name} is a zip archive but not a glasstorch checkpoint (it has no {MANIFEST})"
        )
    info = _checked_entry(archive, MANIFEST, name, file_size)
    raw = bytearray(info.file_size)
    _read_entry_into(archive, info, memoryview(raw), name)
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SerializationError(f"{name}: {MANIFEST} is not valid JSON ({error})") from error
    except RecursionError:
        raise SerializationError(f"{name}: {MANIFEST} is nested too deeply to read") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SerializationError(
            f"{name}: {MANIFEST} does not name the format {FORMAT!r}; not a glasstorch checkpoint"
        )
    version = manifest.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SerializationError(f"{name}: the manifest's version is not an integer")
    if version > VERSION:
        raise SerializationError(
            f"{name} was written in checkpoint format version {version}; this glasstorch reads "
            f"versions up to {VERSION}. Upgrade glasstorch to load it."
        )
    if version < 1 or manifest.get("byteorder") != "little":
        raise SerializationError(f"{name}: unsupported version or byte order in the manifest")
    return manifest


def _checked_entry(
    archive: zipfile.ZipFile, entry: str, name: str, file_size: int
) -> zipfile.ZipInfo:
    """The directory record of ``entry``, checked before a byte of the entry is read.

    The entry must be stored (neither compressed nor encrypted), and the size it
    declares must fit in the file: what reading it costs is known, and bounded by
    the file's size, before it starts.
    """
    try:
        info = archive.getinfo(entry)
    except KeyError as error:
        raise SerializationError(f"{name} is corrupt: the entry {entry!r} is missing") from error
    if info.flag_bits & 0x1:
        raise SerializationError(
            f"{name}: the entry {entry!r} is encrypted; glasstorch checkpoints never are"
        )
    if info.compress_type != zipfile.ZIP_STORED:
        raise SerializationError(
            f"{name}: the entry {entry!r} is compressed (zip method {info.compress_type}). "
            "glasstorch.save stores entries uncompressed, and load refuses compressed ones "
            "so that a small file can never inflate into a huge one (a zip bomb); "
            "save the object again with glasstorch.save"
        )
    if info.compress_size != info.file_size or info.header_offset + info.file_size > file_size:
        raise SerializationError(
            f"{name} is truncated or corrupt: the entry {entry!r} declares {info.file_size} "
            f"bytes, which the {file_size}-byte file cannot hold"
        )
    return info


def _read_entry_into(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, out: memoryview, name: str
) -> None:
    """Read the checked entry ``info`` into ``out`` (exactly its size), a chunk at a time.

    Reading to the end also checks the entry's CRC.
    """
    try:
        with archive.open(info) as stream:
            filled = 0
            while filled < len(out):
                count = stream.readinto(out[filled : filled + _CHUNK])
                if not count:
                    raise EOFError(f"the entry ended after {filled} of {len(out)} bytes")
                filled += count
            stream.read(1)  # reaches the end of the entry, where the CRC is checked
    except _ZIP_ERRORS as error:
        raise SerializationError(
            f"{name} is truncated or corrupt: reading {info.filename!r} failed ({error})"
        ) from error


def _resolve_location(map_location: MapLocation, storage: Storage, location: str) -> Storage:
    """Apply ``map_location`` to one storage saved at ``location``."""
    if map_location is None:
        target = location
    elif isinstance(map_location, (str, device)):
        target = map_location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif callable(map_location):
        result = map_location(storage, location)
        if result is None:
            return storage
        if not isinstance(result, Storage):
            raise TypeError(
                "a map_location function must return a storage (or None), "
                f"got {type(result).__name__}"
            )
        return result
    else:
        raise TypeError(
            "map_location should be None, a string, a glasstorch.device, a dict or a callable, "
            f"got {type(map_location).__name__}"
        )
    if target is not None and device(target).type == "cuda" and not cuda_active:
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU."
        )
    target = check_device(str(target) if isinstance(target, device) else target)
    if target is not None and target.type == "cuda":
        return storage_to_device(storage)
    return storage


class _Reader:
    """Checks a manifest and rebuilds the object tree it describes."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        manifest: dict,
        name: str,
        map_location,
        file_size: int,
        unpickling: _Unpickling,
    ):
        self.archive = archive
        self.unpickling = unpickling
        self.name = name
        self.map_location = map_location
        self.manifest = manifest
        self.tensors: dict[int, Tensor] = {}
        self.file_size = file_size
        # What the storage entries may still claim, in bytes: all of them together
        # fit in the file, unless entries overlap (a trick of zip bombs).
        self.bytes_left = file_size
        self.storages = self._load_storages(manifest.get("storages"))

    def fail(self, what: str) -> SerializationError:
        return SerializationError(f"{self.name} is corrupt: {what}")

    def _load_storages(self, specs) -> list[Storage]:
        if not isinstance(specs, list):
            raise self.fail("the manifest has no list of storages")
        storages = []
        for index, spec in enumerate(specs):
            if not isinstance(spec, dict):
                raise self.fail(f"storage {index} is not described by an object")
            dtype = self._dtype(spec.get("dtype"))
            numel = self._count(spec.get("numel"), f"storage {index}'s numel")
            location = spec.get("location", "cpu")
            if not isinstance(location, str) or not _LOCATION.fullmatch(location):
                raise self.fail(f"storage {index}'s location {_short(location)} is not a device")
            buffer = self._read_storage(index, dtype, numel)
            storage = _resolve_location(self.map_location, Storage(buffer), location)
            storages.append(storage)
        return storages

    def _read_storage(self, index: int, dtype: _dtype.dtype, numel: int) -> np.ndarray:
        """Storage ``index``'s elements, read straight into a new buffer after the checks."""
        entry = f"{STORAGE_PREFIX}{index}"
        expected = numel * dtype.itemsize
        if expected > INT64_MAX:
            raise self.fail(f"storage {index}'s numel {numel} does not fit in memory")
        info = _checked_entry(self.archive, entry, self.name, self.file_size)
        if info.file_size != expected:
            raise self.fail(
                f"storage {index} should hold {numel} {dtype.name} elements ({expected} "
                f"bytes) but its entry has {info.file_size} bytes"
            )
        self.bytes_left -= expected
        if self.bytes_left < 0:
            raise self.fail(
                "the storage entries claim more bytes than the file holds (overlapping entries)"
            )
        buffer = np.empty(numel, dtype=dtype.numpy)
        _read_entry_into(self.archive, info, memoryview(buffer).cast("B"), self.name)
        if sys.byteorder == "big":
            buffer.byteswap(inplace=True)  # the file is little-endian
        if dtype.numpy == np.bool_ and numel and buffer.view(np.uint8).max() > 1:
            raise self.fail(f"storage {index} holds bool elements that are neither 0 nor 1")
        return buffer

    def _dtype(self, name) -> _dtype.dtype:
        if not isinstance(name, str) or name not in _dtype._BY_NAME:
            raise self.fail(f"unknown dtype {name!r}")
        return _dtype._BY_NAME[name]

    def _count(self, value, what: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(f"{what} is not a non-negative integer ({value!r})")
        if value > INT64_MAX:
            raise self.fail(f"{what} does not fit in an int64 ({value!r})")
        return value

    def _check_view(self, shape, stride, offset: int, itemsize: int, storage_numel: int) -> None:
        """Check that a view (non-negative geometry, see ``_count``) lies inside its storage.

        At most :data:`MAX_DIMS` dimensions, an element count and every byte
        position within an int64, and the last element inside the storage; an
        empty view may point anywhere up to the storage's end.
        """
        if len(shape) > MAX_DIMS:
            raise self.fail(f"a tensor has {len(shape)} dimensions; at most {MAX_DIMS} are allowed")
        count = numel(shape)
        if count * itemsize > INT64_MAX:
            raise self.fail(f"a tensor of shape {_short(tuple(shape))} has too many elements")
        if count == 0:
            if offset > storage_numel:
                raise self.fail("an empty tensor's offset lies past the end of its storage")
            return
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
        if last >= storage_numel:
            raise self.fail(
                f"a tensor of shape {_short(tuple(shape))}, stride {_short(tuple(stride))} and "
                f"offset {offset} reaches element {last} of a storage of {storage_numel} elements"
            )

    def build(self) -> Any:
        return self.node(self.manifest.get("root"), depth=0)

    def node(self, node, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"the object tree is nested more than {MAX_DEPTH} levels deep")
        if not isinstance(node, dict) or not isinstance(node.get("kind"), str):
            raise self.fail(f"expected a node object with a 'kind', got {_short(node)}")
        kind = node["kind"]
        build = self._BUILDERS.get(kind)
        if build is None:
            raise self.fail(
                f"unknown node kind {kind!r}. glasstorch.load rebuilds only "
                f"{', '.join(sorted(self._BUILDERS))}; it never imports or calls anything a "
                "file names"
            )
        try:
            return build(self, node, depth)
        except SerializationError:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise self.fail(f"malformed {kind!r} node {_short(node)} ({error!r})") from error

    def _value(self, node, types, kind):
        value = node["value"]
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise self.fail(f"a {kind!r} node holds {_short(value)}")
        return value

    def _items(self, node, depth):
        items = node["items"]
        if not isinstance(items, list):
            raise self.fail(f"a {node['kind']!r} node's items are not a list")
        return [self.node(item, depth + 1) for item in items]

    def _pairs(self, node, depth):
        items = node["items"]
        if not isinstance(items, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in items
        ):
            raise self.fail(f"a {node['kind']!r} node's items are not [key, value] pairs")
        pairs = []
        for key_node, value_node in items:
            key = self.node(key_node, depth + 1)
            try:
                hash(key)
            except TypeError:
                raise self.fail(f"a dict key is unhashable ({type(key).__name__})") from None
            pairs.append((key, self.node(value_node, depth + 1)))
        return pairs

    def _tensor(self, node, depth) -> Tensor:
        node_id = node["id"]
        if not isinstance(node_id, int) or node_id in self.tensors:
            raise self.fail(f"tensor id {node_id!r} is invalid or repeated")
        dtype = self._dtype(node["dtype"])
        index = node["storage"]
        if not isinstance(index, int) or isinstance(index, bool):
            raise self.fail(f"storage index {index!r} is not an integer")
        if not 0 <= index < len(self.storages):
            raise self.fail(f"a tensor refers to storage {index}, which does not exist")
        storage = self.storages[index]
        if storage.buffer.dtype != dtype.numpy:
            raise self.fail(f"a {dtype.name} tensor views a {storage.buffer.dtype} storage")
        shape = node["shape"]
        stride = node["stride"]
        if not isinstance(shape, list) or not isinstance(stride, list) or len(shape) != len(stride):
            raise self.fail("a tensor's shape and stride are not lists of one length")
        shape = [self._count(n, "a size") for n in shape]
        stride = [self._count(n, "a stride") for n in stride]
        offset = self._count(node["offset"], "a storage offset")
        self._check_view(shape, stride, offset, dtype.itemsize, len(storage))
        tensor = Tensor._make(storage, shape, stride, offset, dtype)
        requires_grad = node["requires_grad"]
        if not isinstance(requires_grad, bool):
            raise self.fail("requires_grad is not true or false")
        if requires_grad and not dtype.is_floating_point:
            raise self.fail(f"a {dtype.name} tensor cannot require gradients")
        if node.get("parameter", False) is True:
            tensor = _make_parameter(tensor, requires_grad)
        else:
            tensor._requires_grad = requires_grad
        self.tensors[node_id] = tensor
        return tensor

    def _tensor_ref(self, node, depth) -> Tensor:
        node_id = node["id"]
        if node_id not in self.tensors:
            raise self.fail(f"a reference to tensor {node_id!r}, which comes later or not at all")
        return self.tensors[node_id]

    def _device(self, node, depth) -> device:
        kind, index = node["type"], node["index"]
        if kind not in ("cpu", "cuda") or not (index is None or isinstance(index, int)):
            raise self.fail("a malformed device node")
        return device(kind, index)

    def _pickle(self, node, depth) -> Any:
        """Unpickle the object in the entry ``node`` names (checked like a storage's)."""
        entry = node["entry"]
        if entry != PICKLE_ENTRY:
            raise self.fail(f"a pickle node names the entry {_short(entry)}, not {PICKLE_ENTRY!r}")
        info = _checked_entry(self.archive, entry, self.name, self.file_size)
        self.bytes_left -= info.file_size
        if self.bytes_left < 0:
            raise self.fail(
                "the entries claim more bytes than the file holds (overlapping entries)"
            )
        data = bytearray(info.file_size)
        _read_entry_into(self.archive, info, memoryview(data), self.name)
        unpickler = self.unpickling.unpickler(bytes(data))
        unpickler.persistent_load = lambda pid: self._persistent(pid, depth)
        if not self.unpickling.weights_only:
            return unpickler.load()  # the file is trusted: its errors are the caller's
        try:
            return unpickler.load()
        except (SerializationError, MemoryError, RecursionError):
            raise
        except pickle.UnpicklingError as error:
            raise pickle.UnpicklingError(weights_only_message(str(error))) from None
        except Exception as error:
            raise self.fail(f"its pickled object could not be rebuilt ({error!r})") from error

    def _persistent(self, pid, depth) -> Any:
        """A tensor, dtype or device that a pickle refers to by its JSON node."""
        if not isinstance(pid, str) or len(pid) > _MAX_PERSISTENT_ID:
            raise self.fail(f"a pickle refers to {_short(pid)}, which is not a node")
        try:
            node = json.loads(pid)
        except ValueError as error:
            raise self.fail(f"a pickle refers to {_short(pid)}, which is not JSON") from error
        if not isinstance(node, dict) or node.get("kind") not in _PERSISTENT_KINDS:
            raise self.fail(f"a pickle refers to {_short(node)}; only {_PERSISTENT_KINDS} may be")
        return self.node(node, depth + 1)

    _BUILDERS: dict[str, Callable[..., Any]] = {
        "none": lambda self, node, depth: None,
        "bool": lambda self, node, depth: self._value(node, (bool,), "bool"),
        "int": lambda self, node, depth: self._value(node, (int,), "int"),
        "float": lambda self, node, depth: float(self._value(node, (str,), "float")),
        "str": lambda self, node, depth: self._value(node, (str,), "str"),
        "bytes": lambda self, node, depth: base64.b64decode(
            self._value(node, (str,), "bytes"), validate=True
        ),
        "list": lambda self, node, depth: self._items(node, depth),
        "tuple": lambda self, node, depth: tuple(self._items(node, depth)),
        "size": lambda self, node, depth: Size(self._count(n, "a size") for n in node["items"]),
        "dict": lambda self, node, depth: dict(self._pairs(node, depth)),
        "ordered_dict": lambda self, node, depth: collections.OrderedDict(self._pairs(node, depth)),
        "dtype": lambda self, node, depth: self._dtype(node["name"]),
        "device": _device,
        "tensor": _tensor,
        "tensor_ref": _tensor_ref,
        "pickle": _pickle,
    }


#: The node kinds a pickle may refer to as persistent ids, and the longest id read.
_PERSISTENT_KINDS = ("tensor", "tensor_ref", "dtype", "device")
_MAX_PERSISTENT_ID = 1 << 16


def _make_parameter(tensor: Tensor, requires_grad: bool) -> Tensor:
    """An ``nn.Parameter`` over ``tensor``'s storage (a plain tensor if nn is unavailable)."""
    try:
        from glasstorch.nn import Parameter
    except ImportError:
        tensor._requires_grad = requires_grad
        return tensor
    return Parameter(tensor, requires_grad=requires_grad)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
