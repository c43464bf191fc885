"""glasstorch.load on bad input, atomic saves, map_location, and files that try to run code."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest
from oracle import needs_torch, torch

import glasstorch as gt
from glasstorch import serialization
from glasstorch.serialization import SerializationError, load, save

pytestmark = [
    pytest.mark.serialization,
    pytest.mark.cpu_only(
        "bad files, atomic saves and map_location errors are checked on bytes in host memory "
        "(device checkpoints and map_location: test_serialization_roundtrip)"
    ),
]


def saved_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    save(obj, buffer)
    return buffer.getvalue()


def load_bytes(data: bytes, **kwargs):
    return load(io.BytesIO(data), **kwargs)


def rezip(data: bytes, change) -> bytes:
    """A copy of a checkpoint with ``change(entries)`` applied to its {name: bytes}."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    change(entries)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return out.getvalue()


def edit_manifest(data: bytes, edit) -> bytes:
    def change(entries):
        manifest = json.loads(entries["manifest.json"])
        edit(manifest)
        entries["manifest.json"] = json.dumps(manifest).encode()

    return rezip(data, change)


GOOD = saved_bytes({"w": gt.arange(6.0).reshape(2, 3), "step": 3})


# ------------------------------------------------------------- corrupt files
def test_error_is_a_runtime_error():
    assert issubclass(SerializationError, RuntimeError)


@pytest.mark.parametrize("cut", [1, 10, 100, len(GOOD) // 2, len(GOOD) - 1])
def test_truncated_files(cut):
    with pytest.raises(SerializationError, match="truncated or corrupt|not a glasstorch"):
        load_bytes(GOOD[:cut])


def test_every_truncation_is_a_clear_error():
    for cut in range(0, len(GOOD), 7):
        with pytest.raises(SerializationError):
            load_bytes(GOOD[:cut])


def test_flipped_bytes_are_caught_by_crc():
    data = bytearray(GOOD)
    with zipfile.ZipFile(io.BytesIO(GOOD)) as archive:
        info = archive.getinfo("storages/0")
    data[info.header_offset + 30 + len("storages/0") + 5] ^= 0x01  # inside the storage bytes
    with pytest.raises(SerializationError, match="truncated or corrupt.*storages/0"):
        load_bytes(bytes(data))


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(SerializationError, match="is empty"):
        load(path)


@pytest.mark.parametrize(
    "content, guess",
    [
        (b"hello, this is just a text file\n", "looks like a text file"),
        (pickle.dumps({"a": 1}, protocol=2), "looks like a Python pickle"),
        (pickle.dumps([1, 2], protocol=4), "looks like a Python pickle"),
        (b"\x93NUMPY\x01\x00v\x00{'descr': '<f4'", "NumPy .npy file"),
        (gzip.compress(b"data"), "gzip-compressed"),
        (bytes(range(256)), "unrecognised binary content"),
    ],
)
def test_files_of_other_kinds(tmp_path, content, guess):
    path = tmp_path / "other.bin"
    path.write_bytes(content)
    with pytest.raises(SerializationError, match=f"not a glasstorch checkpoint: it .*{guess}"):
        load(path)


def test_numpy_file_is_recognised(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(3))
    with pytest.raises(SerializationError, match="NumPy .npy file.*numpy.load"):
        load(tmp_path / "a.npy")


@needs_torch
def test_real_torch_checkpoint_is_recognised(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"weight": torch.ones(2)}, path)
    with pytest.raises(SerializationError, match="looks like a PyTorch checkpoint"):
        load(path)


def test_other_zip_files():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(SerializationError, match="zip archive but not a glasstorch checkpoint"):
        load_bytes(out.getvalue())


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.update(format="something.else"), "does not name the format"),
        (
            lambda m: m.update(version=99),
            "format version 99; this glasstorch reads versions up to 1",
        ),
        (lambda m: m.update(version="1"), "version is not an integer"),
        (lambda m: m.update(byteorder="big"), "byte order"),
        (lambda m: m["storages"][0].update(dtype="complex64"), "unknown dtype 'complex64'"),
        (lambda m: m["storages"][0].update(numel=7), "should hold 7 float32 elements"),
        (lambda m: m["storages"][0].update(numel=-1), "not a non-negative integer"),
        (lambda m: m.update(storages={}), "no list of storages"),
        (lambda m: m["root"]["items"][0][1].update(storage=5), "storage 5, which does not exist"),
        (
            lambda m: m["root"]["items"][0][1].update(offset=1),
            "reaches element 6 of a storage of 6",
        ),
        (lambda m: m["root"]["items"][0][1].update(shape=[3, 3]), "reaches element"),
        (lambda m: m["root"]["items"][0][1].update(stride=[3, -1]), "not a non-negative integer"),
        (lambda m: m["root"]["items"][0][1].update(shape=[2]), "not lists of one length"),
        (lambda m: m["root"]["items"][0][1].update(dtype="int64"), "int64 tensor views a float32"),
        (lambda m: m["root"]["items"][0][1].pop("stride"), "malformed 'tensor' node"),
        (lambda m: m["root"]["items"][1][1].update(value="3"), "'int' node holds '3'"),
        (lambda m: m["root"]["items"][1][1].update(value=True), "'int' node holds True"),
        (
            lambda m: m["root"].update(items=[[{"kind": "list", "items": []}, {"kind": "none"}]]),
            "unhashable",
        ),
        (lambda m: m.update(root=[1, 2]), "expected a node object"),
        (lambda m: m.update(root={"kind": "device", "type": "tpu", "index": 0}), "device node"),
        (
            lambda m: m["root"]["items"].append(
                [{"kind": "str", "value": "x"}, {"kind": "tensor_ref", "id": 9}]
            ),
            "tensor 9",
        ),
    ],
)
def test_corrupt_manifests(edit, message):
    with pytest.raises(SerializationError, match=message):
        load_bytes(edit_manifest(GOOD, edit))


def test_manifest_not_json_and_missing_storage():
    bad_json = rezip(GOOD, lambda e: e.update({"manifest.json": b"{not json"}))
    with pytest.raises(SerializationError, match="not valid JSON"):
        load_bytes(bad_json)
    missing = rezip(GOOD, lambda e: e.pop("storages/0"))
    with pytest.raises(SerializationError, match="entry 'storages/0' is missing"):
        load_bytes(missing)


@pytest.mark.parametrize(
    "depth, message", [(150, "nested more than 100 levels"), (100_000, "nested too deeply")]
)
def test_deep_nesting_is_refused(depth, message):
    head = '{"format": "glasstorch.save", "version": 1, "byteorder": "little", "storages": [], '
    root = '{"kind": "list", "items": [' * depth + '{"kind": "none"}' + "]}" * depth
    crafted = rezip(
        GOOD, lambda e: e.update({"manifest.json": (head + f'"root": {root}}}').encode()})
    )
    with pytest.raises(SerializationError, match=message):
        load_bytes(crafted)


def test_deep_nesting_is_refused_at_save():
    nested = []
    for _ in range(150):
        nested = [nested]
    with pytest.raises(ValueError, match="nested more than 100 deep"):
        save(nested, io.BytesIO())
    deep = []
    for _ in range(90):
        deep = [deep]
    assert load_bytes(saved_bytes(deep)) == deep


# ------------------------------------------------------------ code execution
def test_crafted_manifest_cannot_name_code(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    for node in (
        {"kind": "object", "module": "os", "name": "system", "args": ["echo pwned"]},
        {"kind": "pickle", "value": "gASVAAAAAAAAAAAu"},
        {"kind": "global", "value": "os.system"},
        {"kind": "__reduce__"},
    ):
        crafted = edit_manifest(GOOD, lambda m, node=node: m.update(root=node))
        with pytest.raises(SerializationError, match="unknown node kind .*never imports or calls"):
            load_bytes(crafted)
    assert calls == []


def test_pickle_exploit_is_never_unpickled(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    exploit = b"cos\nsystem\n(S'echo pwned'\ntR."
    (tmp_path / "evil.pt").write_bytes(exploit)
    with pytest.raises(SerializationError):
        load(tmp_path / "evil.pt", weights_only=False)
    # The same bytes hidden inside a zip, where torch keeps its pickle.
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", exploit)
    with pytest.raises(SerializationError, match="PyTorch checkpoint"):
        load_bytes(out.getvalue(), weights_only=False)
    # And as a storage's bytes: they are only ever data.
    data = rezip(
        saved_bytes(gt.zeros(len(exploit), dtype=gt.uint8)),
        lambda e: e.update({"storages/0": exploit}),
    )
    assert bytes(load_bytes(data).tolist()) == exploit
    assert calls == []
    with pytest.raises(SerializationError, match="never unpickles"):
        load_bytes(GOOD, pickle_module=pickle)


# ------------------------------------------------------------------ atomicity
def test_atomic_save_keeps_old_file_on_crash(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    save({"version": 1, "w": gt.ones(3)}, path)
    old = path.read_bytes()
    written = []

    def crash_after_first(storage):
        if written:
            raise OSError("No space left on device")
        written.append(storage)
        return serialization_storage_bytes(storage)

    serialization_storage_bytes = serialization._storage_bytes
    monkeypatch.setattr(serialization, "_storage_bytes", crash_after_first)
    with pytest.raises(OSError, match="No space left"):
        save({"version": 2, "a": gt.zeros(100), "b": gt.zeros(100)}, path)
    assert path.read_bytes() == old
    assert load(path)["version"] == 1
    assert os.listdir(tmp_path) == ["checkpoint.pt"]  # no temporary file left behind


def test_atomic_save_crash_at_rename(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    save(gt.ones(2), path)
    old = path.read_bytes()

    def crash(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        save(gt.zeros(5), path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["checkpoint.pt"]


def test_atomic_save_fsyncs_before_replace(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(
        os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1]
    )
    save(gt.ones(2), tmp_path / "c.pt")
    assert events[:2] == ["fsync", "replace"]


def test_save_into_missing_folder(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        save(gt.ones(1), tmp_path / "nowhere" / "c.pt")


def test_new_file_gets_normal_permissions(tmp_path):
    path = tmp_path / "c.pt"
    save(gt.ones(1), path)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    os.chmod(path, 0o640)
    save(gt.ones(2), path)
    assert os.stat(path).st_mode & 0o777 == 0o640


# --------------------------------------------------------------- map_location
#: PyTorch's error for a CUDA map_location on a machine without CUDA.
NO_CUDA_LOAD = (
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
    "If you are running on a CPU-only machine, please use torch.load with "
    "map_location=torch.device('cpu') to map your storages to the CPU."
)


@pytest.mark.parametrize(
    "where", ["cpu", gt.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}, None]
)
def test_map_location_to_cpu(where):
    loaded = load_bytes(GOOD, map_location=where)
    assert loaded["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert loaded["w"].device == gt.device("cpu")


def test_map_location_callable():
    seen = []

    def keep(storage, location):
        seen.append((len(storage), location))
        return storage

    assert load_bytes(GOOD, map_location=keep)["step"] == 3
    assert seen == [(6, "cpu")]
    assert load_bytes(GOOD, map_location=lambda s, loc: None)["w"].shape == (2, 3)
    with pytest.raises(TypeError, match="must return a storage"):
        load_bytes(GOOD, map_location=lambda s, loc: "cpu")


@pytest.mark.parametrize("where", ["cuda", "cuda:0", gt.device("cuda"), {"cpu": "cuda:1"}])
@pytest.mark.skipif(gt.cuda.is_available(), reason="a CUDA driver is active (GLASSTORCH_CUDA)")
def test_map_location_to_cuda_fails_like_pytorch_without_cuda(where):
    with pytest.raises(RuntimeError) as info:
        load_bytes(GOOD, map_location=where)
    assert str(info.value) == NO_CUDA_LOAD


def test_map_location_errors():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        load_bytes(GOOD, map_location="tpu")
    with pytest.raises(TypeError, match="map_location should be"):
        load_bytes(GOOD, map_location=3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        load_bytes(GOOD, weights=True)
