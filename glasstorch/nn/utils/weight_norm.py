"""``nn.utils.weight_norm``: split a weight into a magnitude and a direction (hook-based API).

``w = g * v / ||v||``: the parameter ``weight`` is replaced by ``weight_g``
(the norms, one per slice along ``dim``) and ``weight_v`` (the direction), and
a forward pre-hook recomputes ``weight`` from them before every call, so
autograd reaches ``g`` and ``v`` through ordinary tensor operations.
"""

from __future__ import annotations

import warnings

from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.tensor import Tensor

__all__ = ["remove_weight_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of each slice of ``v`` along ``dim``, kept broadcastable to ``v``;
    the norm of the whole tensor (a scalar) when ``dim`` is -1."""
    if dim == -1:
        return v.norm()
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:
        return v.abs()
    return (v * v).sum(others, keepdim=True).sqrt()


class WeightNorm:
    """The forward pre-hook that computes ``name`` from ``name_g`` and ``name_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        """``v * (g / ||v||)`` from the module's current ``name_g`` and ``name_v``."""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Replace parameter ``name`` of ``module`` by ``name_g`` and ``name_v`` and add the hook."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put the computed weight back as an ordinary parameter."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrise ``module.<name>`` as ``g * v / ||v||`` (Salimans and Kingma, 2016).

    The parameter ``name`` is replaced by ``name_g`` (the norm of each slice
    along ``dim``; of the whole tensor if ``dim`` is None) and ``name_v`` (the
    weight itself); a forward pre-hook recomputes ``name`` before every
    ``forward``. This is PyTorch's older, hook-based API (it warns that it is
    deprecated, as PyTorch's does); the parametrizations package is not in
    glasstorch.

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``"weight"``.
        dim: the dimension whose slices keep their own norm. Default: 0
            (one norm per output unit or channel).

    Returns:
        ``module``, with the hook.

    Examples::

        >>> m = nn.utils.weight_norm(nn.Linear(20, 40), name="weight")
        >>> m.weight_g.size(), m.weight_v.size()
        (torch.Size([40, 1]), torch.Size([40, 20]))
    """
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of "
        "`torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``name`` becomes an ordinary parameter again.

    Examples::

        >>> m = nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(20, 40)))
    """
    return remove_reparametrization(module, name, WeightNorm, "weight_norm")


def remove_reparametrization(module: Module, name: str, kind: type, function: str) -> Module:
    """Take off the ``kind`` forward pre-hook that reparametrizes ``module.<name>``
    (a :class:`WeightNorm` or a ``SpectralNorm``), leaving ``name`` an ordinary
    parameter; PyTorch's ValueError, naming ``function``, when there is none."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{function} of '{name}' not found in {module}")
