"""glasstorch.load on bad input, atomic saves, map_location, and files that try to run code."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import pickle
import threading
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
            "format version 99; this glasstorch reads versions up to 2",
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


def test_deep_nesting_is_pickled_at_save():
    """Deeper than the JSON tree may go, a container is pickled (as torch.save does)."""
    nested = []
    for _ in range(150):
        nested = [nested]
    data = saved_bytes(nested)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "object.pkl" in archive.namelist()
    assert load_bytes(data) == nested  # plain lists: weights_only allows them
    deep = []
    for _ in range(90):
        deep = [deep]
    with zipfile.ZipFile(io.BytesIO(saved_bytes(deep))) as archive:
        assert archive.namelist() == ["manifest.json"]
    assert load_bytes(saved_bytes(deep)) == deep


# ------------------------------------------------------------ code execution
def test_crafted_manifest_cannot_name_code(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    for node in (
        {"kind": "object", "module": "os", "name": "system", "args": ["echo pwned"]},
        {"kind": "pickled", "value": "gASVAAAAAAAAAAAu"},
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


# ---------------------------------------------------------------- weights_only
#: The start of every refusal of an unlisted global, in PyTorch's words.
REFUSED = "Weights only load failed. This file can still be loaded, to do so you have two options"


def with_pickle(pickled: bytes) -> bytes:
    """A version-2 checkpoint whose pickled object is ``pickled`` (crafted by hand)."""
    return rezip(saved_bytes({1, 2}), lambda e: e.update({"object.pkl": pickled}))


def torch_round_trip_error(obj, **kwargs):
    """The exception ``torch.load`` raises for ``obj`` saved by ``torch.save``."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    with pytest.raises(Exception) as info:
        torch.load(buffer, **kwargs)
    return info.value


class Config:
    """A class of the test's own, as programs save (``argparse.Namespace`` is another)."""

    def __init__(self, lr):
        self.lr = lr


@pytest.fixture(autouse=True)
def no_safe_globals_left():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


@pytest.mark.parametrize(
    "make, refused_global",
    [
        (
            lambda: np.arange(3.0),
            f"{np.ndarray.__reduce_ex__(np.ones(1), 2)[0].__module__}._reconstruct",
        ),
        (lambda: argparse.Namespace(lr=0.1), "argparse.Namespace"),
        (lambda: {"config": Config(0.5)}, f"{__name__}.Config"),
    ],
)
def test_weights_only_refuses_other_globals_with_pytorchs_message(make, refused_global):
    data = saved_bytes(make())
    with pytest.raises(pickle.UnpicklingError) as info:
        load_bytes(data)  # the default is weights_only=True
    message = str(info.value)
    assert message.startswith(REFUSED)
    assert f"Unsupported global: GLOBAL {refused_global} was not an allowed global" in message
    assert "`torch.serialization.add_safe_globals([" in message
    assert (
        "Re-running `torch.load` with `weights_only` set to `False` will likely succeed" in message
    )
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_bytes(data, weights_only=True)
    if torch is not None:  # the same object saved by PyTorch: the same error, word for word
        error = torch_round_trip_error(make())
        assert type(error) is type(info.value) and str(error) == message


def test_weights_only_false_unpickles_anything():
    loaded = load_bytes(
        saved_bytes({"config": Config(0.5), "a": np.arange(3.0)}), weights_only=False
    )
    assert type(loaded["config"]) is Config and loaded["config"].lr == 0.5
    np.testing.assert_array_equal(loaded["a"], [0.0, 1.0, 2.0])


def test_add_safe_globals_and_its_context_manager():
    data = saved_bytes({"config": Config(0.25), "w": gt.ones(2)})
    with serialization.safe_globals([Config]):
        assert serialization.get_safe_globals() == [Config]
        loaded = load_bytes(data)
        assert loaded["config"].lr == 0.25 and loaded["w"].tolist() == [1.0, 1.0]
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        load_bytes(data)
    serialization.add_safe_globals([(Config, f"{__name__}.Config")])  # the (obj, name) form
    assert load_bytes(data)["config"].lr == 0.25
    serialization.clear_safe_globals()
    serialization.add_safe_globals([argparse.Namespace])
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.Config"):
        load_bytes(data)
    if torch is not None:  # the same calls on PyTorch's list behave alike
        torch.serialization.clear_safe_globals()
        with torch.serialization.safe_globals([Config]):
            assert torch.serialization.get_safe_globals() == [Config]
        assert torch.serialization.get_safe_globals() == []


class TwoLayers(gt.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = gt.nn.Linear(3, 2)
        self.act = gt.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


def test_a_whole_module_loads_weights_only_once_its_classes_are_allowed():
    # As in PyTorch, allowing the module classes is enough: the dict a module
    # keeps its hooks in is allowed by default (PyTorch's is an OrderedDict).
    model = TwoLayers()
    data = saved_bytes(model)
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}.TwoLayers"):
        load_bytes(data)
    with serialization.safe_globals([TwoLayers, gt.nn.Linear, gt.nn.ReLU]):
        loaded = load_bytes(data)
    x = gt.tensor([[1.0, -2.0, 0.5]])
    assert type(loaded) is TwoLayers and loaded(x).tolist() == model(x).tolist()
    handle = loaded.register_forward_hook(lambda module, args, out: out * 0)
    assert loaded(x).tolist() == [[0.0, 0.0]]  # the loaded hook dict works as a hook dict
    handle.remove()


def test_a_numpy_array_needs_its_globals_allowed_one_by_one():
    data = saved_bytes(np.arange(4.0))
    named = []
    for _ in range(5):
        try:
            loaded = load_bytes(data)
            break
        except pickle.UnpicklingError as error:
            path = str(error).split("GLOBAL ")[1].split(" was not")[0]
            module, _, name = path.rpartition(".")
            obj = getattr(__import__(module, fromlist=[name]), name)
            named.append(path)
            serialization.add_safe_globals([(obj, path)])
    np.testing.assert_array_equal(loaded, np.arange(4.0))
    assert named[0].endswith("multiarray._reconstruct") and "numpy.ndarray" in named


@pytest.mark.parametrize("module, name", [("os", "system"), ("posix", "system"), ("sys", "exit")])
def test_blocked_modules_are_refused_even_when_allowed(monkeypatch, module, name):
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    serialization.add_safe_globals([(os.system, f"{module}.{name}")])
    exploit = f"c{module}\n{name}\n(S'echo pwned'\ntR.".encode()
    with pytest.raises(pickle.UnpicklingError) as info:
        load_bytes(with_pickle(exploit))
    message = str(info.value)
    assert message.startswith("Weights only load failed. In PyTorch 2.6")
    assert f"GLOBAL {module}.{name} whose module {module} is blocked" in message
    assert calls == []


def test_weights_only_false_is_a_full_unpickle(monkeypatch):
    """What PyTorch warns about: weights_only=False runs what a trusted file names."""
    calls = []
    monkeypatch.setattr(os, "system", lambda command: calls.append(command))
    exploit = with_pickle(b"cos\nsystem\n(S'echo pwned'\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="blocked"):
        load_bytes(exploit)
    assert calls == []
    load_bytes(exploit, weights_only=False)
    assert calls == ["echo pwned"]


def test_memory_asking_globals_are_refused():
    huge = with_pickle(b"c__builtin__\nbytearray\n(L1000000000000L\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="bytearray.n. would allocate"):
        load_bytes(huge)
    other_codec = with_pickle(b"c_codecs\nencode\n(Vabc\nVutf-16\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="latin-1"):
        load_bytes(other_codec)


@pytest.mark.parametrize(
    "pickled, message",
    [
        (b"", "could not be rebuilt"),
        (b"\x80\x02]q\x00(K\x01", "could not be rebuilt"),  # cut short
        ("abc", "not JSON"),  # a persistent id that is no node
        ('{"kind": "none"}', "only .*tensor"),
        ('{"kind": "tensor_ref", "id": 3}', "a reference to tensor 3"),
        (7, "not a node"),
    ],
)
def test_broken_pickles_are_clear_errors(pickled, message):
    if not isinstance(pickled, bytes):  # a pickle whose one object is this persistent id
        stream, target = io.BytesIO(), object()
        pickler = pickle.Pickler(stream, protocol=2)
        pickler.persistent_id = lambda obj, pid=pickled: pid if obj is target else None
        pickler.dump(target)
        pickled = stream.getvalue()
    with pytest.raises(SerializationError, match=message):
        load_bytes(with_pickle(pickled))


def test_pickle_entry_is_checked_like_a_storage():
    def compress(data):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = {name: archive.read(name) for name in archive.namelist()}
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for name, content in entries.items():
                method = zipfile.ZIP_DEFLATED if name == "object.pkl" else zipfile.ZIP_STORED
                archive.writestr(name, content, compress_type=method)
        return out.getvalue()

    with pytest.raises(SerializationError, match="'object.pkl' is compressed"):
        load_bytes(compress(saved_bytes({1, 2})))
    renamed = edit_manifest(saved_bytes({1, 2}), lambda m: m["root"].update(entry="storages/0"))
    with pytest.raises(SerializationError, match="names the entry"):
        load_bytes(renamed)


def test_pickle_module_and_weights_only():
    assert load_bytes(GOOD, pickle_module=pickle)["step"] == 3  # weights_only becomes False
    message = "Can not safely load weights when explicit pickle_module is specified"
    with pytest.raises(RuntimeError, match=message):
        load_bytes(GOOD, pickle_module=pickle, weights_only=True)
    if torch is not None:
        with pytest.raises(RuntimeError, match=message):
            torch.load(io.BytesIO(b""), pickle_module=pickle, weights_only=True)


def test_environment_variables_force_the_setting(monkeypatch):
    data = saved_bytes(argparse.Namespace(lr=0.1))
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_bytes(data, weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(RuntimeError, match="Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD`"):
        load_bytes(data)
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    with pytest.warns(UserWarning, match="forcing weights_only=False"):
        assert load_bytes(data).lr == 0.1
    with pytest.raises(pickle.UnpicklingError):
        load_bytes(data, weights_only=True)  # an explicit True is kept


def test_unpicklable_objects_fail_as_pickle_fails():
    def local():
        return 0

    for obj in ({"f": lambda: 0}, [local], {"lock": threading.Lock()}):
        with pytest.raises(Exception) as expected:
            pickle.dumps(obj, protocol=2)
        with pytest.raises(Exception) as info:
            save(obj, io.BytesIO())
        assert type(info.value) is type(expected.value)
        if torch is not None:
            with pytest.raises(Exception) as torch_info:
                torch.save(obj, io.BytesIO())
            assert type(info.value) is type(torch_info.value)
