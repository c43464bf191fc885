"""The 8x8 handwritten digits, bundled with glasstorch: a real dataset that needs no download.

Source: E. Alpaydin and C. Kaynak, "Optical Recognition of Handwritten Digits",
UCI Machine Learning Repository, 1998, DOI 10.24432/C50P49, licensed under
Creative Commons Attribution 4.0 (CC BY 4.0). The 1797 images are the UCI test
set (``optdigits.tes``), the copy scikit-learn ships as ``digits.csv.gz``. Each
32x32 bitmap of a digit was cut into 4x4 blocks and the "on" pixels of each block
counted, giving an 8x8 image of integers 0..16. See ``data/README.md``.

glasstorch stores it as ``data/digits.npz`` (NumPy's zip of arrays, read with
``allow_pickle=False``): ``images``, ``uint8`` of shape (1797, 8, 8), and ``labels``,
``uint8`` of shape (1797,).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

import numpy as np

import glasstorch
from glasstorch.datasets.utils import VisionDataset

__all__ = ["Digits", "load_digits_arrays", "DIGITS_PATH"]

#: The bundled file.
DIGITS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")

#: Size of the fixed test split.
TEST_SIZE = 360
#: Seed of the fixed split's permutation (NumPy's legacy ``RandomState``, whose
#: stream NumPy guarantees never to change).
SPLIT_SEED = 0


@lru_cache(maxsize=1)
def load_digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The bundled images ``(1797, 8, 8)`` and labels ``(1797,)``, both ``uint8``, read-only."""
    with np.load(DIGITS_PATH, allow_pickle=False) as archive:
        images, labels = archive["images"], archive["labels"]
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def split_indices(split: str) -> np.ndarray:
    """Indices of the fixed ``"train"`` (1437), ``"test"`` (360) or ``"all"`` (1797) split.

    The split is a permutation of ``0..1796`` from ``numpy.random.RandomState(0)``:
    its last 360 indices are the test set, the first 1437 the training set.
    """
    count = len(load_digits_arrays()[1])
    if split == "all":
        return np.arange(count)
    order = np.random.RandomState(SPLIT_SEED).permutation(count)
    if split == "train":
        return np.sort(order[: count - TEST_SIZE])
    if split == "test":
        return np.sort(order[count - TEST_SIZE :])
    raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")


class Digits(VisionDataset):
    """The 8x8 handwritten digits (10 classes), bundled with glasstorch; no download.

    1797 grey images of digits 0-9 with pixel values 0..16, from the UCI "Optical
    Recognition of Handwritten Digits" data (E. Alpaydin and C. Kaynak, DOI
    10.24432/C50P49, CC BY 4.0).

    Args:
        train: the training split (1437 images) or the test split (360 images).
        transform: called on each image (a tensor, see below).
        target_transform: called on each label.
        split: ``"train"``, ``"test"`` or ``"all"`` (1797 images); overrides ``train``.

    Items:
        ``(image, label)``: ``image`` is a float32 tensor of shape ``(1, 8, 8)``
        with values in ``[0, 1]`` (the pixel counts divided by 16, their maximum;
        ``ToTensor`` would divide by 255, the wrong scale for this data), and
        ``label`` an ``int``.

    The split is fixed and the same everywhere: a permutation of the 1797 indices
    from ``numpy.random.RandomState(0)``; the last 360 are the test set.

    Attributes:
        data: the split's raw images, a ``uint8`` tensor of shape ``(N, 8, 8)``.
        targets: the split's labels, an ``int64`` tensor of shape ``(N,)``.
        classes: ``["0", "1", ..., "9"]``.

    Example::

        >>> train = Digits(train=True)
        >>> len(train), train[0][0].shape
        (1437, torch.Size([1, 8, 8]))
    """

    classes = [str(digit) for digit in range(10)]

    def __init__(
        self,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        split: str | None = None,
    ):
        super().__init__(None, transform, target_transform)
        self.split = split if split is not None else ("train" if train else "test")
        self.train = self.split == "train"
        indices = split_indices(self.split)
        images, labels = load_digits_arrays()
        self._images = np.ascontiguousarray(images[indices])
        self._labels = labels[indices].astype(np.int64)
        self._scaled = (self._images / np.float32(16)).astype(np.float32)[:, None]
        self.data = glasstorch.from_numpy(self._images)
        self.targets = glasstorch.from_numpy(self._labels)

    def __getitem__(self, index: int):
        image = glasstorch.from_numpy(self._scaled[index].copy())
        return self._apply_transforms(image, int(self._labels[index]))

    def __len__(self) -> int:
        return len(self._labels)

    def extra_repr(self) -> str:
        return f"Split: {self.split.capitalize()}"
