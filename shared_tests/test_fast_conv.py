"""The fast tier's convolution and batch-norm kernels (``fast/csrc/conv.c``,
``batch_norm.c``) where the conformance tests through the frontend do not reach.

Stride-1 convolutions normally read their input through a padded copy of
each sample (the wide grid); above WIDE_MAX_BYTES a thread (8 MiB) they go
through the tiles of im2col instead, whose memory stays bounded whatever the
image. These images are too large for the reference tier's loops, so the
answers are checked against NumPy, in float64.

``batch_norm_update_stats`` rounds every step to the dtype; it is compared
with the reference tier bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided
from glasstorch.reference import ReferenceKernels

pytestmark = pytest.mark.contract

fast_conv = pytest.importorskip(
    "glasstorch.fast.conv", reason="the fast tier's C extension is not built", exc_type=ImportError
)

FAST = kernels_under_test(fast_conv.ConvKernels())


def strided(array: np.ndarray) -> Strided:
    array = np.ascontiguousarray(array)
    return Strided(
        array.reshape(-1), array.shape, tuple(s // array.itemsize for s in array.strides), 0
    )


def numpy_conv2d(x: np.ndarray, w: np.ndarray, padding: int) -> np.ndarray:
    """Stride 1, no dilation, one group: every window times every filter."""
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", windows, w)


def test_a_large_image_takes_the_tiles_and_matches_numpy(device):
    # 64 output channels of 3 x 200 x 200: the wide product alone would be
    # 64 x 200 x 202 doubles, 20 MiB, for each thread.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 200, 200))
    w = rng.standard_normal((64, 3, 3, 3))
    dy = rng.standard_normal((2, 64, 200, 200))
    out, x_view, w_view = np.zeros((2, 64, 200, 200)), strided(x), strided(w)
    out_view = strided(out)
    FAST.conv2d(out_view, x_view, w_view, None, (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(
        out_view.buffer.reshape(out.shape), numpy_conv2d(x, w, 1), rtol=1e-10, atol=1e-10
    )

    grad_w = strided(np.zeros(w.shape))
    FAST.conv2d_backward_weight(grad_w, strided(dy), x_view, (1, 1), (1, 1), (1, 1), 1)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    expected = np.einsum("nchwij,nohw->ocij", windows, dy)
    np.testing.assert_allclose(grad_w.buffer.reshape(w.shape), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("running", [True, False])
def test_batch_norm_update_stats_matches_the_reference_bit_for_bit(dtype, running):
    rng = np.random.default_rng(11)
    c = 37
    mean = rng.standard_normal(c).astype(dtype)
    var = rng.uniform(0, 3, c).astype(dtype)
    var[:3] = (0.0, np.inf, 1e-30)  # 1 / sqrt(eps), 0, and a variance eps swamps
    answers = []
    for kernels in (FAST, ReferenceKernels()):
        start = np.random.default_rng(12)  # the same running statistics for both tiers
        stats = [start.standard_normal(c).astype(dtype) for _ in range(2)] if running else None
        views = [strided(np.full(c, np.nan, dtype))]
        views += [strided(s) for s in stats] if running else [None, None]
        kernels.batch_norm_update_stats(
            views[0], views[1], views[2], strided(mean), strided(var), 0.1, 1e-5, 96
        )
        answers.append([v.buffer for v in views if v is not None])
    for fast, reference in zip(*answers):
        np.testing.assert_array_equal(fast, reference)
    invstd = answers[1][0]
    np.testing.assert_allclose(invstd, 1 / np.sqrt(var.astype(np.float64) + 1e-5), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [8, 12, 16, 32])
@pytest.mark.parametrize("channels_out", [13, 16])
def test_wide_grid_rows_with_and_without_whole_tiles_match_numpy(
    dtype, width, channels_out, device
):
    # Output rows 8, 16 and 32 wide are whole GEMM tiles of columns at some
    # vector width (the product then writes the output row by row), 12 at none
    # (the wide rows, padding columns included, then copied out); with a bias.
    rng = np.random.default_rng(width + channels_out)
    x = rng.standard_normal((2, 5, width, width)).astype(dtype)
    w = rng.standard_normal((channels_out, 5, 3, 3)).astype(dtype)
    bias = rng.standard_normal(channels_out).astype(dtype)
    out = np.full((2, channels_out, width, width), np.nan, dtype)
    out_view = strided(out)
    FAST.conv2d(out_view, strided(x), strided(w), strided(bias), (1, 1), (1, 1), (1, 1), 1)
    want = numpy_conv2d(x.astype(np.float64), w.astype(np.float64), 1)
    want += bias.astype(np.float64)[None, :, None, None]
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(
        out_view.buffer.reshape(out.shape), want, rtol=tolerance, atol=tolerance
    )


@pytest.mark.parametrize(
    ("c_in", "c_out", "groups", "width", "kernel"),
    [
        (16, 16, 1, 32, (3, 3)),  # ResNet-20's first stage: whole tiles of kernel rows
        (7, 32, 1, 32, (3, 3)),  # 21 kernel rows: edge tiles; two blocks of 16 channels
        (14, 32, 2, 33, (3, 3)),  # groups, rows of an odd width
        (4, 16, 1, 32, (5, 3)),  # 5 kernel rows a channel
        (3, 16, 1, 32, (3, 3)),  # 27 taps: the packed product (gt_gemm_cols)
        (16, 16, 1, 31, (3, 3)),  # rows of 31: the packed product
    ],
)
def test_weight_gradient_on_the_wide_grid_matches_numpy(c_in, c_out, groups, width, kernel, device):
    # float32 stride-1 weight gradients with 16k output channels a group, 3
    # taps a kernel row, 48 taps or more and rows of 32 or more take the
    # transposed product (dW^T = cols dy^T, the padded input read in place);
    # the others the packed one. Three samples: the two threads get different
    # numbers.
    rng = np.random.default_rng(c_in + c_out + width)
    kh, kw = kernel
    x = rng.standard_normal((3, c_in, width, width)).astype(np.float32)
    dy = rng.standard_normal((3, c_out, width, width)).astype(np.float32)
    grad_w = np.full((c_out, c_in // groups, kh, kw), np.nan, np.float32)
    grad_view = strided(grad_w)
    padding = (kh // 2, kw // 2)
    FAST.conv2d_backward_weight(grad_view, strided(dy), strided(x), (1, 1), padding, (1, 1), groups)
    x64 = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (kh // 2,) * 2, (kw // 2,) * 2))
    windows = np.lib.stride_tricks.sliding_window_view(x64, kernel, axis=(2, 3))
    c_group, o_group = c_in // groups, c_out // groups
    want = np.concatenate(
        [
            np.einsum(
                "nchwij,nohw->ocij",
                windows[:, g * c_group : (g + 1) * c_group],
                dy[:, g * o_group : (g + 1) * o_group].astype(np.float64),
            )
            for g in range(groups)
        ]
    )
    got = grad_view.buffer.reshape(grad_w.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
