"""The vision layers against PyTorch: the upsampling modules and the deprecated F.upsample, the
padding layers and pixel shuffle, and the sampling grids of spatial transformers (affine_grid,
grid_sample). (interpolate, pad, unfold and fold are the course's: test_nn_conv.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compare import RNG, close_on_device, run_both, values
from oracle import assert_close, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn
import glasstorch.nn.functional as F
from glasstorch.autograd import gradcheck

pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


# -- The upsampling modules
@needs_torch
@pytest.mark.usefixtures("seeded_generators")
def test_upsampling_modules_match_pytorch(device):
    x = values(1, 2, 3, 4)
    for kwargs in (dict(scale_factor=2), dict(size=(5, 7))):
        run_both(gnn.UpsamplingNearest2d(**kwargs), torch.nn.UpsamplingNearest2d(**kwargs), [x])
        run_both(gnn.UpsamplingBilinear2d(**kwargs), torch.nn.UpsamplingBilinear2d(**kwargs), [x])
        assert repr(gnn.UpsamplingBilinear2d(**kwargs)) == repr(
            torch.nn.UpsamplingBilinear2d(**kwargs)
        )
        assert repr(gnn.UpsamplingNearest2d(**kwargs)) == repr(
            torch.nn.UpsamplingNearest2d(**kwargs)
        )


@needs_torch
@pytest.mark.usefixtures("seeded_generators")
def test_upsample_is_a_deprecated_interpolate(device):
    x = values(1, 2, 3, 4)
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        got = F.upsample(on_test_device(x), scale_factor=2, mode="bilinear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.nn.functional.upsample(torch.tensor(x), scale_factor=2, mode="bilinear")
        assert_close(F.upsample_bilinear(on_test_device(x), (6, 5)),
                     torch.nn.functional.upsample_bilinear(torch.tensor(x), (6, 5)),
                     rtol=1e-5, atol=1e-6)  # fmt: skip
        assert_close(F.upsample_nearest(on_test_device(x), scale_factor=3),
                     torch.nn.functional.upsample_nearest(torch.tensor(x), scale_factor=3))  # fmt: skip
    assert_close(got, want, rtol=1e-5, atol=1e-6)


# -- The padding layers and pixel shuffle


@needs_torch
@pytest.mark.parametrize(
    "name, args",
    [
        ("ZeroPad2d", ((1, 2, 1, 0),)),
        ("ConstantPad2d", (1, 0.5)),
        ("ReflectionPad2d", (1,)),
        ("ReplicationPad2d", ((2, 0, 1, 1),)),
        ("CircularPad2d", (1,)),
        ("ReflectionPad1d", (2,)),
        ("PixelShuffle", (2,)),
        ("PixelUnshuffle", (3,)),
    ],
)
def test_padding_and_pixel_shuffle_layers_like_pytorch(name, args):
    x = RNG.standard_normal((2, 8, 3, 3)).astype(np.float32)
    x = x[0] if name.endswith("1d") else x
    theirs, ours = getattr(torch.nn, name)(*args), getattr(gt.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    tx, gx = torch.tensor(x, requires_grad=True), gt.tensor(x, requires_grad=True)
    t_out, g_out = theirs(tx), ours(gx)
    close_on_device(g_out, t_out)
    (t_out * t_out).sum().backward()
    (g_out * g_out).sum().backward()
    close_on_device(gx.grad, tx.grad)


# -- Sampling grids: affine_grid and grid_sample
MODES = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]


def _grid_points(batch: int, height: int, width: int, dims: int = 2) -> np.ndarray:
    """Random points in and around [-1, 1], with a row of special ones: the ends -1 and 1, the
    centre, pixel centres and pixel edges of the 5-pixel side under both align_corners, points
    just outside, and far outside (so reflection mirrors several times)."""
    grid = RNG.uniform(-1.4, 1.4, (batch, height, width, dims))
    special = [-1.0, 1.0, 0.0, -0.4, 0.4, -0.2, 0.6, -0.5, 0.5, -3.0, 2.5, 7.3, -1.1, 1.05]
    flat = grid.reshape(-1, dims)
    for d in range(dims):
        flat[d * 17 : d * 17 + len(special), d] = special
    return grid


@needs_torch
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_matches_pytorch_values_and_gradients(mode, padding_mode, align_corners):
    # float64, so that glasstorch and PyTorch put every special point in the same pixel cell
    image, grid = values(2, 3, 4, 5, dtype=np.float64), _grid_points(2, 6, 7)

    def sample(f):
        return lambda x, g: f.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    run_both(sample(F), sample(torch.nn.functional), [image, grid], rtol=1e-9, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_float32_and_5d_match_pytorch(mode, padding_mode):
    image, grid = values(2, 2, 5, 4), RNG.uniform(-1.3, 1.3, (2, 3, 4, 2)).astype(np.float32)
    volume, grid3 = (
        values(1, 2, 3, 4, 5),
        RNG.uniform(-1.3, 1.3, (1, 2, 3, 4, 3)).astype(np.float32),
    )
    for args in ([image, grid], [volume, grid3]):
        for align_corners in (False, True):

            def sample(f, align_corners=align_corners):
                return lambda x, g: f.grid_sample(
                    x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
                )

            run_both(sample(F), sample(torch.nn.functional), args)


def test_grid_sample_of_the_identity_grid_returns_the_input():
    image = values(2, 3, 4, 5)
    theta = np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1))
    for align_corners in (False, True):
        grid = F.affine_grid(on_test_device(theta), [2, 3, 4, 5], align_corners=align_corners)
        for mode in MODES:
            for padding_mode in PADDINGS:
                out = F.grid_sample(on_test_device(image), grid, mode, padding_mode, align_corners)
                assert_close(out, image, rtol=1e-5, atol=1e-5)


def test_grid_sample_one_pixel_shift_reads_the_padding():
    """Moving every point one pixel right (2 / W in normalised units, align_corners=False) reads
    the next column; the last column reads past the edge: zeros, the edge pixel again for
    border, and for reflection the point mirrored at the image's outer edge, the edge pixel too."""
    image = values(1, 2, 3, 4)
    theta = np.array([[[1.0, 0.0, 2 / 4], [0.0, 1.0, 0.0]]], dtype=np.float32)
    grid = F.affine_grid(on_test_device(theta), [1, 2, 3, 4], align_corners=False)
    edge = image[..., -1:]
    expected = {
        "zeros": np.concatenate([image[..., 1:], np.zeros_like(edge)], axis=-1),
        "border": np.concatenate([image[..., 1:], edge], axis=-1),
        "reflection": np.concatenate([image[..., 1:], edge], axis=-1),
    }
    for mode in MODES:
        for padding_mode, want in expected.items():
            out = F.grid_sample(on_test_device(image), grid, mode, padding_mode, False)
            assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_grid_sample_nearest_rounds_half_to_even():
    """With align_corners and 5 pixels, x = p / 2 - 1 is pixel position p exactly: the halves
    0.5, 1.5, 2.5 and 3.5 go to the even neighbours 0, 2, 2 and 4 (as nearbyint; NumPy's rint)."""
    row = np.arange(5.0, dtype=np.float32).reshape(1, 1, 1, 5) * 10
    positions = np.array([0.5, 1.5, 2.5, 3.5])
    grid = np.stack([positions / 2 - 1, np.zeros(4)], axis=-1).reshape(1, 1, 4, 2)
    out = F.grid_sample(on_test_device(row), on_test_device(grid, dtype=gt.float32),
                        mode="nearest", align_corners=True)  # fmt: skip
    assert_close(out, row[..., np.rint(positions).astype(int)])


def test_grid_sample_nearest_gives_the_grid_a_zero_gradient():
    image = on_test_device(values(1, 2, 3, 3))
    grid = on_test_device(_grid_points(1, 6, 7).astype(np.float32), requires_grad=True)
    out = F.grid_sample(image, grid, mode="nearest", align_corners=False)
    assert out.requires_grad  # as PyTorch: the op is differentiable in the grid
    out.sum().backward()
    assert grid.grad is not None and not grid.grad.abs().sum().item()


@pytest.mark.gradcheck
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_grid_sample_bilinear_gradcheck(padding_mode, align_corners):
    image = on_test_device(values(1, 2, 3, 4, dtype=np.float64), requires_grad=True)
    grid = on_test_device(RNG.uniform(-1.3, 1.3, (1, 2, 3, 2)), requires_grad=True)

    def sample(x, g):
        return F.grid_sample(x, g, padding_mode=padding_mode, align_corners=align_corners)

    assert gradcheck(sample, (image, grid))


@pytest.mark.gradcheck
@pytest.mark.parametrize("size", [[2, 1, 3, 4], [1, 1, 2, 3, 2]])
def test_affine_grid_gradcheck(size):
    k = len(size) - 2
    theta = on_test_device(values(size[0], k, k + 1, dtype=np.float64), requires_grad=True)
    for align_corners in (False, True):

        def grid(t, align_corners=align_corners):
            return F.affine_grid(t, size, align_corners=align_corners)

        assert gradcheck(grid, (theta,))


def test_affine_grid_of_the_identity_lists_the_pixel_centres():
    identity = on_test_device(np.eye(2, 3, dtype=np.float32)[None])
    height, width = 3, 4
    for align_corners in (False, True):
        grid = F.affine_grid(identity, [1, 1, height, width], align_corners=align_corners)
        if align_corners:
            xs, ys = np.linspace(-1, 1, width), np.linspace(-1, 1, height)
        else:
            xs, ys = (
                (2 * np.arange(width) + 1) / width - 1,
                (2 * np.arange(height) + 1) / height - 1,
            )
        want = np.stack(np.meshgrid(xs, ys), axis=-1)[None]  # (1, H, W, [x, y])
        assert_close(grid, want.astype(np.float32), rtol=1e-6, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 1, 6], [2, 2, 3, 4, 5]])
def test_affine_grid_matches_pytorch(size):
    k = len(size) - 2
    theta = values(2, k, k + 1)
    for align_corners in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unit-size warning, checked below

            def make(f, align_corners=align_corners):
                return lambda t: f.affine_grid(t, size, align_corners=align_corners)

            run_both(make(F), make(torch.nn.functional), [theta])


@needs_torch
def test_grid_functions_warn_as_pytorch():
    image, grid = on_test_device(values(1, 1, 2, 2)), on_test_device(values(1, 1, 1, 2))
    theta = on_test_device(np.eye(2, 3, dtype=np.float32)[None])
    calls = [
        (lambda f, x, g, t: f.grid_sample(x, g), "align_corners=False since 1.3.0"),
        (lambda f, x, g, t: f.affine_grid(t, [1, 1, 2, 2]), "align_corners=False since 1.3.0"),
        (lambda f, x, g, t: f.affine_grid(t, [1, 1, 1, 3], True), "unit-size grids"),
    ]
    for call, match in calls:
        with pytest.warns(UserWarning, match=match) as ours:
            call(F, image, grid, theta)
        with pytest.warns(UserWarning, match=match) as theirs:
            t_args = (
                torch.tensor(values(1, 1, 2, 2)),
                torch.zeros(1, 1, 1, 2),
                torch.eye(2, 3)[None],
            )
            call(torch.nn.functional, *t_args)
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def _grid_error_cases():
    """(call, input shape, grid shape, kwargs): bad shapes, dtypes and modes."""
    f32, f64, i64 = "float32", "float64", "int64"
    sample = [
        ((2, 1, 3, 3), (1, 2, 2, 2), f32, f32, {}),
        ((1, 1, 3, 3), (1, 2, 2, 3), f32, f32, {}),
        ((1, 3, 3), (1, 2, 2, 2), f32, f32, {}),
        ((1, 1, 0, 3), (1, 2, 2, 2), f32, f32, {}),
        ((1, 1, 3, 3), (1, 2, 2), f32, f32, {}),
        ((1, 1, 3, 3, 3), (1, 2, 2, 2), f32, f32, {}),
        ((1, 1, 3, 3), (1, 2, 2, 2), f32, f64, {}),
        ((1, 1, 3, 3), (1, 2, 2, 2), f64, f32, {}),
        ((1, 1, 3, 3), (1, 2, 2, 2), i64, i64, {}),
        ((1, 1, 3, 3), (1, 2, 2, 2), f32, f32, {"mode": "bicubicle"}),
        ((1, 1, 3, 3), (1, 2, 2, 2), f32, f32, {"padding_mode": "wrap"}),
        ((1, 1, 3, 3, 3), (1, 2, 2, 2, 3), f32, f32, {"mode": "bicubic"}),
    ]
    for input_shape, grid_shape, input_dtype, grid_dtype, kwargs in sample:
        yield (
            lambda f, T, a=input_shape, b=grid_shape, c=input_dtype, d=grid_dtype, k=kwargs: (
                f.grid_sample(
                    T.zeros(a, dtype=getattr(T, c)),
                    T.zeros(b, dtype=getattr(T, d)),
                    align_corners=False,
                    **k,
                )  # fmt: skip
            )
        )
    affine = [
        ((1, 2, 3), f32, [1, 1, 2]),
        ((1, 2, 4), f32, [1, 1, 2, 2]),
        ((1, 2, 3), f32, [1, 1, 2, 2, 2]),
        ((1, 2, 3), i64, [1, 1, 2, 2]),
        ((1, 2, 3), f32, [1, 1, 0, 2]),
        ((2, 2, 3), f32, [1, 1, 2, 2]),
    ]
    for theta_shape, dtype, size in affine:
        yield lambda f, T, a=theta_shape, d=dtype, s=size: f.affine_grid(
            T.zeros(a, dtype=getattr(T, d)), s, align_corners=False
        )


@needs_torch
@pytest.mark.errors
@pytest.mark.parametrize("case", list(_grid_error_cases()))
def test_grid_function_errors_match_pytorch(case):
    """The same exception class and the same words as PyTorch."""
    with pytest.raises(Exception) as theirs:
        case(torch.nn.functional, torch)
    with pytest.raises(type(theirs.value)) as ours:
        case(F, gt)
    assert str(ours.value) == str(theirs.value)


def test_grid_sample_bicubic_is_not_implemented():
    """A documented difference: PyTorch has mode="bicubic" for 4-D input; glasstorch says so."""
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(gt.zeros(1, 1, 3, 3), gt.zeros(1, 2, 2, 2), "bicubic", align_corners=False)
