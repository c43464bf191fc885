"""Graph nodes with PyTorch's names for the losses, and cross-entropy's fused kernels.

PyTorch computes ``mse_loss``, ``smooth_l1_loss``, ``huber_loss``,
``binary_cross_entropy(_with_logits)`` and ``nll_loss`` as single operations,
so ``loss.grad_fn`` is ``MseLossBackward0`` and so on. glasstorch writes
these losses as formulas of simple operations (in
:mod:`glasstorch.nn.functional.loss`), which would leave the last operation's
node (``MeanBackward0``) on the loss.

:class:`FormulaLoss` gives such a formula one node of its own: ``forward``
evaluates the formula without recording, and ``backward`` evaluates it again
with recording on and lets the autograd engine differentiate it (the idea of
activation checkpointing: recompute rather than keep the intermediate
tensors). The gradients are the formula's own, so they match the unnamed
version exactly, ``create_graph`` included.

:class:`CrossEntropyIndices` runs cross-entropy over class indices as the
``cross_entropy`` kernel (log-softmax and negative log-likelihood in one pass)
and its backward kernel.
"""

from __future__ import annotations

from glasstorch import _tier
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled
from glasstorch.nn._reduction import _sample_weights
from glasstorch.nn.fused.common import formula_gradients
from glasstorch.ops.core import strided_as
from glasstorch.ops.creation import arange
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


class CrossEntropyIndices(Function):
    """Cross-entropy over class indices, reduced, through two fused kernels.

    Forward: the ``cross_entropy`` kernel gives each row's loss
    ``w[t_i] * (logsumexp(x[i]) - x[i, t_i])`` and weight ``w[t_i]`` (0 where
    ignored), with ``log_probs = log_softmax(x)`` on the way, and the
    reductions: the sum of the losses, the sum of the weights and their
    quotient (the mean). The result is the losses, the sum or the mean.
    Backward: the ``cross_entropy_backward`` kernel turns each row's incoming
    gradient ``g_i`` into ``g_i * w[t_i] * (softmax(x[i]) - one_hot(t_i))``, from
    the saved ``log_probs``. So a training step spends two kernel calls on its
    loss (and one division of the incoming gradient by the summed weights),
    where composing it from tensor operations takes about twenty.

    Under ``create_graph`` the backward is written in tensor operations
    instead, on a log-softmax of the logits recomputed in the graph, so the
    gradient is differentiable again, with respect to the incoming gradient
    and to the logits (second derivatives, as in PyTorch). The saved
    ``log_probs`` are constants of the forward pass and cannot serve there.
    """

    backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, logits, target, weight, ignore_index, reduction):
        rows, classes = logits._shape
        losses = empty_tensor((rows,), logits.dtype, device=logits.device)
        row_weights = empty_tensor((rows,), logits.dtype, device=logits.device)
        # loss sum, weight sum, weighted mean
        totals = empty_tensor((3,), logits.dtype, device=logits.device)
        log_probs = empty_tensor((rows, classes), logits.dtype, device=logits.device)
        bad_row = kernels.cross_entropy(
            losses._strided(),
            row_weights._strided(),
            totals._strided(),
            log_probs._strided(),
            logits._strided(),
            target._strided(),
            None if weight is None else weight._strided(),
            ignore_index,
        )
        if bad_row >= 0:
            raise IndexError(f"Target {target[bad_row].item()} is out of bounds.")
        ctx.save_for_backward(log_probs, target, weight)
        ctx.ignore_index, ctx.reduction = ignore_index, reduction
        # The logits, for a backward under create_graph only. Kept as a plain
        # reference with its version, not saved: in-place changes after forward
        # must not break an ordinary backward (which never reads them).
        ctx.logits, ctx.logits_version = logits, logits._version
        if reduction == "none":
            return losses
        if reduction == "sum":
            return _element(totals, 0)
        ctx.weight_sum = _element(totals, 1)
        return _element(totals, 2)

    @staticmethod
    def backward(ctx, grad):
        log_probs, target, weight = ctx.saved_tensors
        rows = log_probs.shape[0]
        if ctx.reduction == "mean":
            grad = grad / ctx.weight_sum
        if is_grad_enabled():  # create_graph: build the gradient from recorded operations
            grad_logits = _cross_entropy_grad_as_ops(ctx, target, weight, grad)
            return grad_logits, None, None, None, None
        grad_logits = empty_tensor(log_probs.shape, log_probs.dtype, device=log_probs.device)
        kernels.cross_entropy_backward(
            grad_logits._strided(),
            log_probs._strided(),
            target._strided(),
            None if weight is None else weight._strided(),
            strided_as(grad, (rows,)),  # one value for every row after a reduction
            ctx.ignore_index,
        )
        return grad_logits, None, None, None, None


def _element(tensor: Tensor, index: int) -> Tensor:
    """Element ``index`` of a fresh 1-D result as a 0-d tensor of its own (no view
    bookkeeping: nothing else can reach the 1-D tensor)."""
    position = tensor._offset + index * tensor._stride[0]
    return Tensor._make(tensor._storage, (), (), position, tensor.dtype)


def _cross_entropy_grad_as_ops(ctx, target, weight, grad):
    """:class:`CrossEntropyIndices`' gradient written with tensor operations:
    ``g_i * w[t_i] * (softmax(x[i]) - one_hot(t_i))``, with the softmax
    recomputed from the logits so that it is differentiable with respect to them."""
    logits = ctx.logits
    if logits._version != ctx.logits_version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: the logits of cross_entropy were changed after the forward "
            "pass, so its gradient cannot be differentiated again."
        )
    classes = logits.shape[1]
    one_hot_target = (target.unsqueeze(1) == arange(classes, device=target.device)).to(logits.dtype)
    kept = target != ctx.ignore_index
    row_weights = _sample_weights(target, weight, ctx.ignore_index, logits.dtype)
    scale = grad.expand(target.shape) * row_weights * kept
    return (logits.softmax(1) - one_hot_target) * scale.unsqueeze(1)


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


BinaryCrossEntropyNode = named_loss("BinaryCrossEntropy")
