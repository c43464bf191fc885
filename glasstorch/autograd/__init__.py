"""Define-by-run automatic differentiation.

Every operation on tensors that require grad records a node (its ``grad_fn``)
as the program runs; ``backward`` walks those nodes in reverse. The pieces:

* :class:`Function`: the one mechanism behind every differentiable op;
* :func:`backward` and :func:`grad`: run the engine;
* :class:`no_grad`, :class:`enable_grad`, :class:`set_grad_enabled`: grad mode;
* :func:`gradcheck` and :func:`gradgradcheck`: compare gradients with finite differences;
* :mod:`~glasstorch.autograd.graph`: the graph's :class:`Node`, drawn with ``graph.draw``;
* :class:`Variable`: the deprecated pre-0.4 wrapper, now a function that returns a tensor.
"""

from __future__ import annotations

import warnings

from glasstorch.autograd import graph
from glasstorch.autograd.engine import run_backward
from glasstorch.autograd.function import Function, Node
from glasstorch.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from glasstorch.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from glasstorch.autograd.variable import Variable

__all__ = [
    "Function",
    "Node",
    "GradcheckError",
    "Variable",
    "backward",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]


def _as_list(tensors) -> list:
    from glasstorch.tensor import Tensor

    if tensors is None:
        return []
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def _make_grads(outputs: list, grads: list) -> list:
    """Fill in implicit gradients: 1 for one-element outputs, an error otherwise."""
    from glasstorch.ops.creation import ones_like

    if len(grads) != len(outputs):
        if grads:
            raise RuntimeError(
                f"grad requires one gradient per output: got {len(grads)} for {len(outputs)}"
            )
        grads = [None] * len(outputs)
    result = []
    for index, (output, grad) in enumerate(zip(outputs, grads)):
        if grad is None:
            if output.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not output.dtype.is_floating_point:
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{output.dtype!r}"
                )
            grad = ones_like(output)
        elif tuple(grad.shape) != tuple(output.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{index}] has a shape of {grad.shape} and "
                f"output[{index}] has a shape of {output.shape}."
            )
        elif grad.device != output.device:
            grad = _on_output_device(grad, output, index)
        result.append(grad)
    return result


def _on_output_device(grad, output, index: int):
    """The gradient given for ``output`` when it lies on another device.

    As PyTorch's engine does, a 0-d gradient is moved to the output's device
    (it is a scalar, like a Python number); any other is refused, since the
    backward pass would otherwise leave gradients on the wrong device.
    """
    if grad.dim() == 0:
        return grad.to(output.device)
    raise RuntimeError(
        f"invalid gradient at index {index} - expected device {output.device} but got {grad.device}"
    )


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Accumulate into leaves' ``.grad`` the gradient of ``tensors``.

    Args:
        tensors: the output(s) to differentiate.
        grad_tensors: the gradient with respect to each output (optional for
            one-element outputs).
        retain_graph: keep saved tensors for a later backward (default:
            ``create_graph``).
        create_graph: record the backward computation for higher-order derivatives.
        grad_variables: the deprecated name of ``grad_tensors`` (a FutureWarning).
        inputs: accumulate only into these leaves.
    """
    if grad_variables is not None:
        warnings.warn(
            "`grad_variables` is deprecated. Use `grad_tensors` instead.",
            FutureWarning,
            stacklevel=2,
        )
        if grad_tensors is not None:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`."
            )
        grad_tensors = grad_variables
    outputs = _as_list(tensors)
    grads = _make_grads(outputs, _as_list(grad_tensors))
    retain = create_graph if retain_graph is None else retain_graph
    input_list = _as_list(inputs) if inputs is not None else None
    run_backward(outputs, grads, retain, create_graph, inputs=input_list, accumulate=True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    materialize_grads=False,
):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (no ``.grad`` changes).

    Returns:
        a tuple with one gradient per input (``None`` for unused inputs when
        ``allow_unused=True``, or zeros with ``materialize_grads=True``).
    """
    from glasstorch.ops.creation import zeros_like

    output_list = _as_list(outputs)
    input_list = _as_list(inputs)
    grads = _make_grads(output_list, _as_list(grad_outputs))
    retain = create_graph if retain_graph is None else retain_graph
    allow = bool(allow_unused) or materialize_grads
    result = run_backward(
        output_list,
        grads,
        retain,
        create_graph,
        inputs=input_list,
        accumulate=False,
        allow_unused=allow,
    )
    if materialize_grads:
        result = [zeros_like(t) if g is None else g for g, t in zip(result, input_list)]
    return tuple(result)
