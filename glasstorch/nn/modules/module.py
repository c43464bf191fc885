"""``nn.Module``: the base class of every layer and model.

A Module keeps three ordered registries, filled by plain attribute assignment:

* ``_parameters``: :class:`~glasstorch.nn.Parameter` objects (learned tensors);
* ``_buffers``: tensors that are state but not learned (BatchNorm's running mean);
  a buffer is *persistent* (saved in ``state_dict``) unless registered with
  ``persistent=False``;
* ``_modules``: child Modules, which makes models trees.

``self.fc = nn.Linear(2, 3)`` lands in ``_modules``, ``self.w = nn.Parameter(t)``
in ``_parameters``; reading ``self.fc`` back goes through :meth:`__getattr__`,
which looks in the three registries. Everything else (``parameters()``,
``state_dict()``, ``train()``, ``to()``) is a walk over that tree.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping

from glasstorch.autograd.function import HookDict, RemovableHandle
from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn.parameter import Parameter
from glasstorch.tensor import Tensor, check_device, parse_to


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What :meth:`Module.load_state_dict` returns: the keys it could not match."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )

    __str__ = __repr__


def _indent_after_first_line(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first (for nested module reprs)."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


def _tensor_type_name(value) -> str:
    """How PyTorch names a value's type in assignment errors: ``'torch.FloatTensor'``."""
    if isinstance(value, Tensor):
        return value.type()
    return type(value).__name__


def _check_name(kind: str, name, allow_dot_message: str | None = None) -> None:
    """Refuse names that cannot be attribute names in a state_dict key."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(allow_dot_message or f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


class Module:
    """Base class for all neural-network modules.

    Subclass it, create layers in ``__init__`` (after calling
    ``super().__init__()``) and write ``forward``. Calling the module runs
    ``forward`` together with any registered hooks.

    Example::

        class TwoLayer(nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden = nn.Linear(4, 8)
                self.out = nn.Linear(8, 2)

            def forward(self, x):
                return self.out(torch.relu(self.hidden(x)))

        model = TwoLayer()
        y = model(torch.randn(3, 4))       # shape (3, 2)
        [name for name, _ in model.named_parameters()]
        # ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    """

    training: bool

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments; "
                "Module.__init__ takes none"
            )
        # object.__setattr__ skips our own __setattr__, which needs these registries.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", HookDict())
        object.__setattr__(self, "_forward_hooks", HookDict())

    def forward(self, *args, **kwargs):
        """Compute the module's output. Every subclass defines it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------- calling
    def __call__(self, *args, **kwargs):
        """Run the forward pre-hooks, ``forward``, then the forward hooks."""
        for hook in list(self._forward_pre_hooks.values()):
            replaced = hook(self, args)
            if replaced is not None:
                args = replaced if isinstance(replaced, tuple) else (replaced,)
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            replaced = hook(self, args, output)
            if replaced is not None:
                output = replaced
        return output

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, args)`` before every ``forward``.

        The hook may return a replacement for the positional arguments (a tuple,
        or a single value that is wrapped in one). Returns a handle whose
        ``remove()`` takes the hook away.
        """
        return self._forward_pre_hooks.add(hook)

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every ``forward``.

        The hook may return a replacement for the output. Returns a handle
        whose ``remove()`` takes the hook away.
        """
        return self._forward_hooks.add(hook)

    # ------------------------------------------------------- registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder, like a missing bias) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_tensor_type_name(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                f"be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is module state but not learned (e.g. running statistics).

        Args:
            name: attribute name of the buffer.
            tensor: its value, or ``None`` (then it is skipped by ``state_dict``).
            persistent: whether ``state_dict`` includes it.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_tensor_type_name(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (same as ``self.name = module``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name("module", name, f'module name can\'t contain ".", got: {name}')
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as buffer '{name}' "
                    "(torch.nn.Buffer, torch.Tensor or None expected)"
                )
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Drop ``name`` from every registry and the instance dict (before re-registering)."""
        self.__dict__.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            self.__dict__[registry].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: look in the three registries.
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(registry)
            if entries is not None and name in entries:
                del entries[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = list(super().__dir__())
        for registry in ("_parameters", "_buffers", "_modules"):
            names.extend(self.__dict__.get(registry, {}))
        return sorted(set(names))

    # ---------------------------------------------------------- iteration
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first, with dotted names.

        Example::

            >>> [name for name, _ in nn.Sequential(nn.Linear(1, 1)).named_modules()]
            ['', '0']
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            child_prefix = f"{prefix}.{name}" if prefix else name
            yield from child.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant, depth first."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct children, with their names."""
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        """The direct children."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool):
        """Entries of one registry over the tree, each tensor once (shared weights)."""
        # -- solution: nn/module
        seen = set()
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = [(prefix, self)]
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{owner_prefix}.{name}" if owner_prefix else name), value
        # -- end solution

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name (``"0.weight"``), each shared one once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter of this module and (with ``recurse``) its descendants.

        This is what an optimizer is given: ``SGD(model.parameters(), lr=0.1)``.
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Every buffer with its dotted name."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer of this module and (with ``recurse``) its descendants."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The descendant named by a dotted path such as ``"encoder.0"`` (``""`` is self)."""
        module = self
        if target == "":
            return module
        for part in target.split("."):
            if part not in module._modules:
                raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter named by a dotted path such as ``"encoder.0.weight"``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return module._parameters[name]

    # -------------------------------------------------------------- modes
    def train(self, mode: bool = True) -> Module:
        """Put this module and its descendants in training mode (or evaluation mode)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: Dropout passes inputs through, BatchNorm uses running stats."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Switch gradient tracking of every parameter on or off (to freeze layers)."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None`` (default) or to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if param.grad.grad_fn is not None:
                    param.grad.detach_()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant (children first) and then on this module.

        Example::

            def init_weights(m):
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

            model.apply(init_weights)
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------- conversions
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace every parameter's and buffer's values by ``fn(tensor)``.

        Parameters keep their identity (an optimizer holding them still works):
        only their ``.data`` changes, and their ``.grad`` is converted too.
        """
        for child in self.children():
            child._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param.grad is not None:
                    param.grad = fn(param.grad).detach()
            for name, buffer in self._buffers.items():
                if buffer is not None:
                    self._buffers[name] = fn(buffer)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move parameters and buffers to a device and/or convert floating-point ones to a dtype.

        Accepts ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
        ``to(tensor)`` and the keywords ``device``, ``dtype`` and
        ``non_blocking``. Integer buffers (such as ``num_batches_tracked``)
        keep their dtype. Parameters keep their identity (only their ``.data``
        and ``.grad`` move), so an optimizer built before the move still holds
        them, and its state follows them at its next step. Returns ``self``.
        """
        dtype, target, non_blocking = parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )
        if dtype is None and target is None:
            return self

        def convert(t: Tensor) -> Tensor:
            if target is not None:
                t = t.to(target, non_blocking=non_blocking)
            return t.to(dtype) if dtype is not None and t.is_floating_point() else t

        return self._apply(convert)

    def float(self) -> Module:
        """Convert floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        """Convert floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def type(self, dst_type) -> Module:
        """Convert every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    def share_memory(self) -> Module:
        """Move every parameter and buffer (and gradient) to shared memory; returns ``self``.

        Processes that receive the module afterwards (through
        :mod:`glasstorch.multiprocessing`, or a ``fork``) then update the
        same parameters in place: Hogwild training.
        """
        return self._apply(lambda t: t.share_memory_())

    def cpu(self) -> Module:
        """Move every parameter and buffer to the CPU."""
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        """Move every parameter and buffer to the GPU (``cuda:0``).

        Raises:
            AssertionError: CUDA is off (see ``GLASSTORCH_CUDA``).
        """
        return self.to(check_device("cuda" if device is None else device))

    # -------------------------------------------------------- state dicts
    def _local_state(self) -> dict[str, Tensor]:
        """This module's own parameters and persistent buffers, without children."""
        state = {name: p for name, p in self._parameters.items() if p is not None}
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                state[name] = buffer
        return state

    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name, in registration order.

        The values share storage with the module's tensors and are detached
        from autograd (unless ``keep_vars``). Save it, then restore it with
        :meth:`load_state_dict`.
        """
        if destination is None:
            destination = OrderedDict()
        for name, value in self._local_state().items():
            destination[prefix + name] = value if keep_vars else value.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(
        self, state_dict: Mapping, strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into this module's parameters and buffers.

        Args:
            state_dict: a mapping from dotted names to tensors, as returned by
                :meth:`state_dict`.
            strict: raise when some key is missing or unexpected (default). With
                ``strict=False`` those keys are only reported.
            assign: make the checkpoint's tensors the new parameters instead of
                copying their values into the existing ones.

        Returns:
            ``(missing_keys, unexpected_keys)``, a named tuple.

        Raises:
            RuntimeError: listing every problem, in PyTorch's wording: missing and
                unexpected keys (when strict), shape mismatches and non-tensors.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        for prefix, module in self._prefixed_modules():
            module._load_local(state_dict, prefix, assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                names = ", ".join(f'"{key}"' for key in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {names}. ")
            if missing:
                names = ", ".join(f'"{key}"' for key in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {names}. ")
        if errors:
            details = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t{details}"
            )
        return _IncompatibleKeys(missing, unexpected)

    def _prefixed_modules(self, prefix: str = ""):
        """``(prefix, module)`` for this module and its descendants, depth first."""
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child._prefixed_modules(f"{prefix}{name}.")

    def _load_local(self, state_dict, prefix, assign, missing, unexpected, errors) -> None:
        """Load this module's own entries; note what is missing, unexpected or wrong."""
        local = self._local_state()
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            incoming = state_dict[key]
            if not isinstance(incoming, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(incoming)}"
                )
                continue
            if incoming.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {incoming.shape} from "
                    f"checkpoint, the shape in current model is {current.shape}."
                )
                continue
            if assign:
                self._assign_loaded(name, current, incoming)
            else:
                with no_grad():
                    current.copy_(incoming)
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, dot, _ = key[len(prefix) :].partition(".")
            if (dot and head not in self._modules) or (not dot and head not in local):
                unexpected.append(key)

    def _assign_loaded(self, name: str, current: Tensor, incoming: Tensor) -> None:
        """``load_state_dict(assign=True)``: adopt the checkpoint's tensor itself."""
        if name in self._parameters:
            setattr(self, name, Parameter(incoming.detach(), current.requires_grad))
        else:
            self._buffers[name] = incoming

    # ------------------------------------------------------------- repr
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside the parentheses of ``repr(module)``; layers override it."""
        return ""

    def _child_lines(self) -> list[str]:
        """One ``(name): repr`` entry per child, nested reprs indented by two spaces."""
        return [
            f"({name}): " + _indent_after_first_line(repr(child), 2)
            for name, child in self._modules.items()
        ]

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = self._child_lines()
        if not extra_lines and not child_lines:
            return f"{self._get_name()}()"
        if len(extra_lines) == 1 and not child_lines:
            return f"{self._get_name()}({extra_lines[0]})"
        body = "\n  ".join(extra_lines + child_lines)
        return f"{self._get_name()}(\n  {body}\n)"
