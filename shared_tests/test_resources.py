"""Resources are given back: memory by reference counting alone, files and shared memory always.

* Autograd: a graph must not hold itself in a reference cycle, or its memory
  waits for Python's cyclic garbage collector. Each test here turns the
  collector off and watches a tensor's storage through a weak reference: once
  the last name for the graph is gone, the storage must be gone too.
* Loading: crafted checkpoints (zip bombs, huge declared sizes, views outside
  their storage, encrypted entries) raise SerializationError and cost ``load``
  a few megabytes at most (measured with tracemalloc).
* Saving: a save killed half-way leaves a temporary file that the next save to
  the same path removes.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import struct
import subprocess
import sys
import time
import tracemalloc
import weakref
import zipfile
import zlib

import pytest
from oracle import default_device, needs_torch, torch

import glasstorch as gt
import glasstorch.nn as nn
import glasstorch.nn.functional as F
from glasstorch.serialization import SerializationError


@contextlib.contextmanager
def cycle_collector_off():
    """Run the block with Python's cyclic garbage collector switched off.

    Objects that exist already are frozen (``gc.freeze``): a ``gc.collect()``
    inside the block then looks at the block's own objects only, which keeps
    it fast, and what it finds are cycles the block made.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def leaf(*shape, device="cpu"):
    return (gt.rand(*shape, device=device) + 0.1).requires_grad_()


class SavesItsOutput(gt.autograd.Function):
    """A user Function that keeps its own result for backward, as ``exp`` does."""

    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y / x


class SavesBothOutputs(gt.autograd.Function):
    """A user Function with two outputs, both saved."""

    @staticmethod
    def forward(ctx, x):
        a, b = x * 2, x * 3
        ctx.save_for_backward(a, b)
        return a, b

    @staticmethod
    def backward(ctx, grad_a, grad_b):
        a, b = ctx.saved_tensors
        return grad_a * 2 + grad_b * 3


def _module_with_hooks(x):
    layer = nn.Linear(3, 3)
    layer.register_forward_pre_hook(lambda module, args: None)
    layer.register_forward_hook(lambda module, args, output: None)
    return layer(x).tanh()


def _with_tensor_hook(x):
    y = x.exp()
    y.register_hook(lambda grad: grad * 2)
    return y


def _with_retain_grad(x):
    y = x.sigmoid()
    y.retain_grad()
    return y


def _inplace_exp(x):
    y = x * 1
    y.exp_()
    return y


#: name -> program: from a leaf of shape (2, 3), an output whose storage is watched.
PROGRAMS = {
    "exp": lambda x: x.exp(),
    "expm1": lambda x: x.expm1(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sqrt": lambda x: x.sqrt(),
    "rsqrt": lambda x: x.rsqrt(),
    "reciprocal": lambda x: x.reciprocal(),
    "relu": lambda x: x.relu(),
    "pow_tensor_tensor": lambda x: x.pow(x),
    "pow_number_tensor": lambda x: 2.0**x,
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(1),
    "prod": lambda x: x.prod(1),
    "amax": lambda x: x.amax(1),
    "max": lambda x: x.max(),
    "std": lambda x: x.std(1),
    "logsumexp": lambda x: x.logsumexp(1),
    "layer_norm": lambda x: F.layer_norm(x, (3,)),
    "gelu": lambda x: F.gelu(x),
    "silu": lambda x: F.silu(x),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(x.sigmoid(), gt.ones(2, 3) / 2),
    "cross_entropy_label_smoothing": lambda x: F.cross_entropy(
        x, gt.tensor([0, 2]), label_smoothing=0.1
    ),
    "function_saving_its_output": SavesItsOutput.apply,
    "function_saving_two_outputs": lambda x: SavesBothOutputs.apply(x)[1],
    "module_with_hooks": _module_with_hooks,
    "tensor_hook": _with_tensor_hook,
    "retain_grad": _with_retain_grad,
    "inplace_exp_": _inplace_exp,
}


@pytest.mark.autograd
@pytest.mark.parametrize("backward", ["no backward", "backward", "backward, retain_graph"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_is_freed_by_reference_counting(name, backward, device):
    with cycle_collector_off(), default_device(device):  # the tensors a program makes too
        x = leaf(2, 3, device=device)
        out = PROGRAMS[name](x)
        assert out.device.type == device
        storage = weakref.ref(out._storage)
        loss = out.sum()
        del out
        if backward != "no backward":
            loss.backward(retain_graph=backward.endswith("retain_graph"))
            assert x.grad is not None
        del loss
        assert storage() is None, f"{name}: the output's storage outlived its graph"
        assert gc.collect() == 0, f"{name}: the graph left objects in reference cycles"


@pytest.mark.autograd
def test_saved_output_keeps_its_storage_while_the_graph_lives(device):
    with cycle_collector_off():
        x = leaf(4, device=device)
        y = x.exp()
        storage = weakref.ref(y._storage)
        loss = y.sum() * 1
        grad_fn = y.grad_fn
        del y
        assert storage() is not None  # ExpBackward0 still needs exp(x)
        loss.backward()
        assert gt.allclose(x.grad, x.detach().exp())
        del loss, grad_fn
        assert storage() is None


@pytest.mark.autograd
@needs_torch
def test_unpacked_saved_output_is_a_new_tensor_with_the_node_as_grad_fn(device):
    seen = {}

    def program(T):
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx, grad):
                x, y = ctx.saved_tensors
                seen[T] = (y.grad_fn is ctx, y.requires_grad, y.is_leaf, x.grad_fn is None)
                return grad * 2

        x = T.ones(3, requires_grad=True, **({"device": device} if T is gt else {}))
        y = Double.apply(x)
        same_object = y.grad_fn.saved_tensors[1] is y
        y.sum().backward()
        return same_object

    assert program(gt) == program(torch) is False
    assert seen[gt] == seen[torch] == (True, True, False, True)


@pytest.mark.autograd
@pytest.mark.errors
def test_inplace_change_of_a_saved_output_is_still_caught(device):
    x = leaf(3, device=device)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(
        RuntimeError, match="which is output 0 of SigmoidBackward0, is at version 1"
    ):
        y.sum().backward()


@pytest.mark.autograd
@pytest.mark.errors
def test_second_backward_through_a_saved_output_is_still_refused(device):
    x = leaf(3, device=device)
    loss = x.tanh().sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


@pytest.mark.autograd
@needs_torch
def test_double_backward_through_saved_outputs(device):
    def program(T):
        on = {"device": device} if T is gt else {}
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True, **on)
        y = (x.tanh() * x.sigmoid() + x.exp()).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        return gg.tolist()

    assert program(gt) == pytest.approx(program(torch), rel=1e-5)


# ------------------------------------------------------------------ loading
#
# Crafted checkpoints that try to make ``load`` spend memory: each must raise
# SerializationError while the Python heap (NumPy buffers included) grows by no
# more than a few megabytes, whatever size the file claims. The tests load with
# map_location set to the device under test: a refused file must be refused
# before anything is made there too.

#: The most a refused malicious checkpoint may cost ``load``, in bytes.
FEW_MEGABYTES = 4 << 20


def _checkpoint_entries(obj) -> dict[str, bytes]:
    buffer = io.BytesIO()
    gt.save(obj, buffer)
    with zipfile.ZipFile(buffer) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _manifest(entries) -> dict:
    return json.loads(entries["manifest.json"])


def _zip(entries, compressed=(), streamed=None) -> bytes:
    """A zip of ``entries`` ({name: bytes}); names in ``compressed`` are deflated.

    ``streamed`` is ``(name, chunk, count)``: an entry of ``count`` copies of
    ``chunk``, written (and deflated) one chunk at a time, never whole in memory.
    """
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in entries.items():
            method = zipfile.ZIP_DEFLATED if name in compressed else zipfile.ZIP_STORED
            archive.writestr(name, content, compress_type=method)
        if streamed is not None:
            name, chunk, count = streamed
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as stream:
                for _ in range(count):
                    stream.write(chunk)
    return out.getvalue()


def _with_manifest(entries, manifest) -> dict:
    return {**entries, "manifest.json": json.dumps(manifest).encode()}


def _central_record(data: bytes, name: str) -> int:
    """Where the central directory record of entry ``name`` starts."""
    position = len(data)
    while True:
        position = data.rindex(b"PK\x01\x02", 0, position)
        if data[position + 46 : position + 46 + len(name)] == name.encode():
            return position


def _load_measured(data: bytes, match: str, device: str = "cpu") -> int:
    """Load ``data`` to ``device``, expecting SerializationError matching ``match``; return the
    peak host memory."""
    tracemalloc.start()
    try:
        with pytest.raises(SerializationError, match=match):
            gt.load(io.BytesIO(data), map_location=device)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak


ONE_FLOAT = _checkpoint_entries(gt.zeros(4))


@pytest.mark.serialization
@pytest.mark.errors
def test_zip_bomb_storage_is_refused_before_inflating(device):
    # 64 MiB of zeros deflate to about 64 KiB; the manifest promises 16 bytes.
    zeros = bytes(1 << 20)
    data = _zip(
        {n: c for n, c in ONE_FLOAT.items() if n != "storages/0"},
        streamed=("storages/0", zeros, 64),
    )
    del zeros
    assert len(data) < 1 << 20
    assert _load_measured(data, "compressed", device) < FEW_MEGABYTES


@pytest.mark.serialization
@pytest.mark.errors
def test_zip_bomb_storage_that_the_manifest_agrees_with_is_refused(device):
    # The manifest honestly promises 16M float32 elements (64 MiB) of zeros.
    manifest = _manifest(ONE_FLOAT)
    manifest["storages"][0]["numel"] = 1 << 24
    entries = _with_manifest(ONE_FLOAT, manifest)
    del entries["storages/0"]
    data = _zip(entries, streamed=("storages/0", bytes(1 << 20), 64))
    assert _load_measured(data, "compressed", device) < FEW_MEGABYTES


@pytest.mark.serialization
@pytest.mark.errors
def test_zip_bomb_manifest_is_refused(device):
    data = _zip(
        {"storages/0": ONE_FLOAT["storages/0"]},
        streamed=("manifest.json", b" " * (1 << 20), 64),
    )
    assert _load_measured(data, "manifest.json' is compressed", device) < FEW_MEGABYTES


@pytest.mark.serialization
@pytest.mark.errors
def test_small_compressed_entries_are_refused_too(device):
    data = _zip(ONE_FLOAT, compressed=("storages/0",))
    with pytest.raises(SerializationError, match="zip method 8"):
        gt.load(io.BytesIO(data), map_location=device)


@pytest.mark.serialization
@pytest.mark.errors
@pytest.mark.parametrize(
    "numel, message",
    [
        (10**12, "should hold 1000000000000 float32 elements"),
        (2**62, "does not fit in memory"),
        (2**70, "does not fit in an int64"),
    ],
)
def test_huge_declared_storage_is_refused_before_allocating(numel, message, device):
    manifest = _manifest(ONE_FLOAT)
    manifest["storages"][0]["numel"] = numel
    data = _zip(_with_manifest(ONE_FLOAT, manifest))
    assert _load_measured(data, message, device) < FEW_MEGABYTES


@pytest.mark.serialization
@pytest.mark.errors
def test_entry_declaring_more_bytes_than_the_file_holds(device):
    # Patch the central directory: storages/0 claims 4 GiB - 4 bytes, as does the manifest.
    manifest = _manifest(ONE_FLOAT)
    manifest["storages"][0]["numel"] = (2**32 - 4) // 4
    data = bytearray(_zip(_with_manifest(ONE_FLOAT, manifest)))
    record = _central_record(bytes(data), "storages/0")
    struct.pack_into("<LL", data, record + 20, 2**32 - 4, 2**32 - 4)
    assert _load_measured(bytes(data), "cannot hold", device) < FEW_MEGABYTES


@pytest.mark.serialization
@pytest.mark.errors
def test_encrypted_entry_is_refused(device):
    data = bytearray(_zip(ONE_FLOAT))
    record = _central_record(bytes(data), "storages/0")
    data[record + 8] |= 0x01  # the central directory's "encrypted" flag
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        data[archive.getinfo("storages/0").header_offset + 6] |= 0x01  # and the local header's
    with pytest.raises(SerializationError, match="encrypted"):
        gt.load(io.BytesIO(bytes(data)), map_location=device)


def _nested_entries_zip(manifest: bytes, inner_size: int) -> bytes:
    """A zip whose entry storages/0 *contains* the whole entry storages/1 (header and data).

    Both lie inside the file, but the bytes of storages/1 are counted twice: the
    trick by which overlapping entries make a zip bomb without compression.
    """

    def local(name: bytes, content: bytes) -> bytes:
        crc, size = zlib.crc32(content), len(content)
        header = struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 33, crc, size, size, len(name), 0
        )
        return header + name + content

    def central(name: bytes, content: bytes, offset: int) -> bytes:
        crc = zlib.crc32(content)
        return (
            struct.pack(
                "<4s6H3L5H2L",
                b"PK\x01\x02",
                20,
                20,
                0,
                0,
                0,
                33,
                crc,
                len(content),
                len(content),
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + name
        )

    inner = local(b"storages/1", bytes(inner_size))
    outer = local(b"storages/0", inner)
    manifest_entry = local(b"manifest.json", manifest)
    inner_offset = len(outer) - len(inner)
    directory = (
        central(b"storages/0", inner, 0)
        + central(b"storages/1", bytes(inner_size), inner_offset)
        + central(b"manifest.json", manifest, len(outer))
    )
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, 3, 3, len(directory), len(outer) + len(manifest_entry), 0
    )
    return outer + manifest_entry + directory + end


@pytest.mark.serialization
@pytest.mark.errors
def test_overlapping_entries_cannot_claim_more_than_the_file(device):
    inner_size = 1 << 16
    manifest = {
        "format": "glasstorch.save",
        "version": 1,
        "byteorder": "little",
        "storages": [
            {"dtype": "uint8", "numel": inner_size + 30 + len("storages/1"), "location": "cpu"},
            {"dtype": "uint8", "numel": inner_size, "location": "cpu"},
        ],
        "root": {"kind": "none"},
    }
    data = _nested_entries_zip(json.dumps(manifest).encode(), inner_size)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # a well-formed zip, as zipfile sees it
        assert archive.getinfo("storages/1").file_size == inner_size
    with pytest.raises(SerializationError, match="overlap"):
        gt.load(io.BytesIO(data), map_location=device)


def _tensor_node(manifest) -> dict:
    return manifest["root"]


@pytest.mark.serialization
@pytest.mark.errors
@pytest.mark.parametrize(
    "change, message",
    [
        ({"shape": [2**40, 2**40], "stride": [0, 0]}, "too many elements"),
        ({"shape": [2**63], "stride": [1]}, "does not fit in an int64"),
        ({"shape": [3], "stride": [2**62]}, "reaches element"),
        ({"shape": [2] * 65, "stride": [0] * 65}, "65 dimensions"),
        ({"offset": 2**62}, "reaches element"),
        ({"offset": -1}, "not a non-negative integer"),
        ({"stride": [-1]}, "not a non-negative integer"),
        ({"shape": [0], "offset": 5}, "offset lies past the end"),
    ],
)
def test_views_outside_their_storage_are_refused(change, message, device):
    manifest = _manifest(ONE_FLOAT)
    _tensor_node(manifest).update(change)
    data = _zip(_with_manifest(ONE_FLOAT, manifest))
    assert _load_measured(data, message, device) < FEW_MEGABYTES


@pytest.mark.serialization
def test_empty_view_with_huge_sizes_loads_like_pytorch(device):
    manifest = _manifest(ONE_FLOAT)
    _tensor_node(manifest).update({"shape": [0, 2**40], "stride": [2**40, 1], "offset": 4})
    loaded = gt.load(io.BytesIO(_zip(_with_manifest(ONE_FLOAT, manifest))), map_location=device)
    assert tuple(loaded.shape) == (0, 2**40) and loaded.numel() == 0
    assert loaded.device.type == device


@pytest.mark.serialization
@pytest.mark.errors
def test_bool_storage_with_other_bytes_is_refused(device):
    entries = _checkpoint_entries(gt.tensor([True, False]))
    entries["storages/0"] = b"\x01\x07"
    with pytest.raises(SerializationError, match="neither 0 nor 1"):
        gt.load(io.BytesIO(_zip(entries)), map_location=device)


@pytest.mark.serialization
@pytest.mark.errors
def test_bad_location_is_a_serialization_error(device):
    manifest = _manifest(ONE_FLOAT)
    manifest["storages"][0]["location"] = "tpu:0"
    with pytest.raises(SerializationError, match="location 'tpu:0' is not a device"):
        gt.load(io.BytesIO(_zip(_with_manifest(ONE_FLOAT, manifest))), map_location=device)


@pytest.mark.serialization
@pytest.mark.errors
@pytest.mark.parametrize("error", [MemoryError, OverflowError])
def test_memory_and_overflow_errors_become_serialization_errors(monkeypatch, error, device):
    from glasstorch import serialization

    def fail(*args, **kwargs):
        raise error("simulated")

    monkeypatch.setattr(serialization.np, "empty", fail)
    with pytest.raises(SerializationError, match=f"{error.__name__} while reading it"):
        gt.load(io.BytesIO(_zip(ONE_FLOAT)), map_location=device)


# ------------------------------------------------------------ atomic saving
#
# A save killed between creating its temporary file and renaming it cannot clean
# up after itself; the next save to the same path must.

_SAVE_FOREVER = """
import sys
import numpy as np
import glasstorch as gt

state = {"w": gt.from_numpy(np.zeros(1 << 20, dtype=np.float32))}  # 4 MB: a save takes a while
print("ready", flush=True)
while True:
    gt.save(state, sys.argv[1])
"""


def _temp_files(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def _kill_while_saving(path, sig: int) -> None:
    """Start a process that saves to ``path`` over and over; kill it while a save is under way."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SAVE_FOREVER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while not _temp_files(path.parent) and time.monotonic() < deadline:
            time.sleep(0.001)  # until a save has made its temporary file
        child.send_signal(sig)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


@pytest.mark.serialization
@pytest.mark.cpu_only("the temporary files of saves killed in a child process: the file system's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_next_save_removes_temp_files_of_killed_saves(tmp_path, sig):
    path = tmp_path / "checkpoint.pt"
    for _ in range(3):
        _kill_while_saving(path, sig)
    gt.save({"step": 4}, path)
    assert os.listdir(tmp_path) == ["checkpoint.pt"]
    assert gt.load(path) == {"step": 4}


@pytest.mark.serialization
def test_temp_files_of_running_processes_and_other_paths_are_kept(tmp_path, device):
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(finished.stdout)
    kept = [
        f".checkpoint.pt.{os.getpid()}.abcdefgh.tmp",  # this process: perhaps saving right now
        f".checkpoint.pt.{os.getppid()}.abcdefgh.tmp",  # a running process
        f".other.pt.{dead_pid}.abcdefgh.tmp",  # a temporary file of another path
        ".checkpoint.pt.notapid.tmp",  # not a name save makes
    ]
    abandoned = f".checkpoint.pt.{dead_pid}.abcdefgh.tmp"
    for name in [*kept, abandoned]:
        (tmp_path / name).write_bytes(b"partial")
    gt.save(gt.ones(2, device=device), tmp_path / "checkpoint.pt")
    assert sorted(os.listdir(tmp_path)) == sorted(["checkpoint.pt", *kept])


# ------------------------------------------------- DataLoader shared memory
#
# A DataLoader whose main process is killed mid-epoch (its workers have
# batches in flight) must leave nothing in /dev/shm. Blocks are named after
# the loader's process id (``glasstorch_<pid>_...``), so any leftover is found.

_ITERATE_FOREVER = """
import os, sys, time
import numpy as np
import glasstorch as gt
from glasstorch.utils.data import DataLoader, Dataset

if sys.argv[1] == "no-memfd":  # as on systems without memfd_create: files unlinked at once
    del os.memfd_create

class Rows(Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        return gt.from_numpy(np.full(1024, i, dtype=np.float32)), i

it = iter(DataLoader(Rows(), batch_size=4, num_workers=2))
for n, (x, i) in enumerate(it):
    if n == 3:
        print(" ".join(str(w.pid) for w in it.workers), flush=True)
    time.sleep(0.005)  # the workers keep batches in flight
"""


def _process_gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie has: it holds no memory or files)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _blocks_of(pid: int) -> list[str]:
    return [name for name in os.listdir("/dev/shm") if name.startswith(f"glasstorch_{pid}_")]


@pytest.mark.data
@pytest.mark.cpu_only("DataLoader workers hand batches over in host shared memory (/dev/shm)")
@pytest.mark.skipif(
    not (os.path.isdir("/dev/shm") and os.path.isdir("/proc/self")),
    reason="needs Linux's /dev/shm and /proc",
)
@pytest.mark.parametrize("blocks", ["memfd", "no-memfd"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_dataloader_leaves_nothing_in_dev_shm(sig, blocks):
    if blocks == "memfd" and not hasattr(os, "memfd_create"):
        pytest.skip("this system has no memfd_create")
    child = subprocess.Popen(
        [sys.executable, "-c", _ITERATE_FOREVER, blocks], stdout=subprocess.PIPE, text=True
    )
    try:
        worker_pids = [int(pid) for pid in child.stdout.readline().split()]
        assert len(worker_pids) == 2, "the loader did not start"
        child.send_signal(sig)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    # The orphaned workers notice their parent is gone and exit.
    deadline = time.monotonic() + 30
    while not all(_process_gone(pid) for pid in worker_pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_process_gone(pid) for pid in worker_pids), "the workers outlived their parent"
    assert _blocks_of(child.pid) == []
