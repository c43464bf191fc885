"""``repr`` of large tensors (summarised with ``...``) and the wrapping of its suffixes."""

from __future__ import annotations

import pytest
from oracle import assert_same_error, needs_torch, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("default_device")]


# -- repr of large tensors

CASES = {
    "float_vector_2000": lambda m: m.arange(2000.0),
    "int_matrix_summarised": lambda m: m.arange(3000).reshape(100, 30),
    "int_3d_summarised": lambda m: m.arange(1001).reshape(7, 11, 13),
    "float_matrix_summarised_sci": lambda m: m.arange(2000.0).reshape(2, 1000) / 7,
    "bool_summarised": lambda m: m.arange(1500) % 3 == 0,
    "float64_summarised": lambda m: m.arange(1200, dtype=m.float64) / 3,
    "grad_fn_wraps": lambda m: m.arange(10.0, requires_grad=True) * 2,
    "grad_fn_after_rows": lambda m: m.arange(24.0).reshape(4, 6).requires_grad_() * 1.5,
    "grad_fn_after_long_vector": lambda m: m.arange(30.0).requires_grad_() * 1.5,
    "dtype_and_grad_fn": lambda m: m.arange(100, dtype=m.float64).requires_grad_() * 1,
    "requires_grad_fits": lambda m: m.ones(2, requires_grad=True),
    "dtype_wraps": lambda m: m.arange(20, dtype=m.int32) * 1000,
}


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.cpu_only(
    "the oracle is PyTorch on the CPU, whose repr has no device='cuda:0' suffix "
    "(test_cuda_device checks a CUDA tensor's repr)"
)
def test_repr_matches_pytorch(name):
    assert repr(CASES[name](gt)) == repr(CASES[name](torch))


# -- Tensor.__format__: the f-strings training loops print losses with
def _both(make, spec):
    """The formatted text on glasstorch and, when installed, on PyTorch."""
    ours = format(make(gt), spec)
    if torch is not None:
        assert ours == format(make(torch), spec)
    return ours


@pytest.mark.parametrize(
    "make, spec",
    [
        (lambda lib: lib.tensor(1.2345678), ".4f"),
        (lambda lib: lib.tensor(2.5), "+.2f"),
        (lambda lib: lib.tensor(0.000123, dtype=lib.float64), ".3e"),
        (lambda lib: lib.tensor(3), "04d"),
        (lambda lib: lib.tensor(7), ""),
        (lambda lib: lib.tensor(1.5), ""),
        (lambda lib: lib.tensor(True), ""),
        (lambda lib: lib.tensor(0.25, requires_grad=True) * 2, ".3f"),
        pytest.param(
            lambda lib: lib.tensor([1.5, 2.0]),
            "",
            marks=pytest.mark.cpu_only(
                "the oracle is PyTorch on the CPU, whose repr has no device='cuda:0' suffix"
            ),
        ),
    ],
)
def test_format_matches_pytorch(make, spec):
    _both(make, spec)


def test_format_in_fstrings_and_str_format():
    loss = gt.tensor(0.123456)
    assert f"{loss:.4f}" == "0.1235"
    assert "{:+.2f}".format(gt.tensor(-1.0)) == "-1.00"  # noqa: UP032 - the str.format path
    assert f"{gt.tensor(1.5)}" == "1.5"


@pytest.mark.errors
def test_format_spec_on_a_vector_is_refused():
    assert_same_error(
        lambda: format(gt.tensor([1.5, 2.0]), ".2f"),
        (lambda: format(torch.tensor([1.5, 2.0]), ".2f")) if torch is not None else None,
        exc_type=TypeError,
        match="unsupported format string passed to Tensor.__format__",
    )
