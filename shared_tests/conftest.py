"""Suite-wide configuration for the conformance suite (docs/guide/architecture.md, section 4).

* Every test carries exactly the topic markers listed in :data:`TOPICS`; a test
  without one fails collection, because the classroom tooling maps topics onto
  assignments and an unmarked test would silently fall out of every assignment.
* The header names the tier under test and the PyTorch oracle, so a log always
  says what was compared with what.
* The device under test: ``--device=cuda`` (or ``GLASSTORCH_TEST_DEVICE=cuda``)
  runs the tests that take the :func:`device` fixture with their inputs on
  that device, and only those: a test that makes no input on ``device`` is
  deselected, and one marked ``cpu_only("why")`` (NumPy memory sharing, file
  formats, worker processes: behaviours of host memory) is skipped with its
  reason. The default device is ``cpu``, where every test runs.
* Hypothesis runs few, unhurried examples: the reference tier is pure Python and
  the whole suite must finish in minutes. Set ``GLASSTORCH_HYPOTHESIS_PROFILE=thorough``
  for a longer hunt.
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

# The helpers (oracle.py, strategies.py) are imported by plain module name from
# the test files, whatever pytest's import mode is.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: Topic markers, one per subject a learner studies. Each test carries at least one.
TOPICS: dict[str, str] = {
    "tensor": "Tensor basics that fit no narrower topic (clone, detach, metadata)",
    "dtype": "dtypes, type promotion and conversions",
    "creation": "factory functions: tensor, zeros, arange, linspace, eye, ...",
    "views": "views and strides: view, reshape, permute, slicing, expand, ...",
    "indexing": "advanced indexing, gather/scatter, masked_fill, where",
    "math": "elementwise arithmetic, comparison and unary functions",
    "reduction": "reductions: sum, mean, max, var, logsumexp, cumsum, ...",
    "linalg": "matmul and friends, cat/stack, softmax",
    "random": "random numbers, manual_seed and the Philox generator",
    "autograd": "the autograd engine: grad_fn, backward, hooks, grad modes",
    "gradcheck": "numerical gradient checks of differentiable ops",
    "errors": "PyTorch's exception types and wording for common mistakes",
    "interop": "NumPy and Python interop: numpy(), item, tolist, repr, ...",
    "contract": "the kernel contract and tier selection",
    "demo": "the end-to-end demo programs",
    "nn": "nn.Module, layers, losses, nn.functional, nn.init and nn.utils",
    "optim": "optimizers and learning-rate schedulers",
    "data": "Dataset, samplers, collate and the DataLoader with workers",
    "multiprocessing": "torch.multiprocessing: tensors shared between processes, spawn, Hogwild",
    "distributed": "torch.distributed: process groups, collectives over MPI, the launcher, DDP",
    "datasets": "bundled and standard datasets, file formats and transforms",
    "serialization": "save and load",
    "programs": "public-style PyTorch programs (tutorials, examples, courses) run unchanged",
    "cuda": "the GPU runtime: devices, streams, the caching allocator and the CUDA simulator",
    "profiler": "glasstorch.profiler: operation spans, record_function, tables, Chrome traces",
    "classroom": "the classroom tools: solution markers, releases, the autograder",
    "coverage": "the API coverage table: PyTorch's names, arguments and use against glasstorch's",
}

_SUITE_DIR = os.path.dirname(os.path.abspath(__file__))

settings.register_profile(
    "glasstorch",
    max_examples=25,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the checkout; failures print their example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
    # In CI (CI=true) every run draws the same examples, so a result can be
    # reproduced from the log; locally each run explores new ones.
    derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"),
)
settings.register_profile(
    "thorough",
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
# The classroom's grader (glasstorch.classroom): the same examples, but a failing
# test is reported at once instead of being shrunk to a minimal example, which
# on a half-written kernel can take minutes.
settings.register_profile(
    "classroom",
    parent=settings.get_profile("glasstorch"),
    derandomize=True,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
settings.load_profile(os.environ.get("GLASSTORCH_HYPOTHESIS_PROFILE", "glasstorch"))


#: The environment variable that picks the test device (``--device`` overrides it).
DEVICE_VARIABLE = "GLASSTORCH_TEST_DEVICE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--device",
        default=os.environ.get(DEVICE_VARIABLE, "cpu"),
        help=f"the device the `device` tests make their inputs on: cpu (default) or cuda "
        f"(needs GLASSTORCH_CUDA=simulator or a GPU); also ${DEVICE_VARIABLE}",
    )


def test_device_of(config: pytest.Config) -> str:
    """``"cpu"`` or ``"cuda"``: the device of this run."""
    return str(config.getoption("--device"))


test_device_of.__test__ = False  # a helper, not a test


def pytest_configure(config: pytest.Config) -> None:
    for name, description in TOPICS.items():
        config.addinivalue_line("markers", f"{name}: topic marker - {description}")
    config.addinivalue_line(
        "markers",
        "cpu_only(reason): a behaviour of host memory; skipped, with the reason, on another device",
    )
    device = test_device_of(config)
    if device not in ("cpu", "cuda"):
        raise pytest.UsageError(f"--device should be cpu or cuda, got {device!r}")
    os.environ[DEVICE_VARIABLE] = device  # oracle.TEST_DEVICE reads it
    if device == "cuda":
        import glasstorch

        if not glasstorch.cuda.is_available():
            raise pytest.UsageError(
                "--device=cuda needs a CUDA driver in this process: run with "
                "GLASSTORCH_CUDA=simulator (or on a GPU with GLASSTORCH_CUDA=cupy)"
            )


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
    """The device a test makes its inputs on: ``"cpu"`` unless ``--device`` says otherwise.

    Session-scoped, so Hypothesis tests may take it.
    """
    return test_device_of(request.config)


@pytest.fixture
def default_device(device: str):
    """``device``, made glasstorch's default device for the test (``set_default_device``).

    For tests whose tensors come from many factory calls (``gt.tensor``,
    ``gt.ones``, new modules' parameters, ...): each one makes its tensor on the
    device under test without a ``device=`` argument, as
    ``torch.set_default_device`` would. Use it with ``pytestmark =
    pytest.mark.usefixtures("default_device")`` or per test; it takes
    ``device``, so the test runs in a device run. The previous default comes
    back afterwards. Not for Hypothesis tests (it is function-scoped): pass
    ``device=`` there.
    """
    from oracle import default_device as factories_on

    with factories_on(device):
        yield device


@pytest.fixture
def seeded_generators():
    """Seed PyTorch's generator (when installed) and glasstorch's, so that PyTorch's
    initial weights and glasstorch's draws repeat from test to test."""
    from oracle import torch

    import glasstorch

    if torch is not None:
        torch.manual_seed(0)
    glasstorch.manual_seed(0)


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        import glasstorch

        tier = str(glasstorch.tier)
    except Exception as error:  # the header must print even when the import is broken
        requested = os.environ.get("GLASSTORCH_TIER", "<default>")
        tier = f"{requested} (import failed: {type(error).__name__}: {error})"
    try:
        import torch as real_torch

        oracle = f"PyTorch {real_torch.__version__}"
    except ImportError:
        oracle = "not installed (NumPy oracle only)"
    lines = [f"glasstorch tier: {tier}", f"torch oracle: {oracle}"]
    device = test_device_of(config)
    if device != "cpu":
        lines.append(f"test device: {device} (only the tests that take the `device` fixture)")
    return lines


def _select_device_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a device other than the CPU, keep the tests that run there (see the docstring)."""
    if test_device_of(config) == "cpu":
        return
    kept, dropped = [], []
    for item in items:
        cpu_only = item.get_closest_marker("cpu_only")
        if cpu_only is not None:
            reason = cpu_only.args[0] if cpu_only.args else cpu_only.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"CPU only: {reason}"))
            kept.append(item)
        elif "device" in getattr(item, "fixturenames", ()):
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse to run a suite in which some test carries no topic marker."""
    _select_device_tests(config, items)
    unmarked = [
        item.nodeid
        for item in items
        if os.path.abspath(str(item.path)).startswith(_SUITE_DIR)
        and not any(mark.name in TOPICS for mark in item.iter_markers())
    ]
    if unmarked:
        listing = "\n  ".join(unmarked)
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) carry no topic marker. Add one of "
            f"{', '.join(TOPICS)} (e.g. `pytestmark = pytest.mark.math` at the top of "
            f"the file, or `@pytest.mark.math` on the test):\n  {listing}"
        )
