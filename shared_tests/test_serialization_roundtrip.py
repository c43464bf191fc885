"""glasstorch.save / glasstorch.load round trips: dtypes, views, containers, flags."""

from __future__ import annotations

import collections
import io
import math
import pathlib

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, needs_torch, torch

import glasstorch as gt
from glasstorch import _dtype
from glasstorch.serialization import load, save

# Every test saves tensors made on the device under test (conftest: --device): the
# factory functions allocate there, and a loaded tensor comes back to the device it was saved from.
pytestmark = [pytest.mark.serialization, pytest.mark.usefixtures("default_device")]


def roundtrip(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer)


@pytest.mark.parametrize("dtype", _dtype.ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype(dtype):
    rng = np.random.default_rng(0)
    if dtype.is_floating_point:
        values = rng.standard_normal((3, 4)).astype(dtype.numpy)
        values[0, :3] = [np.nan, np.inf, -0.0]
    elif dtype.name == "bool":
        values = rng.random((3, 4)) < 0.5
    else:
        info = np.iinfo(dtype.numpy)
        values = np.array([info.min, info.max, 0, 1] * 3, dtype=dtype.numpy).reshape(3, 4)
    loaded = roundtrip(gt.from_numpy(values).to(TEST_DEVICE))
    assert loaded.device.type == TEST_DEVICE
    assert loaded.dtype is dtype and tuple(loaded.shape) == (3, 4)
    assert loaded.stride() == (4, 1) and loaded.storage_offset() == 0
    np.testing.assert_array_equal(loaded.cpu().numpy(), values)  # bit for bit, nan included
    assert np.signbit(loaded.cpu().numpy()[0, 2]) == np.signbit(values[0, 2])


def test_zero_dim_and_empty():
    scalar, empty, wide = gt.tensor(3.5), gt.zeros(0, 3), gt.ones(2, 0, 4, dtype=gt.int64)
    a, b, c = roundtrip((scalar, empty, wide))
    assert a.dim() == 0 and a.item() == 3.5 and a.dtype == gt.float32
    assert tuple(b.shape) == (0, 3) and b.numel() == 0
    assert tuple(c.shape) == (2, 0, 4) and c.dtype == gt.int64


def test_views_keep_layout_and_share_storage():
    base = gt.arange(24.0).reshape(4, 6)
    transposed = base.t()
    column = base[:, 2]
    window = base[1:3, 2:5]
    loaded = roundtrip({"base": base, "t": transposed, "col": column, "win": window})
    for name, original in (("t", transposed), ("col", column), ("win", window)):
        view = loaded[name]
        assert view.stride() == original.stride()
        assert view.storage_offset() == original.storage_offset()
        assert_close(view, original.cpu().numpy())
        assert view.untyped_storage() is loaded["base"].untyped_storage()
    loaded["base"][1, 2] = -1.0  # one storage: a write shows through every view
    assert loaded["t"][2, 1].item() == -1.0 and loaded["win"][0, 0].item() == -1.0
    assert loaded["col"][1].item() == -1.0
    assert base[1, 2].item() == 8.0  # the original is not shared with the loaded copy


def test_a_view_alone_keeps_its_whole_storage():
    base = gt.arange(10, dtype=gt.int64)
    view = base[3:7:2]
    loaded = roundtrip(view)
    assert loaded.tolist() == [3, 5] and loaded.stride() == (2,)
    assert loaded.storage_offset() == 3 and len(loaded.untyped_storage()) == 10


@needs_torch
def test_same_as_torch_for_shared_views():
    x = torch.arange(6.0)
    buffer = io.BytesIO()
    torch.save([x, x[2:].view(2, 2), x], buffer)
    buffer.seek(0)
    t_loaded = torch.load(buffer)
    g = gt.arange(6.0)
    g_loaded = roundtrip([g, g[2:].view(2, 2), g])
    assert (g_loaded[0] is g_loaded[2]) == (t_loaded[0] is t_loaded[2]) is True
    assert g_loaded[1].storage_offset() == t_loaded[1].storage_offset() == 2
    assert g_loaded[1].stride() == tuple(t_loaded[1].stride())


def test_one_object_twice_loads_as_one_object():
    x = gt.ones(2)
    a, b, nested = roundtrip([x, x, {"again": x}])
    assert a is b is nested["again"]


def test_requires_grad_like_torch():
    leaf = gt.ones(3, requires_grad=True)
    computed = leaf * 2
    plain = gt.zeros(2)
    loaded = roundtrip({"leaf": leaf, "computed": computed, "plain": plain})
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf
    assert loaded["computed"].requires_grad and loaded["computed"].is_leaf  # as torch does
    assert loaded["computed"].grad_fn is None
    assert not loaded["plain"].requires_grad
    if torch is not None:
        t_leaf = torch.ones(3, requires_grad=True)
        buffer = io.BytesIO()
        torch.save({"leaf": t_leaf, "computed": t_leaf * 2}, buffer)
        buffer.seek(0)
        t_loaded = torch.load(buffer)
        for key in ("leaf", "computed"):
            assert loaded[key].requires_grad == t_loaded[key].requires_grad
            assert loaded[key].is_leaf == t_loaded[key].is_leaf
    loaded["leaf"].sum().backward()
    assert loaded["leaf"].grad.tolist() == [1.0, 1.0, 1.0]


def test_nested_containers_and_plain_values():
    state = collections.OrderedDict([("layer.weight", gt.randn(2, 3)), ("layer.bias", gt.zeros(2))])
    obj = {
        "state": state,
        "optimizer": {
            "state": {0: {"step": gt.tensor(3.0), "exp_avg": gt.ones(2, 3)}, 1: {}},
            "param_groups": [
                {
                    "lr": 1e-3,
                    "betas": (0.9, 0.999),
                    "amsgrad": False,
                    "params": [0, 1],
                    "weight_decay": 0,
                    "foreach": None,
                    "name": "group 0",
                }
            ],
        },
        "epoch": 7,
        "big": 2**80,
        "floats": [math.nan, math.inf, -math.inf, 0.1, -0.0, 1e-308],
        "bytes": b"\x00\xffabc",
        "empty": [[], {}, ()],
        "size": gt.zeros(2, 3).shape,
        "dtype": gt.float64,
        "device": gt.device("cpu"),
        (1, "tuple key"): "ok",
        None: True,
        np.float64(2.5): np.int64(4),
    }
    loaded = roundtrip(obj)
    assert isinstance(loaded["state"], collections.OrderedDict)
    assert list(loaded["state"]) == ["layer.weight", "layer.bias"]
    assert_close(loaded["state"]["layer.weight"], state["layer.weight"].cpu().numpy())
    opt = loaded["optimizer"]
    assert set(opt["state"]) == {0, 1} and opt["state"][1] == {}
    assert opt["state"][0]["step"].item() == 3.0
    assert opt["param_groups"] == [
        {
            "lr": 1e-3,
            "betas": (0.9, 0.999),
            "amsgrad": False,
            "params": [0, 1],
            "weight_decay": 0,
            "foreach": None,
            "name": "group 0",
        }
    ]
    assert type(opt["param_groups"][0]["betas"]) is tuple
    assert type(opt["param_groups"][0]["weight_decay"]) is int
    assert loaded["epoch"] == 7 and loaded["big"] == 2**80
    floats = loaded["floats"]
    assert math.isnan(floats[0]) and floats[1:3] == [math.inf, -math.inf]
    assert floats[3] == 0.1 and math.copysign(1, floats[4]) == -1 and floats[5] == 1e-308
    assert loaded["bytes"] == b"\x00\xffabc"
    assert loaded["empty"] == [[], {}, ()]
    assert loaded["size"] == (2, 3) and repr(loaded["size"]) == "torch.Size([2, 3])"
    assert loaded["dtype"] is gt.float64 and loaded["device"] == gt.device("cpu")
    assert loaded[(1, "tuple key")] == "ok" and loaded[None] is True
    assert loaded[2.5] == 4 and type(loaded[2.5]) is int


def test_paths_str_and_pathlib(tmp_path):
    x = gt.arange(5)
    save(x, str(tmp_path / "a.pt"))
    save({"x": x}, tmp_path / "b.pt")
    assert load(tmp_path / "a.pt").tolist() == [0, 1, 2, 3, 4]
    assert load(str(tmp_path / "b.pt"))["x"].tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "c.pt", "wb") as stream:
        save(x, stream)
    with open(tmp_path / "c.pt", "rb") as stream:
        assert load(stream).tolist() == [0, 1, 2, 3, 4]


def test_file_objects_read_from_current_position():
    buffer = io.BytesIO()
    buffer.write(b"header")
    save(gt.ones(2), buffer)
    buffer.seek(len(b"header"))
    assert load(buffer).tolist() == [1.0, 1.0]


def test_deterministic_bytes_and_readable_format():
    state = {"w": gt.arange(4.0)}
    first, second = io.BytesIO(), io.BytesIO()
    save(state, first)
    save(state, second)
    assert first.getvalue() == second.getvalue()
    import json
    import zipfile

    with zipfile.ZipFile(io.BytesIO(first.getvalue())) as archive:
        assert archive.namelist() == ["manifest.json", "storages/0"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())
        manifest = json.loads(archive.read("manifest.json"))
        assert manifest["format"] == "glasstorch.save" and manifest["version"] == 1
        location = str(state["w"].device)  # "cpu" or "cuda:0"
        assert manifest["storages"] == [{"dtype": "float32", "numel": 4, "location": location}]
        raw = archive.read("storages/0")
    assert np.frombuffer(raw, "<f4").tolist() == [0.0, 1.0, 2.0, 3.0]


Point = collections.namedtuple("Point", "x y")


class Holder:
    """An object of the test's own that holds tensors (as a whole model does)."""

    def __init__(self, base):
        self.base = base
        self.view = base[1:3]
        self.same = base
        self.meta = {"dtype": base.dtype, "device": base.device, "shape": base.shape}


def roundtrip_trusted(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, weights_only=False)


def test_any_picklable_object_round_trips():
    """torch.save pickles what it cannot describe; load(weights_only=False) gets it back."""
    array = np.arange(6.0).reshape(2, 3)
    loop = []
    loop.append(loop)
    counts = collections.defaultdict(int, {"a": 2})
    obj = {"array": array, "point": Point(1, 2), "loop": loop, "counts": counts, "w": gt.ones(2)}
    loaded = roundtrip_trusted(obj)
    np.testing.assert_array_equal(loaded["array"], array)
    assert type(loaded["point"]) is Point and loaded["point"] == (1, 2)
    assert loaded["loop"][0] is loaded["loop"]  # a cycle stays a cycle
    assert type(loaded["counts"]) is collections.defaultdict and loaded["counts"]["b"] == 0
    assert loaded["w"].tolist() == [1.0, 1.0] and loaded["w"].device.type == TEST_DEVICE
    if torch is not None:  # PyTorch saves and loads the same object alike
        t_obj = {**obj, "w": torch.ones(2)}
        buffer = io.BytesIO()
        torch.save(t_obj, buffer)
        buffer.seek(0)
        t_loaded = torch.load(buffer, weights_only=False)
        assert {k: type(v) for k, v in t_loaded.items()} == {
            k: type(v) for k, v in loaded.items() if k != "w"
        } | {"w": torch.Tensor}


def test_tensors_inside_a_pickled_object_keep_storage_and_identity():
    holder = roundtrip_trusted(Holder(gt.arange(5.0)))
    assert type(holder) is Holder and holder.same is holder.base
    assert holder.view.untyped_storage() is holder.base.untyped_storage()
    assert holder.view.storage_offset() == 1 and holder.view.tolist() == [1.0, 2.0]
    holder.base[1] = -1.0
    assert holder.view[0].item() == -1.0
    assert holder.meta["dtype"] is gt.float32 and holder.meta["device"] == holder.base.device
    assert holder.meta["shape"] == (5,) and type(holder.meta["shape"]) is gt.Size


def test_weights_only_default_rebuilds_what_pytorch_allows():
    """set, complex, bytearray, bytes, Counter and OrderedDict need no allow-listing."""
    values = {
        "set": {1, 2},
        "complex": 3 - 4j,
        "bytearray": bytearray(b"\x00ab"),
        "counter": collections.Counter("abca"),
        "frozen": (gt.Size([2, 3]), b"raw"),
        "tensor": gt.zeros(2),
    }
    loaded = roundtrip(values)  # pickled (set is no JSON node), weights_only=True by default
    for key in ("set", "complex", "bytearray", "counter"):
        assert loaded[key] == values[key] and type(loaded[key]) is type(values[key])
    assert loaded["frozen"] == ((2, 3), b"raw") and loaded["tensor"].tolist() == [0.0, 0.0]
    if torch is not None:
        buffer = io.BytesIO()
        torch.save(
            {**values, "frozen": (torch.Size([2, 3]), b"raw"), "tensor": torch.zeros(2)}, buffer
        )
        buffer.seek(0)
        t_loaded = torch.load(buffer)  # PyTorch's default allows them too
        assert all(t_loaded[k] == loaded[k] for k in ("set", "complex", "bytearray", "counter"))


def test_plain_data_stays_json_and_objects_are_pickled():
    import json
    import zipfile

    def manifest_and_names(obj):
        buffer = io.BytesIO()
        save(obj, buffer)
        with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
            return json.loads(archive.read("manifest.json")), archive.namelist()

    manifest, names = manifest_and_names({"w": gt.ones(2), "step": 3})
    assert manifest["version"] == 1 and "object.pkl" not in names
    manifest, names = manifest_and_names({"w": gt.ones(2), "ids": {3}})
    assert manifest["version"] == 2 and manifest["root"] == {
        "kind": "pickle",
        "entry": "object.pkl",
    }
    assert names == ["manifest.json", "object.pkl", "storages/0"]
    assert manifest["storages"][0]["numel"] == 2  # the tensor is stored as any other


def test_shared_containers_are_fine():
    inner = [gt.ones(1)]
    a, b = roundtrip([inner, inner])
    assert a[0] is b[0]


def test_saving_does_not_change_the_tensor():
    x = gt.arange(6.0).reshape(2, 3).t()
    before = (x.stride(), x.storage_offset(), x.tolist(), x._version)
    save(x, io.BytesIO())
    assert (x.stride(), x.storage_offset(), x.tolist(), x._version) == before


def test_pathlike_protocol(tmp_path):
    class Where:
        def __fspath__(self):
            return str(tmp_path / "x.pt")

    save(gt.ones(1), Where())
    assert load(pathlib.Path(tmp_path / "x.pt")).tolist() == [1.0]


def test_parameters_stay_parameters():
    from glasstorch import nn

    weight = nn.Parameter(gt.ones(2, 3))
    frozen = nn.Parameter(gt.zeros(2), requires_grad=False)
    loaded = roundtrip({"w": weight, "row": weight[1], "frozen": frozen})
    assert isinstance(loaded["w"], nn.Parameter) and loaded["w"].requires_grad
    assert isinstance(loaded["frozen"], nn.Parameter) and not loaded["frozen"].requires_grad
    assert loaded["row"].untyped_storage() is loaded["w"].untyped_storage()
    assert not isinstance(loaded["row"], nn.Parameter)


def test_model_state_dict_round_trip(tmp_path):
    """PyTorch's beginner recipe: save model.state_dict(), load it into a fresh model."""
    from glasstorch import nn

    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    path = tmp_path / "model.pt"
    save(model.state_dict(), path)
    state = load(path, weights_only=True)
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(not t.requires_grad for t in state.values())  # state_dict() detaches
    gt.manual_seed(1)
    fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh.load_state_dict(state)
    x = gt.randn(5, 4)
    assert_close(fresh(x).detach(), model(x).detach().cpu().numpy())
    if torch is not None:  # the same weights give PyTorch's outputs
        reference = torch.nn.Sequential(
            torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)
        )
        reference.load_state_dict(
            {k: torch.from_numpy(v.cpu().numpy().copy()) for k, v in state.items()}
        )
        expected = reference(torch.from_numpy(x.cpu().numpy().copy())).detach()
        assert_close(fresh(x).detach(), expected)


def test_whole_model_save_and_load(tmp_path):
    """``torch.save(model, path)`` then ``torch.load(path, weights_only=False)``."""
    from glasstorch import nn

    gt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    optimizer = gt.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "model.pt"
    save(model, path)
    loaded = load(path, weights_only=False)
    assert type(loaded) is nn.Sequential and loaded is not model
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in loaded.parameters())
    x = gt.randn(5, 4)
    assert_close(loaded(x).detach(), model(x).detach().cpu().numpy())
    assert loaded[0].weight.device == model[0].weight.device
    with pytest.raises(__import__("pickle").UnpicklingError, match="Weights only load failed"):
        load(path)  # the default refuses the module's class, as PyTorch's does
    save({"model": model, "optimizer": optimizer}, path)
    both = load(path, weights_only=False)
    assert both["optimizer"].param_groups[0]["params"][0] is both["model"][0].weight
    loss = both["model"](x).sum()
    loss.backward()
    both["optimizer"].step()  # the loaded optimizer updates the loaded model's parameters
    assert not np.allclose(
        both["model"][0].weight.detach().cpu().numpy(), model[0].weight.detach().cpu().numpy()
    )
    if torch is not None:  # the same weights give PyTorch's outputs
        reference = torch.nn.Sequential(
            torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)
        )
        reference.load_state_dict(
            {
                k: torch.from_numpy(v.detach().cpu().numpy().copy())
                for k, v in loaded.state_dict().items()
            }
        )
        buffer = io.BytesIO()
        torch.save(reference, buffer)
        buffer.seek(0)
        t_loaded = torch.load(buffer, weights_only=False)
        expected = t_loaded(torch.from_numpy(x.cpu().numpy().copy())).detach()
        assert_close(loaded(x).detach(), expected)


def test_device_tensors_load_on_their_device_or_where_map_location_says(device):
    """PyTorch's rule: a storage loads on the device it was saved from, unless mapped."""
    from glasstorch import nn

    model = nn.Linear(3, 2)
    state = {"model": model.state_dict(), "step": gt.tensor(4.0), "ids": gt.arange(5)}
    buffer = io.BytesIO()
    save(state, buffer)
    data = buffer.getvalue()

    def load_with(**kwargs):
        return load(io.BytesIO(data), **kwargs)

    same = load_with()
    assert same["model"]["weight"].device == model.weight.device
    assert same["model"]["weight"].device.type == device
    assert_close(same["model"]["weight"], model.weight.detach().cpu().numpy())
    assert same["ids"].tolist() == [0, 1, 2, 3, 4] and same["step"].item() == 4.0
    for where in ("cpu", gt.device("cpu"), {str(model.weight.device): "cpu"}):
        on_host = load_with(map_location=where)
        assert on_host["model"]["bias"].device == gt.device("cpu")
        assert on_host["ids"].device == gt.device("cpu")
        assert on_host["model"]["bias"].tolist() == model.bias.tolist()
    back = load_with(map_location=device)
    assert back["model"]["weight"].device.type == device
    host = io.BytesIO()
    save(gt.ones(2, device="cpu"), host)  # a CPU checkpoint mapped to the device
    host.seek(0)
    moved = load(host, map_location=device)
    assert moved.device.type == device and moved.tolist() == [1.0, 1.0]
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(load_with(map_location="cpu")["model"])  # copied to fresh's device
    assert fresh.weight.device.type == device
    assert fresh.weight.tolist() == model.weight.tolist()
    x = gt.randn(4, 3)
    assert_close(fresh(x).detach(), model(x).detach().cpu().numpy())
