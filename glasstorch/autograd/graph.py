"""Look at the backward graph: a tensor's ``grad_fn`` and everything behind it, drawn.

Define-by-run autograd (section 4.3 of the PyTorch paper) records one node per
operation while the program runs. Each node knows the nodes that made its
inputs (``next_functions``) and the tensors it kept for backward
(``saved_tensors``); a leaf that requires grad ends in an ``AccumulateGrad``
node, which adds the arriving gradient into the leaf's ``.grad``. This module
turns that structure into a picture:

- :func:`to_dot` writes it as Graphviz DOT text (plain Python, no Graphviz
  needed): one box per node, an arrow from each node to the nodes its
  gradient flows on to (the engine's direction), the output tensor on top,
  each leaf's variable with its shape at the bottom, and, with
  ``show_saved=True``, each saved tensor with its shape;
- :func:`to_graphviz` wraps the text in a ``graphviz.Source``, which a
  notebook shows as SVG;
- :func:`draw` renders it to an SVG or PNG file.

The last two need the ``graphviz`` Python package (``pip install graphviz``,
part of glasstorch's ``docs`` extra) and Graphviz's ``dot`` program (Debian
and Ubuntu: ``apt-get install graphviz``; macOS: ``brew install graphviz``).

Example::

    x = torch.ones(2, 3, requires_grad=True)
    y = (x * 2).sum()
    print(torch.autograd.graph.to_dot(y))
    torch.autograd.graph.draw(y, "graph.svg")
"""

from __future__ import annotations

from collections.abc import Mapping

from glasstorch.autograd.function import AccumulateGrad, Node

__all__ = ["Node", "draw", "to_dot", "to_graphviz"]

#: Fill colours: the output on top, operation nodes, leaves, saved tensors.
COLORS = {
    "output": "#b7e1a1",
    "node": "#ffffff",
    "accumulate": "#e6e6e6",
    "variable": "#a9cce3",
    "saved": "#f9d79f",
}

NO_DOT_MESSAGE = (
    "Rendering a graph needs Graphviz's 'dot' program, which is not installed or not on PATH. "
    "Install it (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install graphviz), or use to_dot(), which needs no Graphviz, and render "
    "the text elsewhere."
)
NO_LIBRARY_MESSAGE = (
    "Rendering a graph needs the 'graphviz' Python package: pip install graphviz "
    "(it comes with glasstorch's docs extra: pip install 'glasstorch[docs]'). "
    "to_dot() needs neither it nor the Graphviz program."
)


def _shape_text(tensor) -> str:
    """``(2, 3) float32``: a tensor's shape and dtype, as the picture shows them."""
    dims = ", ".join(str(size) for size in tensor.shape)
    return f"({dims}) {tensor.dtype.name}"


def _quote(text: str) -> str:
    """``text`` as a DOT string literal (lines separated by ``\\n``)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class _DotWriter:
    """Collects the statements of one graph, naming its nodes n0, n1, ... in order found."""

    def __init__(self, names: Mapping[int, str]):
        self.names = names  # id(tensor) -> the name to print for a leaf
        self.ids: dict[int, str] = {}  # id(object) -> DOT node id
        self.lines: list[str] = []

    def node(self, obj, label: str, color: str, **attributes) -> tuple[str, bool]:
        """The DOT id of ``obj``'s node, and whether it is new (then it is written now)."""
        key = id(obj)
        if key in self.ids:
            return self.ids[key], False
        dot_id = self.ids[key] = f"n{len(self.ids)}"
        extra = "".join(f", {name}={_quote(value)}" for name, value in attributes.items())
        self.lines.append(f'  {dot_id} [label={_quote(label)}, fillcolor="{color}"{extra}];')
        return dot_id, True

    def edge(self, source: str, target: str, **attributes) -> None:
        extra = ", ".join(f"{name}={_quote(value)}" for name, value in attributes.items())
        self.lines.append(f"  {source} -> {target}" + (f" [{extra}]" if extra else "") + ";")

    def variable(self, tensor) -> str:
        """The node of a leaf tensor: its name (if given) and shape."""
        name = self.names.get(id(tensor), "")
        label = f"{name}\n{_shape_text(tensor)}" if name else _shape_text(tensor)
        dot_id, _ = self.node(tensor, label, COLORS["variable"])
        return dot_id


def _saved_tensors(node: Node) -> list | None:
    """The node's saved tensors as stored (not unpacked: no version check), or None if freed."""
    saved = getattr(node, "_saved", [])
    if saved is None:
        return None
    return [entry for entry in saved if entry is not None]


def _add_node(writer: _DotWriter, node: Node, show_saved: bool, stack: list) -> str:
    """Write ``node`` (and queue the nodes behind it); returns its DOT id."""
    label = node.name()
    saved = _saved_tensors(node) if show_saved else []
    if saved is None:
        label += "\n(saved tensors freed)"
    color = COLORS["accumulate"] if isinstance(node, AccumulateGrad) else COLORS["node"]
    dot_id, new = writer.node(node, label, color)
    if not new:
        return dot_id
    stack.append((node, dot_id))
    if isinstance(node, AccumulateGrad):
        writer.edge(dot_id, writer.variable(node.variable))
    for entry in saved or ():
        tensor = entry.data
        if tensor.is_leaf and tensor.requires_grad:  # a leaf: point at its variable box
            writer.edge(dot_id, writer.variable(tensor), style="dashed")
            continue
        role = "saved output" if entry.is_output else "saved"
        saved_id, _ = writer.node(
            tensor, f"{role}\n{_shape_text(tensor)}", COLORS["saved"], shape="note"
        )
        writer.edge(dot_id, saved_id, style="dashed", arrowhead="none")
    return dot_id


def to_dot(
    tensors,
    *,
    show_saved: bool = True,
    params: Mapping[str, object] | None = None,
    graph_name: str = "autograd",
) -> str:
    """The backward graph behind ``tensors``, as Graphviz DOT text.

    Needs no Graphviz: the result is a string, which :func:`to_graphviz` and
    :func:`draw` render, and which any Graphviz installation reads.

    Args:
        tensors: a tensor, or several, whose ``grad_fn`` graph to draw.
        show_saved: also draw the tensors each node saved for backward, with
            their shapes (dashed lines). A node whose saved tensors were freed
            by ``backward()`` says so.
        params: names for leaf tensors, such as ``dict(model.named_parameters())``.
        graph_name: the DOT graph's name.

    Returns:
        DOT text: the output(s) on top, arrows in the direction gradients flow
        (from each node to its ``next_functions``), ``AccumulateGrad`` nodes
        above the leaf variables they fill, each leaf drawn with its shape.
    """
    # A Tensor is iterable too, but it is one root.
    roots = [tensors] if hasattr(tensors, "grad_fn") else list(tensors)
    names = {id(tensor): name for name, tensor in (params or {}).items()}
    writer = _DotWriter(names)
    stack: list = []
    for index, root in enumerate(roots):
        title = "output" if len(roots) == 1 else f"output {index}"
        if root.grad_fn is None:  # a leaf: no graph behind it, only the variable
            writer.node(root, f"{title} (a leaf)\n{_shape_text(root)}", COLORS["variable"])
            continue
        out_id, _ = writer.node(root, f"{title}\n{_shape_text(root)}", COLORS["output"])
        writer.edge(out_id, _add_node(writer, root.grad_fn, show_saved, stack))
    while stack:  # depth-first over next_functions, each node written once
        node, dot_id = stack.pop()
        for next_node, output_nr in node.next_functions:
            if next_node is None:
                continue
            next_id = _add_node(writer, next_node, show_saved, stack)
            outputs = len(getattr(next_node, "_output_meta", ()))
            if outputs > 1:
                writer.edge(dot_id, next_id, label=f"output {output_nr}")
            else:
                writer.edge(dot_id, next_id)
    header = [
        f"digraph {_quote(graph_name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [color="#555555"];',
    ]
    return "\n".join([*header, *writer.lines, "}"]) + "\n"


def _graphviz():
    try:
        import graphviz
    except ImportError as error:
        raise ImportError(NO_LIBRARY_MESSAGE) from error
    return graphviz


def to_graphviz(tensors, **kwargs):
    """The graph of :func:`to_dot` as a ``graphviz.Source`` (a notebook displays it as SVG).

    Takes the arguments of :func:`to_dot`. Needs the ``graphviz`` Python
    package; displaying or rendering it needs Graphviz's ``dot`` program.
    """
    return _graphviz().Source(to_dot(tensors, **kwargs))


def draw(tensors, path: str, format: str = "svg", **kwargs) -> str:  # noqa: A002 - graphviz's name
    """Render the graph of :func:`to_dot` into the file ``path``; returns ``path``.

    Args:
        tensors: the tensor(s) whose graph to draw.
        path: the file to write.
        format: ``"svg"`` or ``"png"`` (any format ``dot -T`` knows works).
        **kwargs: passed to :func:`to_dot` (``show_saved``, ``params``, ...).

    Raises:
        ImportError: the ``graphviz`` Python package is missing.
        RuntimeError: Graphviz's ``dot`` program is missing (the message says
            how to install it).
    """
    graphviz = _graphviz()
    source = graphviz.Source(to_dot(tensors, **kwargs))
    try:
        image = source.pipe(format=format)
    except graphviz.ExecutableNotFound as error:
        raise RuntimeError(NO_DOT_MESSAGE) from error
    with open(path, "wb") as file:
        file.write(image)
    return path
