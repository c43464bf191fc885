"""Image transforms: values against NumPy, reprs as torchvision prints them, and seeding."""

from __future__ import annotations

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.datasets.transforms import (
    Compose,
    Lambda,
    Normalize,
    RandomCrop,
    RandomHorizontalFlip,
    ToTensor,
)

pytestmark = pytest.mark.datasets

#: The transforms read NumPy images (host memory); those that take tensors run on the device.
HOST_IMAGES = pytest.mark.cpu_only("transforms of NumPy images in host memory")


def image(h=4, w=5, c=3, seed=0) -> np.ndarray:
    shape = (h, w) if c is None else (h, w, c)
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


# ------------------------------------------------------------------- ToTensor
@HOST_IMAGES
def test_to_tensor_hwc_uint8():
    array = image()
    out = ToTensor()(array)
    assert out.dtype == gt.float32 and tuple(out.shape) == (3, 4, 5)
    assert out.is_contiguous()
    expected = array.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.numpy().min() >= 0 and out.numpy().max() <= 1


@HOST_IMAGES
def test_to_tensor_2d_and_copies():
    array = image(c=None)
    out = ToTensor()(array)
    assert tuple(out.shape) == (1, 4, 5)
    np.testing.assert_array_equal(out.numpy()[0], array / np.float32(255))
    floats = np.linspace(0, 3, 12, dtype=np.float64).reshape(2, 2, 3)
    kept = ToTensor()(floats)
    assert kept.dtype == gt.float64  # non-uint8 keeps dtype and values, as torchvision
    np.testing.assert_array_equal(kept.numpy(), floats.transpose(2, 0, 1))
    floats[0, 0, 0] = 99
    assert kept.numpy()[0, 0, 0] == 0  # a copy, not a view


@HOST_IMAGES
def test_to_tensor_errors():
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        ToTensor()(gt.zeros(3, 4, 4))
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 1 dimensions."):
        ToTensor()(np.zeros(3, np.uint8))


# ------------------------------------------------------------------ Normalize
def test_normalize_per_channel(device):
    x = ToTensor()(image()).to(device)
    mean, std = (0.1, 0.5, 0.9), (0.2, 0.25, 2.0)
    out = Normalize(mean, std)(x)
    expected = (x.cpu().numpy() - np.array(mean, np.float32)[:, None, None]) / np.array(
        std, np.float32
    )[:, None, None]
    assert out.device.type == device
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6, atol=1e-7)
    assert out.dtype == gt.float32
    np.testing.assert_array_equal(x.cpu().numpy(), ToTensor()(image()).numpy())  # input untouched


def test_normalize_batch_and_inplace(device):
    x = gt.from_numpy(np.random.default_rng(1).random((2, 3, 2, 2))).to(device)
    before = x.cpu().numpy().copy()
    out = Normalize([0.5, 0.0, 1.0], [1.0, 2.0, 4.0], inplace=True)(x)
    assert out.data_ptr() == x.data_ptr()
    expected = (before - np.array([0.5, 0, 1])[:, None, None]) / np.array([1, 2, 4.0])[
        :, None, None
    ]
    assert x.device.type == device
    np.testing.assert_allclose(x.cpu().numpy(), expected, rtol=1e-12)


def test_normalize_errors(device):
    with pytest.raises(TypeError, match="Input tensor should be a torch tensor"):
        Normalize([0.5], [0.5])(np.zeros((1, 2, 2)))
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got torch.uint8"):
        Normalize([0.5], [0.5])(gt.zeros(1, 2, 2, dtype=gt.uint8, device=device))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        Normalize([0.5], [0.0])(gt.zeros(1, 2, 2, device=device))
    with pytest.raises(ValueError, match="Expected tensor to be a tensor image of size"):
        Normalize([0.5], [0.5])(gt.zeros(2, 2, device=device))


# -------------------------------------------------------------------- flipping
def test_horizontal_flip_always_and_never(device):
    array = image()
    np.testing.assert_array_equal(RandomHorizontalFlip(p=1.0)(array), array[:, ::-1])
    np.testing.assert_array_equal(RandomHorizontalFlip(p=0.0)(array), array)
    tensor = ToTensor()(array).to(device)
    flipped = RandomHorizontalFlip(1.0)(tensor)
    assert flipped.device.type == device
    np.testing.assert_array_equal(flipped.cpu().numpy(), tensor.cpu().numpy()[..., ::-1])


@HOST_IMAGES
def test_horizontal_flip_follows_the_generator():
    array = image(c=None)
    flip = RandomHorizontalFlip(p=0.5)
    gt.manual_seed(7)
    draws = [gt.rand(1).item() < 0.5 for _ in range(20)]
    assert any(draws) and not all(draws)
    gt.manual_seed(7)
    for flipped in draws:
        expected = array[:, ::-1] if flipped else array
        np.testing.assert_array_equal(flip(array), expected)


# ---------------------------------------------------------------------- crops
@HOST_IMAGES
def test_random_crop_follows_the_generator():
    array = image(h=6, w=7)
    crop = RandomCrop((3, 4))
    gt.manual_seed(3)
    corners = [
        (gt.randint(0, 4, size=(1,)).item(), gt.randint(0, 4, size=(1,)).item()) for _ in range(10)
    ]
    gt.manual_seed(3)
    for top, left in corners:
        np.testing.assert_array_equal(crop(array), array[top : top + 3, left : left + 4])
    assert len(set(corners)) > 1


def test_random_crop_with_padding_on_tensor(device):
    x = ToTensor()(image(h=4, w=4)).to(device)
    crop = RandomCrop(4, padding=2, fill=0.5)
    padded = np.pad(x.cpu().numpy(), [(0, 0), (2, 2), (2, 2)], constant_values=0.5)
    gt.manual_seed(11)
    top, left = gt.randint(0, 5, size=(1,)).item(), gt.randint(0, 5, size=(1,)).item()
    gt.manual_seed(11)
    out = crop(x)
    assert tuple(out.shape) == (3, 4, 4) and out.dtype == gt.float32
    assert out.device.type == device
    np.testing.assert_array_equal(out.cpu().numpy(), padded[:, top : top + 4, left : left + 4])


@HOST_IMAGES
@pytest.mark.parametrize(
    "padding, widths",
    [
        (1, [(1, 1), (1, 1)]),
        ((1, 2), [(2, 2), (1, 1)]),  # (left/right, top/bottom)
        ((1, 2, 3, 4), [(2, 4), (1, 3)]),  # (left, top, right, bottom)
    ],
)
def test_random_crop_padding_forms(padding, widths):
    array = image(h=3, w=3, c=None)
    padded = np.pad(array, widths, constant_values=0)
    crop = RandomCrop(padded.shape, padding=padding)  # full size: no randomness
    np.testing.assert_array_equal(crop(array), padded)


@HOST_IMAGES
def test_random_crop_pad_if_needed_and_modes():
    array = image(h=2, w=3, c=None)
    out = RandomCrop((4, 5), pad_if_needed=True, fill=9)(array)
    assert out.shape == (4, 5)
    padded = np.pad(array, [(2, 2), (2, 2)], constant_values=9)  # each side by the shortfall
    windows = [padded[i : i + 4, j : j + 5] for i in range(3) for j in range(3)]
    assert any(np.array_equal(out, window) for window in windows)
    edge = RandomCrop((4, 5), padding=(1, 1), padding_mode="edge")(array)
    np.testing.assert_array_equal(edge, np.pad(array, 1, mode="edge"))
    with pytest.raises(ValueError, match="Required crop size \\(5, 5\\) is larger than input"):
        RandomCrop(5)(array)
    with pytest.raises(ValueError, match="Padding mode should be either"):
        RandomCrop(2, padding_mode="wrap")
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4"):
        RandomCrop(2, padding=(1, 2, 3))


@HOST_IMAGES
def test_pad_if_needed_values():
    array = np.arange(6, dtype=np.uint8).reshape(2, 3)
    out = RandomCrop((2, 5), pad_if_needed=True, fill=7)(array)
    # width 3 -> padded by 2 on both sides to 7, then a random 5-wide window.
    padded = np.pad(array, [(0, 0), (2, 2)], constant_values=7)
    assert any(np.array_equal(out, padded[:, j : j + 5]) for j in range(3))


# -------------------------------------------------------- Compose, Lambda, repr
@HOST_IMAGES
def test_compose_and_lambda():
    pipeline = Compose([ToTensor(), Lambda(lambda t: t * 2), Normalize([1.0], [0.5])])
    array = image(c=None)
    expected = (array[None] / np.float32(255) * 2 - 1) / 0.5
    np.testing.assert_allclose(pipeline(array).numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        Lambda(3)


@HOST_IMAGES
def test_reprs_like_torchvision():
    assert repr(ToTensor()) == "ToTensor()"
    assert repr(Normalize((0.5,), (0.25,))) == "Normalize(mean=(0.5,), std=(0.25,))"
    assert repr(RandomHorizontalFlip()) == "RandomHorizontalFlip(p=0.5)"
    assert repr(RandomCrop(32, padding=4)) == "RandomCrop(size=(32, 32), padding=4)"
    assert repr(Lambda(abs)) == "Lambda()"
    assert repr(Compose([ToTensor(), RandomHorizontalFlip(0.3)])) == (
        "Compose(\n    ToTensor()\n    RandomHorizontalFlip(p=0.3)\n)"
    )


@HOST_IMAGES
def test_pipeline_reproducible_under_manual_seed():
    pipeline = Compose(
        [
            ToTensor(),
            RandomCrop(6, padding=2),
            RandomHorizontalFlip(),
            Normalize([0.5] * 3, [0.5] * 3),
        ]
    )
    images = [image(h=6, w=6, seed=s) for s in range(8)]
    gt.manual_seed(1234)
    first = [pipeline(img).numpy().copy() for img in images]
    gt.manual_seed(1234)
    second = [pipeline(img).numpy().copy() for img in images]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    gt.manual_seed(4321)
    third = [pipeline(img).numpy().copy() for img in images]
    assert any(not np.array_equal(a, c) for a, c in zip(first, third))
    # Drawing one more number first shifts every later draw.
    gt.manual_seed(1234)
    gt.rand(1)
    shifted = [pipeline(img).numpy().copy() for img in images]
    assert any(not np.array_equal(a, s) for a, s in zip(first, shifted))
