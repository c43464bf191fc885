"""Datasets and image transforms: ``glasstorch.datasets``.

Why ``glasstorch.datasets`` and not ``glasstorch.vision``? In PyTorch these live in a
separate package, torchvision (``torchvision.datasets``, ``torchvision.transforms``).
glasstorch is one package, so they get one subpackage named for what a learner is
looking for: data to train on. The names inside match torchvision's, so code written
for torchvision needs only its imports changed::

    from glasstorch.datasets import MNIST, transforms   # was: from torchvision ...

What is here:

* :class:`Digits`: the 8x8 handwritten digits (1797 images), **bundled** with the
  package so the demo and tutorials work offline. Data: E. Alpaydin and C. Kaynak,
  "Optical Recognition of Handwritten Digits", UCI Machine Learning Repository,
  DOI 10.24432/C50P49, license CC BY 4.0 (see ``datasets/data/README.md``).
* :class:`MNIST` and :class:`FashionMNIST`: readers for the IDX files in
  ``root/<ClassName>/raw/`` (raw or ``.gz``), with ``download=True`` fetching the
  official files and checking their MD5 checksums.
* :class:`CIFAR10`: a reader for the python batches in ``root/cifar-10-batches-py/``,
  through an unpickler that refuses to run code (:class:`RestrictedUnpickler`).
* :mod:`~glasstorch.datasets.transforms`: ``Compose``, ``ToTensor``, ``Normalize``,
  ``RandomHorizontalFlip``, ``RandomCrop`` and ``Lambda``.

Every dataset is map-style: ``dataset[i]`` is ``(image, label)`` and ``len(dataset)``
its size, which is all a DataLoader needs. No dataset needs PIL: images are NumPy
arrays laid out as PIL would (``H x W`` or ``H x W x C``) until ``ToTensor`` makes
``C x H x W`` tensors of them.
"""

from glasstorch.datasets import transforms
from glasstorch.datasets.cifar import CIFAR10, RestrictedUnpickler
from glasstorch.datasets.digits import Digits
from glasstorch.datasets.mnist import MNIST, FashionMNIST, read_idx
from glasstorch.datasets.utils import DatasetFileError, VisionDataset

__all__ = [
    "CIFAR10",
    "MNIST",
    "DatasetFileError",
    "Digits",
    "FashionMNIST",
    "RestrictedUnpickler",
    "VisionDataset",
    "read_idx",
    "transforms",
]
