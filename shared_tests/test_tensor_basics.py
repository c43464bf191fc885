"""Tensor metadata: shape, size, dim, numel, dtype, device and requires_grad."""

from __future__ import annotations

import pytest

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.tensor, pytest.mark.usefixtures("default_device")]


def test_shape_size_dim_numel():
    x = gt.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4)
    assert isinstance(x.shape, tuple) and tuple(x.shape) == (2, 3, 4)
    assert x.shape[-1] == 4 and x.size(1) == 3 and x.size(-3) == 2
    assert x.dim() == 3 and x.ndim == 3
    assert x.numel() == 24 and gt.numel(x) == 24
    s = gt.tensor(1.0)
    assert s.shape == () and s.dim() == 0 and s.numel() == 1
    assert gt.zeros(2, 0).numel() == 0


def test_metadata_defaults(default_device):
    x = gt.tensor([1.0, 2.0])
    assert x.dtype == gt.float32
    assert str(x.device) == ("cpu" if default_device == "cpu" else "cuda:0")
    assert x.requires_grad is False
    assert x.is_leaf
    assert isinstance(x, gt.Tensor) and gt.is_tensor(x) and not gt.is_tensor([1.0])
    assert x.stride() == (1,) and x.stride(0) == 1 and x.storage_offset() == 0


def test_requires_grad_flag():
    w = gt.zeros(2, requires_grad=True)
    assert w.requires_grad
    x = gt.zeros(2)
    assert x.requires_grad_() is x and x.requires_grad
    assert gt.ones(2, 2, requires_grad=True).requires_grad
