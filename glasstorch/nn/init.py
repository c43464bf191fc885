"""``nn.init``: fill parameters with starting values, in place.

Every function runs under ``no_grad`` (filling a parameter is not part of any
graph) and returns the tensor it filled. Random ones draw from glasstorch's
Philox generator, so ``torch.manual_seed`` makes them repeatable; the numbers
differ from PyTorch's CPU generator, but the distributions are the same.

The scaled initialisers pick their spread from the tensor's *fans*: for a
weight of shape ``(out, in, *kernel)``, ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)``.
"""

from __future__ import annotations

import math
import warnings

from glasstorch.autograd.grad_mode import no_grad
from glasstorch.ops.creation import eye, randn
from glasstorch.ops.pointwise import where
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of weights feeding into ``nonlinearity``.

    =====================  ==========================================
    nonlinearity           gain
    =====================  ==========================================
    linear, conv, sigmoid  ``1``
    tanh                   ``5 / 3``
    relu                   ``sqrt(2)``
    leaky_relu             ``sqrt(2 / (1 + negative_slope ** 2))``
    selu                   ``3 / 4``
    =====================  ==========================================

    Args:
        nonlinearity: the function's name, as in ``torch.nn.functional``.
        param: the negative slope for ``leaky_relu`` (default 0.01).
    """
    unit_gain = {
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    }
    if nonlinearity in unit_gain:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``."""
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = 1
    for size in tensor.shape[2:]:
        receptive_field *= size
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# ---------------------------------------------------------------- constants


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros."""
    with no_grad():
        return tensor.zero_()


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones."""
    with no_grad():
        return tensor.fill_(1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D ``tensor`` with the identity matrix (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        identity = eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device)
        return tensor.copy_(identity)


# ------------------------------------------------------------------ random


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with numbers drawn uniformly from ``[a, b)``."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with numbers drawn from ``N(mean, std**2)``."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """Fill ``tensor`` from ``N(mean, std**2)`` restricted to ``[a, b]``.

    Drawn by rejection: values outside ``[a, b]`` are drawn again until none
    are left. (PyTorch inverts the normal CDF instead; the distribution is the
    same.) Works best when ``[a, b]`` holds a fair share of the probability,
    as with the usual ``mean=0, std=1, a=-2, b=2``.
    """
    if not a < b:
        raise ValueError(f"trunc_normal_ needs a < b, got a={a} and b={b}")
    with no_grad():
        values = (
            randn(tensor.shape, dtype=tensor.dtype, device=tensor.device, generator=generator) * std
            + mean
        )
        outside = (values < a) | (values > b)
        while bool(outside.any()):
            fresh = (
                randn(tensor.shape, dtype=tensor.dtype, device=tensor.device, generator=generator)
                * std
                + mean
            )
            values = where(outside, fresh, values)
            outside = (values < a) | (values > b)
        return tensor.copy_(values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: uniform on ``[-bound, bound]``.

    ``bound = gain * sqrt(6 / (fan_in + fan_out))``, which gives the variance
    ``gain**2 * 2 / (fan_in + fan_out)``.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot initialisation: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _skip_empty(tensor: Tensor) -> bool:
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He initialisation: uniform on ``[-bound, bound]``, ``bound = gain * sqrt(3 / fan)``.

    Args:
        a: the negative slope of the rectifier that follows (for ``leaky_relu``).
        mode: ``'fan_in'`` keeps the forward pass's variance, ``'fan_out'`` the backward's.
        nonlinearity: see :func:`calculate_gain`.

    ``nn.Linear`` uses ``kaiming_uniform_(weight, a=math.sqrt(5))``, which is
    uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``.
    """
    if _skip_empty(tensor):
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He initialisation: ``N(0, std**2)`` with ``std = gain / sqrt(fan)``."""
    if _skip_empty(tensor):
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with a (semi-)orthogonal matrix times ``gain``.

    The tensor is viewed as ``(rows, cols)`` with ``cols`` the product of the
    trailing dimensions. A Gaussian matrix is orthonormalised by the modified
    Gram-Schmidt process (the Q of its QR decomposition, with R's diagonal
    positive), along the shorter side: so rows are orthonormal when
    ``rows <= cols``, columns otherwise.
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        gaussian = randn(rows, cols, dtype=tensor.dtype, device=tensor.device, generator=generator)
        tall = gaussian if rows >= cols else gaussian.t()
        q = _gram_schmidt(tall)
        if rows < cols:
            q = q.t()
        return tensor.copy_((q * gain).reshape(tensor.shape))


def _gram_schmidt(matrix: Tensor) -> Tensor:
    """Orthonormal columns spanning those of a tall ``(n, m)`` matrix (``n >= m``).

    Modified Gram-Schmidt: normalise column ``j``, then remove its direction
    from every later column, which is more stable than projecting each column
    on all earlier ones at once.
    """
    columns = [matrix[:, j] for j in range(matrix.shape[1])]
    for j, column in enumerate(columns):
        column = column / (column * column).sum().sqrt()
        columns[j] = column
        for k in range(j + 1, len(columns)):
            columns[k] = columns[k] - (columns[k] * column).sum() * column
    return stack(columns, dim=1)
