"""The kernel contract and tier selection (docs/guide/architecture.md, section 2)."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import subprocess
import sys

import pytest

import glasstorch as gt
from glasstorch import _tier
from glasstorch._kernels import Kernels, contract_kernel_names

pytestmark = pytest.mark.contract

CONTRACT = contract_kernel_names()


def kernels_of(device: str) -> Kernels:
    """The kernel object that runs the contract on ``device``: the CPU tier, or the CUDA
    kernels the dispatcher sends device calls to."""
    if device == "cpu":
        return _tier.cpu_kernels
    return _tier.kernels.cuda


def test_tier_names_the_active_tier(device):
    expected = os.environ.get("GLASSTORCH_TIER", "reference").strip().lower() or "reference"
    assert gt.tier == expected
    assert _tier.kernels.name == gt.tier
    assert kernels_of(device).name == (gt.tier if device == "cpu" else "cuda")


def test_frontend_modules_bind_the_active_kernels_by_assignment():
    # Each frontend module's ``kernels`` is the active kernel object, bound by
    # ``kernels = _tier.kernels`` rather than imported by name, so that Python
    # caches its method lookups (see glasstorch._tier.kernels).
    package = os.path.dirname(gt.__file__)
    importers, binders = [], []
    for folder, _, files in os.walk(package):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.join(folder, file)
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read())
            for node in tree.body:  # module level only: a function may import it
                if isinstance(node, ast.ImportFrom) and node.module == "glasstorch._tier":
                    if any(alias.name == "kernels" for alias in node.names):
                        importers.append(os.path.relpath(path, package))
                if isinstance(node, ast.Assign) and ast.unparse(node) == "kernels = _tier.kernels":
                    name = os.path.relpath(path, package)[: -len(".py")].replace(os.sep, ".")
                    binders.append("glasstorch." + name.removesuffix(".__init__"))
    assert importers == []
    assert len(binders) > 20
    for name in binders:
        assert importlib.import_module(name).kernels is _tier.kernels, name


def test_contract_is_not_empty():
    assert {"allocate", "copy", "unary", "binary", "reduce", "matmul"} <= set(CONTRACT)


@pytest.mark.parametrize("name", CONTRACT)
def test_active_tier_implements_every_kernel(name, device):
    kernels = _tier.kernels if device == "cpu" else kernels_of(device)
    assert isinstance(kernels, Kernels)
    implementation = getattr(type(kernels), name)
    assert implementation is not getattr(Kernels, name), (
        f"the {kernels.name} tier does not override Kernels.{name}: no silent fallback is allowed"
    )
    assert not getattr(implementation, "_not_implemented", False), (
        f"the {kernels.name} tier has no kernel for Kernels.{name}"
    )
    assert callable(getattr(kernels, name))


@pytest.mark.parametrize("name", CONTRACT)
def test_kernel_signatures_match_the_contract(name, device):
    contract = inspect.signature(getattr(Kernels, name))
    implementation = inspect.signature(getattr(type(kernels_of(device)), name))
    assert list(implementation.parameters) == list(contract.parameters)


def _import_with_tier(value):
    env = dict(os.environ, GLASSTORCH_TIER=value)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run(
        [sys.executable, "-c", "import glasstorch; print(glasstorch.tier)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unknown_tier_is_refused_with_the_valid_names():
    result = _import_with_tier("bogus")
    assert result.returncode != 0
    assert "bogus" in result.stderr
    assert "reference" in result.stderr and "fast" in result.stderr


def test_reference_tier_is_selected_by_environment():
    result = _import_with_tier("reference")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "reference"


@pytest.mark.skipif(gt.cuda.is_available(), reason="a CUDA driver is active (GLASSTORCH_CUDA)")
def test_cuda_is_refused_with_an_explanation():
    # PyTorch's AssertionError without CUDA, plus how to get a CUDA device.
    with pytest.raises(
        AssertionError, match="Torch not compiled with CUDA enabled.*GLASSTORCH_CUDA"
    ):
        gt.zeros(2, device="cuda")


@pytest.mark.cpu_only("set_num_threads sizes the CPU tier's thread pool")
def test_set_num_threads_reads_back_and_is_restored():
    before = gt.get_num_threads()
    assert isinstance(before, int) and before >= 1
    try:
        gt.set_num_threads(1)
        assert gt.get_num_threads() == 1
        # one thread computes the same numbers as several
        x = gt.arange(200_000, dtype=gt.float64)
        assert float((x * 2).sum()) == 2 * 199_999 * 200_000 / 2
    finally:
        gt.set_num_threads(before)
    assert gt.get_num_threads() == before


@pytest.mark.parametrize(
    "value, message",
    [
        (0, "expects a positive integer"),
        (-3, "expects a positive integer"),
        (1.5, "expects an int, but got float"),
        (True, "expects an int, but got bool"),
        ("2", "expects an int, but got str"),
    ],
)
@pytest.mark.cpu_only("set_num_threads sizes the CPU tier's thread pool")
def test_set_num_threads_rejects_what_pytorch_rejects(value, message):
    from oracle import assert_same_error, torch

    before = gt.get_num_threads()
    assert_same_error(
        lambda: gt.set_num_threads(value),
        (lambda: torch.set_num_threads(value)) if torch is not None else None,
        match=message,
        exc_type=RuntimeError,
    )
    assert gt.get_num_threads() == before
