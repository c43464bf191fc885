"""``Tensor.__format__``: the f-strings training loops print losses with."""

from __future__ import annotations

import pytest
from oracle import assert_same_error, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("default_device")]


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
