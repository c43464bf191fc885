"""What the dataset classes share: a base class, errors, downloading and checksums.

Downloads go through one function, :func:`fetch`, so that tests (and users behind
a proxy) can replace it; any URL ``urllib`` opens works, ``file://`` included.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

try:  # subclass the real Dataset once glasstorch.utils.data exists; duck-type until then
    from glasstorch.utils.data import Dataset as _DatasetBase
except ImportError:  # pragma: no cover - depends on which parts of glasstorch are installed

    class _DatasetBase:  # type: ignore[no-redef]
        """Stand-in for ``glasstorch.utils.data.Dataset``: ``__getitem__`` and ``__len__``."""


class DatasetFileError(RuntimeError):
    """A dataset file is missing, truncated, corrupt or not in the format expected."""


class VisionDataset(_DatasetBase):
    """Base of the dataset classes: holds ``root`` and the transforms, and prints itself.

    Args:
        root: folder the dataset's files live in (``None`` for bundled data).
        transform: called on each image.
        target_transform: called on each label.
    """

    def __init__(
        self,
        root: str | os.PathLike | None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        self.transform = transform
        self.target_transform = target_transform

    def _apply_transforms(self, image: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def extra_repr(self) -> str:
        """Extra lines for ``repr`` (the split, for example)."""
        return ""

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += [line for line in self.extra_repr().splitlines() if line]
        if self.transform is not None:
            body += _indented_block("Transform: ", repr(self.transform))
        if self.target_transform is not None:
            body += _indented_block("Target transform: ", repr(self.target_transform))
        return "\n".join([f"Dataset {type(self).__name__}"] + ["    " + line for line in body])


def _indented_block(head: str, text: str) -> list[str]:
    lines = text.splitlines() or [""]
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]


# ------------------------------------------------------------------------ checksums
def calculate_md5(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """The MD5 hex digest of a file (used as a checksum of the official files)."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_md5(path: str | os.PathLike, md5: str | None) -> bool:
    """Whether ``path`` exists and (when ``md5`` is given) has that checksum."""
    if not os.path.isfile(path):
        return False
    return md5 is None or calculate_md5(path) == md5


# ------------------------------------------------------------------------ downloads
def _progress(done: int, total: int | None, stream=None) -> None:
    stream = stream or sys.stderr
    if total:
        width = 30
        filled = width * done // total
        stream.write(
            f"\r  [{'#' * filled}{'.' * (width - filled)}] {100 * done / total:5.1f}% "
            f"of {total / 1e6:.1f} MB"
        )
    else:
        stream.write(f"\r  {done / 1e6:.1f} MB")
    stream.flush()


def fetch(url: str, path: str, chunk_size: int = 1 << 16) -> None:
    """Download ``url`` to ``path``, printing progress to stderr.

    The bytes go to ``path + ".part"`` first, which is renamed when complete, so an
    interrupted download never leaves a file that looks finished.
    """
    partial = path + ".part"
    request = urllib.request.Request(url, headers={"User-Agent": "glasstorch"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open(partial, "wb") as out:
            total = response.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            done = 0
            while chunk := response.read(chunk_size):
                out.write(chunk)
                done += len(chunk)
                _progress(done, total)
        sys.stderr.write("\n")
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def download_file(filename: str, folder: str, mirrors: Sequence[str], md5: str | None) -> str:
    """Fetch ``filename`` from the first mirror that works into ``folder`` and check its MD5.

    A file already there with the right checksum is kept. Returns the path.

    Raises:
        RuntimeError: no mirror could be reached (with each mirror's error), or the
            downloaded file's checksum is wrong (the bad file is deleted).
    """
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, filename)
    if check_md5(path, md5):
        return path
    errors = []
    for mirror in mirrors:
        url = mirror.rstrip("/") + "/" + filename
        print(f"Downloading {url} to {path}", file=sys.stderr)
        try:
            # Looked up at call time, so tests can replace ``fetch``.
            sys.modules[__name__].fetch(url, path)
        except (urllib.error.URLError, OSError, ValueError) as error:
            errors.append(f"{url}: {error}")
            continue
        break
    else:
        tried = "\n  ".join(errors)
        raise RuntimeError(
            f"Error downloading {filename}: no mirror could be reached. Are you offline? "
            f"You can also put the file in {folder} yourself.\n  {tried}"
        )
    actual = calculate_md5(path)
    if md5 is not None and actual != md5:
        os.unlink(path)
        raise RuntimeError(
            f"The downloaded file {filename} has MD5 checksum {actual}, but {md5} was expected: "
            "the download is corrupt or incomplete (it was deleted; try again)."
        )
    return path


def extract_tar(archive: str, folder: str) -> None:
    """Unpack a ``.tar.gz`` into ``folder``, refusing members that would land outside it."""
    root = os.path.realpath(folder)
    with tarfile.open(archive, "r:*") as tar:
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(root, member.name))
            if os.path.commonpath([root, target]) != root or not (
                member.isfile() or member.isdir()
            ):
                raise DatasetFileError(
                    f"{archive} contains {member.name!r}, which is not a plain file inside "
                    "the archive's folder; refusing to extract it"
                )
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
        else:  # Python without extraction filters: the members were checked above
            tar.extractall(root)  # noqa: S202
