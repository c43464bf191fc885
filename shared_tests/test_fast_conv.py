"""The fast tier's convolution on images too large for the wide grid (``fast/csrc/conv.c``).

Stride-1 convolutions normally read their input through a padded copy of
each sample (the wide grid); above WIDE_MAX_BYTES a thread (8 MiB) they go
through the tiles of im2col instead, whose memory stays bounded whatever the
image. These images are too large for the reference tier's loops, so the
answers are checked against NumPy, in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided

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
