"""Frontend ops that make helper tensors of their own work on ``cuda`` tensors.

Some ops build a small tensor inside (the uniform draws of ``multinomial``,
the index of ``F.interpolate``, the triangle mask of ``tril``/``triu``, the
padding of ``F.pad`` and ``pad_sequence``, the masks of ``dropout2d`` and of a
causal attention, the identity of ``init.eye_``, ...). Each must be made on the
input's device, or the op raises the mixed-devices error. Every test runs the
op on the CPU and on the device with the same seed and compares the results.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_support import requires_cuda

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F

pytestmark = [pytest.mark.cuda, requires_cuda]


def _data(*shape, seed=0):
    return gt.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _same(device_result, cpu_result, exact=True):
    assert device_result.is_cuda
    got, want = device_result.detach().cpu().numpy(), cpu_result.detach().numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _seeded(fn, *args):
    gt.manual_seed(7)
    return fn(*args)


@pytest.mark.random
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_draws_the_cpus_samples(replacement):
    weights = _data(3, 5).abs()
    draw = lambda w: gt.multinomial(w, 4, replacement=replacement)  # noqa: E731
    _same(_seeded(draw, weights.cuda()), _seeded(draw, weights))


@pytest.mark.random
def test_normal_with_tensor_mean_and_std_on_the_device():
    mean, std = _data(4, 3), _data(4, 3, seed=1).abs()
    _same(_seeded(gt.normal, mean.cuda(), std.cuda()), _seeded(gt.normal, mean, std), exact=False)
    _same(_seeded(gt.normal, mean.cuda(), 2.0), _seeded(gt.normal, mean, 2.0), exact=False)


@pytest.mark.views
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_and_triu(diagonal):
    x = _data(2, 3, 4)
    _same(x.cuda().tril(diagonal), x.tril(diagonal))
    _same(gt.triu(x.cuda(), diagonal), gt.triu(x, diagonal))


@pytest.mark.nn
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate(mode):
    x = _data(1, 2, 3, 4)
    resize = lambda t: F.interpolate(t, scale_factor=2, mode=mode)  # noqa: E731
    _same(resize(x.cuda()), resize(x), exact=mode == "nearest")


@pytest.mark.nn
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    x = _data(1, 2, 3, 4)
    _same(F.pad(x.cuda(), (1, 2, 2, 1), mode=mode), F.pad(x, (1, 2, 2, 1), mode=mode))


@pytest.mark.nn
def test_dropout2d_draws_the_cpus_mask():
    x = _data(2, 3, 4, 4)
    drop = lambda t: F.dropout2d(t, 0.5)  # noqa: E731
    _same(_seeded(drop, x.cuda()), _seeded(drop, x))
    _same(F.dropout2d(x.cuda(), 1.0), F.dropout2d(x, 1.0))


@pytest.mark.nn
def test_causal_attention_and_grouped_heads():
    q, k, v = _data(1, 4, 3, 8), _data(1, 2, 3, 8, seed=1), _data(1, 2, 3, 8, seed=2)
    attend = lambda *t: F.scaled_dot_product_attention(*t, is_causal=True, enable_gqa=True)  # noqa: E731
    _same(attend(q.cuda(), k.cuda(), v.cuda()), attend(q, k, v), exact=False)
    mask = nn.modules.transformer.generate_square_subsequent_mask(3, device="cuda")
    _same(mask, nn.modules.transformer.generate_square_subsequent_mask(3))


@pytest.mark.nn
def test_pad_sequence():
    seqs = [_data(3, 2), _data(1, 2, seed=1)]
    padded = nn.utils.rnn.pad_sequence([s.cuda() for s in seqs], padding_value=-1.0)
    _same(padded, nn.utils.rnn.pad_sequence(seqs, padding_value=-1.0))


@pytest.mark.nn
def test_init_functions_fill_device_tensors_as_cpu_ones():
    for init in (nn.init.eye_, nn.init.trunc_normal_, nn.init.orthogonal_):
        on_device, on_cpu = gt.empty(3, 5, device="cuda"), gt.empty(3, 5)
        _same(_seeded(init, on_device), _seeded(init, on_cpu), exact=False)


@pytest.mark.nn
def test_batch_norm_built_on_the_device_keeps_its_buffers_there():
    bn = nn.BatchNorm1d(3, device="cuda")
    assert all(b.is_cuda for b in bn.buffers()) and all(p.is_cuda for p in bn.parameters())
    x = _data(4, 3)
    _same(bn(x.cuda()), nn.BatchNorm1d(3)(x), exact=False)


@pytest.mark.autograd
def test_out_argument_resized_on_its_device():
    out = gt.empty(1, device="cuda")
    with pytest.warns(UserWarning):
        gt.add(_data(2, 3).cuda(), 1.0, out=out)
    assert out.is_cuda and out.shape == (2, 3)


@pytest.mark.gradcheck
def test_gradcheck_on_the_device():
    x = _data(2, 3).double().cuda().requires_grad_(True)
    assert gt.autograd.gradcheck(lambda t: (t * t).sum(1), (x,))
    assert gt.autograd.gradgradcheck(lambda t: (t * t).sum(1), (x,))


@pytest.mark.random
def test_bernoulli_draws_the_cpus_bits():
    p = _data(3, 4).sigmoid()
    _same(_seeded(gt.bernoulli, p.cuda()), _seeded(gt.bernoulli, p))
    fill = lambda t: t.bernoulli_(0.3)  # noqa: E731
    _same(_seeded(fill, gt.zeros(5, device="cuda")), _seeded(fill, gt.zeros(5)))
