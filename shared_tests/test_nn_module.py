"""nn.Module, Parameter and the containers: registration, iteration, state dicts,
modes, conversions, hooks and repr, compared with PyTorch where it is installed."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from oracle import TEST_DEVICE, assert_close, assert_same_error, needs_torch, on_test_device, torch

import glasstorch as gt
import glasstorch.nn as gnn

# Every test makes its inputs on the device under test (conftest: --device): the
# factory functions and new modules allocate there.
pytestmark = [pytest.mark.nn, pytest.mark.usefixtures("default_device")]


def from_torch(tensor):
    """A glasstorch copy of a PyTorch tensor (0-d tensors stay 0-d)."""
    return gt.from_numpy(np.array(tensor.detach().numpy(), copy=True)).to(TEST_DEVICE)


def build(nn):
    """The same small nested model in PyTorch (nn=torch.nn) or glasstorch (nn=glasstorch.nn)."""
    return nn.Sequential(
        OrderedDict(
            fc=nn.Linear(2, 3),
            act=nn.ReLU(),
            blocks=nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3)]),
            heads=nn.ModuleDict({"drop": nn.Dropout(0.2), "norm": nn.LayerNorm(3)}),
            bn=nn.BatchNorm1d(3),
            out=nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 1)), nn.Identity()),
        )
    )


class Net(gnn.Module):
    def __init__(self):
        super().__init__()
        self.fc = gnn.Linear(2, 2)
        self.scale = gnn.Parameter(gt.ones(1))
        self.register_buffer("steps", gt.zeros(1))
        self.register_buffer("scratch", gt.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc(x) * self.scale


# ----------------------------------------------------------------- Parameter


def test_parameter_is_a_leaf_tensor_that_prints_like_torch(device):
    p = gnn.Parameter(gt.tensor([1.0, 2.0]))
    assert isinstance(p, gnn.Parameter) and isinstance(p, gt.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.device == gt.tensor([0.0]).device and p.device.type == device
    on = "" if device == "cpu" else f", device='{p.device}'"  # PyTorch prints a CUDA device
    assert repr(p) == f"Parameter containing:\ntensor([1., 2.]{on}, requires_grad=True)"
    frozen = gnn.Parameter(gt.ones(2, dtype=gt.float64), requires_grad=False)
    assert repr(frozen) == f"Parameter containing:\ntensor([1., 1.]{on}, dtype=torch.float64)"
    if torch is not None and device == "cpu":
        assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))


def test_parameter_shares_storage_and_results_are_plain_tensors():
    data = gt.zeros(3)
    p = gnn.Parameter(data)
    with gt.no_grad():
        p.add_(1)
    assert data.tolist() == [1.0, 1.0, 1.0]
    result = p * 2
    assert type(result) is gt.Tensor and result.grad_fn.name() == "MulBackward0"
    assert type(p.detach()) is gt.Tensor


def test_parameter_survives_deepcopy_and_pickle():
    p = gnn.Parameter(gt.tensor([1.0, 2.0]))
    p.grad = gt.tensor([0.5, 0.5])
    for clone in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert isinstance(clone, gnn.Parameter) and clone.requires_grad
        assert clone.tolist() == [1.0, 2.0]
    assert copy.deepcopy(p).grad.tolist() == [0.5, 0.5]


# --------------------------------------------------------------- registration


def test_attribute_assignment_registers_parameters_buffers_and_modules():
    net = Net()
    assert list(net._parameters) == ["scale"]
    assert list(net._buffers) == ["steps", "scratch"]
    assert list(net._modules) == ["fc"]
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert list(net.state_dict()) == ["scale", "steps", "fc.weight", "fc.bias"]
    assert net.fc.weight is net.get_parameter("fc.weight")
    net.extra = gnn.ReLU()
    assert list(net._modules) == ["fc", "extra"]
    del net.extra
    assert "extra" not in net._modules
    net.scale = None
    assert net.scale is None and [n for n, _ in net.named_parameters()] == ["fc.weight", "fc.bias"]


@needs_torch
def test_iteration_orders_match_torch():
    gt_model, torch_model = build(gnn), build(torch.nn)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        names = [n for n, _ in getattr(gt_model, method)()]
        assert names == [n for n, _ in getattr(torch_model, method)()], method
    assert len(list(gt_model.parameters())) == len(list(torch_model.parameters()))
    assert len(list(gt_model.modules())) == len(list(torch_model.modules()))
    assert len(list(gt_model.children())) == len(list(torch_model.children()))
    assert list(gt_model.state_dict()) == list(torch_model.state_dict())


def test_shared_parameters_are_listed_once():
    layer = gnn.Linear(2, 2)
    model = gnn.Sequential(layer, gnn.ReLU(), layer)
    assert len(list(model.parameters())) == 2
    assert [n for n, _ in model.named_modules()] == ["", "0", "1"]


@needs_torch
@pytest.mark.parametrize(
    "action",
    [
        "assign_tensor_to_parameter",
        "buffer_exists",
        "buffer_dot",
        "buffer_empty",
        "buffer_not_tensor",
        "parameter_not_parameter",
        "parameter_dot",
        "module_dot",
        "module_not_module",
        "module_exists",
        "missing_attribute",
        "assign_int_to_buffer",
        "assign_int_to_child",
        "train_not_bool",
        "to_integer_dtype",
        "no_forward",
    ],
)
def test_registration_errors_match_torch(action):
    def run(nn, lib):
        m = nn.Linear(2, 3)
        m.register_buffer("buf", lib.zeros(2))
        seq = nn.Sequential(nn.ReLU())
        calls = {
            "assign_tensor_to_parameter": lambda: setattr(m, "weight", lib.zeros(3, 2)),
            "buffer_exists": lambda: m.register_buffer("weight", lib.zeros(1)),
            "buffer_dot": lambda: m.register_buffer("a.b", lib.zeros(1)),
            "buffer_empty": lambda: m.register_buffer("", lib.zeros(1)),
            "buffer_not_tensor": lambda: m.register_buffer("q", 3),
            "parameter_not_parameter": lambda: m.register_parameter("q", lib.zeros(1)),
            "parameter_dot": lambda: m.register_parameter("a.b", None),
            "module_dot": lambda: m.add_module("a.b", nn.ReLU()),
            "module_not_module": lambda: m.add_module("x", 3),
            "module_exists": lambda: m.add_module("weight", nn.ReLU()),
            "missing_attribute": lambda: m.foo,
            "assign_int_to_buffer": lambda: setattr(m, "buf", 3),
            "assign_int_to_child": lambda: setattr(seq, "0", 3),
            "train_not_bool": lambda: m.train("yes"),
            "to_integer_dtype": lambda: m.to(lib.int64),
            "no_forward": lambda: nn.Module()(1),
        }
        return calls[action]()

    gt_error = assert_same_error(lambda: run(gnn, gt), lambda: run(torch.nn, torch))
    try:
        run(torch.nn, torch)
    except Exception as torch_error:  # noqa: BLE001 - comparing the wording
        expected = str(torch_error)
        if TEST_DEVICE == "cuda":  # PyTorch names a CUDA tensor's type torch.cuda.FloatTensor
            expected = expected.replace("'torch.FloatTensor'", "'torch.cuda.FloatTensor'")
        assert str(gt_error) == expected


def test_assigning_before_init_is_an_attribute_error():
    class Early(gnn.Module):
        def __init__(self):
            self.p = gnn.Parameter(gt.zeros(1))

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        Early()


# ----------------------------------------------------------------- state dict


def test_state_dict_round_trip_between_models():
    source, target = Net(), Net()
    with gt.no_grad():
        source.steps.fill_(7)
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert target.fc.weight.tolist() == source.fc.weight.tolist()
    assert target.steps.tolist() == [7.0]
    assert target.fc.weight is not source.fc.weight  # values copied, not shared
    state = source.state_dict()
    assert not state["fc.weight"].requires_grad
    assert state["fc.weight"].data_ptr() == source.fc.weight.data_ptr()  # shares storage
    assert source.state_dict(keep_vars=True)["fc.weight"] is source.fc.weight


@needs_torch
def test_state_dict_values_and_dtypes_match_torch():
    torch_model = build(torch.nn)
    gt_model = build(gnn)
    gt_model.load_state_dict({k: from_torch(v) for k, v in torch_model.state_dict().items()})
    for (name, value), (tname, tvalue) in zip(
        gt_model.state_dict().items(), torch_model.state_dict().items()
    ):
        assert name == tname
        assert_close(value, tvalue)


@needs_torch
@pytest.mark.parametrize("case", ["missing", "unexpected", "size", "not_tensor", "nested"])
def test_strict_load_errors_have_torch_wording(case):
    def attempt(nn, lib):
        layer = nn.Linear(2, 3)
        states = {
            "missing": {"weight": lib.zeros(3, 2)},
            "unexpected": {
                "weight": lib.zeros(3, 2),
                "bias": lib.zeros(3),
                "foo": lib.zeros(1),
                "fc.bar": lib.zeros(1),
            },
            "size": {"weight": lib.zeros(4, 2), "bias": lib.zeros(3)},
            "not_tensor": {"weight": 3, "bias": lib.zeros(3)},
        }
        if case == "nested":
            model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
            return model.load_state_dict({"0.weight": lib.zeros(3, 2), "2.bias": lib.zeros(1)})
        return layer.load_state_dict(states[case])

    gt_error = assert_same_error(lambda: attempt(gnn, gt), lambda: attempt(torch.nn, torch))
    with pytest.raises(RuntimeError) as torch_error:
        attempt(torch.nn, torch)
    assert str(gt_error) == str(torch_error.value)


def test_missing_key_message_without_torch():
    with pytest.raises(RuntimeError) as error:
        gnn.Linear(2, 3).load_state_dict({"weight": gt.zeros(3, 2)})
    assert str(error.value) == (
        'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". '
    )


def test_non_strict_load_reports_keys():
    layer = gnn.Linear(2, 3)
    result = layer.load_state_dict({"weight": gt.ones(3, 2), "extra": gt.ones(1)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]
    assert layer.weight.tolist() == [[1.0, 1.0]] * 3
    assert repr(result) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])"


def test_load_state_dict_assign_adopts_tensors():
    layer = gnn.Linear(2, 1)
    weight = gt.ones(1, 2)
    layer.load_state_dict({"weight": weight, "bias": gt.zeros(1)}, assign=True)
    assert isinstance(layer.weight, gnn.Parameter) and layer.weight.requires_grad
    assert layer.weight.data_ptr() == weight.data_ptr()


def test_non_persistent_buffers_are_not_saved_or_expected():
    net = Net()
    assert "scratch" not in net.state_dict()
    net.load_state_dict(Net().state_dict())  # strict, and "scratch" is not missing


# ------------------------------------------------------------- modes and grads


def test_train_eval_apply_and_requires_grad():
    model = build(gnn)
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    visited = []
    model.apply(lambda m: visited.append(type(m).__name__))
    assert visited[-1] == "Sequential" and visited[0] == "Linear"
    assert visited.index("ModuleList") > visited.index("Tanh")
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_zero_grad_sets_to_none_or_zeros():
    layer = gnn.Linear(2, 1)
    layer(gt.ones(3, 2)).sum().backward()
    assert layer.weight.grad is not None
    layer.zero_grad(set_to_none=False)
    assert layer.weight.grad.tolist() == [[0.0, 0.0]]
    layer.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


@needs_torch
def test_to_float64_converts_parameters_and_float_buffers_like_torch():
    gt_model, torch_model = build(gnn), build(torch.nn)
    weight = gt_model.fc.weight
    gt_model.fc.weight.grad = gt.ones(3, 2)
    assert gt_model.to(gt.float64) is gt_model
    torch_model.to(torch.float64)
    for (name, value), (_, tvalue) in zip(
        gt_model.state_dict().items(), torch_model.state_dict().items()
    ):
        assert str(value.dtype).split(".")[-1] == str(tvalue.dtype).split(".")[-1], name
    assert gt_model.fc.weight is weight and isinstance(weight, gnn.Parameter)
    assert weight.requires_grad and weight.grad.dtype is gt.float64
    assert gt_model.float().fc.weight.dtype is gt.float32
    assert gt_model.double().bn.running_mean.dtype is gt.float64


def test_to_with_a_tensor_or_cpu_keeps_working():
    layer = gnn.Linear(1, 1)
    assert layer.to("cpu") is layer and layer.cpu() is layer
    assert layer.to(gt.zeros(1, dtype=gt.float64)).weight.dtype is gt.float64


# ---------------------------------------------------------------------- hooks


def test_forward_hooks_see_and_replace_inputs_and_outputs():
    layer = gnn.Identity()
    seen = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 10,))
    post = layer.register_forward_hook(lambda m, args, out: seen.append((args, out)) or out + 1)
    result = layer(gt.tensor([1.0]))
    assert result.tolist() == [11.0]
    assert seen[0][0][0].tolist() == [10.0] and seen[0][1].tolist() == [10.0]
    pre.remove()
    post.remove()
    assert layer(gt.tensor([1.0])).tolist() == [1.0]
    with layer.register_forward_pre_hook(lambda m, args: args[0] * 2):  # bare value is wrapped
        assert layer(gt.tensor([1.0])).tolist() == [2.0]
    assert layer(gt.tensor([1.0])).tolist() == [1.0]


# ----------------------------------------------------------------- containers


def test_sequential_indexing_slicing_append_and_delete():
    model = gnn.Sequential(gnn.Linear(2, 3), gnn.ReLU(), gnn.Linear(3, 1))
    assert len(model) == 3 and isinstance(model[-1], gnn.Linear)
    head = model[:2]
    assert isinstance(head, gnn.Sequential) and len(head) == 2 and head[0] is model[0]
    assert model.append(gnn.Sigmoid()) is model and list(model._modules) == ["0", "1", "2", "3"]
    del model[1]
    assert list(model._modules) == ["0", "1", "2"] and isinstance(model[1], gnn.Linear)
    assert [type(m).__name__ for m in model] == ["Linear", "Linear", "Sigmoid"]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        model[5]
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        model.append(3)
    named = gnn.Sequential(OrderedDict(a=gnn.ReLU(), b=gnn.Tanh()))
    assert list(named._modules) == ["a", "b"]
    assert named(gt.tensor([-1.0, 1.0])).tolist() == pytest.approx([0.0, np.tanh(1.0)])


def test_module_list_and_dict():
    layers = gnn.ModuleList([gnn.Linear(1, 1) for _ in range(2)])
    layers.append(gnn.ReLU())
    layers += [gnn.Tanh()]
    assert len(layers) == 4 and isinstance(layers[-1], gnn.Tanh)
    assert isinstance(layers[1:], gnn.ModuleList) and len(layers[1:]) == 3
    assert len(list(layers.parameters())) == 4
    heads = gnn.ModuleDict({"a": gnn.Linear(1, 2)})
    heads["b"] = gnn.ReLU()
    assert list(heads) == ["a", "b"] and "a" in heads and len(heads) == 2
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias"]
    assert heads.pop("b").__class__ is gnn.ReLU and list(heads.keys()) == ["a"]


# ----------------------------------------------------------------------- repr


@needs_torch
def test_repr_of_a_nested_model_equals_torch():
    assert repr(build(gnn)) == repr(build(torch.nn))


@needs_torch
def test_layer_reprs_equal_torch():
    def layers(nn):
        return [
            nn.Linear(2, 3, bias=False),
            nn.Embedding(4, 2),
            nn.Embedding(4, 2, padding_idx=-1),
            nn.Dropout(0.1, inplace=True),
            nn.LayerNorm((2, 3), eps=1e-3, elementwise_affine=False),
            nn.BatchNorm1d(3),
            nn.BatchNorm1d(3, affine=False, track_running_stats=False, momentum=None),
            nn.ReLU(inplace=True),
            nn.LeakyReLU(0.2, True),
            nn.GELU("tanh"),
            nn.SiLU(),
            nn.ELU(0.5),
            nn.Softplus(2, 10),
            nn.Softmax(),
            nn.LogSoftmax(1),
            nn.LogSigmoid(),
            nn.Flatten(0, 2),
            nn.MSELoss(),
            nn.CrossEntropyLoss(label_smoothing=0.1),
            nn.BCEWithLogitsLoss(),
            nn.ModuleList(),
            nn.Sequential(),
        ]

    for gt_layer, torch_layer in zip(layers(gnn), layers(torch.nn)):
        assert repr(gt_layer) == repr(torch_layer)


def test_repr_without_torch():
    model = gnn.Sequential(gnn.Linear(2, 3), gnn.ReLU())
    assert repr(model) == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)"
    )


def test_module_deepcopy_copies_parameters():
    layer = gnn.Linear(2, 2)
    clone = copy.deepcopy(layer)
    assert isinstance(clone.weight, gnn.Parameter)
    assert clone.weight.tolist() == layer.weight.tolist()
    assert clone.weight.data_ptr() != layer.weight.data_ptr()


# -- ParameterList and ParameterDict
@needs_torch
def test_parameter_list_and_dict(device):
    plist = gnn.ParameterList([gnn.Parameter(gt.ones(2)), gt.zeros(3, 2)])
    plist.append(gt.ones(1))
    assert len(plist) == 3 and isinstance(plist[1], gnn.Parameter)
    assert [tuple(p.shape) for p in plist.parameters()] == [(2,), (3, 2), (1,)]
    assert [name for name, _ in plist.named_parameters()] == ["0", "1", "2"]
    pdict = gnn.ParameterDict({"a": gt.ones(2), "b": gnn.Parameter(gt.zeros(3))})
    pdict["c"] = gt.ones(4)
    assert list(pdict.keys()) == ["a", "b", "c"] and "b" in pdict
    assert isinstance(pdict["c"], gnn.Parameter)

    class Model(gnn.Module):
        def __init__(self):
            super().__init__()
            self.scales = gnn.ParameterDict({"x": gt.ones(2)})
            self.layers = gnn.ParameterList([gt.ones(2), gt.ones(2)])

        def forward(self, x):
            return x * self.scales["x"] * self.layers[0] * self.layers[1]

    model = Model().to(device)
    assert sorted(model.state_dict()) == ["layers.0", "layers.1", "scales.x"]
    model(on_test_device(np.ones(2, dtype=np.float32))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    del pdict["a"]
    assert list(pdict) == ["b", "c"]
