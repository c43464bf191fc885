"""Layer, batch and group normalisation as fused nodes.

Written as formulas of tensor operations (``layer_norm`` in
:mod:`glasstorch.nn.functional.normalization` shows the meaning), a LayerNorm
is nine kernel calls forward and about twenty backward, each with a temporary
the size of the input. Each node here runs one kernel of the contract forward
(``layer_norm``, ``batch_norm_*``) and one backward, and keeps only what that
kernel needs (the row means and reciprocal standard deviations).
"""

from __future__ import annotations

from glasstorch import _dtype, _tier
from glasstorch._kernels import Strided
from glasstorch._shape import numel
from glasstorch.autograd.function import Function
from glasstorch.autograd.grad_mode import is_grad_enabled, no_grad
from glasstorch.nn.fused.common import _flat, _grads_of_formula, as_matrix, formula_gradients
from glasstorch.ops.creation import tensor
from glasstorch.tensor import Tensor, empty_tensor

# Assigned, not imported, so that Python caches kernels.<name> lookups (see _tier).
kernels = _tier.kernels


def as_channels(tensor: Tensor) -> Strided:
    """The kernel view of a contiguous ``(N, C, *)`` tensor as ``(N, C, L)``, the
    layout the batch-norm kernels take (``L`` is the product of the spatial sizes).

    Made directly from the storage, not through ``reshape``: a batch norm would
    otherwise record two view nodes a step (flatten, restore) and run two more
    reshapes backward, for nothing but a shape.
    """
    n, channels = tensor._shape[0], tensor._shape[1]
    length = numel(tensor._shape[2:])
    strides = (channels * length, length, 1)
    return Strided(tensor._storage.buffer, (n, channels, length), strides, tensor._offset)


class BatchNormFunction(Function):
    """Batch normalisation of an ``(N, C, *)`` tensor through the fused kernels.

    Forward: ``batch_norm_stats`` (training) gives each channel's mean and
    biased variance, ``batch_norm_apply`` normalises, scales and shifts.
    Backward: ``batch_norm_backward`` gives the three gradients in one pass
    over the data. The kernels see the tensors as ``(N, C, L)``
    (:func:`as_channels`). A second derivative is not supported.
    """

    backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, mean, invstd, training, fused=True):
        input = input.contiguous()
        if fused:
            out = empty_tensor(input.shape, input.dtype, device=input.device)
            kernels.batch_norm_apply(
                as_channels(out), as_channels(input), mean._strided(), invstd._strided(),
                None if weight is None else weight.contiguous()._strided(),
                None if bias is None else bias.contiguous()._strided(),
            )  # fmt: skip
        else:  # PyTorch's strided loop: ((x - mean) * invstd) * weight + bias, step by step
            per_channel = (1, -1) + (1,) * (input.dim() - 2)
            out = (input - mean.reshape(per_channel)) * invstd.reshape(per_channel)
            if weight is not None:
                out = out * weight.reshape(per_channel)
            if bias is not None:
                out = out + bias.reshape(per_channel)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.training = training
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight, mean, invstd = ctx.saved_tensors
        channels = input.shape[1]
        wanted = ctx.needs_input_grad
        grad_input = (
            empty_tensor(input.shape, grad.dtype, device=grad.device) if wanted[0] else None
        )
        grad_weight = (
            empty_tensor((channels,), grad.dtype, device=grad.device) if wanted[1] else None
        )
        grad_bias = empty_tensor((channels,), grad.dtype, device=grad.device) if wanted[2] else None
        kernels.batch_norm_backward(
            None if grad_input is None else as_channels(grad_input),
            None if grad_weight is None else grad_weight._strided(),
            None if grad_bias is None else grad_bias._strided(),
            as_channels(grad.contiguous()), as_channels(input), mean._strided(),
            invstd._strided(), None if weight is None else weight.contiguous()._strided(),
            ctx.training,
        )  # fmt: skip
        return grad_input, grad_weight, grad_bias, None, None, None, None


def fused_batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """:func:`F.batch_norm` for float32 and float64 inputs, through the fused kernels.

    The kernels see the input as ``(N, C, L)`` (the spatial dimensions
    flattened, :func:`as_channels`). Training takes the batch's statistics
    and moves the running statistics toward the batch's mean and *unbiased*
    variance.

    The arithmetic is PyTorch's CPU arithmetic, which decides the answer for
    extreme float32 inputs (a channel holding ``1e30``): for a contiguous
    input the squared deviations are float32 (``1e60`` overflows, so the
    variance is inf, ``invstd`` is 0 and the channel's outputs are its bias);
    for any other layout PyTorch squares in double (a finite variance). The
    training ``invstd = 1 / sqrt(var + eps)`` is taken in double, the
    evaluation one in the input's precision, as PyTorch does.
    """
    channels = input.shape[1]
    dtype = input.dtype
    with no_grad():
        if training:
            count = input.numel() // channels
            updated = False  # invstd and the running statistics done by one kernel
            if input.is_contiguous():
                mean = empty_tensor((channels,), dtype, device=input.device)
                var = empty_tensor((channels,), dtype, device=input.device)
                kernels.batch_norm_stats(mean._strided(), var._strided(), as_channels(input))
                if _one_kernel_updates(mean, running_mean, running_var):
                    # invstd and the running statistics in one kernel call: the same
                    # steps as the tensor operations below (PyTorch keeps this path's
                    # variance in the dtype), without the cost of ten calls
                    invstd = empty_tensor((channels,), dtype, device=input.device)
                    kernels.batch_norm_update_stats(
                        invstd._strided(),
                        None if running_mean is None else running_mean._strided(),
                        None if running_var is None else running_var._strided(),
                        mean._strided(), var._strided(), momentum, eps, count,
                    )  # fmt: skip
                    updated = True
                else:
                    wide_var = var.to(_dtype.float64)
                    moved_var = var  # PyTorch keeps this path's sum of squares in the dtype
            else:  # PyTorch's strided path: a float mean, deviations squared in double
                flat = input.reshape(input.shape[0], channels, -1)
                mean = flat.mean((0, 2))
                centered = flat.to(_dtype.float64) - mean.to(_dtype.float64).reshape(1, -1, 1)
                wide_var = (centered * centered).mean((0, 2))
                var = moved_var = wide_var  # this path keeps it in double
            if not updated:
                invstd = (wide_var + eps).rsqrt().to(dtype).contiguous()
            if not updated and running_mean is not None and running_var is not None:
                running_mean.mul_(1 - momentum).add_(mean * momentum)
                unbiased = moved_var * (momentum * count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype))
        else:
            mean, var = running_mean.to(dtype).contiguous(), running_var.to(dtype)
            # 1 / sqrt(var + eps), each step rounded to the input's precision
            invstd = (var + tensor(eps, dtype=dtype)).sqrt().reciprocal().contiguous()
    fused = input.is_contiguous()  # PyTorch's strided path does not fuse the multiply-add
    return BatchNormFunction.apply(input, weight, bias, mean, invstd, training, fused)


def _one_kernel_updates(mean, running_mean, running_var) -> bool:
    """Whether ``batch_norm_update_stats`` can move these running statistics:
    both absent, or both contiguous and of the batch statistics' dtype and device
    (otherwise the tensor operations convert between them)."""
    if running_mean is None or running_var is None:
        return running_mean is None and running_var is None
    return all(
        stat.dtype is mean.dtype and stat.device == mean.device and stat.is_contiguous()
        for stat in (running_mean, running_var)
    )


class GroupNormFunction(Function):
    """``group_norm`` with PyTorch's CPU arithmetic, as one node.

    ``apply(input, weight, bias, num_groups, eps, formula)``. Forward: each
    (sample, group) row's mean and variance from the ``row_moments`` kernel
    (in the input's precision: a float32 group holding ``1e30`` has an
    infinite variance, as in PyTorch), ``rstd = 1 / sqrt(var + eps)`` taken
    in double and rounded, then per channel ``scale = rstd * weight`` and
    ``shift = bias - scale * mean`` and ``out = scale * x + shift``, each
    multiply-add rounded once (computed in double and rounded: the product
    of two float32 numbers is exact in double). Backward differentiates
    ``formula``, the plain composition.
    """

    backward_name = "NativeGroupNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, num_groups, eps, formula):
        ctx.formula = formula
        ctx.save_for_backward(input, weight, bias)
        n, channels = input.shape[0], input.shape[1]
        rows = input.contiguous().reshape(n * num_groups, -1)
        dtype, wide = input.dtype, _dtype.float64
        mean = empty_tensor((rows.shape[0],), dtype, device=input.device)
        var = empty_tensor((rows.shape[0],), dtype, device=input.device)
        kernels.row_moments(mean._strided(), var._strided(), rows._strided())
        rstd = (var.clamp(min=0).to(wide) + eps).rsqrt().to(dtype)
        per_group = (n, num_groups, 1, 1)
        x = rows.reshape(n, num_groups, channels // num_groups, -1)
        if weight is None and bias is None:
            out = (x - mean.reshape(per_group)) * rstd.reshape(per_group)
            return out.reshape(input.shape)
        if dtype is _dtype.float64:
            return _group_norm_apply(x, mean, rstd, weight, bias).reshape(input.shape)
        per_channel = (1, num_groups, channels // num_groups, 1)
        scale = rstd.reshape(per_group)
        if weight is not None:
            scale = scale * weight.reshape(per_channel)
        shift = -scale.to(wide) * mean.reshape(per_group).to(wide)
        if bias is not None:
            shift = shift + bias.reshape(per_channel).to(wide)
        out = scale.to(wide) * x.to(wide) + shift.to(dtype).to(wide)
        return out.to(dtype).reshape(input.shape)

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias = ctx.saved_tensors
        wanted = [i for i, t in enumerate((input, weight, bias)) if t is not None]
        wanted = [i for i in wanted if ctx.needs_input_grad[i]]
        grads = formula_gradients(
            ctx.formula, [input, weight, bias], wanted, grad, create_graph=is_grad_enabled()
        )
        return (*grads, None, None, None)


def _group_norm_apply(x, mean, rstd, weight, bias):
    """float64 ``scale * x + shift`` per channel with a true fused multiply-add.

    ``x`` is ``(N, G, D, L)``, ``mean`` and ``rstd`` ``(N * G,)``. The
    ``batch_norm_apply`` kernel computes ``fma(x, rstd * w, b - mean * rstd * w)``
    for ``(1, N * C, L)`` once each (sample, channel) has its own statistics
    and parameters. (A double product cannot be made exact with double tensor
    operations; the kernel's FMA gives PyTorch's rounding.)
    """
    n, groups, per, length = x.shape
    rows = n * groups * per
    flat = x.contiguous().reshape(1, rows, length)
    stats = (n * groups, per)
    mean = mean.reshape(n * groups, 1).expand(stats).contiguous().reshape(rows)
    rstd = rstd.reshape(n * groups, 1).expand(stats).contiguous().reshape(rows)
    weight = None if weight is None else weight.reshape(1, -1).expand(n, -1).contiguous()
    bias = None if bias is None else bias.reshape(1, -1).expand(n, -1).contiguous()
    out = empty_tensor(flat.shape, x.dtype, device=x.device)
    kernels.batch_norm_apply(
        out._strided(), flat._strided(), mean._strided(), rstd._strided(),
        None if weight is None else weight.reshape(rows)._strided(),
        None if bias is None else bias.reshape(rows)._strided(),
    )  # fmt: skip
    return out


class LayerNorm(Function):
    """``layer_norm`` over the last ``len(normalized_shape)`` dimensions as one node.

    ``apply(input, weight, bias, normalized_shape, eps, formula)``; ``formula``
    is the plain composition, ``formula(input, weight, bias)``, used for
    double backward.
    """

    backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, input, weight, bias, normalized_shape, eps, formula):
        width = 1
        for size in normalized_shape:
            width *= size
        x = as_matrix(input, width)
        rows = x.shape[0]
        out = empty_tensor(input.shape, input.dtype, device=input.device)
        mean = empty_tensor((rows,), input.dtype, device=input.device)
        rstd = empty_tensor((rows,), input.dtype, device=input.device)
        kernels.layer_norm(
            as_matrix(out, width), mean._strided(), rstd._strided(), x, _flat(weight),
            _flat(bias), eps,
        )  # fmt: skip
        ctx.save_for_backward(input, weight, bias, mean, rstd)
        ctx.width, ctx.formula = width, formula
        return out

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias, mean, rstd = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: differentiate the formula
            grads = _grads_of_formula(ctx, ctx.formula, (input, weight, bias), grad, 0)
            return (*grads, None, None, None)
        needs = ctx.needs_input_grad
        width = ctx.width
        grad_input = (
            empty_tensor(input.shape, input.dtype, device=input.device) if needs[0] else None
        )
        grad_weight = (
            empty_tensor(weight.shape, weight.dtype, device=weight.device) if needs[1] else None
        )
        grad_bias = empty_tensor(bias.shape, bias.dtype, device=bias.device) if needs[2] else None
        kernels.layer_norm_backward(
            None if grad_input is None else as_matrix(grad_input, width), _flat(grad_weight),
            _flat(grad_bias), as_matrix(grad, width), as_matrix(input, width), mean._strided(),
            rstd._strided(), _flat(weight),
        )  # fmt: skip
        return grad_input, grad_weight, grad_bias, None, None, None
