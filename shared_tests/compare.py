"""Running one call on glasstorch and on PyTorch from the same inputs, and comparing the results.

``floats`` (float64) and ``values`` (float32) draw inputs from one seeded generator; ``both`` runs
``f(module, *tensors)`` on both libraries (inputs on the device under test for glasstorch) and
compares the values and, with ``grad=True``, the inputs' gradients; ``run_both`` does the same for
a pair of callables (an nn layer or function and PyTorch's); ``same`` compares a result or a
tuple/list of results; ``close_on_device`` compares one result computed on the device under test;
``copy_parameters`` gives a glasstorch module a PyTorch module's weights.
"""

from __future__ import annotations

import numpy as np
from oracle import TEST_DEVICE, assert_close, on_test_device, torch

import glasstorch as gt

RNG = np.random.default_rng(2613)


def same(got, want, **kw):
    """Compare a result, or a tuple of results, with PyTorch's."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, **kw)
    else:
        assert_close(got, want.detach() if hasattr(want, "detach") else want, **kw)


def both(f, *arrays, grad=False, **kw):
    """Run ``f(module, *tensors)`` on glasstorch and on PyTorch and compare, gradients too.

    With ``grad``, float arrays require grad; a random seed is sent back
    through the first result and the inputs' gradients are compared.
    """
    mine = [on_test_device(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    got, want = f(gt, *mine), f(torch, *theirs)
    same(got, want, **kw)
    if grad:
        first_got = got[0] if isinstance(got, tuple) else got
        first_want = want[0] if isinstance(want, tuple) else want
        seed = RNG.standard_normal(tuple(first_want.shape))
        first_want.backward(torch.tensor(seed, dtype=first_want.dtype))
        first_got.backward(on_test_device(seed, dtype=first_got.dtype))
        for m, t in zip(mine, theirs):
            if not t.requires_grad:
                continue
            if t.grad is None or t.grad._is_zerotensor():  # PyTorch: no gradient flows
                assert m.grad is None or not m.grad.any().item()
            elif m.grad is None:  # glasstorch: no gradient flows, PyTorch's is zero
                assert not t.grad.any().item()
            else:
                assert_close(m.grad, t.grad, rtol=1e-6, atol=1e-9)
    return got


def floats(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def values(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def run_both(gt_fn, torch_fn, arrays, grad=True, rtol=1e-5, atol=1e-5, wrt=None):
    """Call both on the same inputs (glasstorch's on the test device); compare the
    outputs, then the gradients of one random upstream gradient with respect to the
    float inputs (those at the positions ``wrt``, if given)."""
    wants = [
        grad and a.dtype.kind == "f" and (wrt is None or i in wrt) for i, a in enumerate(arrays)
    ]
    xs_t = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    xs_g = [on_test_device(a, requires_grad=w) for a, w in zip(arrays, wants)]
    yt, yg = torch_fn(*xs_t), gt_fn(*xs_g)
    assert_close(yg, yt.detach(), rtol=rtol, atol=atol)
    if grad:
        seed = values(*yt.shape)
        yt.backward(torch.tensor(seed))
        yg.backward(on_test_device(seed))
        for want, xg, xt in zip(wants, xs_g, xs_t):
            if not want:
                continue
            if xt.grad is None:  # an input the result does not depend on smoothly
                assert xg.grad is None or not xg.grad.abs().sum().item()
            else:
                assert_close(xg.grad, xt.grad, rtol=1e-4, atol=1e-5)
    return yg, yt


def close_on_device(ours, theirs, rtol=1e-5, atol=1e-5) -> None:
    """Compare on the host; ``ours`` must have been computed on the device under test."""
    if isinstance(ours, gt.Tensor):
        assert ours.device.type == TEST_DEVICE, f"result on {ours.device}, expected {TEST_DEVICE}"
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=rtol, atol=atol
    )


def copy_parameters(source, target) -> None:
    """Give glasstorch module ``target`` the parameters and buffers of PyTorch module ``source``."""
    target.load_state_dict(
        {k: gt.tensor(v.detach().cpu().numpy()) for k, v in source.state_dict().items()}
    )
