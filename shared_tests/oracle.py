"""The oracles the conformance suite compares glasstorch against.

NumPy is always there. Real PyTorch is used too when it is installed; it is
imported here as :data:`torch` (``None`` when absent) so that a test file can say
``import glasstorch as gt`` and ``from oracle import torch`` without the two names
clashing. Tests that need PyTorch are marked :data:`needs_torch`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

try:
    import torch as real_torch
except ImportError:  # the NumPy oracle still runs
    real_torch = None

#: Real PyTorch, or ``None`` when it is not installed.
torch = real_torch

#: The device under test, ``"cpu"`` or ``"cuda"`` (conftest's ``--device`` sets
#: ``GLASSTORCH_TEST_DEVICE``). :func:`assert_close` checks that glasstorch's
#: results were computed there.
TEST_DEVICE: str = os.environ.get("GLASSTORCH_TEST_DEVICE", "cpu")

#: Skip a test (visibly) when PyTorch is not installed.
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the oracle) is not installed")

#: Default ``(rtol, atol)`` per dtype name. Float32 results may be computed in
#: double and rounded (reference tier) or in single precision (NumPy, C), so they
#: are allowed a few ulps of slack; integers and bools must match exactly.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
}


# --------------------------------------------------------------------- dtypes
def dtype_name(dtype: Any) -> str:
    """The bare name of a glasstorch, PyTorch or NumPy dtype: ``'float32'``, ``'bool'``.

    ``glasstorch.float32`` prints as ``glasstorch.float32`` (or ``torch.float32``),
    PyTorch's as ``torch.float32`` and NumPy's name is ``float32``: the part after
    the last dot is the name they share.
    """
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return np.dtype(dtype).name
    return str(dtype).rsplit(".", 1)[-1]


def gt_dtype(name: str) -> Any:
    """The glasstorch dtype called ``name``."""
    import glasstorch

    return getattr(glasstorch, name)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's row-major strides for ``shape`` (a size-0 dimension counts as 1)."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


# ----------------------------------------------------------------- conversion
def to_numpy(value: Any) -> np.ndarray:
    """A NumPy copy of a glasstorch tensor, a PyTorch tensor, an array or a number."""
    if isinstance(value, np.ndarray):
        return value
    if real_torch is not None and isinstance(value, real_torch.Tensor):
        return value.detach().cpu().numpy().copy()
    if hasattr(value, "numpy") and hasattr(value, "detach"):  # a glasstorch Tensor
        value = value.detach()
        if str(getattr(value, "device", "cpu")) != "cpu":
            value = value.cpu()
        return np.array(value.numpy(), copy=True)
    return np.asarray(value)


def to_torch(tensor: Any) -> Any:
    """A real PyTorch tensor with the values and dtype of a glasstorch tensor (a copy)."""
    if real_torch is None:
        raise RuntimeError("to_torch needs PyTorch, which is not installed")
    return real_torch.from_numpy(np.ascontiguousarray(to_numpy(tensor)))


def from_torch(tensor: Any) -> Any:
    """A glasstorch tensor with the values and dtype of a real PyTorch tensor (a copy)."""
    import glasstorch

    return glasstorch.from_numpy(np.array(tensor.detach().cpu().numpy(), copy=True))


# ------------------------------------------------------------------ assertions
def copy_weights(gt_module: Any, torch_module: Any, device: Any) -> Any:
    """Give ``gt_module`` the parameters and buffers of ``torch_module`` (matched
    by name, in order), and move it to ``device``; returns ``gt_module``."""
    import glasstorch as gt

    with gt.no_grad():
        for (name, p), (tname, q) in zip(
            gt_module.named_parameters(), torch_module.named_parameters()
        ):
            assert name == tname
            p.copy_(gt.tensor(q.detach().numpy()))
        for (name, b), (tname, c) in zip(gt_module.named_buffers(), torch_module.named_buffers()):
            assert name == tname
            b.copy_(gt.tensor(c.detach().numpy()))
    return gt_module.to(device)


def _expected_parts(expected: Any) -> tuple[np.ndarray, str | None, tuple[int, ...] | None]:
    """Values, dtype name (None: unchecked) and element strides (None: unknown)."""
    if real_torch is not None and isinstance(expected, real_torch.Tensor):
        return to_numpy(expected), dtype_name(expected.dtype), tuple(expected.stride())
    if isinstance(expected, np.ndarray):
        strides = tuple(s // expected.itemsize for s in expected.strides)
        return expected, expected.dtype.name, strides
    if isinstance(expected, np.generic):
        return np.asarray(expected), expected.dtype.name, ()
    if isinstance(expected, (bool, int, float)):
        return np.asarray(expected), None, ()  # a Python number fixes no dtype
    raise TypeError(f"assert_close: unsupported expected value of type {type(expected)}")


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    check_stride: bool = False,
    equal_nan: bool = True,
    check_device: bool = True,
) -> None:
    """Assert that glasstorch tensor ``actual`` matches ``expected``.

    Args:
        actual: a glasstorch Tensor.
        expected: a NumPy array, a NumPy scalar, a Python number or a real PyTorch
            tensor.
        rtol, atol: tolerances; by default chosen from ``actual``'s dtype
            (:data:`DEFAULT_TOLERANCES`; integers and bools compare exactly).
        check_dtype: compare dtype names (``float32`` against ``torch.float32``
            or NumPy's ``float32``). Python numbers fix no dtype.
        check_stride: compare ``actual.stride()`` with PyTorch's strides or with
            NumPy's byte strides divided by the item size.
        equal_nan: NaN in both places counts as equal.
        check_device: that ``actual`` lives on the device under test
            (:data:`TEST_DEVICE`), so a device run cannot pass by computing on
            the CPU. Its values are copied to the host before comparing.
    """
    if check_device:
        assert_on_test_device(actual)
    exp_values, exp_dtype, exp_strides = _expected_parts(expected)
    act_dtype = dtype_name(actual.dtype)
    act_shape = tuple(actual.shape)
    assert act_shape == exp_values.shape, f"shape {act_shape} != expected {exp_values.shape}"
    if check_dtype and exp_dtype is not None:
        assert act_dtype == exp_dtype, f"dtype {act_dtype} != expected {exp_dtype}"
    if check_stride:
        assert exp_strides is not None
        act_strides = tuple(actual.stride())
        assert act_strides == exp_strides, f"stride {act_strides} != expected {exp_strides}"
    act_values = to_numpy(actual)
    assert act_values.shape == act_shape, f"numpy() shape {act_values.shape} != {act_shape}"
    default_rtol, default_atol = DEFAULT_TOLERANCES.get(act_dtype, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if act_dtype in DEFAULT_TOLERANCES or rtol or atol:
        np.testing.assert_allclose(
            act_values.astype(np.float64),
            exp_values.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=equal_nan,
            err_msg=f"glasstorch {act_dtype} result differs from the oracle",
        )
    else:
        np.testing.assert_array_equal(
            act_values, exp_values, err_msg=f"glasstorch {act_dtype} result differs"
        )


def assert_on_test_device(*tensors: Any) -> None:
    """Assert that each glasstorch tensor lives on the device under test (others pass)."""
    import glasstorch

    for tensor in tensors:
        if not isinstance(tensor, glasstorch.Tensor):
            continue
        kind = tensor.device.type
        assert kind == TEST_DEVICE, f"result on {kind}, expected the test device {TEST_DEVICE}"


def on_test_device(value: Any, **kwargs: Any) -> Any:
    """A glasstorch tensor of ``value`` (an array, a list, a tensor) on the device under test.

    ``kwargs`` go to :func:`glasstorch.tensor` (``dtype``, ``requires_grad``).
    """
    import glasstorch

    if isinstance(value, glasstorch.Tensor):
        return value.to(TEST_DEVICE)
    return glasstorch.tensor(value, device=TEST_DEVICE, **kwargs)


@contextlib.contextmanager
def default_device(device: str) -> Iterator[None]:
    """Within the block, glasstorch's factory functions allocate on ``device``.

    For programs written once for glasstorch and PyTorch (``fn(T, ...)``) that
    make tensors of their own (``T.tensor(mask)``): on the device under test
    those must land there too, as ``torch.set_default_device`` would do.
    """
    import glasstorch

    previous = glasstorch.get_default_device()
    glasstorch.set_default_device(device)
    try:
        yield
    finally:
        glasstorch.set_default_device(previous)


def _builtin_base(exc_type: type[BaseException]) -> type[BaseException]:
    """The most derived built-in exception class among ``exc_type``'s bases.

    PyTorch sometimes raises its own subclasses (``torch.OutOfMemoryError``,
    ``torch._C._LinAlgError``); glasstorch is expected to raise the built-in class
    they derive from, which is what a user's ``except`` clause names.
    """
    for cls in exc_type.__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def _raised(fn: Callable[[], Any], who: str) -> BaseException:
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the point is to catch anything
        return error
    raise AssertionError(f"{who} raised no exception")


def assert_same_error(
    fn_gt: Callable[[], Any],
    fn_torch: Callable[[], Any] | None = None,
    *,
    match: str | None = None,
    exc_type: type[BaseException] | None = None,
) -> BaseException:
    """Assert that glasstorch fails the way PyTorch does, and return glasstorch's error.

    Args:
        fn_gt: calls glasstorch; must raise.
        fn_torch: the same call on real PyTorch. Used when PyTorch is installed:
            both must raise, and glasstorch's exception must be an instance of the
            built-in class PyTorch's exception is (or derives from).
        match: a regular expression both messages must contain (``re.search``);
            checked against PyTorch's too, so a test cannot drift from PyTorch.
        exc_type: the exception class glasstorch must raise; lets the check run
            without PyTorch.
    """
    gt_error = _raised(fn_gt, "glasstorch")
    if exc_type is not None:
        assert isinstance(gt_error, exc_type), (
            f"glasstorch raised {type(gt_error).__name__}({gt_error}), expected {exc_type.__name__}"
        )
    if match is not None:
        assert re.search(match, str(gt_error)), (
            f"glasstorch's message {str(gt_error)!r} does not match {match!r}"
        )
    if fn_torch is not None and real_torch is not None:
        torch_error = _raised(fn_torch, "PyTorch")
        base = _builtin_base(type(torch_error))
        assert isinstance(gt_error, base), (
            f"glasstorch raised {type(gt_error).__name__}({gt_error}); PyTorch raised "
            f"{type(torch_error).__name__}({torch_error})"
        )
        if exc_type is not None:
            assert isinstance(torch_error, exc_type), f"PyTorch raised {torch_error!r}"
        if match is not None:
            assert re.search(match, str(torch_error)), (
                f"PyTorch's message {str(torch_error)!r} does not match {match!r}"
            )
    return gt_error


# --------------------------------------------------------------------- torchrun
#: What a PyTorch rank prints when it dies of the exit race :func:`torchrun` retries.
EXIT_RACE = "terminate called without an active exception"


def torchrun(arguments: list[str], *, attempts: int = 3, **run_options: Any):
    """Run ``python -m torch.distributed.run arguments...`` (PyTorch's DDP, the oracle).

    PyTorch 2.13's gloo process group can abort a rank after the program has
    finished: a gloo worker thread drops the last reference to an all-reduce's
    tensor, which needs the GIL, while the main thread is already finalizing the
    interpreter; the worker is then unwound from a ``noexcept`` destructor and the
    C++ runtime aborts with :data:`EXIT_RACE` (seen in a core dump: the thread is
    in ``ProcessGroupGloo::runLoop`` -> ``~AsyncAllreduceWork`` ->
    ``PyEval_AcquireThread``). It is more likely on a loaded machine. That crash is
    PyTorch's, not glasstorch's, so a run that ends with it is repeated, up to
    ``attempts`` times; any other failure is returned at once.
    """
    import subprocess
    import sys

    command = [sys.executable, "-m", "torch.distributed.run", *arguments]
    for _ in range(attempts):
        done = subprocess.run(command, capture_output=True, text=True, check=False, **run_options)
        if done.returncode == 0 or EXIT_RACE not in done.stderr + done.stdout:
            return done
    return done
