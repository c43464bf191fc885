"""A Python number written into a tensor must fit its dtype, as in PyTorch.

``fill_``, ``x[i] = v`` (basic and advanced keys), ``masked_fill`` and
clamp's bounds refuse a number the dtype cannot hold, with PyTorch's words,
instead of wrapping it around; an unsigned dtype still takes a negative int
down to minus its largest value (-3 is 253 for uint8), and a 0-d tensor value
is converted as a cast is, unchecked.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, torch

import glasstorch as gt

pytestmark = pytest.mark.errors


def _set_item(key):
    def write(lib, x, value):
        x[key(lib)] = value

    return write


def _mask(lib, x):
    return lib.tensor([True, False, True], device=x.device)


WRITES = {
    "fill_": lambda lib, x, value: x.fill_(value),
    "setitem-int": _set_item(lambda lib: 0),
    "setitem-slice": _set_item(lambda lib: slice(0, 2)),
    "setitem-index-tensor": _set_item(lambda lib: lib.tensor([0, 2])),
    "setitem-mask": _set_item(lambda lib: lib.tensor([True, False, True])),
    "masked_fill": lambda lib, x, value: x.masked_fill(_mask(lib, x), value),
    "masked_fill_": lambda lib, x, value: x.masked_fill_(_mask(lib, x), value),
}

#: (dtype, a number it cannot hold, PyTorch's C type name)
OVERFLOWS = [
    ("int32", 2**40, "int"),
    ("int32", -(2**40), "int"),
    ("int32", 1e20, "int"),
    ("int64", float("nan"), "int64_t"),
    ("uint8", 300, "uint8_t"),
    ("uint8", -256, "uint8_t"),
    ("float32", 1e300, "float"),
]


def _zeros(lib, dtype, device=None):
    kwargs = {} if device is None else {"device": device}
    return lib.zeros(3, dtype=getattr(lib, dtype), **kwargs)


def _on(lib, device):
    """``lib``'s tensor factories on ``device`` (glasstorch) or the CPU (PyTorch)."""
    if lib is gt:
        return lambda dtype: _zeros(gt, dtype, device)
    return lambda dtype: _zeros(torch, dtype)


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize(("dtype", "value", "c_type"), OVERFLOWS)
def test_a_number_that_does_not_fit_is_refused(write, dtype, value, c_type, device):
    pattern = f"^value cannot be converted to type {c_type} without overflow$"

    def attempt(lib):
        return lambda: write(lib, _on(lib, device)(dtype), value)

    assert_same_error(
        attempt(gt), attempt(torch) if torch else None, match=pattern, exc_type=RuntimeError
    )


#: What writing -3 into ``zeros(3, dtype=uint8)`` leaves there, for each write.
WRAPPED = {
    "fill_": [253, 253, 253],
    "setitem-int": [253, 0, 0],
    "setitem-slice": [253, 253, 0],
    "setitem-index-tensor": [253, 0, 253],
    "setitem-mask": [253, 0, 253],
    "masked_fill": [253, 0, 253],
    "masked_fill_": [253, 0, 253],
}


@pytest.mark.parametrize("name", WRAPPED)
def test_a_negative_int_wraps_around_an_unsigned_dtype(name, device):
    x = _zeros(gt, "uint8", device)
    result = WRITES[name](gt, x, -3)
    written = result if name == "masked_fill" else x  # the one out-of-place write
    assert_close(written, np.array(WRAPPED[name], dtype=np.uint8))
    if torch is not None:
        y = _zeros(torch, "uint8")
        torch_result = WRITES[name](torch, y, -3)
        assert (torch_result if name == "masked_fill" else y).tolist() == WRAPPED[name]


def test_a_tensor_value_is_cast_unchecked(device):
    x = gt.zeros(3, dtype=gt.int32, device=device)
    x.fill_(gt.tensor(2**40 + 7, device=device))
    assert_close(x, np.array([7, 7, 7], dtype=np.int32))


def test_an_int_beyond_int64_into_a_float_tensor(device):
    assert_same_error(
        lambda: gt.zeros(2, device=device).fill_(2**70),
        (lambda: torch.zeros(2).fill_(2**70)) if torch else None,
        match="int too big to convert",
        exc_type=OverflowError,
    )


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 3.4e38])
def test_float_tensors_take_inf_nan_and_their_largest_values(value, device):
    x = gt.zeros(2, device=device).fill_(value)
    assert_close(x, np.full(2, value, dtype=np.float32))
