"""User-defined ``autograd.Function`` and the public ``gradcheck``/``gradgradcheck``.

A Function is a forward and a vector-Jacobian product written side by side; the
``ctx`` object carries what forward saved to backward. Built-in ops use the same
mechanism, so a custom op looks exactly like one in the graph.

Every test makes its tensors on the device under test (conftest's
``default_device``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, needs_torch, torch

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


def leaf(values, T=gt):
    return T.tensor(values, dtype=T.float64, requires_grad=True)


def make_functions(T):
    """The same custom Functions, subclassing ``T.autograd.Function``."""

    class MyExp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result

    class ScaledMul(T.autograd.Function):
        """out = a * b * k, with a plain-number argument k."""

        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            grad_a = grad * b * ctx.k if ctx.needs_input_grad[0] else None
            grad_b = grad * a * ctx.k if ctx.needs_input_grad[1] else None
            return grad_a, grad_b, None

    class Cube(T.autograd.Function):
        """Twice differentiable: backward is built from differentiable ops."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    class SortLike(T.autograd.Function):
        """Two outputs: values (differentiable) and positions (marked not)."""

        @staticmethod
        def forward(ctx, x):
            values = x * 2
            positions = T.arange(x.shape[0], dtype=x.dtype)
            ctx.mark_non_differentiable(positions)
            return values, positions

        @staticmethod
        def backward(ctx, grad_values, grad_positions):
            return grad_values * 2

    class WrongExp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.exp() * 1.5  # wrong on purpose

    class FirstOrderOnlyCube(T.autograd.Function):
        """Right first derivative, but it is not differentiable itself."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x.detach() ** 2

    class OnceScaledMul(T.autograd.Function):
        """out = a * b * k, its backward marked @once_differentiable; it notes the grad mode
        that backward ran under."""

        grad_mode_in_backward: list = []

        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            return a * b * k

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, grad):
            ctx._forward_cls.grad_mode_in_backward.append(T.is_grad_enabled())
            a, b = ctx.saved_tensors
            return grad * b * ctx.k, grad * a * ctx.k, None

    class TooFewGrads(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad

    return {name: cls for name, cls in locals().items() if isinstance(cls, type)}


FN = make_functions(gt)


def test_custom_function_forward_and_backward():
    x = leaf([0.0, 1.0, -2.0])
    y = FN["MyExp"].apply(x)
    assert_close(y, np.exp([0.0, 1.0, -2.0]))
    assert y.requires_grad and not y.is_leaf
    (y * gt.tensor([1.0, 2.0, 3.0], dtype=gt.float64)).sum().backward()
    assert_close(x.grad, np.exp([0.0, 1.0, -2.0]) * [1.0, 2.0, 3.0])


def test_custom_function_grad_fn_name_and_edges():
    x = leaf([1.0])
    y = FN["MyExp"].apply(x)
    assert type(y.grad_fn).__name__ == "MyExpBackward"
    assert y.grad_fn.name() == "MyExpBackward"
    ((node, index),) = y.grad_fn.next_functions
    assert type(node).__name__ == "AccumulateGrad" and index == 0
    assert node.variable is x
    z = FN["MyExp"].apply(x * 2)
    assert type(z.grad_fn.next_functions[0][0]).__name__ == "MulBackward0"


@needs_torch
def test_custom_function_names_match_torch():
    torch_fn = make_functions(torch)
    for name in ("MyExp", "Cube"):
        t = torch_fn[name].apply(leaf([1.0], torch))
        g = FN[name].apply(leaf([1.0]))
        assert type(g.grad_fn).__name__ == type(t.grad_fn).__name__ == f"{name}Backward"


def test_forward_runs_without_grad_mode():
    seen = []

    class Probe(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(gt.is_grad_enabled())
            inner = x * 2
            seen.append(inner.requires_grad)
            return inner

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    y = Probe.apply(leaf([1.0]))
    assert seen == [False, False]
    assert y.requires_grad


def test_non_tensor_arguments_and_needs_input_grad():
    a = leaf([1.0, 2.0])
    b = gt.tensor([3.0, 4.0], dtype=gt.float64)
    out = FN["ScaledMul"].apply(a, b, 0.5)
    out.sum().backward()
    assert_close(a.grad, np.array([1.5, 2.0]))
    assert b.grad is None

    a2 = leaf([1.0, 2.0])
    b2 = leaf([3.0, 4.0])
    (FN["ScaledMul"].apply(a2, b2, 2.0) * gt.tensor([1.0, -1.0], dtype=gt.float64)).sum().backward()
    assert_close(a2.grad, np.array([6.0, -8.0]))
    assert_close(b2.grad, np.array([2.0, -4.0]))


def test_needs_input_grad_values():
    recorded = []

    class Record(gt.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            recorded.append(tuple(ctx.needs_input_grad))
            return a * b * k

        @staticmethod
        def backward(ctx, grad):
            return grad, grad, None

    Record.apply(leaf([1.0]), gt.tensor([2.0], dtype=gt.float64), 3.0)
    Record.apply(gt.tensor([2.0], dtype=gt.float64), leaf([1.0]), 3.0)
    Record.apply(leaf([1.0]), leaf([1.0]), 3.0)
    assert recorded == [(True, False, False), (False, True, False), (True, True, False)]


def test_saved_tensors_round_trip():
    a = leaf([1.0, 2.0])
    b = leaf([3.0, 5.0])
    captured = {}

    class Save(gt.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            saved = ctx.saved_tensors
            captured["saved"] = saved
            sa, sb = saved
            return grad * sb, grad * sa

    Save.apply(a, b).sum().backward()
    saved = captured["saved"]
    assert isinstance(saved, tuple) and len(saved) == 2
    assert_close(saved[0], np.array([1.0, 2.0]))
    assert_close(saved[1], np.array([3.0, 5.0]))
    assert_close(a.grad, np.array([3.0, 5.0]))
    assert_close(b.grad, np.array([1.0, 2.0]))


def test_mark_non_differentiable():
    x = leaf([1.0, 2.0, 3.0])
    values, positions = FN["SortLike"].apply(x)
    assert values.requires_grad
    assert not positions.requires_grad
    (values * positions).sum().backward()
    assert_close(x.grad, np.array([0.0, 2.0, 4.0]))


def test_custom_function_double_backward():
    x = leaf([1.0, 2.0, -1.5])
    y = FN["Cube"].apply(x)
    (g,) = gt.autograd.grad(y.sum(), x, create_graph=True)
    assert_close(g, 3 * np.array([1.0, 4.0, 2.25]))
    assert g.requires_grad
    (gg,) = gt.autograd.grad(g.sum(), x)
    assert_close(gg, 6 * np.array([1.0, 2.0, -1.5]))


def test_custom_function_inside_a_larger_graph():
    x = leaf([0.5, -0.25])
    y = FN["Cube"].apply(x.tanh() * 2).exp().sum()
    y.backward()
    t = np.tanh([0.5, -0.25])
    u = 2 * t
    expected = np.exp(u**3) * 3 * u**2 * 2 * (1 - t**2)
    assert_close(x.grad, expected)


@pytest.mark.errors
def test_custom_function_second_backward_raises():
    def program(T):
        y = make_functions(T)["MyExp"].apply(leaf([1.0], T)).sum()
        y.backward()
        y.backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match="Trying to backward through the graph a second time",
    )


@pytest.mark.errors
def test_custom_function_wrong_number_of_grads():
    def program(T):
        fn = make_functions(T)["TooFewGrads"]
        fn.apply(leaf([1.0], T), leaf([2.0], T)).sum().backward()

    assert_same_error(
        lambda: program(gt),
        lambda: program(torch),
        exc_type=RuntimeError,
        match=r"function TooFewGradsBackward returned an incorrect number of gradients "
        r"\(expected 2, got 1\)",
    )


# ---------------------------------------------------------- gradcheck (public)
@pytest.mark.gradcheck
def test_gradcheck_passes_on_correct_functions():
    x = leaf([0.3, -0.2, 1.1])
    w = leaf([1.5, 0.5, -1.0])
    assert gt.autograd.gradcheck(FN["MyExp"].apply, (x,)) is True
    assert gt.autograd.gradcheck(lambda a, b: FN["ScaledMul"].apply(a, b, 0.7), (x, w)) is True
    assert gt.autograd.gradcheck(lambda a, b: (a * b).tanh().sum(), (x, w)) is True
    assert gt.autograd.gradcheck(FN["Cube"].apply, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.gradcheck
@pytest.mark.errors
def test_gradcheck_detects_wrong_backward():
    x = leaf([0.3, -0.2, 1.1])
    with pytest.raises(RuntimeError):
        gt.autograd.gradcheck(FN["WrongExp"].apply, (x,))
    assert gt.autograd.gradcheck(FN["WrongExp"].apply, (x,), raise_exception=False) is False


@needs_torch
@pytest.mark.gradcheck
@pytest.mark.errors
def test_gradcheck_error_type_matches_torch():
    x = leaf([0.3, -0.2, 1.1])
    assert_same_error(
        lambda: gt.autograd.gradcheck(FN["WrongExp"].apply, (x,)),
        lambda: torch.autograd.gradcheck(
            make_functions(torch)["WrongExp"].apply, (leaf([0.3, -0.2, 1.1], torch),)
        ),
        exc_type=RuntimeError,
        match="Jacobian mismatch",
    )


@pytest.mark.gradcheck
def test_gradgradcheck_passes_on_twice_differentiable_functions():
    x = leaf([0.3, -0.2, 1.1])
    assert gt.autograd.gradgradcheck(FN["Cube"].apply, (x,)) is True
    assert gt.autograd.gradgradcheck(lambda a: (a.sin() * a).sum(), (x,)) is True
    assert gt.autograd.gradgradcheck(FN["MyExp"].apply, (x,)) is True


@pytest.mark.gradcheck
@pytest.mark.errors
def test_gradgradcheck_detects_wrong_second_derivative():
    x = leaf([0.3, -0.2, 1.1])
    assert gt.autograd.gradcheck(FN["FirstOrderOnlyCube"].apply, (x,)) is True
    with pytest.raises(RuntimeError):
        gt.autograd.gradgradcheck(FN["FirstOrderOnlyCube"].apply, (x,))
    ok = gt.autograd.gradgradcheck(FN["FirstOrderOnlyCube"].apply, (x,), raise_exception=False)
    assert ok is False


# -- once_differentiable
def _once_scaled_mul(T, functions):
    a = T.tensor([1.0, -2.0, 0.5], dtype=T.float64, requires_grad=True)
    b = T.tensor([3.0, 4.0, -1.5], dtype=T.float64, requires_grad=True)
    return a, b, functions["OnceScaledMul"].apply(a, b, 2.0)


def test_once_differentiable_backward_runs_under_no_grad():
    a_values, b_values = np.array([1.0, -2.0, 0.5]), np.array([3.0, 4.0, -1.5])
    FN["OnceScaledMul"].grad_mode_in_backward.clear()
    a, b, y = _once_scaled_mul(gt, FN)
    y.sum().backward()  # y = 2 a b
    assert FN["OnceScaledMul"].grad_mode_in_backward == [False]
    assert_close(a.grad, 2.0 * b_values)
    assert_close(b.grad, 2.0 * a_values)
    # with create_graph too, backward runs with grad mode off
    a, b, y = _once_scaled_mul(gt, FN)
    (ga,) = gt.autograd.grad((y * y).sum(), (a,), create_graph=True)
    assert FN["OnceScaledMul"].grad_mode_in_backward == [False, False]
    assert_close(ga, 8.0 * a_values * b_values**2)  # d/da (2 a b)^2


def test_once_differentiable_refuses_a_second_derivative():
    a, b, y = _once_scaled_mul(gt, FN)
    ga, gb = gt.autograd.grad((y * y).sum(), (a, b), create_graph=True)
    assert ga.requires_grad and ga.grad_fn is gb.grad_fn
    assert type(ga.grad_fn).__name__ == "Error"
    with pytest.raises(
        RuntimeError,
        match="differentiate twice a function that was marked with @once_differentiable",
    ):
        (ga + gb).sum().backward()


@needs_torch
def test_once_differentiable_like_pytorch():
    TFN = make_functions(torch)
    for functions in (FN, TFN):
        functions["OnceScaledMul"].grad_mode_in_backward.clear()
    results = {}
    for T, functions in ((gt, FN), (torch, TFN)):
        a, b, y = _once_scaled_mul(T, functions)
        ga, gb = T.autograd.grad((y * y).sum(), (a, b), create_graph=True)
        # the upstream gradient of a plain sum needs no grad: no error node, as in PyTorch
        a2, b2, y2 = _once_scaled_mul(T, functions)
        (plain,) = T.autograd.grad(y2.sum(), (a2,), create_graph=True)
        results[T] = (ga, gb, type(ga.grad_fn).__name__, plain.requires_grad)
    ours, theirs = results[gt], results[torch]
    assert_close(ours[0], theirs[0].detach())
    assert_close(ours[1], theirs[1].detach())
    assert ours[2:] == theirs[2:]
    assert FN["OnceScaledMul"].grad_mode_in_backward == TFN["OnceScaledMul"].grad_mode_in_backward
    assert_same_error(
        lambda: (ours[0] + ours[1]).sum().backward(),
        lambda: (theirs[0] + theirs[1]).sum().backward(),
        match="^trying to differentiate twice a function that was marked with @once_differentiable$",
        exc_type=RuntimeError,
    )
