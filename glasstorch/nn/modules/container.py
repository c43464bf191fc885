"""Containers: modules that hold other modules.

``Sequential`` chains its children; ``ModuleList`` and ``ModuleDict`` only hold
them (a plain Python list or dict would hide them from ``parameters()``).
Children are registered under their position (``"0"``, ``"1"``, ...) or key,
which is where names like ``"0.weight"`` in a ``state_dict`` come from.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from glasstorch.nn.modules.module import Module, _indent_after_first_line


def _position(index, length: int) -> int:
    """A list position from a (possibly negative) index, or IndexError."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class Sequential(Module):
    """Runs its modules one after another, feeding each output to the next.

    Args:
        *modules: the modules, in order; or a single ``OrderedDict`` mapping
            names to modules.

    Shape:
        - Input: whatever the first module accepts.
        - Output: whatever the last module returns.

    Example::

        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> model(torch.randn(3, 4)).shape
        torch.Size([3, 2])
        >>> model[0]          # indexing gives a layer
        Linear(in_features=4, out_features=8, bias=True)
        >>> model[:2]         # slicing gives a Sequential
    """

    def __init__(self, *modules) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        keys = list(self._modules)
        return self._modules[keys[_position(index, len(keys))]]

    def __setitem__(self, index, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_position(index, len(keys))], module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        doomed = keys[index] if isinstance(index, slice) else [keys[_position(index, len(keys))]]
        for key in doomed:
            del self._modules[key]
        self._renumber()

    def _renumber(self) -> None:
        """Name the children ``"0"``, ``"1"``, ... again after a deletion or insertion."""
        modules = list(self._modules.values())
        self._modules.clear()
        for index, module in enumerate(modules):
            self._modules[str(index)] = module

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index``; returns ``self``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        modules = list(self._modules.values())
        length = len(modules)
        if not -length <= index <= length:
            raise IndexError(f"Index out of range: {index}")
        modules.insert(index if index >= 0 else index + length, module)
        self._modules.clear()
        for position, child in enumerate(modules):
            self.add_module(str(position), child)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append every module of ``modules``; returns ``self``."""
        for module in modules:
            self.append(module)
        return self

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self[index]
        del self[index]
        return module


class ModuleList(Module):
    """A list of modules whose parameters are registered with the parent.

    Args:
        modules: an iterable of modules to start with.

    Example::

        >>> layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        >>> for layer in layers:
        ...     x = layer(x)
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_position(index, len(self)))]

    def __setitem__(self, index, module: Module) -> None:
        setattr(self, str(_position(index, len(self))), module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        doomed = keys[index] if isinstance(index, slice) else [keys[_position(index, len(keys))]]
        for key in doomed:
            del self._modules[key]
        modules = list(self._modules.values())
        self._modules.clear()
        for position, module in enumerate(modules):
            self._modules[str(position)] = module

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append every module of ``modules``; returns ``self``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for position, child in enumerate(modules):
            self.add_module(str(position), child)

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self[index]
        del self[index]
        return module

    def _child_lines(self) -> list[str]:
        """Runs of identical children print once: ``(0-2): 3 x Linear(...)``."""
        entries = [(name, repr(child)) for name, child in self._modules.items()]
        lines, start = [], 0
        while start < len(entries):
            end = start
            while end + 1 < len(entries) and entries[end + 1][1] == entries[start][1]:
                end += 1
            text = _indent_after_first_line(entries[start][1], 2)
            if end == start:
                lines.append(f"({entries[start][0]}): {text}")
            else:
                count = end - start + 1
                lines.append(f"({entries[start][0]}-{entries[end][0]}): {count} x {text}")
            start = end + 1
        return lines


class ModuleDict(Module):
    """A dictionary of modules whose parameters are registered with the parent.

    Keys keep their insertion order.

    Args:
        modules: a mapping (or iterable of pairs) from names to modules.

    Example::

        >>> heads = nn.ModuleDict({"cls": nn.Linear(8, 10), "box": nn.Linear(8, 4)})
        >>> heads["cls"](features)
    """

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        """The names, in insertion order."""
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self):
        """``(name, module)`` pairs, in insertion order."""
        return self._modules.items()

    def update(self, modules) -> None:
        """Add (or replace) modules from a mapping or an iterable of pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()


def _as_parameter(value):
    """A tensor that is not yet a :class:`Parameter` becomes one; anything else is kept."""
    from glasstorch.nn.parameter import Parameter
    from glasstorch.tensor import Tensor

    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value) -> str:
    """One repr line for a held value: a parameter's dtype and size, else its type."""
    from glasstorch.tensor import Tensor

    if isinstance(value, Tensor):
        size = "x".join(str(s) for s in value.shape)
        device = "" if value.device.type == "cpu" else f" ({value.device})"
        return f"Parameter containing: [{value.dtype} of size {size}{device}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters registered with the parent (as ``"0"``, ``"1"``, ...).

    A tensor put in the list becomes a :class:`Parameter`; a plain Python list
    would hide the parameters from ``parameters()`` and the optimizer.

    Args:
        values: an iterable of tensors (or parameters).

    Example::

        >>> weights = nn.ParameterList([nn.Parameter(torch.randn(4, 4)) for _ in range(3)])
        >>> len(list(weights.parameters()))
        3
    """

    def __init__(self, values: Iterable | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(len(self))[index]])
        return getattr(self, str(_position(index, len(self))))

    def __setitem__(self, index, value) -> None:
        setattr(self, str(_position(index, len(self))), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable) -> ParameterList:
        return self.extend(values)

    def append(self, value) -> ParameterList:
        """Add ``value`` (made a Parameter if it is a tensor) at the end."""
        index = self._size
        self._size += 1
        setattr(self, str(index), _as_parameter(value))
        return self

    def extend(self, values: Iterable) -> ParameterList:
        """Append each of ``values``."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): {_describe(value)}" for i, value in enumerate(self))


class ParameterDict(Module):
    """A dictionary of parameters registered with the parent under their keys.

    A tensor put in the dictionary becomes a :class:`Parameter`. Keys keep
    their insertion order.

    Args:
        parameters: a mapping (or iterable of pairs) from names to tensors.

    Example::

        >>> scales = nn.ParameterDict({"a": nn.Parameter(torch.ones(3)), "b": torch.zeros(2)})
        >>> sorted(name for name, _ in scales.named_parameters())
        ['a', 'b']
    """

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self):
        """The names, in insertion order."""
        return self._keys.keys()

    def values(self):
        """The parameters, in insertion order."""
        return [self[key] for key in self._keys]

    def items(self):
        """``(name, parameter)`` pairs, in insertion order."""
        return [(key, self[key]) for key in self._keys]

    def get(self, key: str, default=None):
        """The parameter under ``key``, or ``default``."""
        return self[key] if key in self else default

    def update(self, parameters) -> None:
        """Add (or replace) entries from a mapping or an iterable of pairs."""
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in pairs:
            self[key] = value

    def pop(self, key: str):
        """Remove and return the parameter under ``key``."""
        value = self[key]
        del self[key]
        return value

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def extra_repr(self) -> str:
        return "\n".join(f"({key}): {_describe(value)}" for key, value in self.items())
