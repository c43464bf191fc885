"""``backward`` and ``autograd.grad``: what ends up in ``.grad``, and when.

Gradients land in leaves only, accumulate over calls, keep the leaf's shape and
dtype however the forward pass broadcast and promoted, and can be built as a graph
themselves (``create_graph``) to take second derivatives.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, default_device, needs_torch, torch

import glasstorch as gt

# Every test makes its inputs on the device under test (conftest: --device).
pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("device")]

F64 = {"dtype": gt.float64}


def leaf(values, dtype=None):
    return gt.tensor(values, dtype=dtype or gt.float64, requires_grad=True, device=TEST_DEVICE)


# ------------------------------------------------------------------- backward()
def test_scalar_backward():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x).sum()
    assert x.grad is None
    y.backward()
    assert_close(x.grad, np.array([2.0, 4.0, 6.0]))


def test_backward_returns_none():
    x = leaf([1.0])
    assert (x * 3).sum().backward() is None


def test_backward_with_gradient_for_non_scalar(device):
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(gt.tensor([1.0, 0.5, -1.0], **F64, device=device))
    assert_close(x.grad, np.array([2.0, 2.0, -6.0]))

    w = leaf([[1.0, 2.0], [3.0, 4.0]])
    (w * 3).backward(gradient=gt.ones(2, 2, **F64, device=device))
    assert_close(w.grad, np.full((2, 2), 3.0))


def test_backward_on_0d_gradient_argument(device):
    x = leaf([1.0, 2.0])
    (x.sum() * 2).backward(gt.tensor(0.5, **F64, device=device))
    assert_close(x.grad, np.array([1.0, 1.0]))


def test_grads_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert_close(x.grad, np.array([3.0 + 2.0, 3.0 + 4.0]))
    x.grad.zero_()
    (x * 5).sum().backward()
    assert_close(x.grad, np.array([5.0, 5.0]))
    x.grad = None
    (x * 7).sum().backward()
    assert_close(x.grad, np.array([7.0, 7.0]))


def test_grad_accumulates_over_multiple_uses_in_one_graph():
    x = leaf([2.0])
    y = x * x + x * 3 + x.exp() + x
    y.sum().backward()
    assert_close(x.grad, np.array([2 * 2.0 + 3 + np.exp(2.0) + 1]))


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, np.array([4.0, 8.0]))


def test_non_leaf_grad_is_none_unless_retained():
    x = leaf([1.0, 2.0])
    h = x * 3
    r = x * 4
    r.retain_grad()
    (h * r).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert h.grad is None
    assert_close(r.grad, np.array([3.0, 6.0]))  # d(h*r)/dr = h
    assert r.retains_grad and not h.retains_grad
    assert_close(x.grad, np.array([24.0, 48.0]))  # 2 * 12 * x


def test_retain_grad_accumulates_like_a_leaf():
    x = leaf([1.0, 2.0])
    r = x * 2
    r.retain_grad()
    r.sum().backward(retain_graph=True)
    r.sum().backward()
    assert_close(r.grad, np.array([2.0, 2.0]))


def test_leaf_grad_is_a_plain_tensor():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    assert x.grad.requires_grad is False
    assert x.grad.grad_fn is None
    assert tuple(x.grad.shape) == (2,)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_then_second_order_via_backward():
    x = leaf([1.0, 2.0, 3.0])
    (x**3).sum().backward(create_graph=True)
    first = x.grad
    assert_close(first, 3 * np.array([1.0, 4.0, 9.0]))
    assert first.requires_grad
    assert first.grad_fn is not None
    x.grad = None
    first.sum().backward()
    assert_close(x.grad, 6 * np.array([1.0, 2.0, 3.0]))


def test_create_graph_through_chain_of_unary_ops():
    x = leaf([0.3, -0.7])
    (g,) = gt.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (gg,) = gt.autograd.grad(g.sum(), x)
    t = np.tanh(np.array([0.3, -0.7]))
    assert_close(g, 1 - t**2)
    assert_close(gg, -2 * t * (1 - t**2))


def test_backward_inputs_argument_limits_accumulation():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    assert_close(x.grad, np.array([3.0, 4.0]))
    assert w.grad is None


# ------------------------------------------------- broadcasting, dtype of grads
def test_broadcast_gradients_reduce_to_input_shape():
    x = leaf([1.0, 2.0, 3.0])
    y = leaf([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    (x * y).sum().backward()
    assert tuple(x.grad.shape) == (3,)
    assert_close(x.grad, np.array([3.0, 3.0, 3.0]))
    assert_close(y.grad, np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]))

    col = leaf([[1.0], [2.0]])
    row = leaf([[10.0, 20.0, 30.0]])
    (col + row * col).sum().backward()
    assert tuple(col.grad.shape) == (2, 1)
    assert tuple(row.grad.shape) == (1, 3)
    assert_close(col.grad, np.array([[3 + 60.0], [3 + 60.0]]))
    assert_close(row.grad, np.array([[3.0, 3.0, 3.0]]))


def test_broadcast_of_0d_tensor_gradient(device):
    s = gt.tensor(2.0, dtype=gt.float64, requires_grad=True, device=device)
    m = gt.tensor([[1.0, 2.0], [3.0, 4.0]], **F64, device=device)
    (s * m).sum().backward()
    assert tuple(s.grad.shape) == ()
    assert_close(s.grad, np.float64(10.0))


def test_expand_gradient_sums_back():
    v = leaf([1.0, 2.0])
    v.expand(3, 2).sum().backward()
    assert_close(v.grad, np.array([3.0, 3.0]))


def test_grad_dtype_follows_leaf_under_promotion(device):
    x = gt.tensor([1.0, 2.0], dtype=gt.float32, requires_grad=True, device=device)
    d = gt.tensor([0.5, 4.0], dtype=gt.float64, device=device)
    out = x * d
    assert out.dtype == gt.float64
    out.sum().backward()
    assert x.grad.dtype == gt.float32
    assert_close(x.grad, np.array([0.5, 4.0], dtype=np.float32))

    z = gt.tensor([1.0, 2.0], dtype=gt.float32, requires_grad=True, device=device)
    z.to(gt.float64).sum().backward()
    assert z.grad.dtype == gt.float32
    assert_close(z.grad, np.array([1.0, 1.0], dtype=np.float32))

    w = gt.tensor([1.0, 2.0], dtype=gt.float64, requires_grad=True, device=device)
    (w.float() * 3).sum().backward()
    assert w.grad.dtype == gt.float64
    assert_close(w.grad, np.array([3.0, 3.0]))


def test_float32_grads_with_python_scalars_stay_float32(device):
    x = gt.tensor([1.0, 2.0], requires_grad=True, device=device)
    (x * 2.5 + 1).sum().backward()
    assert x.grad.dtype == gt.float32
    assert_close(x.grad, np.array([2.5, 2.5], dtype=np.float32))


# ---------------------------------------------------------------- autograd.grad
def test_autograd_grad_returns_tuple_and_leaves_dot_grad_alone():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    grads = gt.autograd.grad(y, x)
    assert isinstance(grads, tuple) and len(grads) == 1
    assert_close(grads[0], np.array([2.0, 4.0]))
    assert x.grad is None


def test_autograd_grad_multiple_inputs_and_grad_outputs(device):
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 5.0])
    y = x * w
    gx, gw = gt.autograd.grad(
        [y], [x, w], grad_outputs=[gt.tensor([1.0, -1.0], **F64, device=device)]
    )
    assert_close(gx, np.array([3.0, -5.0]))
    assert_close(gw, np.array([1.0, -2.0]))
    assert x.grad is None and w.grad is None


def test_autograd_grad_of_several_outputs_sums_contributions():
    x = leaf([1.0, 2.0])
    a = (x * 2).sum()
    b = (x * x).sum()
    (g,) = gt.autograd.grad([a, b], [x])
    assert_close(g, np.array([2 + 2.0, 2 + 4.0]))


def test_autograd_grad_of_non_leaf_input():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = gt.autograd.grad(y, h)
    assert_close(gh, np.array([6.0, 12.0]))


def test_autograd_grad_allow_unused():
    x = leaf([1.0, 2.0])
    unused = leaf([1.0])
    y = (x * 2).sum()
    gx, gu = gt.autograd.grad(y, [x, unused], allow_unused=True)
    assert_close(gx, np.array([2.0, 2.0]))
    assert gu is None


@pytest.mark.errors
def test_autograd_grad_unused_input_raises(device):
    def program(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        unused = T.tensor([1.0], requires_grad=True)
        return T.autograd.grad((x * 2).sum(), [x, unused])

    with default_device(device):
        assert_same_error(
            lambda: program(gt),
            lambda: program(torch),
            exc_type=RuntimeError,
            match="appears to not have been used in the graph",
        )


def test_autograd_grad_retain_graph_and_create_graph(device):
    x = leaf([1.0, 2.0])
    y = (x**3).sum()
    (g1,) = gt.autograd.grad(y, x, retain_graph=True)
    (g2,) = gt.autograd.grad(y, x)
    assert_close(g1, np.array([3.0, 12.0]))
    assert_close(g2, np.array([3.0, 12.0]))
    assert not g1.requires_grad

    y = (x**3).sum()
    (g,) = gt.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    (gg,) = gt.autograd.grad(g, x, grad_outputs=gt.ones(2, **F64, device=device))
    assert_close(gg, np.array([6.0, 12.0]))
    assert x.grad is None


@pytest.mark.errors
def test_autograd_grad_twice_without_retain_graph_raises(device):
    def program(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        T.autograd.grad(y, x)
        T.autograd.grad(y, x)

    with default_device(device):
        assert_same_error(
            lambda: program(gt),
            lambda: program(torch),
            exc_type=RuntimeError,
            match="Trying to backward through the graph a second time",
        )


@needs_torch
def test_mixed_program_matches_torch():
    def program(T):
        on = {"dtype": T.float64, "requires_grad": True}
        if T is gt:
            on["device"] = TEST_DEVICE
        x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], **on)
        w = T.tensor([[1.0, 0.5], [-0.5, 2.0], [0.25, 1.0]], **on)
        b = T.tensor([0.1, -0.2], **on)
        h = (x @ w + b).tanh()
        p = h.softmax(dim=1)
        loss = -(p[:, 0].log()).mean() + (w**2).sum() * 0.01
        loss.backward()
        return loss, x.grad, w.grad, b.grad

    for mine, theirs in zip(program(gt), program(torch), strict=True):
        assert_close(mine, theirs, rtol=1e-9, atol=1e-12)


# ------------------------------------------- a leaf's first gradient, not copied
class _Double(gt.autograd.Function):
    """2 * x, remembering (weakly) the gradient its backward hands out."""

    handed_out = None

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        result = grad * 2
        _Double.handed_out = weakref.ref(result)
        return result


def test_a_gradient_nobody_else_holds_becomes_grad_without_a_copy():
    x = leaf([1.0, 2.0, 3.0])
    _Double.apply(x).sum().backward()
    assert _Double.handed_out() is x.grad  # taken as it is, as PyTorch does
    assert_close(x.grad, np.array([2.0, 2.0, 2.0]))


def test_a_gradient_passed_to_backward_is_copied(device):
    x = leaf([1.0, 2.0])
    g = gt.tensor([1.0, 1.0], **F64, device=device)
    x.backward(g)
    g.add_(5.0)
    assert_close(x.grad, np.array([1.0, 1.0]))


def test_a_gradient_kept_by_a_leaf_hook_is_copied():
    x = leaf([1.0, 2.0])
    kept = []
    x.register_hook(kept.append)
    _Double.apply(x).sum().backward()
    kept[0].add_(5.0)
    assert_close(x.grad, np.array([2.0, 2.0]))


def test_a_gradient_kept_by_a_tensor_hook_upstream_is_copied():
    x = leaf([1.0, 2.0])
    y = x + 1  # AddBackward0 hands y's gradient object on to x unchanged
    kept = []
    y.register_hook(kept.append)
    (y * 3).sum().backward()
    kept[0].add_(5.0)
    assert_close(x.grad, np.array([3.0, 3.0]))


def test_two_leaves_fed_the_same_gradient_do_not_share_it():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    _Double.apply(a + b).sum().backward()  # one contiguous gradient, handed to both
    a.grad.add_(1.0)
    assert_close(b.grad, np.array([2.0, 2.0]))
    assert_close(a.grad, np.array([3.0, 3.0]))


def test_a_taken_gradient_then_accumulates_in_place():
    x = leaf([1.0, 2.0])
    for _ in range(3):
        _Double.apply(x).sum().backward()
    assert_close(x.grad, np.array([6.0, 6.0]))


def test_a_replacement_gradient_kept_by_its_hook_is_copied():
    x = leaf([1.0, 2.0])
    kept = []

    def replace_and_keep(grad):
        kept.append(grad * 10)
        return kept[-1]

    x.register_hook(replace_and_keep)
    x.register_hook(lambda grad: None)  # a later hook that changes nothing
    _Double.apply(x).sum().backward()
    kept[0].add_(5.0)
    assert_close(x.grad, np.array([20.0, 20.0]))


class _DetachedGrad(gt.autograd.Function):
    """Identity whose backward hands on the incoming gradient's memory (detached)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.detach()


def test_a_gradient_sharing_storage_with_a_held_tensor_is_copied(device):
    x = leaf([1.0, 2.0])
    g = gt.tensor([1.0, 1.0], **F64, device=device)
    _DetachedGrad.apply(x).backward(g)  # x's gradient is a detach() of g
    x.grad.add_(5.0)
    assert_close(g, np.array([1.0, 1.0]))


@pytest.mark.cpu_only("NumPy shares the memory of CPU tensors only")
def test_a_gradient_exported_to_numpy_by_a_hook_is_copied():
    x = leaf([1.0, 2.0])
    arrays = []
    x.register_hook(lambda grad: arrays.append(grad.numpy()))
    _Double.apply(x).sum().backward()
    x.grad.add_(5.0)
    np.testing.assert_array_equal(arrays[0], [2.0, 2.0])


MASKED_THEN_LOGSUMEXP = {
    "masked_fill": lambda lib, x, mask: x.masked_fill(mask, float("-inf")),
    "where": lambda lib, x, mask: lib.where(mask, lib.tensor(float("-inf")), x),
    "pow-0": lambda lib, x, mask: lib.where(mask, lib.tensor(float("-inf")), x) * x.pow(0),
}


@pytest.mark.parametrize("name", MASKED_THEN_LOGSUMEXP)
def test_a_masked_out_position_gets_zero_gradient_even_when_the_rest_is_nan(name, device):
    """A row masked entirely to -inf has a NaN logsumexp gradient; the positions
    the mask replaced get exactly 0, as in PyTorch (not NaN * 0)."""
    values = [[1.0, 2.0], [3.0, 4.0]]
    mask = [[True, True], [False, False]]

    def grad_of(lib, on):
        x = lib.tensor(values, device=on, requires_grad=True)
        masked = MASKED_THEN_LOGSUMEXP[name](lib, x, lib.tensor(mask, device=on))
        lib.logsumexp(masked, dim=1).sum().backward()
        return x.grad

    grad = grad_of(gt, device)
    softmax = np.exp([3.0, 4.0]) / np.exp([3.0, 4.0]).sum()
    assert_close(grad, np.array([[0.0, 0.0], list(softmax)], dtype=np.float32))
    if torch is not None:
        assert_close(grad, grad_of(torch, "cpu"))


# ------------------------------------------------------ deprecated spellings
def test_variable_returns_a_detached_tensor():
    """Variable(t) is t.detach(): the same memory, no history, requires_grad as asked."""
    from glasstorch.autograd import Variable

    x = leaf([1.0, 2.0])
    y = x * 2
    plain = Variable(y)
    assert type(plain) is gt.Tensor and plain.grad_fn is None and not plain.requires_grad
    assert plain.data_ptr() == y.data_ptr()
    trained = Variable(y, requires_grad=True)
    assert trained.is_leaf and trained.requires_grad
    (trained * trained).sum().backward()
    assert_close(trained.grad, np.array([4.0, 8.0]))
    assert x.grad is None  # cut from y's graph
    assert isinstance(gt.zeros(1), Variable)
    assert tuple(Variable().shape) == (0,)


def test_variable_errors_and_warnings_match_torch():
    from glasstorch.autograd import Variable

    assert_same_error(
        lambda: Variable([1.0]),
        lambda: torch.autograd.Variable([1.0]),
        match="Variable data has to be a tensor, but got list",
        exc_type=TypeError,
    )
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(gt.ones(1), volatile=True)


def test_backward_grad_variables_is_grad_tensors():
    x = leaf([1.0, 2.0])
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        gt.autograd.backward([x * 3], grad_variables=[gt.ones(2, **F64, device=TEST_DEVICE)])
    assert_close(x.grad, np.array([3.0, 3.0]))
    both = gt.ones(2, **F64, device=TEST_DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(
            lambda: gt.autograd.backward([x * 3], grad_tensors=[both], grad_variables=[both]),
            lambda: torch.autograd.backward(
                [torch.ones(2, requires_grad=True) * 3],
                grad_tensors=[torch.ones(2)],
                grad_variables=[torch.ones(2)],
            ),
            match="both passed to `backward\\(\\)`",
            exc_type=RuntimeError,
        )
