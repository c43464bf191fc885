"""PyTorch's answers at edge values, one test per class of wrong answer a differential fuzzer found.

Each test checks a whole class (every op of a kind, every edge value), not the
one reproducer: closeness with infinities, repeated dims, var/std past their
degrees of freedom, all/any over ``()``, 0-d indices, clamp bounds on integers,
dtype= on 0-d running sums, signs of zero, bool result dtypes, second
derivatives through cross-entropy, partially overlapping in-place ops and IEEE
results in the reference tier.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_same_error, default_device, needs_torch, torch

import glasstorch as gt

INF, NAN = math.inf, math.nan
OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory"


def _assert_same_floats(actual, expected) -> None:
    """Values, NaNs and signs of zero all equal (a float32 ulp of slack elsewhere)."""
    assert_close(actual, expected)
    a, e = actual.detach().cpu().numpy().ravel(), expected.detach().cpu().numpy().ravel()
    zeros = (a == 0) & (e == 0)
    np.testing.assert_array_equal(np.signbit(a[zeros]), np.signbit(e[zeros]), "sign of zero")


def _both(fn, device="cpu"):
    """``fn`` applied to glasstorch (its tensors made on ``device``) and to PyTorch."""
    with default_device(device):
        ours = fn(gt)
    return ours, fn(torch)


# ------------------------------------------------------------------ isclose


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_infinities_close_only_to_the_same_infinity(equal_nan, device):
    values = [0.0, 1.0, -1.0, 1e30, INF, -INF, NAN]
    pairs = list(itertools.product(values, values))
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ours, theirs = _both(lambda m: m.isclose(m.tensor(a), m.tensor(b), equal_nan=equal_nan), device)
    assert_close(ours, theirs)
    assert gt.allclose(gt.tensor([1.0], device=device), gt.tensor([INF], device=device)) is False


@pytest.mark.errors
@needs_torch
def test_isclose_rejects_what_pytorch_rejects(device):
    for name in ("rtol", "atol"):
        options = {name: -1.0}
        assert_same_error(
            lambda options=options: gt.isclose(
                gt.ones(2, device=device), gt.ones(2, device=device), **options
            ),
            lambda options=options: torch.isclose(torch.ones(2), torch.ones(2), **options),
            match=f"{name} must be greater than or equal to zero",
        )
    assert_same_error(
        lambda: gt.isclose(gt.ones(2, device=device), gt.ones(2, dtype=gt.float64, device=device)),
        lambda: torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64)),
        match="Float did not match Double",
    )


# ----------------------------------------------------------- repeated dims


@pytest.mark.errors
@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.flip(x, (0, 0)),
        lambda m, x: m.flip(x, (1, -1)),
        lambda m, x: x.sum((0, -2)),
        lambda m, x: x.mean((1, 1)),
        lambda m, x: x.amax((0, 0)),
        lambda m, x: x.amin((1, -1)),
        lambda m, x: x.var((0, 0)),
        lambda m, x: x.std((1, 1)),
        lambda m, x: x.any((0, 0)),
        lambda m, x: x.all((1, 1)),
        lambda m, x: x.logsumexp((0, 0)),
        lambda m, x: x.count_nonzero((0, 0)),
    ],
)
def test_repeated_dims_are_an_error(call, device):
    assert_same_error(
        lambda: call(gt, gt.ones(2, 3, device=device)),
        lambda: call(torch, torch.ones(2, 3)),
        match="appears multiple times in the list of dims",
    )


@pytest.mark.indexing
@needs_torch
def test_flip_of_a_0d_tensor(device):
    ours, theirs = _both(lambda m: m.flip(m.tensor(3.0), (0,)), device)
    assert_close(ours, theirs)


# ------------------------------------------------------------- var and std


@pytest.mark.reduction
@needs_torch
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize(
    "shape, dim, correction",
    [((0,), None, 1), ((1,), None, 1), ((3,), None, 3), ((3,), None, 5), ((3,), None, 4.5),
     ((2, 0), 1, 1), ((2, 0), 0, 0), ((3,), None, 0.5), ((2, 3), (), 1)],
)  # fmt: skip
def test_var_std_past_the_degrees_of_freedom(name, shape, dim, correction, device):
    data = np.arange(float(np.prod(shape))).reshape(shape) ** 2

    def run(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(m.tensor(data, dtype=m.float32), name)(dim, correction=correction)

    ours, theirs = _both(run, device)
    _assert_same_floats(ours, theirs)


@pytest.mark.reduction
def test_var_warns_when_no_degrees_of_freedom_are_left(device):
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert math.isnan(gt.zeros(0, device=device).var().item())


# ------------------------------------------------------------- dim=() rules


@pytest.mark.reduction
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool", "int64"])
@pytest.mark.parametrize("name", ["all", "any", "sum", "amax", "amin", "mean"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_empty_dim_tuple(dtype, name, keepdim, device):
    data = np.array([[0, 2, 1], [3, 0, 0]])
    if name == "mean" and dtype != "float32":
        return  # mean needs a floating dtype (an error, tested elsewhere)
    ours, theirs = _both(
        lambda m: getattr(m.tensor(data).to(getattr(m, dtype)), name)((), keepdim=keepdim),
        device,
    )
    assert_close(ours, theirs)


# ---------------------------------------------------- dtype= of running sums


@pytest.mark.reduction
@needs_torch
@pytest.mark.parametrize("source", ["int64", "bool", "float32", "uint8"])
@pytest.mark.parametrize("dtype", [None, "float64", "int32"])
@pytest.mark.parametrize("shape", [(), (3,)])
def test_cumsum_sum_prod_honour_dtype(source, dtype, shape, device):
    data = np.ones(shape) * 3

    def run(m, op):
        x = m.tensor(data).to(getattr(m, source))
        kwargs = {} if dtype is None else {"dtype": getattr(m, dtype)}
        return getattr(x, op)(0, **kwargs)

    for op in ("cumsum", "sum", "prod"):
        ours, theirs = _both(lambda m, op=op: run(m, op), device)
        assert_close(ours, theirs)
    assert_same_error(
        lambda: gt.tensor(1.0, device=device).cumsum(1), lambda: torch.tensor(1.0).cumsum(1)
    )


# ---------------------------------------------------------------- indexing


def _index_item(m, item):
    kind, value = item
    return m.tensor(value) if kind == "tensor" else value


@pytest.mark.indexing
@needs_torch
def test_0d_tensor_bool_none_and_ellipsis_indices(device):
    items = [
        ("plain", None),
        ("plain", Ellipsis),
        ("plain", True),
        ("plain", False),
        ("plain", 1),
        ("plain", slice(None, 2)),
        ("tensor", 1),
        ("tensor", -1),
        ("tensor", True),
        ("tensor", False),
        ("tensor", [0, 2]),
    ]
    for count in (1, 2, 3):
        for key in itertools.product(items, repeat=count):
            if sum(item[1] is Ellipsis for item in key) > 1:
                continue  # PyTorch's handling of two ellipses is its own oddity
            try:
                expected = torch.arange(60).reshape(3, 5, 4)[
                    tuple(_index_item(torch, i) for i in key)
                ]
            except IndexError:
                continue
            with default_device(device):
                ours = gt.arange(60).reshape(3, 5, 4)[tuple(_index_item(gt, i) for i in key)]
            assert_close(ours, expected)


@pytest.mark.indexing
@needs_torch
def test_0d_integer_tensor_index_selects(device):
    ours, theirs = _both(lambda m: m.zeros(3, 5, 4)[..., m.tensor(1), None, m.tensor(True)], device)
    assert tuple(ours.shape) == tuple(theirs.shape)
    x = gt.arange(6.0, requires_grad=True, device=device)
    assert type(x[gt.tensor(2, device=device)].grad_fn).__name__ == "SelectBackward0"


# -------------------------------------------------------------------- clamp


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "bool", "float32"])
@pytest.mark.parametrize(
    "low, high",
    [(-5, 300), (300, None), (None, -1), (-5, None), (-255, None), (-256, None), (None, -300),
     (2.5, None), (None, 2.5), (5, 2), (7.5, 1.5), (-1.0, 300.0), (None, NAN), (True, None),
     (2**31, None), (-(2**31) - 1, None)],
)  # fmt: skip
def test_clamp_number_bounds_on_every_dtype(dtype, low, high, device):
    data = [0, 1, 5, 200] if dtype != "bool" else [True, False]

    def run(m):
        on = {"device": device} if m is gt else {}
        return m.tensor(data, **on).to(getattr(m, dtype)).clamp(low, high)

    try:
        expected = run(torch)
    except (RuntimeError, NotImplementedError):
        assert_same_error(lambda: run(gt), lambda: run(torch))
        return
    assert_close(run(gt), expected)


# ----------------------------------------------------------- signs of zero


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.0, 1e30, -1e30, INF, -INF, NAN]


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "op",
    ["neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "tanh",
     "sigmoid", "relu", "sign", "floor", "ceil", "round", "trunc", "square"],
)  # fmt: skip
def test_unary_special_values(op, dtype, device):
    ours, theirs = _both(
        lambda m: getattr(m, op)(m.tensor(SPECIAL, dtype=getattr(m, dtype))), device
    )
    _assert_same_floats(ours, theirs)


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "div", "pow", "remainder", "floor_divide", "maximum", "minimum"]
)
def test_binary_special_values(op, dtype, device):
    pairs = list(itertools.product(SPECIAL, SPECIAL))

    def run(m):
        a = m.tensor([p[0] for p in pairs], dtype=getattr(m, dtype))
        b = m.tensor([p[1] for p in pairs], dtype=getattr(m, dtype))
        return getattr(m, op)(a, b)

    _assert_same_floats(*_both(run, device))


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("op", ["pow", "remainder", "floor_divide", "div", "mul"])
@pytest.mark.parametrize("number", [-0.0, 0.0, -5.0, -1.0, 0.5, -0.5, 2.0, 3.0])
def test_special_values_against_a_number(op, number, device):
    ours, theirs = _both(
        lambda m: getattr(m, op)(m.tensor(SPECIAL, dtype=m.float64), number), device
    )
    _assert_same_floats(ours, theirs)


# ------------------------------------------------------------ bool results


@pytest.mark.dtype
@needs_torch
@pytest.mark.parametrize(
    "call",
    [lambda m, x: x.square(), lambda m, x: m.square(x), lambda m, x: x**2,
     lambda m, x: m.pow(x, 2.0), lambda m, x: 2**x, lambda m, x: x.sum(), lambda m, x: x.abs(),
     lambda m, x: -x, lambda m, x: m.pow(x, x), lambda m, x: m.remainder(x, x),
     lambda m, x: m.maximum(x, True), lambda m, x: x.relu(), lambda m, x: x.cumsum(0),
     lambda m, x: x.sign(), lambda m, x: x.exp()],
)  # fmt: skip
def test_bool_inputs_give_pytorch_dtypes_or_errors(call, device):
    try:
        expected = call(torch, torch.tensor([True, False]))
    except (RuntimeError, TypeError, NotImplementedError):
        assert_same_error(
            lambda: call(gt, gt.tensor([True, False], device=device)),
            lambda: call(torch, torch.tensor([True, False])),
        )
        return
    assert_close(call(gt, gt.tensor([True, False], device=device)), expected)


# -------------------------------------------------- second derivatives


def _second_derivative(m, loss_fn, data, direction):
    x = m.tensor(data, dtype=m.float64, requires_grad=True)
    (grad,) = m.autograd.grad(loss_fn(m, x), x, create_graph=True)
    (grad2,) = m.autograd.grad((grad * m.tensor(direction, dtype=m.float64)).sum(), x)
    return grad.detach(), grad2


LOSSES = {
    "mean": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([1, 0, 3])),
    "sum_weight": lambda m, x: m.nn.functional.cross_entropy(
        x,
        m.tensor([1, 0, 3]),
        weight=m.tensor([0.5, 1.0, 2.0, 1.5], dtype=m.float64),
        reduction="sum",
    ),
    "none_ignore": lambda m, x: (
        m.nn.functional.cross_entropy(x, m.tensor([1, 0, 3]), ignore_index=0, reduction="none")
        * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
    ).sum(),
    "nll": lambda m, x: m.nn.functional.nll_loss(
        m.nn.functional.log_softmax(x, 1), m.tensor([1, 0, 3])
    ),
    "softmax": lambda m, x: (m.nn.functional.softmax(x, 1) ** 2).sum(),
    "bce": lambda m, x: m.nn.functional.binary_cross_entropy(x.sigmoid(), x.detach() * 0 + 0.3),
    "linear": lambda m, x: (
        m.nn.functional.linear(x, x.detach() * 0.5 + 0.1, x.detach()[0, :3]) ** 2
    ).sum(),
    "gelu": lambda m, x: (m.nn.functional.gelu(x) ** 2).sum(),
    "silu": lambda m, x: (m.nn.functional.silu(x) ** 2).sum(),
}


@pytest.mark.autograd
@needs_torch
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_second_derivative_through_fused_functions(name, device):
    rng = np.random.default_rng(0)
    data, direction = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    with default_device(device):
        ours = _second_derivative(gt, LOSSES[name], data, direction)
    theirs = _second_derivative(torch, LOSSES[name], data, direction)
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])


@pytest.mark.autograd
def test_cross_entropy_passes_gradgradcheck(device):
    from glasstorch.autograd.gradcheck import gradgradcheck

    rng = np.random.default_rng(1)
    x = gt.tensor(rng.standard_normal((3, 4)), dtype=gt.float64, requires_grad=True, device=device)
    target = gt.tensor([2, 0, 1], device=device)
    assert gradgradcheck(lambda x: gt.nn.functional.cross_entropy(x, target), (x,))


# -------------------------------------------------- overlapping in place


def _setitem(x, key, value):
    x[key] = value
    return x


OVERLAPPING = {
    "shifted_copy": lambda m, x: _setitem(x, slice(1, None), x[:-1]),
    "shifted_copy_back": lambda m, x: _setitem(x, slice(None, -1), x[1:]),
    "copy_": lambda m, x: x[1:].copy_(x[:-1]),
    "add_": lambda m, x: x[1:].add_(x[:-1]),
    "transpose_add_": lambda m, x: x.view(2, 2).add_(x.view(2, 2).t()),
    "transpose_copy_": lambda m, x: x.view(2, 2).t().copy_(x.view(2, 2)),
    "mul_one_element": lambda m, x: x.mul_(x[:1]),
    "index_add_": lambda m, x: x.index_add_(0, m.tensor([0, 1]), x[1:3]),
    "clamp_": lambda m, x: x[1:].clamp_(x[:-1]),
    "advanced_setitem": lambda m, x: _setitem(x, m.tensor([1, 2]), x[:2]),
}

NOT_OVERLAPPING = {
    "same_view": lambda m, x: x.add_(x),
    "interleaved": lambda m, x: x[::2].add_(x[1::2]),
    "disjoint_halves": lambda m, x: x[:2].copy_(x[2:]),
    "flipped_copy": lambda m, x: x.copy_(x.flip(0)),
    "setitem_of_a_copy": lambda m, x: _setitem(x, slice(1, None), x[:-1] * 1),
}


@pytest.mark.errors
@needs_torch
@pytest.mark.parametrize("name", sorted(OVERLAPPING))
def test_partially_overlapping_inplace_is_refused(name, device):
    with default_device(device):
        assert_same_error(
            lambda: OVERLAPPING[name](gt, gt.arange(4.0)),
            lambda: OVERLAPPING[name](torch, torch.arange(4.0)),
            match=OVERLAP,
        )


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("name", sorted(NOT_OVERLAPPING))
def test_inplace_without_partial_overlap_computes(name, device):
    ours, theirs = _both(lambda m: NOT_OVERLAPPING[name](m, m.arange(4.0)), device)
    assert_close(ours, theirs)


# ------------------------------------------------------ IEEE in both tiers


@pytest.mark.linalg
@needs_torch
def test_matmul_and_sums_follow_ieee(device):
    cases = [
        lambda m: m.tensor([[INF, -INF]]) @ m.ones(2, 1),
        lambda m: m.tensor([[1e308, 1e308]], dtype=m.float64) @ m.ones(2, 1, dtype=m.float64),
        lambda m: m.tensor([INF, -INF]).sum(),
        lambda m: m.tensor([1e308, 1e308], dtype=m.float64).sum(),
        lambda m: m.tensor([[INF, -INF, 1.0]]).softmax(1),
        lambda m: m.tensor([[INF, -INF, 1.0]]).log_softmax(1),
        lambda m: m.nn.functional.cross_entropy(m.tensor([[INF, -INF]]), m.tensor([0])),
    ]
    for case in cases:
        ours, theirs = _both(case, device)
        assert_close(ours, theirs)


@pytest.mark.optim
@needs_torch
@pytest.mark.parametrize(
    "name, options",
    [("RMSprop", {"eps": 0.0, "centered": True}), ("RMSprop", {"eps": 0.0, "momentum": 0.9}),
     ("Adam", {"eps": 0.0}), ("Adagrad", {"eps": 0.0}), ("Adadelta", {"eps": 0.0})],
)  # fmt: skip
def test_optimizers_with_zero_eps_follow_ieee(name, options, device):
    def run(m):
        p = m.zeros(3, requires_grad=True)
        optimizer = getattr(m.optim, name)([p], lr=0.1, **options)
        for _ in range(2):
            p.grad = m.tensor([0.0, 1.0, -1.0])
            optimizer.step()
        return p.detach()

    assert_close(*_both(run, device))


@pytest.mark.math
@needs_torch
@pytest.mark.parametrize("low, high", [(0.0, 1.0), (-0.0, 1.0), (-1.0, 0.0), (-1.0, -0.0)])
def test_clamp_keeps_the_input_on_ties(low, high, device):
    ours, theirs = _both(lambda m: m.tensor([0.0, -0.0, 2.0, -2.0]).clamp(low, high), device)
    _assert_same_floats(ours, theirs)


@pytest.mark.errors
@needs_torch
@pytest.mark.parametrize(
    "source, dtype", [("int64", None), ("int64", "int64"), ("float32", "int32")]
)
def test_mean_names_the_dtype_it_cannot_use(source, dtype, device):
    def run(m):
        kwargs = {} if dtype is None else {"dtype": getattr(m, dtype)}
        on = {"device": device} if m is gt else {}
        return m.arange(3, **on).to(getattr(m, source)).mean(**kwargs)

    assert_same_error(lambda: run(gt), lambda: run(torch), match="could not infer output dtype")
    message = str(assert_same_error(lambda: run(gt), lambda: run(torch)))
    try:
        run(torch)
    except RuntimeError as error:
        assert message == str(error)
