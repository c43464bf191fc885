"""The autograd graph as the program builds it: ``grad_fn`` names, ``next_functions``,
``is_leaf`` and how ``requires_grad`` spreads from inputs to outputs.

PyTorch records one node per differentiable operation the moment the operation
runs (define-by-run). Each node's class is named after the operation and the
overload that produced it (``SumBackward0`` for ``x.sum()``, ``SumBackward1`` for
``x.sum(dim)``), and ``next_functions`` points at the nodes that produced its
inputs: ``AccumulateGrad`` for a leaf, ``None`` for an input that needs no grad.

Every test makes its tensors on the device under test (conftest's
``default_device``): the graph is the same whichever device computes.
"""

from __future__ import annotations

import warnings

import pytest
from oracle import torch

import glasstorch as gt

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]


def node_name(node) -> str | None:
    """The class name of a graph node (``None`` for no node)."""
    return None if node is None else type(node).__name__


# ----------------------------------------------------------------- grad_fn names
# Each case builds one output from the same named inputs; the same lambda runs on
# glasstorch and on real PyTorch (``T`` is the module). The expected names below
# were produced by PyTorch 2.13; when PyTorch is installed the test asks it again.
def _inputs(T):
    f64 = T.float64
    x = T.tensor([[0.5, 1.5, 2.0], [1.0, 0.75, 1.25]], dtype=f64, requires_grad=True)
    y = T.tensor([[1.5, 0.25, 1.0], [0.5, 2.0, 0.75]], dtype=f64, requires_grad=True)
    v = T.tensor([0.5, 1.0, 1.5], dtype=f64, requires_grad=True)
    m = T.tensor([[1.0, 2.0], [0.5, 1.5], [2.5, 0.25]], dtype=f64, requires_grad=True)
    b = T.tensor(
        [[[1.0, 2.0, 0.5], [0.25, 1.5, 1.0]], [[2.0, 0.5, 1.0], [1.5, 0.75, 0.25]]],
        dtype=f64,
        requires_grad=True,
    )
    return x, y, v, m, b


NAME_CASES = {
    # arithmetic
    "add": (lambda T, x, y, v, m, b: x + y, "AddBackward0"),
    "add_scalar": (lambda T, x, y, v, m, b: x + 1.0, "AddBackward0"),
    "radd_scalar": (lambda T, x, y, v, m, b: 1.0 + x, "AddBackward0"),
    "sub": (lambda T, x, y, v, m, b: x - y, "SubBackward0"),
    "mul": (lambda T, x, y, v, m, b: x * y, "MulBackward0"),
    "mul_scalar": (lambda T, x, y, v, m, b: x * 2.0, "MulBackward0"),
    "div": (lambda T, x, y, v, m, b: x / y, "DivBackward0"),
    "div_scalar": (lambda T, x, y, v, m, b: x / 2.0, "DivBackward0"),
    "neg": (lambda T, x, y, v, m, b: -x, "NegBackward0"),
    "pow_scalar": (lambda T, x, y, v, m, b: x**2, "PowBackward0"),
    "pow_tensor": (lambda T, x, y, v, m, b: x**y, "PowBackward1"),
    "rpow": (lambda T, x, y, v, m, b: 2.0**x, "PowBackward2"),
    # unary
    "abs": (lambda T, x, y, v, m, b: x.abs(), "AbsBackward0"),
    "exp": (lambda T, x, y, v, m, b: x.exp(), "ExpBackward0"),
    "log": (lambda T, x, y, v, m, b: x.log(), "LogBackward0"),
    "log1p": (lambda T, x, y, v, m, b: x.log1p(), "Log1PBackward0"),
    "expm1": (lambda T, x, y, v, m, b: x.expm1(), "Expm1Backward0"),
    "sqrt": (lambda T, x, y, v, m, b: x.sqrt(), "SqrtBackward0"),
    "rsqrt": (lambda T, x, y, v, m, b: x.rsqrt(), "RsqrtBackward0"),
    "sin": (lambda T, x, y, v, m, b: x.sin(), "SinBackward0"),
    "cos": (lambda T, x, y, v, m, b: x.cos(), "CosBackward0"),
    "tanh": (lambda T, x, y, v, m, b: x.tanh(), "TanhBackward0"),
    "sigmoid": (lambda T, x, y, v, m, b: x.sigmoid(), "SigmoidBackward0"),
    "relu": (lambda T, x, y, v, m, b: T.relu(x), "ReluBackward0"),
    "clamp": (lambda T, x, y, v, m, b: x.clamp(0.6, 1.8), "ClampBackward1"),
    "clamp_min": (lambda T, x, y, v, m, b: x.clamp(min=0.6), "ClampBackward1"),
    "maximum": (lambda T, x, y, v, m, b: T.maximum(x, y), "MaximumBackward0"),
    "minimum": (lambda T, x, y, v, m, b: T.minimum(x, y), "MinimumBackward0"),
    "where": (lambda T, x, y, v, m, b: T.where(x > 1.0, x, y), "WhereBackward0"),
    "masked_fill": (lambda T, x, y, v, m, b: x.masked_fill(x > 1.0, 0.0), "MaskedFillBackward0"),
    # reductions
    "sum": (lambda T, x, y, v, m, b: x.sum(), "SumBackward0"),
    "sum_dim": (lambda T, x, y, v, m, b: x.sum(1), "SumBackward1"),
    "mean": (lambda T, x, y, v, m, b: x.mean(), "MeanBackward0"),
    "mean_dim": (lambda T, x, y, v, m, b: x.mean(0), "MeanBackward1"),
    "prod": (lambda T, x, y, v, m, b: x.prod(), "ProdBackward0"),
    "prod_dim": (lambda T, x, y, v, m, b: x.prod(1), "ProdBackward1"),
    "max": (lambda T, x, y, v, m, b: x.max(), "MaxBackward1"),
    "max_dim": (lambda T, x, y, v, m, b: x.max(1).values, "MaxBackward0"),
    "min": (lambda T, x, y, v, m, b: x.min(), "MinBackward1"),
    "min_dim": (lambda T, x, y, v, m, b: x.min(1).values, "MinBackward0"),
    "amax": (lambda T, x, y, v, m, b: x.amax(1), "AmaxBackward0"),
    "amin": (lambda T, x, y, v, m, b: x.amin(1), "AminBackward0"),
    "var": (lambda T, x, y, v, m, b: x.var(), "VarBackward0"),
    "std": (lambda T, x, y, v, m, b: x.std(1), "StdBackward0"),
    "logsumexp": (lambda T, x, y, v, m, b: x.logsumexp(1), "LogsumexpBackward0"),
    "cumsum": (lambda T, x, y, v, m, b: x.cumsum(1), "CumsumBackward0"),
    # linear algebra and joins
    "matmul_2d": (lambda T, x, y, v, m, b: x @ m, "MmBackward0"),
    "mm": (lambda T, x, y, v, m, b: x.mm(m), "MmBackward0"),
    "matmul_1d": (lambda T, x, y, v, m, b: v @ v, "DotBackward0"),
    "dot": (lambda T, x, y, v, m, b: v.dot(v), "DotBackward0"),
    "mv": (lambda T, x, y, v, m, b: x.mv(v), "MvBackward0"),
    "matmul_2d_1d": (lambda T, x, y, v, m, b: x @ v, "MvBackward0"),
    "bmm": (lambda T, x, y, v, m, b: b.bmm(b.transpose(1, 2)), "BmmBackward0"),
    "cat": (lambda T, x, y, v, m, b: T.cat([x, y]), "CatBackward0"),
    "stack": (lambda T, x, y, v, m, b: T.stack([x, y]), "StackBackward0"),
    "softmax": (lambda T, x, y, v, m, b: x.softmax(1), "SoftmaxBackward0"),
    "log_softmax": (lambda T, x, y, v, m, b: x.log_softmax(1), "LogSoftmaxBackward0"),
    # views
    "view": (lambda T, x, y, v, m, b: x.view(6), "ViewBackward0"),
    "reshape": (lambda T, x, y, v, m, b: x.reshape(3, 2), "ViewBackward0"),
    "flatten": (lambda T, x, y, v, m, b: b.flatten(), "ViewBackward0"),
    "unflatten": (lambda T, x, y, v, m, b: x.unflatten(1, (3, 1)), "ViewBackward0"),
    "permute": (lambda T, x, y, v, m, b: b.permute(2, 0, 1), "PermuteBackward0"),
    "transpose": (lambda T, x, y, v, m, b: x.transpose(0, 1), "TransposeBackward0"),
    "t": (lambda T, x, y, v, m, b: x.t(), "TBackward0"),
    "expand": (lambda T, x, y, v, m, b: v.expand(2, 3), "ExpandBackward0"),
    "expand_as": (lambda T, x, y, v, m, b: v.expand_as(x), "ExpandBackward0"),
    "squeeze": (lambda T, x, y, v, m, b: x.view(2, 1, 3).squeeze(), "SqueezeBackward0"),
    "squeeze_dim": (lambda T, x, y, v, m, b: x.view(2, 1, 3).squeeze(1), "SqueezeBackward1"),
    "unsqueeze": (lambda T, x, y, v, m, b: x.unsqueeze(0), "UnsqueezeBackward0"),
    "index_none": (lambda T, x, y, v, m, b: x[None], "UnsqueezeBackward0"),
    "narrow": (lambda T, x, y, v, m, b: x.narrow(1, 0, 2), "SliceBackward0"),
    "select": (lambda T, x, y, v, m, b: x.select(0, 1), "SelectBackward0"),
    "index_int": (lambda T, x, y, v, m, b: x[1], "SelectBackward0"),
    "slice": (lambda T, x, y, v, m, b: x[:, 1:], "SliceBackward0"),
    "slice_step": (lambda T, x, y, v, m, b: x[:, ::2], "SliceBackward0"),
    "unbind": (lambda T, x, y, v, m, b: x.unbind(0)[0], "UnbindBackward0"),
    "split": (lambda T, x, y, v, m, b: x.split(2, 1)[0], "SplitBackward0"),
    "chunk": (lambda T, x, y, v, m, b: x.chunk(2, 1)[1], "SplitBackward0"),
    # indexing
    "index_tensor": (lambda T, x, y, v, m, b: x[T.tensor([1, 0])], "IndexBackward0"),
    "index_mask": (lambda T, x, y, v, m, b: x[x > 1.0], "IndexBackward0"),
    "gather": (lambda T, x, y, v, m, b: x.gather(1, T.tensor([[0], [2]])), "GatherBackward0"),
    "scatter": (
        lambda T, x, y, v, m, b: x.scatter(1, T.tensor([[0], [2]]), y),
        "ScatterBackward0",
    ),
    "scatter_add": (
        lambda T, x, y, v, m, b: x.scatter_add(1, T.tensor([[0], [2]]), y),
        "ScatterAddBackward0",
    ),
    "index_select": (
        lambda T, x, y, v, m, b: x.index_select(1, T.tensor([0, 2])),
        "IndexSelectBackward0",
    ),
    "index_add": (
        lambda T, x, y, v, m, b: x.index_add(1, T.tensor([0, 2]), y[:, :2]),
        "IndexAddBackward0",
    ),
    # copies
    "clone": (lambda T, x, y, v, m, b: x.clone(), "CloneBackward0"),
    "contiguous": (lambda T, x, y, v, m, b: x.t().contiguous(), "CloneBackward0"),
    "to_float32": (lambda T, x, y, v, m, b: x.to(T.float32), "ToCopyBackward0"),
    "float": (lambda T, x, y, v, m, b: x.float(), "ToCopyBackward0"),
}


@pytest.mark.parametrize("case", list(NAME_CASES))
def test_grad_fn_name(case, device):
    fn, table_name = NAME_CASES[case]
    expected = table_name
    if torch is not None:
        expected = type(fn(torch, *_inputs(torch)).grad_fn).__name__
        assert expected == table_name, f"PyTorch {torch.__version__} names {case} {expected}"
    out = fn(gt, *_inputs(gt))
    assert out.device.type == device
    assert out.requires_grad
    assert not out.is_leaf
    assert node_name(out.grad_fn) == expected
    assert out.grad_fn.name() == expected


def test_inplace_ops_rename_grad_fn():
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    assert node_name(y.grad_fn) == "MulBackward0"
    y.add_(1)
    assert node_name(y.grad_fn) == "AddBackward0"
    y.mul_(2)
    assert node_name(y.grad_fn) == "MulBackward0"
    y.exp_()
    assert node_name(y.grad_fn) == "ExpBackward0"
    assert not y.is_leaf


def test_grad_fn_is_none_without_grad():
    x = gt.tensor([1.0, 2.0])
    assert x.grad_fn is None
    assert (x * 2).grad_fn is None
    w = gt.tensor([1.0, 2.0], requires_grad=True)
    assert w.grad_fn is None  # a leaf has no grad_fn
    assert w.detach().grad_fn is None


# ------------------------------------------------------------- next_functions
def test_next_functions_leaves_and_constants():
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = gt.tensor([4.0, 5.0, 6.0], requires_grad=True)
    z = x * y + gt.tensor(3.0)
    add = z.grad_fn
    assert node_name(add) == "AddBackward0"
    nf = add.next_functions
    assert isinstance(nf, tuple) and len(nf) == 2
    assert all(isinstance(pair, tuple) and len(pair) == 2 for pair in nf)
    assert node_name(nf[0][0]) == "MulBackward0" and nf[0][1] == 0
    assert nf[1] == (None, 0)  # the constant needs no gradient

    mul_next = nf[0][0].next_functions
    assert [node_name(node) for node, _ in mul_next] == ["AccumulateGrad", "AccumulateGrad"]
    assert [index for _, index in mul_next] == [0, 0]
    assert mul_next[0][0].variable is x
    assert mul_next[1][0].variable is y
    assert mul_next[0][0].next_functions == ()


def test_next_functions_constant_tensor_gives_none():
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = gt.ones(3)
    for out in (x * c, x + c):
        nf = out.grad_fn.next_functions
        assert node_name(nf[0][0]) == "AccumulateGrad"
        assert nf[0][0].variable is x
        assert nf[1] == (None, 0)
    nf = (c * x).grad_fn.next_functions
    assert nf[0] == (None, 0)
    assert nf[1][0].variable is x


# PyTorch wraps a Python-number operand of add/sub/mul/div (and where's other) in a
# tensor, so their nodes have an edge (None, 0) for it; pow, clamp, rsub and
# masked_fill take the number as a plain argument and have no edge for it.
SCALAR_EDGE_CASES = {
    "x + 3": (lambda x, T: x + 3, 2),
    "3 + x": (lambda x, T: 3 + x, 2),
    "x - 1": (lambda x, T: x - 1, 2),
    "x * 2": (lambda x, T: x * 2, 2),
    "2 * x": (lambda x, T: 2 * x, 2),
    "x / 2": (lambda x, T: x / 2, 2),
    "where(c, x, 0.0)": (lambda x, T: T.where(x > 0, x, 0.0), 2),
    "2 - x": (lambda x, T: 2 - x, 1),
    "x ** 2": (lambda x, T: x**2, 1),
    "2 ** x": (lambda x, T: 2**x, 1),
    "clamp": (lambda x, T: x.clamp(0, 1), 1),
    "masked_fill": (lambda x, T: x.masked_fill(x > 0, 1.0), 1),
}


@pytest.mark.parametrize("case", list(SCALAR_EDGE_CASES))
def test_next_functions_python_number_operand(case):
    fn, table_count = SCALAR_EDGE_CASES[case]

    def edges(T):
        x = T.tensor([0.5, 2.0], requires_grad=True)
        return [(node_name(node), index) for node, index in fn(x, T).grad_fn.next_functions]

    expected = [("AccumulateGrad", 0), (None, 0)][:table_count]
    if torch is not None:
        assert edges(torch) == expected
    assert edges(gt) == expected


def test_next_functions_output_index_of_multi_output_node():
    x = gt.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    a, b, _ = x.unbind(0)
    nf = (a + b).grad_fn.next_functions
    assert node_name(nf[0][0]) == "UnbindBackward0"
    assert nf[0][0] is nf[1][0]  # both outputs come from one node...
    assert (nf[0][1], nf[1][1]) == (0, 1)  # ...and the int says which output
    unbind_next = nf[0][0].next_functions
    assert len(unbind_next) == 1
    assert node_name(unbind_next[0][0]) == "AccumulateGrad"
    assert unbind_next[0][0].variable is x


def test_next_functions_walk_of_a_small_program():
    w = gt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    inp = gt.tensor([1.0, -1.0])
    loss = (w.mv(inp).exp()).sum()

    def walk(node):
        names = [node_name(node)]
        for child, _ in node.next_functions:
            if child is not None:
                names.extend(walk(child))
        return names

    assert walk(loss.grad_fn) == ["SumBackward0", "ExpBackward0", "MvBackward0", "AccumulateGrad"]


def test_next_functions_match_torch_structure():
    if torch is None:
        pytest.skip("PyTorch (the oracle) is not installed")

    def program(T):
        a = T.tensor([[0.5, 1.0], [1.5, 2.0]], dtype=T.float64, requires_grad=True)
        b = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
        c = T.tensor([3.0, 4.0], dtype=T.float64)
        h = (a @ b).tanh() * c
        return (h.sum() + (a.t()[0] ** 2).mean()) / T.tensor(2.0, dtype=T.float64)

    def describe(node):
        if node is None:
            return None
        children = tuple((describe(child), index) for child, index in node.next_functions)
        return (node_name(node), children)

    assert describe(program(gt).grad_fn) == describe(program(torch).grad_fn)


# -------------------------------------------------------- is_leaf / requires_grad
def test_is_leaf():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    c = gt.tensor([1.0, 2.0])
    assert x.is_leaf and c.is_leaf
    assert not (x * 2).is_leaf
    assert (c * 2).is_leaf  # nothing to differentiate: a plain leaf
    assert x.detach().is_leaf
    with gt.no_grad():
        assert (x * 2).is_leaf


def test_requires_grad_propagation():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    c = gt.tensor([3.0, 4.0])
    assert x.requires_grad and not c.requires_grad
    assert (x + c).requires_grad
    assert (c + x).requires_grad
    assert not (c * c).requires_grad
    assert (x * 2).exp().sum().requires_grad
    assert gt.cat([c, x]).requires_grad
    assert gt.stack([c, c]).requires_grad is False
    assert gt.where(c > 3, x, c).requires_grad
    assert not x.detach().requires_grad
    assert x[0].requires_grad and x.view(2, 1).requires_grad


def test_integer_and_bool_outputs_never_require_grad():
    x = gt.tensor([[1.0, 3.0, 2.0], [0.5, -1.0, 4.0]], requires_grad=True)
    outs = {
        "gt": x > 1,
        "eq": x == 1,
        "long": x.long(),
        "int": x.int(),
        "bool": x.bool(),
        "argmax": x.argmax(),
        "argmin_dim": x.argmin(1),
        "max_indices": x.max(1).indices,
        "min_indices": x.min(dim=0)[1],
    }
    for name, out in outs.items():
        assert not out.requires_grad, name
        assert out.grad_fn is None, name
        assert out.is_leaf, name
    values = x.max(1).values
    assert values.requires_grad


def test_requires_grad_flag_and_default():
    assert not gt.zeros(2).requires_grad
    assert gt.zeros(2, requires_grad=True).requires_grad
    assert gt.ones(2, 2, dtype=gt.float64, requires_grad=True).requires_grad
    assert gt.tensor(1.5, requires_grad=True).requires_grad
    t = gt.zeros(3)
    t.requires_grad = True
    assert t.requires_grad and t.is_leaf


def test_grad_of_non_leaf_is_none_with_warning_free_access():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert y.grad is None
