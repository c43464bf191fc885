"""CIFAR-10, read from the "python version" batches, with an unpickler that runs no code.

The CIFAR-10 python batches (``cifar-10-batches-py/data_batch_1`` .. ``data_batch_5``
and ``test_batch``) are Python 2 pickles of a dict::

    {"batch_label": str, "labels": [10000 ints], "filenames": [10000 str],
     "data": numpy uint8 array of shape (10000, 3072)}

Each row of ``data`` is one 32x32 colour image: 1024 red values, then 1024 green,
then 1024 blue, each channel row by row.

Why not ``pickle.load``? A pickle is a small program: it may name any importable
function (``os.system``, say) and call it while loading. A downloaded file should not
be able to do that. :class:`RestrictedUnpickler` therefore answers only the names a
CIFAR batch needs. Dicts, lists, strings, bytes and ints need no names at all (they
have their own pickle opcodes); a NumPy array needs exactly three:

* ``numpy.core.multiarray._reconstruct`` (spelt ``numpy._core.multiarray`` by NumPy 2),
  which makes an empty array of a given class,
* ``numpy.ndarray``, the only class it may be given, and
* ``numpy.dtype``, which describes the element type.

Everything else (``os.system``, ``builtins.eval``, ``copyreg``, ``_codecs``, NumPy's
protocol-5 ``_frombuffer``, ...) is refused with :class:`UnsafePickleError` (a :class:`pickle.UnpicklingError`). The
loaded ``data`` must also be a ``uint8`` array, so an ``object`` array cannot sneak in.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from glasstorch.datasets.utils import (
    DatasetFileError,
    VisionDataset,
    calculate_md5,
    check_md5,
    download_file,
    extract_tar,
)

__all__ = ["RestrictedUnpickler", "UnsafePickleError", "restricted_loads", "CIFAR10"]

# NumPy's array-rebuilding function, whatever module NumPy keeps it in.
_RECONSTRUCT = np.ndarray.__reduce__(np.zeros(0))[0]

#: The (module, name) pairs a CIFAR batch may ask for, and what they resolve to.
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle asked for a function or class that :class:`RestrictedUnpickler` refuses."""


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds plain data and NumPy arrays, and refuses every other name.

    ``find_class`` is the one door through which a pickle reaches Python code: every
    function or class a pickle calls is looked up there. Only the entries of
    :data:`ALLOWED_GLOBALS` are answered.
    """

    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"refusing to load {module}.{name}: this unpickler only builds dicts, lists, "
                "strings, bytes, numbers and NumPy arrays (as CIFAR batches need), because "
                "a pickle that names a function can run it"
            ) from None


def restricted_loads(data: bytes, encoding: str = "latin1") -> Any:
    """Unpickle ``data`` with :class:`RestrictedUnpickler`.

    ``encoding="latin1"`` decodes Python 2 ``str`` objects (the CIFAR files' keys and
    the arrays' raw bytes) byte for byte, as NumPy recommends for Python 2 pickles.
    """
    return RestrictedUnpickler(io.BytesIO(data), encoding=encoding).load()


def _text_keys(entry: dict) -> dict:
    """Keys as ``str``, whether the pickle stored them as str or bytes."""
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


def load_batch(path: str) -> tuple[np.ndarray, list[int]]:
    """Read one CIFAR-10 python batch: ``(images (N, 32, 32, 3) uint8 HWC, labels)``."""
    with open(path, "rb") as stream:
        data = stream.read()
    try:
        entry = restricted_loads(data)
    except UnsafePickleError as error:
        raise DatasetFileError(f"{path} cannot be loaded safely: {error}") from error
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
    ) as error:
        raise DatasetFileError(
            f"{path} is not a valid CIFAR batch (truncated or corrupt pickle: "
            f"{type(error).__name__}: {error})"
        ) from error
    if not isinstance(entry, dict):
        raise DatasetFileError(f"{path} holds a {type(entry).__name__}, not a CIFAR batch dict")
    entry = _text_keys(entry)
    if "data" not in entry or "labels" not in entry:
        raise DatasetFileError(f"{path} is not a CIFAR-10 batch: it has no 'data' and 'labels'")
    images, labels = entry["data"], entry["labels"]
    if (
        not isinstance(images, np.ndarray)
        or images.dtype != np.uint8
        or images.ndim != 2
        or images.shape[1] != 3 * 32 * 32
    ):
        described = (
            f"{images.dtype} array of shape {images.shape}"
            if isinstance(images, np.ndarray)
            else type(images).__name__
        )
        raise DatasetFileError(
            f"{path}: 'data' should be a uint8 array of shape (N, 3072), found {described}"
        )
    if not isinstance(labels, list) or not all(
        isinstance(label, int) and not isinstance(label, bool) for label in labels
    ):
        raise DatasetFileError(f"{path}: 'labels' should be a list of ints")
    if len(labels) != len(images):
        raise DatasetFileError(f"{path} holds {len(images)} images but {len(labels)} labels")
    if labels and not 0 <= min(labels) <= max(labels) < 10:
        raise DatasetFileError(f"{path}: labels must lie in 0..9")
    return images.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


class CIFAR10(VisionDataset):
    """CIFAR-10: 60,000 32x32 colour images in 10 classes, from the python batches.

    Args:
        root: the folder holding ``cifar-10-batches-py/``.
        train: the 50,000 training images (``data_batch_1`` .. ``5``) or the 10,000
            test images (``test_batch``).
        transform: called on each image, e.g. ``transforms.ToTensor()``.
        target_transform: called on each label.
        download: fetch ``cifar-10-python.tar.gz`` from cs.toronto.edu into ``root``,
            check its MD5, unpack it and check each batch's MD5.

    Items:
        ``(image, label)``: without a transform, ``image`` is a ``uint8`` NumPy array
        of shape ``(32, 32, 3)`` (height, width, RGB, like a PIL image) and ``label``
        an ``int``.

    Attributes:
        data: all images, a ``uint8`` NumPy array ``(N, 32, 32, 3)``.
        targets: all labels, a list of ints.
        classes: the class names (from ``batches.meta`` when present).

    The batches are read with :class:`RestrictedUnpickler`, never ``pickle.load``.
    """

    base_folder = "cifar-10-batches-py"
    mirrors = ["https://www.cs.toronto.edu/~kriz/"]
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ("data_batch_1", "c99cafc152244af753f735de768cd75f"),
        ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
        ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"),
        ("data_batch_4", "634d18415352ddfa80567beed471001a"),
        ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"),
    ]
    test_list = [("test_batch", "40351d587109b95175f43aff81a1287e")]
    meta = ("batches.meta", "5ff9c542aee3614f3951f8cda6e48888")
    default_classes = [
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
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
        batches = self.train_list if train else self.test_list
        paths = [os.path.join(self.root, self.base_folder, name) for name, _ in batches]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise RuntimeError(
                f"Dataset not found or corrupted: {', '.join(missing)} missing. "
                "You can use download=True to download it"
            )
        images, labels = [], []
        for path in paths:
            batch_images, batch_labels = load_batch(path)
            images.append(batch_images)
            labels.extend(batch_labels)
        self.data = np.ascontiguousarray(np.concatenate(images))
        self.targets = labels
        self.classes = self._load_classes()

    def _load_classes(self) -> list[str]:
        path = os.path.join(self.root, self.base_folder, self.meta[0])
        if not os.path.isfile(path):
            return list(self.default_classes)
        with open(path, "rb") as stream:
            try:
                meta = _text_keys(restricted_loads(stream.read()))
            except (pickle.UnpicklingError, EOFError, ValueError, AttributeError) as error:
                raise DatasetFileError(f"{path} is not a valid CIFAR meta file: {error}") from error
        names = meta.get("label_names")
        if not isinstance(names, list) or len(names) != 10:
            raise DatasetFileError(f"{path}: 'label_names' should be a list of 10 names")
        return [n.decode("latin1") if isinstance(n, bytes) else str(n) for n in names]

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Class name -> label."""
        return {name: index for index, name in enumerate(self.classes)}

    def _check_integrity(self) -> bool:
        """Whether every batch file is present with its official MD5 checksum."""
        folder = os.path.join(self.root, self.base_folder)
        return all(
            check_md5(os.path.join(folder, name), md5)
            for name, md5 in self.train_list + self.test_list
        )

    def download(self) -> None:
        """Fetch and unpack the archive unless every batch is already there and intact."""
        if self._check_integrity():
            return
        archive = download_file(self.filename, self.root, self.mirrors, self.tgz_md5)
        extract_tar(archive, self.root)
        for name, md5 in self.train_list + self.test_list + [self.meta]:
            path = os.path.join(self.root, self.base_folder, name)
            if not os.path.isfile(path) or calculate_md5(path) != md5:
                raise RuntimeError(
                    f"{path} is missing or has the wrong MD5 checksum after unpacking "
                    f"{archive}: the archive is not the official CIFAR-10 one"
                )

    def __getitem__(self, index: int):
        image = self.data[index].copy()
        return self._apply_transforms(image, self.targets[index])

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"
