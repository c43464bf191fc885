"""``nn.utils.spectral_norm``: divide a weight by its largest singular value (hook-based API).

The parameter ``weight`` becomes ``weight_orig``; the buffers ``weight_u`` and
``weight_v`` hold estimates of the first left and right singular vectors of
the weight seen as a matrix, refined by power iteration before each forward
in training mode. The hook sets ``weight = weight_orig / sigma`` with
``sigma = u . (W v)``, so autograd reaches ``weight_orig`` through ordinary
tensor operations (``u`` and ``v`` are constants, as in PyTorch).
"""

from __future__ import annotations

from glasstorch.autograd.grad_mode import no_grad
from glasstorch.nn.modules.module import Module
from glasstorch.nn.parameter import Parameter
from glasstorch.nn.utils.weight_norm import remove_reparametrization
from glasstorch.ops.creation import randn
from glasstorch.tensor import Tensor

__all__ = ["remove_spectral_norm", "spectral_norm"]


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / x.norm().clamp_min(eps)


class SpectralNorm:
    """The forward pre-hook that computes ``name`` from ``name_orig``, ``name_u`` and ``name_v``."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """The weight as a matrix: ``dim`` moved first, the other dimensions flattened."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``weight_orig / sigma``, after ``n_power_iterations`` steps refining ``u`` and ``v``
        in place when ``do_power_iteration``."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(weight_mat.t().matmul(u), self.eps))
                    u.copy_(_normalize(weight_mat.matmul(v), self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.matmul(v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put the normalised weight back as an ordinary parameter."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float):
        """Move ``name`` to ``name_orig``, draw ``u`` and ``v``, and add the hook."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = _normalize(randn(h, dtype=weight.dtype, device=weight.device), eps)
            v = _normalize(randn(w, dtype=weight.dtype, device=weight.device), eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (Miyato et al., 2018).

    ``weight = weight_orig / sigma``, ``sigma`` the largest singular value of the
    weight reshaped to a matrix (``dim`` first). Each forward in training mode
    refines the estimates ``weight_u`` and ``weight_v`` (buffers) by
    ``n_power_iterations`` steps; in evaluation mode they are used as stored.
    This is PyTorch's older, hook-based API; the parametrizations package is
    not in glasstorch.

    Args:
        module: the module holding the parameter.
        name: the parameter's name. Default: ``"weight"``.
        n_power_iterations: power-iteration steps per forward. Default: 1.
        eps: keeps the normalisations finite. Default: 1e-12.
        dim: the output dimension; default 0, except 1 for transposed convolutions.

    Returns:
        ``module``, with the hook.

    Examples::

        >>> m = nn.utils.spectral_norm(nn.Linear(20, 40))
        >>> m.weight_u.size()
        torch.Size([40])
    """
    if dim is None:
        from glasstorch.nn.modules.conv import ConvTranspose1d, ConvTranspose2d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``name`` becomes an ordinary parameter (the normalised weight).

    Examples::

        >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(40, 10)))
    """
    return remove_reparametrization(module, name, SpectralNorm, "spectral_norm")
