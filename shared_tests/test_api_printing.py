"""``repr`` of large tensors (summarised with ``...``) and the wrapping of its suffixes."""

from __future__ import annotations

import pytest
from oracle import needs_torch, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.interop, needs_torch, pytest.mark.usefixtures("default_device")]

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


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.cpu_only(
    "the oracle is PyTorch on the CPU, whose repr has no device='cuda:0' suffix "
    "(test_cuda_device checks a CUDA tensor's repr)"
)
def test_repr_matches_pytorch(name):
    assert repr(CASES[name](gt)) == repr(CASES[name](torch))
