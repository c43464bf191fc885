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
import warnings

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


# ------------------------------------------- filling a tensor from a distribution
#
# random_, exponential_, cauchy_, log_normal_ and geometric_ fill ``self`` in
# place. With the Philox stream each draws from an existing random kernel
# (integers for random_, float64 uniforms or normals for the others) and
# transforms the draws with ordinary operations in float64, so every tier and
# device gives the same numbers; with the "pytorch" stream a CPU tensor gets
# PyTorch's CPU numbers (glasstorch._pytorch_cpu_random). The argument checks
# and their words are PyTorch's, and come before the empty-tensor shortcut.

#: random_'s three forms, as PyTorch's error lists them.
_RANDOM_FORMS = (
    " * (*, torch.Generator generator = None)\n"
    " * (int from, int to, *, torch.Generator generator = None)\n"
    " * (int to, *, torch.Generator generator = None)\n"
)


def _random_bounds(args: tuple, keywords: dict) -> tuple[int, int | None, bool]:
    """``(from, to, to_given)`` of ``random_()``, ``random_(to)`` and
    ``random_(from, to)`` (``to`` may be None there: up to the dtype's largest)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes 2 positional arguments but {len(args)} were given")
    shown = ", ".join(type(a).__name__ for a in args)
    named = ", ".join(f"{k}={type(v).__name__}" for k, v in keywords.items())
    shown = f"{shown}, {named}" if args and keywords else shown or f"{named}, "
    invalid = TypeError(
        f"random_() received an invalid combination of arguments - got ({shown}), "
        f"but expected one of:\n{_RANDOM_FORMS}"
    )
    two_bounds = len(args) == 2 or "from" in keywords or (len(args) == 1 and "to" in keywords)
    names = ("from", "to") if two_bounds else ("to",)
    values = dict(zip(names, args))
    if set(keywords) - set(names) or set(keywords) & set(values):
        raise invalid
    values.update(keywords)
    if (args or keywords) and set(values) != set(names):
        raise invalid
    for name, value in values.items():
        if value is None and name == "to" and two_bounds:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer, Tensor)):
            raise invalid
        if not _dtype.INT64_MIN <= int(value) <= _dtype.INT64_MAX:
            raise ValueError("Overflow when unpacking long long")
    to = values.get("to")
    return int(values.get("from", 0)), None if to is None else int(to), "to" in values


def _round_to_digits(value: int, digits: int) -> int:
    """``value`` as a float of ``digits`` significant bits holds it (to nearest,
    ties to even), as C's conversion from int64 to float or double rounds."""
    extra = abs(value).bit_length() - digits
    if extra <= 0:
        return value
    kept, rest = divmod(abs(value), 1 << extra)
    half = 1 << (extra - 1)
    if rest > half or (rest == half and kept % 2):
        kept += 1
    return (kept << extra) * (1 if value >= 0 else -1)


def _float_from(low: int, digits: int) -> int:
    """PyTorch's ``update_from``: a lower bound that the float dtype rounds
    below itself moves up to the next number the dtype holds."""
    rounded = _round_to_digits(low + 1, digits)
    if rounded < low:
        low = rounded + (1 << (abs(low + 1).bit_length() - 1 - digits + 1))
    return low


def _float_to(high: int, digits: int) -> int:
    """PyTorch's ``update_to``: an upper bound the float dtype rounds at or above
    itself moves down to the number below."""
    rounded = _round_to_digits(high - 1, digits)
    if rounded >= high:
        high = rounded - (1 << (abs(high - 1).bit_length() - 1 - digits + 1))
    return high


#: Significant bits of the floating dtypes: the integers they hold exactly.
_DIGITS = {"float32": 24, "float64": 53}


def _check_random_range(low: int, high_inclusive: int, dtype) -> None:
    """The bounds fit the dtype (integers), or a warning where a float dtype
    cannot hold every integer of the range; PyTorch's words."""
    if dtype.is_floating_point:
        digits = _DIGITS[dtype.name]
        for value, name in ((low, "from"), (high_inclusive, "to - 1")):
            if not -(2**digits) <= value <= 2**digits:
                warnings.warn(
                    f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {dtype.c_name} can support discrete uniform distribution only "
                    "within this range. This warning will become an error in version 1.7 "
                    "release, please fix the code in advance",
                    UserWarning,
                    stacklevel=4,
                )
        return
    smallest, largest = (0, 1) if dtype is _dtype.bool_ else _dtype.int_range(dtype)
    for value, name in ((low, "from"), (high_inclusive, "to - 1")):
        if not smallest <= value <= largest:
            raise RuntimeError(f"{name} is out of bounds for {dtype.c_name}")


def _random_range(dtype, low: int, high: int | None, high_given: bool) -> tuple[int, int]:
    """``[low, high)``, high exclusive, that ``random_`` draws integers from."""
    if not high_given:  # random_(): 0 up to the dtype's largest (floats: 2**digits)
        if dtype.is_floating_point:
            return 0, 2 ** _DIGITS[dtype.name] + 1
        return 0, (2 if dtype is _dtype.bool_ else _dtype.int_range(dtype)[1] + 1)
    if high is not None:
        if low >= high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        if dtype.is_floating_point:
            digits = _DIGITS[dtype.name]
            low, high = _float_from(low, digits), _float_to(high, digits)
            if low >= high:
                raise RuntimeError(
                    "random_ expects 'from' casted to dtype to be less than 'to' casted to "
                    f"dtype, but got from={low} >= to={high}"
                )
        _check_random_range(low, high - 1, dtype)
        return low, high
    if low == _dtype.INT64_MIN:  # the whole int64 range
        return low, _dtype.INT64_MAX + 1
    if dtype.is_floating_point:
        digits = _DIGITS[dtype.name]
        largest, low = 2**digits, _float_from(low, digits)
        if low >= largest:
            raise RuntimeError(
                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                f"casted to dtype, but got from={low} > to_inc={largest}"
            )
    else:
        largest = 1 if dtype is _dtype.bool_ else _dtype.int_range(dtype)[1]
    _check_random_range(low, largest, dtype)
    return low, largest + 1


def random_(self: Tensor, *bounds, generator=None, **named_bounds) -> Tensor:
    """Fill ``self`` with random integers, uniform over a range of its dtype.

    The forms of PyTorch:

    * ``random_()``: from 0 to the dtype's largest value, both included; for a
      floating dtype up to ``2**mantissa digits`` (``2**24`` for float32,
      ``2**53`` for float64), the largest range it holds every integer of;
    * ``random_(to)``: from 0 to ``to - 1``;
    * ``random_(from, to)``: from ``from`` to ``to - 1``; ``to=None`` goes to
      the dtype's largest value (``from`` may be given by name only through
      ``**{"from": ...}``, ``from`` being a Python keyword).

    Bounds that do not fit an integer dtype raise PyTorch's errors; on a
    floating dtype, bounds beyond the integers it holds exactly warn.

    Example:
        >>> torch.empty(4, dtype=torch.int64).random_(10).max() < 10
        tensor(True)
    """
    low, high, high_given = _random_bounds(bounds, named_bounds)
    dtype = self.dtype
    low, high = _random_range(dtype, low, high, high_given)
    if high - low == 2**64 and dtype not in (_dtype.int64, _dtype.float32, _dtype.float64):
        if self.numel() == 0:
            return self
        if dtype is _dtype.bool_:
            raise NotImplementedError(
                "\"random_full_64_bits_range_kernel_cpu\" not implemented for 'Bool'"
            )
        raise RuntimeError(
            "random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16"
        )
    return _fill_with(
        self,
        generator,
        lambda stream, count: _pytorch_random(stream, count, dtype, low, high, high_given),
        lambda gen: fill_random(
            empty_tensor(self.shape, dtype, device=self.device), "integers", gen, low, high
        ),
    )


def _pytorch_random(stream, count: int, dtype, low: int, high: int, high_given: bool):
    """PyTorch's CPU numbers for random_: two kernels, one for the dtype's
    default range and one for given bounds, which draw 64 bits differently."""
    if high_given:
        return pytorch_stream.integers(stream, count, low, high)
    wide = dtype in (_dtype.int64, _dtype.float64)
    return pytorch_stream.integers_up_to(stream, count, high - 1, draw_64_bits=wide)


def _float_argument(value, function: str, name: str, position: int) -> float:
    """A number argument as a float, or PyTorch's TypeError for anything else."""
    if (
        isinstance(value, Tensor)
        and value.numel() == 1
        or isinstance(value, (int, float, np.number))
    ):
        return float(value)
    raise TypeError(
        f"{function}(): argument '{name}' (position {position}) must be float, "
        f"not {type(value).__name__}"
    )


def _tangent(angle: Tensor) -> Tensor:
    """``tan(angle)`` as ``sin / cos`` (glasstorch has no tan kernel)."""
    return angle.sin() / angle.cos()


def _require_floating(self: Tensor, message: str) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(message)


def _fill_with(self: Tensor, generator, from_pytorch_stream, from_philox) -> Tensor:
    """Write a distribution's draws into ``self`` in place.

    ``from_pytorch_stream(stream, count)`` gives the values of the "pytorch"
    stream (a NumPy array), in the order PyTorch's CPU kernel walks ``self``:
    its memory order, the dimension of the largest stride outermost (row-major
    for a contiguous tensor). ``from_philox(generator)`` gives them as a tensor
    shaped like ``self`` on its device, from Philox kernels (row-major).
    """
    from glasstorch._tier import kernels
    from glasstorch.autograd.grad_mode import no_grad
    from glasstorch.ops import inplace

    def write() -> None:
        if self.numel() == 0:
            return
        stream = _pytorch_stream(generator, self.device)
        if stream is None:
            with no_grad():
                kernels.copy(self._strided(), from_philox(generator)._strided())
            return
        order = sorted(range(self.dim()), key=self.stride, reverse=True)  # stable: ties stay
        in_memory_order = self._view(
            tuple(self.shape[d] for d in order), tuple(self.stride(d) for d in order)
        )
        flat = from_pytorch_stream(stream, self.numel())
        values = from_numpy(np.ascontiguousarray(flat).reshape(tuple(in_memory_order.shape)))
        kernels.copy(in_memory_order._strided(), values._strided())

    return inplace.write_values(self, write)


def _normals(shape, generator, device, mean: float, std: float) -> Tensor:
    """Normal float64 numbers of ``mean`` and ``std`` on ``device`` (Philox or the
    generator's stream on a CUDA device; no autograd)."""
    out = empty_tensor(tuple(shape), _dtype.float64, device=device)
    return fill_random(out, "normal", generator, mean, std)


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``self`` with exponential numbers of rate ``lambd``: ``-log(1 - u) / lambd``."""
    lambd = _float_argument(lambd, "exponential_", "lambd", 1)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    _require_floating(
        self,
        "Exponential distribution is a continuous probability distribution. dtype must be a "
        f"floating point but you specified {self.dtype.title}",
    )
    return _fill_with(
        self,
        generator,
        lambda stream, count: pytorch_stream.exponential(stream, count, np.float64, lambd),
        lambda gen: (-1.0 / lambd) * (-_uniform(self.shape, gen, self.device)).log1p(),
    )


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``self`` with Cauchy numbers: ``median + sigma * tan(pi * (u - 1/2))``."""
    median = _float_argument(median, "cauchy_", "median", 1)
    sigma = _float_argument(sigma, "cauchy_", "sigma", 2)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    _require_floating(
        self,
        "Cauchy distribution is a continuous probability distribution. dtype must be a "
        f"floating point but you specified {self.dtype.c_name}",
    )
    return _fill_with(
        self,
        generator,
        lambda stream, count: pytorch_stream.cauchy(stream, count, median, sigma),
        lambda gen: (
            _tangent((_uniform(self.shape, gen, self.device) - 0.5) * math.pi) * sigma + median
        ),
    )


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill ``self`` with log-normal numbers: ``exp`` of normals of ``mean`` and ``std``."""
    mean = _float_argument(mean, "log_normal_", "mean", 1)
    std = _float_argument(std, "log_normal_", "std", 2)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{self.dtype.title}'")
    return _fill_with(
        self,
        generator,
        lambda stream, count: pytorch_stream.log_normal(stream, count, mean, std),
        lambda gen: _normals(self.shape, gen, self.device, mean, std).exp(),
    )


def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill ``self`` with geometric numbers: how many trials of success probability
    ``p`` it takes to the first success (1, 2, ...): ``ceil(log(u) / log(1 - p))``."""
    p = _float_argument(p, "geometric_", "p", 1)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if self.dtype is _dtype.bool_:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    return _fill_with(
        self,
        generator,
        lambda stream, count: pytorch_stream.geometric(stream, count, p),
        lambda gen: (_uniform(self.shape, gen, self.device).log() / math.log1p(-p)).ceil(),
    )
