"""``linear`` and ``bilinear``: the affine maps of ``nn.Linear`` and ``nn.Bilinear``.

``linear`` means ``input @ weight.T + bias``; where the dtypes allow, a speed
trick runs it as the one fused node :class:`glasstorch.nn.fused.linear.Addmm`.
"""

from __future__ import annotations

from glasstorch.nn.functional._utils import _size_list
from glasstorch.nn.fused.linear import Addmm
from glasstorch.ops.einsum import einsum
from glasstorch.tensor import Tensor


def _same_dtype(*tensors: Tensor) -> bool:
    return all(t.dtype is tensors[0].dtype for t in tensors)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: the affine map of :class:`nn.Linear`.

    Shape:
        - input: ``(*, in_features)``; weight: ``(out_features, in_features)``;
          bias: ``(out_features,)``.
        - output: ``(*, out_features)``.
    """
    # -- speed trick: nn/layers
    # One fused node (Addmm) instead of a product node and an add node.
    if (
        input.dim() >= 2
        and bias is not None
        and bias.dim() == 1
        and _same_dtype(input, weight, bias)
    ):
        if input.shape[-1] != weight.shape[1]:
            rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} "
                f"and {weight.shape[1]}x{weight.shape[0]})"
            )
        return Addmm.apply(bias, input, weight)
    # -- end speed trick
    # -- solution: nn/layers
    output = input.matmul(weight.t())
    return output if bias is None else output + bias
    # -- end solution


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Args:
        input1: ``(*, in1_features)``.
        input2: ``(*, in2_features)``, the same leading dimensions.
        weight: ``(out_features, in1_features, in2_features)``.
        bias: ``(out_features,)`` or None.

    Shape:
        - Output: ``(*, out_features)``.

    Examples::

        >>> F.bilinear(torch.randn(4, 2), torch.randn(4, 3), torch.randn(5, 2, 3)).shape
        torch.Size([4, 5])
    """
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got "
            f"{_size_list(input1.shape[:-1])} and {_size_list(input2.shape[:-1])}"
        )
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
            f"expected {weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
            f"expected {weight.shape[2]}"
        )
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
