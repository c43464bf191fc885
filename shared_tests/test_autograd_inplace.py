"""In-place operations, version counters and the errors autograd raises.

Every tensor's storage carries a version counter that each in-place operation
bumps, shared by all views of that storage. A node that saved a tensor remembers
its version and refuses to run backward when it changed: PyTorch's answer to
mutation is an error, never a silent copy.

Every test makes its tensors on the device under test (conftest's
``default_device``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


def leaf(T, values, dtype=None):
    return T.tensor(values, dtype=dtype or T.float64, requires_grad=True)


# ---------------------------------------------------------------------- versions
def test_version_counter_increments_on_inplace_ops():
    t = gt.zeros(3)
    assert t._version == 0
    t.add_(1)
    assert t._version == 1
    t.mul_(2)
    assert t._version == 2
    t += 1
    assert t._version == 3
    (t + 1).exp()  # out-of-place ops leave it alone
    assert t._version == 3


def test_version_counter_shared_with_views():
    t = gt.zeros(2, 3)
    row = t[1]
    col = t[:, 0]
    flat = t.view(6)
    row.mul_(2)
    assert t._version == row._version == col._version == flat._version == 1
    flat.add_(1)
    assert t._version == row._version == col._version == 2
    before = t._version
    t[0, 0] = 5.0
    assert t._version > before
    assert row._version == t._version
    before = t._version
    t[gt.tensor([0, 1])] = 1.0
    assert t._version > before


def test_version_counter_not_shared_with_copies():
    t = gt.zeros(3)
    c = t.clone()
    c.add_(1)
    assert t._version == 0


# -------------------------------------------------------------------- the errors
@pytest.mark.errors
@pytest.mark.parametrize(
    "stmt",
    ["x.add_(1)", "x.mul_(2)", "x.zero_()", "x += 1", "x.exp_()"],
)
def test_inplace_on_leaf_requiring_grad(stmt):
    def program(T):
        x = leaf(T, [1.0, 2.0, 3.0])
        exec(stmt, {"x": x})

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation.",
    )


@pytest.mark.errors
def test_setitem_on_leaf_requiring_grad():
    def program(T):
        x = leaf(T, [1.0, 2.0, 3.0])
        x[0] = 5.0

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="a view of a leaf Variable that requires grad is being used in an in-place "
        "operation.",
    )


@pytest.mark.errors
@pytest.mark.parametrize("case", ["exp_result", "mul_input", "detached_alias", "view_of_saved"])
def test_modified_saved_tensor(case):
    def program(T):
        x = leaf(T, [1.0, 2.0, 3.0])
        if case == "exp_result":  # exp saves its result
            y = x.exp()
            y.add_(1)
            out = y.sum()
        elif case == "mul_input":  # a * a saves a
            a = x * 1
            out = (a * a).sum()
            a.add_(1)
        elif case == "detached_alias":  # detach shares the version counter
            y = x.exp()
            y.detach().zero_()
            out = y.sum()
        else:  # writing through a view bumps its base's version
            a = x * 1
            out = (a * a).sum()
            a[1:].mul_(2)
        out.backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="one of the variables needed for gradient computation has been modified by an "
        "inplace operation",
    )


@pytest.mark.errors
def test_second_backward_without_retain_graph():
    def program(T):
        x = leaf(T, [1.0, 2.0])
        y = (x * x).sum()
        y.backward()
        y.backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="Trying to backward through the graph a second time",
    )


@pytest.mark.errors
def test_second_backward_through_shared_subgraph():
    def program(T):
        x = leaf(T, [1.0, 2.0])
        h = x.exp()
        (h * 2).sum().backward()
        (h * 3).sum().backward()  # ExpBackward0's saved result is gone

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="Trying to backward through the graph a second time",
    )


def test_second_backward_through_graph_without_saved_tensors_is_allowed():
    # PyTorch frees saved tensors, not the graph: add and sum save none.
    x = leaf(gt, [1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert_close(x.grad, np.array([2.0, 2.0]))


@pytest.mark.errors
def test_backward_on_tensor_without_grad():
    assert_same_error(
        lambda: gt.ones(2).sum().backward(),
        lambda: torch.ones(2).sum().backward(),
        exc_type=RuntimeError,
        match="element 0 of tensors does not require grad and does not have a grad_fn",
    )
    assert_same_error(
        lambda: gt.autograd.grad(gt.ones(2).sum(), [gt.ones(2, requires_grad=True)]),
        lambda: torch.autograd.grad(torch.ones(2).sum(), [torch.ones(2, requires_grad=True)]),
        exc_type=RuntimeError,
        match="element 0 of tensors does not require grad and does not have a grad_fn",
    )


@pytest.mark.errors
def test_backward_on_detached_result():
    def program(T):
        x = leaf(T, [1.0])
        (x * 2).detach().sum().backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="element 0 of tensors does not require grad and does not have a grad_fn",
    )


@pytest.mark.errors
def test_non_scalar_backward_without_gradient():
    def program(T):
        x = leaf(T, [1.0, 2.0])
        (x * 2).backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="grad can be implicitly created only for scalar outputs",
    )


@pytest.mark.errors
def test_backward_gradient_of_wrong_shape():
    def program(T):
        x = leaf(T, [1.0, 2.0, 3.0])
        (x * 2).backward(T.ones(4, dtype=T.float64))

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match=r"Mismatch in shape: grad_output\[0\] has a shape of",
    )


# ------------------------------------------------------- in-place inside graphs
def test_inplace_on_non_leaf():
    x = leaf(gt, [1.0, 2.0, 3.0])
    y = x * 2
    y.add_(1)
    y.mul_(gt.tensor([1.0, -2.0, 3.0], dtype=gt.float64))
    y.sum().backward()
    assert_close(x.grad, 2 * np.array([1.0, -2.0, 3.0]))


def test_inplace_on_non_leaf_saving_itself():
    x = leaf(gt, [0.5, 1.0])
    y = x * 3
    y.mul_(2)
    y.exp_()  # saves its own result: d/dx exp(6x) = 6 exp(6x)
    y.sum().backward()
    assert_close(x.grad, 6 * np.exp(6 * np.array([0.5, 1.0])))


def test_inplace_mul_by_tensor_requiring_grad():
    # d(y * w)/dw needs y's value from before the in-place update.
    x = leaf(gt, [1.0, 2.0])
    w = gt.tensor(3.0, dtype=gt.float64, requires_grad=True)
    y = x * 1
    y.mul_(w)
    y.sum().backward()
    assert_close(x.grad, np.array([3.0, 3.0]))
    assert_close(w.grad, np.float64(3.0))


def test_inplace_div_by_tensor_requiring_grad():
    x = leaf(gt, [1.0, 2.0])
    w = gt.tensor(4.0, dtype=gt.float64, requires_grad=True)
    y = x * 1
    y.div_(w)
    y.sum().backward()
    assert_close(x.grad, np.array([0.25, 0.25]))
    assert_close(w.grad, np.float64(-3.0 / 16.0))


def test_inplace_mul_on_view_by_tensor_requiring_grad():
    x = leaf(gt, [[1.0, 2.0], [3.0, 4.0]])
    w = gt.tensor(2.0, dtype=gt.float64, requires_grad=True)
    y = x * 1
    y[0].mul_(w)
    y.sum().backward()
    assert_close(x.grad, np.array([[2.0, 2.0], [1.0, 1.0]]))
    assert_close(w.grad, np.float64(3.0))


def test_setitem_on_view_of_non_leaf():
    x = leaf(gt, [1.0, 2.0, 3.0])
    y = x * 1
    y[0] = 0
    assert not y.is_leaf and y.requires_grad
    y.sum().backward()
    assert_close(x.grad, np.array([0.0, 1.0, 1.0]))


def test_inplace_on_slice_view_of_non_leaf():
    x = leaf(gt, [[1.0, 2.0], [3.0, 4.0]])
    y = x * 1
    y[:, 1].mul_(5)
    y.sum().backward()
    assert_close(x.grad, np.array([[1.0, 5.0], [1.0, 5.0]]))


def test_setitem_makes_constant_require_grad():
    w = gt.tensor(2.0, dtype=gt.float64, requires_grad=True)
    z = gt.zeros(3, dtype=gt.float64)
    z[1] = w * 2
    assert z.requires_grad
    assert not z.is_leaf
    assert z.grad_fn is not None
    (z * gt.tensor([1.0, 10.0, 100.0], dtype=gt.float64)).sum().backward()
    assert_close(w.grad, np.float64(20.0))


def test_setitem_with_tensor_index_in_graph():
    x = leaf(gt, [1.0, 2.0, 3.0, 4.0])
    src = leaf(gt, [10.0, 20.0])
    y = x * 1
    y[gt.tensor([0, 2])] = src
    (y * gt.tensor([1.0, 2.0, 3.0, 4.0], dtype=gt.float64)).sum().backward()
    assert_close(x.grad, np.array([0.0, 2.0, 0.0, 4.0]))
    assert_close(src.grad, np.array([1.0, 3.0]))


@needs_torch
@pytest.mark.parametrize("case", range(5))
def test_inplace_programs_match_torch(case):
    def program(T):
        x = leaf(T, [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
        w = leaf(T, [1.0, 2.0, 3.0])
        if case == 0:
            y = x * w
            y[1] = y[0] * 2
            out = y.sum()
        elif case == 1:
            y = x.clone()
            y[:, 0].add_(w[0])
            y.t()[2].mul_(w[1])
            out = (y**2).sum()
        elif case == 2:
            y = x.exp()
            z = y * 1
            z.masked_fill_(x > 1.0, 0.0)
            out = (z * w).sum()
        elif case == 3:
            y = x + 0
            y[x < 0] = w[2]
            out = (y * y).sum()
        else:
            y = gt_or_torch_zeros(T)
            y[0, :] = x[1] * w
            y[1:] += x[:1]
            out = y.tanh().sum()
        out.backward()
        return out, x.grad, w.grad

    for mine, theirs in zip(program(gt), program(torch), strict=True):
        assert_close(mine, theirs, rtol=1e-9, atol=1e-12)


def gt_or_torch_zeros(T):
    return T.zeros(3, 3, dtype=T.float64)


# ------------------------------------------ in-place arithmetic without history
# add_, sub_, mul_ and div_ with nothing to record run their kernel straight
# into the target (inplace.binary_inplace): the same values, storage, version
# bump and errors as the general path.
@needs_torch
@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "__iadd__", "__imul__"])
@pytest.mark.parametrize("other", ["scalar", "row", "same", "self"])
def test_inplace_arithmetic_without_history(op, other):
    def program(T):
        x = T.arange(12, dtype=T.float32).reshape(3, 4) + 1
        operand = {
            "scalar": 2.5,
            "row": T.tensor([1.0, -2.0, 3.0, 0.5]),
            "same": T.ones(3, 4) * 3,
            "self": x,
        }[other]
        data = x.data_ptr() if T is gt else None
        result = getattr(x, op)(operand)
        assert result is x
        if T is gt:
            assert x.data_ptr() == data and x._version == 1
        return x

    assert_close(program(gt), program(torch))


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda T: T.arange(4).div_(2),  # true division of integers gives floats
        lambda T: T.tensor([True, False]).sub_(T.tensor([True, True])),
        lambda T: T.ones(2).sub_(T.tensor([True, False])),  # a fuzz finding
        lambda T: T.ones(2).sub_(True),
        lambda T: T.zeros(3).add_(T.ones(2)),
        lambda T: T.zeros(1).add_(T.ones(3)),  # the result would not fit in the target
        lambda T: T.zeros(2, 2, dtype=T.int64).mul_(1.5),
        lambda T: (lambda x: x[1:].add_(x[:-1]))(T.zeros(4)),  # partial overlap
        lambda T: T.zeros(3).expand(2, 3).add_(1),  # written elements share memory
    ],
)
def test_inplace_arithmetic_without_history_errors(call):
    assert_same_error(lambda: call(gt), lambda: call(torch))


def test_inplace_arithmetic_on_view_writes_the_base():
    base = gt.zeros(2, 3)
    base[1].add_(gt.tensor([1.0, 2.0, 3.0]))
    base.t()[0].mul_(5)  # a strided view
    assert base.tolist() == [[0.0, 0.0, 0.0], [5.0, 2.0, 3.0]]
    assert base._version == 2


# ---------------------------------------------------------- written into the target
def _with_history(values):
    w = gt.tensor(values, dtype=gt.float64, requires_grad=True)
    return w, w * 1.0  # a non-leaf with history


@pytest.mark.parametrize(
    "op, name, grad",
    [
        (lambda h, o: h.add_(o, alpha=2), "AddBackward0", [1.0, 1.0, 1.0]),
        (lambda h, o: h.sub_(o, alpha=3), "SubBackward0", [1.0, 1.0, 1.0]),
        (lambda h, o: h.mul_(o), "MulBackward0", [4.0, 5.0, 6.0]),
        (lambda h, o: h.div_(o), "DivBackward0", [0.25, 0.2, 1 / 6]),
        (lambda h, o: h.clamp_(1.5, 2.5), "ClampBackward1", [0.0, 1.0, 0.0]),
        (lambda h, o: h.fill_(7), "FillBackward0", [0.0, 0.0, 0.0]),
        (lambda h, o: h.copy_(o), "CopyBackwards", [0.0, 0.0, 0.0]),
    ],
)
def test_direct_inplace_write_records_the_ops_node_and_bumps_the_version_once(op, name, grad):
    w, h = _with_history([1.0, 2.0, 3.0])
    other = gt.tensor([4.0, 5.0, 6.0], dtype=gt.float64)
    before = h._version
    assert op(h, other) is h
    assert h._version == before + 1
    assert type(h.grad_fn).__name__ == name
    h.sum().backward()
    assert w.grad.tolist() == pytest.approx(grad)


def test_direct_inplace_write_keeps_the_old_values_a_gradient_needs():
    # mul_ by a tensor that requires grad: its gradient is the *old* h (PyTorch's original_self)
    w, h = _with_history([1.0, 2.0, 3.0])
    other = leaf(gt, [4.0, 5.0, 6.0])
    h.mul_(other)
    assert h.tolist() == [4.0, 10.0, 18.0]
    h.sum().backward()
    assert other.grad.tolist() == [1.0, 2.0, 3.0]
    assert w.grad.tolist() == [4.0, 5.0, 6.0]
    # x.mul_(x): both saved operands were the target
    w, h = _with_history([1.0, 2.0, 3.0])
    h.mul_(h)
    h.sum().backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


def test_direct_inplace_unary_saves_its_output_at_the_new_version():
    w, h = _with_history([0.0, 1.0, -2.0])
    h.exp_()  # saves its output, h, after the write: at h's new version
    h.sum().backward()
    assert w.grad.tolist() == pytest.approx(np.exp([0.0, 1.0, -2.0]).tolist())
    w, h = _with_history([0.0, 1.0, -2.0])
    h.relu_()
    h.add_(1)  # changes the output relu_ saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


@pytest.mark.errors
def test_direct_inplace_write_still_invalidates_saved_tensors():
    w, h = _with_history([1.0, 2.0])
    y = h * h  # saves h
    h.add_(gt.ones(2, dtype=gt.float64), alpha=2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.sum().backward()


def test_direct_inplace_write_on_a_view_rebases_the_base():
    w, h = _with_history([[1.0, 2.0], [3.0, 4.0]])
    h[1].add_(gt.tensor([10.0, 20.0], dtype=gt.float64), alpha=2)
    h[0].clamp_(max=1.5)
    assert h.tolist() == [[1.0, 1.5], [23.0, 44.0]]
    assert type(h.grad_fn).__name__ == "CopySlices"
    (h * h).sum().backward()
    assert w.grad.tolist() == [[2.0, 0.0], [46.0, 88.0]]


def test_direct_inplace_arithmetic_mixes_dtypes_as_pytorch():
    x = gt.tensor([1.0, 2.0])
    x.add_(gt.tensor([0.25, 0.5], dtype=gt.float64), alpha=2)  # computed in float64, cast back
    assert x.dtype is gt.float32 and x.tolist() == [1.5, 3.0]
    n = gt.tensor([1, 2, 3], dtype=gt.uint8)
    n.sub_(gt.tensor([2, 2, 2], dtype=gt.uint8), alpha=3)  # wraps around
    assert n.tolist() == [251, 252, 253]
    i = gt.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output"):
        i.add_(gt.tensor([0.5, 0.5]), alpha=2)
    assert i.tolist() == [1, 2]  # refused before anything was written


@needs_torch
@pytest.mark.parametrize(
    "program",
    [
        lambda T, h, o: h.add_(o, alpha=-1.5),
        lambda T, h, o: h.sub_(o[0], alpha=2),
        lambda T, h, o: h.mul_(o).div_(o + 1),
        lambda T, h, o: h.clamp_(min=0.2).sigmoid_(),
        lambda T, h, o: h.t().copy_(o.t()).exp_(),
        lambda T, h, o: h[0].fill_(3.0),
    ],
)
def test_direct_inplace_values_and_gradients_match_pytorch(program):
    def run(T):
        w = T.tensor([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], dtype=T.float64, requires_grad=True)
        o = T.tensor([[1.0, 2.0, -3.0], [0.5, 0.0, 4.0]], dtype=T.float64, requires_grad=True)
        h = w * 1.0
        program(T, h, o)
        (h * h).sum().backward()
        return h.detach(), w.grad, o.grad

    for actual, expected in zip(run(gt), run(torch)):
        if expected is None:  # o unused
            assert actual is None
        else:
            assert_close(actual, expected)


# ------------------------------------------------------ more ops written into the target
_IDX = [[1, 0, 2], [0, 2, 1]]


def _run_inplace_program(T, op) -> dict:
    """Run ``op(T, h, o)`` on a non-leaf ``h = w * 1.0`` under library ``T``
    (glasstorch or PyTorch), then backward through ``(h * h).sum()``: what an
    in-place op's comparison with PyTorch looks at."""
    w = T.tensor([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], dtype=T.float64, requires_grad=True)
    o = T.tensor([[1.0, 2.0, -3.0], [0.5, -1.5, 4.0]], dtype=T.float64, requires_grad=True)
    h = w * 1.0
    before = h._version
    result = op(T, h, o)
    record = {"version": h._version, "bumps": h._version - before, "returns_h": result is h}
    record["grad_fn"] = type(h.grad_fn).__name__
    (h * h).sum().backward()
    record["values"] = (h.detach(), w.grad, o.grad)
    return record


def _assert_same_values_and_gradients(ours: dict, theirs: dict) -> None:
    for actual, expected in zip(ours["values"], theirs["values"]):
        if expected is None:
            assert actual is None or not actual.abs().sum().item()
        else:
            assert_close(actual, expected)


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda T, h, o: h.pow_(2), "PowBackward0"),
        (lambda T, h, o: h.pow_(o.abs()), "PowBackward1"),
        (lambda T, h, o: h.square_(), "PowBackward0"),
        (lambda T, h, o: h.__ipow__(3), "PowBackward0"),
        (lambda T, h, o: h.remainder_(o), None),  # PyTorch: RemainderBackward1 for a tensor
        (lambda T, h, o: h.__imod__(1.25), "RemainderBackward0"),
        (lambda T, h, o: h.neg_(), "NegBackward0"),
        (lambda T, h, o: h.negative_(), "NegBackward0"),
        (lambda T, h, o: h.round_(), "RoundBackward0"),
        (lambda T, h, o: h.round_(decimals=1), "RoundBackward1"),
        (lambda T, h, o: h.sign_(), "SignBackward0"),
        (lambda T, h, o: h.ge_(o), "GeBackward1"),
        (lambda T, h, o: h.eq_(0.25), "EqBackward0"),
        (lambda T, h, o: h.masked_fill_(o > 0, 2.5), "MaskedFillBackward0"),
        (lambda T, h, o: h.masked_fill_(o[0] > 0, T.tensor(-1.0, dtype=T.float64)), None),
        (lambda T, h, o: h.scatter_(1, T.tensor(_IDX), o), "ScatterBackward0"),
        (lambda T, h, o: h.scatter_add_(1, T.tensor(_IDX), o), "ScatterAddBackward0"),
        (lambda T, h, o: h.index_add_(1, T.tensor([2, 0]), o[:, :2], alpha=2), None),
        (lambda T, h, o: h.index_copy_(0, T.tensor([1]), o[:1]), "IndexCopyBackward0"),
        (lambda T, h, o: h.index_put_((T.tensor([1, 0]),), o, accumulate=True), None),
        (lambda T, h, o: h.__setitem__((T.tensor([1, 0]), T.tensor([2, 2])), o[0, :2]), None),
        (lambda T, h, o: h.t().index_put_((T.tensor([2]),), o[0, :2]), None),  # a view
        (lambda T, h, o: T.nn.functional.relu(h, inplace=True), "ReluBackward0"),
        (lambda T, h, o: h[1].pow_(2), "CopySlices"),
    ],
)
def test_more_direct_inplace_ops_match_pytorch(op, name):
    if torch is None:
        pytest.importorskip("torch")
    ours, theirs = _run_inplace_program(gt, op), _run_inplace_program(torch, op)
    _assert_same_values_and_gradients(ours, theirs)
    assert ours["bumps"] == theirs["bumps"] == 1  # one version bump
    if name is not None:
        assert ours["grad_fn"] == theirs["grad_fn"] == name


def test_pow_by_a_tensor_keeps_the_old_values_and_its_output():
    w, h = _with_history([1.0, 2.0, 3.0])
    e = gt.tensor([2.0, 0.5, 1.0], dtype=gt.float64, requires_grad=True)
    h.pow_(e)
    assert h.tolist() == pytest.approx([1.0, 2**0.5, 3.0])
    h.sum().backward()
    assert w.grad.tolist() == pytest.approx([2.0, 0.5 * 2**-0.5, 1.0])  # e * old ** (e - 1)
    assert e.grad.tolist() == pytest.approx([0.0, 2**0.5 * np.log(2.0), 3 * np.log(3.0)])
    w, h = _with_history([1.0, 2.0])
    h.pow_(2)
    h.add_(1)  # PowBackward0 saved the old values, not h: backward still works
    h.sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_inplace_ops_without_gradients_write_and_keep_history():
    n = gt.tensor([7, -7, 9], dtype=gt.int32)
    assert n.floor_divide_(2).tolist() == [3, -4, 4] and n._version == 1
    n.remainder_(gt.tensor([2, 3, 5], dtype=gt.int32))
    assert n.tolist() == [1, 2, 4] and n._version == 2
    n.bitwise_xor_(6).__iand__(gt.tensor(3, dtype=gt.int32))
    assert n.tolist() == [3, 0, 2] and n._version == 4
    b = gt.tensor([True, False, True])
    b.logical_and_(gt.tensor([1.0, 1.0, 0.0])).logical_not_()
    assert b.tolist() == [False, True, True] and b._version == 2
    f = gt.tensor([0.5, 2.0, -1.0])
    f.lt_(1.0)
    assert f.dtype is gt.float32 and f.tolist() == [1.0, 0.0, 1.0]
    w, h = _with_history([1.0, 4.0])
    h.floor_divide_(3.0)  # no gradient: h keeps its history, as in PyTorch
    assert h.tolist() == [0.0, 1.0] and type(h.grad_fn).__name__ == "MulBackward0"


@pytest.mark.errors
def test_direct_inplace_ops_refuse_as_pytorch_before_writing():
    n = gt.tensor([4, 5])
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        n.pow_(0.5)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        n.remainder_(1.5)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        n.floor_divide_(0)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        n.pow_(-1)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        n.exp_()
    assert n.tolist() == [4, 5] and n._version == 0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        gt.ones(2, requires_grad=True).masked_fill_(gt.tensor([True, False]), 0.0)
    x = gt.zeros(4)
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        x[1:].pow_(x[:-1])


def test_random_fills_write_the_same_numbers_into_any_layout():
    for fill in (lambda t: t.uniform_(-1.0, 2.0), lambda t: t.normal_(1.0, 3.0)):
        gt.manual_seed(7)
        contiguous = fill(gt.empty(4, 6))
        gt.manual_seed(7)
        transposed = gt.empty(6, 4).t()
        assert fill(transposed) is transposed and transposed._version == 1
        gt.manual_seed(7)
        strided = gt.zeros(4, 12)[:, ::2]
        fill(strided)
        assert gt.equal(contiguous, transposed) and gt.equal(contiguous, strided)
    gt.manual_seed(7)
    drawn = (gt.rand(5, 3, dtype=gt.float64) < 0.4).float()
    gt.manual_seed(7)
    assert gt.equal(gt.empty(5, 3).bernoulli_(0.4), drawn)


def test_setitem_with_a_mask_fills_in_place():
    x = gt.tensor([1.0, -2.0, 3.0])
    x[x < 0] = 0.0
    assert x.tolist() == [1.0, 0.0, 3.0] and x._version == 1
    w, h = _with_history([1.0, -2.0, 3.0])
    h[h < 0] = 5.0
    assert type(h.grad_fn).__name__ == "IndexPutBackward0"
    h.sum().backward()
    assert w.grad.tolist() == [1.0, 0.0, 1.0]


# ------------------------------------------------- composed ops written into the target
def _silu(T, h):
    return T.nn.functional.silu(h, inplace=True)


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda T, h, o: h.lerp_(o, 0.3), "LerpBackward0"),
        (lambda T, h, o: h.lerp_(o[0], o.abs() / 5), "LerpBackward1"),
        (lambda T, h, o: h.addcmul_(o, o[1], value=2), "AddcmulBackward0"),
        (lambda T, h, o: h.addcdiv_(o, o.abs() + 1, value=-0.5), "AddcdivBackward0"),
        (lambda T, h, o: h.clamp_(o * 0, o.abs()), "ClampBackward0"),
        (lambda T, h, o: h.clip_(min=o[0]), "ClampBackward0"),
        (lambda T, h, o: h.clamp_min_(o), "ClampMinBackward1"),
        (lambda T, h, o: h.clamp_max_(o[1]), "ClampMaxBackward1"),
        (lambda T, h, o: h.fmod_(0.7), "FmodBackward0"),
        (lambda T, h, o: h.fmod_(o + 5), "FmodBackward1"),
        (lambda T, h, o: h.frac_(), "FracBackward0"),
        (lambda T, h, o: h.atan2_(o), "Atan2Backward0"),
        (lambda T, h, o: h.hypot_(o), "HypotBackward0"),
        (lambda T, h, o: h.copysign_(o), "CopysignBackward0"),
        (lambda T, h, o: h.copysign_(-1.0), "CopysignBackward1"),
        (lambda T, h, o: h.abs_().xlogy_(o.abs() + 0.5), "XlogyBackward0"),
        (lambda T, h, o: h.xlogy_(2.0), "XlogyBackward2"),
        (lambda T, h, o: h.mul_(0.1).add_(0.5).logit_(), "LogitBackward0"),
        (lambda T, h, o: h.mul_(0.1).add_(0.5).logit_(0.45), "LogitBackward0"),
        (lambda T, h, o: h.abs_().log2_(), "Log2Backward0"),
        (lambda T, h, o: h.abs_().log10_(), "Log10Backward0"),
        (lambda T, h, o: h.div_(0).nan_to_num_(posinf=7.0), "NanToNumBackward0"),
        (lambda T, h, o: h.deg2rad_(), "Deg2RadBackward0"),
        (lambda T, h, o: h.rad2deg_(), "Rad2DegBackward0"),
        (lambda T, h, o: h.index_fill_(1, T.tensor([0, -1]), 2.0), "IndexFillBackward0"),
        (lambda T, h, o: h.fill_diagonal_(3.0), "CopySlices"),
        (lambda T, h, o: h.tril_(), "TrilBackward0"),
        (lambda T, h, o: h.triu_(1), "TriuBackward0"),
        (lambda T, h, o: T.nn.functional.leaky_relu(h, 0.2, inplace=True), "LeakyReluBackward1"),
        (lambda T, h, o: T.nn.functional.elu(h, 0.7, inplace=True), "EluBackward1"),
        (lambda T, h, o: T.nn.functional.celu(h, 0.5, inplace=True), "CeluBackward1"),
        (lambda T, h, o: T.nn.functional.selu(h, inplace=True), "EluBackward1"),
        (lambda T, h, o: _silu(T, h), "SiluBackward0"),
        (lambda T, h, o: T.nn.functional.hardsigmoid(h * 2, inplace=True), None),
        (lambda T, h, o: T.nn.functional.hardsigmoid(h, inplace=True), "HardsigmoidBackward0"),
        (lambda T, h, o: T.nn.functional.hardswish(h, inplace=True), "HardswishBackward0"),
        (lambda T, h, o: T.nn.functional.mish(h, inplace=True), "MishBackward0"),
        (lambda T, h, o: T.nn.functional.hardtanh(h, -0.5, 1.0, inplace=True), "HardtanhBackward0"),
        (lambda T, h, o: T.nn.functional.relu6(h.mul_(3), inplace=True), "HardtanhBackward0"),
        (lambda T, h, o: T.nn.functional.rrelu(h, inplace=True), "RreluWithNoiseBackward1"),
        (lambda T, h, o: T.nn.functional.threshold(h, 0.3, -1.0, inplace=True), None),
        (lambda T, h, o: T.nn.LeakyReLU(0.1, inplace=True)(h), "LeakyReluBackward1"),
        (lambda T, h, o: T.nn.Hardtanh(inplace=True)(h), "HardtanhBackward0"),
        (lambda T, h, o: h[1].lerp_(o[0], 0.5), "CopySlices"),
        (lambda T, h, o: h.t()[0].addcmul_(o[0, :2], o[1, :2]), "CopySlices"),
    ],
)
def test_composed_inplace_ops_match_pytorch(op, name):
    if torch is None:
        pytest.importorskip("torch")
    ours, theirs = _run_inplace_program(gt, op), _run_inplace_program(torch, op)
    _assert_same_values_and_gradients(ours, theirs)
    assert ours["returns_h"] == theirs["returns_h"]  # the input itself comes back (or a view)
    assert ours["version"] == theirs["version"]  # the version counter, bumped as often
    if name is not None:
        assert ours["grad_fn"] == theirs["grad_fn"] == name


@pytest.mark.parametrize(
    "inplace, outofplace",
    [
        (lambda x, o: x.lerp_(o, 0.25), lambda x, o: gt.lerp(x, o, 0.25)),
        (lambda x, o: x.addcdiv_(o, o + 3, value=2), lambda x, o: gt.addcdiv(x, o, o + 3, value=2)),
        (lambda x, o: x.atan2_(o), lambda x, o: gt.atan2(x, o)),
        (lambda x, o: x.fmod_(o[0] + 2), lambda x, o: gt.fmod(x, o[0] + 2)),
        (lambda x, o: x.clamp_(o[0], o[0] + 1), lambda x, o: gt.clamp(x, o[0], o[0] + 1)),
        (
            lambda x, o: gt.nn.functional.elu(x, inplace=True),
            lambda x, o: gt.nn.functional.elu(x),
        ),
        (
            lambda x, o: gt.nn.functional.hardswish(x, inplace=True),
            lambda x, o: gt.nn.functional.hardswish(x),
        ),
    ],
)
def test_composed_inplace_ops_in_pieces_give_the_out_of_place_values(inplace, outofplace):
    # 3 x 7000 elements, transposed: written piece by piece (inplace.write_in_pieces)
    gt.manual_seed(3)
    x = (gt.randn(7000, 3, dtype=gt.float64) * 3).t()
    o = gt.randn(3, 7000, dtype=gt.float64) * 2
    expected = outofplace(x, o)
    data, version = x.data_ptr(), x._version
    assert inplace(x, o) is x
    assert x.data_ptr() == data and x._version == version + 1
    assert gt.equal(x, expected)


def test_composed_inplace_ops_cast_into_the_target_and_refuse_as_pytorch():
    x = gt.tensor([1.0, 2.0, 3.0])  # float32, a float64 operand: computed wide, cast back
    x.lerp_(gt.tensor([2.0, 2.0, 2.0], dtype=gt.float64), 0.5)
    assert x.dtype is gt.float32 and x.tolist() == [1.5, 2.0, 2.5]
    n = gt.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        n.atan2_(gt.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        n.addcmul_(gt.tensor([1.0]), gt.tensor([2.0]))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        gt.zeros(3).lerp_(gt.ones(2, 3), 0.5)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        gt.zeros(3).index_fill_(0, gt.tensor([3]), 1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        gt.zeros(2, 2, requires_grad=True).fill_diagonal_(1.0)
    assert n.tolist() == [1, 2, 3] and n._version == 0
    w, h = _with_history([1.0, -2.0])
    gt.nn.functional.leaky_relu(h, -0.5, inplace=True)
    with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation"):
        h.sum().backward()


def test_inplace_dropout_keeps_a_bool_mask_and_the_out_of_place_values():
    gt.manual_seed(11)
    x = gt.randn(50, 40)
    expected = gt.nn.functional.dropout(x, 0.3)
    gt.manual_seed(11)
    w = gt.randn(50, 40).requires_grad_()  # the same x, and the generator where it was
    h = w * 1.0
    assert gt.nn.functional.dropout(h, 0.3, inplace=True) is h
    assert gt.equal(h.detach(), expected) and type(h.grad_fn).__name__ == "MulBackward0"
    (h * 2).sum().backward()
    assert gt.equal(w.grad, (expected != 0).float() * (2 / 0.7))
