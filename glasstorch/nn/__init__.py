"""``glasstorch.nn``: modules, layers, losses, initialisers and utilities.

``import glasstorch as torch`` then ``torch.nn.Linear``, ``torch.nn.functional``
(usually imported as ``F``), ``torch.nn.init`` and ``torch.nn.utils``, as in
PyTorch. Every layer is a :class:`Module` whose ``forward`` calls a function
of :mod:`glasstorch.nn.functional`; the functions are built from glasstorch's
differentiable tensor operations, so autograd needs nothing extra.
"""

from glasstorch.nn import functional, init, utils
from glasstorch.nn.modules import (
    ELU,
    GELU,
    BatchNorm1d,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    HuberLoss,
    Identity,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSigmoid,
    LogSoftmax,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from glasstorch.nn.modules.activation import CosineSimilarity, Hardtanh, Mish, PReLU
from glasstorch.nn.modules.attention import MultiheadAttention
from glasstorch.nn.modules.loss import KLDivLoss
from glasstorch.nn.modules.rnn import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)
from glasstorch.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from glasstorch.nn.parameter import Parameter

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "HuberLoss",
    "Identity",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSigmoid",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
    "functional",
    "init",
    "utils",
    # Sequence models.
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "RNN",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "MultiheadAttention",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "CosineSimilarity",
    "Hardtanh",
    "KLDivLoss",
    "Mish",
    "PReLU",
    "TransformerEncoderLayer",
]

# Convolutional networks.
from glasstorch.nn.modules import (  # noqa: E402
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    Dropout2d,
    Fold,
    GroupNorm,
    MaxPool1d,
    MaxPool2d,
    Unfold,
    Upsample,
)

__all__ += [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout2d",
    "Fold",
    "GroupNorm",
    "MaxPool1d",
    "MaxPool2d",
    "Unfold",
    "Upsample",
]
