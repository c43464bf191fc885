"""MNIST and Fashion-MNIST, read from IDX files.

The IDX format (from the MNIST distribution) is a tiny header and a block of numbers:

====== ============================================================================
bytes  meaning
====== ============================================================================
0-1    zero
2      the element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
       0x0D float32, 0x0E float64
3      the number of dimensions, ``n``
4..    ``n`` sizes, each a big-endian unsigned 32-bit integer
then   the elements, row-major, big-endian
====== ============================================================================

So an image file ``train-images-idx3-ubyte`` starts ``00 00 08 03`` (uint8, 3-D)
followed by the sizes 60000, 28, 28; a label file starts ``00 00 08 01``. The files
are usually gzip-compressed (``.gz``); :func:`read_idx` reads both forms.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable

import numpy as np

import glasstorch
from glasstorch.datasets.utils import DatasetFileError, VisionDataset, download_file

__all__ = ["read_idx", "MNIST", "FashionMNIST"]

#: IDX type code -> NumPy element type (big-endian, as stored).
IDX_TYPES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _read_bytes(path: str) -> bytes:
    """A file's bytes, gunzipped when it starts with the gzip magic number."""
    with open(path, "rb") as stream:
        data = stream.read()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise DatasetFileError(
                f"{path} is a gzip file but could not be decompressed ({error}): it is "
                "truncated or corrupt. Delete it and download it again."
            ) from error
    return data


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (raw or gzip-compressed) into a NumPy array in native byte order.

    Raises:
        DatasetFileError: the file is not IDX (bad magic number or type code) or is
            shorter or longer than its header says.
    """
    path = os.fspath(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise DatasetFileError(
            f"{path} is too short to be an IDX file ({len(data)} bytes; the header alone is 4)"
        )
    if data[0] != 0 or data[1] != 0:
        raise DatasetFileError(
            f"{path} is not an IDX file: it should start with two zero bytes, found "
            f"{data[:4].hex(' ')}"
        )
    type_code, ndim = data[2], data[3]
    if type_code not in IDX_TYPES:
        raise DatasetFileError(
            f"{path}: unknown IDX element type 0x{type_code:02X} (expected one of "
            f"{', '.join(f'0x{c:02X}' for c in IDX_TYPES)})"
        )
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetFileError(
            f"{path} is truncated: its header promises {ndim} dimension sizes but the file "
            f"ends after {len(data)} bytes"
        )
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = IDX_TYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(data) - header
    if found != expected:
        state = "truncated" if found < expected else "longer than its header says"
        raise DatasetFileError(
            f"{path} is {state}: shape {shape} of {dtype.name} needs {expected} bytes of data, "
            f"found {found}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """The MNIST handwritten digits (28x28 grey images, labels 0-9), read from IDX files.

    The files live in ``root/MNIST/raw/`` (``root/FashionMNIST/raw/`` for Fashion-MNIST),
    as in torchvision: ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte``, each raw or with ``.gz``.

    Args:
        root: the folder holding ``MNIST/raw/``.
        train: the 60,000 training images (``True``) or the 10,000 test images.
        transform: called on each image, e.g. ``transforms.ToTensor()``.
        target_transform: called on each label.
        download: fetch the four ``.gz`` files from the official mirrors into
            ``root/MNIST/raw/`` if they are missing, checking their MD5 checksums.

    Items:
        ``(image, label)``: without a transform, ``image`` is a ``uint8`` NumPy
        array of shape ``(28, 28)`` (what ``ToTensor`` expects, in place of a PIL
        image) and ``label`` an ``int``.

    Attributes:
        data: all images, a ``uint8`` tensor of shape ``(N, 28, 28)``.
        targets: all labels, an ``int64`` tensor of shape ``(N,)``.
        classes: the class names.

    Example::

        >>> train = MNIST("data", train=True, transform=transforms.ToTensor())
        >>> image, label = train[0]
        >>> image.shape
        torch.Size([1, 28, 28])
    """

    #: Where ``download=True`` looks, in order.
    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    #: The official files and their MD5 checksums.
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = [
        "0 - zero",
        "1 - one",
        "2 - two",
        "3 - three",
        "4 - four",
        "5 - five",
        "6 - six",
        "7 - seven",
        "8 - eight",
        "9 - nine",
    ]

    def __init__(
        self,
        root: str | os.PathLike,
        train: bool = True,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = False,
    ):
        super().__init__(root, transform, target_transform)
        self.train = train
        if download:
            self.download()
        prefix = "train" if train else "t10k"
        images_path = self._find(f"{prefix}-images-idx3-ubyte")
        labels_path = self._find(f"{prefix}-labels-idx1-ubyte")
        images = read_idx(images_path)
        labels = read_idx(labels_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise DatasetFileError(
                f"{images_path} should hold uint8 images of 3 dimensions (N, H, W), but holds "
                f"{images.dtype} data of shape {images.shape}"
            )
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            raise DatasetFileError(
                f"{labels_path} should hold integer labels, one per image (1 dimension), "
                f"but holds {labels.dtype} data of shape {labels.shape}"
            )
        if len(labels) != len(images):
            raise DatasetFileError(
                f"{images_path} holds {len(images)} images but {labels_path} holds "
                f"{len(labels)} labels"
            )
        self.data = glasstorch.from_numpy(np.ascontiguousarray(images))
        self._images = images
        self._labels = labels.astype(np.int64)
        self.targets = glasstorch.from_numpy(self._labels)

    @property
    def raw_folder(self) -> str:
        """``root/<ClassName>/raw``: where the IDX files are."""
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Class name -> label."""
        return {name: index for index, name in enumerate(self.classes)}

    def _find(self, name: str) -> str:
        for candidate in (name, name + ".gz"):
            path = os.path.join(self.raw_folder, candidate)
            if os.path.isfile(path):
                return path
        raise RuntimeError(
            f"Dataset not found: {os.path.join(self.raw_folder, name)}[.gz] is missing. "
            "You can use download=True to download it"
        )

    def download(self) -> None:
        """Fetch the files that are missing from ``raw_folder`` and check their MD5s."""
        for filename, md5 in self.resources:
            raw_name = filename[: -len(".gz")]
            if os.path.isfile(os.path.join(self.raw_folder, raw_name)):
                continue  # already there, uncompressed
            download_file(filename, self.raw_folder, self.mirrors, md5)

    def __getitem__(self, index: int):
        image = self._images[index].copy()
        target = int(self._labels[index])
        return self._apply_transforms(image, target)

    def __len__(self) -> int:
        return len(self._images)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): 28x28 grey images of clothing in 10 classes, as IDX files.

    The same interface and file names as :class:`MNIST`, under ``root/FashionMNIST/raw/``.
    """

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ]
