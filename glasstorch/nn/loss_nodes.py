"""Graph nodes with PyTorch's names for losses written as formulas.

PyTorch computes ``mse_loss``, ``smooth_l1_loss``, ``huber_loss``,
``binary_cross_entropy(_with_logits)`` and ``nll_loss`` as single operations,
so ``loss.grad_fn`` is ``MseLossBackward0`` and so on. glasstorch writes
these losses as formulas of simple operations, which would leave the last
operation's node (``MeanBackward0``) on the loss.

:class:`FormulaLoss` gives such a formula one node of its own: ``forward``
evaluates the formula without recording, and ``backward`` evaluates it again
with recording on and lets the autograd engine differentiate it (the idea of
activation checkpointing: recompute rather than keep the intermediate
tensors). The gradients are the formula's own, so they match the unnamed
version exactly, ``create_graph`` included.
"""

from __future__ import annotations

from glasstorch.autograd import grad as autograd_grad
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import enable_grad, is_grad_enabled
from glasstorch.tensor import Tensor


def formula_gradients(formula, inputs: list, wanted: list, grad: Tensor, create_graph: bool):
    """The gradients of ``formula(*inputs)`` against ``grad``, by autograd.

    One entry per input: the gradient for the positions in ``wanted``, None
    elsewhere. The formula is evaluated with recording on, so a node whose
    backward is a plain formula gets it differentiated for it (and, with
    ``create_graph``, recorded for a gradient of the gradient).
    """
    with enable_grad():
        output = formula(*inputs)
        grads = autograd_grad(output, [inputs[i] for i in wanted], grad, create_graph=create_graph)
    result = [None] * len(inputs)
    for i, g in zip(wanted, grads):
        result[i] = g
    return result


class FormulaLoss(Function):
    """A loss ``formula(*tensors, *options)`` recorded as one node.

    ``apply(formula, options, *tensors)``: ``formula`` builds the loss from
    the tensors (``None`` allowed) and the tuple of non-tensor ``options``.
    """

    @staticmethod
    def forward(ctx, formula, options, *tensors):
        ctx.formula, ctx.options = formula, options
        ctx.save_for_backward(*tensors)
        return formula(*tensors, *options)

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        wanted = [
            i
            for i, t in enumerate(tensors)
            if isinstance(t, Tensor)
            and len(ctx.needs_input_grad) > i + 2
            and ctx.needs_input_grad[i + 2]
        ]
        create_graph = is_grad_enabled()  # the engine turns grad mode on for create_graph
        if create_graph:
            inputs = list(tensors)  # differentiate through the saved tensors' own history
        else:
            inputs = [
                t.detach().requires_grad_(i in wanted) if isinstance(t, Tensor) else t
                for i, t in enumerate(tensors)
            ]
        result = formula_gradients(
            lambda *ts: ctx.formula(*ts, *ctx.options), inputs, wanted, grad, create_graph
        )
        return (None, None, *result)


def named_loss(name: str) -> type:
    """A :class:`FormulaLoss` whose node is ``<name>Backward0``."""
    return type(name, (FormulaLoss,), {"backward_name": f"{name}Backward0"})


MseLoss = named_loss("MseLoss")
SmoothL1Loss = named_loss("SmoothL1Loss")
HuberLoss = named_loss("HuberLoss")
BinaryCrossEntropyWithLogits = named_loss("BinaryCrossEntropyWithLogits")
NllLoss = named_loss("NllLoss")
BinaryCrossEntropy = named_loss("BinaryCrossEntropy")
