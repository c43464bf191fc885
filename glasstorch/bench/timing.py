"""How one callable is timed: warm-up, grouped calls, repeated samples, median.

Three habits make a timing trustworthy:

* **Warm up first.** The first calls of anything are slower: caches are cold,
  memory is being allocated for the first time, lazily built tables are built,
  and thread pools are asleep. (PyTorch's and OpenMP's worker threads go to
  sleep after a moment without work; the next few calls pay to wake them, on a
  busy machine up to a scheduler tick, milliseconds, each.) Those calls are run
  and thrown away: at least ``min_warmup_calls`` of them, for at least
  ``warmup_time``, but no longer than ``max_warmup_time`` for slow work.
* **Repeat, and report the median.** One measurement is noise. The machine does
  other things now and then (a daemon wakes up, the CPU changes frequency), which
  only ever makes a call *slower*; the median of many samples ignores those
  outliers, where the mean would be dragged up by them.
* **Group calls that are too short to time.** ``time.perf_counter`` itself
  costs tens of nanoseconds and ticks in steps; a call of a microsecond timed
  alone would mostly measure the clock. So calls are grouped into samples of at
  least ``sample_time`` seconds, and a sample's time is divided by its number of
  calls (what :mod:`timeit` does too).

On a machine shared with other jobs, a fourth helps when two libraries are
compared: **take turns**. :func:`measure_interleaved` times them sample by
sample, in turn, so that a spell in which the machine is faster or slower
falls on all of them alike.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how often to time one callable.

    Attributes:
        min_time: keep taking samples until this many seconds have been timed
            (and at least ``min_samples`` samples were taken).
        warmup_time: run untimed warm-up calls for at least this many seconds.
        min_warmup_calls: and at least this many of them...
        max_warmup_time: ...unless they have already taken this many seconds.
        min_samples: the fewest samples, whatever the time.
        max_samples: the most samples, whatever the time: a cap for slow workloads.
        sample_time: group calls so that one sample lasts at least this long.
    """

    min_time: float = 0.2
    warmup_time: float = 0.05
    min_warmup_calls: int = 10
    max_warmup_time: float = 1.0
    min_samples: int = 5
    max_samples: int = 1000
    sample_time: float = 1e-3


#: For NumPy, PyTorch and the fast tier: calls take micro- to milliseconds.
FAST_POLICY = TimingPolicy()

#: For the reference tier, whose calls take up to seconds: the call that checked
#: the result was the warm-up, and three to five samples of one call each give a
#: median (a pure-Python loop varies little from call to call).
REFERENCE_POLICY = TimingPolicy(
    min_time=0.2,
    warmup_time=0.0,
    min_warmup_calls=0,
    max_warmup_time=0.0,
    min_samples=3,
    max_samples=5,
)


@dataclass(frozen=True)
class Measurement:
    """The result of timing one callable.

    Attributes:
        median_s: median seconds per call over the samples (the figure reported).
        min_s: the fastest sample's seconds per call.
        max_s: the slowest sample's seconds per call.
        samples: how many samples were timed.
        calls_per_sample: how many calls each sample grouped.
        warmup_calls: how many untimed calls ran first.
    """

    median_s: float
    min_s: float
    max_s: float
    samples: int
    calls_per_sample: int
    warmup_calls: int

    @property
    def calls(self) -> int:
        """Timed calls in all."""
        return self.samples * self.calls_per_sample


def _time_calls(fn: Callable[[], object], number: int) -> float:
    """Seconds taken by ``number`` back-to-back calls of ``fn``."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def measure(
    fn: Callable[[], object],
    policy: TimingPolicy = FAST_POLICY,
    first_call_s: float | None = None,
) -> Measurement:
    """Time ``fn`` (a call with no arguments) under ``policy``.

    Args:
        fn: the work to time; its return value is ignored.
        policy: how long to warm up and how many samples to take.
        first_call_s: how long a call already made took (the correctness
            check), used as a first estimate of the time per call.

    Returns:
        The :class:`Measurement`: median, spread and counts.
    """
    gc.collect()  # start clean, so no collection of earlier garbage lands in a sample
    estimate, warmup_calls = _warm_up(fn, policy, first_call_s)
    number = _calls_per_sample(estimate, policy.sample_time)

    # Samples until both enough samples and enough time, or the cap.
    per_call: list[float] = []
    timed = 0.0
    while _wants_more(per_call, timed, policy):
        seconds = _time_calls(fn, number)
        timed += seconds
        per_call.append(seconds / number)
    return _summary(per_call, number, warmup_calls)


class Sampler(Protocol):
    """One contender of :func:`measure_interleaved`: something that can warm up
    and take a sample on request (in this process, or in another one)."""

    def warm_up(self, policy: TimingPolicy) -> tuple[float, int]:
        """Run the warm-up calls; returns the estimated seconds per call and their count."""

    def sample(self, calls: int) -> float:
        """Make one untimed call, then return the seconds taken by ``calls`` more."""


class LocalSampler:
    """A :class:`Sampler` for a callable in this process.

    Args:
        fn: the work to time.
        first_call_s: how long a call already made took, if known.
    """

    def __init__(self, fn: Callable[[], object], first_call_s: float | None = None):
        self.fn = fn
        self.first_call_s = first_call_s

    def warm_up(self, policy: TimingPolicy) -> tuple[float, int]:
        """See :meth:`Sampler.warm_up`."""
        return _warm_up(self.fn, policy, self.first_call_s)

    def sample(self, calls: int) -> float:
        """See :meth:`Sampler.sample`."""
        self.fn()
        return _time_calls(self.fn, calls)


def measure_interleaved(
    samplers: dict[str, Sampler],
    policy: TimingPolicy = FAST_POLICY,
    pause: float = 0.02,
    turn_time: float = 0.03,
) -> dict[str, Measurement]:
    """Time several contenders taking turns, one sample each in every turn.

    :func:`measure` times one library, then the next. On a machine shared with
    other jobs the speed of memory and cores can change from one second to
    the next, and a library that happened to run in a fast spell would look
    faster than it is. Taking turns sample by sample spreads every spell over
    all of them alike.

    Before each turn there is a ``pause`` (OpenMP's worker threads spin for a
    few milliseconds after a parallel region before they sleep: the last
    contender's threads stop competing for the cores), and the contender makes
    one untimed call (its own threads wake up). To keep the pauses a small part
    of the run, a turn's sample lasts at least ``turn_time``. The order of the
    contenders rotates from turn to turn, so that none always follows the same
    one.

    Args:
        samplers: the contenders, by name.
        policy: how long to warm up and how many samples to take, for each.
        pause: seconds of sleep before each turn.
        turn_time: the shortest sample, in seconds.

    Returns:
        A :class:`Measurement` per name.
    """
    gc.collect()
    warmed = {name: sampler.warm_up(policy) for name, sampler in samplers.items()}
    sample_time = max(policy.sample_time, turn_time)
    number = {name: _calls_per_sample(warmed[name][0], sample_time) for name in samplers}
    per_call: dict[str, list[float]] = {name: [] for name in samplers}
    timed = dict.fromkeys(samplers, 0.0)
    names = list(samplers)
    turn = 0
    while any(_wants_more(per_call[name], timed[name], policy) for name in names):
        first = turn % len(names)
        for name in names[first:] + names[:first]:
            if not _wants_more(per_call[name], timed[name], policy):
                continue
            time.sleep(pause)
            seconds = samplers[name].sample(number[name])
            timed[name] += seconds
            per_call[name].append(seconds / number[name])
        turn += 1
    return {name: _summary(per_call[name], number[name], warmed[name][1]) for name in names}


def _warm_up(
    fn: Callable[[], object], policy: TimingPolicy, first_call_s: float | None
) -> tuple[float, int]:
    """Run the untimed warm-up calls, which also refine the estimate of one
    call's time; returns that estimate (seconds) and the number of calls."""
    estimate = first_call_s if first_call_s is not None else float("inf")
    warmup_calls = 0
    warmup_start = time.perf_counter()
    while True:
        spent = time.perf_counter() - warmup_start
        enough = warmup_calls >= policy.min_warmup_calls and spent >= policy.warmup_time
        if enough or spent >= policy.max_warmup_time:
            break
        estimate = min(estimate, _time_calls(fn, 1))
        warmup_calls += 1
    if estimate == float("inf"):  # no estimate at all: time one call now
        estimate = _time_calls(fn, 1)
        warmup_calls += 1
    return estimate, warmup_calls


def _calls_per_sample(estimate: float, sample_time: float) -> int:
    """Calls to group into one sample so that it lasts at least ``sample_time``."""
    return max(1, min(100_000, int(sample_time / max(estimate, 1e-9))))


def _wants_more(per_call: list[float], timed: float, policy: TimingPolicy) -> bool:
    """Whether to take another sample: too few samples or too little time, below the cap."""
    return len(per_call) < policy.max_samples and (
        len(per_call) < policy.min_samples or timed < policy.min_time
    )


def _summary(per_call: list[float], number: int, warmup_calls: int) -> Measurement:
    """The :class:`Measurement` of samples of ``number`` calls each."""
    return Measurement(
        median_s=statistics.median(per_call),
        min_s=min(per_call),
        max_s=max(per_call),
        samples=len(per_call),
        calls_per_sample=number,
        warmup_calls=warmup_calls,
    )
