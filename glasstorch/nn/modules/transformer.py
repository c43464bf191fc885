"""The Transformer: encoder and decoder layers, their stacks, and ``nn.Transformer``.

An encoder layer is self-attention followed by a small feed-forward network,
each wrapped in a residual connection and a layer norm (after the residual
sum by default, before the block with ``norm_first=True``). A decoder layer
adds, between the two, attention from the target sequence to the encoder's
output (the "memory"). The encoder and decoder stack copies of one layer, and
:class:`Transformer` joins an encoder and a decoder. Submodule and parameter
names follow PyTorch, so a state dict copies across.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from glasstorch.nn import functional as F
from glasstorch.nn import init
from glasstorch.nn.modules.attention import MultiheadAttention
from glasstorch.nn.modules.container import ModuleList
from glasstorch.nn.modules.dropout import Dropout
from glasstorch.nn.modules.linear import Linear
from glasstorch.nn.modules.module import Module
from glasstorch.nn.modules.normalization import LayerNorm
from glasstorch.ops.creation import arange, zeros
from glasstorch.ops.pointwise import where
from glasstorch.tensor import Tensor

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "generate_square_subsequent_mask",
]


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """The causal mask for a sequence of ``sz``: ``-inf`` above the diagonal, 0 elsewhere.

    Position ``i`` may attend to positions ``j <= i``. (PyTorch offers it as
    ``nn.Transformer.generate_square_subsequent_mask``.)

    Example::

        >>> generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
    """
    future = arange(sz, device=device).unsqueeze(0) > arange(sz, device=device).unsqueeze(1)
    return where(future, float("-inf"), zeros((), dtype=dtype, device=device))


def _activation_function(activation: str | Callable) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _add_feed_forward_and_norms(
    layer: Module,
    d_model: int,
    dim_feedforward: int,
    dropout: float,
    layer_norm_eps: float,
    bias: bool,
    residuals: int,
    make: dict,
) -> None:
    """Give ``layer`` the parts every Transformer layer has, after its attention.

    ``linear1``, ``dropout``, ``linear2``, then one ``norm<i>`` and one
    ``dropout<i>`` per residual branch. They are made in PyTorch's order, which
    fixes the order of the parameters and of their random initialisation.
    """
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **make)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **make)
    for i in range(1, residuals + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make))
    for i in range(1, residuals + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))


def _attend(attention, x, memory, attn_mask, key_padding_mask, is_causal) -> Tensor:
    """``attention`` from ``x`` (the queries) to ``memory`` (keys and values), without weights."""
    return attention(
        x,
        memory,
        memory,
        attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        need_weights=False,
        is_causal=is_causal,
    )[0]


def _feed_forward(layer: Module, x: Tensor) -> Tensor:
    """``linear2(dropout(activation(linear1(x))))``: the position-wise network."""
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each with a residual connection and a norm.

    With ``norm_first=False`` (post-norm, the original Transformer)::

        x = norm1(x + dropout1(self_attn(x, x, x)))
        x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))

    With ``norm_first=True`` (pre-norm, as in GPT-2) the norms move inside the
    residual branches: ``x = x + block(norm(x))``.

    Args:
        d_model: features per position.
        nhead: attention heads.
        dim_feedforward: hidden width of the feed-forward network. Default: 2048.
        dropout: dropout probability (attention weights, after the feed-forward
            activation, and on both residual branches). Default: 0.1.
        activation: ``"relu"``, ``"gelu"`` or a callable (a module is registered
            as the submodule ``activation``). Default: ``"relu"``.
        layer_norm_eps: the norms' ``eps``. Default: 1e-5.
        batch_first: input and output are ``(N, S, E)``. Default: ``False``.
        norm_first: pre-norm instead of post-norm. Default: ``False``.
        bias: biases in the linear layers, attention and norms. Default: ``True``.

    Forward arguments:
        src: the sequence.
        src_mask: ``(S, S)`` or ``(N * nhead, S, S)`` attention mask (bool
            ``True`` leaves a position out; a float mask is added).
        src_key_padding_mask: ``(N, S)``; ``True`` marks padding.
        is_causal: a hint that ``src_mask`` is the causal mask.

    Shape:
        - src: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - output: the same.

    PyTorch runs an inference "fast path" in evaluation mode without autograd;
    it computes the same function, which glasstorch always computes the plain way.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(torch.randn(2, 10, 16)).shape
        torch.Size([2, 10, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **make
        )
        _add_feed_forward_and_norms(
            self, d_model, dim_feedforward, dropout, layer_norm_eps, bias, 2, make
        )
        self.norm_first = norm_first
        self.activation_relu_or_gelu = {"relu": 1, "gelu": 2}.get(activation, 0)
        self.activation = _activation_function(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal) -> Tensor:
        """Self-attention, then dropout."""
        return self.dropout1(_attend(self.self_attn, x, x, attn_mask, key_padding_mask, is_causal))

    def _ff_block(self, x: Tensor) -> Tensor:
        """The feed-forward network, then dropout."""
        return self.dropout2(_feed_forward(self, x))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of an encoder layer, and an optional final norm.

    Args:
        encoder_layer: the layer to copy (each copy has parameters of its own).
        num_layers: how many copies.
        norm: a module applied to the last layer's output (e.g. a LayerNorm).
        enable_nested_tensor, mask_check: accepted for compatibility; glasstorch
            has no nested tensors, so padded positions are computed like the others.

    Forward arguments:
        src, mask, src_key_padding_mask, is_causal: as for
        :class:`TransformerEncoderLayer` (``mask`` is its ``src_mask``).

    Shape:
        - src: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - output: the same.

    PyTorch, in evaluation mode without autograd and with a padding mask,
    may run the stack on nested tensors and return zeros at padded positions;
    glasstorch returns the values computed there.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4)
        >>> encoder = nn.TransformerEncoder(layer, num_layers=3)
        >>> encoder(torch.randn(10, 2, 16)).shape
        torch.Size([10, 2, 16])
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        output = src
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention, attention to the encoder's output, and a feed-forward network.

    With ``norm_first=False`` (post-norm, the original Transformer)::

        x = norm1(x + dropout1(self_attn(x, x, x)))
        x = norm2(x + dropout2(multihead_attn(x, memory, memory)))
        x = norm3(x + dropout3(linear2(dropout(activation(linear1(x))))))

    With ``norm_first=True`` each norm moves inside its residual branch.

    Args:
        d_model: as for :class:`TransformerEncoderLayer`, and so are the other
            arguments (nhead, dim_feedforward, dropout, activation, layer_norm_eps,
            batch_first, norm_first, bias).

    Forward arguments:
        tgt: the target sequence.
        memory: the encoder's output.
        tgt_mask, tgt_key_padding_mask, tgt_is_causal: the self-attention's
            masks (as ``src_mask`` and friends of the encoder layer).
        memory_mask, memory_key_padding_mask, memory_is_causal: the masks of
            the attention to the memory.

    Shape:
        - tgt: ``(T, N, E)``, ``(N, T, E)`` with ``batch_first``, or ``(T, E)``.
        - memory: ``(S, N, E)``, ``(N, S, E)`` with ``batch_first``, or ``(S, E)``.
        - output: the shape of ``tgt``.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4)
        >>> layer(torch.randn(7, 2, 16), torch.randn(10, 2, 16)).shape
        torch.Size([7, 2, 16])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **make
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **make
        )
        _add_feed_forward_and_norms(
            self, d_model, dim_feedforward, dropout, layer_norm_eps, bias, 3, make
        )
        self.norm_first = norm_first
        self.activation = _activation_function(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(
                x
                + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            )
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal) -> Tensor:
        """Self-attention over the target, then dropout."""
        return self.dropout1(_attend(self.self_attn, x, x, attn_mask, key_padding_mask, is_causal))

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal) -> Tensor:
        """Attention from the target (queries) to the memory (keys and values), then dropout."""
        attended = _attend(self.multihead_attn, x, memory, attn_mask, key_padding_mask, is_causal)
        return self.dropout2(attended)

    def _ff_block(self, x: Tensor) -> Tensor:
        """The feed-forward network, then dropout."""
        return self.dropout3(_feed_forward(self, x))


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of a decoder layer, and an optional final norm.

    Args:
        decoder_layer: the layer to copy (each copy has parameters of its own).
        num_layers: how many copies.
        norm: a module applied to the last layer's output.

    Forward arguments:
        tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
        memory_key_padding_mask, tgt_is_causal, memory_is_causal: as for
        :class:`TransformerDecoderLayer`; every layer attends to the same memory.

    Shape:
        - tgt: ``(T, N, E)``, ``(N, T, E)`` with ``batch_first``, or ``(T, E)``.
        - output: the same.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4)
        >>> decoder = nn.TransformerDecoder(layer, num_layers=2)
        >>> decoder(torch.randn(7, 2, 16), torch.randn(10, 2, 16)).shape
        torch.Size([7, 2, 16])
    """

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None
    ) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need".

    The encoder reads ``src`` into a memory; the decoder reads ``tgt`` while
    attending to that memory. Both stacks end in a LayerNorm. Every parameter
    with two or more dimensions starts Xavier-uniform.

    Args:
        d_model: features per position. Default: 512.
        nhead: attention heads. Default: 8.
        num_encoder_layers: encoder layers. Default: 6.
        num_decoder_layers: decoder layers. Default: 6.
        dim_feedforward: hidden width of the feed-forward networks. Default: 2048.
        dropout: dropout probability. Default: 0.1.
        activation: ``"relu"``, ``"gelu"`` or a callable. Default: ``"relu"``.
        custom_encoder: a module used instead of the encoder built here.
        custom_decoder: a module used instead of the decoder built here.
        layer_norm_eps: the norms' ``eps``. Default: 1e-5.
        batch_first: inputs and output are ``(N, S, E)``. Default: ``False``.
        norm_first: pre-norm layers. Default: ``False``.
        bias: biases in the linear layers, attention and norms. Default: ``True``.

    Forward arguments:
        src, tgt: the source and target sequences.
        src_mask, tgt_mask, memory_mask: attention masks (``tgt_mask`` is usually
            :meth:`generate_square_subsequent_mask`).
        src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask:
            ``(N, S)`` or ``(N, T)`` masks, ``True`` marking padding.
        src_is_causal, tgt_is_causal, memory_is_causal: hints that the masks are causal.

    Shape:
        - src: ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``) or ``(S, E)``.
        - tgt: ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) or ``(T, E)``.
        - output: the shape of ``tgt``.

    Example::

        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2,
        ...                        num_decoder_layers=2, dim_feedforward=32)
        >>> model(torch.randn(10, 2, 16), torch.randn(7, 2, 16)).shape
        torch.Size([7, 2, 16])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        layer_kwargs = {"batch_first": batch_first, "norm_first": norm_first, "bias": bias}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(*layer_args, **layer_kwargs, **make)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(*layer_args, **layer_kwargs, **make)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        """Xavier-uniform initialisation of every matrix (and higher-dimensional) parameter."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The causal mask for a sequence of ``sz`` (see :func:`generate_square_subsequent_mask`)."""
        return generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )
