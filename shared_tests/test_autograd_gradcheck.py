"""Every differentiable op passes ``gradcheck`` in float64 (docs/guide/architecture.md, section 4).

Each case is one small program ``fn(T, *inputs)`` that runs unchanged on glasstorch
and on real PyTorch (``T`` is the module). Three checks use it:

* ``test_gradcheck``: glasstorch's own ``autograd.gradcheck`` compares the
  backward formula with central finite differences;
* ``test_grad_matches_torch``: the forward values and the vector-Jacobian product
  for a fixed cotangent equal PyTorch's (so a lenient gradcheck cannot hide a
  wrong formula);
* ``test_gradgradcheck``: for a representative subset, the backward formula is
  itself differentiated correctly.

Inputs have at most 12 elements and sit away from kinks (``abs``, ``relu``,
``clamp`` bounds, ties of ``max``), where the finite difference would straddle a
corner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from oracle import assert_close, default_device, needs_torch, torch

import glasstorch as gt

pytestmark = pytest.mark.gradcheck

_rng = np.random.default_rng(20240607)


def U(*shape):
    """Uniform in (-1, 1)."""
    return _rng.uniform(-1.0, 1.0, size=shape)


def P(*shape):
    """Positive, in (0.5, 2): domains of log, sqrt, pow with real exponents."""
    return _rng.uniform(0.5, 2.0, size=shape)


def A(*shape):
    """Away from zero: |value| in (0.2, 1), either sign (abs, relu, masks)."""
    return _rng.choice([-1.0, 1.0], size=shape) * _rng.uniform(0.2, 1.0, size=shape)


def D(*shape):
    """Distinct values at least 0.25 apart (max, min: no ties)."""
    n = int(np.prod(shape))
    return ((_rng.permutation(n) - n / 2) * 0.25 + 0.05).reshape(shape)


def with_zero(array, index):
    array = array.copy()
    array[index] = 0.0
    return array


@dataclass
class Case:
    fn: Callable[..., Any]
    inputs: list[np.ndarray]
    gradgrad: bool = False


MASK = [[True, False, True], [False, False, True]]
C = {}  # id -> Case

# ------------------------------------------------------------------ arithmetic
C["add"] = Case(lambda T, x, y: x + y, [U(2, 3), U(2, 3)])
C["add_broadcast"] = Case(lambda T, x, y: T.add(x, y), [U(2, 3), U(3)])
C["add_scalar"] = Case(lambda T, x: x + 1.5, [U(4)])
C["radd_scalar"] = Case(lambda T, x: 1.5 + x, [U(4)])
C["sub"] = Case(lambda T, x, y: x - y, [U(2, 3), U(2, 1)])
C["sub_fn"] = Case(lambda T, x, y: T.sub(x, y), [U(3), U(3)])
C["rsub_scalar"] = Case(lambda T, x: 2.0 - x, [U(4)])
C["mul"] = Case(lambda T, x, y: x * y, [U(2, 3), U(2, 3)], gradgrad=True)
C["mul_broadcast"] = Case(lambda T, x, y: T.mul(x, y), [U(2, 1), U(1, 3)], gradgrad=True)
C["mul_self"] = Case(lambda T, x: x * x, [U(5)])
C["mul_scalar"] = Case(lambda T, x: x * 3.0, [U(4)])
C["div"] = Case(lambda T, x, y: x / y, [U(2, 3), P(2, 3)], gradgrad=True)
C["div_broadcast"] = Case(lambda T, x, y: T.div(x, y), [U(2, 3), P(3)])
C["div_scalar"] = Case(lambda T, x: x / 4.0, [U(4)])
C["rdiv_scalar"] = Case(lambda T, x: 2.0 / x, [P(4)])
C["neg"] = Case(lambda T, x: -x, [U(2, 3)])
C["neg_fn"] = Case(lambda T, x: T.neg(x), [U(3)])
C["pow_int"] = Case(lambda T, x: x**3, [U(2, 3)], gradgrad=True)
C["pow_square_fn"] = Case(lambda T, x: T.pow(x, 2), [U(4)])
C["pow_frac"] = Case(lambda T, x: x**2.5, [P(2, 3)], gradgrad=True)
C["pow_negative"] = Case(lambda T, x: x.pow(-1.5), [P(4)])
C["pow_zero"] = Case(lambda T, x: x**0, [U(3)])
C["rpow"] = Case(lambda T, x: 2.0**x, [U(2, 3)], gradgrad=True)
C["pow_scalar_base_fn"] = Case(lambda T, x: T.pow(3.0, x), [U(4)])
C["pow_tensor"] = Case(lambda T, x, y: x**y, [P(2, 3), U(2, 3)], gradgrad=True)
C["pow_tensor_broadcast"] = Case(lambda T, x, y: T.pow(x, y), [P(2, 3), U(3)])

# ---------------------------------------------------------------------- unary
C["abs"] = Case(lambda T, x: x.abs(), [A(2, 3)])
C["abs_fn"] = Case(lambda T, x: T.abs(x), [A(4)])
C["exp"] = Case(lambda T, x: x.exp(), [U(2, 3)], gradgrad=True)
C["log"] = Case(lambda T, x: T.log(x), [P(2, 3)])
C["log1p"] = Case(lambda T, x: x.log1p(), [_rng.uniform(-0.5, 1.0, size=(2, 3))])
C["expm1"] = Case(lambda T, x: T.expm1(x), [U(2, 3)])
C["sqrt"] = Case(lambda T, x: x.sqrt(), [P(2, 3)])
C["rsqrt"] = Case(lambda T, x: T.rsqrt(x), [P(2, 3)])
C["sin"] = Case(lambda T, x: x.sin(), [U(2, 3)])
C["cos"] = Case(lambda T, x: T.cos(x), [U(2, 3)])
C["tanh"] = Case(lambda T, x: x.tanh(), [U(2, 3)], gradgrad=True)
C["sigmoid"] = Case(lambda T, x: T.sigmoid(x), [U(2, 3)], gradgrad=True)
C["relu"] = Case(lambda T, x: x.relu(), [A(2, 3)], gradgrad=True)
C["relu_fn"] = Case(lambda T, x: T.relu(x), [A(5)])
_CLAMP_X = np.array([[-0.9, -0.3, 0.1], [0.45, 0.8, 1.3]])
C["clamp_both"] = Case(lambda T, x: x.clamp(-0.5, 0.6), [_CLAMP_X])
C["clamp_min"] = Case(lambda T, x: x.clamp(min=0.0), [_CLAMP_X])
C["clamp_max"] = Case(lambda T, x: T.clamp(x, max=0.5), [_CLAMP_X])
_MX = U(2, 3)
C["maximum"] = Case(lambda T, x, y: T.maximum(x, y), [_MX, _MX + 0.5 * A(2, 3)])
C["minimum"] = Case(lambda T, x, y: T.minimum(x, y), [_MX, _MX + 0.5 * A(2, 3)])
C["maximum_broadcast"] = Case(
    lambda T, x, y: T.maximum(x, y),
    [np.array([[-0.5, 0.2, 0.9], [0.6, -0.8, 0.1]]), np.array([0.0, -0.3, 0.5])],
)
C["minimum_broadcast"] = Case(
    lambda T, x, y: x.minimum(y),
    [np.array([[-0.5, 0.2, 0.9], [0.6, -0.8, 0.1]]), np.array([0.0, -0.3, 0.5])],
)

# ------------------------------------------------------- where and masked_fill
C["where"] = Case(lambda T, x, y: T.where(T.tensor(MASK), x, y), [U(2, 3), U(2, 3)])
C["where_broadcast"] = Case(lambda T, x, y: T.where(T.tensor(MASK), x, y), [U(2, 3), U(3)])
C["where_from_compare"] = Case(lambda T, x, y: T.where(x > 0, x, y), [A(2, 3), U(2, 3)])
C["where_scalar_other"] = Case(lambda T, x: T.where(x > 0, x, 0.0), [A(2, 3)])
C["masked_fill"] = Case(lambda T, x: x.masked_fill(T.tensor(MASK), -1.0), [U(2, 3)])
C["masked_fill_broadcast"] = Case(
    lambda T, x: x.masked_fill(T.tensor([False, True, False]), 2.0), [U(2, 3)]
)

# ------------------------------------------------------------------ reductions
C["sum"] = Case(lambda T, x: x.sum(), [U(2, 3)], gradgrad=True)
C["sum_dim"] = Case(lambda T, x: x.sum(1), [U(2, 3)], gradgrad=True)
C["sum_dim_keepdim"] = Case(lambda T, x: T.sum(x, dim=0, keepdim=True), [U(2, 3)])
C["sum_dims_tuple"] = Case(lambda T, x: x.sum((0, 2)), [U(2, 3, 2)])
C["sum_negative_dim"] = Case(lambda T, x: x.sum(dim=-1), [U(2, 3, 2)])
C["mean"] = Case(lambda T, x: x.mean(), [U(2, 3)])
C["mean_dim"] = Case(lambda T, x: T.mean(x, 0), [U(2, 3)])
C["mean_dim_keepdim"] = Case(lambda T, x: x.mean(dim=1, keepdim=True), [U(2, 3)])
C["mean_dims_tuple"] = Case(lambda T, x: x.mean((0, 2)), [U(2, 3, 2)])
C["prod"] = Case(lambda T, x: x.prod(), [A(2, 3)])
C["prod_dim"] = Case(lambda T, x: T.prod(x, 1), [A(2, 3)])
C["prod_dim_keepdim"] = Case(lambda T, x: x.prod(0, keepdim=True), [A(2, 3)])
C["prod_one_zero"] = Case(lambda T, x: x.prod(), [with_zero(A(2, 3), (1, 1))])
C["prod_dim_one_zero"] = Case(lambda T, x: x.prod(1), [with_zero(A(2, 3), (0, 2))])
C["max"] = Case(lambda T, x: x.max(), [D(2, 3)])
C["max_dim"] = Case(lambda T, x: x.max(dim=1).values, [D(2, 3)])
C["max_dim_keepdim"] = Case(lambda T, x: T.max(x, 0, keepdim=True)[0], [D(2, 3)])
C["min"] = Case(lambda T, x: T.min(x), [D(2, 3)])
C["min_dim"] = Case(lambda T, x: x.min(1).values, [D(2, 3)])
C["min_dim_keepdim"] = Case(lambda T, x: x.min(dim=-1, keepdim=True)[0], [D(2, 3)])
C["amax"] = Case(lambda T, x: x.amax(1), [D(2, 3)])
C["amax_dims"] = Case(lambda T, x: T.amax(x, dim=(0, 2)), [D(2, 3, 2)])
C["amin"] = Case(lambda T, x: T.amin(x, 0), [D(2, 3)])
C["amin_keepdim"] = Case(lambda T, x: x.amin(dim=1, keepdim=True), [D(2, 3)])
C["var"] = Case(lambda T, x: x.var(), [U(2, 3)], gradgrad=True)
C["var_correction0"] = Case(lambda T, x: x.var(correction=0), [U(2, 3)])
C["var_dim_correction0"] = Case(lambda T, x: T.var(x, dim=1, correction=0), [U(2, 3)])
C["var_dim_keepdim"] = Case(lambda T, x: x.var(0, keepdim=True), [U(3, 2)], gradgrad=True)
C["std"] = Case(lambda T, x: x.std(), [U(2, 3)])
C["std_correction0"] = Case(lambda T, x: T.std(x, correction=0), [U(2, 3)])
C["std_dim"] = Case(lambda T, x: x.std(dim=1), [U(2, 3)])
C["std_dim_keepdim_correction0"] = Case(
    lambda T, x: x.std(dim=0, keepdim=True, correction=0), [U(3, 2)]
)
C["logsumexp"] = Case(lambda T, x: x.logsumexp(1), [U(2, 3)])
C["logsumexp_keepdim"] = Case(lambda T, x: T.logsumexp(x, dim=0, keepdim=True), [U(2, 3)])
C["cumsum"] = Case(lambda T, x: x.cumsum(1), [U(2, 3)])
C["cumsum_dim0"] = Case(lambda T, x: T.cumsum(x, dim=0), [U(3, 2)])
C["cumsum_3d"] = Case(lambda T, x: x.cumsum(dim=-2), [U(2, 3, 2)])

# ------------------------------------------------------------- linear algebra
C["matmul_1d_1d"] = Case(lambda T, a, b: a @ b, [U(4), U(4)])
C["matmul_2d_1d"] = Case(lambda T, a, b: T.matmul(a, b), [U(2, 3), U(3)])
C["matmul_1d_2d"] = Case(lambda T, a, b: a @ b, [U(3), U(3, 2)])
C["matmul_2d_2d"] = Case(lambda T, a, b: a @ b, [U(2, 3), U(3, 2)], gradgrad=True)
C["matmul_3d_2d"] = Case(lambda T, a, b: a @ b, [U(2, 2, 3), U(3, 2)])
C["matmul_1d_3d"] = Case(lambda T, a, b: a.matmul(b), [U(3), U(2, 3, 2)])
C["matmul_batch_broadcast"] = Case(lambda T, a, b: a @ b, [U(2, 1, 1, 3), U(2, 3, 2)])
C["mm"] = Case(lambda T, a, b: T.mm(a, b), [U(2, 3), U(3, 2)])
C["bmm"] = Case(lambda T, a, b: a.bmm(b), [U(2, 2, 3), U(2, 3, 2)])
C["mv"] = Case(lambda T, a, b: T.mv(a, b), [U(2, 3), U(3)])
C["dot"] = Case(lambda T, a, b: a.dot(b), [U(4), U(4)])

# ---------------------------------------------------------------- joins, softmax
C["cat_dim0"] = Case(lambda T, a, b: T.cat([a, b]), [U(2, 3), U(1, 3)])
C["cat_dim1"] = Case(lambda T, a, b: T.cat((a, b), dim=1), [U(2, 1), U(2, 3)])
C["cat_three"] = Case(lambda T, a, b, c: T.cat([a, b, c], -1), [U(2), U(3), U(1)])
C["stack_dim0"] = Case(lambda T, a, b: T.stack([a, b]), [U(2, 3), U(2, 3)])
C["stack_dim1"] = Case(lambda T, a, b: T.stack((a, b), dim=1), [U(2, 3), U(2, 3)])
C["stack_last"] = Case(lambda T, a, b, c: T.stack([a, b, c], -1), [U(3), U(3), U(3)])
C["softmax"] = Case(lambda T, x: x.softmax(1), [U(2, 3)], gradgrad=True)
C["softmax_dim0"] = Case(lambda T, x: T.softmax(x, dim=0), [U(2, 3)])
C["softmax_3d"] = Case(lambda T, x: x.softmax(dim=-1), [U(2, 2, 3)])
C["log_softmax"] = Case(lambda T, x: x.log_softmax(1), [U(2, 3)], gradgrad=True)
C["log_softmax_dim0"] = Case(lambda T, x: T.log_softmax(x, dim=0), [U(2, 3)])
C["log_softmax_3d"] = Case(lambda T, x: x.log_softmax(dim=1), [U(2, 2, 3)])

# ----------------------------------------------------------------------- views
C["view"] = Case(lambda T, x: x.view(3, 2), [U(2, 3)])
C["view_infer"] = Case(lambda T, x: x.view(-1), [U(2, 3)])
C["reshape"] = Case(lambda T, x: x.reshape(2, 3), [U(6)])
C["reshape_non_contiguous"] = Case(lambda T, x: x.t().reshape(6), [U(2, 3)])
C["reshape_fn"] = Case(lambda T, x: T.reshape(x, (3, -1)), [U(2, 3)])
C["permute"] = Case(lambda T, x: x.permute(2, 0, 1), [U(2, 3, 2)])
C["permute_fn"] = Case(lambda T, x: T.permute(x, (1, 0)), [U(2, 3)])
C["transpose"] = Case(lambda T, x: x.transpose(0, 1), [U(2, 3)])
C["transpose_3d"] = Case(lambda T, x: T.transpose(x, -1, -3), [U(2, 3, 2)])
C["t"] = Case(lambda T, x: x.t(), [U(2, 3)])
C["T"] = Case(lambda T, x: x.T, [U(2, 3)])
C["mT"] = Case(lambda T, x: x.mT, [U(2, 3, 2)])
C["expand"] = Case(lambda T, x: x.expand(2, 3), [U(3)])
C["expand_size1"] = Case(lambda T, x: x.expand(-1, 3), [U(2, 1)])
C["expand_new_dims"] = Case(lambda T, x: x.expand(2, 2, 3), [U(1, 3)])
C["expand_as"] = Case(lambda T, x: x.expand_as(T.zeros(2, 3, dtype=T.float64)), [U(2, 1)])
C["squeeze"] = Case(lambda T, x: x.squeeze(), [U(1, 3, 1)])
C["squeeze_dim"] = Case(lambda T, x: x.squeeze(0), [U(1, 3, 1)])
C["squeeze_negative_dim"] = Case(lambda T, x: T.squeeze(x, -1), [U(1, 3, 1)])
C["unsqueeze"] = Case(lambda T, x: x.unsqueeze(0), [U(2, 3)])
C["unsqueeze_negative"] = Case(lambda T, x: T.unsqueeze(x, -1), [U(2, 3)])
C["flatten"] = Case(lambda T, x: x.flatten(), [U(2, 3, 2)])
C["flatten_start"] = Case(lambda T, x: x.flatten(1), [U(2, 3, 2)])
C["flatten_range"] = Case(lambda T, x: T.flatten(x, 0, 1), [U(2, 3, 2)])
C["flatten_non_contiguous"] = Case(lambda T, x: x.transpose(0, 2).flatten(), [U(2, 3, 2)])
C["unflatten"] = Case(lambda T, x: x.unflatten(1, (2, 3)), [U(2, 6)])
C["narrow"] = Case(lambda T, x: x.narrow(1, 1, 2), [U(2, 3)])
C["narrow_fn"] = Case(lambda T, x: T.narrow(x, 0, 1, 1), [U(2, 3)])
C["select"] = Case(lambda T, x: x.select(1, -1), [U(2, 3)])
C["select_fn"] = Case(lambda T, x: T.select(x, 0, 1), [U(2, 3)])
C["unbind"] = Case(lambda T, x: x.unbind(0), [U(2, 3)])
C["unbind_dim1"] = Case(lambda T, x: T.unbind(x, dim=1), [U(2, 3)])
C["split"] = Case(lambda T, x: x.split(2, dim=1), [U(2, 3)])
C["split_sizes"] = Case(lambda T, x: T.split(x, [1, 3], dim=0), [U(4, 2)])
C["chunk"] = Case(lambda T, x: x.chunk(2), [U(4, 2)])
C["chunk_uneven"] = Case(lambda T, x: T.chunk(x, 2, dim=1), [U(2, 3)])
C["index_int"] = Case(lambda T, x: x[1], [U(2, 3)])
C["index_negative"] = Case(lambda T, x: x[-1, 1:], [U(2, 3)])
C["slice_step"] = Case(lambda T, x: x[::2], [U(5)])
C["slice_2d_step"] = Case(lambda T, x: x[:, ::2], [U(2, 5)])
C["slice_offset_step"] = Case(lambda T, x: x[1::2, 1:3], [U(4, 3)])
C["slice_ellipsis"] = Case(lambda T, x: x[..., 1], [U(2, 3, 2)])
C["slice_none"] = Case(lambda T, x: x[None, :, 1:3], [U(2, 3)])
C["slice_of_transpose"] = Case(lambda T, x: x.t()[1:, ::2], [U(3, 3)])

# ---------------------------------------------------------- indexing and friends
C["index_tensor"] = Case(lambda T, x: x[T.tensor([0, 2, 0])], [U(3, 2)])
C["index_tensor_dim1"] = Case(lambda T, x: x[:, T.tensor([1, 1, 0])], [U(2, 3)])
C["index_tensor_2d"] = Case(lambda T, x: x[T.tensor([[0, 1], [1, 0]])], [U(2, 3)])
C["index_two_tensors"] = Case(lambda T, x: x[T.tensor([0, 1, 1]), T.tensor([2, 0, 2])], [U(2, 3)])
C["index_lists"] = Case(lambda T, x: x[[0, 1], [2, 0]], [U(2, 3)])
C["index_bool_mask"] = Case(lambda T, x: x[T.tensor(MASK)], [U(2, 3)])
C["index_bool_rows"] = Case(lambda T, x: x[T.tensor([True, False, True])], [U(3, 2)])
C["index_mask_from_compare"] = Case(lambda T, x: x[x > 0], [A(2, 3)])
C["gather"] = Case(lambda T, x: x.gather(1, T.tensor([[0, 0], [2, 1]])), [U(2, 3)])
C["gather_dim0"] = Case(lambda T, x: T.gather(x, 0, T.tensor([[1, 0, 1]])), [U(2, 3)])
C["scatter"] = Case(
    lambda T, x, src: x.scatter(1, T.tensor([[2, 0], [1, 2]]), src), [U(2, 3), U(2, 2)]
)
C["scatter_dim0"] = Case(
    lambda T, x, src: T.scatter(x, 0, T.tensor([[1, 0, 1]]), src), [U(2, 3), U(1, 3)]
)
C["scatter_add"] = Case(
    lambda T, x, src: x.scatter_add(0, T.tensor([[1, 0, 1], [1, 1, 0]]), src),
    [U(2, 3), U(2, 3)],
)
C["scatter_add_dim1"] = Case(
    lambda T, x, src: T.scatter_add(x, 1, T.tensor([[0, 0], [2, 2]]), src), [U(2, 3), U(2, 2)]
)
C["index_select"] = Case(lambda T, x: x.index_select(0, T.tensor([2, 0, 2])), [U(3, 2)])
C["index_select_dim1"] = Case(lambda T, x: T.index_select(x, 1, T.tensor([1, 2])), [U(2, 3)])
C["index_add"] = Case(lambda T, x, src: x.index_add(0, T.tensor([1, 1]), src), [U(2, 3), U(2, 3)])
C["index_add_dim1"] = Case(
    lambda T, x, src: T.index_add(x, 1, T.tensor([2, 0]), src), [U(2, 3), U(2, 2)]
)

# ---------------------------------------------------------------------- copies
C["clone"] = Case(lambda T, x: x.clone(), [U(2, 3)])
C["contiguous"] = Case(lambda T, x: x.t().contiguous(), [U(2, 3)])
C["to_float64"] = Case(lambda T, x: x.to(T.float64), [U(2, 3)])
C["double"] = Case(lambda T, x: x.double() * 1, [U(3)])

# ---------------------------------------------------------- small compositions
C["mlp_layer"] = Case(
    lambda T, x, w, b: (x @ w.t() + b).tanh().sum(1),
    [U(2, 3), U(2, 3), U(2)],
    gradgrad=True,
)
C["binary_on_views"] = Case(lambda T, x, y: x.t() * y[:, ::2], [U(2, 3), U(3, 4)])
C["unary_on_expanded"] = Case(lambda T, x: x.expand(3, 2).exp() * T.tensor([1.0, 2.0]), [U(2)])
C["reduce_on_permuted"] = Case(lambda T, x: x.permute(2, 0, 1).sum(1), [U(2, 3, 2)])
C["matmul_on_transposed"] = Case(lambda T, a, b: a.t() @ b.t(), [U(3, 2), U(2, 3)])
C["normalize"] = Case(
    lambda T, x: (x - x.mean(1, keepdim=True)) / (x.var(1, keepdim=True) + 1e-5).sqrt(),
    [U(2, 3)],
)


# ---------------------------------------------------------------------- helpers
def _leaves(T, arrays, device="cpu"):
    on = {"device": device} if T is gt else {}
    return tuple(T.tensor(a.tolist(), dtype=T.float64, requires_grad=True, **on) for a in arrays)


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _cotangent(shape):
    """A fixed, non-uniform weight for each output element."""
    n = int(np.prod(shape)) if len(shape) else 1
    return np.cos(np.arange(1, n + 1) * 0.7).reshape(shape)


def _vjp(T, case, device="cpu"):
    """Outputs and the gradient of sum(cotangent * output) with respect to each input."""
    inputs = _leaves(T, case.inputs, device)
    outs = _as_tuple(case.fn(T, *inputs))
    loss = 0
    for out in outs:
        weight = T.tensor(_cotangent(tuple(out.shape)).tolist(), dtype=T.float64)
        loss = loss + (out * weight).sum()
    grads = T.autograd.grad(loss, inputs, allow_unused=True)
    return outs, grads


IDS = list(C)
GRADGRAD_IDS = [name for name in IDS if C[name].gradgrad]


# ------------------------------------------------------------------------ tests
@pytest.mark.parametrize("name", IDS)
def test_gradcheck(name, device):
    case = C[name]
    inputs = _leaves(gt, case.inputs, device)
    with default_device(device):  # the tensors a case makes itself (masks, indices)
        assert gt.autograd.gradcheck(lambda *args: case.fn(gt, *args), inputs) is True


@needs_torch
@pytest.mark.autograd
@pytest.mark.parametrize("name", IDS)
def test_grad_matches_torch(name, device):
    case = C[name]
    with default_device(device):
        outs, grads = _vjp(gt, case, device)
    ref_outs, ref_grads = _vjp(torch, case)
    assert len(outs) == len(ref_outs)
    for out, ref in zip(outs, ref_outs, strict=True):
        assert out.requires_grad
        assert_close(out, ref, rtol=1e-10, atol=1e-12)
    assert len(grads) == len(ref_grads)
    for grad, ref in zip(grads, ref_grads, strict=True):
        assert (grad is None) == (ref is None)
        if ref is not None:
            assert_close(grad, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", GRADGRAD_IDS)
def test_gradgradcheck(name, device):
    case = C[name]
    inputs = _leaves(gt, case.inputs, device)
    with default_device(device):
        assert gt.autograd.gradgradcheck(lambda *args: case.fn(gt, *args), inputs) is True


def test_every_listed_case_is_small():
    for name, case in C.items():
        for array in case.inputs:
            assert array.size <= 12, name


def test_relu_gradient_is_one_threshold_backward_node(device):
    """ReLU's backward is PyTorch's threshold_backward, itself differentiable."""
    x = gt.tensor([[-1.0, 2.0, float("nan")], [0.0, 3.0, -0.5]], requires_grad=True, device=device)
    grad_output = gt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True, device=device)
    (grad,) = gt.autograd.grad(x.relu(), x, grad_output, create_graph=True)
    assert grad.grad_fn.name() == "ThresholdBackwardBackward0"
    # 0 where the output is <= 0; a NaN output passes the gradient through
    assert_close(grad, np.array([[0.0, 2.0, 3.0], [0.0, 5.0, 0.0]], dtype=np.float32))
