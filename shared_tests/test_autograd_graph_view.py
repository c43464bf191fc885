"""The graph view of autograd (glasstorch.autograd.graph): to_dot's text, which needs no
Graphviz, and draw's rendering.

Every test makes its tensors on the device under test (conftest's
``default_device``): the graph is drawn the same whichever device computes.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter

import pytest
from oracle import needs_torch, torch

import glasstorch as gt
from glasstorch.autograd import graph

pytestmark = [pytest.mark.autograd, pytest.mark.usefixtures("default_device")]

NODE = re.compile(r'^\s+(n\d+) \[label="((?:[^"\\]|\\.)*)"')
EDGE = re.compile(r"^\s+(n\d+) -> (n\d+)(?: \[(.*)\])?;$")


def parse(dot: str):
    """Nodes (id -> label lines) and edges ((source, target, attributes)) of to_dot's text."""
    nodes, edges = {}, []
    for line in dot.splitlines():
        if match := NODE.match(line):
            nodes[match[1]] = match[2].split("\\n")
        elif match := EDGE.match(line):
            edges.append((match[1], match[2], match[3] or ""))
    return nodes, edges


def labels(dot: str) -> Counter:
    """How often each first label line (a node's name) occurs."""
    nodes, _ = parse(dot)
    return Counter(lines[0] for lines in nodes.values())


def small_graph():
    x = gt.ones(2, 3, requires_grad=True)
    w = gt.ones(3, 4, requires_grad=True)
    y = (x @ w).tanh().sum()
    return x, w, y


def test_nodes_leaves_and_output():
    x, w, y = small_graph()
    dot = graph.to_dot(y)
    assert dot.startswith('digraph "autograd" {') and dot.rstrip().endswith("}")
    names = labels(dot)
    assert names["SumBackward0"] == names["TanhBackward0"] == names["MmBackward0"] == 1
    assert names["AccumulateGrad"] == 2
    nodes, edges = parse(dot)
    assert nodes["n0"] == ["output", "() float32"]
    leaf_labels = {tuple(lines) for lines in nodes.values() if lines[0].startswith("(")}
    assert {("(2, 3) float32",), ("(3, 4) float32",)} <= leaf_labels
    ids = set(nodes)
    assert all(source in ids and target in ids for source, target, _ in edges)


def test_edges_follow_next_functions():
    x, w, y = small_graph()
    nodes, edges = parse(graph.to_dot(y, show_saved=False))
    solid = {(nodes[s][0], nodes[t][0]) for s, t, attributes in edges if not attributes}
    assert ("output", "SumBackward0") in solid
    assert ("SumBackward0", "TanhBackward0") in solid
    assert ("TanhBackward0", "MmBackward0") in solid
    assert ("MmBackward0", "AccumulateGrad") in solid
    assert len([e for e in edges if nodes[e[0]][0] == "AccumulateGrad"]) == 2


def test_saved_tensors_and_their_shapes():
    x, w, y = small_graph()
    dot = graph.to_dot(y, show_saved=True)
    nodes, edges = parse(dot)
    assert ["saved output", "(2, 4) float32"] in nodes.values()  # tanh keeps its result
    dashed = [(nodes[s][0], nodes[t]) for s, t, attributes in edges if "dashed" in attributes]
    # mm saved both leaves: dashed lines go to their variable boxes
    assert ("MmBackward0", ["(2, 3) float32"]) in dashed
    assert ("MmBackward0", ["(3, 4) float32"]) in dashed
    assert "saved" not in graph.to_dot(y, show_saved=False)


def test_freed_saved_tensors_are_reported():
    x, w, y = small_graph()
    y.backward()
    assert "(saved tensors freed)" in graph.to_dot(y)


def test_params_name_the_leaves():
    model = gt.nn.Linear(3, 2)
    out = model(gt.ones(1, 3)).sum()
    nodes, _ = parse(graph.to_dot(out, params=dict(model.named_parameters())))
    assert ["weight", "(2, 3) float32"] in nodes.values()
    assert ["bias", "(2) float32"] in nodes.values()


def test_several_outputs_and_a_shared_leaf():
    x = gt.ones(3, requires_grad=True)
    a, b = x * 2, x.exp()
    names = labels(graph.to_dot([a, b]))
    assert names["output 0"] == names["output 1"] == 1
    assert names["AccumulateGrad"] == 1  # one leaf, one accumulator, drawn once


def test_a_leaf_and_a_custom_function():
    class Cube(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    x = gt.ones(4, requires_grad=True)
    names = labels(graph.to_dot(Cube.apply(x)))
    assert names["CubeBackward"] == 1 and names["AccumulateGrad"] == 1
    nodes, edges = parse(graph.to_dot(x))  # a leaf alone: no graph behind it
    assert list(nodes.values()) == [["output (a leaf)", "(4) float32"]] and edges == []


def test_the_text_is_deterministic():
    assert graph.to_dot(small_graph()[2]) == graph.to_dot(small_graph()[2])


@needs_torch
def test_node_names_match_pytorchs():
    def build(lib):
        x = lib.ones(2, 3, requires_grad=True)
        w = lib.ones(3, 3, requires_grad=True)
        h = lib.relu(x @ w + 1)
        return (h * h).mean() + h.sigmoid().sum()

    def walk(tensor) -> Counter:
        seen, stack, names = set(), [tensor.grad_fn], Counter()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            names[type(node).__name__ if "Accumulate" in type(node).__name__ else node.name()] += 1
            stack.extend(next_node for next_node, _ in node.next_functions)
        return names

    ours = labels(graph.to_dot(build(gt), show_saved=False))
    del ours["output"]
    del ours["(2, 3) float32"], ours["(3, 3) float32"]
    assert ours == walk(build(torch))


# ------------------------------------------------------------------ render
def test_draw_without_the_python_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    with pytest.raises(ImportError, match="pip install graphviz"):
        graph.draw(small_graph()[2], str(tmp_path / "g.svg"))


def test_draw_renders_or_says_how_to_install_dot(tmp_path):
    pytest.importorskip("graphviz")  # in the test extra; absent only in a bare environment
    path = str(tmp_path / "g.svg")
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="apt-get install graphviz"):
            graph.draw(small_graph()[2], path)
    else:
        assert graph.draw(small_graph()[2], path) == path
        with open(path) as file:
            svg = file.read()
        assert "<svg" in svg and "MmBackward0" in svg


def test_draw_reports_a_missing_dot_program(monkeypatch, tmp_path):
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on this PATH
    with pytest.raises(RuntimeError, match="Graphviz's 'dot' program"):
        graph.draw(small_graph()[2], str(tmp_path / "g.png"), format="png")
