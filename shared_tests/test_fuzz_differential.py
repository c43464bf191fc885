"""Differential fuzzing: thousands of random calls on glasstorch and on PyTorch, compared.

The cases come from ``fuzz_driver.py`` (next to this file; its docstring lists the
outcome classes). They run in worker processes, so a segfault or a hang fails
this test with the seed and the case's program instead of killing pytest.

The run is short here (about half a minute per tier); the seed is fixed when
``CI=true`` and random otherwise (printed on failure; set ``GLASSTORCH_FUZZ_SEED``
to replay one). A longer hunt::

    python shared_tests/fuzz_driver.py --calls 20000 --seed 7 --tier fast

In a device run (``--device=cuda``) the workers make glasstorch's tensors on the
device, so the same cases meet the CUDA kernels (``--device cuda`` to the driver).

Findings that belong to work in progress elsewhere are listed in
:data:`KNOWN_FINDINGS` (the class of case, who owns the fix, one reproducer):
they are counted as ``known-finding`` and do not fail the test. Remove an entry
once its fix has landed; the test then guards the fix.
"""

from __future__ import annotations

import os
import random
import re

import pytest
from fuzz_driver import classify, generate, run, run_fuzz
from fuzz_findings import KNOWN_FINDINGS, is_known
from oracle import torch

import glasstorch as gt

#: Cases per run of the suite, per tier (measured: a few hundred cases a second).
CALLS = {"fast": 2500, "reference": 2000}
CI_SEED = 20261124


def _seed() -> int:
    if "GLASSTORCH_FUZZ_SEED" in os.environ:
        return int(os.environ["GLASSTORCH_FUZZ_SEED"])
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return CI_SEED
    return random.randrange(1 << 30)


pytestmark = pytest.mark.errors


def test_fuzz_differential(device):
    seed = _seed()
    calls = CALLS.get(gt.tier, 1000)
    report = run_fuzz(calls, seed, gt.tier, on_finding=is_known, device=device)
    assert sum(report.counts.values()) == calls, report.summary()
    agreed = report.counts["agree-value"] + report.counts["ok-value"]
    assert agreed > calls // 3, "most cases should compute a value:\n" + report.summary()
    if torch is not None:
        assert report.counts["agree-error"] > 0, report.summary()
    shown = "\n\n".join(report.finding_text(f) for f in report.findings[:25])
    assert not report.findings, (
        f"{len(report.findings)} fuzz findings (replay: GLASSTORCH_FUZZ_SEED={seed} "
        f"GLASSTORCH_TIER={gt.tier}, --device={device}):\n\n{shown}\n\n{report.summary()}"
    )


def test_crash_and_hang_are_findings_not_the_end(monkeypatch):
    """A worker that dies or stops answering costs one case; the run carries on."""
    monkeypatch.setenv("GLASSTORCH_FUZZ_INJECT", "crash:2,hang:4")
    report = run_fuzz(8, 5, gt.tier, case_timeout=3.0, use_torch=False)
    kinds = {case.index: kind for kind, _, case in report.findings}
    assert kinds[2] == "crash" and kinds[4] == "hang", report.summary()
    assert sum(report.counts.values()) == 8
    text = report.finding_text(report.findings[0])
    assert "seed=5 index=2" in text and "op=" in text


def test_numpy_oracle_catches_a_wrong_value():
    """Without PyTorch, the few cases NumPy computes simply are still compared."""
    case = next(c for c in (generate(9, i) for i in range(2000)) if c.numpy.startswith("np.exp"))
    assert classify(case, run(case, gt), None)[0] == "ok-value"
    case.numpy += " + 1"
    kind, detail = classify(case, run(case, gt), None)
    assert kind == "mismatch-value" and "NumPy" in detail


def test_cases_are_reproducible_from_seed_and_index():
    first = [generate(3, i).program() for i in range(50)]
    again = [generate(3, i).program() for i in range(50)]
    assert first == again
    assert len(set(first)) > 40  # and they differ from each other
    for program in first[:10]:
        compile(program, "<case>", "exec")


def test_known_findings_are_well_formed():
    for known in KNOWN_FINDINGS:
        assert known.owner and known.example
        for pattern in (known.op, known.detail):
            re.compile(pattern)
