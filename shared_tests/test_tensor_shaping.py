"""Joining, splitting and rearranging tensors against PyTorch: cat, hstack and the other stacks,
tensor_split, movedim, rot90 and flips, Tensor.unfold, repeat_interleave: values, shapes, which
results are views (strides and storage), and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from compare import both, floats
from oracle import assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.usefixtures("default_device")]


# -- cat of the legacy empty tensor, flip of a 0-d tensor
@pytest.mark.linalg
def test_cat_skips_legacy_empty_tensor():
    out = gt.cat([gt.zeros(0), gt.ones(2, 3), gt.zeros(0, dtype=gt.int64)], 1)
    assert_close(out, np.ones((2, 3), dtype="float32"))
    out = gt.cat([gt.ones(2, 3), gt.zeros(0)], -1)
    assert_close(out, np.ones((2, 3), dtype="float32"))


@pytest.mark.views
def test_flip_of_0d_tensor_and_softmax_of_empty_int_tensor():
    assert_close(gt.flip(gt.tensor(2.0), (0,)), 2.0)
    out = gt.softmax(gt.ones(0, 3, dtype=gt.int64), 0)
    assert_close(out, np.ones((0, 3), dtype="int64"))


# -- movedim, unfold, the stacks, tensor_split, rot90 and flips
@pytest.mark.math
@needs_torch
@pytest.mark.parametrize(
    "source, destination", [(0, -1), (-1, 0), ((0, 1), (2, 0)), ([1], [1]), ((0, 2), (1, 0))]
)
def test_movedim_is_a_view_like_pytorch(device, source, destination):
    x = floats(2, 3, 4)
    got = both(lambda T, x: T.movedim(x, source, destination), x, grad=True)
    mine = on_test_device(x)
    view = gt.moveaxis(mine, source, destination)
    assert view.stride() == torch.tensor(x).moveaxis(source, destination).stride()
    assert view.data_ptr() == mine.data_ptr()
    assert got.grad_fn.name() == "PermuteBackward0"


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("dimension, size, step", [(0, 2, 1), (1, 2, 2), (-1, 3, 1), (1, 1, 3)])
def test_unfold_is_a_view_like_pytorch(device, dimension, size, step):
    x = floats(3, 5)
    both(lambda T, x: x.unfold(dimension, size, step), x, grad=True)
    mine, theirs = on_test_device(x), torch.tensor(x)
    view, want = mine.unfold(dimension, size, step), theirs.unfold(dimension, size, step)
    assert view.stride() == want.stride() and view.storage_offset() == want.storage_offset()
    mine[0, 0] = 100.0  # shares storage
    assert view.flatten()[0].item() == 100.0
    y = on_test_device(floats(2, 6), requires_grad=True)
    assert gradcheck(lambda y: y.unfold(1, 3, 2), (y,))  # windows overlapping at one column
    z = on_test_device(floats(7), requires_grad=True)
    assert gradcheck(lambda z: z.unfold(0, 3, 1), (z,))


@pytest.mark.math
@needs_torch
def test_unfold_of_a_non_contiguous_tensor_and_a_scalar(device):
    x = floats(4, 6)
    both(lambda T, x: x.t().unfold(1, 2, 1), x, grad=True)
    both(lambda T, x: x.unfold(0, 1, 1), np.array(2.5))


# ======================================================================= joins


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacks_match_pytorch(device, name):
    for shapes in ([(3,), (3,)], [(2, 3), (2, 3)], [(), ()], [(2, 1, 3), (2, 1, 3)]):
        arrays = [floats(*s) for s in shapes]
        both(lambda T, *xs: getattr(T, name)(list(xs)), *arrays, grad=True)
    ints = [np.array([1, 2]), np.array([3, 4])]
    both(lambda T, *xs: getattr(T, name)(xs), *ints)


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("split", [1, 2, 3, 4, 6, [1, 3], [0, 2, 2, 5], [-1], (4, 1)])
def test_tensor_split_matches_pytorch(device, split):
    x = floats(5, 2)
    both(lambda T, x: T.tensor_split(x, split), x, grad=True)
    mine = on_test_device(x)
    for part in mine.tensor_split(split):  # the parts are views covering the tensor
        part.fill_(9.0)
    assert (mine == 9.0).all().item()
    both(lambda T, x: x.tensor_split(split, dim=1), floats(2, 5))
    both(lambda T, x: x.tensor_split(T.tensor(2)), x)
    both(lambda T, x: x.tensor_split(T.tensor([1, 3])), x)


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
def test_rot90_and_flips(device, k):
    x = floats(2, 3, 4)
    both(lambda T, x: T.rot90(x, k), x, grad=True)
    both(lambda T, x: x.rot90(k, [2, 0]), x)
    both(lambda T, x: (T.fliplr(x), x.flipud()), x)


@pytest.mark.math
@needs_torch
@pytest.mark.errors
def test_layout_errors():
    for fg, match in [
        (lambda T: T.movedim(T.zeros(2, 3), (0, 1), (0,)), "should contain the same"),
        (lambda T: T.movedim(T.zeros(2, 3), (0, 0), (0, 1)), r"repeated dim in `source`"),
        (lambda T: T.zeros(2, 3).unfold(1, 4, 1), "maximum size for tensor at dimension"),
        (lambda T: T.zeros(2, 3).unfold(1, 2, 0), "step is 0 but must be > 0"),
        (lambda T: T.rot90(T.zeros(2, 2), 1, [0]), "expected total rotation dims == 2"),
        (lambda T: T.rot90(T.zeros(2, 2), 1, [0, 0]), "rotation dims to be different"),
        (lambda T: T.rot90(T.zeros(2), 1, [0, 1]), "expected total dims >= 2"),
        (lambda T: T.fliplr(T.zeros(2)), "Input must be >= 2-d."),
        (lambda T: T.tensor_split(T.zeros(4), 0), "number of sections must be larger"),
    ]:
        assert_same_error(lambda fg=fg: fg(gt), lambda fg=fg: fg(torch), match=match)


# -- repeat_interleave and take_along_dim
def _host_refuses_8_tib() -> bool:
    """Whether this machine's allocator refuses 8 TiB at once (not with memory overcommit on)."""
    try:
        np.empty(2**40, dtype=np.int64)
    except MemoryError:
        return True
    return False


@pytest.mark.nn
@pytest.mark.errors
def test_repeat_interleave_too_large_fails_at_once():
    # The counts are never turned into a Python list: the result's allocation fails first.
    # On the CPU, whose allocator's words these are (a GPU says "CUDA out of memory").
    x = gt.tensor([1.0, 2.0], device="cpu")
    tx = torch.tensor([1.0, 2.0]) if torch is not None else None
    if _host_refuses_8_tib():
        for counts, nbytes in ((2**40, 8796093022208), ([2**40, 1], 8796093022216)):

            def ours(counts=counts):
                repeats = counts if isinstance(counts, int) else gt.tensor(counts, device="cpu")
                return gt.repeat_interleave(x, repeats)

            def theirs(counts=counts):
                repeats = counts if isinstance(counts, int) else torch.tensor(counts)
                return torch.repeat_interleave(tx, repeats)

            assert_same_error(
                ours,
                theirs if torch is not None else None,
                exc_type=RuntimeError,
                match=f"can't allocate memory: you tried to allocate {nbytes} bytes",
            )
    # Past int64 the size check words it, on any machine.
    assert_same_error(
        lambda: gt.repeat_interleave(gt.ones(1), 2**62),
        (lambda: torch.repeat_interleave(torch.ones(1), 2**62)) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"Storage size calculation overflowed with sizes=\[1, 4611686018427387904\]",
    )
    assert_same_error(
        lambda: gt.repeat_interleave(gt.tensor([2**62])),
        (lambda: torch.repeat_interleave(torch.tensor([2**62]))) if torch is not None else None,
        exc_type=RuntimeError,
        match=r"Storage size calculation overflowed with sizes=\[4611686018427387904\]",
    )
    for bad, message in (
        (gt.tensor([-1, 1]), "repeats can not be negative"),
        (-1, "Repeats must be non-negative"),
        (gt.tensor([1, 2, 3]), r"repeats must have the same size as input along dim"),
        (gt.tensor([[1, 2]]), "repeats must be 0-dim or 1-dim tensor"),
    ):
        with pytest.raises(RuntimeError, match=message):
            gt.repeat_interleave(x, bad)


@pytest.mark.nn
def test_repeat_interleave_counts_and_layout():
    # Empty rows anywhere, a one-element count, a 0-d input and a permuted one.
    assert gt.repeat_interleave(gt.tensor([0, 2, 0, 1, 0])).tolist() == [1, 1, 3]
    assert gt.repeat_interleave(gt.tensor([0, 0])).tolist() == []
    x = gt.tensor([[1, 2], [3, 4]])
    assert gt.repeat_interleave(x, gt.tensor([3]), dim=1).tolist() == [
        [1, 1, 1, 2, 2, 2],
        [3, 3, 3, 4, 4, 4],
    ]
    assert gt.repeat_interleave(gt.tensor(5), 3).tolist() == [5, 5, 5]
    y = gt.repeat_interleave(x.t(), 1, dim=0)
    assert y.tolist() == [[1, 3], [2, 4]] and y.stride() == (2, 1)
    assert y.data_ptr() != x.data_ptr()  # always a copy, as in PyTorch
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 4 but got 3"):
        gt.repeat_interleave(gt.tensor([1, 2]), 2, output_size=3)
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    gt.repeat_interleave(w, gt.tensor([2, 3])).sum().backward()
    assert w.grad.tolist() == [2.0, 3.0]


@pytest.mark.nn
def test_repeat_interleave_and_take_along_dim():
    x = gt.arange(6).reshape(2, 3)
    assert gt.repeat_interleave(x, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert x.repeat_interleave(gt.tensor([1, 2]), dim=0).tolist() == [[0, 1, 2], [3, 4, 5]] * 1 + [
        [3, 4, 5]
    ]
    assert gt.repeat_interleave(gt.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert gt.take_along_dim(x, gt.tensor([[2], [0]]), 1).tolist() == [[2], [3]]
    assert gt.take_along_dim(x, gt.tensor([5, 0])).tolist() == [5, 0]
