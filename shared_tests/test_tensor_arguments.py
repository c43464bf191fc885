"""``out=``, ``keepdims=`` and the legacy constructors (``torch.Tensor(2, 3)``, ``torch.LongTensor``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt

# Every tensor of these tests is made on the device under test (--device).
pytestmark = [pytest.mark.usefixtures("default_device")]


# -- out=, keepdims= and the legacy constructors

OUT_CASES = {
    "add": lambda m, out: m.add(m.ones(3), 2, out=out),
    "mul": lambda m, out: m.mul(m.arange(3.0), m.arange(3.0), out=out),
    "exp": lambda m, out: m.exp(m.arange(3.0), out=out),
    "sum": lambda m, out: m.sum(m.ones(3, 3), 0, out=out),
    "mean": lambda m, out: m.mean(m.ones(3, 3), dim=1, out=out),
    "matmul": lambda m, out: m.matmul(m.ones(3, 2), m.ones(2), out=out),
    "cat": lambda m, out: m.cat([m.ones(1), m.zeros(2)], out=out),
    "stack": lambda m, out: m.stack([m.tensor(1.0), m.tensor(2.0), m.tensor(3.0)], out=out),
    "clamp": lambda m, out: m.clamp(m.arange(3.0), max=1.0, out=out),
    "where": lambda m, out: m.where(m.arange(3) > 0, m.ones(3), m.zeros(3), out=out),
}


@pytest.mark.tensor
@needs_torch
@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_writes_into_the_given_tensor(name):
    out, tout = gt.empty(3), torch.empty(3)
    result = OUT_CASES[name](gt, out)
    OUT_CASES[name](torch, tout)
    assert_close(out, tout)
    assert result is out


@pytest.mark.tensor
@needs_torch
def test_out_casts_up_and_resizes_like_pytorch():
    out = gt.empty(3, dtype=gt.float64)
    gt.add(gt.ones(3), 1, out=out)
    assert_close(out, torch.add(torch.ones(3), 1, out=torch.empty(3, dtype=torch.float64)))
    empty = gt.empty(0)
    gt.add(gt.ones(3), 1, out=empty)  # no elements: resized without a warning
    assert empty.shape == (3,)
    wrong = gt.empty(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gt.add(gt.ones(3), 1, out=wrong)
    assert wrong.shape == (3,) and any("resized" in str(w.message) for w in caught)


@pytest.mark.tensor
@needs_torch
def test_out_with_a_tuple_of_outputs():
    values, indices = gt.empty(2), gt.empty(2, dtype=gt.int64)
    result = gt.max(gt.tensor([[1.0, 3.0], [4.0, 2.0]]), 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    assert_close(indices, torch.tensor([1, 0]))


@pytest.mark.tensor
@needs_torch
@pytest.mark.errors
def test_out_errors_match_pytorch():
    assert_same_error(
        lambda: gt.add(gt.ones(3), 1, out=gt.empty(3, dtype=gt.int64)),
        lambda: torch.add(torch.ones(3), 1, out=torch.empty(3, dtype=torch.int64)),
        match="result type Float can't be cast to the desired output type Long",
    )
    assert_same_error(
        lambda: gt.add(gt.ones(3, requires_grad=True), 1, out=gt.empty(3)),
        lambda: torch.add(torch.ones(3, requires_grad=True), 1, out=torch.empty(3)),
        match="out=... arguments don't support automatic differentiation",
    )


@pytest.mark.tensor
@needs_torch
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod", "std", "var", "logsumexp"])
def test_keepdims_is_keepdim(name):
    x = gt.arange(6.0).reshape(2, 3)
    tx = torch.arange(6.0).reshape(2, 3)
    assert_close(getattr(gt, name)(x, 1, keepdims=True), getattr(torch, name)(tx, 1, keepdims=True))
    assert_close(getattr(x, name)(0, keepdims=True), getattr(tx, name)(0, keepdims=True))


@pytest.mark.tensor
@needs_torch
def test_keepdims_on_max_argmax_all():
    x, tx = gt.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    assert_close(gt.max(x, 1, keepdims=True).values, torch.max(tx, 1, keepdims=True).values)
    assert_close(x.argmax(1, keepdims=True), tx.argmax(1, keepdims=True))
    assert_close(gt.all(x > 0, 1, keepdims=True), torch.all(tx > 0, 1, keepdims=True))


LEGACY_CASES = {
    "Tensor_data": lambda m: m.Tensor([1, 2]),
    "Tensor_sizes_shape": lambda m: m.Tensor(2, 3).shape,
    "Tensor_empty": lambda m: m.Tensor(),
    "Tensor_size": lambda m: m.Tensor(m.Size([2])).shape,
    "FloatTensor": lambda m: m.FloatTensor([1]),
    "LongTensor": lambda m: m.LongTensor([1.5, -2.5]),
    "BoolTensor": lambda m: m.BoolTensor([1, 0]),
    "IntTensor": lambda m: m.IntTensor([3]),
    "DoubleTensor": lambda m: m.DoubleTensor([1]),
    "ByteTensor": lambda m: m.ByteTensor([1, 255]),
}


@pytest.mark.tensor
@needs_torch
@pytest.mark.parametrize("name", sorted(LEGACY_CASES))
def test_legacy_constructors_match_pytorch(name):
    ours, theirs = LEGACY_CASES[name](gt), LEGACY_CASES[name](torch)
    if isinstance(theirs, torch.Tensor):
        assert_close(ours, theirs)
    else:
        assert tuple(ours) == tuple(theirs)


@pytest.mark.tensor
@needs_torch
def test_legacy_sizes_give_the_type_and_isinstance_checks_dtype():
    assert gt.IntTensor(2).dtype == gt.int32 and gt.Tensor(2, 3).dtype == gt.float32
    assert isinstance(gt.ones(2), gt.FloatTensor)
    assert not isinstance(gt.ones(2).long(), gt.FloatTensor)
    assert isinstance(gt.ones(2).long(), gt.LongTensor)
    assert isinstance(gt.Tensor([1.0]), gt.Tensor)


@pytest.mark.tensor
@needs_torch
@pytest.mark.errors
def test_legacy_constructor_refuses_a_number():
    assert_same_error(lambda: gt.Tensor(2.5), lambda: torch.Tensor(2.5), match="must be a sequence")


# -- NumPy's spellings (axis=, keepdims=), size= and the new_* factories, constants and inference_mode
@pytest.mark.nn
def test_numpy_spellings_axis_and_keepdims():
    a = gt.arange(6.0).reshape(2, 3)
    assert a.sum(axis=1, keepdims=True).tolist() == [[3.0], [12.0]]
    assert gt.sum(a, axis=0).tolist() == [3.0, 5.0, 7.0]
    assert a.argmax(axis=1).tolist() == [2, 2]
    assert a.cumsum(axis=1)[1].tolist() == [3.0, 7.0, 12.0]
    assert gt.cat([a, a], axis=0).shape == (4, 3)
    with pytest.raises(TypeError, match="alias"):
        a.sum(dim=0, axis=1)


@pytest.mark.nn
def test_factories_take_size_keyword_and_new_methods():
    assert gt.rand(size=(2, 3)).shape == (2, 3)
    assert gt.randn(size=[4]).shape == (4,)
    assert gt.zeros(size=(1, 2)).tolist() == [[0.0, 0.0]]
    x = gt.ones(2, dtype=gt.float64)
    assert x.new_zeros(2, 3).dtype == gt.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(2).tolist() == [1.0, 1.0]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_tensor([1, 2]).dtype == gt.float64
    assert x.new_empty(3, dtype=gt.int64).dtype == gt.int64


@pytest.mark.nn
def test_constants_limits_meshgrid_and_inference_mode():
    assert gt.pi == np.pi and gt.inf == float("inf") and gt.e == np.e
    assert gt.finfo(gt.float32).eps == float(np.finfo(np.float32).eps)
    assert gt.iinfo(gt.int32).max == 2**31 - 1
    x, y = gt.meshgrid(gt.arange(2), gt.arange(3), indexing="xy")
    assert x.tolist() == [[0, 1]] * 3 and y.tolist() == [[0, 0], [1, 1], [2, 2]]
    i, j = gt.meshgrid(gt.arange(2), gt.arange(3), indexing="ij")
    assert i.shape == (2, 3) and j[1].tolist() == [0, 1, 2]
    w = gt.ones(2, requires_grad=True)
    with gt.inference_mode():
        assert gt.is_inference_mode_enabled()
        assert not (w * 2).requires_grad
    assert not gt.is_inference_mode_enabled() and (w * 2).requires_grad
    assert gt.ones(2, 3, dtype=gt.int64).type("torch.FloatTensor").dtype == gt.float32
    assert gt.ones(3).nbytes == 12
    std, mean = gt.std_mean(gt.tensor([1.0, 2.0, 4.0]))
    assert abs(mean.item() - 7 / 3) < 1e-6 and abs(std.item() - np.std([1, 2, 4], ddof=1)) < 1e-6
