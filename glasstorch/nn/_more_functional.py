"""More of ``nn.functional``: the layers public programs use beyond the core set.

Instance normalisation, 1-D average pooling, adaptive max pooling, embedding
bags, 1-D transposed convolution, the bilinear layer and the ranking and
embedding losses. Each is built from operations glasstorch already has (the
2-D pooling and convolution functions, batch normalisation, ``index_add``,
reductions), so autograd, every tier and every device come for free: no new
kernel is needed.
"""

from __future__ import annotations

from glasstorch import _dtype
from glasstorch.nn import _convolution as conv
from glasstorch.nn import inplace_activations
from glasstorch.ops.core import check_same_device
from glasstorch.ops.creation import tensor, zeros
from glasstorch.ops.einsum import einsum
from glasstorch.ops.pointwise import where
from glasstorch.ops.views import stack
from glasstorch.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool3d",
    "bilinear",
    "conv_transpose1d",
    "cosine_embedding_loss",
    "embedding_bag",
    "hinge_embedding_loss",
    "instance_norm",
    "margin_ranking_loss",
    "max_pool3d",
    "pairwise_distance",
    "triplet_margin_loss",
]


def _dims_error(input: Tensor, low: int, high: int, name: str) -> RuntimeError:
    return RuntimeError(
        f"Expected {low} to {high} dimensions, but got {input.dim()}-dimensional tensor for "
        f"argument #1 'self' (while checking arguments for {name})"
    )


# ============================================================ normalisation


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample over its spatial positions, as :class:`nn.InstanceNorm2d`.

    It is batch normalisation of the input seen as one sample with ``N * C``
    channels: the statistics are per sample and per channel. Running
    statistics (when given) move toward the mean over the batch of each
    channel's statistics.

    Args:
        input: ``(N, C, *)``, at least one spatial dimension.
        running_mean, running_var: ``(C,)`` or None.
        weight, bias: ``(C,)`` or None.
        use_input_stats: normalize with the input's statistics (else the running ones).
        momentum: how far the running statistics move each call.
        eps: added to the variance.

    Shape:
        - Output: the input's shape.

    Examples::

        >>> F.instance_norm(torch.randn(2, 3, 8, 8)).shape
        torch.Size([2, 3, 8, 8])
    """
    from glasstorch.nn.functional import batch_norm

    if use_input_stats:
        spatial = 1
        for size in input.shape[2:]:
            spatial *= size
        if spatial <= 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}"
            )
    batch, channels = input.shape[0], input.shape[1]
    folded = input.reshape(1, batch * channels, *input.shape[2:])
    mean = None if running_mean is None else running_mean.repeat(batch)
    var = None if running_var is None else running_var.repeat(batch)
    out = batch_norm(
        folded,
        mean,
        var,
        None if weight is None else weight.repeat(batch),
        None if bias is None else bias.repeat(batch),
        use_input_stats,
        momentum,
        eps,
    )
    if use_input_stats:
        from glasstorch.autograd.grad_mode import no_grad

        with no_grad():
            if running_mean is not None:
                running_mean.copy_(mean.reshape(batch, channels).mean(0))
            if running_var is not None:
                running_var.copy_(var.reshape(batch, channels).mean(0))
    return out.reshape(input.shape)


# ================================================================== pooling


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling, as :class:`nn.AvgPool1d`: :func:`avg_pool2d` on a one-row image.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        kernel_size: the window's length.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on both sides, at most half the window.
        ceil_mode: round the output length up.
        count_include_pad: count the padding zeros in each window's divisor.

    Shape:
        - Output: ``(N, C, L_out)``, ``L_out = (L + 2 * padding - kernel_size) // stride + 1``.

    Examples::

        >>> F.avg_pool1d(torch.ones(1, 2, 6), 2).shape
        torch.Size([1, 2, 3])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "avg_pool1d")
    kernel = conv._single(kernel_size)
    step = kernel if stride is None else conv._single(stride)
    out = conv.avg_pool2d(
        input.unsqueeze(-2), (1, kernel), (1, step), (0, conv._single(padding)), ceil_mode,
        count_include_pad,
    )  # fmt: skip
    return out.squeeze(-2)


def _window(i: int, size: int, out: int) -> tuple[int, int]:
    """The input range ``[start, end)`` that adaptive pooling's output ``i`` of ``out`` covers."""
    return (i * size) // out, -((-(i + 1) * size) // out)


def _output_sizes(output_size, input: Tensor, dims: int) -> tuple[int, ...]:
    sizes = (output_size,) * dims if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != dims:
        raise ValueError(
            f"adaptive pooling expects output_size to have {dims} elements, got {output_size}"
        )
    spatial = input.shape[input.dim() - dims :]
    return tuple(spatial[i] if sizes[i] is None else int(sizes[i]) for i in range(dims))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of a sequence to a fixed length, as :class:`nn.AdaptiveAvgPool1d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the output length ``L_out``.

    Shape:
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> F.adaptive_avg_pool1d(torch.randn(2, 3, 10), 4).shape
        torch.Size([2, 3, 4])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "adaptive_avg_pool1d")
    (length,) = _output_sizes(output_size, input, 1)
    return conv.adaptive_avg_pool2d(input.unsqueeze(-2), (1, length)).squeeze(-2)


def _adaptive_max(input: Tensor, out_sizes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Adaptive max pooling over the last two dimensions: values and flat plane indices.

    Each output cell is the ``max`` of its window (flattened); the index of
    the maximum inside the window is turned into a position in the input's
    ``H x W`` plane, which is what PyTorch returns.
    """
    h, w = input.shape[-2], input.shape[-1]
    out_h, out_w = out_sizes
    values, positions = [], []
    for i in range(out_h):
        top, bottom = _window(i, h, out_h)
        for j in range(out_w):
            left, right = _window(j, w, out_w)
            patch = input[..., top:bottom, left:right]
            best, where_in = patch.reshape(*patch.shape[:-2], -1).max(-1)
            width = right - left
            positions.append((top + where_in // width) * w + left + where_in % width)
            values.append(best)
    shape = (*input.shape[:-2], out_h, out_w)
    return stack(values, -1).reshape(shape), stack(positions, -1).reshape(shape)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of an image to a fixed output size, as :class:`nn.AdaptiveMaxPool2d`.

    Output cell ``(i, j)`` is the maximum over input rows
    ``floor(i * H / OH)`` to ``ceil((i + 1) * H / OH)`` (excluded), columns alike.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        output_size: ``OH`` for a square output, or ``(OH, OW)``; None keeps that size.
        return_indices: also return each maximum's flat position in its ``H x W`` plane.

    Shape:
        - Output: ``(N, C, OH, OW)``.

    Examples::

        >>> F.adaptive_max_pool2d(torch.randn(1, 3, 7, 7), 2).shape
        torch.Size([1, 3, 2, 2])
    """
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
            f"{conv._size_list(input.shape)}"
        )
    out, indices = _adaptive_max(input, _output_sizes(output_size, input, 2))
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of a sequence to a fixed length, as :class:`nn.AdaptiveMaxPool1d`.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        output_size: the output length ``L_out``.
        return_indices: also return each maximum's position.

    Shape:
        - Output: ``(N, C, L_out)``.

    Examples::

        >>> F.adaptive_max_pool1d(torch.randn(2, 3, 10), 4).shape
        torch.Size([2, 3, 4])
    """
    if input.dim() not in (2, 3):
        raise _dims_error(input, 2, 3, "adaptive_max_pool1d")
    (length,) = _output_sizes(output_size, input, 1)
    out, indices = _adaptive_max(input.unsqueeze(-2), (1, length))
    out, indices = out.squeeze(-2), indices.squeeze(-2)
    return (out, indices) if return_indices else out


def _triple(value, name: str) -> tuple[int, int, int]:
    """An int or a triple of ints as a triple: ``2`` -> ``(2, 2, 2)``."""
    if isinstance(value, int):
        return (value, value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0],) * 3
    if len(value) != 3:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of three ints")
    return value


def _pool3d(input, kernel_size, stride, padding, pool2d, pool1d):
    """3-D pooling as 2-D pooling of each depth slice, then 1-D pooling across depth.

    Both pooling kinds are *separable*: the maximum (or mean) of a
    ``kd x kh x kw`` box is the maximum (or mean) over depth of the maxima (or
    means) of its ``kh x kw`` slices, with the padding and window counts of
    each dimension on their own. ``pool2d`` and ``pool1d`` pool with the
    height-width and the depth parts of the arguments.
    """
    conv._check_pool_input(input, 3)
    batched = input if input.dim() == 5 else input.unsqueeze(0)
    kernel = _triple(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] else _triple(stride, "stride")
    padding = _triple(padding, "padding")
    n, c, depth, height, width = batched.shape
    slices = pool2d(batched.reshape(n, c * depth, height, width), kernel, stride, padding)
    out_h, out_w = slices.shape[-2], slices.shape[-1]
    columns = slices.reshape(n * c, depth, out_h * out_w).transpose(1, 2)
    pooled = pool1d(columns, kernel, stride, padding)  # (N * C, OH * OW, OD)
    out = pooled.transpose(1, 2).reshape(n, c, pooled.shape[-1], out_h, out_w)
    return out if input.dim() == 5 else out.squeeze(0)


def max_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """3-D max pooling, as :class:`nn.MaxPool3d`: 2-D max pooling of each depth slice, then
    1-D max pooling across depth (the maximum of a box is separable).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size: the window, an int or ``(kd, kh, kw)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit ``-inf`` on every side, at most half the window.
        dilation: the step between a window's elements.
        ceil_mode: round the output size up.
        return_indices: not supported in glasstorch (``NotImplementedError``).

    Shape:
        - Output: ``(N, C, OD, OH, OW)``,
          ``OD = (D + 2 * padding - dilation * (kd - 1) - 1) // stride + 1`` (OH, OW alike).

    Examples::

        >>> F.max_pool3d(torch.randn(1, 2, 4, 8, 8), 2).shape
        torch.Size([1, 2, 2, 4, 4])
    """
    if return_indices:
        raise NotImplementedError("max_pool3d: return_indices is not supported in glasstorch")
    dil = _triple(dilation, "dilation")

    def plane(x, k, s, p):
        return conv.max_pool2d(x, k[1:], s[1:], p[1:], dil[1:], ceil_mode)

    def across(x, k, s, p):
        return conv.max_pool1d(x, k[0], s[0], p[0], dil[0], ceil_mode)

    return _pool3d(input, kernel_size, stride, padding, plane, across)


def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-D average pooling, as :class:`nn.AvgPool3d`: 2-D average pooling of each depth
    slice, then 1-D average pooling across depth (a box's mean, and its divisor, are
    separable).

    Args:
        input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        kernel_size: the window, an int or ``(kd, kh, kw)``.
        stride: the step between windows. Default: ``kernel_size``.
        padding: implicit zeros on every side, at most half the window.
        ceil_mode: round the output size up.
        count_include_pad: count the padding zeros in each window's divisor.
        divisor_override: not supported in glasstorch (``NotImplementedError``).

    Shape:
        - Output: ``(N, C, OD, OH, OW)``, ``OD = (D + 2 * padding - kd) // stride + 1``.

    Examples::

        >>> F.avg_pool3d(torch.randn(1, 2, 4, 8, 8), 2).shape
        torch.Size([1, 2, 2, 4, 4])
    """
    if divisor_override is not None:
        raise NotImplementedError("avg_pool3d: divisor_override is not supported in glasstorch")

    def plane(x, k, s, p):
        return conv.avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, count_include_pad)

    def across(x, k, s, p):
        return avg_pool1d(x, k[0], s[0], p[0], ceil_mode, count_include_pad)

    return _pool3d(input, kernel_size, stride, padding, plane, across)


# ============================================================== convolution


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """1-D transposed convolution, as :class:`nn.ConvTranspose1d`: :func:`conv_transpose2d`
    on a one-row image.

    Args:
        input: ``(N, C_in, L)`` or ``(C_in, L)``.
        weight: ``(C_in, C_out / groups, K)``.
        bias: ``(C_out,)`` or None.
        stride, padding, output_padding, dilation: ints.
        groups: independent channel groups.

    Shape:
        - Output: ``(N, C_out, L_out)``,
          ``L_out = (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

    Examples::

        >>> F.conv_transpose1d(torch.randn(1, 4, 5), torch.randn(4, 2, 3), stride=2).shape
        torch.Size([1, 2, 11])
    """
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input "
            f"of size: {conv._size_list(input.shape)}"
        )
    if weight.dim() != 3:
        raise RuntimeError(
            f"weight should have at least three dimensions, got {conv._size_list(weight.shape)}"
        )
    out = conv.conv_transpose2d(
        input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, conv._single(stride)),
        (0, conv._single(padding)), (0, conv._single(output_padding)), groups,
        (1, conv._single(dilation)),
    )  # fmt: skip
    return out.squeeze(-2)


# ================================================================ embedding


def _bag_ids(offsets: list[int], count: int, include_last: bool) -> tuple[list[int], int]:
    """The bag each of ``count`` indices falls in, and the number of bags."""
    bags = len(offsets) - 1 if include_last else len(offsets)
    ends = offsets[1:] if include_last else offsets[1:] + [count]
    ids, bag = [], 0
    for position in range(count):
        while bag < bags and position >= ends[bag]:
            bag += 1
        ids.append(min(bag, bags - 1))
    return ids, bags


def _check_offsets(offsets: list[int], length: int) -> None:
    """Refuse bag offsets that do not cut ``length`` indices into bags, as PyTorch does.

    PyTorch checks the first offset (0) and the last (at most ``length``). A
    bag that starts past the input would otherwise be an empty bag: a row of
    zeros where the caller has a bug. Offsets that go backwards, which PyTorch
    leaves unchecked (its result is undefined), are refused too.
    """
    if not offsets:
        return
    if offsets[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
            f"start from position 0. However, got {offsets[0]}"
        )
    if offsets[-1] > length:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {length} but got "
            f"offsets[-1] of {offsets[-1]}"
        )
    for position in range(1, len(offsets)):
        if offsets[position] < offsets[position - 1]:
            raise RuntimeError(
                "embedding_bag: offsets must not decrease, but got offsets"
                f"[{position}] = {offsets[position]} after offsets[{position - 1}] = "
                f"{offsets[position - 1]}"
            )


def _check_bag_arguments(input, weight, offsets, mode, per_sample_weights, padding_idx):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if input.dim() == 2 and offsets is not None:
        raise ValueError(
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
            "of fixed length sequences. However, found offsets of type "
            f"{type(offsets).__name__}"
        )
    if input.dim() == 1 and (offsets is None or offsets.dim() != 1):
        raise ValueError(f"offsets has to be a 1D Tensor but got {offsets}")
    if input.dim() not in (1, 2):
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    if per_sample_weights is not None and per_sample_weights.shape != input.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not "
            f"None, then it must have the same shape as the input ({list(input.shape)})"
        )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of embeddings, as :class:`nn.EmbeddingBag`.

    The rows of ``weight`` picked by ``input`` are grouped into bags and each
    bag is reduced to one vector. An index equal to ``padding_idx`` takes no
    part (nor counts in a mean); an empty bag gives zeros.

    Args:
        input: indices, ``(B, L)`` (each row a bag of ``L``) or ``(n,)`` with ``offsets``.
        weight: the table, ``(num_embeddings, embedding_dim)``.
        offsets: with 1-D ``input``, where each bag starts (``offsets[0]`` is 0).
        max_norm, norm_type, scale_grad_by_freq, sparse: only their defaults are supported.
        mode: ``"sum"``, ``"mean"`` or ``"max"``.
        per_sample_weights: a weight per index (``mode="sum"`` only).
        include_last_offset: ``offsets`` has one more element, the end of the last bag.
        padding_idx: an index left out of every bag.

    Shape:
        - Output: ``(B, embedding_dim)``, one row per bag.

    Examples::

        >>> table = torch.randn(10, 3)
        >>> F.embedding_bag(torch.tensor([1, 2, 4, 5]), table, torch.tensor([0, 2])).shape
        torch.Size([2, 3])
    """
    from glasstorch.nn.functional import embedding

    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding_bag: max_norm, scale_grad_by_freq and sparse are not supported in glasstorch"
        )
    _check_bag_arguments(input, weight, offsets, mode, per_sample_weights, padding_idx)
    check_same_device(
        "wrapper_CUDA___embedding_bag",
        weight=weight,
        indices=input,
        offsets=offsets,
        per_sample_weights=per_sample_weights,
    )
    if input.dim() == 2:
        rows, length = input.shape
        flat = input.reshape(-1)
        starts = list(range(0, rows * length, length)) if length else [0] * rows
        ids, bags = [i // length for i in range(rows * length)], rows
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    else:
        flat, starts = input, [int(o) for o in offsets.tolist()]
        _check_offsets(starts, flat.shape[0])
        ids, bags = _bag_ids(starts, flat.shape[0], include_last_offset)
    num = weight.shape[0]
    for position, index in enumerate(flat.tolist()):
        if not 0 <= index < num:
            raise RuntimeError(
                f"Index {position} of input takes value {index} which is not in the valid "
                f"range [0, {num})"
            )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    keep = [1.0 if idx != padding_idx else 0.0 for idx in flat.tolist()]
    vectors = embedding(flat, weight)  # (n, D)
    device = weight.device
    keep_t = tensor(keep, dtype=weight.dtype, device=device).unsqueeze(1)
    bag_of = tensor(ids, dtype=_dtype.int64, device=device)
    out_shape = (bags, weight.shape[1])
    if mode == "max":
        return _bag_max(vectors, ids, keep, bags, weight)
    if per_sample_weights is not None:
        vectors = vectors * per_sample_weights.unsqueeze(1)
    if not ids:
        return zeros(out_shape, dtype=weight.dtype, device=device)
    out = zeros(out_shape, dtype=weight.dtype, device=device).index_add(0, bag_of, vectors * keep_t)
    if mode == "mean":
        counts = [0.0] * bags
        for bag, kept in zip(ids, keep):
            counts[bag] += kept
        counts_t = tensor([max(c, 1.0) for c in counts], dtype=weight.dtype, device=device)
        out = out / counts_t.unsqueeze(1)
    return out


def _bag_max(vectors: Tensor, ids: list[int], keep: list[float], bags: int, weight: Tensor):
    """``mode="max"``: the elementwise maximum of each bag's kept rows (zeros if none)."""
    members: list[list[int]] = [[] for _ in range(bags)]
    for position, (bag, kept) in enumerate(zip(ids, keep)):
        if kept:
            members[bag].append(position)
    rows = []
    for positions in members:
        if positions:
            picked = vectors.index_select(0, tensor(positions, device=weight.device))
            rows.append(picked.amax(0))
        else:
            rows.append(weight.new_zeros((weight.shape[1],)))
    if not rows:
        return weight.new_zeros((0, weight.shape[1]))
    return stack(rows, 0)


# ==================================================================== linear


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
            f"{conv._size_list(input1.shape[:-1])} and {conv._size_list(input2.shape[:-1])}"
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


# ==================================================================== losses


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return losses
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        from glasstorch.nn.modules.loss import _legacy_reduction

        return _legacy_reduction(size_average, reduce)
    return reduction


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` (1 or -1) says which should rank higher.

    Examples::

        >>> F.margin_ranking_loss(torch.tensor([2.0]), torch.tensor([1.0]), torch.tensor([1.0]))
        tensor(0.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    losses = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(losses, reduction)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (``input`` a distance).

    Examples::

        >>> F.hinge_embedding_loss(torch.tensor([0.3, 2.0]), torch.tensor([1.0, -1.0]))
        tensor(0.1500)
    """
    reduction = _legacy(size_average, reduce, reduction)
    zero = input * 0
    positive = where(target == 1, input, zero)
    negative = where(target == -1, (margin - input).clamp_min(0), zero)
    return _reduce(positive + negative, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1.

    The cosine is taken along the last dimension, as
    ``dot / sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))``.

    Shape:
        - input1, input2: ``(N, D)`` or ``(D,)``; target: ``(N,)`` or ``()``.

    Examples::

        >>> x = torch.randn(3, 5)
        >>> F.cosine_embedding_loss(x, x, torch.ones(3))
        tensor(0.)
    """
    reduction = _legacy(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.shape != input2.shape:
        raise RuntimeError(
            f"cosine_embedding_loss: Input tensors must have the same shape, but got "
            f"{conv._size_list(input1.shape)} and {conv._size_list(input2.shape)}"
        )
    if input1.dim() - 1 != target.dim():
        raise RuntimeError(
            f"{input1.dim()}D target tensor expects {input1.dim() - 1}D input tensors, but found "
            f"inputs with sizes {conv._size_list(input1.shape)} and "
            f"{conv._size_list(input2.shape)}."
        )
    eps = 1e-12
    dot = (input1 * input2).sum(-1)
    norms = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = dot / norms.sqrt()
    zero = cos * 0
    positive = where(target == 1, 1 - cos, zero)
    negative = where(target == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(positive + negative, reduction)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension (the inputs broadcast).

    Examples::

        >>> F.pairwise_distance(torch.zeros(2, 3), torch.ones(2, 3)).shape
        torch.Size([2])
    """
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the :func:`pairwise_distance`.

    With ``swap``, ``d(a, n)`` is replaced by ``min(d(a, n), d(p, n))``.

    Shape:
        - anchor, positive, negative: ``(N, D)`` or ``(D,)``; output ``(N,)`` or a scalar.

    Examples::

        >>> a, p, n = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
        >>> F.triplet_margin_loss(a, p, n).shape
        torch.Size([])
    """
    reduction = _legacy(size_average, reduce, reduction)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
            f"{dims[2]}D inputs"
        )
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        other = pairwise_distance(positive, negative, p, eps)
        to_negative = where(other < to_negative, other, to_negative)
    losses = (to_positive - to_negative + margin).clamp_min(0)
    return _reduce(losses, reduction)


# =============================================================== activations
# Each is a composition of clamps, comparisons and exponentials; autograd
# differentiates the parts. ``inplace=True`` writes the result into the input
# (glasstorch/nn/inplace_activations.py).


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(0, x), 6)``.

    Examples::

        >>> F.relu6(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    if inplace:  # HardtanhBackward0, as PyTorch's relu6_ (nn/inplace_activations.py)
        return inplace_activations.hardtanh_(input, 0.0, 6.0)
    return input.clamp(0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid.

    Examples::

        >>> F.hardsigmoid(torch.tensor([-4.0, 0.0, 4.0]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    if inplace:  # HardsigmoidBackward0, written into input (nn/inplace_activations.py)
        return inplace_activations.hardsigmoid_(input)
    return (input + 3.0).clamp(0.0, 6.0) / 6.0


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6`` (MobileNetV3's activation).

    Examples::

        >>> F.hardswish(torch.tensor([-4.0, 1.0, 4.0]))
        tensor([-0.0000,  0.6667,  4.0000])
    """
    if inplace:  # HardswishBackward0, written into input (nn/inplace_activations.py)
        return inplace_activations.hardswish_(input)
    return input * (input + 3.0).clamp(0.0, 6.0) / 6.0


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants
    ``alpha = 1.6733`` and ``scale = 1.0507``.

    Examples::

        >>> F.selu(torch.tensor([-1.0, 1.0]))
        tensor([-1.1113,  1.0507])
    """
    from glasstorch.nn.functional import elu

    if inplace:  # EluBackward1, as PyTorch's selu_ (nn/inplace_activations.py)
        return inplace_activations.selu_(input, _SELU_ALPHA, _SELU_SCALE)
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere.

    Examples::

        >>> F.celu(torch.tensor([-1.0, 1.0]), alpha=2.0)
        tensor([-0.7869,  1.0000])
    """
    from glasstorch.nn.functional import elu

    if inplace:  # CeluBackward1, written into input (nn/inplace_activations.py)
        return inplace_activations.celu_(input, alpha)
    return elu(input / alpha) * alpha


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``.

    Examples::

        >>> F.softsign(torch.tensor([-1.0, 3.0]))
        tensor([-0.5000,  0.7500])
    """
    return input / (input.abs() + 1)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x)`` along ``dim``: small values get the large probabilities.

    Examples::

        >>> F.softmin(torch.tensor([1.0, 2.0]), dim=0)
        tensor([0.7311, 0.2689])
    """
    from glasstorch.nn.functional import softmax

    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half.

    Shape:
        - Input: ``(*, 2N, *)``; Output: ``(*, N, *)``.

    Examples::

        >>> F.glu(torch.randn(4, 6)).shape
        torch.Size([4, 3])
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        position = dim % input.dim()
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {position} is size {size}"
        )
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Examples::

        >>> F.tanhshrink(torch.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """
    return input - input.tanh()


def _check_lambda(input: Tensor, lambd: float) -> None:
    if lambd < 0:
        from glasstorch._dtype import finfo

        top = finfo(input.dtype).max
        raise RuntimeError(
            f"lambda must be in range [0, {top:g}] for input dtype "
            f"{input.dtype.legacy_name[:-6]}, but found {lambd:g}"
        )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Examples::

        >>> F.hardshrink(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
    """
    return where(input.abs() > lambd, input, input * 0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Examples::

        >>> F.softshrink(torch.tensor([-1.0, 0.2, 0.7]))
        tensor([-0.5000,  0.0000,  0.2000])
    """
    _check_lambda(input, lambd)
    zero = input * 0
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, zero))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``.

    Examples::

        >>> F.threshold(torch.tensor([0.05, 0.5]), 0.1, 20.0)
        tensor([20.0000,  0.5000])
    """
    if inplace and input.dtype.is_floating_point:  # ThresholdBackward1, written into input
        return inplace_activations.threshold_(input, threshold, value)
    if inplace:  # value where not above the threshold (NaN too), written into input
        return input.masked_fill_((input > threshold).logical_not_(), value)
    return where(input > threshold, input, value)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """Root-mean-square normalisation over the last dimensions: ``x / sqrt(mean(x^2) + eps) * weight``.

    Unlike :func:`layer_norm` nothing is subtracted. ``eps=None`` takes the
    machine epsilon of the input's dtype, as PyTorch does.

    Shape:
        - Input: ``(*, *normalized_shape)``; Output: the same.

    Examples::

        >>> F.rms_norm(torch.randn(2, 5, 8), (8,)).shape
        torch.Size([2, 5, 8])
    """
    from glasstorch.nn.functional import _check_normalized_shape

    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    _check_normalized_shape(input, normalized_shape)
    if eps is None:
        from glasstorch._dtype import finfo

        eps = finfo(input.dtype).eps
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


__all__ += [
    "celu",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "relu6",
    "rms_norm",
    "selu",
    "softmin",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
]
