"""The fast tier's fused optimizer kernels against the reference tier's.

Each test runs a few steps of one optimizer kernel, fast and reference side by
side on copies of the same parameter, gradient and state buffers (contiguous
1-D views at a nonzero offset, as the contract promises), and compares every
buffer after every step. Both tiers evaluate the update in double and round
each stored value to the buffer's dtype in the same order, so the results are
expected to agree to the last bit; the assertion allows float tolerance only.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided
from glasstorch.reference import ReferenceKernels

fast_optim = pytest.importorskip(
    "glasstorch.fast.optim", reason="the fast tier's C extension is not built"
)

pytestmark = [pytest.mark.contract]

FAST = kernels_under_test(fast_optim.OptimKernels())
REFERENCE = ReferenceKernels()
TOLERANCES = {"float32": (1e-6, 1e-7), "float64": (1e-14, 1e-300)}
STEPS = 3


def buffers(rng: np.random.Generator, n: int, dtype: str, names: tuple[str, ...]) -> dict:
    """One 1-D view per name over a buffer with two spare elements in front."""
    views = {}
    for name in names:
        values = rng.uniform(-2.0, 2.0, n + 2)
        if name in ("square_avg", "exp_avg_sq", "max_exp_avg_sq", "state_sum", "acc_delta"):
            values = np.abs(values)  # second moments are never negative
        views[name] = Strided(values.astype(dtype), (n,), (1,), 2)
    return views


def run_steps(kernel: str, dtype: str, n: int, seed: int, names, make_args) -> None:
    """Run ``STEPS`` steps in both tiers; compare all buffers after each."""
    rng = np.random.default_rng(seed)
    fast = buffers(rng, n, dtype, names)
    reference = {k: v._replace(buffer=v.buffer.copy()) for k, v in fast.items()}
    rtol, atol = TOLERANCES[dtype]
    for step in range(1, STEPS + 1):
        grad = rng.uniform(-1.0, 1.0, n + 2).astype(dtype)
        for views in (fast, reference):
            views["grad"] = Strided(grad, (n,), (1,), 2)
        getattr(FAST, kernel)(*make_args(fast, step))
        getattr(REFERENCE, kernel)(*make_args(reference, step))
        for name in names:
            np.testing.assert_allclose(
                fast[name].buffer, reference[name].buffer, rtol=rtol, atol=atol, err_msg=name
            )


dtypes = st.sampled_from(["float32", "float64"])
sizes = st.integers(0, 40)
seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=30)
@given(
    dtype=dtypes,
    n=sizes,
    seed=seeds,
    weight_decay=st.sampled_from([0.0, 0.01]),
    momentum=st.sampled_from([0.0, 0.9]),
    dampening=st.sampled_from([0.0, 0.1]),
    nesterov=st.booleans(),
    maximize=st.booleans(),
)
def test_sgd_step_matches_reference(
    dtype, n, seed, weight_decay, momentum, dampening, nesterov, maximize, device
):
    names = ("param", "momentum_buffer")

    def args(v, step):
        buf = v["momentum_buffer"] if momentum else None
        return (v["param"], v["grad"], buf, 0.1, weight_decay, momentum, dampening,
                nesterov, maximize, step == 1)  # fmt: skip

    run_steps("sgd_step", dtype, n, seed, names, args)


@settings(max_examples=30)
@given(
    dtype=dtypes,
    n=sizes,
    seed=seeds,
    weight_decay=st.sampled_from([0.0, 0.01]),
    decoupled=st.booleans(),
    amsgrad=st.booleans(),
    maximize=st.booleans(),
)
def test_adam_step_matches_reference(
    dtype, n, seed, weight_decay, decoupled, amsgrad, maximize, device
):
    names = ("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def args(v, step):
        vmax = v["max_exp_avg_sq"] if amsgrad else None
        return (v["param"], v["grad"], v["exp_avg"], v["exp_avg_sq"], vmax, step, 1e-3,
                0.9, 0.999, 1e-8, weight_decay, decoupled, amsgrad, maximize)  # fmt: skip

    run_steps("adam_step", dtype, n, seed, names, args)


@settings(max_examples=30)
@given(
    dtype=dtypes,
    n=sizes,
    seed=seeds,
    weight_decay=st.sampled_from([0.0, 0.01]),
    momentum=st.sampled_from([0.0, 0.9]),
    centered=st.booleans(),
    maximize=st.booleans(),
)
def test_rmsprop_step_matches_reference(
    dtype, n, seed, weight_decay, momentum, centered, maximize, device
):
    names = ("param", "square_avg", "momentum_buffer", "grad_avg")

    def args(v, step):
        buf = v["momentum_buffer"] if momentum else None
        avg = v["grad_avg"] if centered else None
        return (v["param"], v["grad"], v["square_avg"], buf, avg, 0.01, 0.99, 1e-8,
                weight_decay, momentum, centered, maximize)  # fmt: skip

    run_steps("rmsprop_step", dtype, n, seed, names, args)


@settings(max_examples=30)
@given(
    dtype=dtypes,
    n=sizes,
    seed=seeds,
    lr_decay=st.sampled_from([0.0, 0.1]),
    weight_decay=st.sampled_from([0.0, 0.01]),
    maximize=st.booleans(),
)
def test_adagrad_step_matches_reference(dtype, n, seed, lr_decay, weight_decay, maximize, device):
    names = ("param", "state_sum")

    def args(v, step):
        return (v["param"], v["grad"], v["state_sum"], step, 0.01, lr_decay, weight_decay,
                1e-10, maximize)  # fmt: skip

    run_steps("adagrad_step", dtype, n, seed, names, args)


@settings(max_examples=30)
@given(
    dtype=dtypes,
    n=sizes,
    seed=seeds,
    weight_decay=st.sampled_from([0.0, 0.01]),
    maximize=st.booleans(),
)
def test_adadelta_step_matches_reference(dtype, n, seed, weight_decay, maximize, device):
    names = ("param", "square_avg", "acc_delta")

    def args(v, step):
        return (v["param"], v["grad"], v["square_avg"], v["acc_delta"], 1.0, 0.9, 1e-6,
                weight_decay, maximize)  # fmt: skip

    run_steps("adadelta_step", dtype, n, seed, names, args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_parameters_match_reference(dtype, device):
    """40,000 elements: the OpenMP path, with every option that adds work switched on."""
    n = 40_000
    test_sgd_step_matches_reference.hypothesis.inner_test(
        dtype, n, 1, 0.01, 0.9, 0.1, True, False, device
    )
    test_adam_step_matches_reference.hypothesis.inner_test(
        dtype, n, 2, 0.01, False, True, True, device
    )
    test_rmsprop_step_matches_reference.hypothesis.inner_test(
        dtype, n, 3, 0.01, 0.9, True, False, device
    )
    test_adagrad_step_matches_reference.hypothesis.inner_test(dtype, n, 4, 0.1, 0.01, False, device)
    test_adadelta_step_matches_reference.hypothesis.inner_test(dtype, n, 5, 0.01, True, device)


def test_integer_parameters_are_refused(device):
    p = Strided(np.zeros(3, np.int64), (3,), (1,), 0)
    with pytest.raises(TypeError, match="float32"):
        FAST.sgd_step(p, p, None, 0.1, 0.0, 0.0, 0.0, False, False, True)
