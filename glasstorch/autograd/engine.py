"""The backward engine: walk the graph from the outputs back to the leaves.

The walk is iterative (no recursion, so a chain of 100,000 operations is fine)
and goes in topological order: a node runs only once every node that feeds it a
gradient has run. The engine counts, for each node, how many edges point at it
(its *dependencies*); a node whose count drops to zero is ready. Among ready
nodes the most recently created runs first, as in PyTorch.

Code that runs during backward (a hook) may ask for a *final callback*: a
function the engine calls once the whole walk is over, before ``backward()``
returns (:class:`ExecutionEngine`). DistributedDataParallel waits there for its
last gradients to arrive from the other processes.
"""

from __future__ import annotations

import contextlib
import heapq
import threading

from glasstorch.autograd.function import AccumulateGrad, Node, gradient_edge
from glasstorch.autograd.grad_mode import set_grad_enabled


class ExecutionEngine:
    """The engine as PyTorch exposes it: ``torch.autograd.Variable._execution_engine``.

    Its one public use is :meth:`queue_callback`. Each backward pass (PyTorch
    calls it a *graph task*) keeps a list of callbacks; the list belongs to the
    thread running the pass, and a backward started inside a hook (a nested
    pass) gets its own.
    """

    def __init__(self):
        self._local = threading.local()  # .callbacks: one list per running backward

    def _callback_stack(self) -> list[list]:
        if not hasattr(self._local, "callbacks"):
            self._local.callbacks = []
        return self._local.callbacks

    def queue_callback(self, callback) -> None:
        """Call ``callback()`` when the running backward pass has finished its walk.

        Callbacks run in the order they were queued, on the thread that runs
        backward, after every node (and every hook) has run and before
        ``backward()`` or ``autograd.grad()`` returns; a callback may queue
        another, which runs after it.

        Raises:
            RuntimeError: no backward pass is running on this thread.
        """
        stack = self._callback_stack()
        if not stack:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        stack[-1].append(callback)

    @contextlib.contextmanager
    def graph_task(self):
        """The span of one backward pass: callbacks queued inside it run as it ends.

        If the pass raises, its callbacks are dropped (the error propagates).
        """
        stack = self._callback_stack()
        callbacks: list = []
        stack.append(callbacks)
        try:
            yield
            while callbacks:  # a callback may queue more: they run too, in order
                callbacks.pop(0)()
        finally:
            stack.pop()


#: The one engine (``Variable._execution_engine``).
execution_engine = ExecutionEngine()


def _root_edge(tensor, position: int) -> tuple[Node, int]:
    if not tensor.requires_grad:
        raise RuntimeError(
            f"element {position} of tensors does not require grad and does not have a grad_fn"
        )
    return gradient_edge(tensor)


def _reachable(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots``, found with an explicit stack."""
    seen, stack, order = set(roots), list(roots), []
    while stack:
        node = stack.pop()
        order.append(node)
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                stack.append(next_node)
    return order


def _needed(nodes: list[Node], targets: set[Node]) -> set[Node]:
    """The nodes from which some target can be reached (only those need to run)."""
    parents: dict[Node, list[Node]] = {}
    for node in nodes:
        for next_node, _ in node.next_functions:
            if next_node is not None:
                parents.setdefault(next_node, []).append(node)
    needed, stack = set(targets), list(targets)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in needed:
                needed.add(parent)
                stack.append(parent)
    return needed


def _fit(grad, meta, node: Node, index: int):
    """Make a gradient match the input it belongs to: reduce broadcast dims, cast dtype."""
    shape, dtype = meta
    if grad._shape != shape:
        from glasstorch._shape import is_expandable_to

        if not is_expandable_to(shape, grad.shape):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {index} - "
                f"got {list(grad.shape)} but expected shape compatible with {list(shape)}"
            )
        grad = grad.sum_to_size(shape)
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    return grad


def run_backward(
    tensors,
    grad_tensors,
    retain_graph: bool,
    create_graph: bool,
    inputs=None,
    accumulate: bool = True,
    allow_unused: bool = True,
):
    """Backpropagate ``grad_tensors`` from ``tensors`` through the graph.

    With ``accumulate`` (``Tensor.backward``) gradients are added into the
    ``.grad`` of leaves (only of ``inputs``, when given). Without it
    (``autograd.grad``) the gradients reaching ``inputs`` are returned instead
    and no ``.grad`` is touched.
    """
    roots = [_root_edge(t, i) for i, t in enumerate(tensors)]
    nodes = _reachable([node for node, _ in roots])

    # Where to capture gradients: the (node, output_nr) each input's gradient flows into.
    captures: dict[tuple[Node, int], int] = {}
    if inputs is not None:
        for i, tensor in enumerate(inputs):
            if not tensor.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = gradient_edge(tensor)
            captures[edge] = i
        needed = _needed(nodes, {node for node, _ in captures})
    else:
        needed = set(nodes)

    captured = [None] * (len(inputs) if inputs is not None else 0)
    with execution_engine.graph_task():  # ends by running the final callbacks
        # -- solution: autograd/engine
        dependencies: dict[Node, int] = dict.fromkeys(needed, 0)
        for node in needed:
            for next_node, _ in node.next_functions:
                if next_node in needed:
                    dependencies[next_node] += 1

        buffers: dict[Node, list] = {}

        def deliver(node: Node, output_nr: int, grad) -> None:
            slots = buffers.setdefault(node, [None] * max(1, len(node._output_meta)))
            slots[output_nr] = grad if slots[output_nr] is None else slots[output_nr] + grad

        for (node, output_nr), grad in zip(roots, grad_tensors):
            deliver(node, output_nr, grad)
        # Each root node once, if nothing else feeds it (then it is ready now).
        starts = {node for node, _ in roots if dependencies.get(node) == 0}
        ready = [(-node._sequence_nr, id(node), node) for node in starts]
        heapq.heapify(ready)

        with set_grad_enabled(create_graph):
            while ready:  # the core loop: the newest ready node runs next
                _, _, node = heapq.heappop(ready)
                grads = _run_tensor_hooks(node, buffers.pop(node, [None]))
                if captures:
                    _capture(node, grads, captures, captured)
                if isinstance(node, AccumulateGrad):  # a leaf: .grad += gradient
                    if accumulate and (inputs is None or (node, 0) in captures):
                        _accumulate(node, grads)
                    continue
                results = _call(node, grads, needed)  # the node's backward formula
                if not retain_graph:
                    node._release_saved()
                _send(node, results, deliver, dependencies, ready)  # on to the inputs' nodes
                results = None  # the gradients live on in ``buffers`` only (see AccumulateGrad)
        # -- end solution

    if inputs is not None and not accumulate:
        if not allow_unused and any(grad is None for grad in captured):
            raise RuntimeError(
                "One of the differentiated Tensors appears to not have been used in the "
                "graph. Set allow_unused=True if this is the desired behavior."
            )
        return captured
    return None


def _accumulate(node: AccumulateGrad, grads: list) -> None:
    """Hand a leaf's gradient to its AccumulateGrad node.

    ``grads`` is the only reference the engine holds to the gradient, which
    lets the node take it without a copy (see
    :mod:`glasstorch.autograd.gradient_stealing`): the call keeps that shape,
    ``node.apply(grads[0])``, with no other name bound to the tensor.
    """
    if grads[0] is not None:
        node.apply(grads[0])


def _call(node: Node, grads: list, needed: set) -> list:
    """Run ``node``'s backward on the gradients of its outputs (None for each
    input when no input gradient is needed or every output's gradient is None)."""
    if node not in needed or all(g is None for g in grads):
        return [None] * len(node._arg_slots)
    return node.apply(*_materialize(node, grads))


def _capture(node: Node, grads: list, captures: dict, captured: list) -> None:
    """Keep the gradients that ``autograd.grad`` (or ``inputs=``) asked for."""
    for output_nr, grad in enumerate(grads):
        if (node, output_nr) in captures:
            captured[captures[(node, output_nr)]] = grad


def _run_tensor_hooks(node: Node, grads: list) -> list:
    """Apply hooks registered on non-leaf tensors, then store retained gradients."""
    grads = list(grads)
    for output_nr, hooks in node._tensor_pre_hooks.items():
        for hook in list(hooks.values()):
            if grads[output_nr] is not None:
                replaced = hook(grads[output_nr])
                if replaced is not None:
                    grads[output_nr] = replaced
    for output_nr, tensor_ref in node._retain_grad_hooks.items():
        tensor = tensor_ref()
        grad = grads[output_nr]
        if tensor is not None and grad is not None:
            if tensor.grad is None:
                tensor.grad = grad.detach().clone()
            else:
                tensor.grad = tensor.grad + grad.detach()
    return grads


def _materialize(node: Node, grads: list) -> list:
    """Replace missing output gradients by zeros, unless the node asked for None."""
    if not node._materialize_grads or all(grad is not None for grad in grads):
        return grads  # nothing missing (the common case: no zeros to make)
    from glasstorch.ops.creation import zeros

    # The zeros go where the other gradients are (the outputs' device).
    device = next((grad.device for grad in grads if grad is not None), None)
    return [
        zeros(meta[0], dtype=meta[1], device=device) if grad is None and meta is not None else grad
        for grad, meta in zip(grads, node._output_meta)
    ]


def _send(node: Node, results, deliver, dependencies: dict, ready: list) -> None:
    """Pass each input gradient on to the node that produced that input."""
    if len(results) != len(node._arg_slots):
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients "
            f"(expected {len(node._arg_slots)}, got {len(results)})"
        )
    for arg_index, grad in enumerate(results):
        slot = node._arg_slots[arg_index]
        if slot is None:
            continue
        next_node, output_nr = node.next_functions[slot]
        if next_node is None or next_node not in dependencies:
            continue
        if grad is not None:
            deliver(next_node, output_nr, _fit(grad, node._input_meta[slot], node, arg_index))
        dependencies[next_node] -= 1
        if dependencies[next_node] == 0:
            heapq.heappush(ready, (-next_node._sequence_nr, id(next_node), next_node))
