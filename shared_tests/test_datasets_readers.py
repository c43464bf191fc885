"""MNIST / Fashion-MNIST (IDX) and CIFAR-10 (python batches) readers, on tiny real-format files.

No test touches the network: downloads are served from ``file://`` URLs or a
replaced fetch function.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import tarfile

import numpy as np
import pytest

import glasstorch as gt
from glasstorch.datasets import (
    CIFAR10,
    MNIST,
    DatasetFileError,
    FashionMNIST,
    RestrictedUnpickler,
    read_idx,
    transforms,
)
from glasstorch.datasets import utils as dataset_utils
from glasstorch.datasets.cifar import restricted_loads

pytestmark = [
    pytest.mark.datasets,
    pytest.mark.cpu_only("dataset files (IDX, CIFAR batches) are read into CPU tensors"),
]


# ------------------------------------------------------------------ IDX files
def idx_bytes(array: np.ndarray, type_code: int = 0x08) -> bytes:
    """The IDX encoding of ``array``: magic (0, 0, type, ndim), big-endian sizes, data."""
    header = bytes([0, 0, type_code, array.ndim])
    header += b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    big = array.astype(array.dtype.newbyteorder(">"))
    return header + big.tobytes()


def write(path, data: bytes, gz: bool = False) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if gz:
        path = str(path) + ".gz"
        data = gzip.compress(data)
    with open(path, "wb") as stream:
        stream.write(data)
    return str(path)


def tiny_images(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 256, size=(count, 3, 3), dtype=np.uint8),
        rng.integers(0, 10, size=count).astype(np.uint8),
    )


def make_mnist(root, name="MNIST", gz=False, train=(5, 1), test=(2, 2)):
    raw = os.path.join(root, name, "raw")
    out = {}
    for prefix, (count, seed) in (("train", train), ("t10k", test)):
        images, labels = tiny_images(count, seed)
        write(os.path.join(raw, f"{prefix}-images-idx3-ubyte"), idx_bytes(images), gz)
        write(os.path.join(raw, f"{prefix}-labels-idx1-ubyte"), idx_bytes(labels), gz)
        out[prefix] = (images, labels)
    return out


@pytest.mark.parametrize(
    "dtype, code",
    [("u1", 0x08), ("i1", 0x09), ("i2", 0x0B), ("i4", 0x0C), ("f4", 0x0D), ("f8", 0x0E)],
)
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_every_type(tmp_path, dtype, code, gz):
    array = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    path = write(tmp_path / "x-idx3", idx_bytes(array, code), gz)
    got = read_idx(path)
    assert got.shape == (2, 3, 4) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, array)
    # Big-endian on disk: the int32 5 is 00 00 00 05.
    if dtype == "i4":
        raw = idx_bytes(np.array([5], dtype="i4"), 0x0C)
        assert raw == bytes([0, 0, 0x0C, 1, 0, 0, 0, 1, 0, 0, 0, 5])


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_reader(tmp_path, gz, cls):
    made = make_mnist(tmp_path, cls.__name__, gz=gz)
    train = cls(tmp_path, train=True)
    test = cls(str(tmp_path), train=False)
    assert len(train) == 5 and len(test) == 2
    images, labels = made["train"]
    assert train.data.dtype == gt.uint8 and tuple(train.data.shape) == (5, 3, 3)
    assert train.targets.dtype == gt.int64
    np.testing.assert_array_equal(train.data.numpy(), images)
    np.testing.assert_array_equal(train.targets.numpy(), labels)
    for index in range(5):
        image, label = train[index]
        assert isinstance(image, np.ndarray) and image.dtype == np.uint8
        np.testing.assert_array_equal(image, images[index])
        assert label == labels[index] and isinstance(label, int)
    np.testing.assert_array_equal(test[1][0], made["t10k"][0][1])
    assert len(cls.classes) == 10
    assert repr(test).splitlines()[:2] == [f"Dataset {cls.__name__}", "    Number of datapoints: 2"]
    assert "Split: Test" in repr(test)


def test_mnist_with_to_tensor(tmp_path):
    images, _ = make_mnist(tmp_path)["train"]
    train = MNIST(tmp_path, transform=transforms.ToTensor(), target_transform=lambda y: -y)
    image, label = train[2]
    assert tuple(image.shape) == (1, 3, 3) and image.dtype == gt.float32
    np.testing.assert_allclose(image.numpy()[0], images[2] / np.float32(255), rtol=1e-7)
    assert label == -int(make_mnist(tmp_path / "again")["train"][1][2])


def test_mnist_missing_files(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found.*download=True"):
        MNIST(tmp_path)


def test_mnist_mismatched_counts(tmp_path):
    make_mnist(tmp_path)
    labels = np.zeros(4, dtype=np.uint8)
    write(tmp_path / "MNIST" / "raw" / "train-labels-idx1-ubyte", idx_bytes(labels))
    with pytest.raises(DatasetFileError, match="5 images but .* 4 labels"):
        MNIST(tmp_path)


def test_mnist_wrong_dimensions(tmp_path):
    make_mnist(tmp_path)
    write(tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte", idx_bytes(np.zeros(5, "u1")))
    with pytest.raises(DatasetFileError, match="3 dimensions"):
        MNIST(tmp_path)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "too short"),
        (b"\x00\x00", "too short"),
        (b"PK\x03\x04rest", "not an IDX file"),
        (bytes([0, 0, 0x07, 1, 0, 0, 0, 1, 9]), "unknown IDX element type 0x07"),
        (bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0]), "truncated: its header promises 3"),
        (idx_bytes(np.zeros((2, 3, 3), "u1"))[:-1], "truncated: shape \\(2, 3, 3\\)"),
        (idx_bytes(np.zeros((2, 3, 3), "u1")) + b"\x00", "longer than its header"),
        (idx_bytes(np.zeros(3, "i4"), 0x0C)[:-2], "needs 12 bytes of data, found 10"),
    ],
)
def test_read_idx_errors(tmp_path, data, message):
    path = write(tmp_path / "bad", data)
    with pytest.raises(DatasetFileError, match=message):
        read_idx(path)


def test_read_idx_truncated_gzip(tmp_path):
    whole = gzip.compress(idx_bytes(np.arange(200, dtype="u1").reshape(2, 10, 10)))
    path = write(tmp_path / "cut.gz", whole[: len(whole) // 2])
    with pytest.raises(DatasetFileError, match="gzip file but could not be decompressed"):
        read_idx(path)
    corrupt = bytearray(whole)
    corrupt[15] ^= 0xFF
    path = write(tmp_path / "flip.gz", bytes(corrupt))
    with pytest.raises(DatasetFileError, match="truncated or corrupt"):
        read_idx(path)


# -------------------------------------------------------------------- downloads
def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def serve_mnist(folder, cls=MNIST):
    """Write gzipped IDX files into ``folder``; a subclass whose mirrors point there."""
    files = {}
    for prefix, seed in (("train", 3), ("t10k", 4)):
        images, labels = tiny_images(4, seed)
        for kind, array in (("images-idx3", images), ("labels-idx1", labels)):
            name = f"{prefix}-{kind}-ubyte.gz"
            files[name] = gzip.compress(idx_bytes(array))
            write(os.path.join(folder, name), files[name])

    class Local(cls):
        mirrors = [f"file://{os.path.abspath(folder)}/"]
        resources = [(name, md5(data)) for name, data in files.items()]

    Local.__name__ = cls.__name__  # the raw folder is named after the class
    return Local


def test_download_from_local_mirror(tmp_path, capsys):
    dataset_cls = serve_mnist(tmp_path / "server")
    dataset = dataset_cls(tmp_path / "data", train=True, download=True)
    assert len(dataset) == 4
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted(name for name, _ in dataset_cls.resources)
    assert "Downloading file://" in capsys.readouterr().err
    # A second download finds the files intact and fetches nothing.
    calls = []
    original = dataset_utils.fetch
    dataset_utils.fetch = lambda url, path: calls.append(url)
    try:
        dataset_cls(tmp_path / "data", train=False, download=True)
    finally:
        dataset_utils.fetch = original
    assert calls == []


def test_download_checksum_mismatch(tmp_path):
    dataset_cls = serve_mnist(tmp_path / "server")
    name, good = dataset_cls.resources[0]
    dataset_cls.resources = [(name, "0" * 32)] + dataset_cls.resources[1:]
    with pytest.raises(RuntimeError, match=f"{name} has MD5 checksum {good}, but 0{{32}}"):
        dataset_cls(tmp_path / "data", download=True)
    assert not os.path.exists(tmp_path / "data" / "MNIST" / "raw" / name)  # bad file removed


def test_download_tries_mirrors_then_fails_clearly(tmp_path, monkeypatch):
    seen = []

    def offline(url, path):
        seen.append(url)
        raise OSError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(dataset_utils, "fetch", offline)
    with pytest.raises(RuntimeError, match="Error downloading train-images-idx3-ubyte.gz.*offline"):
        MNIST(tmp_path, download=True)
    assert seen == [m + "train-images-idx3-ubyte.gz" for m in MNIST.mirrors]
    assert not any(p.name.endswith(".part") for p in tmp_path.rglob("*"))


def test_download_uses_fallback_mirror(tmp_path):
    dataset_cls = serve_mnist(tmp_path / "server", FashionMNIST)
    dataset_cls.mirrors = [f"file://{tmp_path}/nowhere/"] + dataset_cls.mirrors
    assert len(dataset_cls(tmp_path / "data", download=True)) == 4


def test_official_checksums_and_urls():
    """The facts download=True relies on (as published with the datasets)."""
    assert dict(MNIST.resources)["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert dict(MNIST.resources)["t10k-labels-idx1-ubyte.gz"] == "ec29112dd5afa0611ce80d1b7f02629c"
    fashion = dict(FashionMNIST.resources)
    assert fashion["train-images-idx3-ubyte.gz"] == "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    assert fashion["t10k-labels-idx1-ubyte.gz"] == "bb300cfdad3c16e7a12a480ee83cd310"
    assert CIFAR10.tgz_md5 == "c58f30108f718f92721af3b95e74349a"
    assert CIFAR10.mirrors == ["https://www.cs.toronto.edu/~kriz/"]
    assert dict(CIFAR10.test_list)["test_batch"] == "40351d587109b95175f43aff81a1287e"


# ------------------------------------------------------------------- CIFAR-10
def cifar_batch(count: int, seed: int, protocol: int = 2, text_keys: bool = False) -> bytes:
    """A CIFAR-10 python batch in the real layout (bytes keys, as the real files load)."""
    rng = np.random.default_rng(seed)
    entry = {
        b"batch_label": b"training batch 1 of 5",
        b"labels": [int(v) for v in rng.integers(0, 10, size=count)],
        b"data": rng.integers(0, 256, size=(count, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(count)],
    }
    if text_keys:
        entry = {k.decode(): v for k, v in entry.items()}
    return pickle.dumps(entry, protocol=protocol)


def make_cifar(root, counts=(2, 1, 3, 1, 2), test=2, protocol=3):
    folder = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    files = {}
    for index, count in enumerate(counts):
        files[f"data_batch_{index + 1}"] = cifar_batch(count, index, protocol)
    files["test_batch"] = cifar_batch(test, 99, protocol)
    names = [n.encode() for n in CIFAR10.default_classes[::-1]]
    files["batches.meta"] = pickle.dumps({b"label_names": names, b"num_vis": 3072}, protocol)
    for name, data in files.items():
        write(os.path.join(folder, name), data)
    return files


def expected_images(batch: bytes) -> tuple[np.ndarray, list[int]]:
    entry = pickle.loads(batch)
    return entry[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), entry[b"labels"]


@pytest.mark.parametrize("protocol", [3, 4])
def test_cifar_reader(tmp_path, protocol):
    files = make_cifar(tmp_path, protocol=protocol)
    train = CIFAR10(tmp_path, train=True)
    test = CIFAR10(tmp_path, train=False)
    assert len(train) == 9 and len(test) == 2
    assert train.data.shape == (9, 32, 32, 3) and train.data.dtype == np.uint8
    first, first_labels = expected_images(files["data_batch_1"])
    third, third_labels = expected_images(files["data_batch_3"])
    np.testing.assert_array_equal(train.data[:2], first)
    np.testing.assert_array_equal(train.data[3:6], third)
    assert train.targets[:2] == first_labels and train.targets[3:6] == third_labels
    image, label = train[4]
    assert image.shape == (32, 32, 3) and label == third_labels[1]
    # Channel planes: red is the first 1024 values of the row.
    row = pickle.loads(files["data_batch_3"])[b"data"][1]
    np.testing.assert_array_equal(image[:, :, 0].reshape(-1), row[:1024])
    np.testing.assert_array_equal(image[:, :, 2].reshape(-1), row[2048:])
    assert train.classes == CIFAR10.default_classes[::-1]  # read from batches.meta
    tensor, _ = CIFAR10(tmp_path, train=False, transform=transforms.ToTensor())[0]
    assert tuple(tensor.shape) == (3, 32, 32)


def test_cifar_text_keys_and_missing_meta(tmp_path):
    make_cifar(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    write(folder / "test_batch", cifar_batch(3, 7, protocol=4, text_keys=True))
    os.unlink(folder / "batches.meta")
    test = CIFAR10(tmp_path, train=False)
    assert len(test) == 3 and test.classes == CIFAR10.default_classes


def test_cifar_missing(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted.*download=True"):
        CIFAR10(tmp_path)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b[: len(b) // 2], "truncated or corrupt pickle"),
        (lambda b: b"", "truncated or corrupt pickle"),
        (lambda b: pickle.dumps([1, 2, 3]), "holds a list, not a CIFAR batch"),
        (lambda b: pickle.dumps({b"data": 1}), "no 'data' and 'labels'"),
        (
            lambda b: pickle.dumps({b"data": np.zeros((2, 3072), np.int32), b"labels": [0, 1]}),
            "uint8 array of shape \\(N, 3072\\)",
        ),
        (
            lambda b: pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}),
            "shape \\(2, 100\\)",
        ),
        (
            lambda b: pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}),
            "2 images but 1 labels",
        ),
        (
            lambda b: pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"labels": [10]}),
            "labels must lie in 0..9",
        ),
    ],
)
def test_cifar_corrupt_batches(tmp_path, mutate, message):
    files = make_cifar(tmp_path)
    write(tmp_path / "cifar-10-batches-py" / "test_batch", mutate(files["test_batch"]))
    with pytest.raises(DatasetFileError, match=message):
        CIFAR10(tmp_path, train=False)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > should_not_exist",))


def test_restricted_unpickler_refuses_code(tmp_path, monkeypatch):
    payload = pickle.dumps({b"data": _Evil(), b"labels": []}, protocol=3)
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load (posix|nt).system"):
        restricted_loads(payload)
    # The classic hand-written protocol-0 exploit.
    with pytest.raises(pickle.UnpicklingError, match="refusing to load os.system"):
        restricted_loads(b"cos\nsystem\n(S'echo pwned'\ntR.")
    make_cifar(tmp_path)
    write(tmp_path / "cifar-10-batches-py" / "test_batch", payload)
    with pytest.raises(DatasetFileError, match="cannot be loaded safely"):
        CIFAR10(tmp_path, train=False)
    assert calls == []
    for module, name in [
        ("builtins", "eval"),
        ("builtins", "getattr"),
        ("copyreg", "_reconstructor"),
    ]:
        with pytest.raises(pickle.UnpicklingError):
            RestrictedUnpickler(io.BytesIO(b"")).find_class(module, name)


def test_restricted_unpickler_allows_exactly_numpy_arrays():
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for protocol in (2, 3, 4):
        data = pickle.dumps({b"data": array, b"labels": [1, 2], "s": "x"}, protocol=protocol)
        if protocol == 2:  # Python 3 writes bytes at protocol 2 through _codecs.encode: refused
            with pytest.raises(pickle.UnpicklingError, match="_codecs.encode"):
                restricted_loads(data)
            continue
        loaded = restricted_loads(data)
        np.testing.assert_array_equal(loaded[b"data"], array)
        assert loaded[b"labels"] == [1, 2] and loaded["s"] == "x"


# A Python 2 cPickle (protocol 2) of {'labels': [3], 'data': uint8 array [[7, 8]]}, as the
# real CIFAR files are written: str keys, numpy.core.multiarray._reconstruct.
PY2_PICKLE = (
    b"\x80\x02}q\x00(U\x06labelsq\x01]q\x02K\x03aU\x04dataq\x03cnumpy.core.multiarray\n"
    b"_reconstruct\nq\x04cnumpy\nndarray\nq\x05K\x00\x85U\x01b\x87Rq\x06(K\x01K\x01K\x02\x86"
    b"cnumpy\ndtype\nq\x07U\x02u1K\x00K\x01\x87Rq\x08(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff"
    b"\xff\xff\xffK\x00tb\x89U\x02\x07\x08tbu."
)


def test_restricted_unpickler_reads_python2_numpy_pickles():
    loaded = restricted_loads(PY2_PICKLE)
    assert loaded["labels"] == [3]
    assert loaded["data"].dtype == np.uint8 and loaded["data"].tolist() == [[7, 8]]


# ------------------------------------------------------------- CIFAR download
def test_cifar_download_from_local_mirror(tmp_path):
    build = tmp_path / "build"
    files = make_cifar(build)
    archive = tmp_path / "server" / "cifar-10-python.tar.gz"
    os.makedirs(archive.parent)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(build / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    data = archive.read_bytes()

    class Local(CIFAR10):
        mirrors = [f"file://{archive.parent}/"]
        tgz_md5 = md5(data)
        train_list = [(f"data_batch_{i}", md5(files[f"data_batch_{i}"])) for i in range(1, 6)]
        test_list = [("test_batch", md5(files["test_batch"]))]
        meta = ("batches.meta", md5(files["batches.meta"]))

    dataset = Local(tmp_path / "data", train=True, download=True)
    assert len(dataset) == 9
    assert os.path.isfile(tmp_path / "data" / "cifar-10-python.tar.gz")

    Local.tgz_md5 = "f" * 32
    with pytest.raises(RuntimeError, match="has MD5 checksum"):
        Local(tmp_path / "other", download=True)


def test_extract_refuses_path_traversal(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    os.makedirs(tmp_path / "out")
    with pytest.raises(DatasetFileError, match="not a plain file inside"):
        dataset_utils.extract_tar(str(archive), str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "escaped.txt")
