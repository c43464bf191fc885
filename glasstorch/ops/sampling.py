"""Sampling from distributions: multinomial, normal, bernoulli.

Every random number comes from the Philox generator through the contract's
random kernels (``rand``, ``randn``), so a seed gives the same samples on every
tier; the rest is arithmetic on existing operations.

* ``multinomial`` with replacement inverts the cumulative distribution: a
  uniform ``u`` picks the first category whose running total exceeds
  ``u * total``. Without replacement it runs an *exponential race*: each
  category draws ``E = -log(u) / p`` (exponential with rate ``p``) and the
  ``num_samples`` smallest ``E`` win, which draws categories one after the
  other in proportion to the remaining probabilities.
* ``normal`` is ``mean + std * randn``; ``bernoulli`` is ``rand < p``.

With the default Philox stream these use PyTorch's distributions and error
messages, not its random stream: the numbers differ from PyTorch's for the
same seed. With the ``"pytorch"`` stream (:func:`glasstorch.random.set_stream`)
CPU tensors take PyTorch's algorithms and numbers from
:mod:`glasstorch._pytorch_cpu_random`: ``bernoulli`` compares a float64
uniform with a number ``p`` (or a uniform of the probabilities' dtype with a
tensor of them), and ``multinomial`` divides the weights by exponential draws
(without replacement, or for one sample) or binary-searches the normalised
running sums (with replacement).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from glasstorch import _dtype
from glasstorch import _pytorch_cpu_random as pytorch_stream
from glasstorch.ops.creation import _generator, fill_random, from_numpy, randn
from glasstorch.ops.sorting import sort
from glasstorch.tensor import Tensor, empty_tensor


def _uniform(shape, generator, device) -> Tensor:
    """Uniform float64 numbers in ``[0, 1)`` on ``device`` from the generator (no autograd)."""
    out = empty_tensor(tuple(shape), _dtype.float64, device=device)
    return fill_random(out, "uniform", generator, 0.0, 1.0)


def _pytorch_stream(generator, device):
    """The generator, if it draws PyTorch's CPU stream for tensors on ``device``; else None."""
    gen = _generator(generator)
    return gen if gen.uses_pytorch_stream and device.type == "cpu" else None


def _numpy_of(tensor: Tensor) -> np.ndarray:
    """A contiguous NumPy copy of a CPU tensor's values (float16 read as float32)."""
    values = np.ascontiguousarray(tensor.detach().numpy())
    return values.astype(np.float32) if values.dtype == np.float16 else values


def _check_distribution(input: Tensor, num_samples: int, replacement: bool) -> None:
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, "
            f"got: {input.dtype.legacy_name.replace('Tensor', '')}"
        )
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    values = input.detach()
    if not bool(((values >= 0) & (values < math.inf)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not bool((values.sum(-1) > 0).all()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator=None
) -> Tensor:
    """Draw ``num_samples`` category indices from the weights in each row of ``input``.

    Args:
        input: non-negative weights, shape ``(C,)`` or ``(N, C)`` (need not sum to 1).
        num_samples: how many indices to draw per row.
        replacement: draw with replacement (otherwise each index at most once).
        generator: the :class:`~glasstorch.Generator` to draw from.

    Returns:
        int64 indices of shape ``(num_samples,)`` or ``(N, num_samples)``.

    Example:
        >>> torch.multinomial(torch.tensor([0.1, 0.9]), 4, replacement=True)
    """
    _check_distribution(input, num_samples, replacement)
    stream = _pytorch_stream(generator, input.device)
    if stream is not None:
        return _multinomial_as_pytorch(stream, input.detach(), num_samples, replacement)
    weights = input.detach().to(_dtype.float64)
    rows = weights.reshape(-1, weights.shape[-1])
    if replacement:
        samples = _with_replacement(rows, num_samples, generator)
    else:
        samples = _without_replacement(rows, num_samples, generator)
    return samples.reshape(*input.shape[:-1], num_samples)


def _multinomial_as_pytorch(stream, weights: Tensor, num_samples: int, replacement: bool):
    """PyTorch's CPU multinomial: the weights divided by exponential draws, largest first
    (without replacement or for one sample); else a binary search per uniform."""
    if not replacement or num_samples == 1:
        draws = pytorch_stream.exponential(stream, weights.numel(), _numpy_of(weights).dtype, 1.0)
        races = weights / from_numpy(draws.reshape(tuple(weights.shape))).to(weights.dtype)
        if num_samples == 1:
            return races.argmax(-1, keepdim=True)
        return races.topk(num_samples).indices
    rows = _numpy_of(weights).reshape(-1, weights.shape[-1])
    samples = pytorch_stream.multinomial_with_replacement(stream, rows, num_samples)
    return from_numpy(samples.reshape(*weights.shape[:-1], num_samples))


def _with_replacement(rows: Tensor, num_samples: int, generator) -> Tensor:
    """Invert each row's cumulative distribution at ``num_samples`` uniform points."""
    running = rows.cumsum(-1)  # (N, C)
    total = running[:, -1:]  # (N, 1): the row's sum, exactly where the running sum ends
    targets = _uniform((rows.shape[0], num_samples), generator, rows.device) * total  # (N, S)
    # The category is how many running totals lie at or below the target.
    passed = (running.unsqueeze(1) <= targets.unsqueeze(2)).sum(-1)  # (N, S)
    return passed.clamp(max=rows.shape[1] - 1)


def _without_replacement(rows: Tensor, num_samples: int, generator) -> Tensor:
    """The exponential race: the ``num_samples`` smallest ``-log(u) / p`` win, in order."""
    arrivals = -_uniform(rows.shape, generator, rows.device).log() / rows  # p = 0 arrives at inf
    return sort(arrivals, -1, stable=True).indices[:, :num_samples]


def _result_dtype(*values):
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not tensors:
        return _dtype.get_default_dtype()
    return _dtype.result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype


def _check_std(std) -> None:
    smallest = float(std.detach().min()) if isinstance(std, Tensor) and std.numel() else std
    if not isinstance(std, Tensor) and std < 0 or isinstance(std, Tensor) and smallest < 0:
        shown = int(smallest) if float(smallest).is_integer() else smallest
        raise RuntimeError(f"normal expects std >= 0.0, but found std {shown}")


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False):
    """Normal random numbers with the given ``mean`` and ``std``.

    The overloads of PyTorch:

    * ``normal(mean_tensor, std_tensor)``: one number per element of the
      broadcast shape;
    * ``normal(mean_tensor, std=1.0)`` and ``normal(mean=0.0, std_tensor)``;
    * ``normal(mean, std, size)`` with two numbers: a tensor of ``size``
      (default dtype unless ``dtype`` is given).

    Gradients flow to tensor ``mean`` and ``std`` (``d out / d std`` is the
    standard normal draw).
    """
    _check_std(std)
    if size is not None or not (isinstance(mean, Tensor) or isinstance(std, Tensor)):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: give size")
        shape = tuple(size) if not isinstance(size, builtins.int) else (size,)
        out = randn(shape, generator=generator, dtype=dtype) * std + mean
        return out.requires_grad_(requires_grad) if requires_grad else out
    from glasstorch.ops.core import broadcast

    shape = broadcast(mean, std)
    device = (mean if isinstance(mean, Tensor) else std).device  # the noise joins them there
    noise = randn(shape, generator=generator, dtype=_result_dtype(mean, std), device=device)
    return mean + noise * std


def _check_probabilities(p) -> None:
    values = p.detach() if isinstance(p, Tensor) else p
    ok = bool(((values >= 0) & (values <= 1)).all()) if isinstance(p, Tensor) else 0 <= p <= 1
    if not ok:
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """0 or 1 for each element: 1 with probability ``input`` (or ``p`` when given).

    The result has ``input``'s shape and dtype and no gradient.
    """
    probabilities = input.detach() if p is None else p
    _check_probabilities(probabilities)
    stream = _pytorch_stream(generator, input.device)
    if stream is not None:
        return _bernoulli_as_pytorch(stream, input, probabilities).to(input.dtype)
    draws = _uniform(input.shape, generator, input.device)
    return (draws < probabilities).to(input.dtype)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill ``self`` in place with 0 or 1, 1 with probability ``p`` (a number or a tensor)."""
    from glasstorch.ops import inplace

    _check_probabilities(p)
    stream = _pytorch_stream(generator, self.device)
    if stream is not None:
        values = _bernoulli_as_pytorch(stream, self, p).to(self.dtype)
        return inplace.assign_inplace(self, lambda: values)
    if isinstance(p, Tensor) or not self.is_contiguous():
        draws = _uniform(self.shape, generator, self.device)
        values = (draws < p).to(self.dtype)
        return inplace.assign_inplace(self, lambda: values)
    return inplace.write_values(self, lambda: _bernoulli_into(self.view(-1), p, generator))


def _bernoulli_as_pytorch(stream, like: Tensor, p) -> Tensor:
    """A bool tensor shaped like ``like``: PyTorch's CPU ``uniform < p``, the uniform
    float64 for a number ``p``, of ``p``'s dtype for a tensor of probabilities."""
    if isinstance(p, Tensor):
        probabilities = np.broadcast_to(_numpy_of(p.detach()), tuple(like.shape))
    else:
        probabilities = np.full(tuple(like.shape), float(p))
    return from_numpy(np.ascontiguousarray(pytorch_stream.bernoulli(stream, probabilities)))


#: Elements drawn at a time by bernoulli_: a multiple of 4 (the uniform kernel's
#: numbers per Philox block), so each piece starts on a block of its own.
_PIECE = 2**14


def _bernoulli_into(flat: Tensor, p: float, generator) -> None:
    """Write ``uniform < p`` (0 or 1) into the contiguous 1-D ``flat``, a piece at a time.

    The uniform numbers are float64, as :func:`bernoulli`'s, drawn from the
    blocks the whole tensor would use: the same values as drawing everything
    at once, with a temporary of at most ``_PIECE`` numbers.
    """
    from glasstorch._tier import kernels
    from glasstorch.ops.creation import _generator
    from glasstorch.ops.pointwise import compute_binary

    seed, offset = _generator(generator).take_blocks(-(-flat.numel() // 4))
    draws = empty_tensor((min(_PIECE, flat.numel()),), _dtype.float64, device=flat.device)
    for start in range(0, flat.numel(), _PIECE):
        piece = flat[start : start + _PIECE]
        these = draws[: piece.numel()]
        kernels.random_uniform(these._strided(), seed, offset + start // 4, 0.0, 1.0)
        compute_binary("lt", these, p, out=piece)
