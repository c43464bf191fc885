"""The namespaces the coverage table compares, and how a name's shape is read.

Both sides of the comparison go through this module: ``snapshot`` reads PyTorch
with it (once, where PyTorch is installed) and ``compare`` reads glasstorch with
it (on every docs build). A name is described by its *kind* (module, class,
function, attribute) and, for a callable, its *parameters*: a line in Python's
own syntax without defaults, such as ``"input, other, *, alpha, out"``, or
``None`` where they cannot be read.

PyTorch's functions written in C carry no ``inspect.signature``; their
docstrings start with one (``add(input, other, *, alpha=1, out=None) ->
Tensor``), and a function with overloads lists one per form (``.. function::
max(input, dim, keepdim=False, *, out=None)``). :func:`parameters` reads those
lines and merges the forms, so that a parameter of any form counts.
"""

from __future__ import annotations

import importlib
import inspect
import re
import types

#: The namespaces, as PyTorch names them. ``torch.Tensor`` is a class (its
#: methods and attributes); the others are modules.
NAMESPACES = (
    "torch",
    "torch.Tensor",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.utils.data",
    "torch.autograd",
    "torch.autograd.function",
    "torch.linalg",
    "torch.distributions",
    "torch.cuda",
)


def resolve(namespace: str, root: str = "torch") -> object | None:
    """The object behind ``namespace`` in the library ``root`` (``'torch'`` or ``'glasstorch'``).

    ``resolve("torch.nn.functional", "glasstorch")`` is ``glasstorch.nn.functional``;
    ``None`` when the library has no such namespace.
    """
    parts = namespace.split(".")[1:]
    try:
        obj: object = importlib.import_module(root)
        for depth, part in enumerate(parts):
            if not hasattr(obj, part):  # a submodule not imported by its parent yet
                importlib.import_module(".".join([root, *parts[: depth + 1]]))
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def kind_of(obj: object) -> str:
    """``'module'``, ``'class'``, ``'function'`` (anything else callable) or ``'attribute'``."""
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "attribute"


def public_names(namespace: str, obj: object) -> list[str]:
    """The public names of PyTorch's ``namespace`` (``obj``), as a user reaches them.

    Leaves out private names, constants in capitals, and what a module only
    imported for itself: the standard library, ``typing``, notes shared by
    docstrings, and PyTorch names that live elsewhere (``torch.Tensor`` as seen
    from ``torch.nn.functional``).
    """
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = (
                inspect.getattr_static(obj, name) if inspect.isclass(obj) else getattr(obj, name)
            )
        except AttributeError:
            continue
        if namespace == "torch.Tensor" or _belongs_to(namespace, name, value):
            names.append(name)
    return sorted(names)


def _belongs_to(namespace: str, name: str, value: object) -> bool:
    """Whether ``value``, found as ``namespace.name``, is a name of that namespace."""
    kind = kind_of(value)
    if kind == "module":
        return value.__name__.startswith(namespace + ".")
    if kind == "attribute":  # dtypes, layouts, devices (and torch.pi and its kin)
        plain_number = namespace == "torch" and isinstance(value, float)
        return not name.isupper() and (type(value).__module__.startswith("torch") or plain_number)
    home = getattr(value, "__module__", None) or "torch._C"
    if namespace == "torch" or home.startswith((namespace, "torch._C")):
        return home.startswith("torch")
    # torch.nn.functional's C functions say they live in "torch"
    return home == "torch" and kind == "function"


def format_parameters(params: list[tuple[str, str]]) -> str:
    """Parameters as a line of Python syntax: ``(name, kind)`` pairs, kind from ``inspect``.

    The pairs are put in the order Python requires (positional, ``*args``,
    keyword-only, ``**kwargs``) first.
    """
    order = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY")
    params = sorted(params, key=lambda p: order.index(p[1]) if p[1] in order else len(order))
    out, star_written, slash_needed = [], False, False
    for name, kind in params:
        if kind != "POSITIONAL_ONLY" and slash_needed:
            out.append("/")
            slash_needed = False
        if kind == "POSITIONAL_ONLY":
            slash_needed = True
            out.append(name)
        elif kind == "VAR_POSITIONAL":
            out.append("*" + name)
            star_written = True
        elif kind == "VAR_KEYWORD":
            out.append("**" + name)
        elif kind == "KEYWORD_ONLY":
            if not star_written:
                out.append("*")
                star_written = True
            out.append(name)
        else:
            out.append(name)
    if slash_needed:
        out.append("/")
    return ", ".join(out)


def parse(line: str) -> list[tuple[str, str]]:
    """The ``(name, kind)`` pairs of a parameter line written by :func:`format_parameters`."""
    params, kind = [], "POSITIONAL_OR_KEYWORD"
    for token in filter(None, (t.strip() for t in line.split(","))):
        if token == "/":
            params = [(name, "POSITIONAL_ONLY") for name, _ in params]
        elif token == "*":
            kind = "KEYWORD_ONLY"
        elif token.startswith("**"):
            params.append((token[2:], "VAR_KEYWORD"))
        elif token.startswith("*"):
            params.append((token[1:], "VAR_POSITIONAL"))
            kind = "KEYWORD_ONLY"
        else:
            params.append((token, kind))
    return params


def parameters(obj: object, name: str) -> tuple[str | None, str | None]:
    """``(parameter line, where it was read)`` for a callable; ``(None, None)`` if unknown.

    The source is ``'signature'`` (``inspect.signature``) or ``'docstring'``
    (the signature lines of a C function's docstring). ``self`` is left out.
    """
    if kind_of(obj) not in ("class", "function"):
        return None, None
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        pass
    else:
        params = [(p.name, p.kind.name) for p in signature.parameters.values() if p.name != "self"]
        return format_parameters(params), "signature"
    doc = getattr(obj, "__doc__", None)
    found = _docstring_parameters(doc if isinstance(doc, str) else "", name)
    if found is None:
        return None, None
    return format_parameters(found), "docstring"


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas that are not inside brackets or quotes."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _up_to_closing_bracket(text: str) -> str | None:
    """``text`` up to the ``)`` that closes a bracket opened just before it; ``None`` if none."""
    depth = 1
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[:index]
    return None


def _docstring_parameters(doc: str, name: str) -> list[tuple[str, str]] | None:
    """The parameters of every ``name(...)`` signature line in ``doc``, merged in order."""
    pattern = re.compile(rf"^\s*(?:\.\. function:: )?(?:[\w.]+\.)?{re.escape(name)}\(")
    merged: dict[str, str] = {}
    matched = False
    for line in doc.replace("\\*", "*").splitlines():
        match = pattern.match(line)
        if not match or "return_types" in line:  # the printed result of an example
            continue
        inside = _up_to_closing_bracket(line[match.end() :])
        if inside is None:
            continue
        matched = True
        kind = "POSITIONAL_OR_KEYWORD"
        for token in _split_top_level(inside):
            token = token.split("=")[0].split(":")[0].strip()
            if token == "*":
                kind = "KEYWORD_ONLY"
            elif token == "/" or token == "self":
                continue
            elif token.startswith("**"):
                merged.setdefault(token[2:], "VAR_KEYWORD")
            elif token.startswith("*"):
                merged.setdefault(token[1:], "VAR_POSITIONAL")
                kind = "KEYWORD_ONLY"
            elif token.isidentifier():
                merged.setdefault(token, kind)
    if not matched:
        return None
    return list(merged.items())
