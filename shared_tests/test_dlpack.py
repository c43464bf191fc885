"""DLPack: zero-copy exchange with NumPy (and PyTorch), shown by equal data pointers."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from oracle import needs_torch, torch

import glasstorch as gt
from glasstorch.utils import dlpack

pytestmark = pytest.mark.interop

#: Most of DLPack's exchange here is with NumPy (and PyTorch's CPU tensors): zero-copy
#: sharing of host memory, which a device tensor does not take part in.
HOST_MEMORY = pytest.mark.cpu_only("zero-copy exchange of host memory with NumPy / PyTorch CPU")

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64"]


def sample(dtype_name: str) -> np.ndarray:
    return (np.arange(12) % 3).astype(dtype_name).reshape(3, 4)


def live_exports() -> int:
    gc.collect()
    return len(dlpack._exports)


# ------------------------------------------------------------- to NumPy
@HOST_MEMORY
@pytest.mark.parametrize("name", DTYPES)
def test_numpy_reads_a_tensor_without_copying(name):
    t = gt.from_numpy(sample(name).copy())
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(name) and a.shape == (3, 4)
    assert a.ctypes.data == t.data_ptr()
    assert np.array_equal(a, sample(name))


@HOST_MEMORY
@pytest.mark.parametrize(
    "make",
    [
        lambda: gt.arange(12.0).reshape(3, 4).t(),
        lambda: gt.arange(12.0).reshape(3, 4)[1:, ::2],
        lambda: gt.tensor([1.0, 2.0]).expand(3, 2),
        lambda: gt.tensor(5),
        lambda: gt.zeros(0, 3),
    ],
    ids=["transposed", "sliced", "expanded", "scalar", "empty"],
)
def test_numpy_keeps_strides_and_offset(make):
    t = make()
    a = np.from_dlpack(t)
    assert a.shape == tuple(t.shape)
    assert a.strides == tuple(s * t.element_size() for s in t.stride())
    if t.numel():
        assert a.ctypes.data == t.data_ptr()
    assert a.tolist() == t.tolist()


@HOST_MEMORY
def test_writes_show_on_both_sides():
    t = gt.zeros(2, 3)
    a = np.from_dlpack(t)
    a[1, 2] = 5.0
    t[0, 0] = 7.0
    assert t.tolist() == [[7.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    assert a.tolist() == t.tolist()


@HOST_MEMORY
def test_exported_memory_outlives_the_tensor():
    before = live_exports()
    t = gt.arange(4.0)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]  # the capsule's owner keeps the buffer alive
    assert live_exports() == before + 1
    del a
    assert live_exports() == before  # NumPy called the deleter


def test_an_unconsumed_capsule_releases_its_export(device):
    before = live_exports()
    capsule = gt.ones(3, device=device).__dlpack__()
    assert live_exports() == before + 1
    del capsule
    assert live_exports() == before


@HOST_MEMORY
def test_a_tensor_that_requires_grad_is_refused():
    with pytest.raises(BufferError, match=r"Can't export tensors that require gradient"):
        np.from_dlpack(gt.ones(2, requires_grad=True))
    assert np.from_dlpack(gt.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


@HOST_MEMORY
def test_copy_true_exports_a_copy():
    t = gt.arange(3.0)
    a = np.from_dlpack(t, copy=True)
    assert a.ctypes.data != t.data_ptr() and a.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_device(device):
    kind, index = gt.ones(1, device=device).__dlpack_device__()
    if device == "cpu":
        assert (kind, index) == (dlpack.DLDeviceType.kDLCPU, 0) and int(kind) == 1
    else:  # a CUDA tensor is kDLCUDA (2) on its device's index, as in PyTorch
        assert (kind, index) == (dlpack.DLDeviceType.kDLCUDA, 0) and int(kind) == 2


def test_capsule_kinds(device):
    one = gt.ones(1, device=device)
    assert "dltensor_versioned" in repr(one.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(one.__dlpack__())
    assert '"dltensor"' in repr(gt.utils.dlpack.to_dlpack(one))


# ----------------------------------------------------------- from NumPy
@HOST_MEMORY
@pytest.mark.parametrize("name", DTYPES)
def test_from_dlpack_shares_numpy_memory(name):
    a = sample(name)
    t = gt.from_dlpack(a)
    assert t.dtype == getattr(gt, name) and tuple(t.shape) == (3, 4)
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()


@HOST_MEMORY
def test_from_dlpack_keeps_numpy_strides():
    a = np.arange(24.0).reshape(4, 6)[1:, ::2].T
    t = gt.from_dlpack(a)
    assert t.stride() == tuple(s // 8 for s in a.strides)
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()
    t.mul_(-1)  # an in-place op writes into the array
    assert np.array_equal(a, -np.arange(24.0).reshape(4, 6)[1:, ::2].T)


@HOST_MEMORY
def test_from_dlpack_keeps_the_producer_alive():
    t = gt.from_dlpack(np.arange(5.0) * 2)  # nobody else holds the array
    gc.collect()
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


@HOST_MEMORY
def test_read_only_array_is_shared_as_in_pytorch():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = gt.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.tolist() == [0.0, 1.0, 2.0]


@HOST_MEMORY
def test_round_trip_through_our_own_capsule():
    t = gt.arange(6).reshape(2, 3)
    u = gt.from_dlpack(gt.utils.dlpack.to_dlpack(t))
    assert u.data_ptr() == t.data_ptr() and u.tolist() == t.tolist()
    assert gt.utils.dlpack.from_dlpack is gt.from_dlpack


@HOST_MEMORY
@pytest.mark.errors
def test_a_capsule_is_consumed_once():
    capsule = gt.utils.dlpack.to_dlpack(gt.ones(2))
    gt.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
        gt.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="invalid capsule"):
        gt.from_dlpack(3)


@HOST_MEMORY
@pytest.mark.errors
def test_unsupported_arrays_are_refused_clearly():
    with pytest.raises(TypeError, match="no dtype for DLPack type code 2 with 16 bits"):
        gt.from_dlpack(np.zeros(2, dtype=np.float16))
    with pytest.raises(ValueError, match="negative strides"):
        gt.from_dlpack(np.arange(4.0)[::-1])


# ------------------------------------------------------------- PyTorch
@HOST_MEMORY
@needs_torch
@pytest.mark.parametrize("name", DTYPES)
def test_pytorch_and_glasstorch_exchange_without_copying(name):
    t = gt.from_numpy(sample(name).copy())
    theirs = torch.from_dlpack(t)
    assert theirs.data_ptr() == t.data_ptr() and theirs.tolist() == t.tolist()
    assert str(theirs.dtype) == f"torch.{name}"
    back = gt.from_dlpack(theirs)
    assert back.data_ptr() == t.data_ptr() and back.stride() == theirs.stride()


@HOST_MEMORY
@needs_torch
def test_strided_views_agree_with_pytorch():
    ours = gt.arange(24.0).reshape(4, 6)[1:, ::2].t()
    theirs = torch.arange(24.0).reshape(4, 6)[1:, ::2].t()
    assert np.from_dlpack(ours).strides == np.from_dlpack(theirs).strides
    assert torch.from_dlpack(ours).stride() == theirs.stride()
    assert gt.from_dlpack(theirs).stride() == ours.stride()
    assert ours.__dlpack_device__() == theirs.__dlpack_device__()
