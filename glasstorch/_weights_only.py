"""What ``glasstorch.load(..., weights_only=True)`` may rebuild from a pickled object.

Most checkpoints (state dicts, optimizer states, nested containers of tensors and
numbers) are saved as JSON data and never pickled. Anything else (a NumPy array, a
whole ``nn.Module``, an ``argparse.Namespace``) is pickled, and unpickling a pickle
calls whatever functions and classes it names. With ``weights_only=True`` (the
default, as in PyTorch 2.6 and later) :class:`WeightsUnpickler` lets a pickle name
only the globals in an allow-list:

* the few harmless builtins PyTorch allows by default (``set``, ``complex``,
  ``bytearray``, ``collections.OrderedDict``, ``collections.Counter``, and
  ``_codecs.encode``, which protocol-2 pickles use to write ``bytes``),
  glasstorch's ``Size``, and ``HookDict``, the dict a module keeps its hooks in
  (PyTorch's modules use an ``OrderedDict``), so that allowing a model's classes
  is enough to load the whole model, as in PyTorch;
* whatever the user added with :func:`add_safe_globals` or :class:`safe_globals`.

Every other global is refused with PyTorch's error, before anything it names is
imported or called; the modules ``sys``, ``os``, ``posix`` and ``nt`` are refused
even when the user allows them. Tensors, dtypes and devices inside a pickle are not
globals at all: they are "persistent ids" that point into the checkpoint's checked
JSON data (see :mod:`glasstorch.serialization`).

Where glasstorch is stricter than PyTorch: ``bytearray`` may only copy data given to
it, never allocate a size (``bytearray(10**12)``), and ``_codecs.encode`` only
encodes to latin-1, as pickle itself does. So a file cannot ask for much more
memory than it holds.
"""

from __future__ import annotations

import _codecs
import _compat_pickle
import collections
import pickle
from collections.abc import Callable
from typing import Any

from glasstorch.autograd.function import HookDict
from glasstorch.tensor import Size

__all__ = [
    "WeightsUnpickler",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "safe_globals",
    "weights_only_message",
]

#: Modules whose globals are refused even when the user allow-lists them (as in PyTorch).
BLOCKED_MODULES = ("sys", "os", "posix", "nt")

SafeGlobal = Callable | tuple[Callable, str]

# The globals the user allowed with add_safe_globals (or a safe_globals block).
_user_safe_globals: set[SafeGlobal] = set()


def add_safe_globals(safe_globals: list[SafeGlobal]) -> None:
    """Allow ``load(..., weights_only=True)`` to rebuild these functions and classes.

    Each item is a function or class, named in a checkpoint as
    ``{__module__}.{__qualname__}``, or a tuple ``(obj, "full.path")`` giving the name
    the checkpoint uses. Only allow what you trust: a loaded file may call an allowed
    function, or make an allowed class and set its state, with any arguments.

    Example::

        >>> glasstorch.serialization.add_safe_globals([argparse.Namespace])
        >>> glasstorch.load("checkpoint.pt")  # may now hold a Namespace
    """
    global _user_safe_globals
    _user_safe_globals = _user_safe_globals | set(safe_globals)


def get_safe_globals() -> list[SafeGlobal]:
    """The globals added with :func:`add_safe_globals`, as a list."""
    return list(_user_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    global _user_safe_globals
    _user_safe_globals = set()


class safe_globals:
    """A ``with`` block inside which the given globals are allowed, as by :func:`add_safe_globals`.

    Example::

        >>> with glasstorch.serialization.safe_globals([argparse.Namespace]):
        ...     checkpoint = glasstorch.load("checkpoint.pt")
    """

    def __init__(self, safe_globals: list[SafeGlobal]):
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info) -> None:
        global _user_safe_globals
        _user_safe_globals = _user_safe_globals - set(self.safe_globals)


def full_path(obj: Any) -> str:
    """The name under which pickle writes a function or class: ``module.qualname``."""
    return f"{obj.__module__}.{obj.__qualname__}"


def _bytearray_of_data(*args) -> bytearray:
    """``bytearray``, but only over data the file holds: never ``bytearray(size)``."""
    if args and isinstance(args[0], int):
        raise pickle.UnpicklingError(
            "bytearray(n) would allocate memory the file does not hold; glasstorch only "
            "rebuilds a bytearray from its bytes"
        )
    return bytearray(*args)


def _encode_latin1(text: str, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode`` as pickle's protocol 2 uses it: a ``str`` to latin-1 bytes."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(
            f"_codecs.encode is only rebuilt for latin-1 strings, not {encoding!r}"
        )
    return _codecs.encode(text, "latin1")


def _default_globals() -> dict[str, Any]:
    """The globals every weights-only load may rebuild, by the full name a pickle uses."""
    allowed: dict[str, Any] = {
        full_path(cls): cls
        for cls in (collections.OrderedDict, collections.Counter, set, complex, Size, HookDict)
    }
    allowed["builtins.bytearray"] = _bytearray_of_data
    allowed["_codecs.encode"] = _encode_latin1
    return allowed


def _allowed_globals() -> dict[str, Any]:
    """The default globals and the user's (the user's name wins where both have one)."""
    allowed = _default_globals()
    for item in _user_safe_globals:
        if isinstance(item, tuple):
            obj, name = item
            allowed[name] = obj
        else:
            allowed[full_path(item)] = item
    return allowed


def _unsupported_global(path: str) -> pickle.UnpicklingError:
    """PyTorch's error for a global that is not allowed (builtins are named without a module)."""
    if path.startswith("builtins."):
        path = path[len("builtins.") :]
    return pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {path} was not an allowed global by default. "
        f"Please use `torch.serialization.add_safe_globals([{path}])` or the "
        f"`torch.serialization.safe_globals([{path}])` context manager to allowlist this global "
        "if you trust this class/function."
    )


class WeightsUnpickler(pickle.Unpickler):
    """An unpickler that imports nothing: it looks globals up in the allow-list only."""

    def find_class(self, module: str, name: str) -> Any:
        # Protocol-2 pickles name Python 2 modules (``__builtin__``): read them as pickle does.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        path = f"{module}.{name}"
        if module in BLOCKED_MODULES:
            raise pickle.UnpicklingError(
                f"Trying to load unsupported GLOBAL {path} whose module {module} is blocked."
            )
        allowed = _allowed_globals()
        if path not in allowed:
            raise _unsupported_global(path)
        return allowed[path]


#: PyTorch's explanation of the weights_only default, shown with every refusal.
UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source."
)

DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)


def weights_only_message(error: str) -> str:
    """PyTorch's full message for a refused weights-only load, around ``error``.

    The bold marks (terminal escape codes) are PyTorch's too.
    """
    if "was not an allowed global by default" in error:
        return (
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, \033[1mdo those steps only if you trust the source of the checkpoint"
            f"\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            f"message.\n\tWeightsUnpickler error: {error}{DOCS_MESSAGE}"
        )
    message = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in error:
        message += (
            "Please file an issue with the following so that we can make `weights_only=True` "
            "compatible with your use case: WeightsUnpickler error: "
        )
    return f"{message}\n\n{error}{DOCS_MESSAGE}"
