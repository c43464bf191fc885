"""Same seed, same numbers: a seeded program gives the same results on every tier.

The program draws random tensors, initialises a model with dropout and trains it
for a few steps. It runs once per complete tier, each in its own process (the
tier is fixed at import), and the printed values must agree within float
tolerance. Random draws must agree exactly: every tier runs the same Philox.

With the fast tier built, the program runs a third time with every tensor on
``"cuda"`` under the CUDA simulator (``GLASSTORCH_CUDA=simulator``,
``set_default_device("cuda")``): the device's kernels give the CPU's numbers too.
In a device run (``--device=cuda``) the test compares that device run with the
fast tier's CPU run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from glasstorch._tier import complete_tiers

pytestmark = pytest.mark.contract

PROGRAM = r"""
import json
import os
import glasstorch as torch
from glasstorch import nn

device = os.environ.get("SEEDED_PROGRAM_DEVICE", "cpu")
torch.set_default_device(device)
torch.manual_seed(1234)
record = {
    "rand": torch.rand(5).tolist(),
    "randn": torch.randn(2, 3, dtype=torch.float64).tolist(),
    "randint": torch.randint(0, 100, (6,)).tolist(),
    "randperm": torch.randperm(7).tolist(),
}
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.25), nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(16, 4)
y = torch.randint(0, 3, (16,))
losses = []
for _ in range(8):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
record["losses"] = losses
record["weight"] = model[0].weight.tolist()
record["device"] = str(model[0].weight.device)
print(json.dumps(record))
"""


def _run(tier: str, device: str = "cpu") -> dict:
    """The program's record on ``tier``, its tensors on ``device`` (cuda: the simulator)."""
    env = dict(os.environ, GLASSTORCH_TIER=tier, SEEDED_PROGRAM_DEVICE=device)
    env["GLASSTORCH_CUDA"] = "simulator" if device == "cuda" else "off"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"the program failed on {tier} ({device}):\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_seeded_program_agrees_across_tiers(device):
    tiers = complete_tiers()
    assert len(tiers) >= 2, (
        f"only {tiers} implement the whole contract here; build the fast tier "
        "(`pip install -e .` or `make install`) to compare tiers"
    )
    if device != "cpu":  # the device's numbers against the CPU tier the simulator builds on
        tiers = ["fast"]
    results = {tier: _run(tier) for tier in tiers}
    if "fast" in tiers:  # the simulator compiles the kernels with the fast tier's compiler
        results["cuda"] = _run("fast", device="cuda")
        assert results["cuda"]["device"] == "cuda:0"
    first, *others = results
    for tier in others:
        a, b = results[first], results[tier]
        for key in ("rand", "randn", "randint", "randperm"):
            assert a[key] == b[key], f"{key} differs between {first} and {tier}"
        np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a["weight"], b["weight"], rtol=1e-4, atol=1e-5)
