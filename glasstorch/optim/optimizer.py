"""The :class:`Optimizer` base class: parameter groups, per-parameter state, checkpoints.

An optimizer is bookkeeping around one fused kernel. The bookkeeping lives here
and is shared by every optimizer:

* ``param_groups``: a list of dicts. Each holds a ``"params"`` list and the
  hyper-parameters for those parameters; a key the group leaves out is filled in
  from the optimizer's ``defaults``.
* ``state``: a dict from parameter to a dict of its running buffers
  (``momentum_buffer``, ``exp_avg``, ...), created on the first step that sees a
  gradient for that parameter.
* ``state_dict()`` / ``load_state_dict()``: the same two things, with each
  parameter replaced by an integer id (its position when the groups are read in
  order), which is PyTorch's checkpoint format.

A subclass writes only what is its own:

* ``__init__``: check the hyper-parameters with :func:`check_hyperparameters`
  and build ``defaults``;
* ``_update(p, group)``: called by :meth:`Optimizer.step` for every parameter
  that has a gradient. It gets or creates the parameter's state buffers
  (:func:`state_buffer`, :func:`advance_step`) and calls its kernel through
  :func:`fused_step`, which hands the kernel contiguous 1-D views.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import glasstorch
from glasstorch._kernels import Strided
from glasstorch.autograd import enable_grad, no_grad
from glasstorch.ops.creation import zeros_like
from glasstorch.profiler import record_function
from glasstorch.tensor import Tensor


class _RequiredParameter:
    """The marker for a hyper-parameter that has no default and must be given."""

    def __repr__(self) -> str:
        return "<required parameter>"


#: Put in ``defaults`` for a hyper-parameter every parameter group must set itself.
required = _RequiredParameter()


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors to optimize, or of dicts that each define a
            parameter group (a ``"params"`` entry plus hyper-parameters that
            override ``defaults`` for that group).
        defaults: the default value of each hyper-parameter.

    Attributes:
        defaults: as given.
        param_groups: list of dicts, one per parameter group.
        state: dict from parameter tensor to that parameter's state dict.

    Example::

        >>> opt = glasstorch.optim.SGD([w], lr=0.1)
        >>> loss = (w * w).sum()
        >>> loss.backward()
        >>> opt.step()
        >>> opt.zero_grad()
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict[str, Any]):
        if defaults.get("differentiable"):
            raise NotImplementedError(
                "glasstorch optimizers do not support differentiable=True: a step updates the "
                "parameters in place through a fused kernel, outside autograd. Leave "
                "differentiable=False."
            )
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {params.type()}"
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ------------------------------------------------------------ param groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group, e.g. to start training layers that were frozen.

        Args:
            param_group: a dict with a ``"params"`` entry (a tensor or a list of
                tensors) and, optionally, hyper-parameters for this group. Missing
                hyper-parameters are taken from ``defaults``.

        Raises:
            TypeError: ``param_group`` is not a dict, ``params`` is a set (whose
                order changes between runs) or contains something other than tensors.
            ValueError: a parameter is not a leaf, a required hyper-parameter is
                missing, or a parameter already belongs to another group.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        param_group["params"] = params

        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{_type_name(param)}"
                )
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)

        known = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in known for p in params):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # -------------------------------------------------------------- gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradient of every parameter.

        Args:
            set_to_none: drop the gradients (``p.grad = None``), the default.
                With ``False`` they are filled with zeros instead. An optimizer
                skips parameters whose gradient is ``None`` but steps those with a
                zero gradient (momentum and weight decay still act on them).
        """
        with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Update the parameters once, from their ``.grad``.

        Every parameter that has a gradient is updated in place by
        :meth:`_update`; parameters whose gradient is ``None`` are skipped.

        Args:
            closure: optional function that re-evaluates the model (zeroing the
                gradients, computing the loss, calling ``backward``) and returns
                the loss. It runs with gradients enabled, before the update.

        Returns:
            The closure's loss, or ``None`` without a closure.
        """
        loss = self._run_closure(closure)
        name = type(self).__name__  # the profiler's label, as PyTorch's: Optimizer.step#Adam.step
        with no_grad(), record_function(f"Optimizer.step#{name}.step"):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, group)
        return loss

    def _update(self, p: Tensor, group: dict[str, Any]) -> None:
        """Update parameter ``p`` of ``group`` in place from ``p.grad``: one kernel call.

        Each optimizer implements this (or overrides :meth:`step` itself).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _run_closure(closure: Callable[[], Any] | None):
        """Call ``closure`` with gradients enabled (``step`` itself runs under no_grad)."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state, with parameters replaced by integer ids.

        Returns:
            ``{"state": {id: {...}}, "param_groups": [{..., "params": [ids]}]}``.
            Ids number the parameters in the order the groups list them, from 0.
            As in PyTorch the state tensors are the optimizer's own (not copies):
            save the dict (or deep-copy it) to keep a snapshot.
        """
        ids: dict[int, int] = {}
        packed_groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            for p in group["params"]:
                ids.setdefault(id(p), len(ids))
            packed["params"] = [ids[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        packed_state = {
            (ids[id(param)] if isinstance(param, Tensor) else param): value
            for param, value in self.state.items()
        }
        return {"state": packed_state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`.

        The saved groups are matched with this optimizer's groups by position,
        and the saved ids with this optimizer's parameters in order. State
        tensors are copied (so the loaded optimizer never shares buffers with the
        dict) and cast to their parameter's dtype, except ``step``, which keeps
        its own dtype; a ``step`` saved as a plain number becomes a float32
        tensor, as PyTorch stores it.

        Raises:
            ValueError: the number of groups, or of parameters in a group, differs.
        """
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )

        id_to_param = {
            saved_id: param
            for saved, group in zip(saved_groups, groups)
            for saved_id, param in zip(saved["params"], group["params"])
        }
        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_to_param:
                param = id_to_param[key]
                state[param] = {
                    name: _copy_state_value(param, name, item) for name, item in value.items()
                }
            else:
                state[key] = value

        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
        self.state = state
        self.param_groups = saved_groups

    def __repr__(self) -> str:
        text = f"{type(self).__name__} ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


# ---------------------------------------------------------------------- helpers
def _type_name(obj: Any) -> str:
    """``torch.typename``-like name of an object, for error messages."""
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _copy_state_value(param: Tensor, key: str, value: Any) -> Any:
    """A copy of one saved state entry, ready to live in ``param``'s state."""
    if isinstance(value, Tensor):
        value = value.detach()
        if key != "step" and param.is_floating_point():
            value = value.to(param.dtype)
        if key != "step" and value.device != param.device:  # state lives with its parameter
            return value.to(param.device)
        return value.clone()
    if key == "step" and isinstance(value, (int, float)):
        return glasstorch.tensor(float(value), dtype=glasstorch.float32)
    if isinstance(value, dict):
        return {k: _copy_state_value(param, k, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy_state_value(param, "", v) for v in value)
    return value


def check_hyperparameters(**values: Any) -> None:
    """Refuse hyper-parameters outside their range, checked in the order given.

    The ranges (PyTorch's):

    * ``lr``: at least 0; a tensor ``lr`` must have one element;
    * ``betas``: both in ``[0, 1)``;
    * ``rho``: in ``[0, 1]``;
    * any other (``eps``, ``momentum``, ``weight_decay``, ...): at least 0.

    Raises:
        ValueError: ``"Invalid <what>: <value>"`` for the first one out of range.
    """
    for name, value in values.items():
        if name == "lr":
            if isinstance(value, Tensor) and value.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
            _require(0.0 <= value, "learning rate", value)
        elif name == "betas":
            for index, beta in enumerate(value[:2]):
                _require(0.0 <= beta < 1.0, f"beta parameter at index {index}", beta)
        elif name == "rho":
            _require(0.0 <= value <= 1.0, "rho value", value)
        else:
            label = "epsilon" if name == "eps" else name
            _require(0.0 <= value, f"{label} value", value)


def _require(in_range: Any, what: str, value: Any) -> None:
    """Raise ``ValueError("Invalid <what>: <value>")`` unless ``in_range``."""
    if not in_range:
        raise ValueError(f"Invalid {what}: {value}")


def as_number(value) -> float:
    """A hyper-parameter as a Python float (a one-element tensor learning rate is allowed)."""
    return float(value.item()) if isinstance(value, Tensor) else float(value)


def new_step_counter() -> Tensor:
    """The ``step`` state entry: a float32 scalar tensor at 0, as PyTorch keeps it."""
    return glasstorch.tensor(0.0, dtype=glasstorch.float32)


def advance_step(state: dict[str, Any]) -> int:
    """Add one to ``state["step"]`` and return it as an int.

    The counter is created at 0 (:func:`new_step_counter`) if the state has
    none yet; a loaded checkpoint may also hold it as a plain number.
    """
    if "step" not in state:
        state["step"] = new_step_counter()
    step = state["step"]
    if isinstance(step, Tensor):
        step.add_(1)
        return int(step.item())
    state["step"] = step + 1
    return int(state["step"])


def state_buffer(state: dict[str, Any], name: str, param: Tensor) -> Tensor:
    """``state[name]``, created as zeros shaped like ``param`` when missing (or ``None``).

    State follows its parameter: after ``model.to("cuda")`` moved the parameter,
    its existing state moves to the same device at the next step.
    """
    if state.get(name) is None:
        state[name] = zeros_like(param)
    elif state[name].device != param.device:
        state[name] = state[name].to(param.device)
    return state[name]


def fused_step(
    kernel: Callable[..., None], param: Tensor, buffers: Sequence[Tensor | None], *scalars: Any
) -> None:
    """Update ``param`` in place with one optimizer kernel call.

    The call is ``kernel(param, grad, *buffers, *scalars)``, where the parameter,
    its gradient and its state ``buffers`` are passed as contiguous 1-D views
    (see :func:`flat_buffers` and :func:`flat_grad`) and a ``None`` buffer (one
    the configuration does not use) as ``None``.
    """
    with flat_buffers(param, *buffers) as (flat_param, *flat_state):
        kernel(flat_param, flat_grad(param), *flat_state, *scalars)


def _flat(tensor: Tensor) -> Strided:
    """A contiguous tensor as a 1-D strided view: its elements are
    ``buffer[offset : offset + numel]``, one after another.

    A parameter and its state buffers go to the optimizer kernel on every
    step, so the view is made once and kept on the tensor (like its kernel
    view, see ``Tensor._strided``), along with whatever the tier builds
    from it.
    """
    flat = tensor._flat_kernel_view
    if flat is None or flat.buffer is not tensor._storage.buffer:  # (moved to shared memory)
        view = tensor._strided()
        flat = Strided(view.buffer, (tensor.numel(),), (1,), view.offset)
        tensor._flat_kernel_view = flat
    return flat


def flat_grad(param: Tensor) -> Strided:
    """``param.grad`` as a contiguous 1-D view for a kernel (copied only if it is strided)."""
    grad = param.grad  # read by the kernel only: nothing is recorded, no detach needed
    if grad.dtype is not param.dtype:
        grad = grad.detach().to(param.dtype)
    if not grad.is_contiguous():
        grad = grad.detach().contiguous()
    return _flat(grad)


@contextmanager
def flat_buffers(*tensors: Tensor | None) -> Iterator[list[Strided | None]]:
    """Contiguous 1-D views of tensors that a fused kernel updates in place.

    Optimizer kernels walk every buffer as ``buffer[offset + i]``, so they need
    contiguous memory. A contiguous tensor is passed as a flat view of its own
    storage (no copy). A non-contiguous one (a transposed or sliced parameter)
    is copied into a contiguous scratch tensor; the kernel updates the copy and,
    when the ``with`` block ends, the copy is written back into the tensor.
    ``None`` (a buffer the configuration does not use) stays ``None``.

    Every tensor's version counter is bumped, since its values changed in place.
    """
    views: list[Strided | None] = []
    write_back: list[tuple[Tensor, Tensor]] = []
    for tensor in tensors:
        if tensor is None:
            views.append(None)
            continue
        if tensor.is_contiguous():
            views.append(_flat(tensor))
        else:
            scratch = tensor.detach().contiguous()
            write_back.append((tensor.detach(), scratch))
            views.append(_flat(scratch))
    yield views
    for target, scratch in write_back:
        target.copy_(scratch)
    for tensor in tensors:
        if tensor is not None:
            tensor._bump_version()
