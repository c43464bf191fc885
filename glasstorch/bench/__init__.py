"""``python -m glasstorch.bench``: the benchmark harness (docs/guide/architecture.md, section 5).

Speed in glasstorch is measured here, never asserted in tests. The harness runs
the same workloads, on the same inputs, on several **backends**:

* the active glasstorch tier (``glasstorch.tier``), in this process;
* NumPy, through hand-written equivalents of each workload;
* PyTorch, when it is installed;
* with ``--other-tier``, the other glasstorch tier, in a subprocess (the tier
  is fixed when glasstorch is imported, so it needs a fresh interpreter).

With ``--isolate`` every backend runs in an interpreter of its own, one after
the other; with ``--interleave`` (what ``make bench`` uses) too, and the
backends take turns sample by sample
(:func:`~glasstorch.bench.timing.measure_interleaved`).

How one measurement is made (see :mod:`glasstorch.bench.timing`):

1. the inputs are drawn once, with NumPy, and every backend wraps the same
   arrays;
2. each backend's callable is built once (tensors converted, model made);
3. its first call is checked against NumPy's result: a wrong answer is
   reported, never timed;
4. warm-up calls, then repeated samples until enough time has passed;
5. the **median** time per call is reported, with the number of calls.

The modules, in reading order: :mod:`~glasstorch.bench.timing` (how to time),
:mod:`~glasstorch.bench.workloads` (what to time), :mod:`~glasstorch.bench.backends`
(on what), :mod:`~glasstorch.bench.runner` (putting it together),
:mod:`~glasstorch.bench.report` (table, JSON, plot, machine description).
"""

from glasstorch.bench.runner import BenchSettings, run_benchmarks
from glasstorch.bench.timing import Measurement, TimingPolicy, measure, measure_interleaved
from glasstorch.bench.workloads import Target, Workload, select_workloads, workload_registry

__all__ = [
    "BenchSettings",
    "Measurement",
    "Target",
    "TimingPolicy",
    "Workload",
    "measure",
    "measure_interleaved",
    "run_benchmarks",
    "select_workloads",
    "workload_registry",
]
