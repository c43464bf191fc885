"""The bundled 8x8 digits: size, split, dtype, range, labels, transforms and repr."""

from __future__ import annotations

import os

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.datasets import Digits, transforms
from glasstorch.datasets.digits import DIGITS_PATH, load_digits_arrays, split_indices

pytestmark = pytest.mark.datasets

#: The dataset reads its bundled file into CPU tensors; a program moves batches to the device.
HOST_FILE = pytest.mark.cpu_only("the bundled file is read into CPU tensors")


@HOST_FILE
def test_bundled_file_is_small_and_complete():
    assert os.path.getsize(DIGITS_PATH) < 100_000
    images, labels = load_digits_arrays()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.uint8
    assert images.min() == 0 and images.max() == 16
    # Class counts of the UCI optdigits test set.
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # The first image is a zero; its first row is a known fact of the data set.
    assert labels[0] == 0
    assert images[0, 0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]


@HOST_FILE
def test_bundled_data_is_documented():
    readme = os.path.join(os.path.dirname(DIGITS_PATH), "README.md")
    text = open(readme, encoding="utf-8").read()
    for fact in ("Alpaydin", "Kaynak", "10.24432/C50P49", "CC BY 4.0", "UCI"):
        assert fact in text
    import glasstorch.datasets

    assert "10.24432/C50P49" in glasstorch.datasets.__doc__
    assert "CC BY 4.0" in Digits.__doc__


@HOST_FILE
def test_split_sizes_and_disjoint():
    train, test, every = split_indices("train"), split_indices("test"), split_indices("all")
    assert len(train) == 1437 and len(test) == 360 and len(every) == 1797
    assert not set(train.tolist()) & set(test.tolist())
    assert sorted(train.tolist() + test.tolist()) == list(range(1797))
    # Fixed: documented as RandomState(0)'s permutation, last 360 are the test set.
    order = np.random.RandomState(0).permutation(1797)
    assert test.tolist() == sorted(order[-360:].tolist())
    with pytest.raises(ValueError, match="split must be"):
        split_indices("validation")


@HOST_FILE
def test_items_shape_dtype_range():
    train = Digits(train=True)
    test = Digits(train=False)
    assert len(train) == 1437 and len(test) == 360
    assert len(Digits(split="all")) == 1797
    assert len(Digits(train=True, split="test")) == 360  # split wins
    image, label = train[0]
    assert isinstance(label, int) and 0 <= label <= 9
    assert tuple(image.shape) == (1, 8, 8) and image.dtype == gt.float32
    values = np.stack([train[i][0].numpy() for i in range(len(train))])
    assert values.min() == 0.0 and values.max() == 1.0
    # Values are the raw pixel counts / 16.
    np.testing.assert_array_equal(values[:, 0] * 16, train.data.numpy().astype(np.float32))
    assert train.data.dtype == gt.uint8 and tuple(train.data.shape) == (1437, 8, 8)
    assert train.targets.dtype == gt.int64
    counts = np.bincount(train.targets.numpy(), minlength=10) + np.bincount(
        test.targets.numpy(), minlength=10
    )
    assert counts.tolist() == np.bincount(load_digits_arrays()[1]).tolist()
    # Every class appears in the test split.
    assert (np.bincount(test.targets.numpy(), minlength=10) > 0).all()
    assert train.classes == [str(d) for d in range(10)]


@HOST_FILE
def test_items_match_the_source_rows():
    every = Digits(split="all")
    images, labels = load_digits_arrays()
    for index in (0, 1, 500, 1796):
        image, label = every[index]
        np.testing.assert_array_equal(image.numpy()[0] * 16, images[index])
        assert label == labels[index]
    with pytest.raises(IndexError):
        every[1797]


@HOST_FILE
def test_items_are_independent_copies():
    train = Digits()
    image, _ = train[3]
    image.mul_(0)
    assert float(train[3][0].sum()) > 0


@HOST_FILE
def test_transforms_are_applied():
    train = Digits(
        transform=transforms.Normalize((0.5,), (0.5,)), target_transform=lambda y: y + 100
    )
    image, label = train[0]
    raw, raw_label = Digits()[0]
    np.testing.assert_allclose(image.numpy(), (raw.numpy() - 0.5) / 0.5, rtol=1e-6)
    assert label == raw_label + 100


@HOST_FILE
def test_repr():
    text = repr(Digits(train=False, transform=transforms.Lambda(lambda x: x)))
    assert text.splitlines() == [
        "Dataset Digits",
        "    Number of datapoints: 360",
        "    Split: Test",
        "    Transform: Lambda()",
    ]


def test_feeds_a_dataloader(device):
    from glasstorch.utils.data import DataLoader

    loader = DataLoader(Digits(train=False), batch_size=100, shuffle=False)
    batches = list(loader)
    assert [len(labels) for _, labels in batches] == [100, 100, 100, 60]
    images, labels = batches[0]
    assert tuple(images.shape) == (100, 1, 8, 8) and images.dtype == gt.float32
    assert labels.dtype == gt.int64
    np.testing.assert_array_equal(labels.numpy(), Digits(train=False).targets.numpy()[:100])
    images, labels = images.to(device), labels.to(device)  # as a training program does
    assert images.device.type == device and labels.device.type == device
    pixels = images.flatten(1)
    np.testing.assert_allclose(
        pixels.mean(1).cpu().numpy(), batches[0][0].numpy().reshape(100, 64).mean(1), rtol=1e-5
    )
    counts = gt.zeros(10, dtype=gt.int64, device=device).index_add_(
        0, labels, gt.ones(100, dtype=gt.int64, device=device)
    )
    assert counts.tolist() == np.bincount(labels.cpu().numpy(), minlength=10).tolist()
