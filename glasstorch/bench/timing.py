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
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


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

    # 1. Warm-up: untimed calls, which also refine the estimate of one call's time.
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

    # 2. Group calls so that one sample lasts at least `sample_time`.
    number = max(1, min(100_000, int(policy.sample_time / max(estimate, 1e-9))))

    # 3. Samples until both enough samples and enough time, or the cap.
    per_call: list[float] = []
    timed = 0.0
    while len(per_call) < policy.max_samples and (
        len(per_call) < policy.min_samples or timed < policy.min_time
    ):
        seconds = _time_calls(fn, number)
        timed += seconds
        per_call.append(seconds / number)

    return Measurement(
        median_s=statistics.median(per_call),
        min_s=min(per_call),
        max_s=max(per_call),
        samples=len(per_call),
        calls_per_sample=number,
        warmup_calls=warmup_calls,
    )
