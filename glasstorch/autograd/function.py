"""``autograd.Function`` and the nodes of the backward graph.

Every differentiable operation in glasstorch, built-in or written by a user, is
a :class:`Function`: a ``forward`` that computes values and a ``backward`` that
turns the gradient of the outputs into gradients of the inputs (a
vector-Jacobian product). The two sit side by side, so each derivative is
written next to the formula it differentiates.

When a Function runs while grad mode is on and some input requires grad, its
``ctx`` object *is* the node of the graph: it remembers the inputs' nodes
(``next_functions``), the tensors ``backward`` will need (``saved_tensors``) and
anything else ``forward`` stored on it. The node's class is named after the
Function: ``MulBackward0`` for the built-in ``Mul``, ``MyOpBackward`` for a user's
``MyOp``.
"""

from __future__ import annotations

import functools
import itertools
import weakref

from glasstorch.autograd import gradient_stealing
from glasstorch.autograd.grad_mode import _state as _grad_state
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad

_sequence_numbers = itertools.count()

#: The Tensor class. ``glasstorch.tensor`` imports this module, so it sets this
#: name once it has defined the class (an import here would be circular, and an
#: import inside ``Function.apply`` would cost time on every operation).
Tensor: type = None

#: While :mod:`glasstorch.profiler` records, its recorder, which times every
#: operation and backward node as a span; None otherwise, so a program that does
#: not profile pays one test per operation.
profiler_hook = None

SECOND_BACKWARD_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _describe(tensor) -> str:
    """How PyTorch names a tensor in errors: ``[torch.FloatTensor [2, 3]]``."""
    sizes = ", ".join(str(s) for s in tensor.shape)
    return f"[torch.{tensor.dtype.legacy_name} [{sizes}]]"


class HookDict(dict):
    """Hooks by handle id, in the order they were added (a dict a handle can point to weakly)."""

    def add(self, hook) -> RemovableHandle:
        """Add ``hook`` and return the handle that removes it."""
        handle = RemovableHandle(self)
        self[handle.id] = hook
        return handle


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` takes the hook away again."""

    _ids = itertools.count()

    def __init__(self, hooks: HookDict):
        self.id = next(RemovableHandle._ids)
        self._hooks = weakref.ref(hooks)

    def remove(self) -> None:
        """Remove the hook (doing so twice is harmless)."""
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.remove()


class SavedTensor:
    """One tensor kept on a node for backward (PyTorch's ``SavedVariable``).

    Most saved tensors are inputs of the node, kept as they are. A node may
    also save one of its own *outputs* (``exp``, ``tanh``, ``sigmoid``,
    ``sqrt``, ``relu`` and ``softmax`` need only their result for the
    gradient). Kept as it is, that output would close a reference cycle::

        output --grad_fn--> node --saved--> output

    Python frees an object when its reference count drops to zero, and the
    objects of a cycle keep each other's counts above zero: only the cyclic
    garbage collector frees them, whenever it next runs. Until then every
    such output's memory stays allocated, even after the user dropped the
    whole graph. So, as in PyTorch, an output is kept *without its history*:
    only its data (a tensor over the same storage, with no ``grad_fn``) and
    its output number. :meth:`unpack` builds a new tensor over that data
    whose ``grad_fn`` is the node again; the node is at hand then, since it
    is the object whose ``saved_tensors`` are read.

    The storage is shared, and with it the version counter, so an in-place
    change of the output is still caught.

    Attributes:
        data: the tensor itself, or for an output its detached data.
        version: the storage's version when the tensor was saved.
        grad_fn: the node that made the tensor, for error messages (None for
            a leaf, and for an output: its node is the one that saves it).
        output_nr: which output of its node the tensor is.
        is_output: whether the tensor is an output of the node that saves it.
    """

    __slots__ = ("data", "version", "grad_fn", "output_nr", "is_output")

    def __init__(self, tensor):
        self.data = tensor
        self.version = tensor._version
        self.grad_fn = tensor.grad_fn
        self.output_nr = tensor._output_nr
        self.is_output = False

    def drop_history(self, output_nr: int) -> None:
        """Keep only the data: the tensor turned out to be output ``output_nr`` of its node."""
        self.data = self.data.detach()
        self.grad_fn = None
        self.output_nr = output_nr
        self.is_output = True

    def unpack(self, node: Node):
        """The saved tensor, after checking that no in-place change touched it.

        Args:
            node: the node that saved it (an output's ``grad_fn`` again).
        """
        data = self.data
        grad_fn = node if self.is_output else self.grad_fn
        if data._version != self.version:
            origin = f", which is output {self.output_nr} of {grad_fn.name()}," if grad_fn else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified "
                f"by an inplace operation: {_describe(data)}{origin} is at version "
                f"{data._version}; expected version {self.version} instead. Hint: enable "
                "anomaly detection to find the operation that failed to compute its "
                "gradient, with torch.autograd.set_detect_anomaly(True)."
            )
        if not self.is_output:
            return data
        tensor = data.detach()  # a new tensor object over the same storage
        tensor._requires_grad = True
        tensor.grad_fn, tensor._output_nr = node, self.output_nr
        return tensor


class Node:
    """A node of the backward graph: one recorded call of a differentiable operation.

    Attributes:
        next_functions: for each tensor input of the forward call, the pair
            ``(node, output_nr)`` that produced it: its ``grad_fn`` and which
            output it was, an ``AccumulateGrad`` node for a leaf that requires
            grad, or ``(None, 0)`` for a tensor that needs no gradient.
        needs_input_grad: for each argument of ``forward``, whether it is a
            tensor that requires grad.
    """

    def __init__(self):
        self.next_functions: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self._saved: list[SavedTensor | None] | None = []
        self._non_differentiable: set[int] = set()
        self._materialize_grads = True
        self._arg_slots: list[int | None] = []  # forward argument -> index in next_functions
        self._input_meta: list = []  # (shape, dtype) of each input in next_functions
        self._output_meta: list = []  # (shape, dtype) of each output
        self._tensor_pre_hooks: dict[int, HookDict] = {}  # output_nr -> hooks
        self._retain_grad_hooks: dict[int, object] = {}  # output_nr -> weakref to tensor
        self._sequence_nr = next(_sequence_numbers)

    # ------------------------------------------------------------ for forward
    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for ``backward``, which reads them back as ``saved_tensors``.

        Each tensor's version is noted, so that modifying it in place before
        backward is reported instead of silently giving a wrong gradient.
        """
        self._saved = [None if t is None else SavedTensor(t) for t in tensors]

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against their versions."""
        if self._saved is None:
            raise RuntimeError(SECOND_BACKWARD_MESSAGE)
        return tuple(None if saved is None else saved.unpack(self) for saved in self._saved)

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient (indices, masks, counts)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` receives zeros (True, the default) or None for unused outputs."""
        self._materialize_grads = bool(value)

    # ------------------------------------------------------------ inspection
    def name(self) -> str:
        """The node's name, such as ``"MulBackward0"``."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    # -------------------------------------------------------- for the engine
    def apply(self, *grad_outputs):
        """Run the backward formula: gradients of the outputs in, of the inputs out."""
        raise NotImplementedError

    def _release_saved(self) -> None:
        """Free the saved tensors after a backward pass that does not retain the graph."""
        if self._saved:
            self._saved = None


class BackwardNode(Node):
    """A node recorded by a :class:`Function`; its ``apply`` calls ``Function.backward``."""

    _forward_cls: type = None

    def apply(self, *grad_outputs):
        span = None
        if profiler_hook is not None:  # the profiler is recording: time this node
            span = profiler_hook.node_span(self).__enter__()
        try:
            grads = self._forward_cls.backward(self, *grad_outputs)
            return grads if isinstance(grads, tuple) else (grads,)
        finally:
            if span is not None:
                span.__exit__(None, None, None)


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: ``leaf.grad += incoming``.

    The engine calls it with the gradient that reached the leaf. Hooks
    registered on the leaf (``register_hook``) run first and may replace the
    gradient. Then the first gradient becomes ``.grad`` and later ones are
    added into it in place; under ``create_graph`` the sum is recorded in the
    graph instead, so that ``.grad`` can be differentiated again.

    Hooks registered with ``register_post_accumulate_grad_hook`` run last,
    with the leaf itself, once ``.grad`` holds the new sum.

    The first gradient is a copy unless nothing else can see the incoming
    tensor, in which case it is taken as it is: an optimisation built on
    reference counting (section 5.5 of the paper), kept apart in
    :mod:`glasstorch.autograd.gradient_stealing`.
    """

    def __init__(self, variable):
        super().__init__()
        self.variable = variable
        self._input_meta = []
        self._output_meta = [(variable._shape, variable.dtype)]

    def apply(self, incoming):
        leaf = self.variable
        from_the_engine = True  # still the very tensor the engine handed over
        for hook in list((leaf._backward_hooks or {}).values()):
            replaced = hook(incoming)
            if replaced is not None:
                incoming, from_the_engine = replaced, False
        if leaf.grad is None:
            leaf.grad = gradient_stealing.first_gradient(incoming, leaf, from_the_engine)
        elif is_grad_enabled():  # create_graph: record the sum
            leaf.grad = leaf.grad + incoming
        else:
            with no_grad():
                leaf.grad += incoming  # in place
        _run_post_accumulate_grad_hooks(leaf)
        return ()


def _run_post_accumulate_grad_hooks(leaf) -> None:
    """Call each ``register_post_accumulate_grad_hook`` hook with the leaf, in order.

    The hooks see the leaf once its ``.grad`` holds this backward's gradient:
    the moment at which DistributedDataParallel knows that a parameter's
    gradient is ready to be sent. A hook returns nothing (PyTorch's errors
    otherwise).
    """
    for hook in list((leaf._post_accumulate_grad_hooks or {}).values()):
        result = hook(leaf)
        if result is None:
            continue
        if isinstance(result, Tensor):
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")


class Function:
    """Base class for differentiable operations: subclass it, then call ``apply``.

    Write ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
    methods. ``backward`` returns one gradient per argument of ``forward``
    (``None`` for arguments that are not tensors or need no gradient).

    Example::

        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

        y = Square.apply(torch.tensor([3.0], requires_grad=True))
    """

    #: Name of the graph node; defaults to the class name followed by ``Backward``.
    backward_name: str | None = None

    #: Positions of the arguments that are operands: a Python number there is a
    #: constant input, listed as ``(None, 0)`` in ``next_functions`` (PyTorch
    #: wraps ``x * 2``'s 2 into a tensor and lists it so).
    operand_positions: tuple[int, ...] = ()

    #: True in an in-place variant, whose forward writes its result into its
    #: first argument (see ``glasstorch.ops.inplace.in_place_variant``).
    in_place: bool = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("backward_name") or f"{cls.__name__}Backward"
        cls._backward_cls = type(name, (BackwardNode,), {"_forward_cls": cls})

    @staticmethod
    def forward(ctx, *args):
        """Compute the outputs from the inputs; may save what backward needs on ``ctx``."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Given the gradient of each output, return the gradient of each input."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD."
        )

    @classmethod
    def apply(cls, *args):
        """Run ``forward`` and, if any input requires grad, record a node for backward."""
        span = None
        if profiler_hook is not None:  # the profiler is recording: time this operation
            span = profiler_hook.operation_span(cls, args).__enter__()
        try:
            # This runs for every operation, so it is written for speed: the grad
            # mode flag is read once, and nothing is built for the graph unless a
            # node will be recorded.
            grad_enabled = _grad_state.enabled
            needs_input_grad = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
            record = grad_enabled and True in needs_input_grad
            if not record:
                # A throwaway context (cheap to make): this path runs for every op
                # under no_grad and on tensors that need no gradient.
                ctx = UnrecordedContext()
                ctx.needs_input_grad = needs_input_grad
                if not grad_enabled:
                    return cls.forward(ctx, *args)  # already off: nothing to restore
                _grad_state.enabled = False  # forward computes values only
                try:
                    return cls.forward(ctx, *args)
                finally:
                    _grad_state.enabled = True
            ctx = cls._backward_cls()
            ctx.needs_input_grad = needs_input_grad
            _grad_state.enabled = False
            try:
                result = cls.forward(ctx, *args)
            finally:
                _grad_state.enabled = True
            is_tuple = isinstance(result, tuple)
            outputs = result if is_tuple else (result,)
            # An input handed back unchanged becomes a new tensor object (an alias),
            # so recording the node never rewrites the input's own history.
            outputs = tuple(
                o._alias() if isinstance(o, Tensor) and any(o is a for a in args) else o
                for o in outputs
            )
            _connect(ctx, args, outputs)
            return outputs if is_tuple else outputs[0]
        finally:
            if span is not None:
                span.__exit__(None, None, None)


ONCE_DIFFERENTIABLE_MESSAGE = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)


class _DifferentiatedTwice(Function):
    """The node that :func:`once_differentiable` puts behind the gradients it returns.

    Its forward hands its inputs back unchanged; its backward, reached only
    when those gradients are differentiated again, raises PyTorch's error.
    """

    backward_name = "Error"  # PyTorch's node is torch::autograd::Error

    @staticmethod
    def forward(ctx, *tensors):
        return tensors

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError(ONCE_DIFFERENTIABLE_MESSAGE)


def once_differentiable(backward):
    """Mark a custom :class:`Function`'s ``backward`` as differentiable only once.

    The decorated ``backward`` runs under :class:`no_grad`, so it may use any
    operation (even ones with no derivative). When a graph of the gradients is
    being built (``create_graph=True``, and a gradient reaching ``backward``
    requires grad), the gradients it returns carry a node whose backward raises
    ``RuntimeError: trying to differentiate twice a function that was marked
    with @once_differentiable``, instead of silently giving a wrong second
    derivative.

    Examples::

        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x**3

            @staticmethod
            @once_differentiable
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 3 * x**2 * grad
    """

    @functools.wraps(backward)
    def backward_once(ctx, *grad_outputs):
        with no_grad():
            grads = backward(ctx, *grad_outputs)
        if not is_grad_enabled():
            return grads
        if not any(isinstance(g, Tensor) and g._requires_grad for g in grad_outputs):
            return grads
        # Detached copies that require grad make the error node's inputs, so
        # that it is recorded and each returned gradient hangs from it.
        as_tuple = grads if isinstance(grads, tuple) else (grads,)
        marked = _DifferentiatedTwice.apply(
            *[g.detach().requires_grad_() if isinstance(g, Tensor) else g for g in as_tuple]
        )
        return marked if isinstance(grads, tuple) else marked[0]

    return backward_once


def records_nothing(input, other=None) -> bool:
    """Whether ``Function.apply`` on the operands ``input`` (a tensor) and
    ``other`` (a tensor, a number or None) would record nothing: no node (grad
    mode is off, or neither operand requires grad) and no profiler span.

    Then ``apply`` would only run ``forward``, so a caller may compute the
    values directly (see ``glasstorch.ops.pointwise.compute.fast_path_when_unrecorded``).
    """
    if profiler_hook is not None:
        return False
    if not input._requires_grad and not (isinstance(other, Tensor) and other._requires_grad):
        return True
    # The grad mode is per thread (a threading.local), the slower read: asked last.
    return not _grad_state.enabled


class UnrecordedContext:
    """The ``ctx`` that ``forward`` receives when nothing is recorded.

    It accepts what a recording context accepts (attributes, saved tensors,
    marks) and keeps none of it, since no backward will ever read it.
    """

    needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors) -> None:
        """Nothing to save: there will be no backward."""

    def mark_non_differentiable(self, *tensors) -> None:
        """Nothing to mark: no output requires grad."""

    def set_materialize_grads(self, value: bool) -> None:
        """Nothing to configure."""


def gradient_edge(tensor) -> tuple:
    """The ``(node, output_nr)`` pair that gradients for ``tensor`` flow into."""
    if not tensor.requires_grad:
        return (None, 0)
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (tensor._grad_accumulator(), 0)


def _connect(node: Node, args: tuple, outputs: tuple) -> None:
    """Wire a recorded node into the graph: inputs behind it, outputs in front."""
    edges, meta = [], []
    for position, arg in enumerate(args):
        if isinstance(arg, Tensor) and not arg.dtype.is_floating_point:
            node._arg_slots.append(None)  # indices and masks are not differentiable inputs
        elif isinstance(arg, Tensor):
            node._arg_slots.append(len(edges))
            edges.append(gradient_edge(arg))
            meta.append((arg._shape, arg.dtype))
        elif position in node._forward_cls.operand_positions:
            node._arg_slots.append(len(edges))
            edges.append((None, 0))
            meta.append(None)
        else:
            node._arg_slots.append(None)
    node.next_functions = tuple(edges)
    node._input_meta = meta
    for output_nr, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            node._output_meta.append(None)
            continue
        node._output_meta.append((out._shape, out.dtype))
        if out.dtype.is_floating_point and id(out) not in node._non_differentiable:
            out._requires_grad = True
            out.grad_fn = node
            out._output_nr = output_nr
            _drop_saved_history(node, out, output_nr)


def _drop_saved_history(node: Node, output, output_nr: int) -> None:
    """If ``node`` saved its own ``output``, keep only its data (see :class:`SavedTensor`)."""
    for saved in node._saved or ():
        if saved is not None and saved.data is output:
            saved.drop_history(output_nr)
